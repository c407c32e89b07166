//! The events the engine emits while it works. Every front end (text, json, stream-json, REPL,
//! benchmark) is a rendering of this one stream.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::types::{ContentBlock, StopReason, Usage};

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The session is ready: emitted once before the first request of a run.
    Init(InitInfo),
    /// A request failed with a retryable error and will be sent again after `delay`.
    ApiRetry(RetryInfo),
    /// The model stayed overloaded, so the session moved to the fallback model.
    ModelFallback {
        from: String,
        to: String,
        reason: String,
    },
    /// MCP servers connected or went away, so the next request offers these tools.
    ToolsChanged {
        tools: Vec<String>,
        mcp_servers: Vec<ServerStatus>,
    },
    /// The response stream broke after some blocks had finished: those are kept and the
    /// model is asked to continue from there.
    StreamCut {
        error: String,
        kept_blocks: usize,
        /// 1-based count of continuations in this run (shared with max_tokens recovery).
        continuation: u32,
    },
    /// A request is about to be sent (turn = 1-based count of API calls in this run).
    RequestStarted {
        turn: u32,
    },
    /// One raw event of the API's stream, as received (`--include-partial-messages`).
    StreamEvent(crate::api::types::StreamEvent),
    /// Live text as it streams, for front ends that render token by token.
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        text: String,
    },
    /// One content block of an assistant message finished streaming.
    AssistantBlock {
        message_id: String,
        model: String,
        /// Shared: front ends that fan the event out do not copy a large block again.
        block: std::sync::Arc<ContentBlock>,
        usage: Usage,
    },
    /// The assistant message ended (all its blocks were emitted before).
    MessageDone {
        message_id: String,
        stop_reason: Option<StopReason>,
        usage: Usage,
    },
    /// A tool call passed validation and is about to run (or wait for its turn).
    ToolStarted {
        id: String,
        name: String,
        input: Value,
        /// The call's key argument for one-line displays (`src/main.rs`, `cargo test`).
        summary: String,
    },
    /// An event of a sub-agent, which runs inside the `Agent` call `parent_tool_use_id`.
    Child {
        parent_tool_use_id: String,
        event: Box<Event>,
    },
    /// Output a running tool produced so far (Bash streams stdout/stderr here).
    ToolProgress {
        id: String,
        chunk: String,
    },
    /// A tool call ended; `result` is the `tool_result` block the model will see.
    ToolFinished {
        id: String,
        name: String,
        result: ContentBlock,
        status: ToolStatus,
        /// What a front end may show besides the text, so none has to re-parse it.
        display: Option<ToolDisplay>,
        elapsed: Duration,
        timings: PhaseTimings,
    },
    PermissionDenied(Denial),
    /// The conversation is being summarised.
    /// A hook began (`--include-hook-events`).
    HookStarted {
        id: String,
        /// `PreToolUse:Bash`, or the event alone.
        name: String,
        event: String,
    },
    /// A hook ended: what it printed and how it exited.
    HookResponse {
        id: String,
        name: String,
        event: String,
        /// `success` or `error`.
        outcome: &'static str,
        stdout: String,
        stderr: String,
        exit_code: Option<i32>,
    },
    /// The prompt about to be answered, echoed for an Agent SDK (`--replay-user-messages`).
    PromptReplay {
        text: String,
        uuid: String,
    },
    /// Something the user should know that is not part of the conversation (checkpoints were
    /// turned off, say).
    Notice(String),
    /// Auto mode's reviewer judged a call (ouro's own event).
    AutoReview(ReviewInfo),
    /// Memory's reflect step ran after a turn (ouro's own event).
    MemoryReflect(ReflectInfo),
    CompactStarted,
    /// Summarising ended, whether or not it succeeded (a `CompactBoundary` follows success).
    CompactFinished,
    CompactBoundary(CompactInfo),
    /// A message the engine added on its own (continuation after max_tokens, compaction summary).
    SyntheticUser {
        text: String,
    },
    /// The run ended. Always the last event.
    Result(RunResult),
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    Ok,
    /// The call ran, or could not run, and its result is an error the model sees.
    Error,
    /// The user interrupted it.
    Cancelled,
    /// Permission was refused (by a rule, a hook or the user).
    Denied,
}

/// Structured facts about a finished call, for displays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolDisplay {
    /// Lines of file text a read returned.
    LinesRead(u64),
    /// The unified diff of a change, already cut to a display size.
    Diff(String),
    /// How a command ended: its exit code, or `None` when a signal or timeout ended it.
    Exit { code: Option<i32> },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InitInfo {
    pub session_id: String,
    pub cwd: String,
    pub model: String,
    pub tools: Vec<String>,
    #[serde(rename = "permissionMode")]
    pub permission_mode: String,
    pub mcp_servers: Vec<ServerStatus>,
    pub meta: InitMeta,
}

/// What else a session's `system/init` says about it, as Claude Code's does.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct InitMeta {
    pub additional_directories: Vec<String>,
    /// The sub-agents the Agent tool offers, as the Agent SDK's `supportedAgents()` lists
    /// them (`system/init` names them).
    pub agents: Vec<AgentInfo>,
    /// The output style in force (`default` when none).
    pub output_style: String,
    /// Every output style the session could pick.
    pub output_styles: Vec<String>,
    pub skills: Vec<String>,
    pub sandbox_enabled: bool,
}

/// One sub-agent as the Agent SDK's `initialize` answer lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentInfo {
    pub name: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetryInfo {
    /// What failed, as a sentence (the error's text).
    #[serde(skip)]
    pub message: String,
    pub attempt: u32,
    pub max_retries: u32,
    pub retry_delay_ms: u64,
    pub error_status: Option<u16>,
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Denial {
    pub tool_name: String,
    pub tool_use_id: String,
    pub tool_input: Value,
    #[serde(skip)]
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactInfo {
    pub trigger: CompactTrigger,
    pub pre_tokens: u64,
    pub messages_summarised: usize,
    pub messages_kept: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactTrigger {
    /// The API said the prompt was too long, or the context passed its threshold.
    Auto,
    /// The user asked (`/compact`).
    Manual,
}

/// Why a run ended; the names are Claude Code's `result.subtype` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    Success,
    ErrorMaxTurns,
    ErrorMaxBudgetUsd,
    ErrorMaxOutputTokens,
    ErrorDuringExecution,
    ErrorPromptTooLong,
    /// Interrupted (Ctrl-C, an SDK's `interrupt`): Claude Code reports it as an execution
    /// error, told apart by its `terminal_reason` (`aborted_streaming`).
    #[serde(rename = "error_during_execution")]
    ErrorAborted,
    /// The API failed past every retry (an error status, a broken connection): an execution
    /// error here; stream-json reports it as Claude Code does (see `stream_json::write`).
    #[serde(rename = "error_during_execution")]
    ErrorApi,
    /// `--json-schema`: the answer did not match, even after one retry.
    ErrorMaxStructuredOutputRetries,
}

impl ResultKind {
    pub fn is_error(self) -> bool {
        self != ResultKind::Success
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    pub kind: ResultKind,
    /// Final assistant text on success, otherwise a sentence saying what went wrong. Shared:
    /// the run returns the result it also emits, and a long answer is not copied for that.
    pub text: std::sync::Arc<String>,
    pub session_id: String,
    pub num_turns: u32,
    pub duration: Duration,
    pub api_duration: Duration,
    pub stop_reason: Option<StopReason>,
    pub usage: Usage,
    /// What this run cost.
    pub cost_usd: f64,
    /// What this process has spent on the session so far: Claude Code's `total_cost_usd`,
    /// which keeps growing across the turns of one live process.
    pub total_cost_usd: f64,
    /// Tokens and USD per model over the same span as `total_cost_usd` (Claude Code's
    /// `modelUsage`).
    pub model_usage: BTreeMap<String, (Usage, f64)>,
    /// Set when the model has no pricing entry, so the cost is reported as 0.
    pub cost_unknown: bool,
    pub api_error_status: Option<u16>,
    pub permission_denials: Vec<Denial>,
    /// `--json-schema`: the final answer, parsed and checked.
    pub structured_output: Option<Value>,
}

impl RunResult {
    /// The result of a run that could not start (no key, an unknown session, bad settings).
    pub fn not_started(text: impl Into<String>) -> RunResult {
        RunResult {
            kind: ResultKind::ErrorDuringExecution,
            text: std::sync::Arc::new(text.into()),
            session_id: String::new(),
            num_turns: 0,
            duration: Duration::ZERO,
            api_duration: Duration::ZERO,
            stop_reason: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            total_cost_usd: 0.0,
            model_usage: BTreeMap::new(),
            cost_unknown: false,
            api_error_status: None,
            permission_denials: Vec::new(),
            structured_output: None,
        }
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

/// An MCP server and how it is doing, as `system/init` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerStatus {
    pub name: String,
    /// `connected`, `pending` or `failed`, as Claude Code spells them.
    pub status: String,
    #[serde(skip)]
    pub tools: usize,
    #[serde(skip)]
    pub error: Option<String>,
}

/// One run of memory's reflect step: what it proposed, what was kept, what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReflectInfo {
    /// The turn reflected on (1 for the session's first prompt).
    pub turn: u32,
    /// `auto` or `ask`.
    pub mode: String,
    pub proposed: usize,
    pub stored: usize,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub duration_ms: u64,
    /// Why nothing was stored: the request failed, or its answer stayed malformed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One decision of auto mode's reviewer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewInfo {
    pub tool_use_id: String,
    pub tool: String,
    /// 1: the quick answer decided; 2: the reasoning did; 0: no request (the user decides).
    pub stage: u8,
    /// `allow`, `block` or `ask_user`.
    pub verdict: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}
