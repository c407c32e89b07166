//! One trial: a fresh tree made from the task's context (a git repository with the start as
//! its one commit), the brain working in it unattended, then the verdict of the task's tests,
//! run in the OS sandbox after the hidden `tests/` are copied in. The agent's change is taken
//! before the tests arrive, so nothing under `tests/` is ever in an artifact or shown to a model.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::results::{Status, Tokens, Trial};
use super::task::{Context, Place, Task};
use crate::agents::changes::Snapshot;
use crate::agents::spec::{CommandRules, CommandVerdict};
use crate::brain::{
    Asker, BrainCli, BrainConfig, PermissionAnswer, PermissionQuestion, TurnOptions, TurnRequest,
};
use crate::paws::artifact::write_dogs_v1;
use crate::paws::front::DogsFront;
use crate::ui_event::UiEvent;

/// How long an interrupted brain gets to stop before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// What every trial of a run shares.
#[derive(Debug, Clone)]
pub(super) struct Setup {
    pub(super) brain: String,
    /// The agent definition's prompt and options, when one is named.
    pub(super) options: TurnOptions,
    /// Its command patterns (none without a definition).
    pub(super) patterns: CommandRules,
    pub(super) permission_mode: Option<String>,
    /// Where results, artifacts and logs go.
    pub(super) out: PathBuf,
    /// Folders the agent may not read (the suite: its tests and references; the results).
    pub(super) hidden: Vec<PathBuf>,
    /// A memory the agent's Recall reads (the second pass of `--learn`).
    pub(super) memory_file: Option<PathBuf>,
}

/// A trial's result with the change it made (for the judge).
pub(super) struct Ran {
    pub(super) trial: Trial,
    /// The dogs bundle of its change, when there was one to take.
    pub(super) change: Option<Vec<u8>>,
}

fn infra(task: &str, n: u32, why: String) -> Ran {
    Ran {
        trial: Trial::infra(task, n, &why),
        change: None,
    }
}

/// Runs trial `n` of `task`.
pub(super) async fn run(task: &Task, n: u32, setup: &Setup) -> Ran {
    let work = match tempfile::Builder::new().prefix("ouro-eval-").tempdir() {
        Ok(work) => work,
        Err(e) => return infra(&task.id, n, format!("cannot make a trial folder: {e}")),
    };
    let tree = work.path().join("tree");
    let prepared = {
        let (context, tree) = (task.context.clone(), tree.clone());
        tokio::task::spawn_blocking(move || start_tree(&context, &tree)).await
    };
    let (snapshot, start) = match prepared {
        Ok(Ok(started)) => started,
        Ok(Err(why)) => return infra(&task.id, n, why),
        Err(e) => return infra(&task.id, n, e.to_string()),
    };
    let name = format!("{}-{n}", task.id);
    let log_rel = format!("logs/{name}.jsonl");
    let mut config = BrainConfig::new(&tree, work.path().join("brain"));
    config
        .env
        .retain(|(k, _)| !super::verify::SHARED_OUTPUTS.iter().any(|v| k == v));
    if let Some(memory) = &setup.memory_file {
        config = config.env(super::learn::MEMORY_FILE_ENV, memory);
    }
    let container = match &task.place {
        Place::Host => None,
        Place::Unbuilt(_) => return infra(&task.id, n, "the task's image was not built".into()),
        Place::Image(image) => {
            let docker = super::docker::Docker::from_env();
            // It ends by itself after the trial's limits, should ouro be killed before removing it.
            let lifetime = Duration::from_secs(task.timeout_s + task.tests_timeout_s) + STOP_GRACE;
            match docker
                .start(image, &tree, &work.path().join("logs"), lifetime)
                .await
            {
                Ok(container) => Some(container),
                Err(why) => return infra(&task.id, n, why),
            }
        }
    };
    if let Some(container) = &container {
        match container.brain_program(work.path(), &setup.brain, &config.env) {
            Ok(program) => config = config.program(program),
            Err(why) => return infra(&task.id, n, why),
        }
    }
    // The tree as the agent sees it (in a container, the image's working directory).
    let seen = container
        .as_ref()
        .map_or(tree.clone(), |c| PathBuf::from(&c.workdir));
    let brain = match crate::brain::open(&setup.brain, config) {
        Ok(brain) => brain,
        Err(e) => return infra(&task.id, n, format!("the brain cannot start: {e}")),
    };
    let started = Instant::now();
    let agent = drive(
        brain.as_ref(),
        task,
        setup,
        &seen,
        &setup.out.join(&log_rel),
    )
    .await;
    let wall_s = started.elapsed().as_secs_f64();
    let _ = brain.release().await;
    if let Some(container) = &container {
        // Nothing the agent started may go on changing the tree or see the tests.
        container.stop_processes().await;
        container.hand_back().await;
    }

    let change = {
        let tree = tree.clone();
        tokio::task::spawn_blocking(move || snapshot.changes(&tree)).await
    };
    let (artifact, change) = match change {
        Ok(Ok(changes)) => {
            let front = DogsFront {
                source_turn: Some(name.clone()),
                agent_name: Some(setup.brain.clone()),
                confidence_score: None,
            };
            match write_dogs_v1(&front, &changes) {
                Ok(bytes) => {
                    let rel = format!("artifacts/{name}.dogs.md");
                    let written = crate::sys::atomic::write(&setup.out.join(&rel), &bytes);
                    (
                        written.ok().map(|_| rel),
                        (!changes.is_empty()).then_some(bytes),
                    )
                }
                Err(_) => (None, None),
            }
        }
        _ => (None, None),
    };

    let patch = {
        let (tree, path) = (
            tree.clone(),
            setup.out.join(format!("artifacts/{name}.patch")),
        );
        tokio::task::spawn_blocking(move || write_patch(&tree, &start, &path))
            .await
            .ok()
            .flatten()
            .map(|_| format!("artifacts/{name}.patch"))
    };
    let verdict = match &container {
        Some(container) => {
            let limit = Duration::from_secs(task.tests_timeout_s);
            (container.verify(task.hidden_tests.as_deref(), &task.tests, limit)).await
        }
        None => verify(task, &tree).await,
    };
    if let Some(container) = container {
        container.finish().await;
    }
    let (mut status, mut error) = match (&agent.ended, &verdict) {
        (Ended::Infra(why), _) => (Status::InfraError, Some(why.clone())),
        (_, Err(why)) => (Status::InfraError, Some(why.clone())),
        (Ended::TimedOut, _) => (
            Status::AgentTimeout,
            Some(format!("ran past its {} s", task.timeout_s)),
        ),
        (Ended::OverBudget, _) => (Status::BudgetExceeded, agent.summary.clone()),
        (Ended::Done, Ok(true)) => (Status::Passed, None),
        (Ended::Done, Ok(false)) => (Status::Failed, None),
    };
    if status == Status::Passed && artifact.is_none() && change.is_some() {
        status = Status::InfraError;
        error = Some("the trial's change could not be written".into());
    }
    Ran {
        trial: Trial {
            task: task.id.clone(),
            trial: n,
            status,
            tests_passed: verdict.ok(),
            judge: None,
            cost_usd: agent.cost_usd,
            tokens: agent.tokens,
            wall_s,
            time_to_first_edit_s: agent.first_edit_s,
            turns: agent.turns,
            tool_calls: agent.tool_calls,
            artifact,
            log: Some(log_rel),
            patch,
            error,
            judge_error: None,
            passed_unchanged: status == Status::Passed && change.is_none(),
        },
        change,
    }
}

/// The change against the start commit as a git patch (new files included) at `path`; `None` when
/// git cannot make it.
fn write_patch(tree: &Path, start: &str, path: &Path) -> Option<()> {
    git(tree, &["add", "-A"]).ok()?;
    // git's own diff: the safety settings empty any external one a repository could name.
    let diff = git(
        tree,
        &[
            "diff",
            "--cached",
            "--binary",
            "--no-ext-diff",
            "--no-textconv",
            start,
        ],
    )
    .ok()?;
    crate::sys::atomic::write(path, &diff).ok()
}

/// git in the trial's tree, with the settings that run nothing a repository configures and
/// an identity of its own; its standard output as bytes (a patch need not be UTF-8), or why
/// it failed.
fn git(tree: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let out = crate::sys::git::in_work_tree("git", tree)
        .args([
            "-c",
            "user.name=ouro eval",
            "-c",
            "user.email=eval@ouro.invalid",
        ])
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// The task's context written as a fresh tree, committed as the start; the snapshot the
/// change is taken against.
fn start_tree(context: &Context, tree: &Path) -> Result<(Snapshot, String), String> {
    match context {
        Context::Cats(bundle) => {
            crate::paws::tree::materialise(bundle, tree).map_err(|e| e.to_string())?;
        }
        Context::Dir(dir) => super::copy_dir(dir, tree, super::harbor::IMAGE_FILES, false)
            .map_err(|e| format!("cannot copy {}: {e}", dir.display()))?,
        Context::Image(dir) => super::copy_dir(dir, tree, &[], true)
            .map_err(|e| format!("cannot copy {}: {e}", dir.display()))?,
    }
    git(tree, &["init", "-q"])?;
    git(tree, &["add", "-A"])?;
    git(
        tree,
        &[
            "commit",
            "-q",
            "--no-verify",
            "--allow-empty",
            "-m",
            "start",
        ],
    )?;
    // By its id: an agent that commits moves HEAD, and its patch must still hold everything.
    let start = String::from_utf8_lossy(&git(tree, &["rev-parse", "HEAD"])?)
        .trim()
        .to_string();
    let snapshot =
        Snapshot::take(tree).map_err(|e| format!("cannot read the starting tree: {e}"))?;
    Ok((snapshot, start))
}

enum Ended {
    Done,
    TimedOut,
    OverBudget,
    /// The brain or the API broke (not the agent's doing).
    Infra(String),
}

struct Agent {
    ended: Ended,
    summary: Option<String>,
    cost_usd: f64,
    tokens: Tokens,
    turns: u32,
    tool_calls: u32,
    first_edit_s: Option<f64>,
}

/// Runs the task's turn to its end or its deadline, logging every event; `tree` is the trial's
/// tree as the agent sees it.
async fn drive(brain: &dyn BrainCli, task: &Task, setup: &Setup, tree: &Path, log: &Path) -> Agent {
    let (events, mut events_rx) = mpsc::unbounded_channel();
    let mut options = setup.options.clone();
    options.permission_mode = Some(
        setup
            .permission_mode
            .clone()
            .unwrap_or_else(|| "acceptEdits".into()),
    );
    options.max_budget_usd = task.budget_usd;
    options.settings = Some(settings(task, setup));
    let request = TurnRequest {
        prompt: task.instruction.clone(),
        options,
        label: task.id.clone(),
        events,
        ask: asker(tree, &setup.patterns),
        stop: tokio_util::sync::CancellationToken::new(),
    };
    let started = Instant::now();
    let deadline = tokio::time::sleep(Duration::from_secs(task.timeout_s));
    tokio::pin!(deadline);
    let mut counter = Counter::default();
    let mut lines = Vec::new();
    let mut timed_out = false;
    let running = brain.turn(request);
    tokio::pin!(running);
    let report = loop {
        tokio::select! {
            report = &mut running => break report,
            Some(event) = events_rx.recv() => counter.see(&event, started, &mut lines),
            _ = &mut deadline, if !timed_out => {
                timed_out = true;
                let _ = brain.interrupt().await;
                let stopping = tokio::time::sleep(STOP_GRACE);
                tokio::pin!(stopping);
                tokio::select! {
                    report = &mut running => break report,
                    _ = &mut stopping => {
                        let _ = brain.kill().await;
                        break (&mut running).await;
                    }
                }
            }
        }
    };
    while let Ok(event) = events_rx.try_recv() {
        counter.see(&event, started, &mut lines);
    }
    if let Some(parent) = log.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::fs::write(log, lines.concat());
    let mut agent = Agent {
        ended: Ended::Done,
        summary: counter.summary.clone(),
        cost_usd: 0.0,
        tokens: Tokens::default(),
        turns: counter.turns,
        tool_calls: counter.tool_calls,
        first_edit_s: counter.first_edit_s,
    };
    match report {
        Err(e) => agent.ended = Ended::Infra(format!("the brain failed: {e}")),
        Ok(report) => {
            agent.cost_usd = report.cost_usd;
            agent.tokens = Tokens {
                input: report.usage.input_tokens,
                output: report.usage.output_tokens,
                cache_read: report.usage.cache_read_input_tokens,
                cache_write: report.usage.cache_creation_input_tokens,
            };
            let over_budget = report.kind.as_deref() == Some("error_max_budget_usd")
                || task.budget_usd.is_some_and(|b| report.cost_usd >= b);
            agent.ended = if timed_out {
                Ended::TimedOut
            } else if over_budget {
                Ended::OverBudget
            } else if report.is_error && api_broke(report.api_error_status) {
                Ended::Infra(
                    counter
                        .summary
                        .unwrap_or_else(|| "the API failed past its retries".into()),
                )
            } else {
                Ended::Done
            };
        }
    }
    agent
}

/// An API failure that is not the agent's doing: authentication, rate limits, overload,
/// server errors (a prompt grown too long is the agent's).
fn api_broke(status: Option<u16>) -> bool {
    status.is_some_and(|s| matches!(s, 401 | 403 | 408 | 429 | 500..=599))
}

/// The settings a trial adds: the hidden folders unreadable, and for ouro's brain the
/// network of its commands as the task allows.
fn settings(task: &Task, setup: &Setup) -> Value {
    let deny: Vec<String> = setup
        .hidden
        .iter()
        .flat_map(|dir| {
            let dir = dir.display();
            [format!("Read(/{dir}/**)"), format!("Edit(/{dir}/**)")]
        })
        .collect();
    let mut settings = json!({"permissions": {"deny": deny}});
    if setup.brain.starts_with("ouro@") {
        settings["sandbox"] = json!({"network": task.network});
    }
    settings
}

/// Unattended: a call the permission mode would ask about is allowed, unless it names a
/// file outside the trial's tree (commands are held to the tree by the OS sandbox) or an agent
/// definition's `denied_commands` refuse it.
fn asker(tree: &Path, patterns: &CommandRules) -> Asker {
    let tree = tree.to_path_buf();
    let patterns = std::sync::Arc::new(patterns.clone());
    std::sync::Arc::new(move |question: PermissionQuestion| {
        if let CommandVerdict::Denied { pattern } =
            patterns.judge_call(&question.tool_name, &question.input)
        {
            let message = CommandRules::refusal(&pattern);
            return Box::pin(async move { PermissionAnswer::Deny { message } });
        }
        let outside = ["file_path", "notebook_path", "path"]
            .iter()
            .filter_map(|key| question.input.get(*key).and_then(Value::as_str))
            .map(|p| crate::permissions::paths::lexical(&tree, Path::new(p)))
            .any(|p| !p.starts_with(&tree));
        Box::pin(async move {
            if outside {
                PermissionAnswer::Deny {
                    message: "This evaluation trial may change files only inside its own tree."
                        .into(),
                }
            } else {
                PermissionAnswer::allow(false)
            }
        })
    })
}

/// What the events of a turn tell about it.
#[derive(Default)]
struct Counter {
    turns: u32,
    tool_calls: u32,
    first_edit_s: Option<f64>,
    /// Waiting for the model's next answer (at the start, and after tool results).
    awaiting: bool,
    started: bool,
    summary: Option<String>,
}

impl Counter {
    fn see(&mut self, event: &UiEvent, started: Instant, lines: &mut Vec<String>) {
        if !self.started {
            self.started = true;
            self.awaiting = true;
        }
        match event {
            UiEvent::ChatDelta { .. }
            | UiEvent::ChatComplete { .. }
            | UiEvent::ToolStart { .. }
                if self.awaiting =>
            {
                self.awaiting = false;
                self.turns += 1;
            }
            UiEvent::ToolResult { .. } => self.awaiting = true,
            _ => {}
        }
        if let UiEvent::ToolStart { name, input, .. } = event {
            self.tool_calls += 1;
            if self.first_edit_s.is_none() && edits(name, input) {
                self.first_edit_s = Some(started.elapsed().as_secs_f64());
            }
        }
        if let Some(text) = event.summary_text() {
            self.summary = Some(text.to_string());
        }
        if !matches!(event, UiEvent::ChatDelta { .. }) {
            lines.push(format!("{}\n", json!(event)));
        }
    }
}

/// Whether a call changes files: the editing tools, and commands the analyser does not find
/// read-only.
fn edits(tool: &str, input: &Value) -> bool {
    match tool {
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => true,
        "Bash" => input
            .get("command")
            .and_then(Value::as_str)
            .is_some_and(|c| !crate::permissions::bash::is_read_only_command(c)),
        _ => false,
    }
}

/// Copies the hidden tests in and runs the task's tests command in the sandbox: `Ok(passed)`,
/// or `Err` when the verifier itself could not run.
async fn verify(task: &Task, tree: &Path) -> Result<bool, String> {
    if let Some(tests) = &task.hidden_tests {
        let (from, to) = (tests.clone(), tree.join("tests"));
        tokio::task::spawn_blocking(move || super::copy_dir(&from, &to, &[], false))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot copy the task's tests in: {e}"))?;
    }
    // A reward is the tests' alone: none the agent left counts, nor one of tests cut off.
    let verifier = tree.join("logs/verifier");
    clear_reward(tree).map_err(|e| format!("cannot clear {}: {e}", verifier.display()))?;
    let exited = super::verify::run_tests(
        &task.tests,
        tree,
        task.network,
        Duration::from_secs(task.tests_timeout_s),
    )
    .await?;
    Ok(super::harbor::verdict(&verifier, exited))
}

/// Removes the tests' reward folder from the tree, following no link the agent may have made
/// (a link is removed itself).
fn clear_reward(tree: &Path) -> std::io::Result<()> {
    let verifier = tree.join("logs/verifier");
    for path in [tree.join("logs"), verifier.clone()] {
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return std::fs::remove_file(&path),
        }
    }
    std::fs::remove_dir_all(verifier)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hidden_tests_go_in_without_following_a_link_the_agent_planted() {
        let (tests, tree, outside) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        std::fs::write(tests.path().join("t.sh"), "HIDDEN\n").unwrap();
        std::fs::create_dir(tests.path().join("sub")).unwrap();
        std::fs::write(tests.path().join("sub/hidden.txt"), "HIDDEN\n").unwrap();
        let victim = outside.path().join("victim.txt");
        std::fs::write(&victim, "precious\n").unwrap();
        std::fs::create_dir(outside.path().join("leak")).unwrap();
        let planted = tree.path().join("tests");
        std::fs::create_dir(&planted).unwrap();
        std::os::unix::fs::symlink(&victim, planted.join("t.sh")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("leak"), planted.join("sub")).unwrap();
        super::super::copy_dir(tests.path(), &planted, &[], false).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert_eq!(
            std::fs::read_dir(outside.path().join("leak"))
                .unwrap()
                .count(),
            0
        );
        assert_eq!(
            std::fs::read_to_string(planted.join("t.sh")).unwrap(),
            "HIDDEN\n"
        );
        assert!(!planted.join("sub").is_symlink());
        assert!(planted.join("sub/hidden.txt").is_file());
        // The whole folder a link: replaced by a folder of its own.
        std::fs::remove_dir_all(&planted).unwrap();
        std::os::unix::fs::symlink(outside.path().join("leak"), &planted).unwrap();
        super::super::copy_dir(tests.path(), &planted, &[], false).unwrap();
        assert!(!planted.is_symlink() && planted.join("t.sh").is_file());
        assert_eq!(
            std::fs::read_dir(outside.path().join("leak"))
                .unwrap()
                .count(),
            0
        );
    }

    #[test]
    fn a_reward_the_agent_left_is_cleared_without_following_its_links() {
        let (tree, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::create_dir_all(tree.path().join("logs/verifier")).unwrap();
        std::fs::write(tree.path().join("logs/verifier/reward.txt"), "1").unwrap();
        clear_reward(tree.path()).unwrap();
        assert!(!tree.path().join("logs/verifier").exists());
        assert!(tree.path().join("logs").is_dir());
        clear_reward(tree.path()).unwrap();
        // A link to a folder elsewhere: the link goes, what it points to stays.
        std::fs::create_dir_all(outside.path().join("verifier")).unwrap();
        std::fs::write(outside.path().join("verifier/reward.txt"), "1").unwrap();
        std::fs::remove_dir(tree.path().join("logs")).unwrap();
        std::os::unix::fs::symlink(outside.path(), tree.path().join("logs")).unwrap();
        clear_reward(tree.path()).unwrap();
        assert!(!tree.path().join("logs").exists());
        assert!(outside.path().join("verifier/reward.txt").exists());
    }
}
