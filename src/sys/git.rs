//! Every git process ouro starts is built here: [`in_work_tree`] for a repository of the
//! user's, [`on_own_repository`] for one of ouro's own (the checkpoints' shadow repositories).
//!
//! Git settings that make it run nothing a repository names. Ouro's own `git status` at
//! start-up and every Bash call allowed only as read-only get them, so a cloned repository (or
//! one whose `.git/config` an approved command changed) cannot turn a look at its status, diff
//! or log into running a program: no fsmonitor, hooks, pager, external diff, credential helper
//! or ssh command, no attributes from the work tree (`GIT_ATTR_SOURCE` names the empty tree,
//! git 2.40 and later), and every filter or diff driver that `.git/info/attributes` names is
//! emptied, which git reads as "no driver".

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `program` (git, or a stand-in in tests) on the user's repository holding `dir`, run in
/// `dir`: nothing the repository configures runs ([`safety_env`]), no credential prompt, no
/// stdin.
pub fn in_work_tree(program: impl AsRef<OsStr>, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(dir)
        .envs(safety_env(dir))
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null());
    command
}

/// git on a repository of ouro's own at `git_dir`: none of the caller's `GIT_*` variables (an
/// inherited `GIT_OBJECT_DIRECTORY` would point it at the user's objects), no global or
/// system configuration, no credential prompt, no stdin.
pub fn on_own_repository(git_dir: &Path) -> Command {
    let mut command = Command::new("git");
    for key in callers_git_vars() {
        command.env_remove(key);
    }
    command
        .env("GIT_DIR", git_dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null());
    command
}

/// The `GIT_*` variables of this process's environment: ouro may run inside a git hook, where
/// `GIT_OBJECT_DIRECTORY` or `GIT_COMMON_DIR` would point a `git prune` at the user's objects.
fn callers_git_vars() -> Vec<OsString> {
    std::env::vars_os()
        .map(|(key, _)| key)
        .filter(|key| key.to_string_lossy().starts_with("GIT_"))
        .collect()
}

/// `(key, value)` overrides, passed as `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`,
/// which outrank every config file (included ones too).
const OVERRIDES: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.sshCommand", ""),
    ("core.askPass", ""),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.gitProxy", ""),
    ("core.attributesFile", "/dev/null"),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("gpg.program", "false"),
    ("log.showSignature", "false"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    // A status or diff looks inside each submodule with a git of its own, which runs the
    // filters the submodule's configuration names; this keeps it out.
    ("diff.ignoreSubmodules", "all"),
    ("safe.bareRepository", "explicit"),
    ("protocol.allow", "never"),
];

/// Git's id of the empty tree: attributes read from it are none.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// The environment variables that apply the overrides for a git run in `dir` (the drivers
/// named by its repository's own attribute file are emptied too).
pub fn safety_env(dir: &Path) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = OVERRIDES
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    for driver in git_dir(dir)
        .map(|d| named_drivers(&d.join("info/attributes")))
        .unwrap_or_default()
    {
        let (kind, name) = driver;
        if kind == "merge" {
            // A merge driver cannot be emptied (an empty one "succeeds" keeping our side):
            // git's own three-way merge of the file runs in its place.
            pairs.push((format!("merge.{name}.driver"), BUILTIN_MERGE.to_string()));
            continue;
        }
        let keys: &[&str] = if kind == "filter" {
            &["clean", "smudge", "process"]
        } else {
            &["textconv", "command"]
        };
        for key in keys {
            pairs.push((format!("{kind}.{name}.{key}"), String::new()));
        }
        if kind == "filter" {
            pairs.push((format!("filter.{name}.required"), "false".into()));
        }
    }
    let mut out = vec![
        ("GIT_ATTR_SOURCE".to_string(), EMPTY_TREE.to_string()),
        ("GIT_CONFIG_COUNT".to_string(), pairs.len().to_string()),
    ];
    for (i, (key, value)) in pairs.into_iter().enumerate() {
        out.push((format!("GIT_CONFIG_KEY_{i}"), key));
        out.push((format!("GIT_CONFIG_VALUE_{i}"), value));
    }
    out
}

/// `-c` settings for a merge in the repository holding `dir`: every merge driver its
/// configuration defines (`merge.<name>.driver`, even one named `text`) becomes git's own
/// three-way merge, so no program the repository names runs, whichever way a driver is picked
/// (an attribute, `merge.default`, a `recursive` one for inner merges).
pub fn merge_overrides(dir: &Path) -> Vec<String> {
    let listed = in_work_tree("git", dir)
        .args(["config", "--get-regexp", r"^merge\..*\.driver$"])
        .stderr(Stdio::null())
        .output();
    let Ok(listed) = listed else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in String::from_utf8_lossy(&listed.stdout).lines() {
        let key = line.split_whitespace().next().unwrap_or_default();
        if key.ends_with(".driver") {
            out.extend(["-c".to_string(), format!("{key}={BUILTIN_MERGE}")]);
        }
    }
    out
}

/// What runs for a merge driver a repository names: git's own three-way merge of the file.
const BUILTIN_MERGE: &str = "git merge-file -L ours -L base -L theirs %A %O %B";

/// The `filter=`, `diff=` and `merge=` drivers an attributes file names, as `(kind, name)`.
fn named_drivers(file: &Path) -> Vec<(&'static str, String)> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for word in text.split_whitespace() {
        for kind in ["filter", "diff", "merge"] {
            if let Some(name) = word.strip_prefix(kind).and_then(|w| w.strip_prefix('='))
                && !name.is_empty()
                && !out.iter().any(|(k, n)| *k == kind && n == name)
            {
                out.push((kind, name.to_string()));
            }
        }
    }
    out
}

/// The git directory of the repository holding `dir`: `.git`, or where a `.git` file points.
fn git_dir(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find_map(own_git_dir)
}

/// Whether `dir` lies in a git work tree (its own or an ancestor's).
pub fn is_in_work_tree(dir: &Path) -> bool {
    git_dir(dir).is_some()
}

/// The git directory of the repository whose work tree is `dir` itself: its `.git` folder, or
/// where a `.git` file points.
pub fn own_git_dir(dir: &Path) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    // A worktree or a submodule: `gitdir: <path>`, relative to the folder holding it.
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let target = text.strip_prefix("gitdir:")?.trim();
    Some(dir.join(target))
}

/// Where the repository of `git_dir` keeps what its worktrees share (`info/exclude`,
/// objects): a worktree's git directory names it in `commondir`.
pub fn common_dir(git_dir: &Path) -> PathBuf {
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(common) => git_dir.join(common.trim()),
        Err(_) => git_dir.to_path_buf(),
    }
}

/// The branch checked out in the repository holding `dir` (`HEAD` when detached), read from
/// its files: no git process, so nothing the repository configures can run, and nothing is
/// spawned before the first request. `None` outside a repository.
pub fn head_branch(dir: &Path) -> Option<String> {
    let git_dir = git_dir(dir)?;
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
