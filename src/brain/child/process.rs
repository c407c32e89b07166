//! The life of one brain process: its pid, the one-time report of its exit, and stopping it with
//! SIGTERM then SIGKILL.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use tokio::sync::watch;

use crate::brain::{BrainError, ExitInfo};

/// How long to wait for a process to vanish after SIGKILL before giving up on it.
const AFTER_SIGKILL: Duration = Duration::from_secs(10);

/// Run when the process has ended: the brain's bookkeeping and exit callbacks.
pub(crate) type OnExit = Box<dyn FnOnce(ExitInfo) + Send>;

/// The owner's view of a running process.
pub(crate) struct ProcessCore {
    pub pid: u32,
    exit: watch::Receiver<Option<ExitInfo>>,
}

/// Held by whatever waits on the process; reporting consumes it, so an exit is reported once.
pub(crate) struct ExitReporter {
    tx: watch::Sender<Option<ExitInfo>>,
    on_exit: OnExit,
}

impl ExitReporter {
    /// Runs the exit callbacks first, so that whoever waits on the exit (`kill`) returns only
    /// after every subscriber has heard of it.
    pub fn report(self, info: ExitInfo) {
        (self.on_exit)(info);
        self.tx.send_replace(Some(info));
    }
}

pub(crate) fn track(pid: u32, on_exit: OnExit) -> (ProcessCore, ExitReporter) {
    let (tx, rx) = watch::channel(None);
    (ProcessCore { pid, exit: rx }, ExitReporter { tx, on_exit })
}

impl ProcessCore {
    pub fn exited(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// Waits until the exit has been reported.
    pub async fn wait(&self) -> ExitInfo {
        let mut rx = self.exit.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(info) => info.unwrap_or(UNKNOWN),
            // The waiter vanished without reporting (its task was cancelled at shutdown).
            Err(_) => UNKNOWN,
        }
    }

    /// SIGTERM, then SIGKILL if the process is still there after `grace`.
    pub async fn terminate(&self, grace: Duration) -> Result<ExitInfo, BrainError> {
        if let Some(info) = self.exited() {
            return Ok(info);
        }
        signal(self.pid, libc::SIGTERM)?;
        if let Ok(info) = tokio::time::timeout(grace, self.wait()).await {
            return Ok(info);
        }
        if self.exited().is_none() {
            signal(self.pid, libc::SIGKILL)?;
        }
        tokio::time::timeout(AFTER_SIGKILL, self.wait())
            .await
            .map_err(|_| BrainError::KillTimeout { pid: self.pid })
    }

    /// SIGKILL without waiting, for a handle that is being dropped.
    pub fn kill_now(&self) {
        if self.exited().is_none()
            && let Err(e) = signal(self.pid, libc::SIGKILL)
        {
            tracing::warn!(pid = self.pid, error = %e, "could not kill a brain process");
        }
    }
}

const UNKNOWN: ExitInfo = ExitInfo {
    code: None,
    signal: None,
};

impl From<std::process::ExitStatus> for ExitInfo {
    fn from(status: std::process::ExitStatus) -> Self {
        ExitInfo {
            code: status.code(),
            signal: status.signal(),
        }
    }
}

fn signal(pid: u32, sig: libc::c_int) -> Result<(), BrainError> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| BrainError::Io {
        action: "signal",
        source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
    })?;
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    if unsafe { libc::kill(pid, sig) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    // Already gone and reaped: the exit report is on its way.
    if err.raw_os_error() == Some(libc::ESRCH) {
        return Ok(());
    }
    Err(BrainError::Io {
        action: "signal",
        source: err,
    })
}

/// Blocks until `pid` (a child of this process) ends, and reaps it.
pub(crate) fn wait_blocking(pid: u32) -> ExitInfo {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return UNKNOWN;
    };
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: waitpid writes only to `status`, a live local.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return std::process::ExitStatus::from_raw(status).into();
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            tracing::warn!(pid, error = %err, "could not wait for a brain process");
            return UNKNOWN;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Starts `sh -c script` and returns its pid; each test reaps it with `wait_blocking`.
    #[allow(clippy::zombie_processes)]
    fn spawn(script: &str) -> u32 {
        std::process::Command::new("sh")
            .args(["-c", script])
            .spawn()
            .unwrap()
            .id()
    }

    fn tracked(pid: u32) -> (ProcessCore, ExitReporter, Arc<Mutex<Vec<ExitInfo>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let (core, reporter) = track(pid, Box::new(move |i| s.lock().unwrap().push(i)));
        (core, reporter, seen)
    }

    #[tokio::test]
    async fn terminate_escalates_to_sigkill_when_sigterm_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let ready = dir.path().join("ready");
        let pid = spawn(&format!(
            "trap '' TERM; touch '{}'; while :; do sleep 1; done",
            ready.display()
        ));
        // The signal must not arrive before the shell has installed its trap.
        while !ready.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (core, reporter, seen) = tracked(pid);
        std::thread::spawn(move || reporter.report(wait_blocking(pid)));
        let info = core.terminate(Duration::from_millis(300)).await.unwrap();
        assert_eq!(info.signal, Some(libc::SIGKILL));
        assert_eq!(*seen.lock().unwrap(), vec![info]);
    }

    #[tokio::test]
    async fn terminate_stops_at_sigterm_when_it_works() {
        let pid = spawn("sleep 30");
        let (core, reporter, _) = tracked(pid);
        std::thread::spawn(move || reporter.report(wait_blocking(pid)));
        let info = core.terminate(Duration::from_secs(20)).await.unwrap();
        assert_eq!(info.signal, Some(libc::SIGTERM));
        // Already ended: terminating again just returns the same report.
        assert_eq!(core.terminate(Duration::from_secs(1)).await.unwrap(), info);
    }

    #[test]
    fn exit_codes_are_reported() {
        let pid = spawn("exit 7");
        assert_eq!(
            wait_blocking(pid),
            ExitInfo {
                code: Some(7),
                signal: None
            }
        );
    }
}
