//! Runs the model's tool calls: the streaming executor (who runs when) and the six-phase
//! pipeline (what happens to each call).

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

pub mod elide;
pub mod executor;
mod pipeline;
pub mod process;

pub use executor::{Batch, BatchOutcome, Executor};
pub use pipeline::CANCELLED;

/// A permission question for the user (the REPL renders it; print mode can never ask).
#[derive(Debug, Clone, PartialEq)]
pub struct AskRequest {
    pub tool: String,
    pub input: Value,
    /// One line naming the action, e.g. `Bash: rm -rf build`.
    pub summary: String,
    pub reason: String,
    /// The allow rule that "yes, and don't ask again" would save, e.g. `Bash(npm test:*)`.
    pub suggested_rule: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AskAnswer {
    AllowOnce,
    /// Allow and save the suggested rule.
    AllowAlways,
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

/// How long each pipeline phase took for one call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseTimings {
    pub schema: Duration,
    pub semantic: Duration,
    pub pre_hooks: Duration,
    pub permission: Duration,
    pub execution: Duration,
    pub post_hooks: Duration,
}
