//! A brain's terminal UI in a pseudo-terminal: bytes written go to its keyboard, bytes it
//! draws go to the data subscribers unchanged. The process is started by ouro's one process
//! handle (the keeper, when there is one), so it ends with the ouro process that owns it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

use super::dispatch::Launch;
use super::process::{self, OnExit, ProcessCore};
use crate::brain::terminal::Subscribers;
use crate::brain::{BrainError, ExitInfo, TermSize};

/// How long an exit report waits for the terminal's last output to be read.
const DRAIN_PTY: Duration = Duration::from_secs(2);

pub(crate) struct PtyProc {
    pub core: ProcessCore,
    /// The master side, for resizing.
    master: File,
    /// A copy of it for the keyboard: a write that waits on a full terminal must not hold up a
    /// resize.
    writer: Mutex<File>,
}

pub(crate) async fn spawn(
    launch: Launch<'_>,
    size: TermSize,
    subscribers: Arc<Subscribers>,
    on_exit: OnExit,
) -> Result<PtyProc, BrainError> {
    let program = launch.program.to_string_lossy().into_owned();
    let pty_error = |e: std::io::Error| BrainError::Pty {
        program: program.clone(),
        reason: e.to_string(),
    };
    let (master, slave) = open_pty(size).map_err(pty_error)?;
    let mut process = launch.process();
    if !process.env.iter().any(|(key, _)| key == "TERM") {
        process.env("TERM", "xterm-256color");
    }
    // The slave is closed here once started: the reader sees the end when the program's side
    // closes.
    let mut child = process
        .spawn_on_terminal(slave)
        .await
        .map_err(|e| launch.spawn_error(e))?;
    let pid = child.pid().ok_or_else(|| BrainError::Pty {
        program: program.clone(),
        reason: "the started process has no pid".into(),
    })?;
    let reader = master.try_clone().map_err(pty_error)?;
    let writer = master.try_clone().map_err(pty_error)?;
    tracing::debug!(pid, program = launch.name, args = ?launch.args, "started a brain in a terminal");

    let (core, reporter) = process::track(pid, on_exit);
    let (done_tx, done_rx) = oneshot::channel();
    std::thread::spawn(move || read_pty(reader, subscribers, done_tx));
    tokio::spawn(async move {
        let info = match child.wait().await {
            Ok(status) => status.into(),
            Err(e) => {
                tracing::warn!(pid, error = %e, "could not wait for a brain process");
                ExitInfo {
                    code: None,
                    signal: None,
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_PTY, done_rx).await;
        reporter.report(info);
    });
    Ok(PtyProc {
        core,
        master,
        writer: Mutex::new(writer),
    })
}

/// A new pseudo-terminal of `size`: (master, slave), both close-on-exec from the start (a
/// process another thread starts meanwhile must not inherit the slave, or the reader would
/// never see the terminal close).
fn open_pty(size: TermSize) -> std::io::Result<(File, OwnedFd)> {
    let last_error = || std::io::Error::last_os_error();
    // SAFETY: posix_openpt takes flags and returns a new descriptor or -1.
    let master = unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC) };
    if master < 0 {
        return Err(last_error());
    }
    // SAFETY: the descriptor was just made and belongs to nobody else.
    let master = unsafe { OwnedFd::from_raw_fd(master) };
    // SAFETY: grantpt and unlockpt take the master's descriptor.
    if unsafe { libc::grantpt(master.as_raw_fd()) } < 0
        || unsafe { libc::unlockpt(master.as_raw_fd()) } < 0
    {
        return Err(last_error());
    }
    // SAFETY: TIOCGPTPEER opens the slave of this master with the flags given.
    let slave = unsafe {
        libc::ioctl(
            master.as_raw_fd(),
            libc::TIOCGPTPEER,
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        )
    };
    if slave < 0 {
        return Err(last_error());
    }
    // SAFETY: as above, a new descriptor of our own.
    let slave = unsafe { OwnedFd::from_raw_fd(slave) };
    let winsize = winsize(size);
    // SAFETY: TIOCSWINSZ reads one winsize from a live local.
    if unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &winsize) } < 0 {
        return Err(last_error());
    }
    Ok((File::from(master), slave))
}

fn winsize(size: TermSize) -> libc::winsize {
    libc::winsize {
        ws_row: size.rows,
        ws_col: size.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

fn read_pty(mut reader: File, subscribers: Arc<Subscribers>, done: oneshot::Sender<()>) {
    // As large as a terminal emulator reads: a flood reaches the subscribers in few chunks.
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => subscribers.data(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Linux reports a closed terminal as EIO: the normal end.
            Err(_) => break,
        }
    }
    let _ = done.send(());
}

impl PtyProc {
    pub(super) fn write(&self, data: &[u8]) -> Result<(), BrainError> {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        writer
            .write_all(data)
            .and_then(|()| writer.flush())
            .map_err(|source| BrainError::Io {
                action: "write to",
                source,
            })
    }

    pub(super) fn resize(&self, size: TermSize) -> Result<(), BrainError> {
        let winsize = winsize(size);
        // SAFETY: TIOCSWINSZ reads one winsize from a live local.
        if unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &winsize) } < 0 {
            return Err(BrainError::Io {
                action: "resize the terminal of",
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(())
    }
}
