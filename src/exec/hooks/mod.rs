//! Hooks: commands from the settings that see an event as JSON on stdin and answer with an
//! exit code and JSON on stdout. Here the tool hooks, which may allow, deny, ask about,
//! rewrite or annotate a call; the session's other events are in `lifecycle`. The protocol is
//! Claude Code's, so hook scripts written for it work here unchanged.

mod lifecycle;

pub use lifecycle::{Fired, HookEvent, PermissionAnswer};

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::settings::{HookCommand, HookMatcher, HookSettings};
use crate::sys::process::{Launch, SpawnError};
use crate::tools::ToolOutput;

const DEFAULT_TIMEOUT_SECS: u64 = 60;
const KILL_GRACE: Duration = Duration::from_millis(500);

/// The hooks configured for a session.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    settings: HookSettings,
    /// Hooks a program registered over the Agent SDK's control protocol, answered by its
    /// callbacks; set once, when it initializes.
    callbacks: Arc<OnceLock<SdkHooks>>,
    session_id: String,
    /// The session's transcript, named in every event as Claude Code does.
    transcript_path: Option<std::path::PathBuf>,
    /// Where each hook's start and end are reported (`--include-hook-events`).
    report: Option<tokio::sync::mpsc::UnboundedSender<crate::event::Event>>,
    /// Secret-looking variables the hooks may still see (settings `envPassthrough`).
    env_passthrough: Arc<Vec<String>>,
}

/// Runs the hooks a program registered over the Agent SDK (`hook_callback`).
pub trait HookCallbacks: Send + Sync {
    /// The callback's answer: hook output JSON, as a command would print it.
    fn call(&self, callback_id: &str, input: Value) -> BoxFuture<'_, Result<Value, String>>;
}

struct SdkHooks {
    settings: HookSettings,
    runner: Arc<dyn HookCallbacks>,
}

impl std::fmt::Debug for SdkHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SdkHooks")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// What the pre-tool hooks decided about a call's permission.
#[derive(Debug, Clone, PartialEq)]
pub enum HookVerdict {
    Allow,
    Deny(String),
    /// Ask the user even if the rules would allow; the reason is shown in the prompt.
    Ask(String),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreToolOutcome {
    pub verdict: Option<HookVerdict>,
    /// Input that replaces the model's, already passed through every later hook.
    pub updated_input: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostToolOutcome {
    /// Text that replaces the tool's result.
    pub replacement: Option<String>,
    /// Context and failure reports to append to the result.
    pub notes: Vec<String>,
}

/// Where a hook sees the call: the session's working directory (in the JSON) and the project
/// root (where the hook runs).
#[derive(Debug, Clone, Copy)]
pub struct HookSite<'a> {
    pub cwd: &'a Path,
    pub project_root: &'a Path,
    /// The call the hook is about (`tool_use_id` in the payload).
    pub tool_use_id: &'a str,
}

#[derive(Debug, thiserror::Error)]
enum HookError {
    #[error("has type \"{0}\", but only \"command\" hooks can run")]
    UnsupportedKind(String),
    #[error("could not be started ({0})")]
    Spawn(#[source] std::io::Error),
    #[error("failed while running ({0})")]
    Io(#[source] std::io::Error),
    #[error("timed out after {0} s and was killed")]
    TimedOut(u64),
    #[error("failed in the SDK's callback ({0})")]
    Callback(String),
}

struct HookRun {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

#[derive(Debug, Default, Deserialize)]
struct HookReply {
    #[serde(rename = "hookSpecificOutput")]
    specific: Option<SpecificReply>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecificReply {
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
    updated_tool_output: Option<Value>,
}

impl Hooks {
    pub fn new(settings: &HookSettings, session_id: impl Into<String>) -> Self {
        Hooks {
            settings: settings.clone(),
            callbacks: Arc::default(),
            session_id: session_id.into(),
            transcript_path: None,
            report: None,
            env_passthrough: Arc::default(),
        }
    }

    /// Lets these secret-looking variables reach the hooks.
    pub fn with_env_passthrough(mut self, names: Arc<Vec<String>>) -> Self {
        self.env_passthrough = names;
        self
    }

    /// Reports each hook's start and end as events (`--include-hook-events`).
    pub fn with_events(
        mut self,
        events: tokio::sync::mpsc::UnboundedSender<crate::event::Event>,
    ) -> Self {
        self.report = Some(events);
        self
    }

    /// Adds the hooks an SDK registered (`"type": "callback"`, the command being the callback
    /// id); they run after the settings' hooks of each event. Only the first registration
    /// counts.
    pub fn register_callbacks(&self, settings: HookSettings, runner: Arc<dyn HookCallbacks>) {
        let _ = self.callbacks.set(SdkHooks { settings, runner });
    }

    /// The matcher groups of `event`: the settings' then the SDK's.
    fn groups(&self, event: &str) -> Vec<HookMatcher> {
        let mut groups = self.settings.groups(event).to_vec();
        if let Some(sdk) = self.callbacks.get() {
            groups.extend(sdk.settings.groups(event).iter().cloned());
        }
        groups
    }

    /// Runs one hook: a command, or an SDK callback whose answer counts as the JSON a
    /// command would print.
    async fn run(
        &self,
        hook: &HookCommand,
        payload: &Value,
        project_root: &Path,
    ) -> Result<HookRun, HookError> {
        let Some(report) = &self.report else {
            return self.run_one(hook, payload, project_root).await;
        };
        let event = payload["hook_event_name"].as_str().unwrap_or_default();
        let name = match payload["tool_name"].as_str() {
            Some(tool) => format!("{event}:{tool}"),
            None => event.to_string(),
        };
        let id = uuid::Uuid::new_v4().to_string();
        let _ = report.send(crate::event::Event::HookStarted {
            id: id.clone(),
            name: name.clone(),
            event: event.to_string(),
        });
        let outcome = self.run_one(hook, payload, project_root).await;
        let (stdout, stderr, exit_code, error) = match &outcome {
            Ok(run) => (run.stdout.clone(), run.stderr.clone(), run.code, false),
            Err(e) => (String::new(), e.to_string(), None, true),
        };
        let _ = report.send(crate::event::Event::HookResponse {
            id,
            name,
            event: event.to_string(),
            outcome: if error || exit_code.is_some_and(|c| c != 0) {
                "error"
            } else {
                "success"
            },
            stdout,
            stderr,
            exit_code,
        });
        outcome
    }

    async fn run_one(
        &self,
        hook: &HookCommand,
        payload: &Value,
        project_root: &Path,
    ) -> Result<HookRun, HookError> {
        if hook.kind != "callback" {
            return run_hook(hook, payload, project_root, &self.env_passthrough).await;
        }
        let Some(sdk) = self.callbacks.get() else {
            return Err(HookError::UnsupportedKind(hook.kind.clone()));
        };
        let secs = hook.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS);
        let call = sdk.runner.call(&hook.command, payload.clone());
        match tokio::time::timeout(Duration::from_secs(secs), call).await {
            Ok(Ok(answer)) => Ok(HookRun {
                code: Some(0),
                stdout: answer.to_string(),
                stderr: String::new(),
            }),
            Ok(Err(e)) => Err(HookError::Callback(e)),
            Err(_) => Err(HookError::TimedOut(secs)),
        }
    }

    pub fn with_transcript(mut self, path: Option<std::path::PathBuf>) -> Self {
        self.transcript_path = path;
        self
    }

    /// Runs every matching PreToolUse hook in order. A deny ends the chain at once; otherwise
    /// ask outranks allow, and each hook sees the input as earlier hooks rewrote it.
    pub async fn pre_tool_use(
        &self,
        tool: &str,
        input: &Value,
        site: HookSite<'_>,
    ) -> PreToolOutcome {
        let mut outcome = PreToolOutcome::default();
        let mut current = input.clone();
        for hook in matching(&self.groups("PreToolUse"), tool) {
            let payload = json!({
                "session_id": self.session_id,
                "transcript_path": self.transcript_path,
                "hook_event_name": "PreToolUse",
                "tool_name": tool,
                "tool_input": current,
                "tool_use_id": site.tool_use_id,
                "cwd": site.cwd,
            });
            let run = match self.run(hook, &payload, site.project_root).await {
                Ok(run) => run,
                Err(e) => {
                    outcome.verdict = Some(HookVerdict::Deny(format!(
                        "The PreToolUse hook `{}` {e}, so the call was blocked.",
                        hook.command
                    )));
                    return outcome;
                }
            };
            match run.code {
                Some(0) => {}
                Some(2) => {
                    let reason = if run.stderr.trim().is_empty() {
                        format!("The PreToolUse hook `{}` blocked the call.", hook.command)
                    } else {
                        run.stderr.trim().to_string()
                    };
                    outcome.verdict = Some(HookVerdict::Deny(reason));
                    return outcome;
                }
                code => {
                    outcome.verdict = Some(HookVerdict::Deny(format!(
                        "The PreToolUse hook `{}` failed ({}){}, so the call was blocked.",
                        hook.command,
                        describe_exit(code),
                        stderr_suffix(&run.stderr)
                    )));
                    return outcome;
                }
            }
            let Some(reply) = parse_reply(&run.stdout) else {
                continue;
            };
            if let Some(updated) = reply.updated_input {
                current = updated.clone();
                outcome.updated_input = Some(updated);
            }
            let reason = reply.permission_decision_reason.unwrap_or_default();
            match reply.permission_decision.as_deref() {
                None => {}
                Some("allow") if outcome.verdict.is_none() => {
                    outcome.verdict = Some(HookVerdict::Allow);
                }
                Some("allow") => {}
                Some("ask") => outcome.verdict = Some(HookVerdict::Ask(reason)),
                Some("deny") => {
                    let reason = if reason.is_empty() {
                        format!("The PreToolUse hook `{}` denied the call.", hook.command)
                    } else {
                        reason
                    };
                    outcome.verdict = Some(HookVerdict::Deny(reason));
                    return outcome;
                }
                Some(other) => {
                    outcome.verdict = Some(HookVerdict::Deny(format!(
                        "The PreToolUse hook `{}` answered with the unknown permissionDecision \
                         \"{other}\" (expected allow, deny or ask), so the call was blocked.",
                        hook.command
                    )));
                    return outcome;
                }
            }
        }
        outcome
    }

    /// Runs every matching PostToolUse hook in order. A failing hook never fails the call: its
    /// problem becomes a note on the result.
    pub async fn post_tool_use(
        &self,
        tool: &str,
        input: &Value,
        output: &ToolOutput,
        site: HookSite<'_>,
    ) -> PostToolOutcome {
        let mut outcome = PostToolOutcome::default();
        for hook in matching(&self.groups("PostToolUse"), tool) {
            let content = outcome.replacement.as_deref().unwrap_or(&output.content);
            let payload = json!({
                "session_id": self.session_id,
                "transcript_path": self.transcript_path,
                "hook_event_name": "PostToolUse",
                "tool_name": tool,
                "tool_input": input,
                "tool_response": {"content": content, "is_error": output.is_error},
                "tool_use_id": site.tool_use_id,
                "cwd": site.cwd,
            });
            let run = match self.run(hook, &payload, site.project_root).await {
                Ok(run) => run,
                Err(e) => {
                    outcome
                        .notes
                        .push(format!("The PostToolUse hook `{}` {e}.", hook.command));
                    continue;
                }
            };
            match run.code {
                Some(0) => {}
                Some(2) => {
                    outcome.notes.push(run.stderr.trim().to_string());
                    continue;
                }
                code => {
                    outcome.notes.push(format!(
                        "The PostToolUse hook `{}` failed ({}){}.",
                        hook.command,
                        describe_exit(code),
                        stderr_suffix(&run.stderr)
                    ));
                    continue;
                }
            }
            let Some(reply) = parse_reply(&run.stdout) else {
                continue;
            };
            if let Some(text) = reply.updated_tool_output {
                outcome.replacement = Some(match text {
                    Value::String(s) => s,
                    other => other.to_string(),
                });
            }
            if let Some(context) = reply.additional_context.filter(|c| !c.trim().is_empty()) {
                outcome.notes.push(context);
            }
        }
        outcome.notes.retain(|n| !n.is_empty());
        outcome
    }
}

/// `A|B` names alternatives; an empty matcher or `*` matches every tool.
fn matches(matcher: &str, tool: &str) -> bool {
    let matcher = matcher.trim();
    matcher.is_empty()
        || matcher == "*"
        || matcher
            .split('|')
            .any(|alt| crate::permissions::canonical_tool(alt.trim()) == tool)
}

fn matching<'a>(groups: &'a [HookMatcher], tool: &'a str) -> impl Iterator<Item = &'a HookCommand> {
    groups
        .iter()
        .filter(move |g| matches(&g.matcher, tool))
        .flat_map(|g| g.hooks.iter())
}

/// Hooks may print plain text; only a JSON object is an answer.
fn parse_reply(stdout: &str) -> Option<SpecificReply> {
    let text = stdout.trim();
    if !text.starts_with('{') {
        return None;
    }
    match serde_json::from_str::<HookReply>(text) {
        Ok(reply) => reply.specific,
        Err(e) => {
            tracing::warn!("ignoring hook output that is not valid hook JSON: {e}");
            None
        }
    }
}

fn describe_exit(code: Option<i32>) -> String {
    match code {
        Some(code) => format!("exit code {code}"),
        None => "killed by a signal".to_string(),
    }
}

fn stderr_suffix(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        String::new()
    } else {
        format!(": {stderr}")
    }
}

/// Runs a user's `command` as hooks run (in `project_root`, `payload` as JSON on stdin, the
/// secrets of the environment scrubbed, killed after `timeout_secs`): its stdout, or why it
/// failed. The REPL's status line is such a command.
pub async fn run_command(
    command: &str,
    payload: &Value,
    project_root: &Path,
    env_passthrough: &[String],
    timeout_secs: u64,
) -> Result<String, String> {
    let hook = HookCommand {
        kind: "command".into(),
        command: command.into(),
        timeout: Some(timeout_secs),
    };
    let run = run_hook(&hook, payload, project_root, env_passthrough)
        .await
        .map_err(|e| e.to_string())?;
    match run.code {
        Some(0) => Ok(run.stdout),
        code => Err(format!(
            "it exited with {}{}",
            code.map_or_else(|| "a signal".to_string(), |c| c.to_string()),
            run.stderr
                .lines()
                .next()
                .map(|l| format!(": {l}"))
                .unwrap_or_default()
        )),
    }
}

async fn run_hook(
    hook: &HookCommand,
    payload: &Value,
    project_root: &Path,
    env_passthrough: &[String],
) -> Result<HookRun, HookError> {
    if hook.kind != "command" {
        return Err(HookError::UnsupportedKind(hook.kind.clone()));
    }
    let secs = hook.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS);
    let mut launch = Launch::new("sh", project_root);
    launch.arg("-c").arg(&hook.command);
    launch.env = crate::sys::secrets::tool_env(std::env::vars_os(), env_passthrough);
    launch
        .env("OURO_PROJECT_DIR", project_root)
        .env("CLAUDE_PROJECT_DIR", project_root);
    launch.stdin = true;
    let spawned = launch.spawn().await.map_err(|e| match e {
        SpawnError::Io(e) => HookError::Spawn(e),
        SpawnError::Sandbox(why) => HookError::Spawn(std::io::Error::other(why)),
    })?;
    let mut child = spawned.process;
    let (stdin, stdout, stderr) = (spawned.stdin, Some(spawned.stdout), Some(spawned.stderr));
    let input = payload.to_string().into_bytes();
    let exchange = async {
        // Written alongside the reads: a hook that prints before reading must not deadlock on a
        // full pipe. A hook that never reads its stdin is fine, hence the ignored write error.
        let write = async {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(&input).await;
            }
        };
        let (_, out, err) = tokio::join!(write, read_all(stdout), read_all(stderr));
        let status = child.wait().await.map_err(HookError::Io)?;
        Ok(HookRun {
            code: status.code(),
            stdout: out.map_err(HookError::Io)?,
            stderr: err.map_err(HookError::Io)?,
        })
    };
    let result = tokio::time::timeout(Duration::from_secs(secs), exchange).await;
    match result {
        Ok(run) => run,
        Err(_) => {
            child.terminate(KILL_GRACE).await;
            Err(HookError::TimedOut(secs))
        }
    }
}

async fn read_all(pipe: Option<impl tokio::io::AsyncRead + Unpin>) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    if let Some(mut pipe) = pipe {
        pipe.read_to_end(&mut bytes).await?;
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(pre: &[(&str, &str, Option<u64>)], post: &[(&str, &str)]) -> Hooks {
        let group = |m: &str, c: &str, t: Option<u64>| HookMatcher {
            matcher: m.to_string(),
            hooks: vec![HookCommand {
                kind: "command".into(),
                command: c.to_string(),
                timeout: t,
            }],
        };
        let settings = HookSettings {
            pre_tool_use: pre.iter().map(|(m, c, t)| group(m, c, *t)).collect(),
            post_tool_use: post.iter().map(|(m, c)| group(m, c, None)).collect(),
            ..HookSettings::default()
        };
        Hooks::new(&settings, "session-1")
    }

    fn site(dir: &Path) -> HookSite<'_> {
        HookSite {
            cwd: dir,
            project_root: dir,
            tool_use_id: "toolu_1",
        }
    }

    #[test]
    fn matcher_forms() {
        assert!(matches("", "Bash"));
        assert!(matches("*", "Bash"));
        assert!(matches("Edit|Bash", "Bash"));
        assert!(!matches("Edit|Write", "Bash"));
        assert!(!matches("Bas", "Bash"));
        // Claude Code's older name of the sub-agent tool.
        assert!(matches("Task", "Agent"));
        assert!(matches("Read|Task", "Agent"));
    }

    #[tokio::test]
    async fn the_hook_sees_the_call_as_json() {
        let dir = tempfile::tempdir().unwrap();
        let seen = dir.path().join("seen.json");
        let cmd = format!("cat > '{}'", seen.display());
        let h = hooks(&[("Bash", &cmd, None)], &[]);
        let out = h
            .pre_tool_use("Bash", &json!({"command": "ls"}), site(dir.path()))
            .await;
        assert_eq!(out, PreToolOutcome::default());
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
        assert_eq!(v["session_id"], "session-1");
        assert_eq!(v["hook_event_name"], "PreToolUse");
        assert_eq!(v["tool_name"], "Bash");
        assert_eq!(v["tool_input"]["command"], "ls");
        assert_eq!(v["cwd"], dir.path().to_str().unwrap());
    }

    #[tokio::test]
    async fn hooks_for_other_tools_do_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let h = hooks(&[("Edit", "exit 2", None)], &[]);
        let out = h.pre_tool_use("Bash", &json!({}), site(dir.path())).await;
        assert_eq!(out.verdict, None);
    }

    #[tokio::test]
    async fn deny_outranks_an_earlier_allow_and_rewrites_chain() {
        let dir = tempfile::tempdir().unwrap();
        let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"n":1}}}'"#;
        let deny = r#"grep -q '"n":1' && echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"saw the rewrite"}}'"#;
        let h = hooks(&[("*", allow, None), ("", deny, None)], &[]);
        let out = h
            .pre_tool_use("Read", &json!({"n": 0}), site(dir.path()))
            .await;
        assert_eq!(
            out.verdict,
            Some(HookVerdict::Deny("saw the rewrite".into()))
        );
        assert_eq!(out.updated_input, Some(json!({"n": 1})));
    }

    #[tokio::test]
    async fn post_hooks_replace_and_annotate_and_report_failures() {
        let dir = tempfile::tempdir().unwrap();
        let replace = r#"echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedToolOutput":"new text"}}'"#;
        let annotate = r#"grep -q 'new text' && echo '{"hookSpecificOutput":{"additionalContext":"looked fine"}}'"#;
        let h = hooks(
            &[],
            &[
                ("Read", replace),
                ("Read", annotate),
                ("Read", "echo oops >&2; exit 7"),
            ],
        );
        let out = h
            .post_tool_use("Read", &json!({}), &ToolOutput::ok("old"), site(dir.path()))
            .await;
        assert_eq!(out.replacement.as_deref(), Some("new text"));
        assert_eq!(out.notes[0], "looked fine");
        assert!(
            out.notes[1].contains("failed (exit code 7): oops"),
            "{:?}",
            out.notes
        );
    }
}
