//! The agent foundry's side in the daemon: an agent instance runs as a clone with a
//! definition. A run waits for a free place (`agents.maxConcurrent`), snapshots its tree,
//! runs the task as one turn of the clone's brain with the definition's tools, rules and
//! prompt, parks the questions its rules do not settle (answerable from any client by id,
//! denied when `agents.approvalTimeout` passes), then writes what it changed as a dogs bundle
//! and reports its `task:result` to watchers, the log and `runs.jsonl`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::clone::CloneHandle;
use super::frame::{Frame, Header};
use super::webhook::Webhook;
use super::{DaemonError, Paths};
use crate::agents::changes::{Change, Snapshot};
use crate::agents::instance::{
    AgentState, Instance, InstanceConfig, Instances, RunRecord, StateRecord,
};
use crate::agents::spec::{CommandRules, CommandVerdict};
use crate::brain::granted::Granted;
use crate::brain::{Asker, PermissionAnswer, PermissionQuestion, TurnOptions, TurnRequest};
use crate::paws::artifact::write_dogs_v1;
use crate::paws::front::DogsFront;
use crate::sys::sync::lock;
use crate::ui_event::UiEvent;

const APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);
const MAX_CONCURRENT: usize = 20;
/// How long a stopped run's brain has to end its turn before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

pub(super) struct Foundry {
    pub instances: Instances,
    slots: Arc<Semaphore>,
    /// The run of each instance that runs now.
    runs: Mutex<HashMap<String, Running>>,
    pub approval_timeout: Duration,
    webhook: Option<Webhook>,
}

struct Running {
    run_id: String,
    stop: CancellationToken,
}

/// What a run needs from the request.
pub(super) struct RunRequest {
    pub task: String,
    pub dir: PathBuf,
}

/// Runs a daemon that stopped (killed, crashed) left running, queued or blocked: none can go
/// on, so each is recorded as failed, as a run that ends does (its line in `runs.jsonl`), and
/// its instance can be run, stopped or removed again.
fn end_orphaned_runs(instances: &Instances) {
    let me = std::process::id();
    for instance in instances.list() {
        let mut state = instance.state();
        let live = matches!(
            state.state,
            AgentState::Running | AgentState::Blocked | AgentState::Queued
        );
        if !live || state.pid == Some(me) {
            continue;
        }
        let now = chrono::Utc::now().to_rfc3339();
        let record = RunRecord {
            run_id: state.run_id.clone().unwrap_or_default(),
            task: state.task.clone().unwrap_or_default(),
            status: "failure".into(),
            summary:
                "the daemon that ran it stopped (it was killed or crashed) before the run ended"
                    .into(),
            cost_usd: state.cost_usd,
            duration_ms: 0,
            dir: instance.dir.clone(),
            artifact: None,
            changed: 0,
            started_at: now.clone(),
            ended_at: now,
        };
        if let Err(e) = instance.record_run(&record) {
            tracing::warn!(agent = %instance.name, error = %e, "could not record an orphaned run");
        }
        state.state = AgentState::Failed;
        state.pid = None;
        if let Err(e) = instance.set_state(&state) {
            tracing::warn!(agent = %instance.name, error = %e, "could not mark an orphaned run failed");
        }
    }
}

impl Foundry {
    /// The foundry of `paths`' home, with `agents.*` from the user's settings
    /// (`OURO_AGENT_APPROVAL_TIMEOUT` overrides the timeout, for tests and scripts).
    pub(super) fn new(paths: &Paths) -> Foundry {
        let settings = crate::settings::read_settings(&paths.home.join("settings.json"))
            .ok()
            .flatten()
            .map(|s| s.agents)
            .unwrap_or_default();
        let approval_timeout = std::env::var("OURO_AGENT_APPROVAL_TIMEOUT")
            .ok()
            .and_then(|s| s.parse().ok())
            .or(settings.approval_timeout)
            .map_or(APPROVAL_TIMEOUT, Duration::from_secs);
        let instances = Instances::in_home(&paths.home);
        end_orphaned_runs(&instances);
        Foundry {
            instances,
            slots: Arc::new(Semaphore::new(
                settings.max_concurrent.unwrap_or(MAX_CONCURRENT).max(1),
            )),
            runs: Mutex::new(HashMap::new()),
            approval_timeout,
            webhook: Webhook::new(&paths.home, settings.notify.map(|n| n.url)),
        }
    }

    /// Claims `name` for a new run; its id, or an error when one runs already.
    pub(super) fn claim(&self, name: &str) -> Result<(String, CancellationToken), DaemonError> {
        let mut runs = lock(&self.runs);
        if let Some(running) = runs.get(name) {
            return Err(DaemonError::Client(format!(
                "the agent {name} is running already (run {}); `ouro agent stop {name}` stops it",
                running.run_id
            )));
        }
        let run_id = format!(
            "{}-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let stop = CancellationToken::new();
        runs.insert(
            name.to_string(),
            Running {
                run_id: run_id.clone(),
                stop: stop.clone(),
            },
        );
        Ok((run_id, stop))
    }

    /// Asks the run of `name` to stop; its run id.
    pub(super) fn stop(&self, name: &str) -> Result<String, DaemonError> {
        let runs = lock(&self.runs);
        let running = runs
            .get(name)
            .ok_or_else(|| DaemonError::Client(format!("the agent {name} is not running")))?;
        running.stop.cancel();
        Ok(running.run_id.clone())
    }

    fn release(&self, name: &str) {
        lock(&self.runs).remove(name);
    }
}

/// Runs one task of `instance` on `clone` to its end; returns the run's record.
pub(super) async fn run(
    foundry: Arc<Foundry>,
    clone: Arc<CloneHandle>,
    instance: Instance,
    run_id: String,
    stop: CancellationToken,
    request: RunRequest,
) {
    let name = instance.name.clone();
    let record = run_inner(&foundry, &clone, &instance, &run_id, &stop, request).await;
    if let Err(e) = instance.record_run(&record) {
        tracing::warn!(agent = %name, error = %e, "could not record an agent run");
    }
    let state = match record.status.as_str() {
        "success" => AgentState::Done,
        "stopped" => AgentState::Stopped,
        _ => AgentState::Failed,
    };
    set_state(&instance, state, Some(&record), record.cost_usd);
    log(&instance, &run_id, "task:result", json!(record));
    foundry.release(&name);
    if let Some(hook) = &foundry.webhook {
        hook.send(json!({"type": "task:result", "agent": name, "result": record}));
    }
    clone.broadcast(
        Header::AgentResult {
            name,
            result: json!(record),
        }
        .into(),
    );
}

async fn run_inner(
    foundry: &Foundry,
    clone: &Arc<CloneHandle>,
    instance: &Instance,
    run_id: &str,
    stop: &CancellationToken,
    request: RunRequest,
) -> RunRecord {
    let started_at = now();
    let started = Instant::now();
    let mut record = RunRecord {
        run_id: run_id.to_string(),
        task: request.task.clone(),
        status: "failure".into(),
        summary: String::new(),
        cost_usd: 0.0,
        duration_ms: 0,
        dir: request.dir.clone(),
        artifact: None,
        changed: 0,
        started_at,
        ended_at: String::new(),
    };
    let finish = |mut record: RunRecord, summary: String| {
        record.summary = summary;
        record.duration_ms = started.elapsed().as_millis() as u64;
        record.ended_at = now();
        record
    };
    let config = match instance.config() {
        Ok(config) => config,
        Err(e) => return finish(record, e.to_string()),
    };
    let rules = match config.command_rules() {
        Ok(rules) => rules,
        Err(e) => return finish(record, e.to_string()),
    };
    let prompt = instance.system_prompt().unwrap_or_default();
    set_state(instance, AgentState::Queued, Some(&record), 0.0);
    let _place = tokio::select! {
        place = foundry.slots.clone().acquire_owned() => place.ok(),
        _ = stop.cancelled() => {
            record.status = "stopped".into();
            return finish(record, "stopped before it started".into());
        }
    };
    set_state(instance, AgentState::Running, Some(&record), 0.0);
    let dir = request.dir.clone();
    let snapshot = match tokio::task::spawn_blocking(move || Snapshot::take(&dir)).await {
        Ok(Ok(snapshot)) => snapshot,
        Ok(Err(e)) => {
            let summary = format!("could not read {}: {e}", request.dir.display());
            return finish(record, summary);
        }
        Err(e) => return finish(record, format!("could not read the tree: {e}")),
    };
    let turn = clone.wait_turn().await;
    // A stop that came while it waited: no turn starts (an interrupt would find none to stop).
    if stop.is_cancelled() {
        record.status = "stopped".into();
        return finish(record, "stopped before it started".into());
    }
    clone.mark_turn(&request.task);
    clone.begin_turn(None);
    clone.broadcast(
        Header::Notice {
            message: format!(
                "agent {}: run {run_id}: {}",
                instance.name,
                first_line(&request.task)
            ),
        }
        .into(),
    );
    log(
        instance,
        run_id,
        "task:start",
        json!({"task": request.task, "dir": request.dir}),
    );

    let (events, mut events_rx) = mpsc::unbounded_channel();
    let asker = asker(
        clone.clone(),
        instance.clone(),
        rules,
        (foundry.approval_timeout, foundry.webhook.clone()),
        run_id,
    );
    let options = TurnOptions::for_agent(&config, &prompt);
    let turn_request = TurnRequest {
        prompt: request.task.clone(),
        options,
        label: instance.name.clone(),
        events,
        ask: asker,
        stop: tokio_util::sync::CancellationToken::new(),
    };
    let deadline = config.timeout_s.map(Duration::from_secs);
    let mut text = String::new();
    let mut why_stopped = None;
    let running = clone.brain.turn(turn_request);
    tokio::pin!(running);
    let report = loop {
        tokio::select! {
            report = &mut running => break report,
            Some(event) = events_rx.recv() => relay(clone, instance, run_id, event, &mut text),
            _ = stop.cancelled(), if why_stopped.is_none() => {
                why_stopped = Some("stopped by `ouro agent stop`".to_string());
                interrupt(clone).await;
            }
            _ = sleep_or_never(deadline), if why_stopped.is_none() => {
                why_stopped = Some(format!("timed out after {} s (engine.timeout_s)", deadline.unwrap_or_default().as_secs()));
                interrupt(clone).await;
            }
        }
    };
    while let Ok(event) = events_rx.try_recv() {
        relay(clone, instance, run_id, event, &mut text);
    }
    if let Err(e) = clone.brain.release().await {
        tracing::warn!(agent = %instance.name, error = %e, "could not end an agent's brain process");
    }
    clone.unmark_turn();
    clone.end_activity();
    drop(turn);

    let summary = match (&report, &why_stopped) {
        (_, Some(why)) => why.clone(),
        (Ok(_), None) => text.trim().to_string(),
        (Err(e), None) => format!("the brain failed: {e}"),
    };
    if let Ok(report) = &report {
        record.cost_usd = report.cost_usd;
        if !report.is_error && why_stopped.is_none() {
            record.status = "success".into();
        }
    }
    if stop.is_cancelled() {
        record.status = "stopped".into();
    }
    let dir = request.dir.clone();
    match tokio::task::spawn_blocking(move || snapshot.changes(&dir)).await {
        Ok(Ok(changes)) => {
            record.changed = changes.len();
            let path = instance.artifacts().join(format!("{run_id}.dogs.md"));
            match write_artifact(&path, &instance.name, run_id, &changes) {
                Ok(()) => record.artifact = Some(path),
                Err(e) => {
                    tracing::warn!(agent = %instance.name, error = %e, "could not write a run's artifact")
                }
            }
        }
        Ok(Err(e)) => {
            tracing::warn!(agent = %instance.name, error = %e, "could not compare a run's tree")
        }
        Err(e) => {
            tracing::warn!(agent = %instance.name, error = %e, "could not compare a run's tree")
        }
    }
    finish(record, summary)
}

async fn sleep_or_never(deadline: Option<Duration>) {
    match deadline {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Stops the brain's turn: an interrupt first, the process if that does not end it.
async fn interrupt(clone: &CloneHandle) {
    let stopped = tokio::time::timeout(STOP_GRACE, clone.brain.interrupt()).await;
    if !matches!(stopped, Ok(Ok(true))) {
        let _ = clone.brain.kill().await;
    }
}

/// The brain an instance runs on (a model the brains' table does not know is an error that
/// says so).
pub(super) fn brain_slug(config: &InstanceConfig, flag: Option<&str>) -> Result<String, String> {
    crate::brain::slug::for_agent(config, flag).map_err(|model| {
        format!(
            "the agent {}'s model {model} is not one ouro knows; name a brain with --brain or engine.brain (`ouro brains` lists them)",
            config.name
        )
    })
}

/// The run's permission asker: a Bash command its patterns settle is answered at once (a
/// denial names the pattern, so the model can change course); anything else is parked for
/// any client to answer until the approval timeout, with the instance shown as blocked.
fn asker(
    clone: Arc<CloneHandle>,
    instance: Instance,
    rules: CommandRules,
    (timeout, webhook): (Duration, Option<Webhook>),
    run_id: &str,
) -> Asker {
    let rules = Arc::new(rules);
    let run_id = run_id.to_string();
    let granted = Granted::default();
    Arc::new(move |question: PermissionQuestion| {
        let (clone, instance, rules, run_id, webhook, granted) = (
            clone.clone(),
            instance.clone(),
            rules.clone(),
            run_id.clone(),
            webhook.clone(),
            granted.clone(),
        );
        Box::pin(async move {
            match rules.judge_call(&question.tool_name, &question.input) {
                CommandVerdict::Denied { pattern } => {
                    log(
                        &instance,
                        &run_id,
                        "permission:denied",
                        json!({"input": question.input, "pattern": pattern}),
                    );
                    return PermissionAnswer::Deny {
                        message: CommandRules::refusal(&pattern),
                    };
                }
                CommandVerdict::Allowed { .. } => {
                    return PermissionAnswer::allow(false);
                }
                CommandVerdict::Unsettled => {
                    if granted
                        .covering(&question.tool_name, &question.input)
                        .is_some()
                    {
                        return PermissionAnswer::allow(false);
                    }
                }
                CommandVerdict::Unseen => {}
            }
            let mut state = instance.state();
            state.state = AgentState::Blocked;
            let _ = instance.set_state(&state);
            // Nobody is attached to the run itself: the question goes to watchers and waits
            // in the registry for an answer from any client.
            let (nobody, _) = mpsc::channel::<Frame>(1);
            let answer = clone
                .ask_permission_then(question.clone(), &nobody, timeout, |parked| {
                    if let Some(hook) = &webhook {
                        hook.send(json!({"type": "permission:request", "runId": run_id, "question": parked}));
                    }
                })
                .await;
            granted.remember(&question, &answer);
            let mut state = instance.state();
            if state.state == AgentState::Blocked {
                state.state = AgentState::Running;
                let _ = instance.set_state(&state);
            }
            answer
        })
    })
}

/// One event of the run: to the log, to watchers, and its text kept for the summary.
fn relay(
    clone: &CloneHandle,
    instance: &Instance,
    run_id: &str,
    event: UiEvent,
    text: &mut String,
) {
    if let Some(said) = event.summary_text() {
        said.clone_into(text);
    }
    if !matches!(event, UiEvent::ChatDelta { .. }) {
        log(instance, run_id, "event", json!(event));
    }
    clone.broadcast_event(event);
}

fn set_state(instance: &Instance, state: AgentState, run: Option<&RunRecord>, cost_usd: f64) {
    let record = StateRecord {
        state,
        run_id: run.map(|r| r.run_id.clone()),
        task: run.map(|r| r.task.clone()),
        pid: Some(std::process::id()),
        cost_usd,
    };
    if let Err(e) = instance.set_state(&record) {
        tracing::warn!(agent = %instance.name, error = %e, "could not save an agent's state");
    }
}

/// Appends one line to the instance's log: `{"runId", "at", "type", "data"}`.
fn log(instance: &Instance, run_id: &str, kind: &str, data: serde_json::Value) {
    let line = json!({"runId": run_id, "at": now(), "type": kind, "data": data});
    let mut bytes = line.to_string().into_bytes();
    bytes.push(b'\n');
    if let Err(e) = crate::sys::atomic::append_whole(&instance.log(), &bytes) {
        tracing::warn!(agent = %instance.name, error = %e, "could not write an agent's log");
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn first_line(text: &str) -> String {
    crate::text::truncate(text.lines().next().unwrap_or_default(), 80)
}

/// The run's changes as a dogs bundle with v1 front matter.
fn write_artifact(
    path: &Path,
    agent: &str,
    run_id: &str,
    changes: &[Change],
) -> std::io::Result<()> {
    let front = DogsFront {
        source_turn: Some(run_id.to_string()),
        agent_name: Some(agent.to_string()),
        confidence_score: None,
    };
    let bytes = write_dogs_v1(&front, changes).map_err(std::io::Error::other)?;
    crate::sys::atomic::write(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(mode: Option<&str>, denied: &[&str]) -> InstanceConfig {
        InstanceConfig {
            name: "a".into(),
            source: "a.agent.md".into(),
            version: None,
            description: String::new(),
            tools: None,
            allowed_rules: Vec::new(),
            disallowed_tools: Vec::new(),
            allowed_commands: Vec::new(),
            denied_commands: denied.iter().map(|d| d.to_string()).collect(),
            model: Some("haiku".into()),
            brain: None,
            permission_mode: mode.map(String::from),
            max_turns: None,
            max_cost_usd: None,
            timeout_s: None,
            isolation: None,
            created_at: String::new(),
        }
    }

    #[test]
    fn patterns_need_a_mode_that_asks_and_the_model_names_the_brain() {
        assert!(
            config(Some("acceptEdits"), &["rm .*"])
                .command_rules()
                .is_ok()
        );
        assert!(
            config(Some("bypassPermissions"), &[])
                .command_rules()
                .is_ok()
        );
        for mode in ["bypassPermissions", "auto"] {
            let refused = config(Some(mode), &["rm .*"]).command_rules().unwrap_err();
            assert!(refused.to_string().contains(mode), "{refused}");
        }
        let c = config(None, &[]);
        assert_eq!(brain_slug(&c, None).unwrap(), "ouro@anthropic/claude/haiku");
        assert_eq!(brain_slug(&c, Some("claude@x")).unwrap(), "claude@x");
        let unknown = InstanceConfig {
            model: Some("gpt-9".into()),
            ..c
        };
        assert!(brain_slug(&unknown, None).unwrap_err().contains("gpt-9"));
    }
}
