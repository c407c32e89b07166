//! The Ouroboros IPC v1's messages, both ways, as serde types: one JSON object a line, each
//! `{protocolVersion, messageId, timestamp, type, payload}`. `docs/ipc-v1.schema.json` is
//! generated from these types ([`schema`], `ouro agent ipc --schema`), so the published
//! schema cannot drift from what the agent reads and writes.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The version this agent writes; it reads any `1.x`.
pub const VERSION: &str = "1.0";
const MAJOR: u64 = 1;
/// How much of a line an error quotes: enough to recognise it, not a whole bundle.
const QUOTE: usize = 300;

/// The envelope every message shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// `1.0` (any `1.x` is read); another major version ends the agent with exit code 2.
    #[schemars(extend("pattern" = r"^1\.[0-9]+$"))]
    pub protocol_version: String,
    /// A fresh UUID for each message.
    #[schemars(extend("format" = "uuid"))]
    pub message_id: String,
    /// When it was sent: ISO 8601 (RFC 3339), UTC.
    #[schemars(extend("format" = "date-time"))]
    pub timestamp: String,
}

impl Header {
    fn fresh() -> Header {
        Header {
            protocol_version: VERSION.into(),
            message_id: uuid::Uuid::new_v4().to_string(),
            timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        }
    }
}

/// A message from the supervisor to the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToAgentMessage {
    #[serde(flatten)]
    pub header: Header,
    #[serde(flatten)]
    pub body: ToAgent,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", content = "payload")]
pub enum ToAgent {
    /// Starts the one task this agent process runs.
    #[serde(rename = "task:initialize")]
    Initialize(Initialize),
    /// Answers the `permission:request` of the same `requestId`.
    #[serde(rename = "permission:response")]
    PermissionResponse(PermissionResponse),
    /// Stops the task: it ends with a `task:result` of status `failure`.
    #[serde(rename = "task:terminate")]
    Terminate(Terminate),
}

/// Every `type` a supervisor may send, for an error that names them.
const TO_AGENT_TYPES: [&str; 3] = ["task:initialize", "permission:response", "task:terminate"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Initialize {
    /// An agent definition (Markdown with front matter) or an agent instance's `config.json`.
    pub agent_config_path: PathBuf,
    /// Replaces the definition's prompt (its Markdown body, or the instance's
    /// `system_prompt.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt_path: Option<PathBuf>,
    /// A cats bundle: its files are the tree the agent works in.
    pub initial_context_artifact_path: PathBuf,
    /// What the agent is to do.
    pub task: String,
    /// Accepted; ignored (with a warning) until ouro has memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knowledge_graph_path: Option<PathBuf>,
    /// ouro's addition: work in this directory itself, instead of a fresh tree made from the
    /// context bundle (which is then not written anywhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Behavior {
    Allow,
    Deny,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionResponse {
    pub request_id: String,
    pub behavior: Behavior,
    /// The input the call runs with instead of the model's (a Bash command the agent's
    /// `denied_commands` refuse is still refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// Rules allowed for the rest of the task: text such as `Bash(npm test:*)`, or an object
    /// `{toolName, ruleContent?}` (or `{rules: [...]}` of them, as the Agent SDK's permission
    /// updates carry). Entries that name no rule make the call's own suggested rule the one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_rules: Vec<NewRule>,
    /// ouro's addition: what the model is told when the call is denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum NewRule {
    Text(String),
    Object(Map<String, Value>),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Terminate {
    /// Why, for the result's summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A message from the agent to the supervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToSupervisorMessage {
    #[serde(flatten)]
    pub header: Header,
    #[serde(flatten)]
    pub body: ToSupervisor,
}

impl ToSupervisorMessage {
    /// `body` with a fresh id and the time now.
    pub fn new(body: ToSupervisor) -> ToSupervisorMessage {
        ToSupervisorMessage {
            header: Header::fresh(),
            body,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", content = "payload")]
pub enum ToSupervisor {
    #[serde(rename = "log")]
    Log(Log),
    /// A tool call waits for the matching `permission:response`.
    #[serde(rename = "permission:request")]
    PermissionRequest(PermissionRequest),
    /// The task's end; the process exits after it (0 on success, 1 on failure).
    #[serde(rename = "task:result")]
    TaskResult(TaskResult),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Log {
    pub level: Level,
    pub message: String,
    /// The brain's UI event this line reports (`tool:start`, `chat:complete`, …), as
    /// `ouro serve` streams it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Value>,
}

impl ToSupervisor {
    /// A `log` message without an event.
    pub fn log(level: Level, message: impl Into<String>) -> ToSupervisor {
        ToSupervisor::Log(Log {
            level,
            message: message.into(),
            event: None,
        })
    }
}

/// `debug` carries answer text as it streams (`chat:delta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    /// Fresh for each request; the answer names it.
    pub request_id: String,
    pub tool_name: String,
    pub input: Value,
    pub permission_result: AskResult,
    /// ouro's addition: the rules a response with `newRules` makes the brain add (its own
    /// suggestion, else the narrowest rule for this very call).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggested_rules: Vec<String>,
}

/// What the agent's own rules made of the call: they leave it to the supervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AskResult {
    pub behavior: Ask,
    /// Why it asks, for a person.
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Ask {
    Ask,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Success,
    Failure,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskResult {
    pub status: Status,
    /// A dogs bundle (v1 front matter) of every file the agent changed, added or deleted in
    /// its tree: applied to the starting tree (`ouro dogs`), it gives the agent's tree. Written
    /// on failure too (what changed so far); `null` only when the task ended before it had a
    /// tree, or the bundle could not be written (the summary says why).
    // Always present, `null` or not (`required` alone would drop the `null`).
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub output_artifact_path: Option<PathBuf>,
    /// The agent's last answer, or why the task failed.
    pub summary: String,
    /// ouro's addition: the run's id (the folder `<ouro home>/agents/ipc/<runId>/` holds its
    /// tree, its brain's state and the bundle); `null` when the task ended before it began.
    // Always present, `null` or not (`required` alone would drop the `null`).
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub run_id: Option<String>,
    /// ouro's addition: how many files the bundle changes.
    pub changed: usize,
    /// ouro's addition.
    pub cost_usd: f64,
    /// ouro's addition.
    pub duration_ms: u64,
}

/// Why a line is not a message this agent acts on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReadError {
    /// Fatal: the supervisor speaks another protocol.
    #[error(
        "this agent speaks Ouroboros IPC {VERSION}, and this message is version {found}: another major version cannot be read"
    )]
    Version { found: String },
    #[error("not a JSON object ({reason}): {line}")]
    NotJson { reason: String, line: String },
    #[error("unknown message type {kind} (a supervisor sends {}): {line}", TO_AGENT_TYPES.join(", "))]
    UnknownType { kind: String, line: String },
    #[error("{what}: {line}")]
    Invalid { what: String, line: String },
}

impl ReadError {
    /// Whether the agent must stop (exit 2) rather than go on.
    pub fn is_fatal(&self) -> bool {
        matches!(self, ReadError::Version { .. })
    }
}

/// Reads one line from the supervisor. The version is checked before anything else, so a
/// message of another major version is refused as such whatever its type.
pub fn read(line: &str) -> Result<ToAgentMessage, ReadError> {
    let quoted = || crate::text::truncate(line.trim(), QUOTE);
    let mut value: Value = serde_json::from_str(line).map_err(|e| ReadError::NotJson {
        reason: e.to_string(),
        line: quoted(),
    })?;
    let Some(object) = value.as_object_mut() else {
        return Err(ReadError::NotJson {
            reason: "a JSON value, but not an object".into(),
            line: quoted(),
        });
    };
    let found = match object.get("protocolVersion") {
        Some(Value::String(v)) => v.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => {
            return Err(ReadError::Invalid {
                what: format!("no protocolVersion (this agent speaks {VERSION})"),
                line: quoted(),
            });
        }
    };
    match found.split('.').next().map(str::parse::<u64>) {
        Some(Ok(MAJOR)) => {}
        Some(Ok(_)) => return Err(ReadError::Version { found }),
        _ => {
            return Err(ReadError::Invalid {
                what: format!("protocolVersion {found:?} is not a version like \"{VERSION}\""),
                line: quoted(),
            });
        }
    }
    let kind = match object.get("type") {
        Some(Value::String(kind)) if TO_AGENT_TYPES.contains(&kind.as_str()) => kind.clone(),
        Some(other) => {
            return Err(ReadError::UnknownType {
                kind: other.to_string(),
                line: quoted(),
            });
        }
        None => {
            return Err(ReadError::UnknownType {
                kind: "(none)".into(),
                line: quoted(),
            });
        }
    };
    // `task:terminate` needs nothing: its payload may be left out.
    if object.get("payload").is_none_or(Value::is_null) {
        object.insert("payload".into(), json!({}));
    }
    serde_json::from_value(value).map_err(|e| ReadError::Invalid {
        what: format!("a {kind} message that does not fit the protocol ({e})"),
        line: quoted(),
    })
}

/// The JSON Schema of every message, both ways (draft 2020-12).
pub fn schema() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let to_agent = generator.subschema_for::<ToAgentMessage>();
    let to_supervisor = generator.subschema_for::<ToSupervisorMessage>();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Ouroboros IPC v1",
        "description": "One message of the Ouroboros IPC v1: newline-delimited JSON on the agent's stdin (supervisor to agent) and stdout (agent to supervisor), as `ouro agent ipc` speaks it.",
        "oneOf": [to_agent, to_supervisor],
        "$defs": generator.take_definitions(true),
    })
}

#[cfg(test)]
mod tests;
