//! Turns the API's stream events into finished content blocks, one at a time, as soon as
//! each block's `content_block_stop` arrives.

use std::collections::BTreeMap;

use serde_json::Value;

use super::client::ApiError;
use super::types::{ApiErrorBody, ContentBlock, Delta, StartBlock, StopReason, StreamEvent, Usage};

/// What the assembler hands on after each stream event.
#[derive(Debug, Clone, PartialEq)]
pub enum Assembled {
    MessageStarted {
        id: String,
        model: String,
    },
    TextDelta(String),
    ThinkingDelta(String),
    /// A block finished: the last of [`Assembler::blocks`] (not a copy: a large text block is
    /// held once). Tool inputs are parsed JSON.
    Block,
    /// A tool_use whose accumulated JSON did not parse: it must not run.
    BadToolInput {
        id: String,
        name: String,
        raw: String,
        error: String,
    },
    /// `message_delta`: the stop reason is known.
    Stopped(Option<StopReason>),
    /// `message_stop`: the message is complete.
    Complete,
    /// An SSE `error` event: the server gave up mid-stream.
    ServerError(ApiErrorBody),
}

enum Partial {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted(String),
    Ignored,
}

/// Accumulates one streamed message.
#[derive(Default)]
pub struct Assembler {
    pending: BTreeMap<usize, Partial>,
    pub message_id: String,
    pub model: String,
    pub usage: Usage,
    pub stop_reason: Option<StopReason>,
    /// Blocks finished so far, in stream order (bad tool inputs appear with `{}` input).
    pub blocks: Vec<ContentBlock>,
    pub complete: bool,
}

impl Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next event. An event that breaks the stream's grammar (a delta or stop for a
    /// block that is not open, a message that ends with a block still open) is an error, so
    /// no block is ever lost without a word.
    pub fn push(&mut self, event: StreamEvent) -> Result<Vec<Assembled>, ApiError> {
        let malformed = |what: String| Err(ApiError::Malformed(what));
        Ok(match event {
            StreamEvent::MessageStart { message } => {
                self.message_id = message.id.clone();
                self.model = message.model.clone();
                self.usage = message.usage;
                vec![Assembled::MessageStarted {
                    id: message.id,
                    model: message.model,
                }]
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let partial = match content_block {
                    StartBlock::Text { text } => Partial::Text(text),
                    StartBlock::ToolUse { id, name, .. } => Partial::Tool {
                        id,
                        name,
                        json: String::new(),
                    },
                    StartBlock::Thinking { thinking } => Partial::Thinking {
                        thinking,
                        signature: String::new(),
                    },
                    StartBlock::RedactedThinking { data } => Partial::Redacted(data),
                    StartBlock::Unknown => Partial::Ignored,
                };
                if self.pending.insert(index, partial).is_some() {
                    return malformed(format!("content block {index} started twice"));
                }
                Vec::new()
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                let Some(partial) = self.pending.get_mut(&index) else {
                    return malformed(format!(
                        "a delta arrived for content block {index}, which is not open"
                    ));
                };
                match (partial, delta) {
                    (Partial::Text(t), Delta::TextDelta { text }) => {
                        t.push_str(&text);
                        vec![Assembled::TextDelta(text)]
                    }
                    (Partial::Tool { json, .. }, Delta::InputJsonDelta { partial_json }) => {
                        json.push_str(&partial_json);
                        Vec::new()
                    }
                    (
                        Partial::Thinking { thinking, .. },
                        Delta::ThinkingDelta { thinking: more },
                    ) => {
                        thinking.push_str(&more);
                        vec![Assembled::ThinkingDelta(more)]
                    }
                    (
                        Partial::Thinking { signature, .. },
                        Delta::SignatureDelta { signature: s },
                    ) => {
                        signature.push_str(&s);
                        Vec::new()
                    }
                    (Partial::Ignored, _) | (_, Delta::Unknown) => Vec::new(),
                    (_, delta) => {
                        return malformed(format!(
                            "content block {index} got a delta of the wrong kind ({})",
                            delta_kind(&delta)
                        ));
                    }
                }
            }
            StreamEvent::ContentBlockStop { index } => match self.pending.remove(&index) {
                Some(partial) => self.finish_block(partial),
                None => {
                    return malformed(format!(
                        "content_block_stop arrived for block {index}, which is not open"
                    ));
                }
            },
            StreamEvent::MessageDelta { delta, usage } => {
                usage.apply_to(&mut self.usage);
                self.stop_reason = delta.stop_reason;
                vec![Assembled::Stopped(delta.stop_reason)]
            }
            StreamEvent::MessageStop => {
                if let Some(index) = self.pending.keys().next() {
                    return malformed(format!(
                        "the message ended while content block {index} was still open (no content_block_stop)"
                    ));
                }
                self.complete = true;
                vec![Assembled::Complete]
            }
            StreamEvent::Error { error } => vec![Assembled::ServerError(error)],
            StreamEvent::Ping | StreamEvent::Unknown => Vec::new(),
        })
    }

    /// End the text blocks still streaming, as they stand, when the stream is abandoned (Ctrl-C):
    /// the user saw that text, so it stays in the conversation. Unfinished thinking (its
    /// signature is missing) and tool calls (their input is incomplete) are dropped.
    pub fn keep_partial_text(&mut self) -> Vec<ContentBlock> {
        let mut kept = Vec::new();
        for (_, partial) in std::mem::take(&mut self.pending) {
            if let Partial::Text(text) = partial
                && !text.is_empty()
            {
                let block = ContentBlock::Text { text };
                self.blocks.push(block.clone());
                kept.push(block);
            }
        }
        kept
    }

    fn finish_block(&mut self, partial: Partial) -> Vec<Assembled> {
        let (block, out) = match partial {
            Partial::Text(text) => (ContentBlock::Text { text }, Assembled::Block),
            Partial::Tool { id, name, json } => match parse_tool_input(&json) {
                Ok(input) => (ContentBlock::ToolUse { id, name, input }, Assembled::Block),
                Err(error) => (
                    ContentBlock::ToolUse {
                        id: id.clone(),
                        name: name.clone(),
                        input: Value::Object(Default::default()),
                    },
                    Assembled::BadToolInput {
                        id,
                        name,
                        raw: json,
                        error,
                    },
                ),
            },
            Partial::Thinking {
                thinking,
                signature,
            } => (
                ContentBlock::Thinking {
                    thinking,
                    signature,
                },
                Assembled::Block,
            ),
            Partial::Redacted(data) => (ContentBlock::RedactedThinking { data }, Assembled::Block),
            Partial::Ignored => return Vec::new(),
        };
        self.blocks.push(block);
        vec![out]
    }
}

fn delta_kind(delta: &Delta) -> &'static str {
    match delta {
        Delta::TextDelta { .. } => "text_delta",
        Delta::InputJsonDelta { .. } => "input_json_delta",
        Delta::ThinkingDelta { .. } => "thinking_delta",
        Delta::SignatureDelta { .. } => "signature_delta",
        Delta::Unknown => "unknown",
    }
}

/// A tool's input: the concatenated partial JSON, parsed once. An empty input means `{}`.
fn parse_tool_input(json: &str) -> Result<Value, String> {
    if json.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(json) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("the input is not a JSON object".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The tool_result text for a tool_use whose input could not be parsed.
pub fn bad_input_message(name: &str, raw: &str, error: &str) -> String {
    const SHOWN: usize = 200;
    let (shown, _) = crate::text::prefix_chars(raw, SHOWN);
    let total = raw.len();
    format!(
        "{name} was not run: its input is not valid JSON ({error}).\n\
         You sent (first {} of {total} bytes): {shown}\n\
         The input may have been truncated (the response hit max_tokens) or badly escaped \
         (backslashes and quotes inside strings must be escaped). Send the call again with \
         complete, valid JSON; split very large content into smaller calls.",
        shown.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(json: &str) -> StreamEvent {
        serde_json::from_str(json).unwrap()
    }

    fn push(a: &mut Assembler, json: &str) -> Vec<Assembled> {
        a.push(ev(json)).unwrap()
    }

    #[test]
    fn events_that_break_the_grammar_are_errors() {
        let start =
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
        let cases: [(&[&str], &str); 5] = [
            (
                &[
                    r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#,
                ],
                "block 3, which is not open",
            ),
            (&[r#"{"type":"content_block_stop","index":0}"#], "not open"),
            (&[start, start], "started twice"),
            (
                &[
                    start,
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
                ],
                "wrong kind (input_json_delta)",
            ),
            (
                &[start, r#"{"type":"message_stop"}"#],
                "block 0 was still open",
            ),
        ];
        for (events, expected) in cases {
            let mut a = Assembler::new();
            let (last, first) = events.split_last().unwrap();
            for e in first {
                push(&mut a, e);
            }
            let error = a.push(ev(last)).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
        let mut a = Assembler::new();
        push(&mut a, start);
        assert!(push(&mut a, r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#).is_empty());
    }

    #[test]
    fn tool_input_is_parsed_once_at_block_stop() {
        let mut a = Assembler::new();
        push(
            &mut a,
            r#"{"type":"message_start","message":{"id":"m1","model":"x","usage":{"input_tokens":5,"output_tokens":1}}}"#,
        );
        push(
            &mut a,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"Read","input":{}}}"#,
        );
        for part in ["", "{\"file_", "path\": \"/a\"", "}"] {
            let out = a
                .push(StreamEvent::ContentBlockDelta {
                    index: 0,
                    delta: Delta::InputJsonDelta {
                        partial_json: part.into(),
                    },
                })
                .unwrap();
            assert!(out.is_empty());
        }
        let out = push(&mut a, r#"{"type":"content_block_stop","index":0}"#);
        assert_eq!(out, vec![Assembled::Block]);
        assert_eq!(
            a.blocks.last(),
            Some(&ContentBlock::ToolUse {
                id: "t1".into(),
                name: "Read".into(),
                input: serde_json::json!({"file_path": "/a"})
            })
        );
        push(
            &mut a,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}"#,
        );
        assert_eq!(a.usage.output_tokens, 30);
        assert_eq!(a.usage.input_tokens, 5);
        assert_eq!(a.stop_reason, Some(StopReason::ToolUse));
    }

    #[test]
    fn cut_json_becomes_bad_tool_input() {
        let mut a = Assembler::new();
        push(
            &mut a,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"Write","input":{}}}"#,
        );
        push(
            &mut a,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\": \"/o\", \"content\": \"par"}}"#,
        );
        let out = push(&mut a, r#"{"type":"content_block_stop","index":1}"#);
        let Assembled::BadToolInput { id, raw, .. } = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(id, "t1");
        assert!(raw.starts_with("{\"file_path\""));
        let msg = bad_input_message("Write", raw, "EOF");
        assert!(
            msg.contains("truncated") && msg.contains("first 35 of 35 bytes"),
            "{msg}"
        );
    }

    #[test]
    fn text_and_thinking_stream_as_deltas() {
        let mut a = Assembler::new();
        push(
            &mut a,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
        );
        let d = push(
            &mut a,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
        );
        assert_eq!(d, vec![Assembled::ThinkingDelta("hm".into())]);
        push(
            &mut a,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}"#,
        );
        push(&mut a, r#"{"type":"content_block_stop","index":0}"#);
        push(
            &mut a,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        );
        push(
            &mut a,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hel"}}"#,
        );
        push(
            &mut a,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"lo"}}"#,
        );
        push(&mut a, r#"{"type":"content_block_stop","index":1}"#);
        assert_eq!(
            a.blocks,
            vec![
                ContentBlock::Thinking {
                    thinking: "hm".into(),
                    signature: "sig".into()
                },
                ContentBlock::text("Hello")
            ]
        );
    }

    #[test]
    fn abandoned_text_is_kept_but_unfinished_tool_calls_are_not() {
        let mut a = Assembler::new();
        push(
            &mut a,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        );
        push(
            &mut a,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"half an ans"}}"#,
        );
        push(
            &mut a,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"Read","input":{}}}"#,
        );
        assert_eq!(
            a.keep_partial_text(),
            vec![ContentBlock::text("half an ans")]
        );
        assert_eq!(a.blocks, vec![ContentBlock::text("half an ans")]);
        assert!(a.keep_partial_text().is_empty());
    }

    #[test]
    fn unknown_blocks_are_skipped() {
        let mut a = Assembler::new();
        push(
            &mut a,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s"}}"#,
        );
        push(
            &mut a,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
        );
        assert!(push(&mut a, r#"{"type":"content_block_stop","index":0}"#).is_empty());
        assert!(a.blocks.is_empty());
    }
}
