//! Compaction: when the conversation no longer fits, the older part is replaced by a summary
//! written by the same model. The task survives: the user's recent requests stay verbatim, the
//! most recent rounds stay untouched, and the files still in play are named.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::run::{CallError, Request, RunState};
use super::{Engine, prompt};
use crate::api::types::{
    ContentBlock, Message, Messages, MessagesRequest, Role, SystemBlock, text_of,
};
use crate::event::{CompactInfo, CompactTrigger, Event};
use crate::text::elide_middle;

/// Rounds (assistant messages and what follows them) kept verbatim when possible.
const KEEP_ROUNDS: usize = 2;
/// User prompts from the summarised part repeated word for word.
const KEEP_USER_PROMPTS: usize = 3;
const MAX_FILES_LISTED: usize = 30;
/// Caps that keep each summary request small: one block's share, and one request's share of
/// the rendered conversation (a longer one is summarised in chunks, oldest first).
const MAX_BLOCK_CHARS: usize = 2_000;
const MAX_CHUNK_CHARS: usize = 400_000;
/// Summary requests per compaction; the earliest part beyond them is left out, though the
/// user's first and latest requests are always kept verbatim.
const MAX_CHUNKS: usize = 6;
const SUMMARY_MAX_TOKENS: u32 = 8_192;
/// A kept tool result may take at most this share of the context window (in characters at
/// ~4 per token); a longer one is cut in the middle, with a note to the model.
const KEPT_RESULT_WINDOW_SHARE: f64 = 0.25;

#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error("there is too little conversation to summarise")]
    TooLittle,
    #[error("the summary request failed: {0}")]
    Request(String),
    #[error("the summary came back empty")]
    EmptySummary,
    #[error("compaction was interrupted")]
    Aborted,
}

impl Engine {
    /// Replace the older part of the history with a summary. `focus` is the user's hint from
    /// `/compact <focus>`.
    pub async fn compact_now(
        &mut self,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<CompactInfo, CompactError> {
        let mut run = RunState::default();
        self.compact(CompactTrigger::Manual, focus, &mut run, cancel)
            .await
    }

    pub(super) async fn compact(
        &mut self,
        trigger: CompactTrigger,
        focus: Option<&str>,
        run: &mut RunState,
        cancel: &CancellationToken,
    ) -> Result<CompactInfo, CompactError> {
        self.pre_compact_hooks(trigger == CompactTrigger::Manual, focus)
            .await;
        self.history.repair();
        let pre_tokens = self.estimated_context_tokens();
        let window = crate::api::models::context_window(&self.config.model) as f64;
        let max_result_chars = (window * 4.0 * KEPT_RESULT_WINDOW_SHARE) as usize;
        let Some(split) = split_point(self.history.messages()) else {
            // Nothing to summarise, but an oversized result may still be cut to fit.
            let mut messages = self.history.messages().to_vec();
            if shorten_results(&mut messages, max_result_chars) == 0 {
                return Err(CompactError::TooLittle);
            }
            return Ok(self.install(messages, trigger, pre_tokens, 0));
        };
        self.emit(Event::CompactStarted);
        let result = self.summarise(split, focus, run, cancel).await;
        self.emit(Event::CompactFinished);
        let summary = result?;
        let (older, tail) = self.history.messages().split_at(split);
        let mut lead = continuation_text(&summary, older);
        let mut new_history = Vec::with_capacity(tail.len() + 1);
        let mut tail = tail.to_vec();
        shorten_results(&mut tail, max_result_chars);
        if tail.first().is_some_and(|m| m.role == Role::User) {
            let first = tail.remove(0);
            let mut content = vec![ContentBlock::text(std::mem::take(&mut lead))];
            content.extend(first.content);
            new_history.push(Message {
                role: Role::User,
                content,
            });
        } else {
            new_history.push(Message::user_text(lead));
        }
        new_history.extend(tail);
        Ok(self.install(new_history, trigger, pre_tokens, split))
    }

    /// Make `messages` the conversation, on disk and in memory.
    fn install(
        &mut self,
        messages: Vec<Message>,
        trigger: CompactTrigger,
        pre_tokens: u64,
        summarised: usize,
    ) -> CompactInfo {
        let info = CompactInfo {
            trigger,
            pre_tokens,
            messages_summarised: summarised,
            messages_kept: self.history.len() - summarised,
        };
        self.persist(|t| t.append_compaction(&messages));
        self.emit(Event::CompactBoundary(info.clone()));
        if summarised > 0
            && let Some(first) = messages.first()
        {
            self.emit(Event::SyntheticUser { text: first.text() });
        }
        self.history.replace(messages);
        self.cache_mark = None;
        info
    }

    /// The summary of `history[..split]`: one request, or one per chunk when the rendered
    /// conversation is too long for one, each chunk summarised together with the summary of
    /// what came before it.
    async fn summarise(
        &mut self,
        split: usize,
        focus: Option<&str>,
        run: &mut RunState,
        cancel: &CancellationToken,
    ) -> Result<String, CompactError> {
        let window = crate::api::models::context_window(&self.config.model) as usize;
        let max = MAX_CHUNK_CHARS.min(window * 2);
        let (parts, mut left_out) = render(&self.history.messages()[..split], max * MAX_CHUNKS);
        let chunks = chunks(parts, max);
        let skip = chunks.len().saturating_sub(MAX_CHUNKS);
        left_out |= skip > 0;
        let mut summary: Option<String> = None;
        for chunk in chunks.into_iter().skip(skip) {
            let mut ask = String::new();
            if let Some(before) = &summary {
                ask.push_str(&format!(
                    "Summary of the conversation before this part:\n<summary>\n{before}\n</summary>\n\nThe conversation continues:\n\n"
                ));
            } else if left_out {
                ask.push_str("(the earliest part of the conversation was left out for length)\n\n");
            }
            ask.push_str(&chunk);
            ask.push_str("\n\nWrite the summary of the conversation above now.");
            if let Some(focus) = focus.filter(|f| !f.trim().is_empty()) {
                ask.push_str(&format!(" Pay particular attention to: {}", focus.trim()));
            }
            summary = Some(self.summary_request(ask, run, cancel).await?);
        }
        summary.ok_or(CompactError::TooLittle)
    }

    async fn summary_request(
        &mut self,
        ask: String,
        run: &mut RunState,
        cancel: &CancellationToken,
    ) -> Result<String, CompactError> {
        let body = MessagesRequest {
            model: crate::api::models::api_model(&self.config.model),
            max_tokens: SUMMARY_MAX_TOKENS.min(self.config.max_tokens.max(1024)),
            messages: Messages::plain(&[Message::user_text(ask)]),
            system: &[SystemBlock::text(prompt::COMPACT.trim_end())],
            tools: None,
            thinking: None,
            output_config: None,
            context_management: None,
            stream: true,
        }
        .to_body();
        // The conversation being summarised may need the long window it was held in, and the
        // user's betas go with every request.
        let mut betas: Vec<String> = crate::api::models::context_beta(&self.config.model)
            .into_iter()
            .map(String::from)
            .collect();
        super::run::add_betas(&mut betas, &self.config.betas);
        let request = Request { body, betas };
        match self.call_model(&request, run, cancel, None).await {
            Ok(outcome) => {
                let text: String = text_of(&outcome.blocks);
                if text.trim().is_empty() {
                    Err(CompactError::EmptySummary)
                } else {
                    Ok(text.trim().to_string())
                }
            }
            Err(CallError::Aborted { .. }) => Err(CompactError::Aborted),
            Err(CallError::Api(e))
            | Err(CallError::Cut { error: e, .. })
            | Err(CallError::WaitTooLong { error: e, .. })
            | Err(CallError::Overloaded(e)) => Err(CompactError::Request(e.to_string())),
        }
    }
}

/// Where the kept tail starts: it must not begin with tool results whose calls would be
/// summarised away, and at least two messages must be left to summarise.
fn split_point(history: &[Message]) -> Option<usize> {
    let assistant_starts: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant)
        .map(|(i, _)| i)
        .collect();
    let total = size(history).max(1);
    for keep in (0..=KEEP_ROUNDS).rev() {
        let split = if keep == 0 {
            history.len()
        } else if assistant_starts.len() >= keep {
            assistant_starts[assistant_starts.len() - keep]
        } else {
            continue;
        };
        // The kept part should be the smaller part, or compaction gains nothing.
        if split >= 2 && (keep == 0 || size(&history[split..]) * 2 <= total) {
            return Some(split);
        }
    }
    None
}

fn size(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| serde_json::to_string(m).map(|s| s.len()).unwrap_or(0))
        .sum()
}

/// The opening user message of the compacted conversation.
fn continuation_text(summary: &str, older: &[Message]) -> String {
    let mut out = prompt::CONTINUATION
        .trim_end()
        .replace("{summary}", summary);
    // What the user typed; an earlier compaction's opening message is not, but it carries
    // the session's first request forward.
    let mut first: Option<String> = None;
    let mut prompts: Vec<String> = Vec::new();
    for m in older.iter().filter(|m| m.role == Role::User) {
        for block in &m.content {
            let ContentBlock::Text { text } = block else {
                continue;
            };
            if is_lead(text) {
                if first.is_none() {
                    first = first_request_in(text);
                }
            } else if !text.trim().is_empty() && !prompt::is_nudge(text) {
                prompts.push(text.clone());
            }
        }
    }
    let recent = prompts.len().saturating_sub(KEEP_USER_PROMPTS);
    let first = first.or_else(|| (recent > 0).then(|| prompts[0].clone()));
    if let Some(first) = first {
        out.push_str("\n\nThe user's first request in this session, verbatim:\n");
        out.push_str(&format!("<user-request>\n{first}\n</user-request>\n"));
    }
    if !prompts.is_empty() {
        out.push_str("\n\nThe user's most recent requests, verbatim:\n");
        for p in &prompts[recent..] {
            out.push_str(&format!("<user-request>\n{p}\n</user-request>\n"));
        }
    }
    let files = files_in_play(older);
    if !files.is_empty() {
        out.push_str("\nFiles worked on earlier (read them again before editing; earlier reads are gone from the context):\n");
        for f in &files {
            out.push_str(&format!("- {f}\n"));
        }
    }
    out
}

/// Whether `text` is the opening message a compaction wrote.
fn is_lead(text: &str) -> bool {
    let intro = prompt::CONTINUATION
        .split("{summary}")
        .next()
        .unwrap_or_default()
        .trim();
    !intro.is_empty() && text.starts_with(intro)
}

/// The first request quoted in a compaction's opening message.
fn first_request_in(lead: &str) -> Option<String> {
    let start = lead.find("<user-request>\n")? + "<user-request>\n".len();
    let end = lead[start..].find("\n</user-request>")?;
    Some(lead[start..start + end].to_string())
}

fn files_in_play(messages: &[Message]) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for m in messages {
        for (_, _, input) in m.tool_uses() {
            for key in ["file_path", "path", "notebook_path"] {
                if let Some(p) = input.get(key).and_then(Value::as_str) {
                    files.retain(|f| f != p);
                    files.push(p.to_string());
                }
            }
        }
    }
    let skip = files.len().saturating_sub(MAX_FILES_LISTED);
    files.split_off(skip)
}

/// The conversation as plain text for the summariser, one part per block (tool calls and
/// results included, each cut to its head and tail): the newest parts up to `budget`
/// characters, and whether older ones were left out. Rendered newest first, so a huge
/// conversation costs only what is kept.
fn render(messages: &[Message], budget: usize) -> (Vec<String>, bool) {
    let mut parts: Vec<String> = Vec::new();
    let mut total = 0;
    for m in messages.iter().rev() {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
        };
        for block in m.content.iter().rev() {
            let text = match block {
                ContentBlock::Text { text } => {
                    format!("{who}: {}", elide_middle(text, MAX_BLOCK_CHARS * 4))
                }
                ContentBlock::Image { .. } => format!("{who} attached an image"),
                ContentBlock::Document { title, .. } => match title {
                    Some(title) => format!("{who} attached a document: {title}"),
                    None => format!("{who} attached a document"),
                },
                ContentBlock::ToolUse { name, input, .. } => {
                    format!(
                        "{who} called {name} with {}",
                        elide_middle(&input.to_string(), MAX_BLOCK_CHARS)
                    )
                }
                ContentBlock::ToolResult {
                    content, is_error, ..
                } => format!(
                    "Tool {}: {}",
                    if *is_error { "error" } else { "result" },
                    elide_middle(content, MAX_BLOCK_CHARS)
                ),
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => continue,
            };
            total += text.len() + 2;
            if total > budget {
                parts.reverse();
                return (parts, true);
            }
            parts.push(text);
        }
    }
    parts.reverse();
    (parts, false)
}

/// `parts` joined into chunks of at most about `max` characters, in order.
fn chunks(parts: Vec<String>, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for part in parts {
        if !current.is_empty() && current.len() + part.len() + 2 > max {
            out.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push_str("\n\n");
        }
        current.push_str(&part);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Cut every tool result in `messages` longer than `max_chars` to its head and tail, telling
/// the model what happened; returns how many were cut.
fn shorten_results(messages: &mut [Message], max_chars: usize) -> usize {
    let mut shortened = 0;
    for block in messages.iter_mut().flat_map(|m| m.content.iter_mut()) {
        if let ContentBlock::ToolResult { content, .. } = block
            && content.len() > max_chars
        {
            let total = content.chars().count();
            if total <= max_chars {
                continue;
            }
            let note = format!(
                "\n\n[ouro: this result had {total} characters; its middle was cut so the conversation fits the context window. Ask for smaller pieces (offset and limit, a narrower search, head or tail) if you need what was cut.]"
            );
            // Room for the note and the elision marker, so a cut result is not cut again.
            let room = max_chars.saturating_sub(note.len() + 64);
            content.text = elide_middle(content, room) + &note;
            shortened += 1;
        }
    }
    shortened
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round(i: usize) -> Vec<Message> {
        vec![
            Message::assistant(vec![ContentBlock::ToolUse {
                id: format!("t{i}"),
                name: "Read".into(),
                input: json!({"file_path": format!("/p/f{i}.rs")}),
            }]),
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result(
                    format!("t{i}"),
                    "x".repeat(100),
                    false,
                )],
            },
        ]
    }

    #[test]
    fn the_tail_starts_at_an_assistant_round() {
        let mut h = vec![Message::user_text("task")];
        for i in 0..6 {
            h.extend(round(i));
        }
        let split = split_point(&h).unwrap();
        assert_eq!(h[split].role, Role::Assistant);
        assert_eq!(h.len() - split, 4);
    }

    #[test]
    fn too_little_history_cannot_be_compacted() {
        assert_eq!(split_point(&[Message::user_text("hi")]), None);
    }

    #[test]
    fn continuation_keeps_requests_verbatim_and_files() {
        let mut h = vec![Message::user_text(
            "Fix the parser in src/p.rs, keep the API",
        )];
        h.extend(round(1));
        let text = continuation_text("SUMMARY", &h);
        assert!(text.contains("SUMMARY"));
        assert!(text.contains("Fix the parser in src/p.rs, keep the API"));
        assert!(text.contains("/p/f1.rs"));
    }

    #[test]
    fn render_cuts_long_results() {
        let h = vec![Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result("t", "y".repeat(10_000), false)],
        }];
        let (parts, left_out) = render(&h, 100_000);
        assert!(!left_out);
        let r = parts.join("\n\n");
        assert!(r.len() < 3_000 && r.contains("bytes ("), "{r}");
    }

    #[test]
    fn rendering_keeps_the_newest_parts_within_the_budget() {
        let h: Vec<Message> = (0..100)
            .map(|i| Message::user_text(format!("message number {i:03}")))
            .collect();
        let (parts, left_out) = render(&h, 20 * 20);
        assert!(left_out);
        assert_eq!(parts.last().unwrap(), "User: message number 099");
        assert_eq!(parts.len(), 400 / 26);
        let numbers: Vec<&str> = parts.iter().map(|p| &p[21..]).collect();
        let mut sorted = numbers.clone();
        sorted.sort();
        assert_eq!(numbers, sorted, "oldest first");
    }

    #[test]
    fn parts_are_packed_into_chunks_in_order() {
        let parts: Vec<String> = (0..10).map(|i| format!("{i}").repeat(30)).collect();
        let chunks = chunks(parts, 100);
        assert_eq!(chunks.len(), 4);
        assert!(chunks.iter().all(|c| c.len() <= 100));
        assert!(chunks[0].starts_with('0') && chunks[3].ends_with('9'));
    }

    #[test]
    fn oversized_results_are_cut_with_a_note_and_small_ones_kept() {
        let mut h = round(1);
        h.extend(vec![Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result(
                "t9",
                format!("HEAD{}TAIL", "z".repeat(50_000)),
                false,
            )],
        }]);
        assert_eq!(shorten_results(&mut h, 1_000), 1);
        let ContentBlock::ToolResult { content, .. } = &h[2].content[0] else {
            panic!()
        };
        assert!(content.starts_with("HEAD") && content.contains("TAIL"));
        assert!(
            content.contains("50008 characters") && content.len() < 1_500,
            "{}",
            content.text
        );
        assert_eq!(h[1].content, round(1)[1].content);
        assert_eq!(shorten_results(&mut h, 1_000), 0, "already short enough");
    }

    #[test]
    fn a_second_compaction_does_not_nest_the_first_ones_summary() {
        let h = vec![
            Message::user_text("the original task"),
            Message::user_text("b"),
        ];
        let lead = continuation_text("SUMMARY-ONE", &h);
        let mut later = vec![Message {
            role: Role::User,
            content: vec![ContentBlock::text(lead), ContentBlock::text("c")],
        }];
        later.extend(["d", "e", "f"].map(Message::user_text));
        let text = continuation_text("SUMMARY-TWO", &later);
        assert!(!text.contains("SUMMARY-ONE"), "{text}");
        assert_eq!(text.matches("the original task").count(), 1, "{text}");
        assert!(text.contains(
            "first request in this session, verbatim:\n<user-request>\nthe original task"
        ));
        assert!(text.contains("<user-request>\nf\n"));
    }

    #[test]
    fn the_first_request_survives_with_the_latest() {
        let h: Vec<Message> = ["the original task", "b", "c", "d", "e"]
            .iter()
            .map(|t| Message::user_text(*t))
            .collect();
        let text = continuation_text("S", &h);
        assert!(text.contains(
            "first request in this session, verbatim:\n<user-request>\nthe original task"
        ));
        assert!(text.contains("<user-request>\ne\n") && !text.contains("<user-request>\nb\n"));
    }
}
