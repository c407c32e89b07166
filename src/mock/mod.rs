//! A scriptable mock of the Anthropic Messages API, for end-to-end tests and the benchmark.
//!
//! [`MockServer`] serves `POST /v1/messages` over real HTTP on 127.0.0.1, validating each request
//! the way the real API does and answering from a [`Scenario`]: a list of turns, each served to
//! one successful request, in order. Point `ANTHROPIC_BASE_URL` at [`MockServer::url`].
//!
//! # Scenario JSON
//!
//! ```json
//! {
//!   "context_limit_tokens": 200000,
//!   "turns": [
//!     { "content": [ {"type": "text", "text": "Let me look."},
//!                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
//!                    {"type": "tool_use", "name": "Read", "input": {"file_path": "/x"}},
//!                    {"type": "tool_use", "name": "Write", "raw_input": "{\"file_pa"} ],
//!       "stop_reason": "max_tokens",
//!       "usage": {"input_tokens": 120, "output_tokens": 30,
//!                 "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
//!       "delay_ms": 0,
//!       "faults": [ {"kind": "http", "status": 429, "retry_after": 1},
//!                   {"kind": "http", "status": 529},
//!                   {"kind": "prompt_too_long"},
//!                   {"kind": "cut", "after_events": 4, "served": false},
//!                   {"kind": "sse_error", "after_events": 3, "error_type": "overloaded_error"},
//!                   {"kind": "invalid_json", "after_events": 3},
//!                   {"kind": "drop_events", "event": "content_block_stop"},
//!                   {"kind": "stall", "after_events": 2, "pings": true},
//!                   {"kind": "oversized_line", "after_events": 1, "bytes": 1048576} ],
//!       "expect_text": "what the request must contain"
//!     },
//!     { "content": [ {"type": "text", "text": "Done."} ] }
//!   ]
//! }
//! ```
//!
//! - `context_limit_tokens` (optional): a request whose estimated input tokens (body bytes / 4)
//!   exceed it gets the real 400 `prompt is too long: N tokens > LIMIT maximum`, and no turn
//!   is consumed.
//! - `content` blocks: `text`, `thinking` (with `signature`), `redacted_thinking` (`data`) and
//!   `tool_use`. A tool_use `id` defaults to `toolu_mock_<turn:04>_<block:02>`; `input` is
//!   serialised and streamed as `input_json_delta` chunks, while `raw_input` is streamed verbatim
//!   (to imitate JSON cut off by `max_tokens`).
//! - `stop_reason` defaults to `tool_use` when a tool is called, else `end_turn`.
//! - `usage` defaults to input = body bytes / 4, output = content characters / 4 + 1.
//! - `delay_ms` pauses before every SSE event after the first (slow streams).
//! - `hold_after_events` sends that many events (0: only the headers), then holds the stream
//!   until the test calls [`MockServer::release`]; [`MockServer::wait_held`] returns once it is
//!   held. Tests interrupt the client at that known point instead of after a guessed sleep.
//! - `faults`: each request aimed at the turn first consumes the next fault, in order; after
//!   the faults the turn is served. `http` answers that status with the real error body
//!   (429 `rate_limit_error` with `retry-after` if given, 529 `overloaded_error`, 5xx
//!   `api_error`, ...; `message` overrides the text); `prompt_too_long` answers the 400 for a
//!   prompt 25% over the limit; `cut` sends the first `after_events` SSE events and then drops
//!   the connection mid-body (the turn counts as served when `served` is set or when every
//!   event was sent, so the next request gets the next turn); `sse_error` sends `after_events`
//!   events, then an `error` event, then ends; `invalid_json` inserts a `content_block_delta`
//!   whose data is not JSON after `after_events` events; `drop_events` leaves out every event
//!   of one type; `stall` goes quiet after `after_events` events (sending a `ping` every 50 ms
//!   with `pings`) until the client hangs up; `oversized_line` sends a `data:` line of `bytes`
//!   bytes that never ends. For a non-streaming request `cut` sends half the JSON and drops the
//!   connection, `sse_error` becomes a plain error response of that type, and the other stream
//!   faults serve the whole message.
//! - `expect_text` (optional): a substring the request must contain (raw or inside any JSON
//!   string); otherwise the answer is a 400 saying what was expected.
//!
//! Once the turns run out every request gets 400 `mock scenario exhausted after N turns`.
//! Requests the real API would reject (no `x-api-key` → 401, no `anthropic-version`, no
//! `model`/`max_tokens`, empty `messages`, a first message that is not `user`, empty text
//! blocks, tool_use without a tool_result right after it, a tool_result that answers no
//! tool_use in the previous message) get its 400 and consume neither a turn nor a fault.
//!
//! Every request, rejected or not, is logged ([`MockServer::requests`], or `GET
//! /_mock/requests` as JSON); only the newest 64 MB of bodies are kept, older entries keep
//! their size (`body_bytes`) with `body_dropped` set. Streams are split deterministically: text and thinking into up to
//! three deltas each, tool input into an empty first chunk plus up to three more, so a plain
//! text turn is `message_start`, `content_block_start`, `ping`, three `content_block_delta`,
//! `content_block_stop`, `message_delta`, `message_stop`.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use ouro::mock::{MockServer, Scenario, Turn};
//! let server = MockServer::start(Scenario::new(vec![Turn::text("Hello")])).await?;
//! // ... run ouro with ANTHROPIC_BASE_URL = server.url() ...
//! assert_eq!(server.turns_served(), 1);
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod embeddings;
mod ledger;
mod prompt_cache;
mod scenario;
mod server;
mod sse;
mod validate;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use ledger::RecordedRequest;
pub use scenario::{Fault, MockBlock, Scenario, ScenarioError, Turn};

/// How long `shutdown` waits for open connections to finish before abandoning them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A running mock server; dropping it stops it too.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<server::Shared>,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Serves `scenario` on a free port of 127.0.0.1 in a background tokio task.
    pub async fn start(scenario: Scenario) -> std::io::Result<MockServer> {
        MockServer::start_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), scenario).await
    }

    pub async fn start_on(addr: SocketAddr, scenario: Scenario) -> std::io::Result<MockServer> {
        scenario
            .check()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let cancel = CancellationToken::new();
        let shared = Arc::new(server::Shared::new(scenario, cancel.clone()));
        let app = server::router(Arc::clone(&shared));
        let stop = cancel.clone().cancelled_owned();
        let task = tokio::spawn(async move {
            // Small SSE frames must leave at once: with Nagle's algorithm on, they wait for the
            // client's delayed ACK (~40 ms), which distorts every timing taken against the mock.
            let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                let _ = tcp.set_nodelay(true);
            });
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
            {
                tracing::warn!("mock API server stopped with an error: {e}");
            }
        });
        Ok(MockServer {
            addr,
            shared,
            cancel,
            task: Some(task),
        })
    }

    /// The base URL, e.g. `http://127.0.0.1:40123`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in arrival order, including rejected ones.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.ledger().requests()
    }

    /// When the first request the server logs had been read whole, as
    /// [`crate::sys::clock::monotonic_ns`] (comparable with a moment taken in another process),
    /// or `None` before one came.
    pub fn first_request_ns(&self) -> Option<u64> {
        match self
            .shared
            .first_request_ns
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            0 => None,
            at => Some(at),
        }
    }

    /// The body size of every request received so far, in arrival order (cheaper than
    /// [`MockServer::requests`], which copies the bodies).
    pub fn body_sizes(&self) -> Vec<usize> {
        self.shared.ledger().body_sizes()
    }

    /// How many requests the token counter got.
    pub fn token_counts(&self) -> usize {
        self.shared
            .token_counts
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many scenario turns have been served (faulted attempts do not count).
    pub fn turns_served(&self) -> usize {
        self.shared.ledger().turns_served()
    }

    /// Waits until `count` replies in all have reached their `hold_after_events` point.
    pub async fn wait_held(&self, count: usize) {
        let mut held = self.shared.hold.held.subscribe();
        let _ = held.wait_for(|&n| n >= count).await;
    }

    /// Lets every reply held so far go on.
    pub fn release(&self) {
        self.shared.hold.released.send_modify(|n| *n += 1);
    }

    /// Stops accepting, ends in-flight streams and waits (briefly) for the server to finish.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
                .await
                .is_err()
        {
            task.abort();
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
