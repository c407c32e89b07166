//! The stream-json wire format as serde types: every line `ouro -p --output-format stream-json`
//! prints, every line an Agent SDK writes to its stdin, and the control protocol inside both.
//! Each field name exists here once: the writer, the reader and the SDK session all go through
//! these types.
//!
//! Unknown fields are ignored on purpose when reading (a newer Claude Code adds keys every
//! release), and optional fields are left out when writing only where Claude Code leaves them
//! out too. A line whose `type` (or `subtype`) is not modelled here is not an error for a
//! reader: [`kind_of`] names it, and the reader files it under "other".

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::types::{ContentBlock, Usage};

pub use super::control::{
    ControlCancel, ControlRequest, ControlResponse, HookGroup, Initialize, PermissionResult,
    PermissionUpdate, RequestBody, ResponseBody, RuleValue, SystemPrompt,
};

/// One line of stream-json, either direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    System(System),
    Assistant(AssistantLine),
    User(UserLine),
    StreamEvent(StreamEventLine),
    Result(ResultLine),
    ControlRequest(ControlRequest),
    ControlResponse(ControlResponse),
    ControlCancelRequest(ControlCancel),
    /// An SDK keeping the pipe busy; nothing to do.
    KeepAlive {},
    /// An SDK setting variables for the commands the session runs from now on.
    UpdateEnvironmentVariables {
        #[serde(default)]
        variables: std::collections::BTreeMap<String, String>,
    },
}

/// `type: "system"` lines, told apart by `subtype`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum System {
    Init(Init),
    ApiRetry(ApiRetry),
    Status(Status),
    CompactBoundary(CompactBoundary),
    HookStarted(HookStarted),
    HookResponse(HookResponse),
    /// ouro's own: the response stream broke and the kept blocks are continued.
    StreamCut(StreamCut),
    /// ouro's own: something the user should know that is not part of the conversation.
    Notice(Notice),
    /// ouro's own: MCP servers connected or went away.
    ToolsChanged(ToolsChanged),
    /// ouro's own: auto mode's reviewer judged a call.
    AutoReview(AutoReview),
    ModelFallback(ModelFallback),
    /// ouro's own: memory's reflect step ran after a turn, with its cost.
    MemoryReflect(MemoryReflect),
}

/// The envelope fields most lines carry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Envelope {
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub uuid: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Init {
    #[serde(default)]
    pub cwd: String,
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub mcp_servers: Vec<Value>,
    #[serde(default)]
    pub model: String,
    #[serde(rename = "permissionMode", default)]
    pub permission_mode: String,
    #[serde(rename = "apiKeySource", default)]
    pub(crate) api_key_source: String,
    #[serde(default)]
    pub output_style: String,
    #[serde(default)]
    pub claude_code_version: String,
    /// ouro's own, beside the Claude Code version it follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ouro_version: Option<String>,
    #[serde(flatten)]
    pub more: Box<InitMore>,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

/// The rest of Claude Code's `system/init` keys: what ouro has, and Claude Code's empty form of
/// what it has not (a program reading a key finds it). Optional, so that a line of an older
/// CLI without them reads back as it was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct InitMore {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_directories: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slash_commands: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Vec<Value>>,
    /// Protocol extensions the CLI speaks; ouro claims none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) memory_paths: Option<serde_json::Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub analytics_disabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) product_feedback_disabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) served_by_anthropic: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_mode_state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fast_mode_disabled_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) messaging_socket_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) terminal_slash_commands: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) per_turn_effort_active: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ultrathink_available: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ultrathink_typed_raises: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) view_mode: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiRetry {
    #[serde(default)]
    pub attempt: u64,
    #[serde(default)]
    pub max_retries: u64,
    /// Claude Code writes a fraction (`510.177…`), ouro whole milliseconds.
    pub retry_delay_ms: serde_json::Number,
    #[serde(default)]
    pub error_status: Option<u16>,
    #[serde(default)]
    pub error: String,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

/// `status: "compacting"` while the conversation is summarised, `null` when done.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) compact_result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) compact_error: Option<String>,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactBoundary {
    pub compact_metadata: CompactMetadata,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactMetadata {
    /// `auto` or `manual`.
    pub trigger: String,
    #[serde(default)]
    pub pre_tokens: u64,
    /// ouro's own (Claude Code names preserved message ids instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_summarised: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_kept: Option<usize>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HookStarted {
    pub(crate) hook_id: String,
    pub hook_name: String,
    pub(crate) hook_event: String,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HookResponse {
    pub(crate) hook_id: String,
    pub hook_name: String,
    pub(crate) hook_event: String,
    /// stdout then stderr, as one text.
    #[serde(default)]
    pub output: String,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// `success` or `error`.
    #[serde(default)]
    pub outcome: String,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamCut {
    pub error: String,
    pub kept_blocks: usize,
    pub continuation: u32,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    pub message: String,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolsChanged {
    pub tools: Vec<String>,
    pub mcp_servers: Vec<Value>,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelFallback {
    pub from_model: String,
    pub model: String,
    pub reason: String,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

/// One assistant message, or with Claude Code one content block of it (blocks of one message
/// share its id).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AssistantLine {
    pub message: AssistantMessage,
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    /// Set on messages the CLI made up to report a failure (`"server_error"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    #[serde(default)]
    pub id: String,
    #[serde(rename = "type", default = "message_type")]
    pub kind: String,
    #[serde(default = "assistant_role")]
    pub role: String,
    #[serde(default)]
    pub model: String,
    /// Shared with the event it came from: a long answer is not copied to be printed.
    #[serde(default, deserialize_with = "known_blocks")]
    pub content: Vec<std::sync::Arc<ContentBlock>>,
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub stop_sequence: Option<String>,
    #[serde(default, deserialize_with = "usage_or_default")]
    pub usage: Usage,
}

fn message_type() -> String {
    "message".into()
}

fn assistant_role() -> String {
    "assistant".into()
}

fn user_role() -> String {
    "user".into()
}

/// A user message: the prompt an SDK sends on stdin, tool results, or a message the CLI added
/// itself (a compaction summary, a continuation prompt: `isSynthetic`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserLine {
    pub message: UserMessage,
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    #[serde(default)]
    pub session_id: String,
    /// Absent on what an SDK writes without an id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(rename = "isSynthetic", default, skip_serializing_if = "is_false")]
    pub(crate) is_synthetic: bool,
    #[serde(rename = "isReplay", default, skip_serializing_if = "is_false")]
    pub(crate) is_replay: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    #[serde(default = "user_role")]
    pub role: String,
    pub content: UserContent,
}

/// A user message's content: a plain text or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(#[serde(deserialize_with = "known_blocks")] Vec<ContentBlock>),
}

impl Default for UserContent {
    fn default() -> Self {
        UserContent::Blocks(Vec::new())
    }
}

impl UserLine {
    /// A prompt as an SDK writes it to stdin.
    pub fn prompt(text: &str) -> UserLine {
        UserLine {
            message: UserMessage {
                role: user_role(),
                content: UserContent::Blocks(vec![ContentBlock::text(text)]),
            },
            ..UserLine::default()
        }
    }
}

impl UserContent {
    pub(crate) fn into_blocks(self) -> Vec<ContentBlock> {
        match self {
            UserContent::Text(text) => vec![ContentBlock::text(text)],
            UserContent::Blocks(blocks) => blocks,
        }
    }
}

/// A raw API stream event (`--include-partial-messages`), passed through as it came.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamEventLine {
    pub event: Value,
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

/// The end of a turn (also the whole output of `--output-format json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultLine {
    pub subtype: String,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default)]
    pub api_error_status: Option<u16>,
    #[serde(default)]
    pub duration_ms: u64,
    #[serde(default)]
    pub(crate) duration_api_ms: u64,
    #[serde(default)]
    pub num_turns: u64,
    /// The final answer, or the error message when `is_error`.
    #[serde(default)]
    pub result: Option<String>,
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub session_id: String,
    /// Cumulative over the life of the process, not per turn.
    #[serde(default)]
    pub total_cost_usd: Option<f64>,
    #[serde(rename = "modelUsage", default)]
    pub model_usage: serde_json::Map<String, Value>,
    /// This turn's usage (summed over its requests).
    #[serde(default, deserialize_with = "optional_usage")]
    pub usage: Option<Box<ResultUsage>>,
    #[serde(default)]
    pub permission_denials: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<Value>,
    /// ouro's own: why the cost may read 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_note: Option<String>,
    /// Why the loop ended, in Claude Code's words (`completed`, `max_turns`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_reason: Option<String>,
    /// Claude Code's fast mode; ouro has none ("off").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_mode_state: Option<String>,
    /// What went wrong, on an error result (the TypeScript SDK reads it on every error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
    /// ouro's own, in `ouro brain` answers: how many tools the brain called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_tool_calls: Option<usize>,
    #[serde(default)]
    pub uuid: String,
}

/// `type`, or `type/subtype`, of a JSON line: how a reader names a line it does not model.
pub fn kind_of(line: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Kind {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        subtype: Option<String>,
    }
    let k: Kind = serde_json::from_str(line).ok()?;
    Some(match k.subtype {
        Some(sub) => format!("{}/{sub}", k.kind),
        None => k.kind,
    })
}

/// Content blocks of kinds ouro does not model (images, server tools) are skipped, not fatal.
fn known_blocks<'de, D: serde::Deserializer<'de>, B: From<ContentBlock>>(
    d: D,
) -> Result<Vec<B>, D::Error> {
    let raw = Vec::<Value>::deserialize(d)?;
    Ok(raw
        .into_iter()
        .filter_map(|b| match ContentBlock::deserialize(b) {
            Ok(block) => Some(B::from(block)),
            Err(e) => {
                tracing::debug!(error = %e, "skipping a content block ouro does not model");
                None
            }
        })
        .collect())
}

fn usage_or_default<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Usage, D::Error> {
    Ok(optional_usage(d)?.map(|u| u.counts).unwrap_or_default())
}

fn optional_usage<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Box<ResultUsage>>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(v.is_object()
        .then(|| ResultUsage::deserialize(v).ok().map(Box::new))
        .flatten())
}

/// A result's usage: the API's counts, and the keys Claude Code adds beside them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultUsage {
    #[serde(flatten)]
    pub counts: Usage,
    /// `{"web_search_requests", "web_fetch_requests"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tool_use: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<String>,
    /// The cache writes by lifetime: `{"ephemeral_1h_input_tokens", "ephemeral_5m_input_tokens"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation: Option<Value>,
    /// `{"thinking_tokens"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output_tokens_details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) inference_geo: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) iterations: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<String>,
    /// Claude Code sends it as `null` when no fallback credit applied: `Some(Null)` is that
    /// `null`, `None` an absent key (older captures).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub(crate) fallback_credit: Option<Value>,
}

/// A key that is present, even as `null`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryReflect {
    #[serde(flatten)]
    pub reflect: crate::event::ReflectInfo,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoReview {
    #[serde(flatten)]
    pub review: crate::event::ReviewInfo,
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
}
