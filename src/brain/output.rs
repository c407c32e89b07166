//! Folds one turn's stream events into what a dispatch returns: text, tool calls, usage, cost.

use crate::api::types::{ContentBlock, Usage};

use super::ToolCall;
use crate::stream_json::read::{Line, ResultEvent};

/// One turn in progress.
#[derive(Debug, Default)]
pub(crate) struct TurnAccumulator {
    session_id: Option<String>,
    tool_calls: Vec<ToolCall>,
    message_id: Option<String>,
    message_text: String,
    // Claude Code repeats a message's usage on each of its blocks, so keep the last per id.
    usage_by_message: Vec<(String, Usage)>,
    result: Option<ResultEvent>,
}

/// A finished turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnOutcome {
    pub session_id: Option<String>,
    pub text: String,
    pub usage: Usage,
    /// The process's cumulative cost after this turn, when the CLI reported it.
    pub total_cost_usd: Option<f64>,
    pub is_error: bool,
    /// The result's kind (`success`, `error_max_turns`, …).
    pub subtype: String,
    pub api_error_status: Option<u16>,
    pub tool_calls: Vec<ToolCall>,
}

impl TurnAccumulator {
    /// Takes one event; `true` once the turn's result has arrived.
    pub(super) fn feed(&mut self, event: Line) -> bool {
        match event {
            Line::Init(init) => self.session_id = Some(init.session_id),
            Line::Assistant(msg) => {
                if self.message_id.as_deref() != Some(msg.message_id.as_str()) {
                    self.message_id = Some(msg.message_id.clone());
                    self.message_text.clear();
                }
                for block in msg.blocks {
                    match block {
                        ContentBlock::Text { text } => self.message_text.push_str(&text),
                        ContentBlock::ToolUse { id, name, input }
                            if !self.tool_calls.iter().any(|c| c.id == id) =>
                        {
                            self.tool_calls.push(ToolCall {
                                id,
                                name,
                                input,
                                result: None,
                                is_error: false,
                            });
                        }
                        _ => {}
                    }
                }
                match self
                    .usage_by_message
                    .iter_mut()
                    .find(|(id, _)| *id == msg.message_id)
                {
                    Some((_, usage)) => *usage = msg.usage,
                    None => self.usage_by_message.push((msg.message_id, msg.usage)),
                }
            }
            Line::User(user) => {
                for block in user.blocks {
                    if let ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    } = block
                        && let Some(call) = self.tool_calls.iter_mut().find(|c| c.id == tool_use_id)
                    {
                        call.result = Some(content.text);
                        call.is_error = is_error;
                    }
                }
            }
            Line::ApiRetry(retry) => tracing::info!(
                attempt = retry.attempt,
                max_retries = retry.max_retries,
                status = ?retry.error_status,
                error = %retry.error,
                "the brain's API request failed and is being retried"
            ),
            Line::Result(result) => {
                if let Some(id) = &result.session_id {
                    self.session_id = Some(id.clone());
                }
                self.result = Some(result);
                return true;
            }
            Line::TextDelta(_) | Line::Other(_) | Line::ControlRequest(_) => {}
        }
        false
    }

    pub(super) fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The outcome, or `None` if no result arrived.
    pub(super) fn finish(self) -> Option<TurnOutcome> {
        let result = self.result?;
        let usage = result.usage.unwrap_or_else(|| {
            let mut sum = Usage::default();
            for (_, u) in &self.usage_by_message {
                sum.add(u);
            }
            sum
        });
        let text = match result.text {
            Some(text) if !text.is_empty() || self.message_text.is_empty() => text,
            _ => self.message_text,
        };
        Some(TurnOutcome {
            session_id: self.session_id,
            text,
            usage,
            total_cost_usd: result.total_cost_usd,
            is_error: result.is_error,
            subtype: result.subtype,
            api_error_status: result.api_error_status,
            tool_calls: self.tool_calls,
        })
    }
}

/// Turns the CLI's `total_cost_usd`, a running total over the life of the process (both
/// Claude Code and ouro start again from zero in a new process), into per-turn costs.
#[derive(Debug, Default)]
pub(crate) struct CostTracker {
    last_total: Option<f64>,
}

impl CostTracker {
    /// This turn's cost from what the CLI reported, or `priced` when it reported none.
    pub(super) fn turn_cost(&mut self, reported: Option<f64>, priced: impl FnOnce() -> f64) -> f64 {
        match reported {
            Some(total) => {
                let before = self.last_total.replace(total).unwrap_or(0.0);
                (total - before).max(0.0)
            }
            None => priced(),
        }
    }
}

#[cfg(test)]
mod tests;
