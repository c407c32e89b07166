//! A served turn: what a front end that renders a conversation (`ouro serve`, the daemon's
//! watchers) needs beyond `ask` / `act`. The turn takes options, streams typed UI events as
//! they happen, puts permission questions to the caller and can be interrupted without losing
//! the conversation.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;

use super::ExitInfo;
use crate::api::types::Usage;
use crate::ui_event::UiEvent;

/// The options of one turn, as Chirality's `TurnOpts` names them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnOptions {
    /// `default`, `acceptEdits`, `plan`, `bypassPermissions`, …; `None`: the brain's own.
    pub permission_mode: Option<String>,
    /// The tools offered to the model; `None`: the brain's default set.
    pub tools: Option<Vec<String>>,
    /// Rules that are never allowed (`Bash`, `Bash(rm:*)`).
    pub disallowed_tools: Vec<String>,
    /// Rules allowed without asking.
    pub allowed_tools: Vec<String>,
    /// Rules that always ask, even for a call the brain would allow by itself (`Bash`: every
    /// command reaches the asker, which judges it against an agent's command patterns).
    pub ask_rules: Vec<String>,
    pub max_turns: Option<u32>,
    /// A spending limit in US dollars: the brain ends the task once it has spent this much.
    pub max_budget_usd: Option<f64>,
    pub append_system_prompt: Option<String>,
    /// The brain's own session to continue; `None` starts a new one.
    pub resume: Option<String>,
    /// Settings the turn adds over the brain's own, as a settings file's JSON object (an
    /// evaluation's `sandbox` and deny rules); `ask_rules` are added to its `permissions`.
    pub settings: Option<Value>,
}

impl TurnOptions {
    /// A foundry agent's turn: its definition's tools, rules, permission mode and prompt, in a
    /// conversation of its own.
    pub fn for_agent(
        config: &crate::agents::instance::InstanceConfig,
        prompt: &str,
    ) -> TurnOptions {
        TurnOptions {
            permission_mode: config.permission_mode.clone(),
            tools: config.tools.clone(),
            disallowed_tools: config.disallowed_tools.clone(),
            allowed_tools: config.allowed_rules.clone(),
            ask_rules: config.ask_rules(),
            max_turns: config.max_turns,
            max_budget_usd: config.max_cost_usd,
            append_system_prompt: Some(prompt.to_string()).filter(|p| !p.trim().is_empty()),
            resume: None,
            settings: None,
        }
    }
}

/// A tool call the brain wants to make that its rules do not settle.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionQuestion {
    pub tool_name: String,
    pub input: Value,
    /// Why the brain asks (its permission engine's reason), when it says.
    pub reason: Option<String>,
    /// The allow rules "allow always" adds: the brain's own suggestion, else the narrowest
    /// rule for this very call (never a whole tool that runs commands or writes files).
    pub always_rules: Vec<String>,
}

/// The narrowest allow rule for one call: the exact command, the exact file.
pub(crate) fn narrow_rule(tool_name: &str, input: &Value) -> String {
    let field = |key: &str| input.get(key).and_then(Value::as_str);
    match tool_name {
        "Bash" => match field("command") {
            Some(command) => format!("Bash({command})"),
            None => "Bash".into(),
        },
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => {
            match field("file_path").or_else(|| field("notebook_path")) {
                Some(path) => format!("{tool_name}({path})"),
                None => tool_name.into(),
            }
        }
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_narrow_rule_names_the_command_or_the_file() {
        assert_eq!(
            narrow_rule("Bash", &json!({"command": "ls -la"})),
            "Bash(ls -la)"
        );
        assert_eq!(
            narrow_rule("Write", &json!({"file_path": "/p/a.txt"})),
            "Write(/p/a.txt)"
        );
        assert_eq!(
            narrow_rule("Read", &json!({"file_path": "/p/a.txt"})),
            "Read"
        );
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum PermissionAnswer {
    /// Run it; `remember` also allows calls like it for the rest of the turn.
    Allow {
        remember: bool,
        /// Run it with this input instead of the model's (the supervisor edited the call).
        updated_input: Option<Value>,
        /// Allow these rules for the rest of the turn (in place of the brain's suggestion,
        /// which `remember` alone adds).
        rules: Vec<String>,
    },
    /// Refuse it; the model is told `message` and goes on.
    Deny { message: String },
}

impl PermissionAnswer {
    /// Run the call as the model made it; `remember`: and calls like it for the rest of the
    /// turn.
    pub fn allow(remember: bool) -> PermissionAnswer {
        PermissionAnswer::Allow {
            remember,
            updated_input: None,
            rules: Vec::new(),
        }
    }
}

/// The caller's side of a permission question; the future resolves when someone answered (or
/// the caller gave up and denied).
pub type Asker =
    Arc<dyn Fn(PermissionQuestion) -> BoxFuture<'static, PermissionAnswer> + Send + Sync>;

/// One turn to run.
pub struct TurnRequest {
    pub prompt: String,
    pub options: TurnOptions,
    /// The `sessionId` every event of the turn carries (the caller's session, not the brain's).
    pub label: String,
    /// Where the turn's events go, in order; `process:exit` is always the last.
    pub events: mpsc::UnboundedSender<UiEvent>,
    pub ask: Asker,
    /// Stops this turn when cancelled, at any moment of it (before its process has taken it
    /// too): an interrupt that belongs to this turn and to no other.
    pub stop: tokio_util::sync::CancellationToken,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnReport {
    /// The brain's own session id, to resume next time; `None` if it never said.
    pub session_id: Option<String>,
    pub exit: ExitInfo,
    /// The turn ended with an error or without a result.
    pub is_error: bool,
    /// [`super::BrainCli::interrupt`] stopped it.
    pub interrupted: bool,
    pub cost_usd: f64,
    pub usage: Usage,
    /// The result's kind as the brain named it (`success`, `error_max_budget_usd`, …); `None`
    /// when no result came.
    pub kind: Option<String>,
    /// The HTTP status of the API error that ended the turn, when one did.
    pub api_error_status: Option<u16>,
}
