//! The legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp 3 no longer ships and many
//! hosted servers still speak: a GET opens an event stream whose first `endpoint` event names
//! the URL to POST messages to; the server's messages arrive as `message` events.

use std::collections::VecDeque;

use futures::StreamExt;
use reqwest::header::{ACCEPT, HeaderMap};
use reqwest::{Client, Url};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::api::sse::{Decoder, Frame};

/// One SSE event of the server's stream is at most this large.
const MAX_EVENT_BYTES: usize = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub(super) enum SseError {
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    #[error("the server answered HTTP {0}")]
    Status(reqwest::StatusCode),
    #[error("the event stream ended before the server named its message endpoint")]
    NoEndpoint,
    #[error("the server named an endpoint that is not a URL: {0}")]
    BadEndpoint(String),
    #[error(
        "the server named a message endpoint on another host ({0}); ouro sends the configured headers only to the configured one"
    )]
    OtherOrigin(String),
}

pub(super) struct SseTransport {
    http: Client,
    headers: HeaderMap,
    endpoint: Url,
    frames: mpsc::Receiver<Frame>,
    reader: JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl SseTransport {
    /// Opens the event stream and waits for the server to name its message endpoint.
    pub(super) async fn connect(url: &str, headers: HeaderMap) -> Result<SseTransport, SseError> {
        let base = Url::parse(url).map_err(|_| SseError::BadEndpoint(url.to_string()))?;
        let http = Client::new();
        let response = http
            .get(base.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await?;
        if !response.status().is_success() {
            return Err(SseError::Status(response.status()));
        }
        let (tx, mut frames) = mpsc::channel(64);
        let reader = tokio::spawn(read_frames(response, tx));
        let endpoint = loop {
            match frames.recv().await {
                Some(frame) if frame.event == "endpoint" => {
                    let data = frame.data.trim();
                    let endpoint = base
                        .join(data)
                        .map_err(|_| SseError::BadEndpoint(data.to_string()))?;
                    // The configured headers (credentials) go only where the user pointed.
                    if endpoint.origin() != base.origin() {
                        return Err(SseError::OtherOrigin(endpoint.to_string()));
                    }
                    break endpoint;
                }
                Some(_) => continue,
                None => return Err(SseError::NoEndpoint),
            }
        };
        Ok(SseTransport {
            http,
            headers,
            endpoint,
            frames,
            reader,
        })
    }
}

/// Feeds the response body through the SSE decoder until it ends or the transport is gone.
async fn read_frames(response: reqwest::Response, tx: mpsc::Sender<Frame>) {
    let mut decoder = Decoder::new(MAX_EVENT_BYTES);
    let mut ready = VecDeque::new();
    let mut body = response.bytes_stream();
    while let Some(Ok(chunk)) = body.next().await {
        if let Err(e) = decoder.feed(&chunk, &mut ready) {
            tracing::debug!("mcp sse stream unreadable: {e}");
            return;
        }
        while let Some(frame) = ready.pop_front() {
            if tx.send(frame).await.is_err() {
                return;
            }
        }
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let request = self
            .http
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let response = request.send().await?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(SseError::Status(response.status()))
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let frame = self.frames.recv().await?;
            if frame.event != "message" {
                continue;
            }
            match serde_json::from_str(&frame.data) {
                Ok(message) => return Some(message),
                Err(e) => tracing::debug!("mcp sse message skipped ({e}): {}", frame.data),
            }
        }
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.reader.abort();
        Ok(())
    }
}
