//! Runs the model's tool calls: the streaming executor (who runs when) and the six-phase
//! pipeline (what happens to each call).

use futures::future::BoxFuture;
use serde_json::Value;

pub mod executor;
pub mod hooks;
mod pipeline;
pub mod review;

pub use executor::{Batch, BatchOutcome, Executor};
pub use pipeline::CANCELLED;

/// A permission question for the user (the REPL renders it; print mode can never ask).
#[derive(Debug, Clone, PartialEq)]
pub struct AskRequest {
    pub tool: String,
    /// The model's id for the call (an Agent SDK's `can_use_tool` carries it).
    pub tool_use_id: String,
    pub input: Value,
    /// One line naming the action, e.g. `Bash: rm -rf build`.
    pub summary: String,
    pub reason: String,
    /// The allow rule that "yes, and don't ask again" would save, e.g. `Bash(npm test:*)`.
    pub suggested_rule: String,
    /// What the call would change (a diff for Edit and Write), shown with the question.
    pub preview: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AskAnswer {
    AllowOnce,
    /// Allow and save the suggested rule.
    AllowAlways,
    /// Allow and save this rule instead of the suggested one (edits under a folder, say).
    AllowRule(String),
    /// Allow, and this rule (the suggested one when `None`) for the rest of the session only:
    /// nothing is written to the settings (an agent's supervisor, Claude Code's `session`
    /// destination).
    AllowForSession(Option<String>),
    /// Allow the call with this input instead of the model's (the Agent SDK's `updatedInput`).
    AllowChanged(Value),
    /// Refuse; the optional message is passed to the model.
    Deny(Option<String>),
}

pub trait Asker: Send + Sync {
    fn ask(&self, request: AskRequest) -> BoxFuture<'_, AskAnswer>;
}

/// Print mode: nobody can answer, so every ask is a denial.
pub struct NeverAsk;

impl Asker for NeverAsk {
    fn ask(&self, _request: AskRequest) -> BoxFuture<'_, AskAnswer> {
        Box::pin(async { AskAnswer::Deny(None) })
    }
}
