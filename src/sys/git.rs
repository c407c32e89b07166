//! Git settings that make it run nothing a repository's own config names. Ouro's own `git
//! status` at start-up and every Bash call allowed only as read-only get them, so a cloned
//! repository (or an embedded bare one) cannot turn a look at its status into running a program.

/// `(key, value)` overrides, passed as `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`,
/// which outrank every config file.
const OVERRIDES: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("diff.external", ""),
    ("safe.bareRepository", "explicit"),
    ("protocol.allow", "never"),
];

/// The environment variables that apply the overrides.
pub fn safety_env() -> Vec<(String, String)> {
    let mut out = vec![("GIT_CONFIG_COUNT".to_string(), OVERRIDES.len().to_string())];
    for (i, (key, value)) in OVERRIDES.iter().enumerate() {
        out.push((format!("GIT_CONFIG_KEY_{i}"), (*key).to_string()));
        out.push((format!("GIT_CONFIG_VALUE_{i}"), (*value).to_string()));
    }
    out
}

/// The branch checked out in the repository holding `dir` (`HEAD` when detached), read from
/// its files: no git process, so nothing the repository configures can run, and nothing is
/// spawned before the first request. `None` outside a repository.
pub fn head_branch(dir: &std::path::Path) -> Option<String> {
    let git_dir = dir.ancestors().find_map(|d| {
        let dot_git = d.join(".git");
        let meta = std::fs::metadata(&dot_git).ok()?;
        if meta.is_dir() {
            return Some(dot_git);
        }
        // A worktree or a submodule: `gitdir: <path>`, relative to the folder holding it.
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.strip_prefix("gitdir:")?.trim();
        Some(d.join(target))
    })?;
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    match head.strip_prefix("ref:") {
        Some(reference) => {
            let reference = reference.trim();
            Some(
                reference
                    .strip_prefix("refs/heads/")
                    .unwrap_or(reference)
                    .to_string(),
            )
        }
        None => Some("HEAD".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_branch_is_read_from_head_in_repositories_and_worktrees() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(head_branch(&root.join("nowhere")), None);
        std::fs::create_dir_all(root.join("repo/.git")).unwrap();
        std::fs::create_dir_all(root.join("repo/src/deep")).unwrap();
        std::fs::write(root.join("repo/.git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(
            head_branch(&root.join("repo/src/deep")).as_deref(),
            Some("feature/x")
        );
        std::fs::create_dir_all(root.join("repo/.git/worktrees/wt")).unwrap();
        std::fs::write(
            root.join("repo/.git/worktrees/wt/HEAD"),
            "0123456789abcdef0123456789abcdef01234567\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("wt")).unwrap();
        std::fs::write(root.join("wt/.git"), "gitdir: ../repo/.git/worktrees/wt\n").unwrap();
        assert_eq!(head_branch(&root.join("wt")).as_deref(), Some("HEAD"));
    }
}
