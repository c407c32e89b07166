//! Brains: one handle over an agent that can answer questions (`ask`, read-only tools) or do
//! work (`act`, full tools), whatever actually runs it. A slug picks the brain
//! (`claude@anthropic/claude/opus/v4.5`); the handle then offers the same four parts for every
//! supplier:
//!
//! - dispatch: `ask` / `act` send one prompt and return the answer with per-call metrics;
//! - memory: the series, the durable conversation id plus its episodes, which survives kill and
//!   reboot so the next boot resumes the same conversation;
//! - executor: `instance` / `boot` / `kill` of the process behind the brain;
//! - terminal: `write` / `resize` and subscriptions to output bytes and process exits.
//!
//! [`BrainCli`] is object-safe (its async methods return boxed futures), so callers hold a
//! `Box<dyn BrainCli>` from [`open`] and suppliers are added without touching them. Both
//! suppliers run their brain as a child process speaking Claude Code's stream-json protocol
//! ([`child::ChildBrain`]): [`claude::ClaudeBrain`] runs the `claude` binary, [`ouro::OuroBrain`]
//! runs `ouro` itself.

pub mod catalogue;
pub mod child;
pub mod claude;
mod config;
mod error;
pub mod granted;
pub mod memory;
pub mod ouro;
mod output;
pub mod parked;
pub mod slug;
pub mod table;
pub mod terminal;
pub mod turn;
pub mod warm;

use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use config::BrainConfig;
pub use error::BrainError;
pub use memory::{Episode, Series};
pub use slug::{Binary, BrainSpec, SlugError, list_slugs};
pub use terminal::{DataCallback, ExitCallback, SubscriptionId, TermSize};
pub use turn::{Asker, PermissionAnswer, PermissionQuestion, TurnOptions, TurnReport, TurnRequest};

/// A brain for `slug` on the supplier its binary names: `claude@…` drives the `claude` CLI,
/// `ouro@…` ouro's own engine. An unknown slug is an error that lists the valid ones.
pub fn open(slug: &str, config: BrainConfig) -> Result<Box<dyn BrainCli>, BrainError> {
    let spec = slug::parse(slug)?;
    Ok(match spec.binary {
        Binary::Claude => Box::new(claude::ClaudeBrain::from_spec(spec, config)?),
        Binary::Ouro => Box::new(ouro::OuroBrain::from_spec(spec, config)?),
    })
}

/// What a boxed brain future resolves to.
pub(crate) type BrainFuture<'a, T> = BoxFuture<'a, Result<T, BrainError>>;

/// Which tool set a dispatch runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// Read-only tools (Glob, Grep, Read).
    Ask,
    /// Read-only tools plus Bash, Edit and Write.
    Act,
}

/// How the process behind a brain runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Headless: prompts go in and answers come out through `ask` / `act`.
    Dispatch,
    /// A person drives it through a terminal (`write`, `resize`, data subscription).
    Interact,
}

/// The live process behind a brain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instance {
    pub pid: u32,
    pub mode: Mode,
}

/// How a process ended: an exit code, or the signal that killed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl std::fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (_, Some(sig)) => write!(f, "killed by signal {sig}"),
            (Some(code), None) => write!(f, "exit code {code}"),
            (None, None) => write!(f, "unknown exit status"),
        }
    }
}

/// What one `ask` / `act` call used. Never cumulative: two calls report two separate amounts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// From the start of the call's turn (including any tool-set restart) to its result.
    pub wall_time: Duration,
    pub cost_usd: f64,
}

/// One tool call the brain made while answering, with its result once it arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
    pub result: Option<String>,
    pub is_error: bool,
}

/// The answer to one `ask` / `act`.
#[derive(Debug, Clone, PartialEq)]
pub struct BrainOutput {
    pub text: String,
    pub metrics: Metrics,
    pub tool_calls: Vec<ToolCall>,
    /// The series after this call (also what [`BrainCli::series`] now returns).
    pub series: Series,
}

/// One handle over a brain, whatever supplier runs it: prompts in, answers and events out. Its
/// process and the bytes to and from it are the [`BrainTerminal`] side.
///
/// Guards: `ask` / `act` with no live process, or while the process runs in interact mode,
/// return an error.
pub trait BrainCli: BrainTerminal {
    /// The slug this brain was made from.
    fn slug(&self) -> &str;

    /// Sends `prompt` with the read-only tool set and waits for the answer.
    fn ask<'a>(&'a self, prompt: &'a str) -> BrainFuture<'a, BrainOutput>;

    /// Sends `prompt` with the full tool set and waits for the answer.
    fn act<'a>(&'a self, prompt: &'a str) -> BrainFuture<'a, BrainOutput>;

    /// Runs one served turn: `request.events` gets its UI events as they happen (the last is
    /// always `process:exit`), undecided tool calls go to `request.ask`. Turns of one brain
    /// run one at a time, on a process kept warm between them while the options need the same
    /// start-up flags ([`BrainCli::release`] ends it). A turn whose brain session cannot be
    /// resumed starts a new one (after a `session:error` saying so).
    fn turn(&self, request: TurnRequest) -> BrainFuture<'_, TurnReport>;

    /// Starts the process a served turn with `options` would run on, so that turn finds it
    /// warm; nothing when one is warm or a turn runs. A conversation to resume is left to its
    /// turn, which must see whether it resumed.
    fn prepare(&self, options: TurnOptions) -> BrainFuture<'_, ()>;

    /// Stops the running served turn, keeping its conversation valid for the next one;
    /// `false` when no turn runs.
    fn interrupt(&self) -> BrainFuture<'_, bool>;

    /// The durable conversation: `None` until the first dispatch.
    fn series(&self) -> Option<Series>;

    /// Ends the process kept warm between served turns, unless a turn runs on it (`false`
    /// then, and when none was warm). The next turn starts a new one that resumes the
    /// conversation.
    fn release(&self) -> BrainFuture<'_, bool>;

    /// Stops the live process (SIGTERM, then SIGKILL after a grace period); a no-op when
    /// nothing runs. Returns once the process is gone and its exit callbacks have run.
    fn kill(&self) -> BrainFuture<'_, ()>;
}

/// The process behind a brain and the bytes to and from it: what a terminal front end (the
/// daemon's `talk`) drives.
///
/// `write` with no live process returns an error. Subscriptions are registered once on the
/// handle and keep firing across kills and boots. Data callbacks get raw output bytes (stdout
/// lines in dispatch mode, PTY bytes in interact mode); exit callbacks fire exactly once per
/// process, whether it ended on its own, was killed from outside, or was stopped by
/// [`BrainCli::kill`] or a new boot. Callbacks run on the handle's reader threads and tasks, so
/// they should return quickly.
pub trait BrainTerminal: Send + Sync {
    /// The live process, if one runs.
    fn instance(&self) -> Option<Instance>;

    /// Stops any live process and starts a new one in `mode`, resuming the series if any.
    fn boot(&self, mode: Mode) -> BrainFuture<'_, Instance>;

    /// Sends raw bytes to the process: its stdin in dispatch mode, its terminal in interact mode.
    fn write<'a>(&'a self, data: &'a [u8]) -> BrainFuture<'a, ()>;

    /// Sets the terminal size; applied now in interact mode and kept for later boots.
    fn resize(&self, size: TermSize) -> Result<(), BrainError>;

    fn on_data(&self, callback: DataCallback) -> SubscriptionId;

    fn on_exit(&self, callback: ExitCallback) -> SubscriptionId;

    /// Removes a data or exit subscription; `false` if it was not registered.
    fn unsubscribe(&self, id: SubscriptionId) -> bool;
}
