//! Messages API wire types: exactly the JSON shapes the API sends and accepts.

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize};

use super::body::Body;
pub use super::media::{ImageSource, ResultContent};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(deserialize_with = "string_or_blocks")]
    pub content: Vec<ContentBlock>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![ContentBlock::text(text)],
        }
    }

    pub fn assistant(content: Vec<ContentBlock>) -> Self {
        Message {
            role: Role::Assistant,
            content,
        }
    }

    /// Concatenated text of all text blocks.
    pub fn text(&self) -> String {
        text_of(&self.content)
    }

    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

/// Concatenated text of the text blocks among `blocks`.
pub fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The API accepts `content` as a plain string too; normalise it to blocks.
fn string_or_blocks<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ContentBlock>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Blocks(Vec<ContentBlock>),
    }
    Ok(match Raw::deserialize(d)? {
        Raw::Text(text) => vec![ContentBlock::Text { text }],
        Raw::Blocks(blocks) => blocks,
    })
}

/// Gateways send `null` for counts they do not know; that is zero, not an unreadable event.
fn zero_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Option::<u64>::deserialize(d).map(Option::unwrap_or_default)
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Image {
        source: ImageSource,
    },
    /// A PDF or text an Agent SDK's user message carries, passed to the API as given.
    Document {
        source: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        citations: Option<Value>,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: ResultContent,
        #[serde(default, skip_serializing_if = "is_false")]
        is_error: bool,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    pub fn tool_result(
        tool_use_id: impl Into<String>,
        content: impl Into<ResultContent>,
        is_error: bool,
    ) -> Self {
        ContentBlock::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default, deserialize_with = "zero_if_null")]
    pub input_tokens: u64,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub output_tokens: u64,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub cache_creation_input_tokens: u64,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub cache_read_input_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
    }

    /// Everything the model had to read for this request.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }
}

/// `message_delta` usage: the fields present are cumulative totals that replace earlier values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaUsage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
}

impl DeltaUsage {
    pub(crate) fn apply_to(&self, usage: &mut Usage) {
        if let Some(v) = self.input_tokens {
            usage.input_tokens = v;
        }
        if let Some(v) = self.output_tokens {
            usage.output_tokens = v;
        }
        if let Some(v) = self.cache_creation_input_tokens {
            usage.cache_creation_input_tokens = v;
        }
        if let Some(v) = self.cache_read_input_tokens {
            usage.cache_read_input_tokens = v;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    StopSequence,
    ToolUse,
    PauseTurn,
    Refusal,
    #[serde(other)]
    Unknown,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::ToolUse => "tool_use",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Refusal => "refusal",
            StopReason::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheControl {
    #[serde(rename = "type")]
    pub kind: String,
}

impl CacheControl {
    pub fn ephemeral() -> Self {
        CacheControl {
            kind: "ephemeral".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemBlock {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

impl SystemBlock {
    pub fn text(text: impl Into<String>) -> Self {
        SystemBlock {
            kind: "text".into(),
            text: text.into(),
            cache_control: None,
        }
    }
}

/// One tool as a request lists it, borrowed from the tool for the time it takes to encode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// The `tools` of a request, encoded once: a session's tools change only when MCP servers
/// come or go, while every request sends them (the descriptions alone are kilobytes).
#[derive(Debug, Clone, Default)]
pub struct EncodedTools {
    names: Vec<String>,
    /// The JSON array; empty when there are no tools (the field is then left out).
    json: Bytes,
}

impl EncodedTools {
    pub fn new(tools: &[ToolDefinition<'_>]) -> EncodedTools {
        EncodedTools {
            names: tools.iter().map(|t| t.name.to_string()).collect(),
            // Strings and JSON values with string keys only: encoding cannot fail.
            json: if tools.is_empty() {
                Bytes::new()
            } else {
                serde_json::to_vec(tools)
                    .map(Bytes::from)
                    .unwrap_or_default()
            },
        }
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The encoded list, `None` when there are no tools.
    pub fn json(&self) -> Option<&Bytes> {
        (!self.json.is_empty()).then_some(&self.json)
    }

    /// The bytes the list adds to a request.
    pub fn len(&self) -> u64 {
        self.json.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// A request, borrowing the conversation it sends: the history can be long, so it is never
/// copied, and its messages may come already encoded (see [`Messages::Encoded`]).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MessagesRequest<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    /// Written last, by [`MessagesRequest::to_body`].
    #[serde(skip)]
    pub messages: Messages<'a>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub system: &'a [SystemBlock],
    /// Written by [`MessagesRequest::to_body`], before `messages`.
    #[serde(skip)]
    pub tools: Option<&'a Bytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_config: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_management: Option<&'a Value>,
    pub stream: bool,
}

/// The conversation of a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Messages<'a> {
    /// Serialised now.
    Breakpointed(Breakpointed<'a>),
    /// The JSON of each message, encoded earlier and reused from request to request.
    Encoded(&'a [bytes::Bytes]),
}

/// Messages, some of whose last cacheable block carries a cache breakpoint. The history
/// itself never holds `cache_control`: breakpoints move as the conversation grows, and are
/// added only to the bytes sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Breakpointed<'a> {
    pub messages: &'a [Message],
    /// Indices of the messages that end a cached prefix.
    pub marks: &'a [usize],
}

impl<'a> Breakpointed<'a> {
    pub fn plain(messages: &'a [Message]) -> Self {
        Breakpointed {
            messages,
            marks: &[],
        }
    }
}

impl<'a> Messages<'a> {
    pub fn plain(messages: &'a [Message]) -> Self {
        Messages::Breakpointed(Breakpointed::plain(messages))
    }
}

/// The JSON of one message, with a cache breakpoint on its last cacheable block if `marked`.
pub fn encode_message(message: &Message, marked: bool, out: &mut Vec<u8>) {
    // Strings, numbers and JSON values with string keys only: serialising cannot fail.
    let written = match marked.then(|| cacheable_block(message)).flatten() {
        Some(at) => serde_json::to_writer(&mut *out, &MarkedMessage { message, at }),
        None => serde_json::to_writer(&mut *out, message),
    };
    debug_assert!(written.is_ok());
}

/// The last block of a message that may carry `cache_control` (thinking blocks may not).
fn cacheable_block(message: &Message) -> Option<usize> {
    message.content.iter().rposition(|b| {
        !matches!(
            b,
            ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }
        )
    })
}

/// A message serialised with a breakpoint on block `at`.
struct MarkedMessage<'a> {
    message: &'a Message,
    at: usize,
}

impl Serialize for MarkedMessage<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap, SerializeSeq};
        struct Blocks<'a>(&'a MarkedMessage<'a>);
        impl Serialize for Blocks<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let blocks = &self.0.message.content;
                let mut seq = serializer.serialize_seq(Some(blocks.len()))?;
                for (i, block) in blocks.iter().enumerate() {
                    if i == self.0.at {
                        let mut value = serde_json::to_value(block).map_err(S::Error::custom)?;
                        if let Some(map) = value.as_object_mut() {
                            map.insert(
                                "cache_control".into(),
                                serde_json::json!({"type": "ephemeral"}),
                            );
                        }
                        seq.serialize_element(&value)?;
                    } else {
                        seq.serialize_element(block)?;
                    }
                }
                seq.end()
            }
        }
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", &self.message.role)?;
        map.serialize_entry("content", &Blocks(self))?;
        map.end()
    }
}

impl MessagesRequest<'_> {
    /// The JSON body, sent as is by every attempt of the call. `messages` comes last, so the
    /// other fields are written first whatever the conversation's length.
    pub fn to_body(&self) -> Body {
        const COMMA: Bytes = Bytes::from_static(b",");
        const END: Bytes = Bytes::from_static(b"]}");
        let mut head = Vec::new();
        // Only strings, numbers and JSON values with string keys: serialising cannot fail.
        let written = serde_json::to_writer(&mut head, self);
        debug_assert!(written.is_ok());
        // `self` always has `model`, so the object is `{...}` with at least one field.
        head.pop();
        let mut body = Body::default();
        if let Some(tools) = self.tools {
            head.extend_from_slice(b",\"tools\":");
            body.push(Bytes::from(std::mem::take(&mut head)));
            body.push(tools.clone());
        }
        head.extend_from_slice(b",\"messages\":[");
        match self.messages {
            Messages::Breakpointed(b) => {
                for (i, message) in b.messages.iter().enumerate() {
                    if i > 0 {
                        head.push(b',');
                    }
                    encode_message(message, b.marks.contains(&i), &mut head);
                }
                body.push(Bytes::from(head));
            }
            Messages::Encoded(pieces) => {
                body.push(Bytes::from(head));
                for (i, piece) in pieces.iter().enumerate() {
                    if i > 0 {
                        body.push(COMMA);
                    }
                    body.push(piece.clone());
                }
            }
        }
        body.push(END);
        body
    }
}

/// The `message` object inside `message_start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageStart {
    pub id: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub usage: Usage,
    /// The rest as the API sent it (`type`, `role`, `content`, ...): a partial message passed
    /// on to an SDK (`--include-partial-messages`) is the API's, whole.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// The block announced by `content_block_start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        /// Always `{}` from the API (the input streams as deltas); passed on as sent.
        #[serde(default = "empty_object")]
        input: Value,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    RedactedThinking {
        data: String,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageDeltaBody {
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    #[serde(default)]
    pub stop_sequence: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiErrorBody {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
}

/// One server-sent event of a streaming response (the JSON in its `data:` line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: usize,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: DeltaUsage,
    },
    MessageStop,
    Ping,
    Error {
        error: ApiErrorBody,
    },
    #[serde(other)]
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The tools, encoded once, go in whole before the messages; without tools there is no
    /// `tools` field at all.
    #[test]
    fn a_body_carries_the_encoded_tools_before_its_messages() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let tools = EncodedTools::new(&[ToolDefinition {
            name: "Read",
            description: "Reads \"a\" file",
            input_schema: &schema,
            cache_control: Some(CacheControl::ephemeral()),
        }]);
        assert_eq!(tools.names(), ["Read"]);
        let messages = [Message::user_text("hi")];
        let request = |tools| MessagesRequest {
            model: "m",
            max_tokens: 1,
            messages: Messages::plain(&messages),
            system: &[],
            tools,
            thinking: None,
            output_config: None,
            context_management: None,
            stream: true,
        };
        let body = request(tools.json()).to_body().to_vec();
        let text = String::from_utf8(body.clone()).unwrap();
        assert!(text.find("\"tools\"") < text.find("\"messages\""), "{text}");
        assert_eq!(tools.len() as usize, tools.json().unwrap().len());
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body["tools"],
            json!([{"name": "Read", "description": "Reads \"a\" file", "input_schema": schema,
                    "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(body["messages"][0]["content"][0]["text"], "hi");
        let none = EncodedTools::new(&[]);
        assert!(none.json().is_none() && none.is_empty());
        let body: Value = serde_json::from_slice(&request(none.json()).to_body().to_vec()).unwrap();
        assert!(body.get("tools").is_none(), "{body}");
        assert_eq!(body["stream"], true);
    }

    #[test]
    fn string_content_becomes_a_text_block() {
        let m: Message = serde_json::from_value(json!({"role":"user","content":"hi"})).unwrap();
        assert_eq!(m.content, vec![ContentBlock::text("hi")]);
    }

    #[test]
    fn unknown_events_and_deltas_are_not_fatal() {
        let e: StreamEvent = serde_json::from_str(r#"{"type":"brand_new","x":1}"#).unwrap();
        assert_eq!(e, StreamEvent::Unknown);
        let e: StreamEvent =
            serde_json::from_str(r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#)
                .unwrap();
        assert!(matches!(
            e,
            StreamEvent::ContentBlockDelta {
                delta: Delta::Unknown,
                ..
            }
        ));
    }

    #[test]
    fn tool_result_round_trips_and_accepts_block_content() {
        let b = ContentBlock::tool_result("t1", "out", true);
        let v = serde_json::to_value(&b).unwrap();
        assert_eq!(
            v,
            json!({"type":"tool_result","tool_use_id":"t1","content":"out","is_error":true})
        );
        let b: ContentBlock = serde_json::from_value(
            json!({"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"}]}),
        )
        .unwrap();
        assert_eq!(b, ContentBlock::tool_result("t1", "a", false));
    }

    #[test]
    fn null_usage_counts_are_zero() {
        let u: Usage = serde_json::from_value(
            json!({"input_tokens": 5, "output_tokens": null, "cache_read_input_tokens": null}),
        )
        .unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cache_read_input_tokens),
            (5, 0, 0)
        );
    }

    #[test]
    fn delta_usage_replaces_cumulative_fields() {
        let mut u = Usage {
            input_tokens: 10,
            output_tokens: 1,
            ..Default::default()
        };
        DeltaUsage {
            output_tokens: Some(42),
            ..Default::default()
        }
        .apply_to(&mut u);
        assert_eq!((u.input_tokens, u.output_tokens), (10, 42));
    }
}
