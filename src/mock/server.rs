//! The HTTP side: an axum app that logs each request, asks the ledger what to answer, and
//! writes it as JSON, a (possibly slowed, broken or failing) SSE stream, or an error.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::ledger::{Ending, Ledger, Outcome, RecordedRequest};
use super::prompt_cache::{self, PromptCache};
use super::scenario::Scenario;
use super::sse::{Reply, SseEvent, error_event};
use super::validate::ApiError;
use crate::sys::clock::monotonic_ns;

pub(super) struct Shared {
    scenario: Scenario,
    ledger: Mutex<Ledger>,
    prompt_cache: Mutex<PromptCache>,
    /// Ends in-flight streams when the server shuts down, so shutdown never waits on a slow turn.
    cancel: CancellationToken,
    pub hold: Arc<Hold>,
    /// Requests to the token counter (never turns, so not in the ledger).
    pub token_counts: std::sync::atomic::AtomicUsize,
    /// When the first request the ledger logs had been read whole ([`monotonic_ns`]; 0: none
    /// yet), so a benchmark in another process can time its client's start without polling.
    pub first_request_ns: AtomicU64,
}

/// Replies held at their `hold_after_events` point, and the test's releases.
pub(super) struct Hold {
    /// How many replies have been held, in all.
    pub held: watch::Sender<usize>,
    /// How many times the test released them.
    pub released: watch::Sender<u64>,
}

impl Shared {
    pub(super) fn new(scenario: Scenario, cancel: CancellationToken) -> Shared {
        let min_tokens = scenario
            .cache_min_tokens
            .unwrap_or(prompt_cache::DEFAULT_MIN_TOKENS);
        Shared {
            scenario,
            ledger: Mutex::new(Ledger::default()),
            prompt_cache: Mutex::new(PromptCache::new(min_tokens)),
            cancel,
            hold: Arc::new(Hold {
                held: watch::Sender::new(0),
                released: watch::Sender::new(0),
            }),
            token_counts: std::sync::atomic::AtomicUsize::new(0),
            first_request_ns: AtomicU64::new(0),
        }
    }

    /// A panic while the lock was held cannot leave the ledger half-updated in a way that
    /// matters more than losing the log, so a poisoned lock is used as is.
    pub(super) fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(handle)
        // The ledger answers oversized bodies itself with the API's own 413.
        .layer(DefaultBodyLimit::disable())
        .with_state(shared)
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method == Method::GET && uri.path() == "/_mock/requests" {
        return axum::Json(shared.ledger().requests()).into_response();
    }
    if method == Method::POST && uri.path() == "/v1/embeddings" {
        return super::embeddings::answer(&headers, &body);
    }
    // Token counting, as the mock bills: the bytes of the messages' text / 4. No turn is used.
    if method == Method::POST && uri.path() == "/v1/messages/count_tokens" {
        shared.token_counts.fetch_add(1, Ordering::Relaxed);
        let (body_json, _) = parse_body(&body);
        let text_bytes: usize =
            body_json
                .get("messages")
                .and_then(Value::as_array)
                .map_or(0, |messages| {
                    messages
                        .iter()
                        .map(|m| match m.get("content") {
                            Some(Value::String(s)) => s.len(),
                            Some(Value::Array(blocks)) => blocks
                                .iter()
                                .filter_map(|b| b.get("text").and_then(Value::as_str))
                                .map(str::len)
                                .sum(),
                            _ => 0,
                        })
                        .sum()
                });
        let tokens = text_bytes.div_ceil(4);
        return axum::Json(serde_json::json!({ "input_tokens": tokens })).into_response();
    }
    let _ = shared.first_request_ns.compare_exchange(
        0,
        monotonic_ns(),
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    let (body_json, parse_error) = parse_body(&body);
    let request = RecordedRequest {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().map(str::to_string),
        headers: header_map(&headers),
        body: body_json,
        body_bytes: body.len(),
        body_dropped: false,
        status: 0,
        turn: None,
    };
    let streaming = request.body.get("stream").and_then(Value::as_bool) == Some(true);
    let model = request
        .body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    // Billed only if a turn is served; a rejected request writes no cache.
    let sent = request.body.clone();
    let (outcome, request_id) =
        shared
            .ledger()
            .handle(&shared.scenario, request, parse_error, body.len());
    match outcome {
        Outcome::Error { error, retry_after } => error_response(&error, &request_id, retry_after),
        Outcome::Turn { turn, ending } => {
            let Some(script) = shared.scenario.turns.get(turn) else {
                let error = ApiError::for_status(500, None);
                return error_response(&error, &request_id, None);
            };
            let reply = Reply {
                turn: script,
                index: turn,
                model: &model,
                usage: script.effective_usage(
                    shared
                        .prompt_cache
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .usage(&sent, body.len()),
                ),
            };
            let feed = Feed {
                frames: VecDeque::new(),
                tail: match ending {
                    Ending::CutAfter(_) => Tail::Cut,
                    Ending::StallAfter { pings, .. } => Tail::Stall { pings },
                    _ => Tail::End,
                },
                delay: Duration::from_millis(script.delay_ms),
                started: false,
                hold_at: script.hold_after_events,
                sent: 0,
                hold: shared.hold.clone(),
                cancel: shared.cancel.clone(),
            };
            if streaming {
                stream_response(&reply, ending, feed, &request_id)
            } else {
                message_response(&reply, feed, &request_id)
            }
        }
    }
}

fn parse_body(body: &[u8]) -> (Value, Option<String>) {
    if body.is_empty() {
        return (Value::Null, Some("the body is empty".into()));
    }
    match serde_json::from_slice(body) {
        Ok(v) => (v, None),
        Err(e) => (
            Value::String(String::from_utf8_lossy(body).into_owned()),
            Some(e.to_string()),
        ),
    }
}

fn header_map(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        out.entry(name.as_str().to_ascii_lowercase())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    out
}

fn error_response(error: &ApiError, request_id: &str, retry_after: Option<u64>) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [("request-id", request_id)],
        axum::Json(error.body(request_id)),
    )
        .into_response();
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, secs.into());
    }
    response
}

fn stream_response(
    reply: &Reply<'_>,
    ending: Ending,
    mut feed: Feed,
    request_id: &str,
) -> Response {
    let events = reply.events();
    let frames = |events: &[SseEvent]| -> VecDeque<Bytes> {
        events.iter().map(|e| Bytes::from(e.frame())).collect()
    };
    let head = |after: usize| &events[..after.min(events.len())];
    feed.frames = match ending {
        Ending::Complete => frames(&events),
        Ending::CutAfter(after) | Ending::StallAfter { after, .. } => frames(head(after)),
        Ending::ErrorAfter { after, error } => {
            let mut out = frames(head(after));
            out.push_back(Bytes::from(
                error_event(&error.kind, &error.message).frame(),
            ));
            out
        }
        Ending::InvalidJsonAfter(after) => {
            let mut out = frames(&events);
            let garbage = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"cut \n\n";
            out.insert(after.min(out.len()), Bytes::from(garbage));
            out
        }
        Ending::Without(name) => frames(
            &events
                .into_iter()
                .filter(|e| e.name != name)
                .collect::<Vec<_>>(),
        ),
        Ending::OversizedAfter { after, bytes } => {
            let mut out = frames(head(after));
            out.push_back(Bytes::from_static(b"event: content_block_delta\ndata: "));
            const PIECE: usize = 1 << 16;
            let piece = Bytes::from(vec![b'x'; PIECE]);
            for _ in 0..bytes / PIECE {
                out.push_back(piece.clone());
            }
            out.push_back(Bytes::from(vec![b'x'; bytes % PIECE]));
            out
        }
    };
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE.as_str(),
                "text/event-stream; charset=utf-8",
            ),
            (header::CACHE_CONTROL.as_str(), "no-cache"),
            ("request-id", request_id),
        ],
        Body::from_stream(feed.into_stream()),
    )
        .into_response()
}

/// A non-streaming reply; a cut sends the first half of the JSON and then drops the connection.
fn message_response(reply: &Reply<'_>, mut feed: Feed, request_id: &str) -> Response {
    let json = reply.message().to_string();
    let body = if feed.tail == Tail::Cut {
        let head = crate::text::prefix_bytes(&json, json.len() / 2);
        feed.frames.push_back(Bytes::from(head.to_string()));
        feed.delay = Duration::ZERO;
        Body::from_stream(feed.into_stream())
    } else {
        Body::from(json)
    };
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE.as_str(), "application/json"),
            ("request-id", request_id),
        ],
        body,
    )
        .into_response()
}

/// Long enough for hyper to write out buffered frames before a cut.
const FLUSH_PAUSE: Duration = Duration::from_millis(20);

/// How long a quiet stream waits between pings.
const PING_EVERY: Duration = Duration::from_millis(50);

/// What a body does once its frames are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    End,
    /// End with an I/O error instead of a clean end, which makes hyper abort the connection
    /// without the final chunk: the client sees an incomplete body.
    Cut,
    /// Stay open without content until the client hangs up or the server stops.
    Stall {
        pings: bool,
    },
}

/// The body of a response, written frame by frame.
struct Feed {
    frames: VecDeque<Bytes>,
    tail: Tail,
    delay: Duration,
    started: bool,
    /// Hold the reply once this many frames were sent.
    hold_at: Option<usize>,
    sent: usize,
    hold: Arc<Hold>,
    cancel: CancellationToken,
}

impl Feed {
    fn into_stream(self) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send {
        futures::stream::unfold(self, |mut feed| async move {
            if feed.hold_at == Some(feed.sent) {
                feed.hold_at = None;
                if !feed.wait_for_release().await {
                    return feed.shut_down();
                }
            }
            let Some(frame) = feed.frames.pop_front() else {
                return match feed.tail {
                    Tail::End => None,
                    Tail::Cut => {
                        feed.tail = Tail::End;
                        // hyper drops buffered output when a body fails; pausing first lets it
                        // flush what was "sent", so the client really sees a body cut mid-way.
                        tokio::time::sleep(FLUSH_PAUSE).await;
                        Some((
                            Err(cut_error("mock scenario fault: connection cut mid-stream")),
                            feed,
                        ))
                    }
                    Tail::Stall { pings } => {
                        let quiet = if pings {
                            PING_EVERY
                        } else {
                            Duration::from_secs(3600)
                        };
                        tokio::select! {
                            () = tokio::time::sleep(quiet) => {}
                            () = feed.cancel.cancelled() => return feed.shut_down(),
                        }
                        let ping = SseEvent::ping().frame();
                        Some((Ok(Bytes::from(ping)), feed))
                    }
                };
            };
            if feed.started && !feed.delay.is_zero() {
                tokio::select! {
                    () = tokio::time::sleep(feed.delay) => {}
                    () = feed.cancel.cancelled() => return feed.shut_down(),
                }
            }
            feed.started = true;
            feed.sent += 1;
            Some((Ok(frame), feed))
        })
    }

    /// Ends the body at once because the server is stopping.
    fn shut_down(mut self) -> Option<(Result<Bytes, std::io::Error>, Feed)> {
        self.frames.clear();
        self.tail = Tail::End;
        Some((Err(cut_error("mock server shut down")), self))
    }

    /// Announces the hold and waits for the next release; `false` if the server shut down.
    async fn wait_for_release(&self) -> bool {
        let mut released = self.hold.released.subscribe();
        let before = *released.borrow_and_update();
        self.hold.held.send_modify(|n| *n += 1);
        tokio::select! {
            changed = released.wait_for(|&n| n > before) => changed.is_ok(),
            () = self.cancel.cancelled() => false,
        }
    }
}

fn cut_error(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionAborted, why.to_string())
}
