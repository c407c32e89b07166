//! `git status` for the system prompt, with a time limit: the first request waits for it, and
//! in a very large repository it can take seconds, which the status is not worth.

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// How long the first request waits for the status.
pub(super) const LIMIT: Duration = Duration::from_millis(300);

pub(super) enum Look {
    Done(String),
    Failed,
    TooSlow,
}

/// `program status` in `cwd` (`program` is git but for tests), given up after `limit`.
pub(super) fn look(cwd: &Path, program: &OsStr, limit: Duration) -> Look {
    // A look must not take the index lock (or refresh the index) under the user's feet.
    let spawned = crate::sys::git::in_work_tree(program, cwd)
        .args([
            "--no-optional-locks",
            "status",
            "--short",
            "--ignore-submodules=all",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = spawned else {
        return Look::Failed;
    };
    let Some(mut stdout) = child.stdout.take() else {
        return Look::Failed;
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        let _ = tx.send(out);
    });
    match rx.recv_timeout(limit) {
        Ok(out) => match child.wait() {
            Ok(status) if status.success() => {
                Look::Done(String::from_utf8_lossy(&out).into_owned())
            }
            _ => Look::Failed,
        },
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            Look::TooSlow
        }
    }
}

/// The status as the system prompt gives it: at most 40 paths.
pub(super) fn describe(out: &mut String, status: &str) {
    let lines: Vec<&str> = status.lines().collect();
    if lines.is_empty() {
        out.push_str("Git status: clean\n");
        return;
    }
    out.push_str("Git status (at session start):\n");
    for line in lines.iter().take(40) {
        out.push_str(line);
        out.push('\n');
    }
    if lines.len() > 40 {
        out.push_str(&format!(
            "... and {} more changed paths\n",
            lines.len() - 40
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An executable shell script `name` in `dir`, standing in for git.
    fn script(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        path
    }

    /// A status slower than the limit is given up, and its process does not outlive the look.
    #[test]
    fn a_slow_status_is_given_up_and_its_process_ended() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let body = format!("echo $$ > {}\nexec sleep 30\n", pid_file.display());
        let slow = script(dir.path(), "slow-git", &body);
        let started = std::time::Instant::now();
        let look = look(dir.path(), slow.as_os_str(), Duration::from_millis(200));
        assert!(matches!(look, Look::TooSlow));
        assert!(started.elapsed() < Duration::from_secs(20));
        // Reaped: the process is gone, not a zombie (under load it may not have started yet).
        if let Ok(pid) = std::fs::read_to_string(&pid_file) {
            assert!(!Path::new(&format!("/proc/{}", pid.trim())).exists());
        }
    }

    #[test]
    fn a_quick_status_is_read_and_described() {
        let dir = tempfile::tempdir().unwrap();
        let quick = script(dir.path(), "quick-git", "printf ' M a.rs\\n?? b.rs\\n'\n");
        let Look::Done(status) = look(dir.path(), quick.as_os_str(), Duration::from_secs(10))
        else {
            panic!("the status was not read");
        };
        let mut out = String::new();
        describe(&mut out, &status);
        assert_eq!(out, "Git status (at session start):\n M a.rs\n?? b.rs\n");
    }
}
