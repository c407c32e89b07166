//! The Claude Agent SDK's side of stream-json: stdin carries user turns and the SDK's
//! `control_request`s, which are answered at once on stdout with a `control_response`, even
//! while a turn runs (`interrupt` must stop it promptly). The SDK spawns the CLI with
//! `--output-format stream-json --input-format stream-json` and no `-p`.

mod asker;
mod context;
pub mod init;
mod outgoing;
mod rewind;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::api::types::ContentBlock;
use crate::checkpoint::Checkpoints;
use crate::engine::Engine;
use crate::exec::hooks::Hooks;
use crate::mcp::McpHub;
use crate::permissions::{PermissionEngine, PermissionMode};
use crate::settings::HookSettings;
use crate::stream_json::wire::{
    self, ControlResponse, HookGroup, Initialize, Line, RequestBody, UserContent, UserLine,
};
use crate::sys::sync::lock;
pub use asker::SdkAsker;
pub use outgoing::Outgoing;

/// What control requests change, shared between the stdin reader and the turn loop.
pub struct Controls {
    interrupted: CancellationToken,
    permissions: Arc<PermissionEngine>,
    /// `set_model`: applied from the next turn on.
    model: Mutex<Option<String>>,
    /// ouro's own requests waiting for the SDK's answers.
    outgoing: Arc<Outgoing>,
    /// Where `initialize` registers the SDK's hook callbacks.
    hooks: Arc<Hooks>,
    mcp: Option<Arc<McpHub>>,
    /// `get_context_usage`'s answer as of the last turn.
    context: Mutex<Value>,
    /// What `rewind_files` restores from.
    checkpoints: Option<Arc<Checkpoints>>,
    transcript: Option<PathBuf>,
    /// The skills the session offers: what a prompt may name as `/skill`.
    commands: Vec<String>,
    /// The sub-agents the Agent tool offers (`supportedAgents()`).
    agents: Vec<crate::event::AgentInfo>,
    output_style: String,
    output_styles: Vec<String>,
    /// Whether Bash runs in the OS sandbox, as `system/init` says too.
    sandbox_enabled: bool,
    /// The tokens of the turns read and not over yet, the running one first (each a child of
    /// Ctrl-C's).
    open: Mutex<Vec<CancellationToken>>,
}

impl Controls {
    pub fn new(
        permissions: Arc<PermissionEngine>,
        interrupted: CancellationToken,
        outgoing: Arc<Outgoing>,
        engine: &Engine,
        mcp: Option<Arc<McpHub>>,
    ) -> Controls {
        Controls {
            interrupted,
            permissions,
            model: Mutex::new(None),
            outgoing,
            hooks: engine.executor().hooks().clone(),
            mcp,
            context: Mutex::new(context::report(engine)),
            checkpoints: engine.executor().context().checkpoints.clone(),
            transcript: engine.transcript_path().map(PathBuf::from),
            commands: engine.config().init_meta.skills.clone(),
            agents: engine.config().init_meta.agents.clone(),
            output_style: engine.config().init_meta.output_style.clone(),
            output_styles: engine.config().init_meta.output_styles.clone(),
            sandbox_enabled: engine.config().init_meta.sandbox_enabled,
            open: Mutex::new(Vec::new()),
        }
    }

    fn hub(&self) -> Result<&McpHub, String> {
        self.mcp
            .as_deref()
            .ok_or_else(|| "this session has no MCP servers".to_string())
    }

    /// A turn ended: `get_context_usage` answers from the engine as it is now.
    pub fn turn_ended(&self, engine: &Engine) {
        // Turns run in the order they were read: the oldest open one is over.
        let mut open = lock(&self.open);
        if !open.is_empty() {
            open.remove(0);
        }
        drop(open);
        *lock(&self.context) = context::report(engine);
    }

    /// A user line was read: the token its turn will run under, from now on stopped by an
    /// `interrupt` too (one read before its turn began, as an SDK sends a prompt and then
    /// interrupts it, must not be lost).
    fn queue_turn(&self) -> CancellationToken {
        let token = self.interrupted.child_token();
        lock(&self.open).push(token.clone());
        token
    }

    /// The turn of `token` begins: an answer that asks to stop stops it.
    pub fn start_turn(&self, token: &CancellationToken) {
        self.outgoing.set_turn(token.clone());
    }

    /// A model asked for with `set_model` since the last turn.
    pub fn take_model(&self) -> Option<String> {
        lock(&self.model).take()
    }

    /// Restoring files and reconnecting take time: answered when done, while other lines are
    /// read.
    fn is_slow(request: &RequestBody) -> bool {
        matches!(
            request,
            RequestBody::RewindFiles { .. } | RequestBody::McpReconnect { .. }
        )
    }

    async fn handle_slow(&self, request: RequestBody) -> Result<Value, String> {
        match request {
            RequestBody::McpReconnect { server_name } => {
                self.hub()?.reconnect(&server_name).await?;
                Ok(json!({}))
            }
            RequestBody::RewindFiles {
                user_message_id,
                dry_run,
            } => {
                rewind::rewind_files(
                    self.checkpoints.as_deref(),
                    self.transcript.as_deref(),
                    &user_message_id,
                    dry_run,
                )
                .await
            }
            other => self.handle(other),
        }
    }

    /// What `initialize` answers, with Claude Code's keys: ouro's own values, or Claude
    /// Code's empty form where it has none.
    fn initialized(&self) -> Value {
        let models: Vec<Value> = ["sonnet", "opus", "haiku"]
            .iter()
            .map(|alias| {
                json!({
                    "value": alias,
                    "resolvedModel": crate::api::models::resolve(alias),
                    "displayName": alias,
                    "description": format!("The newest {alias} model"),
                })
            })
            .collect();
        let commands: Vec<Value> = self
            .commands
            .iter()
            .map(|name| json!({"name": name, "description": "", "argumentHint": ""}))
            .collect();
        json!({
            "account": {"tokenSource": "none", "apiKeySource": "ANTHROPIC_API_KEY", "apiProvider": "firstParty"},
            "agents": self.agents,
            "analytics_disabled": true,
            "available_output_styles": self.output_styles,
            "capabilities": [],
            "claude_code_version": crate::stream_json::write::CLAUDE_CODE_COMPAT_VERSION,
            "commands": commands,
            "current_permission_mode": self.permissions.mode().to_string(),
            "fast_mode_state": "off",
            "models": models,
            "output_style": self.output_style,
            "pid": std::process::id(),
            "sandbox_enabled": self.sandbox_enabled,
            "session_state": "idle",
        })
    }

    /// The answer to one control request: `Ok` with the response's payload, or the error.
    fn handle(&self, request: RequestBody) -> Result<Value, String> {
        match request {
            RequestBody::Initialize(init) => {
                if let Some(hooks) = init.hooks {
                    let settings = callback_hooks(hooks)?;
                    self.hooks
                        .register_callbacks(settings, self.outgoing.clone());
                }
                Ok(self.initialized())
            }
            RequestBody::Interrupt {} => {
                // The running turn is the first open one.
                for turn in lock(&self.open).iter() {
                    turn.cancel();
                }
                Ok(json!({}))
            }
            RequestBody::SetPermissionMode { mode } => {
                let mode: PermissionMode = mode
                    .parse()
                    .map_err(|e: crate::permissions::UnknownMode| e.to_string())?;
                self.permissions.set_mode(mode).map_err(|e| e.to_string())?;
                Ok(json!({}))
            }
            RequestBody::SetModel { model } => {
                *lock(&self.model) = model.as_deref().map(crate::api::models::resolve);
                Ok(json!({}))
            }
            RequestBody::McpToggle {
                server_name,
                enabled,
            } => {
                self.hub()?.set_enabled(&server_name, enabled)?;
                Ok(json!({}))
            }
            RequestBody::McpStatus {} => {
                let servers = self
                    .mcp
                    .as_ref()
                    .map(|hub| hub.report())
                    .unwrap_or_default();
                Ok(json!({ "mcpServers": servers }))
            }
            RequestBody::GetContextUsage {} => {
                let mut usage = lock(&self.context).clone();
                if let Some(hub) = &self.mcp {
                    usage["mcpTools"] = hub
                        .report()
                        .iter()
                        .flat_map(|server| {
                            let name = server["name"].clone();
                            server["tools"].as_array().cloned().unwrap_or_default().into_iter().map(
                                move |tool| json!({"name": tool["name"], "serverName": name, "isLoaded": true}),
                            )
                        })
                        .collect();
                }
                Ok(usage)
            }
            RequestBody::StopTask { .. } => {
                Err("ouro runs no background tasks, so there is nothing to stop".into())
            }
            RequestBody::McpReconnect { .. }
            | RequestBody::RewindFiles { .. }
            | RequestBody::CanUseTool { .. }
            | RequestBody::HookCallback { .. }
            | RequestBody::McpMessage { .. } => {
                Err("this control request goes from ouro to the SDK, not the other way".into())
            }
        }
    }
}

/// `initialize`'s `hooks` as hook settings whose commands are callback ids.
fn callback_hooks(hooks: BTreeMap<String, Vec<HookGroup>>) -> Result<HookSettings, String> {
    let events: serde_json::Map<String, Value> = hooks
        .into_iter()
        .map(|(event, groups)| {
            let groups: Vec<Value> = groups
                .into_iter()
                .map(|g| {
                    let hooks: Vec<Value> = g
                        .hook_callback_ids
                        .iter()
                        .map(|id| json!({"type": "callback", "command": id, "timeout": g.timeout}))
                        .collect();
                    json!({"matcher": g.matcher.unwrap_or_default(), "hooks": hooks})
                })
                .collect();
            (event, Value::Array(groups))
        })
        .collect();
    serde_json::from_value(Value::Object(events))
        .map_err(|e| format!("initialize: the hooks could not be read ({e})"))
}

pub(crate) fn write_line(line: &Line) {
    use std::io::Write as _;
    let Ok(text) = serde_json::to_string(line) else {
        return;
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

fn respond(request_id: String, outcome: Result<Value, String>) {
    write_line(&Line::ControlResponse(ControlResponse::to(
        request_id, outcome,
    )));
}

pub(crate) type StdinLines = tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>;

/// The first line of stdin, read before the session is built: when it is the SDK's
/// `initialize` request, what it configures (see [`init`]) must be in place first.
pub struct FirstLine {
    lines: StdinLines,
    first: Option<String>,
}

impl FirstLine {
    pub async fn read() -> FirstLine {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let first = lines.next_line().await.ok().flatten();
        FirstLine { lines, first }
    }

    /// The request of an `initialize` control line.
    pub fn initialize(&self) -> Option<Initialize> {
        let Ok(Line::ControlRequest(request)) = serde_json::from_str(self.first.as_deref()?) else {
            return None;
        };
        match request.body() {
            Ok(RequestBody::Initialize(init)) => Some(init),
            _ => None,
        }
    }
}

/// Reads stdin to its end: user turns go to `turns` (or why a line was not one), control
/// requests are answered on the spot.
pub async fn read_stdin(
    stdin: FirstLine,
    turns: mpsc::Sender<Result<(Turn, CancellationToken), String>>,
    controls: Arc<Controls>,
) {
    let FirstLine {
        mut lines,
        mut first,
    } = stdin;
    let mut number = 0usize;
    loop {
        let line = match first.take() {
            Some(line) => line,
            None => match lines.next_line().await {
                Ok(Some(line)) => line,
                _ => {
                    // No answer can come now: a question waiting on one is refused, and the
                    // turn it belongs to goes on to its end.
                    controls.outgoing.close();
                    return;
                }
            },
        };
        number += 1;
        if line.trim().is_empty() {
            continue;
        }
        let item = match serde_json::from_str::<Line>(&line) {
            Ok(Line::ControlRequest(request)) => {
                match request.body() {
                    Ok(body) if Controls::is_slow(&body) => {
                        let controls = controls.clone();
                        tokio::spawn(async move {
                            let outcome = controls.handle_slow(body).await;
                            respond(request.request_id, outcome);
                        });
                    }
                    Ok(body) => respond(request.request_id, controls.handle(body)),
                    Err(e) => respond(request.request_id, Err(e)),
                }
                continue;
            }
            Ok(Line::ControlResponse(response)) => {
                controls.outgoing.resolve(response);
                continue;
            }
            Ok(Line::ControlCancelRequest(_) | Line::KeepAlive {}) => continue,
            Ok(Line::UpdateEnvironmentVariables { variables }) => {
                crate::sys::secrets::set_for_tools(variables);
                continue;
            }
            Ok(Line::User(user)) => user_turn(user)
                .map(|turn| (turn, controls.queue_turn()))
                .map_err(|e| format!("stdin line {number} was skipped: {e}")),
            Ok(_) => Err(format!(
                "stdin line {number} was skipped: the line's type is not \"user\""
            )),
            Err(e) => Err(match wire::kind_of(&line) {
                Some(kind) => {
                    format!("stdin line {number} was skipped: a {kind} line ouro cannot read: {e}")
                }
                None if serde_json::from_str::<serde::de::IgnoredAny>(&line).is_ok() => {
                    format!("stdin line {number} was skipped: it has no \"type\"")
                }
                None => format!("stdin line {number} was skipped: not JSON: {e}"),
            }),
        };
        if turns.send(item).await.is_err() {
            return;
        }
    }
}

/// One user message from stdin: its text, the whole message when it holds more than text
/// (images, documents), and the id the SDK gave it, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub text: String,
    pub blocks: Option<Vec<ContentBlock>>,
    pub uuid: Option<String>,
}

/// The text of a user line, its blocks when not all are text, and the id the SDK gave it.
fn user_turn(line: UserLine) -> Result<Turn, String> {
    let (text, blocks) = match line.message.content {
        UserContent::Text(text) => (text, None),
        UserContent::Blocks(blocks) => {
            let text = blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            let attached = blocks.iter().any(|b| {
                matches!(
                    b,
                    ContentBlock::Image { .. } | ContentBlock::Document { .. }
                )
            });
            // The API refuses an empty text block; what else the message holds goes as given.
            let blocks: Vec<ContentBlock> = blocks
                .into_iter()
                .filter(|b| !matches!(b, ContentBlock::Text { text } if text.trim().is_empty()))
                .collect();
            (text, attached.then_some(blocks))
        }
    };
    if text.trim().is_empty() && blocks.is_none() {
        return Err("the message has no text, image or document".into());
    }
    Ok(Turn {
        text,
        blocks,
        uuid: line.uuid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(s: &str) -> Result<Turn, String> {
        match serde_json::from_str::<Line>(s).unwrap() {
            Line::User(u) => user_turn(u),
            other => panic!("not a user line: {other:?}"),
        }
    }

    #[test]
    fn user_lines_parse_in_both_content_shapes() {
        let turn = |text: &str, uuid: Option<&str>| {
            Ok(Turn {
                text: text.into(),
                blocks: None,
                uuid: uuid.map(String::from),
            })
        };
        assert_eq!(
            user(
                r#"{"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#
            ),
            turn("hi", Some("u1"))
        );
        assert_eq!(
            user(r#"{"type":"user","message":{"role":"user","content":"yo"}}"#),
            turn("yo", None)
        );
        assert!(user(r#"{"type":"user","message":{"content":""}}"#).is_err());
    }

    #[test]
    fn images_and_documents_go_with_the_message_in_its_order() {
        let turn = user(
            r#"{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}},{"type":"text","text":"describe"},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"notes"},"title":"n"}]}}"#,
        )
        .unwrap();
        assert_eq!(turn.text, "describe");
        let blocks = turn.blocks.unwrap();
        assert!(matches!(blocks[0], ContentBlock::Image { .. }));
        assert!(matches!(blocks[1], ContentBlock::Text { .. }));
        assert!(matches!(&blocks[2], ContentBlock::Document { title: Some(t), .. } if t == "n"));
        // An image alone is a prompt too, sent without an empty text block.
        let alone = user(
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":""},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}]}}"#,
        )
        .unwrap();
        assert_eq!(alone.blocks.map(|b| b.len()), Some(1));
    }

    #[test]
    fn responses_carry_the_request_id() {
        let ok = serde_json::to_value(Line::ControlResponse(ControlResponse::to(
            "r1".into(),
            Ok(json!({})),
        )))
        .unwrap();
        assert_eq!(
            ok,
            json!({"type": "control_response", "response": {"subtype": "success", "request_id": "r1", "response": {}}})
        );
        let err = serde_json::to_value(Line::ControlResponse(ControlResponse::to(
            "r2".into(),
            Err("no".into()),
        )))
        .unwrap();
        assert_eq!(err["response"]["subtype"], "error");
        assert_eq!(err["response"]["error"], "no");
    }

    #[test]
    fn an_unknown_control_request_still_has_an_id_to_answer() {
        let Line::ControlRequest(request) = serde_json::from_str(
            r#"{"type":"control_request","request_id":"r9","request":{"subtype":"teleport"}}"#,
        )
        .unwrap() else {
            panic!("not a control request")
        };
        assert_eq!(request.request_id, "r9");
        assert_eq!(
            request.body().unwrap_err(),
            "ouro does not support the control request \"teleport\" yet"
        );
    }
}
