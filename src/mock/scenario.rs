//! The script a mock server plays: turns of assistant content, each optionally preceded by faults.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::types::{StopReason, Usage};

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("could not read scenario file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("scenario JSON is invalid: {0}; see the format in the ouro::mock module docs")]
    Json(#[from] serde_json::Error),
    #[error("scenario turn {turn} is invalid: {reason}")]
    Turn { turn: usize, reason: String },
}

/// A whole mock conversation: what the server answers to each successive request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Requests whose estimated input tokens (body bytes / 4) exceed this are rejected with the
    /// real "prompt is too long" error, without consuming a turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_limit_tokens: Option<u64>,
    /// The smallest prefix (tokens) a cache breakpoint caches; 1024 unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_min_tokens: Option<u64>,
    /// Models that answer every request with 529 overloaded (no turn is consumed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overloaded_models: Vec<String>,
    pub turns: Vec<Turn>,
}

/// One assistant response, served to one successful request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    #[serde(default)]
    pub content: Vec<MockBlock>,
    /// Defaults to `tool_use` when the content has a tool_use block, else `end_turn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Defaults to input = request body bytes / 4 and output = content chars / 4 + 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Pause before every SSE event after the first.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Send this many events of the reply, then hold it until [`super::MockServer::release`]
    /// (or the client hangs up), so a test can act at a known point of the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_after_events: Option<usize>,
    /// Consumed one per request aimed at this turn, before the turn itself is served.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    /// A substring the request must contain (raw body or any JSON string in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_text: Option<String>,
    /// Served out of order, to the first request that contains this text (sub-agents run
    /// at once, so their requests come in any order). Such a turn takes no faults, and the
    /// turns in order skip it. Turns with the same text are served in their order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_text: Option<String>,
    /// How many deltas each block's text is split into (default 3); 1 sends a text as one
    /// delta, however long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_chunks: Option<usize>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A content block the mock model produces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum MockBlock {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        /// Defaults to `toolu_mock_<turn:04>_<block index:02>`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<Value>,
        /// Sent verbatim as the partial_json deltas, e.g. JSON cut short by max_tokens.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw_input: Option<String>,
    },
}

/// A failure the server produces instead of (before) serving a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// An HTTP error status with the real error body for that status.
    Http {
        status: u16,
        /// Seconds, sent as the `retry-after` header.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// 400 "prompt is too long: N tokens > LIMIT maximum".
    PromptTooLong,
    /// Send the turn's first `after_events` SSE events, then drop the connection mid-body.
    /// The turn counts as served (the next request gets the next turn) when `served` is set or
    /// when every event was sent before the cut.
    Cut {
        after_events: usize,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        served: bool,
    },
    /// Send `after_events` events, then a `content_block_delta` whose data is not valid JSON,
    /// then the rest of the turn.
    InvalidJson { after_events: usize },
    /// Send the whole turn except every event of this type (`content_block_stop`,
    /// `message_stop`, ...).
    DropEvents { event: String },
    /// Send `after_events` events, then nothing more (or, with `pings`, a `ping` every 50 ms)
    /// until the client hangs up.
    Stall {
        after_events: usize,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pings: bool,
    },
    /// Send `after_events` events, then a `data:` line of `bytes` bytes that never ends.
    OversizedLine { after_events: usize, bytes: usize },
    /// Send the turn's first `after_events` SSE events, then an `error` event, then end.
    SseError {
        after_events: usize,
        #[serde(default = "default_sse_error_type")]
        error_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

fn default_sse_error_type() -> String {
    "overloaded_error".to_string()
}

impl Scenario {
    pub fn new(turns: Vec<Turn>) -> Scenario {
        Scenario {
            context_limit_tokens: None,
            cache_min_tokens: None,
            overloaded_models: Vec::new(),
            turns,
        }
    }

    pub fn from_json(text: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = serde_json::from_str(text)?;
        scenario.check()?;
        Ok(scenario)
    }

    pub fn from_file(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Scenario::from_json(&text)
    }

    /// Rejects what serde accepts but the server could not play faithfully.
    pub fn check(&self) -> Result<(), ScenarioError> {
        for (turn, t) in self.turns.iter().enumerate() {
            let bad = |reason: String| Err(ScenarioError::Turn { turn, reason });
            if t.stop_reason == Some(StopReason::Unknown) {
                return bad("stop_reason must be one of end_turn, max_tokens, stop_sequence, tool_use, pause_turn, refusal".into());
            }
            for (i, block) in t.content.iter().enumerate() {
                if let MockBlock::ToolUse {
                    input: Some(_),
                    raw_input: Some(_),
                    ..
                } = block
                {
                    return bad(format!(
                        "content block {i} sets both input and raw_input; keep only one"
                    ));
                }
            }
            for fault in &t.faults {
                match fault {
                    Fault::Http { status, .. } if !(400..=599).contains(status) => {
                        return bad(format!(
                            "http fault status {status} is not an error status (use 400-599)"
                        ));
                    }
                    Fault::SseError { error_type, .. } if error_type.is_empty() => {
                        return bad("sse_error fault needs a non-empty error_type".into());
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

impl Turn {
    /// A turn that answers with one text block.
    pub fn text(text: impl Into<String>) -> Turn {
        Turn {
            content: vec![MockBlock::Text { text: text.into() }],
            ..Turn::default()
        }
    }

    /// A turn that calls one tool.
    pub fn tool_use(name: impl Into<String>, input: Value) -> Turn {
        Turn {
            content: vec![MockBlock::ToolUse {
                id: None,
                name: name.into(),
                input: Some(input),
                raw_input: None,
            }],
            ..Turn::default()
        }
    }

    pub(crate) fn effective_stop_reason(&self) -> StopReason {
        self.stop_reason.unwrap_or_else(|| {
            if self
                .content
                .iter()
                .any(|b| matches!(b, MockBlock::ToolUse { .. }))
            {
                StopReason::ToolUse
            } else {
                StopReason::EndTurn
            }
        })
    }

    /// The usage reported for this turn when the request body had `body_len` bytes.
    /// The scripted usage, or the input as the cache model bills it and output = content
    /// characters / 4 + 1.
    pub(crate) fn effective_usage(&self, input: Usage) -> Usage {
        self.usage.unwrap_or_else(|| {
            let chars: usize = self.content.iter().map(MockBlock::char_count).sum();
            Usage {
                output_tokens: (chars / 4 + 1) as u64,
                ..input
            }
        })
    }
}

impl MockBlock {
    fn char_count(&self) -> usize {
        match self {
            MockBlock::Text { text } => text.chars().count(),
            MockBlock::Thinking { thinking, .. } => thinking.chars().count(),
            MockBlock::RedactedThinking { data } => data.chars().count(),
            MockBlock::ToolUse { .. } => self.tool_input_json().chars().count(),
        }
    }

    /// The tool input exactly as streamed in `input_json_delta` chunks.
    pub(crate) fn tool_input_json(&self) -> String {
        match self {
            MockBlock::ToolUse {
                raw_input: Some(raw),
                ..
            } => raw.clone(),
            MockBlock::ToolUse {
                input: Some(input), ..
            } => input.to_string(),
            _ => "{}".to_string(),
        }
    }

    /// The tool input as the non-streaming response carries it: the JSON object, or `{}` when a
    /// raw input does not parse (the API never returns half an object there).
    pub(crate) fn tool_input_value(&self) -> Value {
        serde_json::from_str(&self.tool_input_json())
            .unwrap_or_else(|_| Value::Object(Default::default()))
    }
}

/// The id a tool_use block gets: its own, or one derived from its position.
pub(super) fn tool_use_id(block: &MockBlock, turn: usize, index: usize) -> String {
    match block {
        MockBlock::ToolUse { id: Some(id), .. } => id.clone(),
        _ => format!("toolu_mock_{turn:04}_{index:02}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FULL: &str = r#"{
      "context_limit_tokens": 200000,
      "turns": [
        { "content": [ {"type":"text","text":"Hello"},
                       {"type":"thinking","thinking":"hmm","signature":"sig"},
                       {"type":"tool_use","name":"Read","input":{"file_path":"/x"}},
                       {"type":"tool_use","name":"Write","raw_input":"{\"file_pa"} ],
          "stop_reason": "max_tokens",
          "usage": {"input_tokens": 120, "output_tokens": 30},
          "delay_ms": 5,
          "faults": [
            {"kind":"http","status":429,"retry_after":1},
            {"kind":"prompt_too_long"},
            {"kind":"cut","after_events":4},
            {"kind":"sse_error","after_events":3}
          ],
          "expect_text": "hi"
        },
        { "content": [ {"type":"text","text":"done"} ] }
      ]
    }"#;

    #[test]
    fn parses_every_documented_field() {
        let s = Scenario::from_json(FULL).unwrap();
        assert_eq!(s.context_limit_tokens, Some(200_000));
        let t = &s.turns[0];
        assert_eq!(t.content.len(), 4);
        assert_eq!(t.effective_stop_reason(), StopReason::MaxTokens);
        assert_eq!(t.usage.unwrap().input_tokens, 120);
        assert_eq!(t.usage.unwrap().cache_read_input_tokens, 0);
        assert_eq!(t.delay_ms, 5);
        assert_eq!(
            t.faults[0],
            Fault::Http {
                status: 429,
                retry_after: Some(1),
                message: None
            }
        );
        assert_eq!(
            t.faults[3],
            Fault::SseError {
                after_events: 3,
                error_type: "overloaded_error".into(),
                message: None
            }
        );
        assert_eq!(t.content[3].tool_input_json(), "{\"file_pa");
        assert_eq!(t.expect_text.as_deref(), Some("hi"));
        assert_eq!(s.turns[1].effective_stop_reason(), StopReason::EndTurn);
    }

    #[test]
    fn round_trips_through_serde() {
        let s = Scenario::from_json(FULL).unwrap();
        let again = Scenario::from_json(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(s, again);
    }

    #[test]
    fn stop_reason_defaults_to_tool_use_when_a_tool_is_called() {
        let t = Turn::tool_use("Read", json!({"file_path": "/x"}));
        assert_eq!(t.effective_stop_reason(), StopReason::ToolUse);
    }

    #[test]
    fn default_usage_comes_from_body_and_content_sizes() {
        let input = Usage {
            input_tokens: 100,
            ..Usage::default()
        };
        let u = Turn::text("a".repeat(40)).effective_usage(input);
        assert_eq!((u.input_tokens, u.output_tokens), (100, 11));
    }

    #[test]
    fn typos_and_bad_values_are_reported() {
        let err = Scenario::from_json(r#"{"turns":[{"contnet":[]}]}"#).unwrap_err();
        assert!(err.to_string().contains("contnet"), "{err}");
        let err = Scenario::from_json(r#"{"turns":[{"faults":[{"kind":"http","status":200}]}]}"#)
            .unwrap_err();
        assert!(err.to_string().contains("turn 0"), "{err}");
        let err = Scenario::from_json(r#"{"turns":[{"stop_reason":"whatever"}]}"#).unwrap_err();
        assert!(err.to_string().contains("stop_reason"), "{err}");
        let err = Scenario::from_json(
            r#"{"turns":[{},{"content":[{"type":"tool_use","name":"X","input":{},"raw_input":"{"}]}]}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("turn 1"), "{err}");
        let err =
            Scenario::from_json(r#"{"turns":[{"faults":[{"kind":"explode"}]}]}"#).unwrap_err();
        assert!(err.to_string().contains("explode"), "{err}");
    }

    #[test]
    fn tool_ids_default_from_position() {
        let t = Turn::tool_use("Read", json!({}));
        assert_eq!(tool_use_id(&t.content[0], 7, 2), "toolu_mock_0007_02");
        let named = MockBlock::ToolUse {
            id: Some("toolu_x".into()),
            name: "Read".into(),
            input: None,
            raw_input: None,
        };
        assert_eq!(tool_use_id(&named, 7, 2), "toolu_x");
        assert_eq!(named.tool_input_value(), json!({}));
    }

    #[test]
    fn missing_file_names_the_path() {
        let err = Scenario::from_file("/nonexistent/scenario.json").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/scenario.json"));
    }
}
