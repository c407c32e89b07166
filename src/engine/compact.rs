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

/// Rounds (assistant messages and what follows them) kept verbatim when possible.
const KEEP_ROUNDS: usize = 2;
/// User prompts from the summarised part repeated word for word.
const KEEP_USER_PROMPTS: usize = 3;
const MAX_FILES_LISTED: usize = 30;
/// Caps that keep the summary request itself from being too long.
const MAX_BLOCK_CHARS: usize = 2_000;
const MAX_TRANSCRIPT_CHARS: usize = 400_000;
const SUMMARY_MAX_TOKENS: u32 = 8_192;

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
        self.history.repair();
        let split = split_point(self.history.messages()).ok_or(CompactError::TooLittle)?;
        let pre_tokens = self.estimated_context_tokens();
        self.emit(Event::CompactStarted);
        let result = self.summarise(split, focus, run, cancel).await;
        self.emit(Event::CompactFinished);
        let summary = result?;
        let (older, tail) = self.history.messages().split_at(split);
        let mut lead = continuation_text(&summary, older);
        let mut new_history = Vec::with_capacity(tail.len() + 1);
        let mut tail = tail.to_vec();
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
        let info = CompactInfo {
            trigger,
            pre_tokens,
            messages_summarised: split,
            messages_kept: self.history.len() - split,
        };
        self.persist(|t| t.append_compaction(&new_history));
        self.emit(Event::CompactBoundary(info.clone()));
        if let Some(first) = new_history.first() {
            self.emit(Event::SyntheticUser { text: first.text() });
        }
        self.history.replace(new_history);
        self.cache_mark = None;
        Ok(info)
    }

    async fn summarise(
        &mut self,
        split: usize,
        focus: Option<&str>,
        run: &mut RunState,
        cancel: &CancellationToken,
    ) -> Result<String, CompactError> {
        let mut ask = render(&self.history.messages()[..split]);
        ask.push_str("\n\nWrite the summary of the conversation above now.");
        if let Some(focus) = focus.filter(|f| !f.trim().is_empty()) {
            ask.push_str(&format!(" Pay particular attention to: {}", focus.trim()));
        }
        let body = MessagesRequest {
            model: crate::api::models::api_model(&self.config.model),
            max_tokens: SUMMARY_MAX_TOKENS.min(self.config.max_tokens.max(1024)),
            messages: Messages::plain(&[Message::user_text(ask)]),
            system: &[SystemBlock::text(prompt::COMPACT.trim_end())],
            tools: &[],
            thinking: None,
            output_config: None,
            context_management: None,
            stream: true,
        }
        .to_body();
        // The conversation being summarised may need the long window it was held in.
        let betas = crate::api::models::context_beta(&self.config.model)
            .into_iter()
            .collect();
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
    let prompts: Vec<String> = older
        .iter()
        .filter(|m| m.role == Role::User)
        .map(Message::text)
        .filter(|t| !t.trim().is_empty() && !prompt::is_nudge(t))
        .collect();
    if !prompts.is_empty() {
        out.push_str("\n\nThe user's most recent requests, verbatim:\n");
        for p in prompts.iter().rev().take(KEEP_USER_PROMPTS).rev() {
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

/// The conversation as plain text for the summariser (tool calls and results included, cut).
fn render(messages: &[Message]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for m in messages {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
        };
        for block in &m.content {
            let text = match block {
                ContentBlock::Text { text } => format!("{who}: {}", cut(text, MAX_BLOCK_CHARS * 4)),
                ContentBlock::ToolUse { name, input, .. } => {
                    format!(
                        "{who} called {name} with {}",
                        cut(&input.to_string(), MAX_BLOCK_CHARS)
                    )
                }
                ContentBlock::ToolResult {
                    content, is_error, ..
                } => format!(
                    "Tool {}: {}",
                    if *is_error { "error" } else { "result" },
                    cut(content, MAX_BLOCK_CHARS)
                ),
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => continue,
            };
            parts.push(text);
        }
    }
    let mut out = String::new();
    let mut total = 0;
    let mut kept = Vec::new();
    for p in parts.iter().rev() {
        total += p.len() + 2;
        if total > MAX_TRANSCRIPT_CHARS {
            out.push_str("(the earliest part of the conversation was left out for length)\n\n");
            break;
        }
        kept.push(p.as_str());
    }
    kept.reverse();
    out.push_str(&kept.join("\n\n"));
    out
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let head = crate::text::prefix_bytes(text, max);
    format!("{head}… [{} more characters]", text.len() - head.len())
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
        let r = render(&h);
        assert!(r.len() < 3_000 && r.contains("more characters"));
    }
}
