//! The daemon's side of `ouro talk` and `ouro watch`.
//!
//! A talk boots the clone's brain into its own terminal UI in a PTY the daemon owns and relays
//! bytes both ways. It ends when the brain exits, the client detaches, the client is lost or
//! the daemon stops; in every case the clone goes back to dispatch with its series, which the
//! brain moved to whatever session the UI wrote last, so the next `ask` continues the talk.

use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, oneshot};

use tokio_util::sync::CancellationToken;

use super::clone::{CloneHandle, deliver, sane_size};
use super::conn::Conn;
use super::frame::{Frame, Header, TalkEndReason};
use crate::brain::{ExitInfo, Mode, TermSize};
use crate::sys::sync::lock;

pub(super) async fn run(
    clone: Arc<CloneHandle>,
    conn: &mut Conn,
    size: TermSize,
    shutdown: &CancellationToken,
) {
    let client = conn.outgoing.clone();
    let size = sane_size(size);
    let turn = tokio::select! {
        guard = clone.take_turn(&client) => guard,
        _ = conn.next() => return,
    };
    clone.begin_talk(size);
    let (exit_tx, mut exited) = oneshot::channel::<ExitInfo>();
    let exit_tx = Mutex::new(Some(exit_tx));
    let subscription = clone.brain.on_exit(Arc::new(move |info| {
        if let Some(tx) = lock(&exit_tx).take() {
            let _ = tx.send(info);
        }
    }));
    let booted = match clone.brain.resize(size) {
        Ok(()) => clone.brain.boot(Mode::Interact).await,
        Err(e) => Err(e),
    };
    let instance = match booted {
        Ok(instance) => instance,
        Err(e) => {
            clone.brain.unsubscribe(subscription);
            clone.end_activity();
            drop(turn);
            let message = format!("could not start the brain of {}: {e}", clone.name());
            deliver(&client, Header::Error { message }.into()).await;
            return;
        }
    };
    deliver(&client, Header::TalkReady { pid: instance.pid }.into()).await;
    clone.attach(client.clone());
    clone.broadcast(
        Header::Notice {
            message: format!("a talk began (pid {})", instance.pid),
        }
        .into(),
    );

    let (reason, code) = loop {
        tokio::select! {
            info = &mut exited => {
                let code = info.ok().and_then(|i| i.code.or(i.signal.map(|s| 128 + s)));
                break (TalkEndReason::BrainExit, code);
            }
            frame = conn.next() => match frame {
                Some(Frame { header: Header::Input, payload }) => {
                    if let Err(e) = clone.brain.write(&payload).await {
                        tracing::debug!(error = %e, "could not write to a talking brain");
                    }
                }
                Some(Frame { header: Header::Resize { cols, rows }, .. }) => {
                    let size = sane_size(TermSize { cols, rows });
                    clone.resize_screen(size);
                    if let Err(e) = clone.brain.resize(size) {
                        tracing::debug!(error = %e, "could not resize a talking brain");
                    }
                }
                Some(Frame { header: Header::Detach, .. }) => break (TalkEndReason::Detach, None),
                Some(_) => {}
                None => {
                    tracing::info!(clone = clone.name(), "the talking client is gone");
                    break (TalkEndReason::Detach, None);
                }
            },
            _ = shutdown.cancelled() => break (TalkEndReason::Shutdown, None),
        }
    };
    clone.brain.unsubscribe(subscription);
    if reason != TalkEndReason::BrainExit
        && let Err(e) = clone.brain.kill().await
    {
        tracing::warn!(clone = clone.name(), error = %e, "could not stop a talking brain");
    }
    clone.end_activity();
    drop(turn);
    let end = Header::TalkEnd { reason, code };
    clone.broadcast(end.clone().into());
    deliver(&client, end.into()).await;
}

/// Relays everything the clone does to one watcher until it leaves; a watcher may answer
/// permission questions. One that falls behind starts again from the screen as it is now.
/// With `after` (a watcher coming back after a gap), the events it missed come first: those
/// after the one numbered, or without a number the current turn's.
pub(super) async fn watch(
    clone: Arc<CloneHandle>,
    conn: &mut Conn,
    shutdown: &CancellationToken,
    after: Option<Option<u64>>,
) {
    let (screen, rx, missed) = match after {
        Some(since) => {
            let (screen, rx, missed) = clone.watch_after(since);
            (screen, rx, Some(missed))
        }
        None => {
            let (screen, rx) = clone.watch();
            (screen, rx, None)
        }
    };
    let hello = Header::Ok {
        message: format!("watching {} (Ctrl-C stops)", clone.name()),
    };
    if !deliver(&conn.outgoing, hello.into()).await {
        return;
    }
    if let Some(missed) = missed {
        if missed.lost > 0 {
            let notice = Header::Notice {
                message: format!(
                    "({} updates of the gap are no longer kept; what follows is the rest)",
                    missed.lost
                ),
            };
            if !deliver(&conn.outgoing, notice.into()).await {
                return;
            }
        }
        for frame in missed.frames {
            if !deliver(&conn.outgoing, frame).await {
                return;
            }
        }
    }
    follow(&clone, conn, shutdown, screen, rx, None).await;
}

/// Relays what the clone's watchers see to `conn` (the screen first, when there is one) and
/// takes its answers to permission questions; with `until_run`, only until that agent run's
/// result has been sent.
pub(super) async fn follow(
    clone: &CloneHandle,
    conn: &mut Conn,
    shutdown: &CancellationToken,
    screen: Option<Vec<u8>>,
    mut rx: broadcast::Receiver<Frame>,
    until_run: Option<&str>,
) {
    let client = conn.outgoing.clone();
    if let Some(screen) = screen
        && !deliver(&client, Frame::with_payload(Header::Screen, screen)).await
    {
        return;
    }
    if !put_waiting(clone, &client).await {
        return;
    }
    loop {
        tokio::select! {
            item = rx.recv() => {
                let frame = match item {
                    Ok(frame) => frame,
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        let notice = Header::Notice {
                            message: format!("(this watcher fell behind and missed {missed} updates)"),
                        };
                        if !deliver(&client, notice.into()).await {
                            return;
                        }
                        let (screen, fresh) = clone.watch();
                        rx = fresh;
                        if !put_waiting(clone, &client).await {
                            return;
                        }
                        match screen {
                            Some(screen) => Frame::with_payload(Header::Screen, screen),
                            None => continue,
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let last = matches!(
                    (&frame.header, until_run),
                    (Header::AgentResult { result, .. }, Some(run))
                        if result.get("runId").and_then(|r| r.as_str()) == Some(run)
                );
                if !deliver(&client, frame).await || last {
                    return;
                }
            }
            frame = conn.next() => match frame {
                Some(Frame { header: Header::PermissionAnswer { request_id, allow, always }, .. }) => {
                    clone.answer(&request_id, allow, always);
                }
                Some(_) => {}
                None => return,
            },
            _ = shutdown.cancelled() => return,
        }
    }
}

/// Puts the questions that wait to a client that came after they were asked (a watcher, or a
/// client whose link dropped) or missed them; `false` once the client is gone. Called after
/// the client's subscription, so one asked meanwhile may come twice (clients show an id once)
/// and one settled meanwhile is settled through the subscription.
async fn put_waiting(clone: &CloneHandle, client: &tokio::sync::mpsc::Sender<Frame>) -> bool {
    for question in clone.pending() {
        let frame = Header::Permission {
            clone: clone.name().to_string(),
            request_id: question.id,
            tool_name: question.tool,
            input: question.input,
            reason: question.reason,
        };
        if !deliver(client, frame.into()).await {
            return false;
        }
    }
    true
}
