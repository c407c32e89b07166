//! Prompt caching as the API bills it. A request is a sequence of blocks, tools first, then
//! system blocks, then each message's content blocks. A block marked with `cache_control` ends a
//! prefix: the longest marked prefix written by an earlier request is read from cache (billed
//! at 0.1×), the rest up to the last mark is written (1.25×), and what follows is plain input.
//! Prefixes shorter than the model's minimum are never cached. The `cache_control` markers
//! themselves are not part of what is matched, so moving a breakpoint keeps the prefix.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use crate::api::types::Usage;

/// The smallest cacheable prefix of the Sonnet and Opus models, in tokens.
pub(super) const DEFAULT_MIN_TOKENS: u64 = 1024;

#[derive(Debug)]
pub(super) struct PromptCache {
    prefixes: HashSet<u64>,
    min_tokens: u64,
}

impl PromptCache {
    pub(super) fn new(min_tokens: u64) -> Self {
        PromptCache {
            prefixes: HashSet::new(),
            min_tokens,
        }
    }

    /// The usage of a request, split into uncached input, cache writes and cache reads;
    /// `output_tokens` is 0. Tokens are the bytes of the blocks / 4 (the JSON around them is
    /// not billed); a body without blocks counts `body_len` / 4.
    pub(super) fn usage(&mut self, body: &Value, body_len: usize) -> Usage {
        let (marks, block_bytes) = breakpoint_prefixes(body);
        let total = match block_bytes {
            0 => (body_len / 4) as u64,
            bytes => (bytes / 4) as u64,
        };
        let cacheable: Vec<(u64, u64)> = marks
            .into_iter()
            .filter(|(_, tokens)| *tokens >= self.min_tokens)
            .collect();
        let read = cacheable
            .iter()
            .filter(|(hash, _)| self.prefixes.contains(hash))
            .map(|(_, tokens)| *tokens)
            .max()
            .unwrap_or(0)
            .min(total);
        let longest = cacheable
            .iter()
            .map(|(_, t)| *t)
            .max()
            .unwrap_or(0)
            .min(total);
        let write = longest.saturating_sub(read);
        self.prefixes
            .extend(cacheable.iter().map(|(hash, _)| *hash));
        Usage {
            input_tokens: total - read - write,
            output_tokens: 0,
            cache_creation_input_tokens: write,
            cache_read_input_tokens: read,
        }
    }
}

/// For every block carrying `cache_control`: a hash of the request up to and including it,
/// and that prefix's size in tokens (bytes / 4); and the bytes of all blocks.
fn breakpoint_prefixes(body: &Value) -> (Vec<(u64, u64)>, usize) {
    let mut hasher = DefaultHasher::new();
    let mut bytes = 0usize;
    let mut out = Vec::new();
    let mut block = |kind: &str, value: &Value, hasher: &mut DefaultHasher| {
        let marked = value.get("cache_control").is_some();
        let mut plain = value.clone();
        if let Some(map) = plain.as_object_mut() {
            map.remove("cache_control");
        }
        let text = plain.to_string();
        kind.hash(hasher);
        text.hash(hasher);
        bytes += text.len();
        if marked {
            out.push((hasher.clone().finish(), (bytes / 4) as u64));
        }
    };
    body["model"].to_string().hash(&mut hasher);
    for tool in body["tools"].as_array().into_iter().flatten() {
        block("tool", tool, &mut hasher);
    }
    match &body["system"] {
        Value::String(text) => block("system", &Value::String(text.clone()), &mut hasher),
        Value::Array(blocks) => blocks.iter().for_each(|b| block("system", b, &mut hasher)),
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or("");
        match &message["content"] {
            Value::String(text) => block(role, &Value::String(text.clone()), &mut hasher),
            Value::Array(blocks) => blocks.iter().for_each(|b| block(role, b, &mut hasher)),
            _ => {}
        }
    }
    (out, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(messages: usize, mark_last: bool) -> Value {
        let big = "x".repeat(8000);
        let mut msgs: Vec<Value> = (0..messages)
            .map(|i| {
                json!({"role": if i % 2 == 0 {"user"} else {"assistant"},
                            "content": [{"type": "text", "text": format!("{i} {big}")}]})
            })
            .collect();
        if mark_last && let Some(last) = msgs.last_mut() {
            last["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({"model": "m", "system": [{"type": "text", "text": big,
               "cache_control": {"type": "ephemeral"}}], "messages": msgs})
    }

    #[test]
    fn each_turn_reads_what_the_last_one_wrote() {
        let mut cache = PromptCache::new(DEFAULT_MIN_TOKENS);
        let first = body(1, true);
        let u1 = cache.usage(&first, first.to_string().len());
        assert_eq!(u1.cache_read_input_tokens, 0);
        assert!(u1.cache_creation_input_tokens > 3000, "{u1:?}");
        // The next request marks the old last message and the new one.
        let mut second = body(3, true);
        second["messages"][0]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        let u2 = cache.usage(&second, second.to_string().len());
        assert_eq!(
            u2.cache_read_input_tokens, u1.cache_creation_input_tokens,
            "{u1:?} {u2:?}"
        );
        assert!(u2.cache_creation_input_tokens > 3000, "{u2:?}");
    }

    #[test]
    fn unmarked_requests_and_short_prefixes_are_plain_input() {
        let mut cache = PromptCache::new(DEFAULT_MIN_TOKENS);
        let plain = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let u = cache.usage(&plain, 400);
        assert_eq!((u.input_tokens, u.cache_read_input_tokens), (1, 0));
        let small = json!({"model": "m", "messages": [{"role": "user", "content":
            [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]});
        let u = cache.usage(&small, 400);
        assert_eq!(u.cache_creation_input_tokens, 0);
    }
}
