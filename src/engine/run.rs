//! What a run and each of its model calls produce, shared by the query loop, the call itself
//! and compaction.

use std::time::Duration;

use crate::api::client::ApiError;
use crate::api::types::{ContentBlock, StopReason, Usage};
use crate::event::Denial;

/// What one run has used so far.
#[derive(Debug, Default)]
pub(super) struct RunState {
    pub turns: u32,
    pub(crate) api_time: Duration,
    pub usage: Usage,
    pub cost_usd: f64,
    pub denials: Vec<Denial>,
    /// Times a Stop hook sent the model back to work in this run.
    pub(crate) stop_hook_rounds: u32,
}

/// One request as sent by every attempt: the serialised body and its beta headers.
pub(super) struct Request {
    pub body: crate::api::body::Body,
    pub betas: Vec<String>,
}

/// Adds the user's `--betas` to a request's own, each once.
pub(super) fn add_betas(betas: &mut Vec<String>, users: &[String]) {
    for beta in users {
        if !betas.contains(beta) {
            betas.push(beta.clone());
        }
    }
}

/// What one model call returned: its finished blocks and why it stopped.
#[derive(Debug, Default)]
pub(super) struct CallOutcome {
    pub blocks: Vec<ContentBlock>,
    pub stop_reason: Option<StopReason>,
}

#[derive(Debug)]
pub(super) enum CallError {
    /// Nothing usable arrived (after every allowed retry).
    Api(ApiError),
    /// The stream broke after some blocks had finished; those are kept, never replayed.
    Cut {
        outcome: CallOutcome,
        error: ApiError,
    },
    /// The user aborted; finished blocks are kept.
    Aborted { outcome: CallOutcome },
    /// The API asked for a longer pause (`retry-after`) than a session waits.
    WaitTooLong {
        error: ApiError,
        wait: std::time::Duration,
    },
    /// The model stayed overloaded and a fallback model is set: switch and ask again.
    Overloaded(ApiError),
}
