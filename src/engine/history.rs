//! The conversation as the engine holds and sends it. Each message's JSON is encoded once and
//! reused by every later request, so building a request costs the messages added since the
//! last one, not the whole history; each message's size is known from the moment it is added,
//! so the engine can tell before sending whether a request will fit.

use bytes::Bytes;

use crate::api::types::{ContentBlock, Message, encode_message};

use super::repair;

/// Rough tokens per byte of message JSON, as the mock server also counts; real tokenizers
/// give 3–4 bytes per token for English and code.
const BYTES_PER_TOKEN: u64 = 4;

#[derive(Debug, Default)]
pub(super) struct History {
    messages: Vec<Message>,
    /// The JSON of `messages[i]` without cache breakpoints, once a request has encoded it.
    encoded: Vec<Option<Bytes>>,
    /// The length of that JSON, known from the start.
    bytes: Vec<u64>,
    /// The same with images counted as what the model reads of them: the basis of the token
    /// estimate.
    weights: Vec<u64>,
    /// What the model reported reading for the last request: (messages sent, tokens).
    measured: Option<(usize, u64)>,
    /// How many leading messages were last found valid to send.
    valid: usize,
}

impl History {
    pub(super) fn new(messages: Vec<Message>) -> Self {
        let mut h = History::default();
        h.replace(messages);
        h
    }

    pub(super) fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub(super) fn len(&self) -> usize {
        self.messages.len()
    }

    pub(super) fn push(&mut self, message: Message) {
        let bytes = json_len(&message);
        self.weights.push(weight(&message, bytes));
        self.bytes.push(bytes);
        self.encoded.push(None);
        self.messages.push(message);
    }

    /// A new conversation (compaction, `/clear`, a rewind).
    pub(super) fn replace(&mut self, messages: Vec<Message>) {
        self.bytes = messages.iter().map(json_len).collect();
        self.weights = messages
            .iter()
            .zip(&self.bytes)
            .map(|(m, bytes)| weight(m, *bytes))
            .collect();
        self.encoded = vec![None; messages.len()];
        self.messages = messages;
        self.measured = None;
        self.valid = 0;
    }

    pub(super) fn clear(&mut self) {
        self.replace(Vec::new());
    }

    /// Makes the history valid to send (see `repair`); returns how many tool results were
    /// synthesised. A valid history, the usual case, is checked and left alone.
    pub(super) fn repair(&mut self) -> usize {
        // Messages are only appended between requests: the last valid one links to the new.
        if repair::is_valid_from(&self.messages, self.valid.saturating_sub(1)) {
            self.valid = self.messages.len();
            return 0;
        }
        let mut messages = std::mem::take(&mut self.messages);
        let synthesised = repair::repair(&mut messages);
        let measured = self.measured;
        self.replace(messages);
        // The fixes are tiny next to the conversation: the last measurement still holds.
        self.measured = measured.map(|(n, tokens)| (n.min(self.messages.len()), tokens));
        self.valid = self.messages.len();
        synthesised
    }

    /// Every message's JSON for a request, with cache breakpoints on the messages in `marks`.
    /// Unmarked messages are encoded once and reused.
    pub(super) fn encode(&mut self, marks: &[usize]) -> Vec<Bytes> {
        let encode = |message: &Message, marked: bool| {
            let mut out = Vec::new();
            encode_message(message, marked, &mut out);
            Bytes::from(out)
        };
        self.encoded
            .iter_mut()
            .zip(&self.messages)
            .enumerate()
            .map(|(i, (slot, message))| {
                if marks.contains(&i) {
                    encode(message, true)
                } else {
                    slot.get_or_insert_with(|| encode(message, false)).clone()
                }
            })
            .collect()
    }

    /// The JSON bytes of all messages.
    pub(super) fn json_bytes(&self) -> u64 {
        self.bytes.iter().sum()
    }

    /// Records what the model read for a request that sent the whole history as it is now.
    pub(super) fn measured(&mut self, context_tokens: u64) {
        if context_tokens > 0 {
            self.measured = Some((self.messages.len(), context_tokens));
        }
    }

    /// The tokens the model will read for the messages: the last measurement plus an estimate
    /// of what was added since, or an estimate of everything when nothing was measured yet.
    /// `overhead` is the estimate for the system prompt and tools, used only in the latter case.
    pub(super) fn estimated_tokens(&self, overhead: u64) -> u64 {
        match self.measured {
            Some((sent, tokens)) => {
                tokens
                    + self.weights[sent.min(self.weights.len())..]
                        .iter()
                        .sum::<u64>()
                        / BYTES_PER_TOKEN
            }
            None => overhead + self.weights.iter().sum::<u64>() / BYTES_PER_TOKEN,
        }
    }
}

/// What the model reads of an image, at most (a 1.15 megapixel picture; larger ones are scaled
/// down by the API).
const IMAGE_TOKENS: u64 = 1600;

/// A message's size (`bytes` of JSON) for the token estimate: an image counts as what the model
/// reads of it, not as its base64, which can be megabytes.
fn weight(message: &Message, mut bytes: u64) -> u64 {
    let images = message.content.iter().flat_map(|block| match block {
        ContentBlock::Image { source } => std::slice::from_ref(source),
        ContentBlock::ToolResult { content, .. } => content.images.as_slice(),
        _ => &[],
    });
    for image in images {
        bytes = bytes.saturating_sub(json_len(image)) + IMAGE_TOKENS * BYTES_PER_TOKEN;
    }
    bytes
}

/// The size of a value's JSON, counted without building it.
pub(super) fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Tokens estimated for a piece of request JSON (system prompt, tools).
pub(super) fn estimate_tokens(json_bytes: usize) -> u64 {
    json_bytes as u64 / BYTES_PER_TOKEN
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::types::{ContentBlock, Messages, MessagesRequest, Role};
    use serde_json::json;

    fn body(messages: Messages<'_>) -> serde_json::Value {
        let bytes = MessagesRequest {
            model: "m",
            max_tokens: 1,
            messages,
            system: &[],
            tools: None,
            thinking: None,
            output_config: None,
            context_management: None,
            stream: true,
        }
        .to_body()
        .to_vec();
        serde_json::from_slice(&bytes).unwrap()
    }

    fn sample() -> Vec<Message> {
        vec![
            Message::user_text("go"),
            Message::assistant(vec![
                ContentBlock::text("reading"),
                ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "/a \"quoted\"\n"}),
                },
            ]),
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result("t1", "line\tone\n", false)],
            },
        ]
    }

    #[test]
    fn reused_encodings_give_the_same_body_as_serialising_afresh() {
        let mut h = History::new(sample());
        for marks in [vec![], vec![2], vec![0, 2], vec![1]] {
            let pieces = h.encode(&marks);
            let reused = body(Messages::Encoded(&pieces));
            let fresh = body(Messages::Breakpointed(crate::api::types::Breakpointed {
                messages: &sample(),
                marks: &marks,
            }));
            assert_eq!(reused, fresh, "marks {marks:?}");
        }
        h.push(Message::assistant(vec![ContentBlock::text("done")]));
        let pieces = h.encode(&[3]);
        let v = body(Messages::Encoded(&pieces));
        assert_eq!(
            v["messages"][3]["content"][0]["cache_control"]["type"],
            "ephemeral"
        );
        assert!(
            v["messages"][2]["content"][0]
                .get("cache_control")
                .is_none()
        );
    }

    #[test]
    fn an_image_counts_as_what_the_model_reads_of_it_not_its_base64() {
        let result = crate::api::types::ResultContent {
            text: "shot".into(),
            images: vec![crate::api::types::ImageSource::base64(
                "image/png",
                "A".repeat(4_000_000),
            )],
        };
        let mut h = History::default();
        h.push(Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result("t", result, false)],
        });
        assert!(h.json_bytes() > 4_000_000, "the request size stays exact");
        let tokens = h.estimated_tokens(0);
        assert!(
            (IMAGE_TOKENS..IMAGE_TOKENS + 100).contains(&tokens),
            "{tokens}"
        );
    }

    #[test]
    fn sizes_are_exact_and_estimates_follow_measurements() {
        let mut h = History::new(sample());
        let exact: u64 = sample()
            .iter()
            .map(|m| serde_json::to_vec(m).unwrap().len() as u64)
            .sum();
        assert_eq!(h.json_bytes(), exact);
        assert_eq!(h.estimated_tokens(100), 100 + exact / 4);
        h.measured(5000);
        assert_eq!(h.estimated_tokens(100), 5000);
        h.push(Message::user_text("x".repeat(4000)));
        let added = json_len(&Message::user_text("x".repeat(4000)));
        assert_eq!(h.estimated_tokens(100), 5000 + added / 4);
    }

    #[test]
    fn an_invalid_history_is_repaired_and_re_encoded() {
        let mut h = History::new(vec![
            Message::user_text("go"),
            Message::assistant(vec![ContentBlock::ToolUse {
                id: "t1".into(),
                name: "Read".into(),
                input: json!({}),
            }]),
        ]);
        let before = h.encode(&[]).len();
        assert_eq!(before, 2);
        assert_eq!(h.repair(), 1);
        let pieces = h.encode(&[]);
        let v = body(Messages::Encoded(&pieces));
        assert_eq!(v["messages"][2]["content"][0]["type"], "tool_result");
        assert_eq!(h.repair(), 0);
        // Only appended messages are checked again, and a broken link is still caught.
        h.push(Message::assistant(vec![ContentBlock::ToolUse {
            id: "t2".into(),
            name: "Read".into(),
            input: json!({}),
        }]));
        assert_eq!(h.repair(), 1);
        h.push(Message::user_text("next"));
        assert_eq!(h.repair(), 0);
        assert_eq!(
            h.messages().len(),
            5,
            "the prompt joins the synthesised result"
        );
    }
}
