//! Harbor (Terminal-Bench) task directories. `instruction.md` is the instruction. On the host
//! (`--env host`), `environment/` without its Dockerfile is the starting tree and
//! `tests/test.sh` runs there afterwards (exit 0 passes, or the reward file it writes in the
//! tree decides); a task written for its image (absolute paths such as `/app` or `/logs`)
//! cannot run there: it is that task's `infra_error`, saying so. With `--env docker` a task
//! with a Dockerfile runs in its image instead (`docker`), the tests at `/tests/test.sh`.

use std::path::Path;

use serde::Deserialize;

use super::task::{Broken, Context, Place, Task};

/// Paths that exist only in a task's container image.
const IMAGE_PATHS: &[&str] = &[
    "/app",
    "/tests",
    "/logs",
    "/solution",
    "/oracle",
    "/workspace",
];

/// Where the hidden tests go in the task's container once the agent has finished.
pub(super) const TESTS_INSIDE: &str = "/tests";

/// How long the agent and the tests may run when `task.toml` does not say.
const DEFAULT_TIMEOUT_S: f64 = 600.0;

#[derive(Debug, Default, Deserialize)]
struct TaskToml {
    #[serde(default)]
    agent: Timeouts,
    #[serde(default)]
    verifier: Timeouts,
}

#[derive(Debug, Default, Deserialize)]
struct Timeouts {
    timeout_sec: Option<f64>,
}

/// The task `dir`; with `docker`, in its image when `environment/` has a Dockerfile.
pub(super) fn load(dir: &Path, docker: bool) -> Result<Task, Broken> {
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let broken = |reason: String| Broken {
        id: id.clone(),
        reason,
    };
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path)
            .map_err(|e| broken(format!("cannot read {}: {e}", path.display())))
    };
    let config: TaskToml = toml::from_str(&read("task.toml")?)
        .map_err(|e| broken(format!("{}: {e}", dir.join("task.toml").display())))?;
    let instruction = read("instruction.md")?;
    let test_sh = read("tests/test.sh")?;
    let environment = dir.join("environment");
    if !environment.is_dir() {
        return Err(broken(format!("{} has no environment/", dir.display())));
    }
    let image = dockerfile(dir).filter(|_| docker);
    if image.is_none()
        && let Some(path) = image_path(&test_sh).or_else(|| image_path(&instruction))
    {
        return Err(broken(if docker {
            format!(
                "the task is written for its container image (it uses {path}), but environment/ has no Dockerfile to build it from"
            )
        } else {
            format!(
                "the task is written for its container image (it uses {path}), so it cannot run on the host; it needs --env docker"
            )
        }));
    }
    let seconds = |t: &Timeouts| t.timeout_sec.unwrap_or(DEFAULT_TIMEOUT_S).max(1.0) as u64;
    Ok(Task {
        id: id.clone(),
        dir: dir.to_path_buf(),
        instruction: instruction.trim().to_string(),
        tests: match &image {
            Some(_) => format!("bash {TESTS_INSIDE}/test.sh"),
            None => "bash tests/test.sh".into(),
        },
        timeout_s: seconds(&config.agent),
        tests_timeout_s: seconds(&config.verifier),
        budget_usd: None,
        network: false,
        context: Context::Dir(environment),
        expected: None,
        hidden_tests: Some(dir.join("tests")),
        place: image.map_or(Place::Host, Place::Unbuilt),
    })
}

/// `environment/` when it holds a Dockerfile (the task's image can be built).
pub(super) fn dockerfile(dir: &Path) -> Option<std::path::PathBuf> {
    let environment = dir.join("environment");
    environment
        .join("Dockerfile")
        .is_file()
        .then_some(environment)
}

/// The first path only the task's image has, as a whole path segment (`/app/x`, `/app`, not
/// `/apple`).
fn image_path(text: &str) -> Option<&'static str> {
    IMAGE_PATHS.iter().copied().find(|path| {
        text.match_indices(path).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + path.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '.' || c == '_' || c == '-')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
        })
    })
}

/// The files of `environment/` that build its image, not part of the tree.
pub(super) const IMAGE_FILES: &[&str] = &["Dockerfile", ".dockerignore", "docker-compose.yaml"];

/// The tests' verdict from how they `exited` (`None`: cut off at their limit, a failure
/// whatever they wrote) and the reward they wrote in `dir` (the tree's `logs/verifier`, or the
/// container's `/logs/verifier`), which decides over the exit code when there is one.
pub(super) fn verdict(dir: &Path, exited: Option<bool>) -> bool {
    exited.is_some_and(|exited| reward(dir).unwrap_or(exited))
}

/// A reward in `dir` (`reward.txt` or `reward.json`): a number above 0 passes. `None` when
/// there is none.
fn reward(dir: &Path) -> Option<bool> {
    if let Ok(text) = std::fs::read_to_string(dir.join("reward.txt")) {
        return Some(text.trim().parse::<f64>().is_ok_and(|r| r > 0.0));
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reward.json")).ok()?).ok()?;
    let reward = json.get("reward").and_then(serde_json::Value::as_f64)?;
    Some(reward > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_paths_are_found_as_whole_segments() {
        assert_eq!(image_path("cd /app && make"), Some("/app"));
        assert_eq!(
            image_path("echo 1 > /logs/verifier/reward.txt"),
            Some("/logs")
        );
        assert_eq!(image_path("ls /apple ./app app/x"), None);
        assert_eq!(image_path("python3 -m pytest tests/"), None);
    }

    #[test]
    fn a_harbor_task_loads_and_one_for_its_image_is_broken() {
        let dir = tempfile::tempdir().unwrap();
        let task = dir.path().join("hello");
        std::fs::create_dir_all(task.join("environment")).unwrap();
        std::fs::create_dir_all(task.join("tests")).unwrap();
        std::fs::write(
            task.join("task.toml"),
            "version = \"1.0\"\n[agent]\ntimeout_sec = 90.0\n[verifier]\ntimeout_sec = 30.0\n",
        )
        .unwrap();
        std::fs::write(task.join("instruction.md"), "Write hello.txt.\n").unwrap();
        std::fs::write(task.join("tests/test.sh"), "grep -q hello hello.txt\n").unwrap();
        let loaded = load(&task, false).unwrap();
        assert_eq!((loaded.timeout_s, loaded.tests_timeout_s), (90, 30));
        assert_eq!(loaded.tests, "bash tests/test.sh");
        std::fs::write(task.join("tests/test.sh"), "cd /app && pytest\n").unwrap();
        let broken = load(&task, false).unwrap_err();
        assert!(broken.reason.contains("/app"), "{}", broken.reason);
        // In its image, it runs: the tests at /tests, the tree built from environment/.
        assert!(
            load(&task, true)
                .unwrap_err()
                .reason
                .contains("no Dockerfile")
        );
        std::fs::write(
            task.join("environment/Dockerfile"),
            "FROM x\nWORKDIR /app\n",
        )
        .unwrap();
        let imaged = load(&task, true).unwrap();
        assert_eq!(imaged.tests, "bash /tests/test.sh");
        assert_eq!(imaged.place, Place::Unbuilt(task.join("environment")));
        assert!(load(&task, false).is_err());
    }
}
