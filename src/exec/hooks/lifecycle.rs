//! The session's events besides tool calls, with Claude Code's payloads and answers:
//! UserPromptSubmit (may block the prompt or add context), Stop and SubagentStop (may send
//! the model back to work), SessionStart (may add context), SessionEnd, PreCompact and
//! Notification (told only), and PermissionRequest (may answer a permission question).

use std::path::Path;

use serde_json::{Value, json};

use super::{Hooks, describe_exit, matching, stderr_suffix};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    UserPromptSubmit,
    Stop,
    SubagentStop,
    SessionStart,
    SessionEnd,
    PreCompact,
    Notification,
    PermissionRequest,
}

impl HookEvent {
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
            HookEvent::PermissionRequest => "PermissionRequest",
        }
    }

    /// Whether exit code 2 (or `"decision": "block"`) means something for this event.
    fn can_block(self) -> bool {
        matches!(
            self,
            HookEvent::UserPromptSubmit | HookEvent::Stop | HookEvent::SubagentStop
        )
    }

    /// Whether plain stdout of a successful hook is context for the model.
    fn stdout_is_context(self) -> bool {
        matches!(self, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
    }
}

/// A PermissionRequest hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionAnswer {
    Allow,
    /// Allow with this input in place of the model's.
    AllowChanged(Value),
    Deny {
        message: String,
    },
}

/// What the hooks of one event said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fired {
    /// Blocked (the prompt), or sent back to work (Stop), with the reason.
    pub blocked: Option<String>,
    /// Text for the model.
    pub context: Vec<String>,
    /// Text for the user: failures and `systemMessage`s.
    pub messages: Vec<String>,
    pub permission: Option<PermissionAnswer>,
}

impl Hooks {
    /// Whether any hook is configured for `event`, so callers skip building its payload.
    pub fn has(&self, event: HookEvent) -> bool {
        !self.groups(event.name()).is_empty()
    }

    /// Runs the hooks of `event` whose matcher takes `subject` (a tool name, a session start's
    /// source, a compaction's trigger), in order, with `fields` added to the common payload.
    /// The first block ends the chain.
    pub async fn fire(
        &self,
        event: HookEvent,
        subject: &str,
        fields: Value,
        cwd: &Path,
        project_root: &Path,
    ) -> Fired {
        let mut fired = Fired::default();
        let groups = self.groups(event.name());
        if groups.is_empty() {
            return fired;
        }
        let mut payload = json!({
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": cwd,
            "hook_event_name": event.name(),
        });
        if let (Value::Object(all), Value::Object(more)) = (&mut payload, fields) {
            all.extend(more);
        }
        for hook in matching(&groups, subject) {
            let run = match self.run(hook, &payload, project_root).await {
                Ok(run) => run,
                Err(e) => {
                    fired.messages.push(format!(
                        "The {} hook `{}` {e}.",
                        event.name(),
                        hook.command
                    ));
                    continue;
                }
            };
            match run.code {
                Some(0) => {}
                Some(2) if event == HookEvent::PermissionRequest => {
                    let message = run.stderr.trim();
                    fired.permission = Some(PermissionAnswer::Deny {
                        message: if message.is_empty() {
                            format!("The PermissionRequest hook `{}` denied it.", hook.command)
                        } else {
                            message.to_string()
                        },
                    });
                    return fired;
                }
                Some(2) if event.can_block() => {
                    let reason = run.stderr.trim();
                    fired.blocked = Some(if reason.is_empty() {
                        format!("The {} hook `{}` blocked it.", event.name(), hook.command)
                    } else {
                        reason.to_string()
                    });
                    return fired;
                }
                code => {
                    fired.messages.push(format!(
                        "The {} hook `{}` failed ({}){}.",
                        event.name(),
                        hook.command,
                        describe_exit(code),
                        stderr_suffix(&run.stderr)
                    ));
                    continue;
                }
            }
            let stdout = run.stdout.trim();
            let Some(reply) = stdout
                .starts_with('{')
                .then(|| serde_json::from_str::<Value>(stdout).ok())
                .flatten()
            else {
                if event.stdout_is_context() && !stdout.is_empty() {
                    fired.context.push(stdout.to_string());
                }
                continue;
            };
            if let Some(message) = reply["systemMessage"].as_str() {
                fired.messages.push(message.to_string());
            }
            let specific = &reply["hookSpecificOutput"];
            if let Some(context) = specific["additionalContext"].as_str() {
                fired.context.push(context.to_string());
            }
            if event == HookEvent::PermissionRequest {
                let decision = &specific["decision"];
                fired.permission = match decision["behavior"].as_str() {
                    Some("allow") => match decision.get("updatedInput") {
                        Some(input) if input.is_object() => {
                            Some(PermissionAnswer::AllowChanged(input.clone()))
                        }
                        _ => Some(PermissionAnswer::Allow),
                    },
                    Some("deny") => Some(PermissionAnswer::Deny {
                        message: decision["message"]
                            .as_str()
                            .unwrap_or("A PermissionRequest hook denied the call.")
                            .to_string(),
                    }),
                    _ => fired.permission.take(),
                };
                if matches!(fired.permission, Some(PermissionAnswer::Deny { .. })) {
                    return fired;
                }
            }
            // `"continue": false` stops everything: a prompt is blocked, but a model that is
            // done stays done, whatever `decision` says.
            let stopped = reply["continue"] == Value::Bool(false);
            if stopped && event != HookEvent::UserPromptSubmit {
                return fired;
            }
            if event.can_block() && (reply["decision"] == "block" || stopped) {
                let reason = reply["reason"]
                    .as_str()
                    .or(reply["stopReason"].as_str())
                    .unwrap_or("")
                    .to_string();
                fired.blocked = Some(if reason.is_empty() {
                    format!("The {} hook `{}` blocked it.", event.name(), hook.command)
                } else {
                    reason
                });
                return fired;
            }
        }
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{HookCommand, HookMatcher, HookSettings};

    fn hooks_for(event: HookEvent, command: &str) -> Hooks {
        let group = vec![HookMatcher {
            matcher: String::new(),
            hooks: vec![HookCommand {
                kind: "command".into(),
                command: command.into(),
                timeout: None,
            }],
        }];
        let mut settings = HookSettings::default();
        match event {
            HookEvent::Stop => settings.stop = group,
            HookEvent::PermissionRequest => settings.permission_request = group,
            _ => settings.user_prompt_submit = group,
        }
        Hooks::new(&settings, "s")
    }

    async fn fire(event: HookEvent, command: &str) -> Fired {
        let dir = std::env::temp_dir();
        hooks_for(event, command)
            .fire(event, "Bash", json!({}), &dir, &dir)
            .await
    }

    #[tokio::test]
    async fn answers_mean_what_they_mean_in_claude_code() {
        let block = r#"echo '{"decision":"block","reason":"more"}'"#;
        assert_eq!(
            fire(HookEvent::Stop, block).await.blocked.as_deref(),
            Some("more")
        );
        let halt = r#"echo '{"continue":false,"stopReason":"enough","decision":"block"}'"#;
        assert_eq!(
            fire(HookEvent::Stop, halt).await.blocked,
            None,
            "a stop stays a stop"
        );
        let prompt = fire(HookEvent::UserPromptSubmit, halt).await;
        assert_eq!(prompt.blocked.as_deref(), Some("enough"));
        let refused = fire(HookEvent::PermissionRequest, "echo nope >&2; exit 2").await;
        assert_eq!(
            refused.permission,
            Some(PermissionAnswer::Deny {
                message: "nope".into()
            })
        );
        let changed = r#"echo '{"hookSpecificOutput":{"decision":{"behavior":"allow","updatedInput":{"command":"ls"}}}}'"#;
        let changed = fire(HookEvent::PermissionRequest, changed).await;
        assert_eq!(
            changed.permission,
            Some(PermissionAnswer::AllowChanged(json!({"command": "ls"})))
        );
        let allowed = r#"echo '{"hookSpecificOutput":{"decision":{"behavior":"allow"}}}'"#;
        assert_eq!(
            fire(HookEvent::PermissionRequest, allowed).await.permission,
            Some(PermissionAnswer::Allow)
        );
    }
}
