//! A task of a suite, read once when the run starts: a native task directory (`task.md`,
//! `context.cats.md`, `expected.dogs.md`, hidden `tests/`), or a Harbor one (`task.toml`,
//! `instruction.md`, `environment/`, `tests/test.sh`) run on the host or in its image. A task
//! that cannot be read is kept with the reason, so the run reports it as that task's
//! `infra_error`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// How long a task may run when its `task.md` does not say.
const DEFAULT_TIMEOUT_S: u64 = 600;

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Task {
    pub(super) id: String,
    pub(super) dir: PathBuf,
    /// What the agent is asked to do (the body of `task.md`).
    pub(super) instruction: String,
    /// Run with `sh -c` in the trial's tree once `tests/` is copied in; exit 0 passes.
    pub(super) tests: String,
    pub(super) timeout_s: u64,
    /// How long the tests may run.
    pub(super) tests_timeout_s: u64,
    pub(super) budget_usd: Option<f64>,
    /// Whether the agent's commands and the tests may reach the network.
    pub(super) network: bool,
    /// The starting tree.
    pub(super) context: Context,
    /// The reference change, when the task has one.
    pub(super) expected: Option<PathBuf>,
    /// `tests/`, copied in only to verify.
    pub(super) hidden_tests: Option<PathBuf>,
    pub(super) place: Place,
}

/// Where a task's trials run.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Place {
    /// This machine, in the OS sandbox.
    Host,
    /// A container of the task's image, built from this folder when the run starts.
    Unbuilt(PathBuf),
    /// A container of this built image.
    Image(Image),
}

/// A task's built image, the directory its tree is in, and the copy of this ouro its trials'
/// containers mount.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Image {
    pub(super) id: String,
    pub(super) workdir: String,
    pub(super) ouro: PathBuf,
}

/// Where a trial's starting tree comes from.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Context {
    /// A cats bundle, written out.
    Cats(PathBuf),
    /// A directory, copied (a Harbor task's `environment/`, without its Dockerfile).
    Dir(PathBuf),
    /// The working directory of the task's image, copied out once: copied whole, links too.
    Image(PathBuf),
}

/// A task directory that could not be read as a task: its trials are `infra_error`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Broken {
    pub(super) id: String,
    pub(super) reason: String,
}

/// A native task directory (`task.md`).
pub(super) fn load_native(dir: &Path) -> Result<Task, Broken> {
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let broken = |reason: String| Broken {
        id: dir_name.clone(),
        reason,
    };
    let path = dir.join("task.md");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| broken(format!("cannot read {}: {e}", path.display())))?;
    let (front, body) =
        crate::frontmatter::split(&text).map_err(|e| broken(format!("{}: {e}", path.display())))?;
    let id = front.text("id").unwrap_or_else(|| dir_name.clone());
    let broken = |reason: String| Broken {
        id: id.clone(),
        reason,
    };
    if let Some(version) = front.text("version")
        && version.split('.').next() != Some("1")
    {
        return Err(broken(format!(
            "{}: version {version} is not a task format this ouro reads (1.x)",
            path.display()
        )));
    }
    let tests = front.text("tests").ok_or_else(|| {
        broken(format!(
            "{} names no `tests` command (a shell command whose exit 0 means the task is done)",
            path.display()
        ))
    })?;
    let number = |key: &str| -> Result<Option<f64>, Broken> {
        match front.value(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or_else(|| {
                broken(format!(
                    "{}: `{key}` must be a number, not {v}",
                    path.display()
                ))
            }),
        }
    };
    let timeout_s = number("timeout_s")?.map_or(DEFAULT_TIMEOUT_S, |t| t.max(1.0) as u64);
    let budget_usd = number("budget_usd")?;
    let network = matches!(front.value("network"), Some(Value::Bool(true)));
    let context = dir.join("context.cats.md");
    if !context.is_file() {
        return Err(broken(format!(
            "{} has no context.cats.md (its starting tree)",
            dir.display()
        )));
    }
    let expected = Some(dir.join("expected.dogs.md")).filter(|p| p.is_file());
    let hidden_tests = Some(dir.join("tests")).filter(|p| p.is_dir());
    Ok(Task {
        id,
        dir: dir.to_path_buf(),
        instruction: body.trim().to_string(),
        tests,
        timeout_s,
        tests_timeout_s: timeout_s.max(60),
        budget_usd,
        network,
        context: Context::Cats(context),
        expected,
        hidden_tests,
        place: Place::Host,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_dir(root: &Path, name: &str, front: &str) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(dir.join("tests")).unwrap();
        std::fs::write(dir.join("task.md"), format!("---\n{front}\n---\nFix it.\n")).unwrap();
        std::fs::write(dir.join("context.cats.md"), "").unwrap();
        dir
    }

    #[test]
    fn a_suite_is_its_task_directories_in_order_and_a_broken_one_says_why() {
        let root = tempfile::tempdir().unwrap();
        task_dir(
            root.path(),
            "b",
            "id: b\nversion: \"1.0\"\ntests: ./check\ntimeout_s: 30\nbudget_usd: 0.5",
        );
        task_dir(root.path(), "a", "id: a\ntests: make test");
        task_dir(root.path(), "c", "id: c\nversion: \"2.0\"\ntests: x");
        task_dir(root.path(), "d", "id: d");
        std::fs::create_dir(root.path().join("not-a-task")).unwrap();
        let tasks = super::super::suite::load_suite(root.path(), false).unwrap();
        assert_eq!(tasks.len(), 4);
        let a = tasks[0].as_ref().unwrap();
        assert_eq!((a.id.as_str(), a.timeout_s, a.budget_usd), ("a", 600, None));
        let b = tasks[1].as_ref().unwrap();
        assert_eq!(b.tests, "./check");
        assert_eq!((b.timeout_s, b.budget_usd), (30, Some(0.5)));
        assert_eq!(b.instruction, "Fix it.");
        assert!(b.hidden_tests.is_some() && b.expected.is_none());
        assert!(
            tasks[2]
                .as_ref()
                .unwrap_err()
                .reason
                .contains("version 2.0")
        );
        assert!(tasks[3].as_ref().unwrap_err().reason.contains("no `tests`"));
        // One task directory is a suite of one.
        assert_eq!(
            super::super::suite::load_suite(&root.path().join("a"), false)
                .unwrap()
                .len(),
            1
        );
    }
}
