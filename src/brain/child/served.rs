//! [`crate::brain::BrainCli::turn`] for a stream-json CLI: stream-json both ways plus the
//! control protocol, as the Agent SDKs drive Claude Code. The CLI puts each undecided tool call
//! to the caller (`--permission-prompt-tool stdio`), and an `interrupt` control request ends
//! the turn with the conversation intact. The process stays warm for the session's next turn;
//! a turn's `process:exit` carries the status a process ending with that turn would have had
//! (1 after an error result), or the real one when the process did end.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::dispatch::{DispatchProc, TurnEnd};
use crate::api::types::{ContentBlock, Usage};
use crate::brain::turn::{PermissionAnswer, PermissionQuestion, TurnRequest, narrow_rule};
use crate::brain::{BrainError, ExitInfo, TurnReport};
use crate::stream_json::read::Line;
use crate::stream_json::wire;
use crate::stream_json::wire::{
    ControlRequest, ControlResponse, PermissionResult, PermissionUpdate, RequestBody, RuleValue,
};
use crate::sys::sync::lock;
use crate::ui_event::UiEvent;
use tokio::task::AbortHandle;

/// How a served turn ended.
pub(crate) enum Ended {
    Report(TurnReport),
    /// It stopped before saying anything, asked to resume a session: most likely the session
    /// is gone. The text is what it said about it.
    ResumeFailed {
        why: String,
        exit: ExitInfo,
    },
}

impl DispatchProc {
    /// Runs `request` on this process; `price` prices usage when the CLI reports no cost;
    /// `named` hears the brain's session id as soon as the brain says it, so a crash before
    /// the turn ends still resumes that conversation. `resumed`: this is the first turn of a
    /// process started with `--resume`.
    pub(crate) async fn served_turn(
        self: &Arc<Self>,
        request: &TurnRequest,
        resumed: bool,
        grace: Duration,
        price: impl Fn(&Usage) -> f64,
        named: &(dyn Fn(&str) + Sync),
    ) -> Result<Ended, BrainError> {
        let label = request.label.clone();
        let emit = |event: UiEvent| {
            // The caller stopped listening: the turn still runs to its end.
            let _ = request.events.send(event);
        };
        self.reusable.store(false, Ordering::SeqCst);
        let mut started = false;
        let mut asking = Asking::default();
        let end = {
            let mut on_line = |line: &Line| match line {
                Line::ControlRequest(asked) => asking.0.push(self.answer(asked.clone(), request)),
                line => {
                    if let Line::Init(init) = line {
                        started = true;
                        named(&init.session_id);
                    }
                    for event in ui_events(line, &label) {
                        emit(event);
                    }
                }
            };
            self.exchange(&request.prompt, &mut on_line).await?
        };
        let interrupted = self.interrupted.load(Ordering::Relaxed);
        let outcome = match end {
            TurnEnd::Died { exit, session_id } => {
                let stderr = self.stderr_tail().await;
                if !started && resumed && !interrupted {
                    return Ok(Ended::ResumeFailed { why: stderr, exit });
                }
                let why = if interrupted {
                    "the turn was interrupted before the brain answered".to_string()
                } else {
                    ended_without_result(exit, &stderr)
                };
                emit(UiEvent::SessionError {
                    session_id: label.clone(),
                    error: why,
                });
                emit(exit_event(&label, exit));
                return Ok(Ended::Report(TurnReport {
                    session_id,
                    exit,
                    is_error: true,
                    interrupted,
                    cost_usd: 0.0,
                    usage: Usage::default(),
                    kind: None,
                    api_error_status: None,
                }));
            }
            TurnEnd::Done(outcome) => outcome,
        };
        // A CLI that cannot resume says so in an error result before any init.
        if outcome.is_error && !started && resumed && !interrupted {
            self.close_stdin().await;
            let exit = match tokio::time::timeout(grace, self.core.wait()).await {
                Ok(exit) => exit,
                Err(_) => self.core.terminate(grace).await?,
            };
            return Ok(Ended::ResumeFailed {
                why: outcome.text,
                exit,
            });
        }
        let usage = outcome.usage;
        let cost_usd = self.turn_cost(outcome.total_cost_usd, || price(&usage));
        if outcome.is_error && !interrupted {
            emit(UiEvent::SessionError {
                session_id: label.clone(),
                error: if outcome.text.is_empty() {
                    format!("the turn failed ({})", outcome.subtype)
                } else {
                    outcome.text.clone()
                },
            });
        }
        emit(UiEvent::SessionComplete {
            session_id: label.clone(),
            cost_usd,
            usage,
        });
        let exit = ExitInfo {
            code: Some(i32::from(outcome.is_error)),
            signal: None,
        };
        emit(exit_event(&label, exit));
        self.reusable.store(true, Ordering::SeqCst);
        Ok(Ended::Report(TurnReport {
            session_id: outcome.session_id,
            exit,
            is_error: outcome.is_error,
            interrupted,
            cost_usd,
            usage,
            kind: Some(outcome.subtype),
            api_error_status: outcome.api_error_status,
        }))
    }

    /// Asks the CLI to stop the turn; it answers with the turn's result.
    pub(crate) async fn interrupt(&self) -> Result<(), BrainError> {
        self.interrupted.store(true, Ordering::Relaxed);
        let now = {
            let mut prompted = lock(&self.prompted);
            if !prompted.0 {
                prompted.1 = true;
            }
            prompted.0
        };
        if now {
            self.send_interrupt().await?;
        }
        Ok(())
    }

    /// The control request that stops the CLI's turn.
    pub(super) async fn send_interrupt(&self) -> Result<(), BrainError> {
        let id = format!("interrupt-{}", uuid::Uuid::new_v4().simple());
        let request = ControlRequest::new(id, &RequestBody::Interrupt {});
        self.send(&wire::Line::ControlRequest(request)).await
    }

    async fn send(&self, line: &wire::Line) -> Result<(), BrainError> {
        let mut text = serde_json::to_string(line).map_err(|e| BrainError::Io {
            action: "write to",
            source: std::io::Error::other(e),
        })?;
        text.push('\n');
        self.write(text.as_bytes()).await
    }

    /// Answers a control request from the CLI: permission questions go to the caller (without
    /// holding up the turn's other events), anything else is declined.
    fn answer(self: &Arc<Self>, asked: ControlRequest, request: &TurnRequest) -> AbortHandle {
        let proc = self.clone();
        let id = asked.request_id.clone();
        let body = asked.body();
        let ask = request.ask.clone();
        tokio::spawn(async move {
            let outcome = match body {
                Ok(RequestBody::CanUseTool {
                    tool_name,
                    input,
                    permission_suggestions,
                    decision_reason,
                    ..
                }) => {
                    let rules = remembered(&tool_name, &input, permission_suggestions);
                    let question = PermissionQuestion {
                        tool_name: tool_name.clone(),
                        input: input.clone(),
                        reason: decision_reason,
                        always_rules: rules.iter().flat_map(rule_texts).collect(),
                    };
                    let result = match ask(question).await {
                        PermissionAnswer::Allow {
                            remember,
                            updated_input,
                            rules: given,
                        } => PermissionResult::Allow {
                            updated_input: Some(updated_input.unwrap_or(input)),
                            updated_permissions: if !given.is_empty() {
                                vec![session_rules(&given)]
                            } else if remember {
                                rules
                            } else {
                                Vec::new()
                            },
                        },
                        PermissionAnswer::Deny { message } => PermissionResult::Deny {
                            message: Some(message),
                            interrupt: false,
                        },
                    };
                    serde_json::to_value(result).map_err(|e| e.to_string())
                }
                Ok(_) => Err(format!(
                    "a served turn does not answer the control request \"{}\"",
                    asked.subtype()
                )),
                Err(e) => Err(e),
            };
            let response = wire::Line::ControlResponse(ControlResponse::to(id, outcome));
            if let Err(e) = proc.send(&response).await {
                tracing::debug!(error = %e, "a permission answer found the brain gone");
            }
        })
        .abort_handle()
    }
}

/// The permission questions a turn asked. However the turn ends (its result, an interrupt, a
/// stop that drops it), a question still open is withdrawn: whoever would answer it no longer
/// sees it, and an answer given later cannot reach another turn.
#[derive(Default)]
struct Asking(Vec<AbortHandle>);

impl Drop for Asking {
    fn drop(&mut self) {
        for question in &self.0 {
            question.abort();
        }
    }
}

/// What "allow always" adds: the CLI's own suggestion, else the narrowest rule for this call
/// as a session rule.
fn remembered(
    tool_name: &str,
    input: &serde_json::Value,
    suggestions: Vec<PermissionUpdate>,
) -> Vec<PermissionUpdate> {
    let suggested: Vec<PermissionUpdate> = suggestions
        .into_iter()
        .filter(|u| u.kind == "addRules" && !u.rules.is_empty())
        .collect();
    // Whoever answered (a GUI, an agent's supervisor) granted this session, not the project's
    // settings: the CLI's suggestions are kept as session rules.
    if !suggested.is_empty() {
        return suggested
            .into_iter()
            .map(|u| PermissionUpdate {
                destination: Some("session".into()),
                ..u
            })
            .collect();
    }
    vec![session_rules(&[narrow_rule(tool_name, input)])]
}

/// Rules given by whoever answered, as one update allowing them for the session.
fn session_rules(rules: &[String]) -> PermissionUpdate {
    PermissionUpdate {
        kind: "addRules".into(),
        behavior: Some("allow".into()),
        destination: Some("session".into()),
        rules: rules.iter().map(|r| RuleValue::parse(r)).collect(),
        mode: None,
    }
}

/// An update's rules as rule text (`Bash(npm test:*)`).
fn rule_texts(update: &PermissionUpdate) -> Vec<String> {
    update
        .rules
        .iter()
        .map(|r| match &r.rule_content {
            Some(content) => format!("{}({content})", r.tool_name),
            None => r.tool_name.clone(),
        })
        .collect()
}

/// The UI events one line of the brain's output gives.
fn ui_events(line: &Line, label: &str) -> Vec<UiEvent> {
    let session_id = || label.to_string();
    match line {
        Line::Init(init) => vec![UiEvent::SessionInit {
            session_id: session_id(),
            claude_session_id: init.session_id.clone(),
            model: init.model.clone(),
            tools: init.tools.clone(),
        }],
        Line::TextDelta(text) => vec![UiEvent::ChatDelta {
            session_id: session_id(),
            text: text.clone(),
        }],
        Line::Assistant(message) => assistant_events(&message.blocks, label),
        Line::User(message) => message
            .blocks
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => Some(UiEvent::ToolResult {
                    session_id: session_id(),
                    tool_use_id: tool_use_id.clone(),
                    content: String::from(&**content),
                    is_error: *is_error,
                }),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The events of one assistant message (with Claude Code, of one of its blocks).
fn assistant_events(blocks: &[ContentBlock], label: &str) -> Vec<UiEvent> {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } if !text.is_empty() => Some(UiEvent::ChatComplete {
                session_id: label.to_string(),
                text: text.clone(),
            }),
            ContentBlock::ToolUse {
                id, name, input, ..
            } => Some(UiEvent::ToolStart {
                session_id: label.to_string(),
                tool_use_id: id.clone(),
                name: name.clone(),
                input: input.clone(),
            }),
            _ => None,
        })
        .collect()
}

fn exit_event(label: &str, exit: ExitInfo) -> UiEvent {
    UiEvent::ProcessExit {
        session_id: label.to_string(),
        code: exit.code,
        signal: exit.signal,
    }
}

fn ended_without_result(exit: ExitInfo, stderr: &str) -> String {
    if stderr.is_empty() {
        format!("the brain ended without a result ({exit})")
    } else {
        format!("the brain ended without a result ({exit}): {stderr}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_assistant_message_gives_its_text_and_tool_calls_in_order() {
        let blocks = vec![
            ContentBlock::text("Reading it."),
            ContentBlock::text(""),
            ContentBlock::ToolUse {
                id: "t1".into(),
                name: "Read".into(),
                input: json!({"file_path": "a"}),
            },
        ];
        let events = assistant_events(&blocks, "s");
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].kind(), "chat:complete");
        assert_eq!(events[1].kind(), "tool:start");
    }

    #[test]
    fn allow_always_keeps_the_clis_suggestion_or_adds_only_this_call_for_the_session() {
        let input = json!({"command": "ls -la"});
        let added = remembered("Bash", &input, Vec::new());
        assert_eq!(rule_texts(&added[0]), ["Bash(ls -la)"]);
        assert_eq!(added[0].destination.as_deref(), Some("session"));
        let suggestion = PermissionUpdate {
            kind: "addRules".into(),
            rules: vec![RuleValue::parse("Bash(npm test:*)")],
            ..PermissionUpdate::default()
        };
        // Its rule, for this session: the one who answered did not edit the project's settings.
        assert_eq!(
            remembered("Bash", &input, vec![suggestion.clone()]),
            vec![PermissionUpdate {
                destination: Some("session".into()),
                ..suggestion
            }]
        );
    }
}
