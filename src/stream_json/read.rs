//! The reading half: a tolerant parser of stream-json lines, as Claude Code (and ouro) print them.
//!
//! Each line is one JSON object with a `type`. The ones a brain needs become typed events;
//! anything else (new event kinds, system notices such as compaction) becomes
//! [`Line::Other`] so a newer CLI never breaks the reader. Only a line that is not a JSON
//! object with a string `type` is an error, which the caller logs and skips.

use serde_json::Value;

use crate::api::types::{ContentBlock, Usage};

#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// `system/init`: emitted at the start of every turn.
    Init(InitEvent),
    /// `system/api_retry`: a request failed and will be retried.
    ApiRetry(ApiRetry),
    /// A complete assistant message, or with Claude Code one content block of it (blocks of
    /// one message share its id).
    Assistant(AssistantEvent),
    /// Tool results, or a message the CLI added itself (such as a compaction summary).
    User(UserEvent),
    /// Text from a `stream_event` wrapper (`--include-partial-messages`).
    TextDelta(String),
    /// `result`: the end of a turn.
    Result(ResultEvent),
    /// Anything else, named by its `type` (and `subtype` if present), e.g. `system/status`.
    Other(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct InitEvent {
    pub session_id: String,
    pub model: String,
    pub cwd: String,
    pub tools: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApiRetry {
    pub attempt: u64,
    pub max_retries: u64,
    pub error_status: Option<u16>,
    pub error: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AssistantEvent {
    pub message_id: String,
    pub model: String,
    pub blocks: Vec<ContentBlock>,
    pub usage: Usage,
    /// Set on messages the CLI made up to report a failure (`"error": "server_error"`).
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UserEvent {
    pub blocks: Vec<ContentBlock>,
    /// The CLI wrote this message itself (compaction summary, continuation prompt).
    pub synthetic: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ResultEvent {
    pub subtype: String,
    pub is_error: bool,
    /// The final answer, or the error message when `is_error`.
    pub text: Option<String>,
    pub session_id: Option<String>,
    /// This turn's usage (summed over its requests); `None` when the line had none.
    pub usage: Option<Usage>,
    /// Cumulative over the life of the process, not per turn.
    pub total_cost_usd: Option<f64>,
    pub api_error_status: Option<u16>,
    pub num_turns: u64,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("a JSON value without a string \"type\" field")]
    NoType,
}

/// Parses one stdout line; `Ok(None)` for a blank line.
pub fn parse_line(line: &str) -> Result<Option<Line>, ParseError> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let v: Value = serde_json::from_str(line).map_err(|e| ParseError::NotJson(e.to_string()))?;
    let kind = v
        .get("type")
        .and_then(Value::as_str)
        .ok_or(ParseError::NoType)?;
    let subtype = str_field(&v, "subtype");
    Ok(Some(match (kind, subtype.as_deref()) {
        ("system", Some("init")) => Line::Init(InitEvent {
            session_id: str_field(&v, "session_id").unwrap_or_default(),
            model: str_field(&v, "model").unwrap_or_default(),
            cwd: str_field(&v, "cwd").unwrap_or_default(),
            tools: v
                .get("tools")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|t| t.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
        }),
        ("system", Some("api_retry")) => Line::ApiRetry(ApiRetry {
            attempt: v.get("attempt").and_then(Value::as_u64).unwrap_or(0),
            max_retries: v.get("max_retries").and_then(Value::as_u64).unwrap_or(0),
            error_status: status_field(&v, "error_status"),
            error: str_field(&v, "error").unwrap_or_default(),
        }),
        ("assistant", _) => {
            let msg = v.get("message").unwrap_or(&Value::Null);
            Line::Assistant(AssistantEvent {
                message_id: str_field(msg, "id").unwrap_or_default(),
                model: str_field(msg, "model").unwrap_or_default(),
                blocks: blocks(msg),
                usage: usage(msg.get("usage")).unwrap_or_default(),
                error: str_field(&v, "error"),
            })
        }
        ("user", _) => Line::User(UserEvent {
            blocks: blocks(v.get("message").unwrap_or(&Value::Null)),
            synthetic: v
                .get("isSynthetic")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }),
        ("stream_event", _) => stream_event(v.get("event").unwrap_or(&Value::Null)),
        ("result", _) => Line::Result(ResultEvent {
            is_error: v.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            text: str_field(&v, "result"),
            session_id: str_field(&v, "session_id"),
            usage: usage(v.get("usage")),
            total_cost_usd: v.get("total_cost_usd").and_then(Value::as_f64),
            api_error_status: status_field(&v, "api_error_status"),
            num_turns: v.get("num_turns").and_then(Value::as_u64).unwrap_or(0),
            duration_ms: v.get("duration_ms").and_then(Value::as_u64).unwrap_or(0),
            subtype: subtype.unwrap_or_default(),
        }),
        (kind, Some(sub)) => Line::Other(format!("{kind}/{sub}")),
        (kind, None) => Line::Other(kind.to_string()),
    }))
}

/// The raw API event inside a `stream_event` wrapper; only text deltas matter to a brain.
fn stream_event(event: &Value) -> Line {
    let kind = str_field(event, "type").unwrap_or_default();
    let delta = event.get("delta").unwrap_or(&Value::Null);
    if kind == "content_block_delta"
        && delta.get("type").and_then(Value::as_str) == Some("text_delta")
        && let Some(text) = str_field(delta, "text")
    {
        return Line::TextDelta(text);
    }
    Line::Other(format!("stream_event/{kind}"))
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(String::from)
}

fn status_field(v: &Value, key: &str) -> Option<u16> {
    v.get(key)
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
}

fn usage(v: Option<&Value>) -> Option<Usage> {
    let v = v.filter(|v| v.is_object())?;
    let n = |key| v.get(key).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
        cache_creation_input_tokens: n("cache_creation_input_tokens"),
        cache_read_input_tokens: n("cache_read_input_tokens"),
    })
}

/// Content blocks of a message; a plain-string content is one text block, and blocks of kinds
/// ouro does not model (images, server tools) are skipped.
fn blocks(msg: &Value) -> Vec<ContentBlock> {
    match msg.get("content") {
        Some(Value::String(text)) => vec![ContentBlock::text(text.clone())],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|b| match serde_json::from_value(b.clone()) {
                Ok(block) => Some(block),
                Err(e) => {
                    tracing::debug!(error = %e, "skipping a content block ouro does not model");
                    None
                }
            })
            .collect(),
        _ => Vec::new(),
    }
}
