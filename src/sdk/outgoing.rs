//! ouro's own control requests to the SDK (`can_use_tool`, `hook_callback`, `mcp_message`): each gets an id, goes out on stdout,
//! and waits for the `control_response` with that id, which the stdin reader hands back.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::oneshot;

use super::write_line;
use crate::exec::hooks::HookCallbacks;
use crate::mcp::SdkBridge;
use crate::stream_json::wire::{ControlCancel, ControlRequest, ControlResponse, Line, RequestBody};
use crate::sys::sync::lock;

#[derive(Default)]
pub struct Outgoing {
    next: AtomicU64,
    waiting: Mutex<HashMap<String, oneshot::Sender<Result<Value, String>>>>,
    /// The running turn's token: an answer that asks to stop (`can_use_tool` denying with
    /// `interrupt: true`) cancels it.
    turn: Mutex<Option<tokio_util::sync::CancellationToken>>,
    /// Stdin closed: no answer can come, so a question is refused at once rather than waited
    /// on forever.
    closed: std::sync::atomic::AtomicBool,
}

impl HookCallbacks for Outgoing {
    fn call(&self, callback_id: &str, input: Value) -> BoxFuture<'_, Result<Value, String>> {
        let request = RequestBody::HookCallback {
            callback_id: callback_id.to_string(),
            tool_use_id: input
                .get("tool_use_id")
                .and_then(Value::as_str)
                .map(String::from),
            input,
        };
        Box::pin(self.request(request))
    }
}

/// The SDK's answer to an `mcp_message`.
#[derive(serde::Deserialize)]
struct McpAnswer {
    #[serde(default)]
    mcp_response: Value,
}

impl SdkBridge for Outgoing {
    fn message(&self, server: &str, message: Value) -> BoxFuture<'_, Result<Value, String>> {
        let request = RequestBody::McpMessage {
            server_name: server.to_string(),
            message,
        };
        Box::pin(async move {
            let answer = self.request(request).await?;
            let answer: McpAnswer = serde_json::from_value(answer)
                .map_err(|e| format!("the SDK's mcp_message answer is malformed: {e}"))?;
            Ok(answer.mcp_response)
        })
    }
}

impl Outgoing {
    /// The turn that runs now, which an answer may stop.
    pub(crate) fn set_turn(&self, token: tokio_util::sync::CancellationToken) {
        *lock(&self.turn) = Some(token);
    }

    /// Stops the running turn, as an interrupt does.
    pub(crate) fn interrupt_turn(&self) {
        if let Some(token) = lock(&self.turn).as_ref() {
            token.cancel();
        }
    }

    /// Sends `request` and waits for the SDK's answer: its `response` payload, or its error.
    pub async fn request(&self, request: RequestBody) -> Result<Value, String> {
        let id = format!("ouro_req_{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        {
            let mut waiting = lock(&self.waiting);
            if self.closed.load(Ordering::Acquire) {
                return Err("the SDK closed stdin, so nothing can answer".into());
            }
            waiting.insert(id.clone(), tx);
        }
        write_line(&Line::ControlRequest(ControlRequest::new(
            id.clone(),
            &request,
        )));
        let abandoned = Abandoned {
            outgoing: self,
            id: Some(id),
        };
        let answer = rx.await;
        abandoned.answered();
        answer.map_err(|_| "the SDK closed before answering".to_string())?
    }

    /// Stdin reached its end: every question still waiting, and every later one, fails.
    pub fn close(&self) {
        let mut waiting = lock(&self.waiting);
        self.closed.store(true, Ordering::Release);
        waiting.clear();
    }

    /// The request `id` is no longer waited on (its turn was interrupted): the SDK is told, so
    /// a callback still open on its side (a dialog) can close.
    fn abandon(&self, id: &str) {
        if lock(&self.waiting).remove(id).is_some() {
            write_line(&Line::ControlCancelRequest(ControlCancel {
                request_id: id.to_string(),
            }));
        }
    }

    /// A `control_response` line's body arrived.
    pub fn resolve(&self, response: ControlResponse) {
        let id = response.request_id();
        let Some(waiter) = lock(&self.waiting).remove(id) else {
            tracing::debug!("a control_response for an unknown request {id}");
            return;
        };
        let _ = waiter.send(response.outcome());
    }
}

/// Dropped before its answer came, a request is abandoned (see [`Outgoing::abandon`]).
struct Abandoned<'a> {
    outgoing: &'a Outgoing,
    id: Option<String>,
}

impl Abandoned<'_> {
    fn answered(mut self) {
        self.id = None;
    }
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.outgoing.abandon(&id);
        }
    }
}
