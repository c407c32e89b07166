//! A brain's terminal UI in a pseudo-terminal: bytes written go to its keyboard, bytes it
//! draws go to the data subscribers unchanged.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};

use super::dispatch::Launch;
use super::process::{self, OnExit, ProcessCore};
use crate::brain::terminal::Subscribers;
use crate::brain::{BrainError, TermSize};

/// How long an exit report waits for the terminal's last output to be read.
const DRAIN_PTY: Duration = Duration::from_secs(2);

pub(crate) struct PtyProc {
    pub core: ProcessCore,
    master: Mutex<Box<dyn MasterPty + Send>>,
    writer: Mutex<Box<dyn Write + Send>>,
}

pub(crate) fn spawn(
    launch: Launch<'_>,
    size: TermSize,
    subscribers: Arc<Subscribers>,
    on_exit: OnExit,
) -> Result<PtyProc, BrainError> {
    let program = launch.program.to_string_lossy().into_owned();
    let pty_error = |e: anyhow::Error| BrainError::Pty {
        program: program.clone(),
        reason: format!("{e:#}"),
    };
    let pair = native_pty_system()
        .openpty(pty_size(size))
        .map_err(pty_error)?;
    let mut cmd = CommandBuilder::new(launch.program);
    cmd.args(&launch.args);
    cmd.cwd(launch.cwd);
    if std::env::var_os("TERM").is_none() {
        cmd.env("TERM", "xterm-256color");
    }
    for (key, value) in launch.env {
        cmd.env(key, value);
    }
    let child = pair
        .slave
        .spawn_command(cmd)
        .map_err(|e| BrainError::Spawn {
            program: program.clone(),
            source: std::io::Error::other(format!("{e:#}")),
            hint: launch.spawn_hint,
        })?;
    // The reader sees end-of-file only once no slave handle is left open in this process.
    drop(pair.slave);
    let pid = child.process_id().ok_or_else(|| BrainError::Pty {
        program: program.clone(),
        reason: "the started process has no pid".into(),
    })?;
    // The exit watcher reaps by pid, which gives the signal number rather than its name.
    drop(child);
    let reader = pair.master.try_clone_reader().map_err(pty_error)?;
    let writer = pair.master.take_writer().map_err(pty_error)?;
    tracing::debug!(pid, program = launch.name, args = ?launch.args, "started a brain in a terminal");

    let (core, reporter) = process::track(pid, on_exit);
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || read_pty(reader, subscribers, done_tx));
    std::thread::spawn(move || {
        let info = process::wait_blocking(pid);
        let _ = done_rx.recv_timeout(DRAIN_PTY);
        reporter.report(info);
    });
    Ok(PtyProc {
        core,
        master: Mutex::new(pair.master),
        writer: Mutex::new(writer),
    })
}

fn read_pty(
    mut reader: Box<dyn Read + Send>,
    subscribers: Arc<Subscribers>,
    done: mpsc::Sender<()>,
) {
    let mut buf = [0u8; 8192];
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

fn pty_size(size: TermSize) -> PtySize {
    PtySize {
        rows: size.rows,
        cols: size.cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

impl PtyProc {
    pub fn write(&self, data: &[u8]) -> Result<(), BrainError> {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        writer
            .write_all(data)
            .and_then(|()| writer.flush())
            .map_err(|source| BrainError::Io {
                action: "write to",
                source,
            })
    }

    pub fn resize(&self, size: TermSize) -> Result<(), BrainError> {
        self.master
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .resize(pty_size(size))
            .map_err(|e| BrainError::Io {
                action: "resize the terminal of",
                source: std::io::Error::other(format!("{e:#}")),
            })
    }
}
