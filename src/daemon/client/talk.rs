//! `ouro talk NAME`: the terminal in raw mode, bytes relayed both ways with no interpretation
//! except the detach keys, the size sent at start and after every window change.

use std::io::{Read, Write};
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use super::keys::DetachKeys;
use super::terminal::{self, RawMode};
use super::{Client, unexpected};
use crate::daemon::frame::{Frame, Header, TalkEndReason};
use crate::daemon::{DaemonError, Paths};

/// Window changes closer together than this are sent as one resize.
const RESIZE_SETTLE: Duration = Duration::from_millis(25);

/// How a talk ended, for the exit code and the closing sentence.
pub(super) enum TalkOutcome {
    /// The brain exited with this code.
    BrainExit(Option<i32>),
    Detached,
    /// The client was asked to stop (SIGTERM, SIGHUP, SIGINT).
    Signalled(i32),
    DaemonStopped,
}

/// Talks to clone `name` until the talk ends; returns the exit code `ouro talk` ends with.
pub async fn talk(paths: &Paths, name: &str, keys: DetachKeys) -> Result<i32, DaemonError> {
    if !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Err(DaemonError::Client(
            "`ouro talk` needs a terminal on stdin; use `ouro ask` or `ouro act` from scripts"
                .into(),
        ));
    }
    let mut client = Client::connect(paths, true).await?;
    let size = terminal::size();
    client
        .send(Header::Talk {
            name: name.to_string(),
            cols: size.cols,
            rows: size.rows,
        })
        .await?;
    loop {
        match client.next().await?.header {
            Header::TalkReady { .. } => break,
            Header::Queued { reason } => eprintln!("ouro: {reason}"),
            Header::Error { message } => return Err(DaemonError::Remote(message)),
            other => return Err(unexpected(&other)),
        }
    }
    // The window may have changed while the talk waited in the queue.
    let now = terminal::size();
    if now != size {
        client
            .send(Header::Resize {
                cols: now.cols,
                rows: now.rows,
            })
            .await?;
    }
    let outcome = {
        let _raw = RawMode::enter().map_err(|source| DaemonError::Io {
            action: "put the terminal in raw mode:",
            path: "stdin".into(),
            source,
        })?;
        relay(&mut client, keys).await
    };
    match outcome? {
        TalkOutcome::BrainExit(code) => {
            let code = code.unwrap_or(1);
            eprintln!(
                "\nouro: the brain of {name} exited (code {code}); `ouro talk {name}` starts it again"
            );
            Ok(code)
        }
        TalkOutcome::Detached => {
            eprintln!(
                "\nouro: detached from {name}; its conversation goes on: `ouro talk {name}` comes back, `ouro ask {name} \"…\"` continues it"
            );
            Ok(0)
        }
        TalkOutcome::Signalled(signal) => Ok(128 + signal),
        TalkOutcome::DaemonStopped => {
            eprintln!("\nouro: the daemon stopped; `ouro talk {name}` starts it again");
            Ok(1)
        }
    }
}

async fn relay(client: &mut Client, mut keys: DetachKeys) -> Result<TalkOutcome, DaemonError> {
    let watch = |kind| {
        signal(kind).map_err(|source| DaemonError::Io {
            action: "watch signals in",
            path: "the client".into(),
            source,
        })
    };
    let mut winch = watch(SignalKind::window_change())?;
    let mut term = watch(SignalKind::terminate())?;
    let mut hup = watch(SignalKind::hangup())?;
    let mut int = watch(SignalKind::interrupt())?;
    let mut input = stdin_reader();
    let mut stdout = std::io::stdout();
    let mut detaching = false;
    let mut typing = true;
    loop {
        tokio::select! {
            bytes = input.recv(), if typing => {
                let Some(bytes) = bytes else {
                    // The terminal is gone: leave the brain to the daemon.
                    typing = false;
                    if !detaching {
                        client.send(Header::Detach).await?;
                        detaching = true;
                    }
                    continue;
                };
                let (forward, detach) = keys.feed(&bytes);
                if !forward.is_empty() {
                    client.send(Frame::with_payload(Header::Input, forward)).await?;
                }
                if detach && !detaching {
                    client.send(Header::Detach).await?;
                    detaching = true;
                }
            }
            frame = client.next() => {
                let frame = match frame {
                    Ok(frame) => frame,
                    Err(DaemonError::Lost) => return Err(DaemonError::Client(
                        "the connection to the daemon was lost (it may have crashed); your terminal is restored. Run `ouro talk` again: the daemon restarts and recovers its clones".into(),
                    )),
                    Err(e) => return Err(e),
                };
                match frame.header {
                    Header::Output | Header::Screen => {
                        let _ = stdout.write_all(&frame.payload);
                        let _ = stdout.flush();
                    }
                    Header::TalkEnd { reason, code } => return Ok(match reason {
                        TalkEndReason::BrainExit => TalkOutcome::BrainExit(code),
                        TalkEndReason::Detach => TalkOutcome::Detached,
                        TalkEndReason::Shutdown => TalkOutcome::DaemonStopped,
                    }),
                    Header::Error { message } => return Err(DaemonError::Remote(message)),
                    _ => {}
                }
            }
            _ = winch.recv() => {
                // A drag sends a burst of changes: wait for it to settle, send the last size.
                tokio::time::sleep(RESIZE_SETTLE).await;
                while let Some(Some(())) = futures::FutureExt::now_or_never(winch.recv()) {}
                let size = terminal::size();
                client.send(Header::Resize { cols: size.cols, rows: size.rows }).await?;
            }
            _ = term.recv() => return Ok(TalkOutcome::Signalled(libc::SIGTERM)),
            _ = hup.recv() => return Ok(TalkOutcome::Signalled(libc::SIGHUP)),
            _ = int.recv() => return Ok(TalkOutcome::Signalled(libc::SIGINT)),
        }
    }
}

/// Keyboard bytes as they arrive; closed when stdin ends. A thread, because a terminal read
/// blocks and the process exits around it at the end.
fn stdin_reader() -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 4096];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    if tx.blocking_send(buf[..n].to_vec()).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    });
    rx
}
