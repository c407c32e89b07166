//! The reading half: a tolerant parser of stream-json lines, as Claude Code (and ouro) print them.
//!
//! Each line is one JSON object with a `type`. The ones a brain needs become typed events;
//! anything else (new event kinds, system notices such as compaction) becomes
//! [`Line::Other`] so a newer CLI never breaks the reader. Only a line that is not a JSON
//! object with a string `type` is an error, which the caller logs and skips.

use serde::Deserialize;
use serde_json::Value;

use super::wire;
use crate::api::types::{ContentBlock, Delta, StreamEvent, Usage};

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
    /// The CLI asks its driver (`can_use_tool` with `--permission-prompt-tool stdio`).
    ControlRequest(wire::ControlRequest),
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
    let wire = match serde_json::from_str::<wire::Line>(line) {
        Ok(wire) => wire,
        // A kind this reader does not model (or a known kind in a shape it does not know).
        Err(e) => {
            return match wire::kind_of(line) {
                Some(kind) => Ok(Some(Line::Other(kind))),
                None if serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok() => {
                    Err(ParseError::NoType)
                }
                None => Err(ParseError::NotJson(e.to_string())),
            };
        }
    };
    Ok(Some(match wire {
        wire::Line::System(wire::System::Init(init)) => Line::Init(InitEvent {
            session_id: init.envelope.session_id,
            model: init.model,
            cwd: init.cwd,
            tools: init.tools,
        }),
        wire::Line::System(wire::System::ApiRetry(r)) => Line::ApiRetry(ApiRetry {
            attempt: r.attempt,
            max_retries: r.max_retries,
            error_status: r.error_status,
            error: r.error,
        }),
        wire::Line::Assistant(a) => Line::Assistant(AssistantEvent {
            message_id: a.message.id,
            model: a.message.model,
            blocks: a
                .message
                .content
                .into_iter()
                .map(std::sync::Arc::unwrap_or_clone)
                .collect(),
            usage: a.message.usage,
            error: a.error,
        }),
        wire::Line::User(u) => Line::User(UserEvent {
            blocks: u.message.content.into_blocks(),
            synthetic: u.is_synthetic,
        }),
        wire::Line::StreamEvent(e) => stream_event(&e.event),
        wire::Line::Result(r) => Line::Result(ResultEvent {
            subtype: r.subtype,
            is_error: r.is_error,
            text: r.result,
            session_id: Some(r.session_id).filter(|s| !s.is_empty()),
            usage: r.usage.map(|u| u.counts),
            total_cost_usd: r.total_cost_usd,
            api_error_status: r.api_error_status,
            num_turns: r.num_turns,
            duration_ms: r.duration_ms,
        }),
        wire::Line::ControlRequest(request) => Line::ControlRequest(request),
        _ => Line::Other(wire::kind_of(line).unwrap_or_default()),
    }))
}

/// The raw API event inside a `stream_event` wrapper; only text deltas matter to a brain.
fn stream_event(event: &Value) -> Line {
    match StreamEvent::deserialize(event) {
        Ok(StreamEvent::ContentBlockDelta {
            delta: Delta::TextDelta { text },
            ..
        }) => Line::TextDelta(text),
        _ => Line::Other(format!(
            "stream_event/{}",
            event
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
        )),
    }
}
