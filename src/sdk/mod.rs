//! The Claude Agent SDK's side of stream-json: stdin carries user turns and the SDK's
//! `control_request`s, which are answered at once on stdout with a `control_response`, even
//! while a turn runs (`interrupt` must stop it promptly). The SDK spawns the CLI with
//! `--output-format stream-json --input-format stream-json` and no `-p`.

mod asker;
mod context;
pub mod init;
mod outgoing;
mod rewind;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::checkpoint::Checkpoints;
use crate::engine::Engine;
use crate::exec::hooks::Hooks;
use crate::mcp::McpHub;
use crate::permissions::{PermissionEngine, PermissionMode};
use crate::settings::HookSettings;
use crate::sys::sync::lock;
pub use asker::SdkAsker;
pub use outgoing::Outgoing;

/// What control requests change, shared between the stdin reader and the turn loop.
pub struct Controls {
    /// Cancels the turn that runs now; Ctrl-C's token is its parent.
    turn: Mutex<CancellationToken>,
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
            turn: Mutex::new(interrupted.child_token()),
            interrupted,
            permissions,
            model: Mutex::new(None),
            outgoing,
            hooks: engine.executor().hooks().clone(),
            mcp,
            context: Mutex::new(context::report(engine)),
            checkpoints: engine.executor().context().checkpoints.clone(),
            transcript: engine.transcript_path().map(PathBuf::from),
        }
    }

    fn hub(&self) -> Result<&McpHub, String> {
        self.mcp
            .as_deref()
            .ok_or_else(|| "this session has no MCP servers".to_string())
    }

    /// A turn ended: `get_context_usage` answers from the engine as it is now.
    pub fn turn_ended(&self, engine: &Engine) {
        *lock(&self.context) = context::report(engine);
    }

    /// A fresh token for the next turn.
    pub fn new_turn(&self) -> CancellationToken {
        let token = self.interrupted.child_token();
        *lock(&self.turn) = token.clone();
        token
    }

    /// A model asked for with `set_model` since the last turn.
    pub fn take_model(&self) -> Option<String> {
        lock(&self.model).take()
    }

    fn is_slow(&self, request: &Value) -> bool {
        matches!(
            request["subtype"].as_str(),
            Some("rewind_files" | "mcp_reconnect")
        )
    }

    async fn handle_slow(&self, request: &Value) -> Result<Value, String> {
        if request["subtype"] == "mcp_reconnect" {
            let name = request["serverName"].as_str().unwrap_or_default();
            self.hub()?.reconnect(name).await?;
            return Ok(json!({}));
        }
        rewind::rewind_files(
            self.checkpoints.as_deref(),
            self.transcript.as_deref(),
            request,
        )
        .await
    }

    /// The answer to one control request: `Ok` with the response's payload, or the error.
    fn handle(&self, request: &Value) -> Result<Value, String> {
        let subtype = request["subtype"].as_str().unwrap_or("");
        match subtype {
            "initialize" => {
                if let Some(hooks) = request.get("hooks").filter(|h| h.is_object()) {
                    let settings = callback_hooks(hooks)?;
                    self.hooks
                        .register_callbacks(settings, self.outgoing.clone());
                }
                Ok(json!({
                "commands": [],
                "output_style": "default",
                "available_output_styles": ["default"],
                }))
            }
            "interrupt" => {
                lock(&self.turn).cancel();
                Ok(json!({}))
            }
            "set_permission_mode" => {
                let mode: PermissionMode = request["mode"]
                    .as_str()
                    .unwrap_or("")
                    .parse()
                    .map_err(|e: crate::permissions::UnknownMode| e.to_string())?;
                self.permissions.set_mode(mode).map_err(|e| e.to_string())?;
                Ok(json!({}))
            }
            "set_model" => {
                let model = request["model"].as_str().map(crate::api::models::resolve);
                *lock(&self.model) = model;
                Ok(json!({}))
            }
            "mcp_toggle" => {
                let name = request["serverName"].as_str().unwrap_or_default();
                let enabled = request["enabled"].as_bool().unwrap_or(true);
                self.hub()?.set_enabled(name, enabled)?;
                Ok(json!({}))
            }
            "mcp_status" => {
                let servers = self
                    .mcp
                    .as_ref()
                    .map(|hub| hub.report())
                    .unwrap_or_default();
                Ok(json!({ "mcpServers": servers }))
            }
            "get_context_usage" => {
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
            other => Err(format!(
                "ouro does not support the control request \"{other}\" yet"
            )),
        }
    }
}

/// `initialize`'s `hooks` (`{"PreToolUse": [{"matcher", "hookCallbackIds", "timeout"}]}`) as
/// hook settings whose commands are callback ids.
fn callback_hooks(hooks: &Value) -> Result<HookSettings, String> {
    let mut events = serde_json::Map::new();
    for (event, groups) in hooks.as_object().into_iter().flatten() {
        let groups: Vec<Value> = groups
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| {
                let hooks: Vec<Value> = g["hookCallbackIds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|id| json!({"type": "callback", "command": id, "timeout": g["timeout"]}))
                    .collect();
                json!({"matcher": g["matcher"].as_str().unwrap_or(""), "hooks": hooks})
            })
            .collect();
        events.insert(event.clone(), Value::Array(groups));
    }
    serde_json::from_value(Value::Object(events))
        .map_err(|e| format!("initialize: the hooks could not be read ({e})"))
}

/// A `control_response` line for request `id`.
fn response(id: &Value, outcome: Result<Value, String>) -> Value {
    let body = match outcome {
        Ok(payload) => json!({"subtype": "success", "request_id": id, "response": payload}),
        Err(error) => json!({"subtype": "error", "request_id": id, "error": error}),
    };
    json!({"type": "control_response", "response": body})
}

pub(crate) fn write_line(line: &Value) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

pub type StdinLines = tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>;

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
    pub fn initialize(&self) -> Option<Value> {
        let line: Value = serde_json::from_str(self.first.as_deref()?).ok()?;
        (line["type"] == "control_request" && line["request"]["subtype"] == "initialize")
            .then(|| line["request"].clone())
    }
}

/// Reads stdin to its end: user turns go to `turns` (or why a line was not one), control
/// requests are answered on the spot.
pub async fn read_stdin(
    stdin: FirstLine,
    turns: mpsc::Sender<Result<Turn, String>>,
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
                _ => return,
            },
        };
        number += 1;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Result<Value, _> = serde_json::from_str(&line);
        let item = match parsed {
            // Restoring files and reconnecting take time: answered when done, while other
            // lines are read.
            Ok(v) if v["type"] == "control_request" && controls.is_slow(&v["request"]) => {
                let controls = controls.clone();
                tokio::spawn(async move {
                    let outcome = controls.handle_slow(&v["request"]).await;
                    write_line(&response(&v["request_id"], outcome));
                });
                continue;
            }
            Ok(v) if v["type"] == "control_request" => {
                write_line(&response(&v["request_id"], controls.handle(&v["request"])));
                continue;
            }
            Ok(v) if v["type"] == "control_response" => {
                controls.outgoing.resolve(&v["response"]);
                continue;
            }
            Ok(v) if v["type"] == "control_cancel_request" => continue,
            Ok(v) => user_turn(&v)
                .map(|text| Turn {
                    text,
                    uuid: v["uuid"].as_str().map(str::to_string),
                })
                .map_err(|e| format!("stdin line {number} was skipped: {e}")),
            Err(e) => Err(format!("stdin line {number} was skipped: not JSON: {e}")),
        };
        if turns.send(item).await.is_err() {
            return;
        }
    }
}

/// One user message from stdin: its text, and the id the SDK gave it, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub text: String,
    pub uuid: Option<String>,
}

/// The text of a `{"type":"user","message":{"role":"user","content":...}}` line.
fn user_turn(v: &Value) -> Result<String, String> {
    if v.get("type").and_then(Value::as_str) != Some("user") {
        return Err("the line's type is not \"user\"".into());
    }
    let content = v
        .get("message")
        .and_then(|m| m.get("content"))
        .ok_or("the line has no message.content")?;
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return Err("message.content is neither text nor a list of blocks".into()),
    };
    if text.trim().is_empty() {
        return Err("the message has no text".into());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_lines_parse_in_both_content_shapes() {
        let line = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        assert_eq!(
            user_turn(&line(
                r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#
            )),
            Ok("hi".to_string())
        );
        assert_eq!(
            user_turn(&line(
                r#"{"type":"user","message":{"role":"user","content":"yo"}}"#
            )),
            Ok("yo".to_string())
        );
        assert!(user_turn(&line(r#"{"type":"assistant"}"#)).is_err());
        assert!(user_turn(&line(r#"{"type":"user","message":{"content":""}}"#)).is_err());
    }

    #[test]
    fn responses_carry_the_request_id() {
        let ok = response(&json!("r1"), Ok(json!({})));
        assert_eq!(
            ok,
            json!({"type": "control_response", "response": {"subtype": "success", "request_id": "r1", "response": {}}})
        );
        let err = response(&json!("r2"), Err("no".into()));
        assert_eq!(err["response"]["subtype"], "error");
        assert_eq!(err["response"]["error"], "no");
    }
}
