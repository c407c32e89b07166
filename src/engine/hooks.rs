//! The session's lifecycle hooks, as the query loop fires them: SessionStart before the
//! first prompt, UserPromptSubmit for each prompt, Stop (SubagentStop in a sub-agent) when
//! the model is done, PreCompact before a summary, SessionEnd when the session closes.

use serde_json::{Value, json};

use super::Engine;
use super::run::RunState;
use crate::exec::hooks::{Fired, HookEvent};

/// Stop hooks may send the model back to work this many times per prompt; a hook that
/// never lets go cannot keep a session running forever.
const MAX_STOP_ROUNDS: u32 = 8;

/// What the hooks made of a prompt.
pub(super) enum PromptVerdict {
    /// Send it, with this context from the hooks.
    Send(Vec<String>),
    /// A UserPromptSubmit hook blocked it, for this reason.
    Blocked(String),
    /// It cannot be sent: the conversation is not this process's to write now.
    Refused(String),
}

impl Engine {
    async fn fire(&self, event: HookEvent, subject: &str, fields: Value) -> Fired {
        let hooks = self.executor.hooks();
        if !hooks.has(event) {
            return Fired::default();
        }
        let root = self.executor.context().project_root.clone();
        let fired = hooks
            .fire(event, subject, fields, &self.config.cwd, &root)
            .await;
        for message in &fired.messages {
            tracing::warn!("{message}");
        }
        fired
    }

    /// SessionStart on the first prompt of this engine, then UserPromptSubmit. Sub-agents
    /// fire neither.
    pub(super) async fn prompt_hooks(&self, prompt: &str, first: bool) -> PromptVerdict {
        if self.config.subagent {
            return PromptVerdict::Send(Vec::new());
        }
        let mut context = Vec::new();
        if first {
            let source = if self.history.len() > 0 {
                "resume"
            } else {
                "startup"
            };
            let fired = self
                .fire(HookEvent::SessionStart, source, json!({"source": source}))
                .await;
            context.extend(fired.context);
        }
        let fields = json!({
            "prompt": prompt,
            "permission_mode": self.executor.policy().mode().to_string(),
        });
        let fired = self.fire(HookEvent::UserPromptSubmit, "", fields).await;
        if let Some(reason) = fired.blocked {
            return PromptVerdict::Blocked(reason);
        }
        context.extend(fired.context);
        PromptVerdict::Send(context)
    }

    /// Stop (SubagentStop): `Some(reason)` when a hook sends the model back to work.
    pub(super) async fn stop_hooks(&self, run: &mut RunState) -> Option<String> {
        let event = if self.config.subagent {
            HookEvent::SubagentStop
        } else {
            HookEvent::Stop
        };
        if run.stop_hook_rounds >= MAX_STOP_ROUNDS {
            return None;
        }
        let fields = json!({"stop_hook_active": run.stop_hook_rounds > 0});
        let reason = self.fire(event, "", fields).await.blocked?;
        run.stop_hook_rounds += 1;
        Some(reason)
    }

    pub(super) async fn pre_compact_hooks(&self, manual: bool, focus: Option<&str>) {
        let trigger = if manual { "manual" } else { "auto" };
        let fields = json!({"trigger": trigger, "custom_instructions": focus.unwrap_or("")});
        self.fire(HookEvent::PreCompact, trigger, fields).await;
    }

    /// SessionEnd, when the front end closes the session: `reason` is Claude Code's
    /// (`clear`, `logout`, `prompt_input_exit`, `other`).
    pub async fn end_session(&self, reason: &str) {
        self.fire(HookEvent::SessionEnd, reason, json!({"reason": reason}))
            .await;
    }
}
