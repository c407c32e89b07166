//! Renders a scenario turn the way the Messages API does: as SSE events or one message object.

use serde_json::{Value, json};

use super::scenario::{MockBlock, Turn, tool_use_id};
use crate::api::types::Usage;

/// How many delta chunks a text, thinking or tool-input block is split into (tool input also
/// gets a leading empty chunk, as the real API sends).
const CHUNKS: usize = 3;

/// One server-sent event: `event: <name>` plus its JSON `data:` line.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SseEvent {
    pub name: &'static str,
    pub data: Value,
}

impl SseEvent {
    fn new(data: Value) -> SseEvent {
        let name = match data.get("type").and_then(Value::as_str) {
            Some("message_start") => "message_start",
            Some("content_block_start") => "content_block_start",
            Some("content_block_delta") => "content_block_delta",
            Some("content_block_stop") => "content_block_stop",
            Some("message_delta") => "message_delta",
            Some("message_stop") => "message_stop",
            Some("ping") => "ping",
            _ => "error",
        };
        SseEvent { name, data }
    }

    pub(super) fn ping() -> SseEvent {
        SseEvent::new(json!({"type": "ping"}))
    }

    /// The wire frame, terminated by the blank line that ends an event.
    pub(super) fn frame(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.name, self.data)
    }
}

/// What one served turn looks like on the wire, apart from its content.
pub(super) struct Reply<'a> {
    pub turn: &'a Turn,
    pub index: usize,
    pub model: &'a str,
    pub usage: Usage,
}

impl Reply<'_> {
    pub(super) fn message_id(&self) -> String {
        format!("msg_mock_{:04}", self.index)
    }

    fn usage_json(&self, output_tokens: u64) -> Value {
        json!({
            "input_tokens": self.usage.input_tokens,
            "cache_creation_input_tokens": self.usage.cache_creation_input_tokens,
            "cache_read_input_tokens": self.usage.cache_read_input_tokens,
            "output_tokens": output_tokens,
        })
    }

    /// The complete event sequence of a streamed response.
    pub(super) fn events(&self) -> Vec<SseEvent> {
        let mut out = vec![json!({
            "type": "message_start",
            "message": {
                "id": self.message_id(),
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": self.usage_json(1),
            }
        })];
        if self.turn.content.is_empty() {
            out.push(json!({"type": "ping"}));
        }
        for (index, block) in self.turn.content.iter().enumerate() {
            let start = match block {
                MockBlock::Text { .. } => json!({"type": "text", "text": ""}),
                MockBlock::Thinking { .. } => {
                    json!({"type": "thinking", "thinking": "", "signature": ""})
                }
                MockBlock::RedactedThinking { data } => {
                    json!({"type": "redacted_thinking", "data": data})
                }
                MockBlock::ToolUse { name, .. } => json!({
                    "type": "tool_use",
                    "id": tool_use_id(block, self.index, index),
                    "name": name,
                    "input": {},
                }),
            };
            out.push(
                json!({"type": "content_block_start", "index": index, "content_block": start}),
            );
            if index == 0 {
                out.push(json!({"type": "ping"}));
            }
            for delta in deltas(block, self.turn.delta_chunks.unwrap_or(CHUNKS).max(1)) {
                out.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
            }
            out.push(json!({"type": "content_block_stop", "index": index}));
        }
        out.push(json!({
            "type": "message_delta",
            "delta": {"stop_reason": self.turn.effective_stop_reason().as_str(), "stop_sequence": null},
            "usage": {"output_tokens": self.usage.output_tokens},
        }));
        out.push(json!({"type": "message_stop"}));
        out.into_iter().map(SseEvent::new).collect()
    }

    /// The response body of a non-streaming request.
    pub(super) fn message(&self) -> Value {
        let content: Vec<Value> = self
            .turn
            .content
            .iter()
            .enumerate()
            .map(|(index, block)| match block {
                MockBlock::Text { text } => json!({"type": "text", "text": text}),
                MockBlock::Thinking {
                    thinking,
                    signature,
                } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
                MockBlock::RedactedThinking { data } => {
                    json!({"type": "redacted_thinking", "data": data})
                }
                MockBlock::ToolUse { name, .. } => json!({
                    "type": "tool_use",
                    "id": tool_use_id(block, self.index, index),
                    "name": name,
                    "input": block.tool_input_value(),
                }),
            })
            .collect();
        json!({
            "id": self.message_id(),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": self.turn.effective_stop_reason().as_str(),
            "stop_sequence": null,
            "usage": self.usage_json(self.usage.output_tokens),
        })
    }
}

/// How many events a streamed reply of `turn` has.
pub(super) fn event_count(turn: &Turn) -> usize {
    Reply {
        turn,
        index: 0,
        model: "",
        usage: Usage::default(),
    }
    .events()
    .len()
}

/// The `error` event a stream ends with when the API fails mid-response.
pub(super) fn error_event(error_type: &str, message: &str) -> SseEvent {
    SseEvent::new(json!({"type": "error", "error": {"type": error_type, "message": message}}))
}

fn deltas(block: &MockBlock, chunks: usize) -> Vec<Value> {
    let split = |s| split(s, chunks);
    match block {
        MockBlock::Text { text } => split(text)
            .into_iter()
            .map(|t| json!({"type": "text_delta", "text": t}))
            .collect(),
        MockBlock::Thinking {
            thinking,
            signature,
        } => split(thinking)
            .into_iter()
            .map(|t| json!({"type": "thinking_delta", "thinking": t}))
            .chain(std::iter::once(
                json!({"type": "signature_delta", "signature": signature}),
            ))
            .collect(),
        MockBlock::RedactedThinking { .. } => Vec::new(),
        MockBlock::ToolUse { .. } => {
            let input = block.tool_input_json();
            std::iter::once("")
                .chain(split(&input))
                .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                .collect()
        }
    }
}

/// Splits `s` into at most `chunks` non-empty pieces on character boundaries.
fn split(s: &str, chunks: usize) -> Vec<&str> {
    let chars = s.chars().count();
    let per = chars.div_ceil(chunks).max(1);
    let mut pieces = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let cut = rest
            .char_indices()
            .nth(per)
            .map_or(rest.len(), |(byte, _)| byte);
        let (piece, tail) = rest.split_at(cut);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::types::StreamEvent;

    fn reply(turn: &Turn) -> Reply<'_> {
        Reply {
            turn,
            index: 3,
            model: "claude-test",
            usage: Usage {
                input_tokens: 10,
                output_tokens: 7,
                cache_read_input_tokens: 2,
                cache_creation_input_tokens: 1,
            },
        }
    }

    #[test]
    fn text_turn_has_the_exact_event_sequence_and_shapes() {
        let turn = Turn::text("Hello there");
        let events = reply(&turn).events();
        let names: Vec<_> = events.iter().map(|e| e.name).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(
            events[0].data,
            json!({"type":"message_start","message":{"id":"msg_mock_0003","type":"message",
                "role":"assistant","model":"claude-test","content":[],"stop_reason":null,
                "stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":1,
                "cache_read_input_tokens":2,"output_tokens":1}}})
        );
        assert_eq!(
            events[1].data,
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})
        );
        assert_eq!(events[2].data, json!({"type":"ping"}));
        let text: String = events[3..6]
            .iter()
            .map(|e| e.data["delta"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(text, "Hello there");
        assert_eq!(
            events[3].data,
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hell"}})
        );
        assert_eq!(
            events[6].data,
            json!({"type":"content_block_stop","index":0})
        );
        assert_eq!(
            events[7].data,
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},
                "usage":{"output_tokens":7}})
        );
        assert_eq!(events[8].data, json!({"type":"message_stop"}));
    }

    #[test]
    fn every_event_parses_as_the_wire_type() {
        let turn: Turn = serde_json::from_value(json!({"content": [
            {"type":"thinking","thinking":"let me see","signature":"sig"},
            {"type":"text","text":"ok"},
            {"type":"tool_use","name":"Read","input":{"file_path":"/x"}}
        ]}))
        .unwrap();
        for event in reply(&turn).events() {
            let parsed: StreamEvent = serde_json::from_value(event.data.clone()).unwrap();
            assert_ne!(parsed, StreamEvent::Unknown, "{}", event.data);
        }
    }

    #[test]
    fn tool_input_is_split_into_partial_json_starting_empty() {
        let input = json!({"file_path": "/tmp/some/long/path.rs", "limit": 20});
        let turn = Turn::tool_use("Read", input.clone());
        let events = reply(&turn).events();
        assert_eq!(
            events[1].data,
            json!({"type":"content_block_start","index":0,"content_block":
                {"type":"tool_use","id":"toolu_mock_0003_00","name":"Read","input":{}}})
        );
        let parts: Vec<&str> = events
            .iter()
            .filter(|e| e.data["delta"]["type"] == "input_json_delta")
            .map(|e| e.data["delta"]["partial_json"].as_str().unwrap())
            .collect();
        assert_eq!(parts[0], "");
        assert!(parts.len() >= 3, "{parts:?}");
        let joined: String = parts.concat();
        assert_eq!(serde_json::from_str::<Value>(&joined).unwrap(), input);
        assert_eq!(
            events[events.len() - 2].data["delta"]["stop_reason"],
            "tool_use"
        );
    }

    #[test]
    fn raw_input_is_sent_verbatim() {
        let turn: Turn = serde_json::from_value(json!({"content": [
            {"type":"tool_use","name":"Write","raw_input":"{\"file_pa"}], "stop_reason":"max_tokens"}))
        .unwrap();
        let r = reply(&turn);
        let joined: String = r
            .events()
            .iter()
            .filter_map(|e| e.data["delta"]["partial_json"].as_str().map(str::to_string))
            .collect();
        assert_eq!(joined, "{\"file_pa");
        assert_eq!(r.message()["content"][0]["input"], json!({}));
        assert_eq!(r.message()["stop_reason"], "max_tokens");
    }

    #[test]
    fn thinking_streams_thinking_then_signature() {
        let turn: Turn = serde_json::from_value(json!({"content": [
            {"type":"thinking","thinking":"hmm","signature":"sig"}]}))
        .unwrap();
        let events = reply(&turn).events();
        assert_eq!(
            events[1].data["content_block"],
            json!({"type":"thinking","thinking":"","signature":""})
        );
        let deltas: Vec<&Value> = events
            .iter()
            .filter(|e| e.name == "content_block_delta")
            .map(|e| &e.data["delta"])
            .collect();
        assert_eq!(
            deltas.last().unwrap(),
            &&json!({"type":"signature_delta","signature":"sig"})
        );
        let thinking: String = deltas[..deltas.len() - 1]
            .iter()
            .map(|d| {
                assert_eq!(d["type"], "thinking_delta");
                d["thinking"].as_str().unwrap()
            })
            .collect();
        assert_eq!(thinking, "hmm");
    }

    #[test]
    fn non_streaming_message_has_the_full_shape() {
        let turn = Turn::tool_use("Read", json!({"file_path": "/x"}));
        assert_eq!(
            reply(&turn).message(),
            json!({"id":"msg_mock_0003","type":"message","role":"assistant","model":"claude-test",
                "content":[{"type":"tool_use","id":"toolu_mock_0003_00","name":"Read",
                    "input":{"file_path":"/x"}}],
                "stop_reason":"tool_use","stop_sequence":null,
                "usage":{"input_tokens":10,"cache_creation_input_tokens":1,
                    "cache_read_input_tokens":2,"output_tokens":7}})
        );
    }

    #[test]
    fn frames_and_error_events_are_well_formed() {
        let e = error_event("overloaded_error", "Overloaded");
        let frame = e.frame();
        let data = frame
            .strip_prefix("event: error\ndata: ")
            .and_then(|f| f.strip_suffix("\n\n"))
            .unwrap();
        assert!(!data.contains('\n'));
        assert_eq!(
            serde_json::from_str::<Value>(data).unwrap(),
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})
        );
    }

    #[test]
    fn split_respects_char_boundaries() {
        assert_eq!(split("héllo wörld", 3), ["héll", "o wö", "rld"]);
        assert_eq!(split("ab", 3), ["a", "b"]);
        assert!(split("", 3).is_empty());
        assert_eq!(split("one delta", 1), ["one delta"]);
    }
}
