//! Child processes that lead their own process group, so that stopping one stops everything it
//! started (a `sleep` in a pipeline, a dev server launched by a script).

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::{Child, Command};

/// A running child that leads its own process group. Dropping it before the child was waited
/// for kills the whole group, so an abandoned call leaves nothing behind.
pub struct GroupChild {
    child: Child,
    pgid: Option<i32>,
    reaped: bool,
}

impl GroupChild {
    pub fn spawn(command: &mut Command) -> io::Result<Self> {
        command.process_group(0);
        let child = command.spawn()?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        Ok(GroupChild {
            child,
            pgid,
            reaped: false,
        })
    }

    /// For taking the child's stdio handles.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Waits for the group leader. Other members may still run (a command's `cmd &`); they are
    /// left alone because starting them may have been the point.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        self.reaped = true;
        Ok(status)
    }

    /// SIGTERM to the whole group, then SIGKILL to whatever is left once the leader exited or
    /// `grace` passed; the leader is reaped.
    pub async fn terminate(&mut self, grace: Duration) {
        self.signal(libc::SIGTERM);
        let early = tokio::time::timeout(grace, self.child.wait()).await;
        self.signal(libc::SIGKILL);
        if !matches!(early, Ok(Ok(_))) {
            let _ = self.child.wait().await;
        }
        self.reaped = true;
    }

    fn signal(&self, signal: libc::c_int) {
        // pgid 0 or 1 would address our own group or init; a spawned child never has those ids.
        if let Some(pgid) = self.pgid.filter(|&p| p > 1) {
            // SAFETY: killpg only sends a signal; a group that is already gone yields ESRCH.
            unsafe {
                libc::killpg(pgid, signal);
            }
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if !self.reaped {
            self.signal(libc::SIGKILL);
        }
    }
}
