//! One HTTP request to the Messages API, streamed. Retrying is the caller's business (see
//! `retry`), because whether a broken stream may be re-requested depends on what was shown.

use std::time::Duration;

use std::collections::VecDeque;

use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderValue};

use super::body::{Body, Sent};
use super::sse::{Decoder, Frame, SseError};
use super::types::{StartBlock, StreamEvent};

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";
/// The largest request body the Messages API accepts (32 MB); larger ones get a 413.
pub const MAX_REQUEST_BYTES: u64 = 32 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("the API answered {status} ({kind}): {message}")]
    Status {
        status: u16,
        kind: String,
        message: String,
        retry_after: Option<Duration>,
    },
    #[error(
        "could not reach the API at {url}: {reason}. Check ANTHROPIC_BASE_URL and your network."
    )]
    Connect { url: String, reason: String },
    #[error("the response stream broke: {0}")]
    Stream(String),
    /// Only pings (or nothing) arrived for longer than the idle limit.
    #[error(
        "the response stream stalled: no content for {:.1} s (OURO_STREAM_IDLE_TIMEOUT_MS sets the limit)",
        .0.as_secs_f64()
    )]
    Stalled(Duration),
    /// One event exceeded the size cap: sending the request again would fetch it again.
    #[error("the response stream was refused: {0}")]
    EventTooLarge(String),
    /// The stream broke the Messages API's event grammar: unreadable JSON, an oversized
    /// event, a block that never ended.
    #[error("the response stream was malformed: {0}")]
    Malformed(String),
    #[error("the API reported an error mid-stream ({kind}): {message}")]
    Server { kind: String, message: String },
    /// A 200 whose body is not an event stream: a proxy, a captive portal or a wrong URL.
    #[error(
        "the API at {url} answered 200 with {content_type} instead of an event stream; it began: {first_line:?}. Check that ANTHROPIC_BASE_URL points at a Messages API (a proxy or a login page may be answering)."
    )]
    NotEventStream {
        url: String,
        content_type: String,
        first_line: String,
    },
    /// A body sent as an event stream that held no event at all (an HTML page labelled
    /// `text/event-stream`).
    #[error(
        "the API answered 200 with an event stream that holds no event; it began: {first_line:?}. Check that ANTHROPIC_BASE_URL points at a Messages API (a proxy or a login page may be answering)."
    )]
    NoEvents { first_line: String },
}

impl ApiError {
    /// Whether the same request may simply be sent again.
    pub fn is_retryable(&self) -> bool {
        match self {
            ApiError::Status { status, .. } => {
                matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529)
            }
            ApiError::Connect { .. }
            | ApiError::Stream(_)
            | ApiError::Stalled(_)
            | ApiError::Malformed(_) => true,
            ApiError::EventTooLarge(_)
            | ApiError::NotEventStream { .. }
            | ApiError::NoEvents { .. } => false,
            ApiError::Server { kind, .. } => kind == "overloaded_error" || kind == "api_error",
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Status { status, .. } => Some(*status),
            ApiError::Server { kind, .. } if kind == "overloaded_error" => Some(529),
            _ => None,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The request does not fit: the prompt is too long for the model (400) or the body too
    /// large for the API (413). Compacting the conversation may make it fit.
    pub fn is_too_large(&self) -> bool {
        match self {
            ApiError::Status { status: 413, .. } => true,
            ApiError::Status {
                status: 400,
                kind,
                message,
                ..
            } => {
                let message = message.to_ascii_lowercase();
                kind == "request_too_large"
                    || message.contains("prompt is too long")
                    || message.contains("request too large")
                    || message.contains("request_too_large")
            }
            _ => false,
        }
    }

    /// A short label for `api_retry` events, in Claude Code's words for the errors it names.
    pub fn label(&self) -> String {
        match self {
            ApiError::Status { kind, .. } | ApiError::Server { kind, .. } => {
                retry_label(self.status(), kind)
            }
            ApiError::Connect { .. } => "connection_error".into(),
            ApiError::Stream(_) => "stream_error".into(),
            ApiError::Stalled(_) => "stream_stalled".into(),
            ApiError::Malformed(_) => "malformed_stream".into(),
            ApiError::EventTooLarge(_) => "event_too_large".into(),
            ApiError::NotEventStream { .. } | ApiError::NoEvents { .. } => {
                "not_an_event_stream".into()
            }
        }
    }
}

/// An API error's label as Claude Code words it in `api_retry` events, else the API's type.
fn retry_label(status: Option<u16>, kind: &str) -> String {
    match (status, kind) {
        (Some(429), _) | (_, "rate_limit_error") => "rate_limit".into(),
        (Some(529), _) | (_, "overloaded_error") => "overloaded".into(),
        (_, "invalid_request_error") => "invalid_request".into(),
        (_, "authentication_error") => "authentication_failed".into(),
        (Some(500..=599), _) | (_, "api_error") => "server_error".into(),
        _ => kind.to_string(),
    }
}

/// How long tool input may go without content (pings only): the API streams a tool's input a
/// whole value at a time, and a long value (a big file for Write) takes minutes to generate.
const TOOL_INPUT_PATIENCE: Duration = Duration::from_secs(600);

/// Bounds on one response stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// The largest single event accepted (`OURO_STREAM_MAX_EVENT_BYTES`).
    pub max_event_bytes: usize,
    /// How long the stream may go without content before it counts as stalled; pings keep the
    /// connection open but do not count (`OURO_STREAM_IDLE_TIMEOUT_MS`).
    pub idle_timeout: Duration,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_event_bytes: 64 << 20,
            idle_timeout: Duration::from_secs(120),
        }
    }
}

impl StreamLimits {
    /// The defaults, with the environment's overrides.
    pub fn from_env() -> Self {
        let number = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|&n| n > 0)
        };
        let default = StreamLimits::default();
        StreamLimits {
            max_event_bytes: number("OURO_STREAM_MAX_EVENT_BYTES")
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(default.max_event_bytes),
            idle_timeout: number("OURO_STREAM_IDLE_TIMEOUT_MS")
                .map(Duration::from_millis)
                .unwrap_or(default.idle_timeout),
        }
    }
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base_url: String,
    api_key: String,
    limits: StreamLimits,
    /// Sent with every request: a Bearer token and custom headers, when configured.
    extra_headers: HeaderMap,
    /// The Bearer token, kept out of error texts like the key.
    auth_token: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.base_url)
            .field("api_key", &"[redacted]")
            .finish()
    }
}

impl Client {
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> Result<Self, ApiError> {
        let base_url = base_url.into().trim_end_matches('/').to_string();
        install_crypto();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .read_timeout(Duration::from_secs(300));
        if !needs_certificates(&base_url) {
            builder = builder.tls_certs_only(std::iter::empty());
        }
        let http = builder.build().map_err(|e| ApiError::Connect {
            url: base_url.clone(),
            reason: e.to_string(),
        })?;
        Ok(Client {
            http,
            base_url,
            api_key: api_key.into(),
            limits: StreamLimits::from_env(),
            extra_headers: HeaderMap::new(),
            auth_token: String::new(),
        })
    }

    /// Adds `Authorization: Bearer <token>` and custom headers to every request.
    pub fn with_auth(
        mut self,
        token: Option<String>,
        headers: &[(String, String)],
    ) -> Result<Self, ApiError> {
        let bad = |what: &str| ApiError::Status {
            status: 0,
            kind: "invalid_header".into(),
            message: format!("{what} cannot be sent as an HTTP header"),
            retry_after: None,
        };
        if let Some(token) = token {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| bad("ANTHROPIC_AUTH_TOKEN"))?;
            value.set_sensitive(true);
            self.auth_token = token;
            self.extra_headers
                .insert(reqwest::header::AUTHORIZATION, value);
        }
        for (name, value) in headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| bad(&format!("the header name {name:?}")))?;
            let value =
                HeaderValue::from_str(value).map_err(|_| bad(&format!("the value of {name}")))?;
            self.extra_headers.append(name, value);
        }
        Ok(self)
    }

    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The input tokens of `text` sent to `model` as one user message, counted by the API's
    /// token-counting endpoint.
    pub async fn count_tokens(&self, model: &str, text: &str) -> Result<u64, ApiError> {
        let url = format!("{}/v1/messages/count_tokens", self.base_url);
        let body = serde_json::json!({
            "model": model,
            "messages": [{"role": "user", "content": text}],
        });
        let sent = self
            .http
            .post(&url)
            .headers(self.request_headers()?)
            .json(&body)
            .send();
        let response = tokio::time::timeout(Duration::from_secs(30), sent)
            .await
            .map_err(|_| ApiError::Stalled(Duration::from_secs(30)))?
            .map_err(|e| ApiError::Connect {
                url: url.clone(),
                reason: e.to_string(),
            })?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(|e| ApiError::Connect {
            url: url.clone(),
            reason: e.to_string(),
        })?;
        if !(200..300).contains(&status) {
            return Err(ApiError::Status {
                status,
                kind: "count_tokens".into(),
                message: crate::text::truncate(&text, 300),
                retry_after: None,
            });
        }
        serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("input_tokens")?.as_u64())
            .ok_or_else(|| ApiError::Status {
                status,
                kind: "count_tokens".into(),
                message: format!("no input_tokens in {}", crate::text::truncate(&text, 200)),
                retry_after: None,
            })
    }

    /// The key, version and configured headers every request carries.
    fn request_headers(&self) -> Result<HeaderMap, ApiError> {
        let mut headers = self.extra_headers.clone();
        if !self.api_key.is_empty() {
            let mut key = HeaderValue::from_str(&self.api_key).map_err(|_| ApiError::Status {
                status: 0,
                kind: "invalid_api_key".into(),
                message: "the API key contains characters that cannot be sent in a header".into(),
                retry_after: None,
            })?;
            key.set_sensitive(true);
            headers.insert("x-api-key", key);
        }
        headers.insert(
            "anthropic-version",
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        Ok(headers)
    }

    /// Send one streaming request. Errors before the first byte (HTTP status, connection) come
    /// back here; errors after it come through the stream.
    /// `betas` go in the `anthropic-beta` header; `sent`, if given, is let go of once the body
    /// is on its way (or the attempt ends without sending it).
    pub async fn stream(
        &self,
        body: &Body,
        betas: &[String],
        sent: Option<Sent>,
    ) -> Result<impl Stream<Item = Result<StreamEvent, ApiError>> + Send + use<>, ApiError> {
        let url = format!("{}/v1/messages", self.base_url);
        let mut headers = self.request_headers()?;
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        if !betas.is_empty()
            && let Ok(value) = HeaderValue::from_str(&betas.join(","))
        {
            headers.insert("anthropic-beta", value);
        }
        let sent = self
            .http
            .post(&url)
            .headers(headers)
            .header(reqwest::header::CONTENT_LENGTH, body.len())
            .body(body.to_http(sent))
            .send();
        // A server that takes the request but never answers stalls like a silent stream; the
        // wait includes the upload, so a large body gets time for a slow uplink (100 kB/s).
        let upload = Duration::from_millis(body.len() as u64 / 100);
        let response = tokio::time::timeout(self.limits.idle_timeout + upload, sent)
            .await
            .map_err(|_| ApiError::Stalled(self.limits.idle_timeout))?
            .map_err(|e| ApiError::Connect {
                url: self.base_url.clone(),
                reason: self.redact(&error_chain(&e)),
            })?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let body = response.text().await.unwrap_or_default();
            let (kind, message) = parse_error_body(&body);
            return Err(ApiError::Status {
                status: status.as_u16(),
                kind,
                message: self.redact(&message),
                retry_after,
            });
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if let Some(content_type) = content_type.filter(|t| !is_event_stream(t)) {
            return Err(ApiError::NotEventStream {
                url: self.base_url.clone(),
                content_type,
                first_line: self.redact(&first_line(response).await),
            });
        }
        Ok(events(
            response.bytes_stream(),
            self.limits,
            self.api_key.clone(),
        ))
    }

    fn redact(&self, text: &str) -> String {
        redact(&redact(text, &self.api_key), &self.auth_token)
    }
}

/// Whether a client for `base_url` loads the system's certificate store: only HTTPS does.
/// Plain HTTP (a local gateway, the mock) would spend milliseconds before the first request
/// on it for nothing.
pub fn needs_certificates(base_url: &str) -> bool {
    !base_url.starts_with("http://")
}

/// Installs ring as rustls's crypto provider before any HTTP client is built (reqwest panics
/// without one). Idempotent.
pub fn install_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn is_event_stream(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// The first non-blank line of a body, read no further than 64 KB and cut to 200 characters.
async fn first_line(response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while body.len() < 64 * 1024 {
        match tokio::time::timeout(Duration::from_secs(5), chunks.next()).await {
            Ok(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&body);
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    crate::text::truncate(line, 200)
}

/// The response body as Messages API events. Framing errors, unreadable events and a stream
/// without content for longer than the idle limit end it with an error: nothing is dropped.
/// How much of a stream's start is kept to say what came when no event did.
const HEAD_BYTES: usize = 200;

pub fn events<B, C, E>(
    bytes: B,
    limits: StreamLimits,
    key: String,
) -> impl Stream<Item = Result<StreamEvent, ApiError>> + Send + use<B, C, E>
where
    B: Stream<Item = Result<C, E>> + Send + Unpin,
    C: AsRef<[u8]>,
    E: std::fmt::Display,
{
    use tokio::time::Instant;
    struct State<B> {
        bytes: B,
        decoder: Decoder,
        frames: VecDeque<Frame>,
        /// When the stream counts as stalled for want of content (pings do not count).
        content_deadline: Instant,
        /// When it counts as stalled for want of any byte at all.
        silence_deadline: Instant,
        /// A tool_use block is open: the API streams tool input a whole value at a time, so
        /// only pings may come for minutes while a long value is written.
        in_tool_input: bool,
        content_patience: Duration,
        limits: StreamLimits,
        key: String,
        ended: bool,
        /// Whether any event arrived, and the first bytes, to say what came instead.
        any_event: bool,
        head: Vec<u8>,
    }
    let now = Instant::now();
    let state = State {
        bytes,
        decoder: Decoder::new(limits.max_event_bytes),
        frames: VecDeque::new(),
        content_deadline: now + limits.idle_timeout,
        silence_deadline: now + limits.idle_timeout,
        in_tool_input: false,
        content_patience: limits.idle_timeout,
        limits,
        key,
        ended: false,
        any_event: false,
        head: Vec::new(),
    };
    futures::stream::unfold(state, |mut s| async move {
        loop {
            if s.ended {
                return None;
            }
            if let Some(frame) = s.frames.pop_front() {
                s.any_event = true;
                // What arrived when, for `OURO_LOG=ouro::api=trace`; tests wait on it.
                tracing::trace!(event = %frame.event, "stream event received");
                let item = match serde_json::from_str::<StreamEvent>(&frame.data) {
                    Ok(StreamEvent::Ping) => continue,
                    Ok(StreamEvent::Error { error }) => Err(ApiError::Server {
                        kind: error.kind,
                        message: error.message,
                    }),
                    Ok(event) => {
                        match &event {
                            StreamEvent::ContentBlockStart {
                                content_block: StartBlock::ToolUse { .. },
                                ..
                            } => s.in_tool_input = true,
                            StreamEvent::ContentBlockStop { .. } => s.in_tool_input = false,
                            _ => {}
                        }
                        s.content_patience = if s.in_tool_input {
                            s.limits.idle_timeout.max(TOOL_INPUT_PATIENCE)
                        } else {
                            s.limits.idle_timeout
                        };
                        s.content_deadline = Instant::now() + s.content_patience;
                        Ok(event)
                    }
                    Err(e) => Err(ApiError::Malformed(format!(
                        "a `{}` event is not valid JSON for its type ({e})",
                        frame.event
                    ))),
                };
                s.ended = item.is_err();
                return Some((item, s));
            }
            let (deadline, waited) = if s.content_deadline <= s.silence_deadline {
                (s.content_deadline, s.content_patience)
            } else {
                (s.silence_deadline, s.limits.idle_timeout)
            };
            let next = tokio::time::timeout_at(deadline, s.bytes.next()).await;
            let error = match next {
                Err(_) => ApiError::Stalled(waited),
                Ok(None) if s.any_event || s.head.iter().all(u8::is_ascii_whitespace) => {
                    return None;
                }
                Ok(None) => {
                    let text = String::from_utf8_lossy(&s.head);
                    let first_line = text
                        .lines()
                        .map(str::trim)
                        .find(|l| !l.is_empty())
                        .unwrap_or_default();
                    ApiError::NoEvents {
                        first_line: redact(first_line, &s.key),
                    }
                }
                Ok(Some(Err(e))) => ApiError::Stream(redact(&e.to_string(), &s.key)),
                Ok(Some(Ok(chunk))) => {
                    s.silence_deadline = Instant::now() + s.limits.idle_timeout;
                    if s.head.len() < HEAD_BYTES {
                        let room = HEAD_BYTES - s.head.len();
                        let bytes = chunk.as_ref();
                        s.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
                    }
                    match s.decoder.feed(chunk.as_ref(), &mut s.frames) {
                        Ok(()) => continue,
                        Err(e @ SseError::TooLarge { .. }) => {
                            ApiError::EventTooLarge(e.to_string())
                        }
                        Err(e) => ApiError::Malformed(e.to_string()),
                    }
                }
            };
            s.ended = true;
            return Some((Err(error), s));
        }
    })
}

fn redact(text: &str, key: &str) -> String {
    if key.len() >= 8 && text.contains(key) {
        text.replace(key, "[redacted]")
    } else {
        text.to_string()
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        return Some(seconds(ms / 1000.0));
    }
    headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(seconds)
}

/// A header's number of seconds as a wait; one too large to represent is "forever" (so the
/// retry policy refuses it), never a panic.
fn seconds(value: f64) -> Duration {
    Duration::try_from_secs_f64(value.max(0.0)).unwrap_or(Duration::MAX)
}

fn parse_error_body(body: &str) -> (String, String) {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let kind = error
        .and_then(|e| e.get("type"))
        .and_then(|t| t.as_str())
        .unwrap_or("http_error")
        .to_string();
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| crate::text::prefix_chars(body, 300).0.to_string());
    (kind, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_too_long_is_recognised() {
        let e = ApiError::Status {
            status: 400,
            kind: "invalid_request_error".into(),
            message: "prompt is too long: 250000 tokens > 200000 maximum".into(),
            retry_after: None,
        };
        assert!(e.is_too_large());
        assert!(!e.is_retryable());
    }

    #[test]
    fn retryable_classes() {
        for status in [429, 500, 502, 503, 504, 529] {
            let e = ApiError::Status {
                status,
                kind: String::new(),
                message: String::new(),
                retry_after: None,
            };
            assert!(e.is_retryable(), "{status}");
        }
        for status in [400, 401, 403, 404, 413] {
            let e = ApiError::Status {
                status,
                kind: String::new(),
                message: String::new(),
                retry_after: None,
            };
            assert!(!e.is_retryable(), "{status}");
        }
    }

    #[test]
    fn error_bodies_and_retry_after_parse() {
        let (kind, message) = parse_error_body(
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
        );
        assert_eq!(
            (kind.as_str(), message.as_str()),
            ("rate_limit_error", "slow down")
        );
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        for huge in ["1e20", "inf", "-3"] {
            h.insert("retry-after", HeaderValue::from_static(huge));
            let wait = retry_after(&h).unwrap();
            assert!(wait == Duration::MAX || wait.is_zero(), "{huge}: {wait:?}");
        }
    }

    #[test]
    fn the_key_is_redacted_from_error_text() {
        assert_eq!(
            redact("bad key sk-ant-12345678 here", "sk-ant-12345678"),
            "bad key [redacted] here"
        );
        let c = Client::new("http://x", "sk-ant-12345678").unwrap();
        assert!(!format!("{c:?}").contains("12345678"));
        let c = c
            .with_auth(Some("gateway-secret-token".into()), &[])
            .unwrap();
        assert_eq!(
            c.redact("echoed sk-ant-12345678 and gateway-secret-token"),
            "echoed [redacted] and [redacted]"
        );
    }
}
