//! ouro's own control requests to the SDK (`can_use_tool`, `hook_callback`, `mcp_message`): each gets an id, goes out on stdout,
//! and waits for the `control_response` with that id, which the stdin reader hands back.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::write_line;
use crate::exec::hooks::HookCallbacks;
use crate::mcp::SdkBridge;
use crate::sys::sync::lock;

#[derive(Default)]
pub struct Outgoing {
    next: AtomicU64,
    waiting: Mutex<HashMap<String, oneshot::Sender<Result<Value, String>>>>,
}

impl HookCallbacks for Outgoing {
    fn call(&self, callback_id: &str, input: Value) -> BoxFuture<'_, Result<Value, String>> {
        let request = json!({
            "subtype": "hook_callback",
            "callback_id": callback_id,
            "tool_use_id": input.get("tool_use_id").cloned().unwrap_or(Value::Null),
            "input": input,
        });
        Box::pin(self.request(request))
    }
}

impl SdkBridge for Outgoing {
    fn message(&self, server: &str, message: Value) -> BoxFuture<'_, Result<Value, String>> {
        let request = json!({"subtype": "mcp_message", "server_name": server, "message": message});
        Box::pin(async move {
            let mut answer = self.request(request).await?;
            Ok(answer["mcp_response"].take())
        })
    }
}

impl Outgoing {
    /// Sends `request` and waits for the SDK's answer: its `response` payload, or its error.
    pub async fn request(&self, request: Value) -> Result<Value, String> {
        let id = format!("ouro_req_{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id.clone(), tx);
        write_line(&json!({"type": "control_request", "request_id": id, "request": request}));
        rx.await
            .map_err(|_| "the SDK closed before answering".to_string())?
    }

    /// A `control_response` line's body arrived.
    pub fn resolve(&self, body: &Value) {
        let Some(id) = body["request_id"].as_str() else {
            return;
        };
        let Some(waiter) = lock(&self.waiting).remove(id) else {
            tracing::debug!("a control_response for an unknown request {id}");
            return;
        };
        let outcome = if body["subtype"] == "success" {
            Ok(body["response"].clone())
        } else {
            Err(body["error"]
                .as_str()
                .unwrap_or("the SDK answered with an error")
                .to_string())
        };
        let _ = waiter.send(outcome);
    }
}
