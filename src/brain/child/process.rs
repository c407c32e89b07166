//! The life of one brain process: its pid, the one-time report of its exit, and stopping it with
//! SIGTERM then SIGKILL.
//!
//! Signals go through a pidfd opened while the child is still unreaped, never through the bare
//! pid: another thread reaps the child, and once it has, the pid may belong to an unrelated
//! process of the user. A pidfd keeps naming the process it was opened for, and signalling it
//! after the reap fails with ESRCH instead of reaching whoever got the number next.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
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
    /// `None` only on a kernel without pidfds (before Linux 5.3); see `signal`.
    pidfd: Option<OwnedFd>,
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
    pub(super) fn report(self, info: ExitInfo) {
        (self.on_exit)(info);
        self.tx.send_replace(Some(info));
    }
}

/// Starts tracking a child that nobody has waited for yet (so `pid` is still surely ours).
pub(crate) fn track(pid: u32, on_exit: OnExit) -> (ProcessCore, ExitReporter) {
    let (tx, rx) = watch::channel(None);
    let core = ProcessCore {
        pid,
        pidfd: pidfd_open(pid),
        exit: rx,
    };
    (core, ExitReporter { tx, on_exit })
}

fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: pidfd_open takes plain integers and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = libc::c_int::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl ProcessCore {
    pub(super) fn exited(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// Waits until the exit has been reported.
    pub(super) async fn wait(&self) -> ExitInfo {
        let mut rx = self.exit.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(info) => info.unwrap_or(UNKNOWN),
            // The waiter vanished without reporting (its task was cancelled at shutdown).
            Err(_) => UNKNOWN,
        }
    }

    /// SIGTERM, then SIGKILL if the process is still there after `grace`.
    pub(super) async fn terminate(&self, grace: Duration) -> Result<ExitInfo, BrainError> {
        if let Some(info) = self.exited() {
            return Ok(info);
        }
        self.signal(libc::SIGTERM)?;
        if let Ok(info) = tokio::time::timeout(grace, self.wait()).await {
            return Ok(info);
        }
        if self.exited().is_none() {
            self.signal(libc::SIGKILL)?;
        }
        tokio::time::timeout(AFTER_SIGKILL, self.wait())
            .await
            .map_err(|_| BrainError::KillTimeout { pid: self.pid })
    }

    /// SIGKILL without waiting, for a handle that is being dropped.
    pub(super) fn kill_now(&self) {
        if self.exited().is_none()
            && let Err(e) = self.signal(libc::SIGKILL)
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

impl ProcessCore {
    fn signal(&self, sig: libc::c_int) -> Result<(), BrainError> {
        let sent = match &self.pidfd {
            // SAFETY: pidfd_send_signal reads only its integer arguments (no siginfo).
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    sig,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                )
            },
            // Without pidfds the exit report is the only guard: `terminate` and `kill_now`
            // signal only while no exit has been reported, which leaves a short window.
            None => {
                let pid = libc::pid_t::try_from(self.pid).map_err(|_| BrainError::Io {
                    action: "signal",
                    source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
                })?;
                // SAFETY: kill(2) takes plain integers and touches no memory of ours.
                libc::c_long::from(unsafe { libc::kill(pid, sig) })
            }
        };
        if sent == 0 {
            return Ok(());
        }
        signal_error(std::io::Error::last_os_error())
    }
}

fn signal_error(err: std::io::Error) -> Result<(), BrainError> {
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
#[cfg(test)]
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

    #[tokio::test]
    async fn a_reaped_child_is_never_signalled_by_its_old_pid() {
        let pid = spawn("exit 0");
        let (core, reporter, _) = tracked(pid);
        // Reaped behind the core's back, before any exit report: the pidfd still names the
        // dead process, so the signal goes nowhere instead of to the pid's next owner.
        let info = wait_blocking(pid);
        assert!(core.pidfd.is_some(), "this kernel has pidfds");
        assert!(core.exited().is_none());
        core.kill_now();
        assert!(core.signal(libc::SIGTERM).is_ok(), "ESRCH counts as gone");
        reporter.report(info);
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
