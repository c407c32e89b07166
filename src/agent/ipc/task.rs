//! One task, from its `task:initialize` to its `task:result`: the agent and its tree made
//! ready, one served turn of its brain (its UI events sent as `log` messages, the questions
//! its rules leave open as `permission:request`s), then the dogs bundle of what it changed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::IpcError;
use super::messages::{
    Ask, AskResult, Behavior, Initialize, Level, Log, NewRule, PermissionRequest,
    PermissionResponse, Status, TaskResult, ToSupervisor,
};
use super::setup::{self, Agent};
use super::wire::{Outbox, Questions};
use crate::agents::changes::Snapshot;
use crate::agents::spec::{CommandRules, CommandVerdict};
use crate::brain::granted::Granted;
use crate::brain::{
    Asker, BrainCli, BrainConfig, PermissionAnswer, PermissionQuestion, TurnOptions, TurnRequest,
};
use crate::paws::artifact::write_dogs_v1;
use crate::paws::front::DogsFront;
use crate::ui_event::UiEvent;

/// How long a stopped turn has to end before its brain is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What a task shares with the loop that reads the supervisor.
pub(super) struct Context {
    pub outbox: Arc<Outbox>,
    pub questions: Questions,
    /// Holds why the task is to stop, once it is.
    pub stop: watch::Receiver<Option<String>>,
    /// ouro's home, where the run's folder goes.
    pub home: Option<PathBuf>,
}

/// Runs `init` to its end; never fails: a failure is the result's summary.
pub(super) async fn run(init: Initialize, cx: Context) -> TaskResult {
    let started = Instant::now();
    let run_id = format!(
        "{}-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let mut result = TaskResult {
        status: Status::Failure,
        output_artifact_path: None,
        summary: String::new(),
        run_id: Some(run_id.clone()),
        changed: 0,
        cost_usd: 0.0,
        duration_ms: 0,
    };
    if let Err(e) = work(&init, &cx, &run_id, &mut result).await {
        result.summary = e.to_string();
        cx.outbox.log(Level::Error, e.to_string()).await;
    }
    result.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    result
}

async fn work(
    init: &Initialize,
    cx: &Context,
    run_id: &str,
    result: &mut TaskResult,
) -> Result<(), IpcError> {
    let run_dir = cx
        .home
        .as_ref()
        .ok_or(IpcError::NoHome)?
        .join("agents/ipc")
        .join(run_id);
    // An empty path is how some supervisors say "none".
    let prompt_path = init
        .system_prompt_path
        .as_deref()
        .filter(|p| !p.as_os_str().is_empty());
    let agent = setup::load_agent(&init.agent_config_path, prompt_path)?;
    for warning in &agent.warnings {
        cx.outbox.log(Level::Warn, warning.clone()).await;
    }
    if let Some(path) = &init.knowledge_graph_path {
        let message = format!(
            "knowledgeGraphPath {} is ignored: ouro has no memory yet",
            path.display()
        );
        cx.outbox.log(Level::Warn, message).await;
    }
    let rules = agent.config.command_rules()?;
    let slug = setup::brain_slug(&agent.config)?;
    let tree = tree(init, &run_dir).await?;
    let dir = tree.clone();
    let snapshot = tokio::task::spawn_blocking(move || Snapshot::take(&dir))
        .await
        .map_err(|e| IpcError::Join(e.to_string()))?
        .map_err(|source| IpcError::Io {
            what: "read",
            path: tree.clone(),
            source,
        })?;
    let message = format!(
        "run {run_id}: the agent {} on {slug}, in {} ({} files)",
        agent.config.name,
        tree.display(),
        snapshot.len()
    );
    cx.outbox.log(Level::Info, message).await;

    let turn = match crate::brain::open(&slug, BrainConfig::new(&tree, run_dir.join("brain"))) {
        Ok(brain) => {
            let turn = drive(brain.as_ref(), &agent, rules, init, cx, run_id).await;
            // The process stays warm after a turn; this agent runs no other.
            if let Err(e) = brain.kill().await {
                tracing::warn!(error = %e, "could not end the agent's brain process");
            }
            turn
        }
        Err(e) => Err(IpcError::Brain(e)),
    };
    // What changed is the result even of a failed or stopped turn.
    let artifact = run_dir.join(format!("{run_id}.dogs.md"));
    let written = tokio::task::spawn_blocking({
        let (tree, artifact) = (tree.clone(), artifact.clone());
        let (agent, run_id) = (agent.config.name.clone(), run_id.to_string());
        move || write_artifact(snapshot, &tree, &artifact, &agent, &run_id)
    })
    .await
    .map_err(|e| IpcError::Join(e.to_string()))?;
    if let Ok(changed) = &written {
        result.output_artifact_path = Some(artifact);
        result.changed = *changed;
    }
    let turn = turn?;
    result.cost_usd = turn.cost_usd;
    match written {
        Ok(_) => {
            result.status = turn.status;
            result.summary = turn.summary;
        }
        // Without its bundle the supervisor cannot take the agent's work: not a success.
        Err(e) => {
            result.summary = format!("{} (and its changes could not be kept: {e})", turn.summary);
        }
    }
    Ok(())
}

/// The tree the agent works in: the directory the supervisor names, else the context
/// bundle's files in a fresh `tree/` of the run's folder.
async fn tree(init: &Initialize, run_dir: &Path) -> Result<PathBuf, IpcError> {
    if let Some(dir) = &init.working_directory {
        return dir.canonicalize().map_err(|source| IpcError::Io {
            what: "open",
            path: dir.clone(),
            source,
        });
    }
    let tree = run_dir.join("tree");
    let (bundle, into) = (init.initial_context_artifact_path.clone(), tree.clone());
    tokio::task::spawn_blocking(move || crate::paws::tree::materialise(&bundle, &into))
        .await
        .map_err(|e| IpcError::Join(e.to_string()))??;
    tree.canonicalize().map_err(|source| IpcError::Io {
        what: "open",
        path: tree.clone(),
        source,
    })
}

/// The dogs bundle of what changed in `tree` since `snapshot`; how many files it holds.
fn write_artifact(
    snapshot: Snapshot,
    tree: &Path,
    artifact: &Path,
    agent: &str,
    run_id: &str,
) -> Result<usize, IpcError> {
    let changes = snapshot.changes(tree).map_err(|source| IpcError::Io {
        what: "read",
        path: tree.to_path_buf(),
        source,
    })?;
    let front = DogsFront {
        source_turn: Some(run_id.to_string()),
        agent_name: Some(agent.to_string()),
        confidence_score: None,
    };
    let bytes = write_dogs_v1(&front, &changes)?;
    crate::sys::atomic::write(artifact, &bytes).map_err(|source| IpcError::Io {
        what: "write",
        path: artifact.to_path_buf(),
        source,
    })?;
    Ok(changes.len())
}

/// How the turn ended.
struct Turn {
    status: Status,
    summary: String,
    cost_usd: f64,
}

/// Runs the task as one served turn, relaying its events, until it ends or is stopped.
async fn drive(
    brain: &dyn BrainCli,
    agent: &Agent,
    rules: CommandRules,
    init: &Initialize,
    cx: &Context,
    run_id: &str,
) -> Result<Turn, IpcError> {
    if let Some(why) = cx.stop.borrow().clone() {
        return Ok(Turn {
            status: Status::Failure,
            summary: why,
            cost_usd: 0.0,
        });
    }
    let config = &agent.config;
    let options = TurnOptions::for_agent(config, &agent.prompt);
    let (events, mut events_rx) = mpsc::unbounded_channel();
    let request = TurnRequest {
        prompt: init.task.clone(),
        options,
        label: run_id.to_string(),
        events,
        ask: asker(cx.outbox.clone(), cx.questions.clone(), rules),
        stop: tokio_util::sync::CancellationToken::new(),
    };
    let deadline = config.timeout_s.map(Duration::from_secs);
    let mut stop = cx.stop.clone();
    let mut text = String::new();
    let mut why_stopped: Option<String> = None;
    let running = brain.turn(request);
    tokio::pin!(running);
    let report = loop {
        tokio::select! {
            // The turn first: once it has begun, an interrupt reaches it even before its
            // process runs.
            biased;
            report = &mut running => break report,
            Some(event) = events_rx.recv() => relay(&cx.outbox, event, &mut text).await,
            why = stopped(&mut stop), if why_stopped.is_none() => {
                why_stopped = Some(why);
                interrupt(brain).await;
            }
            _ = sleep_or_never(deadline), if why_stopped.is_none() => {
                let limit = deadline.unwrap_or_default().as_secs();
                why_stopped = Some(format!("timed out after {limit} s (engine.timeout_s)"));
                interrupt(brain).await;
            }
        }
    };
    while let Ok(event) = events_rx.try_recv() {
        relay(&cx.outbox, event, &mut text).await;
    }
    let report = report?;
    let success = !report.is_error && why_stopped.is_none();
    Ok(Turn {
        status: if success {
            Status::Success
        } else {
            Status::Failure
        },
        summary: match why_stopped {
            Some(why) => why,
            None if report.is_error && text.trim().is_empty() => {
                "the brain's turn ended with an error".into()
            }
            None => text.trim().to_string(),
        },
        cost_usd: report.cost_usd,
    })
}

/// Why the task is to stop, once it is.
async fn stopped(stop: &mut watch::Receiver<Option<String>>) -> String {
    match stop.wait_for(Option::is_some).await {
        Ok(why) => why.clone().unwrap_or_default(),
        Err(_) => "the agent is ending".into(),
    }
}

async fn sleep_or_never(deadline: Option<Duration>) {
    match deadline {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Stops the turn: an interrupt keeps the conversation whole; a brain that does not stop for
/// it is killed.
async fn interrupt(brain: &dyn BrainCli) {
    let stopped = tokio::time::timeout(STOP_GRACE, brain.interrupt()).await;
    if !matches!(stopped, Ok(Ok(true)))
        && let Err(e) = brain.kill().await
    {
        tracing::warn!(error = %e, "could not kill a stopped agent's brain");
    }
}

/// One UI event as a `log` message; the last answer (or error) is kept for the summary.
async fn relay(outbox: &Outbox, event: UiEvent, text: &mut String) {
    if let Some(said) = event.summary_text() {
        said.clone_into(text);
    }
    let (level, message) = match &event {
        UiEvent::SessionInit { model, .. } => (
            Level::Info,
            format!("the brain's session began, on {model}"),
        ),
        // Streamed text is chatty: a supervisor that shows it live reads `debug`.
        UiEvent::ChatDelta { text, .. } => (Level::Debug, text.clone()),
        UiEvent::ChatComplete { text: said, .. } => (Level::Info, said.clone()),
        UiEvent::ToolStart { name, .. } => (Level::Info, format!("{name} runs")),
        UiEvent::ToolResult { is_error, .. } => (
            Level::Info,
            if *is_error {
                "a tool call failed".to_string()
            } else {
                "a tool call finished".to_string()
            },
        ),
        UiEvent::PermissionRequest { tool_name, .. } => {
            (Level::Info, format!("{tool_name} waits for permission"))
        }
        UiEvent::SessionComplete { cost_usd, .. } => (
            Level::Info,
            format!("the turn is complete (${cost_usd:.4})"),
        ),
        UiEvent::SessionError { error, .. } => (Level::Error, error.clone()),
        UiEvent::ProcessExit { .. } => (Level::Info, "the brain's turn ended".to_string()),
    };
    outbox
        .send(ToSupervisor::Log(Log {
            level,
            message,
            event: Some(json!(event)),
        }))
        .await;
}

/// The task's permission asker: a Bash command the agent's patterns settle is answered at once
/// (a denial names the pattern, so the model can change course); anything else becomes a
/// `permission:request` and waits for the supervisor's answer.
fn asker(outbox: Arc<Outbox>, questions: Questions, rules: CommandRules) -> Asker {
    let rules = Arc::new(rules);
    let granted = Granted::default();
    Arc::new(move |question: PermissionQuestion| {
        let (outbox, questions, rules, granted) = (
            outbox.clone(),
            questions.clone(),
            rules.clone(),
            granted.clone(),
        );
        Box::pin(async move {
            match rules.judge_call(&question.tool_name, &question.input) {
                CommandVerdict::Denied { pattern } => {
                    let command = question.input["command"].as_str().unwrap_or_default();
                    let message = format!(
                        "the definition's denied_commands pattern `{pattern}` refused `{command}`"
                    );
                    outbox.log(Level::Info, message).await;
                    return PermissionAnswer::Deny {
                        message: CommandRules::refusal(&pattern),
                    };
                }
                CommandVerdict::Allowed { .. } => {
                    return PermissionAnswer::allow(false);
                }
                CommandVerdict::Unsettled => {
                    if let Some(rule) = granted.covering(&question.tool_name, &question.input) {
                        outbox
                            .log(
                                Level::Info,
                                format!(
                                    "{} runs under the granted rule {rule}",
                                    question.tool_name
                                ),
                            )
                            .await;
                        return PermissionAnswer::allow(false);
                    }
                }
                CommandVerdict::Unseen => {}
            }
            let request_id = uuid::Uuid::new_v4().to_string();
            let answered = questions.open(&request_id);
            let message = question
                .reason
                .clone()
                .unwrap_or_else(|| format!("May {} run?", question.tool_name));
            outbox
                .send(ToSupervisor::PermissionRequest(PermissionRequest {
                    request_id,
                    tool_name: question.tool_name.clone(),
                    input: question.input.clone(),
                    permission_result: AskResult {
                        behavior: Ask::Ask,
                        message,
                    },
                    suggested_rules: question.always_rules.clone(),
                }))
                .await;
            match answered.await {
                Ok(response) => {
                    let answer = answer(&rules, &question, response);
                    granted.remember(&question, &answer);
                    answer
                }
                Err(_) => PermissionAnswer::Deny {
                    message: "The task ended before the supervisor answered.".into(),
                },
            }
        })
    })
}

/// The brain's answer for the supervisor's `response` to `question`; an edited input is
/// judged again by the agent's command patterns (denied wins, even over the supervisor).
fn answer(
    patterns: &CommandRules,
    question: &PermissionQuestion,
    response: PermissionResponse,
) -> PermissionAnswer {
    if response.behavior == Behavior::Deny {
        return PermissionAnswer::Deny {
            message: response
                .message
                .unwrap_or_else(|| "The supervisor denied this call.".into()),
        };
    }
    let updated_input = response.updated_input.filter(|i| *i != question.input);
    if let Some(input) = &updated_input
        && let CommandVerdict::Denied { pattern } = patterns.judge_call(&question.tool_name, input)
    {
        return PermissionAnswer::Deny {
            message: CommandRules::refusal(&pattern),
        };
    }
    PermissionAnswer::Allow {
        remember: !response.new_rules.is_empty(),
        updated_input,
        rules: response.new_rules.iter().flat_map(rule_texts).collect(),
    }
}

/// A `newRules` entry as rule texts (`Bash(npm test:*)`); none when it names no rule.
fn rule_texts(rule: &NewRule) -> Vec<String> {
    let one = |object: &serde_json::Map<String, Value>| {
        let tool = object.get("toolName")?.as_str()?;
        Some(match object.get("ruleContent").and_then(Value::as_str) {
            Some(content) => format!("{tool}({content})"),
            None => tool.to_string(),
        })
    };
    match rule {
        NewRule::Text(text) if !text.trim().is_empty() => vec![text.trim().to_string()],
        NewRule::Text(_) => Vec::new(),
        NewRule::Object(object) => match object.get("rules").and_then(Value::as_array) {
            Some(rules) => rules
                .iter()
                .filter_map(|r| r.as_object().and_then(one))
                .collect(),
            None => one(object).into_iter().collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::ipc::messages::NewRule;

    fn response(behavior: Behavior) -> PermissionResponse {
        PermissionResponse {
            request_id: "r".into(),
            behavior,
            updated_input: None,
            new_rules: Vec::new(),
            message: None,
        }
    }

    #[test]
    fn a_response_becomes_the_brains_answer() {
        let patterns = CommandRules::compile(&[], &["rm .*".into()]).unwrap();
        let question = PermissionQuestion {
            tool_name: "Bash".into(),
            input: json!({"command": "make"}),
            reason: None,
            always_rules: vec!["Bash(make)".into()],
        };
        let ask = |response| answer(&patterns, &question, response);
        assert_eq!(
            ask(response(Behavior::Allow)),
            PermissionAnswer::allow(false)
        );
        // The same input is no edit; rules given as text or as the SDK's objects.
        let mut always = response(Behavior::Allow);
        always.new_rules = vec![
            NewRule::Text("Bash(make)".into()),
            NewRule::Object(
                json!({"toolName": "Bash", "ruleContent": "make test:*"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            NewRule::Object(
                json!({"type": "addRules", "rules": [{"toolName": "Read"}]})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        ];
        always.updated_input = Some(json!({"command": "make"}));
        assert_eq!(
            ask(always),
            PermissionAnswer::Allow {
                remember: true,
                updated_input: None,
                rules: vec![
                    "Bash(make)".into(),
                    "Bash(make test:*)".into(),
                    "Read".into()
                ],
            }
        );
        // An object naming no rule: the call's suggested rule is the one remembered.
        let mut vague = response(Behavior::Allow);
        vague.new_rules = vec![NewRule::Object(Default::default())];
        assert_eq!(ask(vague), PermissionAnswer::allow(true));
        let mut changed = response(Behavior::Allow);
        changed.updated_input = Some(json!({"command": "make -n"}));
        assert_eq!(
            ask(changed),
            PermissionAnswer::Allow {
                remember: false,
                updated_input: Some(json!({"command": "make -n"})),
                rules: Vec::new(),
            }
        );
        // Denied wins over the supervisor's edit.
        let mut sneaky = response(Behavior::Allow);
        sneaky.updated_input = Some(json!({"command": "rm -rf src"}));
        assert!(matches!(
            ask(sneaky),
            PermissionAnswer::Deny { message } if message.contains("rm .*")
        ));
        assert_eq!(
            ask(response(Behavior::Deny)),
            PermissionAnswer::Deny {
                message: "The supervisor denied this call.".into()
            }
        );
        let mut told = response(Behavior::Deny);
        told.message = Some("Not on Fridays.".into());
        assert_eq!(
            ask(told),
            PermissionAnswer::Deny {
                message: "Not on Fridays.".into()
            }
        );
    }
}
