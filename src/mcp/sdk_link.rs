//! In-process MCP servers of the Agent SDK (`{"type": "sdk"}` in `--mcp-config`): the server
//! lives in the SDK's process, so each JSON-RPC message travels as an `mcp_message` control
//! request and the server's reply comes back as that request's response.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Carries one JSON-RPC message to the SDK's server `server` and brings back its reply.
pub trait SdkBridge: Send + Sync {
    fn message(&self, server: &str, message: Value) -> BoxFuture<'_, Result<Value, String>>;
}

/// The bridge a session got from its SDK, if an SDK drives it.
#[derive(Clone)]
pub struct SdkLink(pub Arc<dyn SdkBridge>);

impl std::fmt::Debug for SdkLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SdkLink")
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the message could not be encoded: {0}")]
pub(super) struct SdkLinkError(#[from] serde_json::Error);

pub(super) struct SdkTransport {
    server: String,
    bridge: Arc<dyn SdkBridge>,
    replies_tx: mpsc::UnboundedSender<RxJsonRpcMessage<RoleClient>>,
    replies: mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleClient>>,
}

impl SdkTransport {
    pub(super) fn new(server: &str, link: &SdkLink) -> SdkTransport {
        let (replies_tx, replies) = mpsc::unbounded_channel();
        SdkTransport {
            server: server.to_string(),
            bridge: link.0.clone(),
            replies_tx,
            replies,
        }
    }
}

impl Transport<RoleClient> for SdkTransport {
    type Error = SdkLinkError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), SdkLinkError>> + Send + 'static {
        let bridge = self.bridge.clone();
        let server = self.server.clone();
        let replies = self.replies_tx.clone();
        let message = serde_json::to_value(&item);
        async move {
            let message = message?;
            // Only a request has an answer to wait for; the SDK acknowledges the rest.
            let id = message
                .get("method")
                .and(message.get("id"))
                .cloned()
                .filter(|id| !id.is_null());
            let answer = bridge.message(&server, message).await;
            let Some(id) = id else {
                return Ok(());
            };
            let reply = match answer {
                Ok(reply) => reply,
                Err(error) => json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {"code": -32603, "message": error},
                }),
            };
            match serde_json::from_value(reply) {
                Ok(reply) => {
                    let _ = replies.send(reply);
                }
                Err(e) => {
                    let error = json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "error": {"code": -32603, "message": format!("the SDK's reply was not JSON-RPC: {e}")},
                    });
                    if let Ok(error) = serde_json::from_value(error) {
                        let _ = replies.send(error);
                    }
                }
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        self.replies.recv().await
    }

    async fn close(&mut self) -> Result<(), SdkLinkError> {
        self.replies.close();
        Ok(())
    }
}
