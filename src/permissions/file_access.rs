//! Decisions for file tools: paths are judged by what they resolve to.

use std::path::Path;

use super::mode::PermissionMode;
use super::rules::RuleKind;
use super::rules::{Applicable, rule_clause};
use super::scope::Scope;
use super::{Decision, paths};

pub(crate) fn decide(
    scope: &Scope,
    applicable: &Applicable<'_>,
    tool: &str,
    path: &Path,
    write: bool,
) -> Decision {
    let shown = path.display();
    if paths::is_unc(path) {
        return Decision::Deny(format!(
            "`{shown}` is a network share (UNC path); ouro does not read or write network paths"
        ));
    }
    let lexical = paths::lexical(&scope.root, path);
    let resolved = paths::real(&scope.root, path);
    if paths::is_device(&lexical, &resolved) {
        return Decision::Deny(format!(
            "`{shown}` is a device file; ouro does not read or write devices"
        ));
    }
    let target = if lexical == resolved {
        format!("`{}`", scope.display_path(&lexical))
    } else {
        format!(
            "`{}` (which resolves to `{}`)",
            scope.display_path(&lexical),
            resolved.display()
        )
    };
    // A deny rule holds for the path as named and for where it really leads.
    let named_or_real = |r: &&_| {
        let r: &super::rules::CompiledRule = r;
        r.catches_path(&lexical) || r.catches_path(&resolved)
    };
    if let Some(rule) = applicable.of(RuleKind::Deny).find(named_or_real) {
        return Decision::Deny(format!("`{tool}` on {target} {}", rule_clause(rule)));
    }
    if scope.mode() == PermissionMode::BypassPermissions {
        return Decision::Allow;
    }
    if write && scope.mode() == PermissionMode::Plan {
        return Decision::Deny(format!(
            "`{tool}` would change {target}, and plan mode runs nothing that changes files; \
             present the plan instead"
        ));
    }
    if let Some(rule) = applicable.of(RuleKind::Ask).find(named_or_real) {
        return Decision::Ask(format!(
            "`{tool}` on {target} {}; it needs approval",
            rule_clause(rule)
        ));
    }
    let inside = scope.is_inside(&resolved);
    // Allow rules are judged on the real target, so a symlink cannot borrow a rule.
    let mut allowing = applicable
        .of(RuleKind::Allow)
        .filter(|r| r.matches_path(&resolved));
    if !write {
        if inside || allowing.next().is_some() {
            return Decision::Allow;
        }
        return Decision::Ask(format!(
            "`{tool}` would read {target}, outside the project; it needs approval"
        ));
    }
    if inside {
        let protected = protection(&lexical).or_else(|| protection(&resolved));
        if is_hard_linked(&resolved) {
            return Decision::Ask(format!(
                "`{tool}` would change {target}, a file with other hard links that may be \
                 outside the project; it needs approval"
            ));
        }
        if let Some(why) = protected {
            // Only a rule naming the file itself lets it through, not `Edit(src/**)`.
            if applicable
                .of(RuleKind::Allow)
                .any(|r| r.names_path(&resolved))
            {
                return Decision::Allow;
            }
            return Decision::Ask(format!(
                "`{tool}` would change {target}: {why}, so this always needs approval"
            ));
        }
        if matches!(
            scope.mode(),
            PermissionMode::AcceptEdits | PermissionMode::Auto
        ) || allowing.next().is_some()
        {
            return Decision::Allow;
        }
        return Decision::Ask(format!("`{tool}` would change {target}; it needs approval"));
    }
    // Outside the project only a rule naming the path lets a write through.
    if allowing.any(|r| !r.is_whole_tool()) {
        return Decision::Allow;
    }
    Decision::Ask(format!(
        "`{tool}` would change {target}, outside the project; writes outside the project always need approval"
    ))
}

/// Files that other tools execute, or take commands from, later without asking: a build, a
/// test run, entering the directory, installing the package.
const RUN_LATER_FILES: &[&str] = &[
    ".envrc",
    "package.json",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    "build.rs",
    "conftest.py",
    "setup.py",
    "noxfile.py",
    "Makefile",
    "makefile",
    "GNUmakefile",
    "justfile",
    "Justfile",
    "Taskfile.yml",
    "Rakefile",
    ".pre-commit-config.yaml",
    // Python runs these at start-up or reads its build and test commands from them.
    "sitecustomize.py",
    "usercustomize.py",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "pytest.ini",
    // Containers and CI services run what these say.
    "Dockerfile",
    "Containerfile",
    "docker-compose.yml",
    "docker-compose.yaml",
    "compose.yml",
    "compose.yaml",
    "Jenkinsfile",
    ".travis.yml",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    // rustup installs and runs the toolchain this names.
    "rust-toolchain",
    "rust-toolchain.toml",
    // Loaded into the environment of what runs here (direnv, dotenv, docker compose).
    ".env",
];

/// Other agents' instruction files: what their model is told in every later session.
const OTHER_AGENT_INSTRUCTIONS: &[&str] = &[
    ".cursorrules",
    ".windsurfrules",
    ".clinerules",
    "GEMINI.md",
    "copilot-instructions.md",
];

/// Folders whose files editors, git hooks and build tools run later (tasks opened with the
/// folder, husky hooks, cargo's runner and aliases, dev containers).
const RUN_LATER_FOLDERS: &[&str] = &[
    ".husky",
    ".vscode",
    ".idea",
    ".cargo",
    ".devcontainer",
    ".circleci",
    ".buildkite",
    ".cursor",
    ".windsurf",
    ".clinerules",
];

/// Instruction files: what the model is told at the start of every session.
const INSTRUCTION_FILES: &[&str] = &["OURO.md", "CLAUDE.md", "CLAUDE.local.md", "AGENTS.md"];

/// Why writing `path` needs approval even where edits are allowed, if it does: the file decides
/// what runs later or what the model is told.
pub fn protection(path: &Path) -> Option<&'static str> {
    judge(path, path)
}

/// The project's own additions to the protected list (`permissions.protectedPaths`): its root
/// and the globs, relative to it. One project per process, so one set.
static ADDED: std::sync::RwLock<Option<(std::path::PathBuf, globset::GlobSet)>> =
    std::sync::RwLock::new(None);

/// Adds `patterns` (globs relative to `root`) to the protected list of this process; a pattern
/// that is not a glob is named and skipped.
pub fn protect_also(root: &Path, patterns: &[String]) {
    if patterns.is_empty() {
        return;
    }
    let mut set = globset::GlobSetBuilder::new();
    for pattern in patterns {
        let trimmed = pattern.trim_start_matches("./").trim_end_matches('/');
        let glob = globset::GlobBuilder::new(trimmed)
            .literal_separator(true)
            .build();
        match glob {
            Ok(glob) => {
                set.add(glob);
                // A folder protects what is inside it.
                if let Ok(inside) = globset::Glob::new(&format!("{trimmed}/**")) {
                    set.add(inside);
                }
            }
            Err(e) => eprintln!(
                "ouro: warning: permissions.protectedPaths: \"{pattern}\" is not a glob ({e}); it is skipped"
            ),
        }
    }
    match set.build() {
        Ok(set) => {
            *ADDED
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some((root.to_path_buf(), set));
        }
        Err(e) => eprintln!("ouro: warning: permissions.protectedPaths could not be read: {e}"),
    }
}

/// Whether the settings' own protected paths catch `path` (absolute, or relative to the root).
fn added_protection(path: &Path) -> bool {
    let added = ADDED
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some((root, set)) = added.as_ref() else {
        return false;
    };
    let rel = if path.is_absolute() {
        match path.strip_prefix(root) {
            Ok(rel) => rel,
            Err(_) => return false,
        }
    } else {
        path
    };
    set.is_match(rel)
}

/// [`protection`] of `rel` inside the directory `root` (dogs applying to `--dir`): the names
/// are judged on `rel` alone (where `root` lives does not count), and what is on disk (an
/// executable, a `HEAD` beside a `config`) is looked up under `root`, never in the working
/// directory.
pub fn protection_in(root: &Path, rel: &Path) -> Option<&'static str> {
    judge(rel, &root.join(rel))
}

/// The protected paths at the top of the project that exist now: what a call approved by auto
/// mode's reviewer finds read-only. In a `.git` folder only what runs programs (`config`,
/// `hooks`, `info`) is, so the call may still commit.
pub fn protected_in_project(root: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let path = entry.path();
        if name == ".git" && path.is_dir() {
            found.extend(
                ["config", "hooks", "info"]
                    .iter()
                    .map(|inner| path.join(inner))
                    .filter(|p| p.exists()),
            );
        } else if protection_in(root, Path::new(&name)).is_some() {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// `path`'s names say what it is; `on_disk` is where it is.
fn judge(path: &Path, on_disk: &Path) -> Option<&'static str> {
    if added_protection(path) || added_protection(on_disk) {
        return Some("the settings name it in permissions.protectedPaths");
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let component = |pred: fn(&str) -> bool| {
        path.components()
            .any(|c| c.as_os_str().to_str().is_some_and(pred))
    };
    if component(|c| c.starts_with(".git")) {
        // `.git/config` and hooks run programs (the auto-allowed `git status` runs
        // `core.fsmonitor`); .gitattributes names filter and diff drivers; .github holds CI.
        return Some("git and CI run programs that files under `.git*` name");
    }
    if name == "HEAD" || (name == "config" && on_disk.with_file_name("HEAD").exists()) {
        // `HEAD` beside `config` makes any directory a repository git discovers.
        return Some(
            "a HEAD and config make a directory a git repository whose config runs programs",
        );
    }
    if component(|c| c == ".ouro" || c == ".claude") || name == ".mcp.json" {
        return Some("agent settings grant permissions, hooks and servers");
    }
    if INSTRUCTION_FILES.contains(&name) || OTHER_AGENT_INSTRUCTIONS.contains(&name) {
        return Some("instruction files tell the model what to do in every later session");
    }
    let in_agents = path
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|d| d == "agents");
    if in_agents && name.starts_with("AGENT_") && name.ends_with(".md") {
        return Some("persona files set the tools and rules of later sessions");
    }
    if component(|c| RUN_LATER_FOLDERS.contains(&c)) {
        return Some("editors, git hooks and cargo run what files in this folder name");
    }
    if RUN_LATER_FILES.contains(&name) {
        return Some("other tools run its commands later without asking");
    }
    if is_executable(on_disk) {
        return Some("it is an executable that may run later");
    }
    None
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A regular file with more than one name: writing it changes every other name too.
fn is_hard_linked(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.nlink() > 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_run_later_or_instruct_an_agent_are_protected() {
        for path in [
            "sitecustomize.py",
            "pyproject.toml",
            ".cursorrules",
            ".github/copilot-instructions.md",
            ".windsurfrules",
            "GEMINI.md",
            ".clinerules",
            "Dockerfile",
            "Jenkinsfile",
            ".circleci/config.yml",
            ".travis.yml",
            "azure-pipelines.yml",
            ".buildkite/pipeline.yml",
            "rust-toolchain.toml",
            "tox.ini",
            "pytest.ini",
            ".env",
            "sub/dir/Makefile",
        ] {
            assert!(protection(Path::new(path)).is_some(), "{path}");
        }
        for path in ["src/main.rs", "README.md", "docs/guide.md", "Cargo.lock"] {
            assert!(protection(Path::new(path)).is_none(), "{path}");
        }
    }

    #[test]
    fn inside_a_directory_what_is_on_disk_is_looked_up_there() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("run.sh"), "echo\n").unwrap();
        std::fs::set_permissions(
            dir.path().join("run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert!(protection_in(dir.path(), Path::new("run.sh")).is_some());
        assert!(
            protection(Path::new("run.sh")).is_none(),
            "not in the working directory"
        );
        std::fs::create_dir(dir.path().join("r")).unwrap();
        std::fs::write(dir.path().join("r/HEAD"), "ref: x\n").unwrap();
        assert!(protection_in(dir.path(), Path::new("r/config")).is_some());
    }
}
