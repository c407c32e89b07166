//! The two streams and the questions between them: lines in from the supervisor, messages out
//! to it one whole line at a time, and the permission requests that wait for their answers.

use std::collections::HashMap;
use std::io::BufRead;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::messages::{Level, PermissionResponse, ToSupervisor, ToSupervisorMessage};
use crate::sys::sync::lock;

/// Messages to the supervisor. Several tasks write (the turn's events, its permission
/// requests), so each message goes out whole, under one lock, and is flushed at once: a
/// supervisor reacts to a line when it arrives.
pub(super) struct Outbox {
    out: tokio::sync::Mutex<Pin<Box<dyn AsyncWrite + Send>>>,
}

impl Outbox {
    pub(super) fn new(out: impl AsyncWrite + Send + 'static) -> Arc<Outbox> {
        Arc::new(Outbox {
            out: tokio::sync::Mutex::new(Box::pin(out)),
        })
    }

    pub(super) async fn send(&self, body: ToSupervisor) {
        let message = ToSupervisorMessage::new(body);
        let mut line = match serde_json::to_vec(&message) {
            Ok(line) => line,
            Err(e) => {
                tracing::warn!(error = %e, "could not write an IPC message");
                return;
            }
        };
        line.push(b'\n');
        let mut out = self.out.lock().await;
        let sent = async {
            out.write_all(&line).await?;
            out.flush().await
        };
        // A supervisor that stopped reading still ends the task through stdin (closing it, or
        // task:terminate); nothing else is to be done about its output here.
        if let Err(e) = sent.await {
            tracing::debug!(error = %e, "the supervisor no longer reads the agent's messages");
        }
    }

    pub(super) async fn log(&self, level: Level, message: impl Into<String>) {
        self.send(ToSupervisor::log(level, message)).await;
    }
}

/// The lines of stdin, as they come; the channel closes at its end. They are read on a thread
/// of their own: a blocking read cannot be cancelled, and one on the runtime's blocking pool
/// would keep the process from ending while the supervisor holds stdin open.
pub(super) fn stdin_lines() -> mpsc::Receiver<String> {
    let (lines, rx) = mpsc::channel(64);
    let spawned = std::thread::Builder::new()
        .name("ipc-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut line = Vec::new();
            loop {
                line.clear();
                match stdin.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                // Not UTF-8 cannot be JSON; read lossily, it is reported as a bad line.
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end_matches(['\n', '\r']);
                if text.trim().is_empty() {
                    continue;
                }
                if lines.blocking_send(text.to_string()).is_err() {
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        // The channel closes at once: stdin reads as ended, which ends the agent.
        tracing::warn!(error = %e, "could not start reading stdin");
    }
    rx
}

/// The permission requests that wait for the supervisor, by request id.
#[derive(Clone, Default)]
pub(super) struct Questions {
    waiting: Arc<Mutex<HashMap<String, oneshot::Sender<PermissionResponse>>>>,
}

impl Questions {
    /// Registers request `id`; the receiver gets its answer, or an error once the task ends
    /// or is terminated without one.
    pub(super) fn open(&self, id: &str) -> oneshot::Receiver<PermissionResponse> {
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id.to_string(), tx);
        rx
    }

    /// Delivers `response` to its request; gives it back when none of its id waits.
    pub(super) fn answer(&self, response: PermissionResponse) -> Result<(), PermissionResponse> {
        match lock(&self.waiting).remove(&response.request_id) {
            Some(waiting) => waiting.send(response),
            None => Err(response),
        }
    }

    /// Forgets every waiting request: each is then denied.
    pub(super) fn clear(&self) {
        lock(&self.waiting).clear();
    }
}
