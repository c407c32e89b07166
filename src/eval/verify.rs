//! A task's tests, run in the trial's tree inside the OS sandbox: they may write only there
//! (and a private temp folder), and reach the network only when the task allows it.

use std::path::Path;
use std::time::Duration;

use crate::sys::sandbox::{Policy, Prepared};

/// Character devices a test may write to.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
    "/dev/tty",
];

/// Variables that send a build's output to one fixed folder: inherited from the harness (CI
/// sets them), they would point a trial's builds outside its tree, where the sandbox
/// refuses writes, and share artefacts between trials.
pub(super) const SHARED_OUTPUTS: &[&str] = &["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"];

/// Runs `command` with `sh -c` in `tree`: `Ok(Some(true))` when it exits 0, `Ok(Some(false))`
/// when it fails, `Ok(None)` when it outlasts `limit`, `Err` when it cannot be run at all.
pub(super) async fn run_tests(
    command: &str,
    tree: &Path,
    network: bool,
    limit: Duration,
) -> Result<Option<bool>, String> {
    let tmp = tempfile::Builder::new()
        .prefix("ouro-eval-tmp-")
        .tempdir()
        .map_err(|e| format!("cannot make the tests' temp folder: {e}"))?;
    let policy = Policy {
        read: vec!["/".into()],
        write: vec![tree.to_path_buf(), tmp.path().to_path_buf()],
        devices: DEVICES.iter().map(Into::into).collect(),
        network,
        frozen: false,
        isolated: true,
        masks: Default::default(),
    };
    let mut std_command = std::process::Command::new("sh");
    std_command
        .arg("-c")
        .arg(command)
        .current_dir(tree)
        .env("TMPDIR", tmp.path())
        .env("CARGO_TARGET_DIR", tmp.path().join("cargo-target"))
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    {
        use std::os::unix::process::CommandExt;
        std_command.process_group(0);
    }
    match Prepared::new(&policy) {
        Ok(Some(prepared)) => prepared.apply(&mut std_command),
        Ok(None) => tracing::warn!("the kernel offers no sandbox: a task's tests run unconfined"),
        Err(e) => return Err(format!("cannot prepare the tests' sandbox: {e}")),
    }
    let mut child = tokio::process::Command::from(std_command)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run the tests: {e}"))?;
    let pid = child.id();
    match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(status)) => Ok(Some(status.success())),
        Ok(Err(e)) => Err(format!("the tests could not be waited for: {e}")),
        Err(_) => {
            if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                // SAFETY: signals the process group the tests were started in.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
            let _ = child.wait().await;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tests_pass_by_exit_code_may_write_the_tree_only_and_are_cut_off_at_the_limit() {
        let tree = tempfile::tempdir().unwrap();
        let limit = Duration::from_secs(20);
        assert_eq!(
            run_tests("echo ok > out.txt", tree.path(), false, limit).await,
            Ok(Some(true))
        );
        assert!(tree.path().join("out.txt").exists());
        assert_eq!(
            run_tests("exit 3", tree.path(), false, limit).await,
            Ok(Some(false))
        );
        let short = Duration::from_millis(300);
        assert_eq!(
            run_tests("sleep 30", tree.path(), false, short).await,
            Ok(None)
        );
        if matches!(
            crate::sys::sandbox::Support::detect(),
            crate::sys::sandbox::Support::Landlock(_)
        ) {
            let outside = tempfile::tempdir().unwrap();
            let target = outside.path().join("escaped.txt");
            let escape = format!("echo x > {}", target.display());
            assert_eq!(
                run_tests(&escape, tree.path(), false, limit).await,
                Ok(Some(false))
            );
            assert!(!target.exists());
        }
    }
}
