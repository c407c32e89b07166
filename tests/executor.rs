//! The streaming executor and the six-phase pipeline, driven with small test tools.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use ouro::api::types::ContentBlock;
use ouro::event::{Event, ToolStatus};
use ouro::exec::hooks::Hooks;
use ouro::exec::{AskAnswer, AskRequest, Asker, CANCELLED, Executor, NeverAsk};
use ouro::permissions::{Access, Confinement, Decision, PermissionPolicy, PermissionRequest};
use ouro::settings::{HookCommand, HookMatcher, HookSettings};
use ouro::tools::bash::BashTool;
use ouro::tools::{Progress, Tool, ToolContext, ToolError, ToolOutput, erase};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// When each call ran: (label, start, end).
type Log = Arc<Mutex<Vec<(String, Instant, Instant)>>>;

#[derive(Deserialize, JsonSchema)]
struct SlowInput {
    label: String,
    ms: u64,
}

/// Sleeps for `ms`, recording when it ran. `SAFE` decides whether it may run in parallel
/// (`SlowRead`) or not (`SlowWrite`).
struct Slow<const SAFE: bool> {
    log: Log,
}

impl<const SAFE: bool> Tool for Slow<SAFE> {
    type Input = SlowInput;

    const NAME: &'static str = if SAFE { "SlowRead" } else { "SlowWrite" };

    fn description(&self) -> &'static str {
        "sleeps"
    }

    fn access(&self, _input: &SlowInput, _ctx: &ToolContext) -> Access {
        Access::None
    }

    fn is_read_only(&self, _input: &SlowInput) -> bool {
        SAFE
    }

    fn is_concurrency_safe(&self, _input: &SlowInput) -> bool {
        SAFE
    }

    fn summary(&self, input: &SlowInput) -> String {
        input.label.clone()
    }

    async fn call(
        &self,
        input: SlowInput,
        ctx: &ToolContext,
        _progress: &Progress,
    ) -> Result<ToolOutput, ToolError> {
        let start = Instant::now();
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(input.ms)) => {}
            _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        }
        self.log
            .lock()
            .unwrap()
            .push((input.label.clone(), start, Instant::now()));
        Ok(ToolOutput::ok(input.label))
    }
}

#[derive(Deserialize, JsonSchema)]
struct EchoInput {
    text: String,
}

/// Returns its text, recording when it ran; parallel-safe only when the text starts with "safe".
struct Echo {
    log: Log,
}

impl Tool for Echo {
    type Input = EchoInput;

    const NAME: &'static str = "Echo";

    fn description(&self) -> &'static str {
        "echoes"
    }

    fn access(&self, _input: &EchoInput, _ctx: &ToolContext) -> Access {
        Access::None
    }

    fn is_concurrency_safe(&self, input: &EchoInput) -> bool {
        input.text.starts_with("safe")
    }

    fn summary(&self, input: &EchoInput) -> String {
        input.text.clone()
    }

    async fn call(
        &self,
        input: EchoInput,
        _ctx: &ToolContext,
        _progress: &Progress,
    ) -> Result<ToolOutput, ToolError> {
        let now = Instant::now();
        self.log
            .lock()
            .unwrap()
            .push((input.text.clone(), now, now));
        Ok(ToolOutput::ok(input.text))
    }
}

/// Always answers with the same decision and remembers what it granted.
struct Fixed {
    decision: Decision,
    granted: Mutex<Vec<String>>,
}

impl PermissionPolicy for Fixed {
    fn decide(&self, _request: &PermissionRequest<'_>) -> Decision {
        self.decision.clone()
    }

    fn suggest_rule(&self, request: &PermissionRequest<'_>) -> String {
        format!("{}(test)", request.tool)
    }

    fn grant(&self, rule: &str) {
        self.granted.lock().unwrap().push(rule.to_string());
    }
    /// Like an allow rule: the command may write in the project.
    fn confinement(&self, _request: &PermissionRequest<'_>) -> Confinement {
        Confinement::Approved
    }
}

struct Answer {
    answer: AskAnswer,
    asked: Mutex<Vec<AskRequest>>,
}

impl Asker for Answer {
    fn ask(&self, request: AskRequest) -> BoxFuture<'_, AskAnswer> {
        self.asked.lock().unwrap().push(request);
        Box::pin(async move { self.answer.clone() })
    }
}

struct Setup {
    executor: Executor,
    events: UnboundedReceiver<Event>,
    log: Log,
    policy: Arc<Fixed>,
    dir: tempfile::TempDir,
}

fn setup(decision: Decision, asker: Arc<dyn Asker>, hooks: HookSettings) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let log: Log = Arc::default();
    let tools = vec![
        erase(Slow::<true> { log: log.clone() }),
        erase(Slow::<false> { log: log.clone() }),
        erase(Echo { log: log.clone() }),
        erase(BashTool),
    ];
    let policy = Arc::new(Fixed {
        decision,
        granted: Mutex::default(),
    });
    let (tx, events) = unbounded_channel();
    let ctx = ToolContext::new(dir.path().to_path_buf());
    let hooks = Arc::new(Hooks::new(&hooks, "test-session"));
    let executor = Executor::new(tools, ctx, policy.clone(), asker, hooks, tx);
    Setup {
        executor,
        events,
        log,
        policy,
        dir,
    }
}

fn allowing() -> Setup {
    setup(Decision::Allow, Arc::new(NeverAsk), HookSettings::default())
}

fn slow(label: &str, ms: u64) -> Value {
    json!({"label": label, "ms": ms})
}

fn interval(log: &Log, label: &str) -> (Instant, Instant) {
    let log = log.lock().unwrap();
    let (_, start, end) = log
        .iter()
        .find(|(l, _, _)| l == label)
        .unwrap_or_else(|| panic!("{label} never ran"));
    (*start, *end)
}

fn result(block: &ContentBlock) -> (&str, &str, bool) {
    match block {
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => (tool_use_id, content, *is_error),
        other => panic!("not a tool_result: {other:?}"),
    }
}

fn drain(events: &mut UnboundedReceiver<Event>) -> Vec<Event> {
    let mut out = Vec::new();
    while let Ok(event) = events.try_recv() {
        out.push(event);
    }
    out
}

fn finished_ids(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolFinished { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

fn hook(matcher: &str, command: &str, timeout: Option<u64>) -> HookMatcher {
    HookMatcher {
        matcher: matcher.into(),
        hooks: vec![HookCommand {
            kind: "command".into(),
            command: command.into(),
            timeout,
        }],
    }
}

fn pre_hooks(hooks: Vec<HookMatcher>) -> Setup {
    let settings = HookSettings {
        pre_tool_use: hooks,
        ..HookSettings::default()
    };
    setup(Decision::Allow, Arc::new(NeverAsk), settings)
}

async fn run_one(s: &Setup, name: &str, input: Value) -> (String, bool) {
    let mut batch = s.executor.batch();
    batch.submit("c1".into(), name.into(), input);
    let outcome = batch.finish().await;
    let (_, content, is_error) = result(&outcome.results[0]);
    (content.to_string(), is_error)
}

#[tokio::test]
async fn parallel_safe_calls_overlap() {
    let s = allowing();
    let mut batch = s.executor.batch();
    for label in ["a", "b", "c"] {
        batch.submit(label.into(), "SlowRead".into(), slow(label, 300));
    }
    let outcome = batch.finish().await;
    assert_eq!(outcome.results.len(), 3);
    let spans: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|l| interval(&s.log, l))
        .collect();
    let latest_start = spans.iter().map(|s| s.0).max().unwrap();
    let earliest_end = spans.iter().map(|s| s.1).min().unwrap();
    assert!(
        latest_start < earliest_end,
        "the three reads did not overlap"
    );
}

#[tokio::test]
async fn an_unsafe_call_runs_alone() {
    let s = allowing();
    let mut batch = s.executor.batch();
    batch.submit("r1".into(), "SlowRead".into(), slow("r1", 300));
    batch.submit("r2".into(), "SlowRead".into(), slow("r2", 300));
    batch.submit("w".into(), "SlowWrite".into(), slow("w", 300));
    batch.finish().await;
    let (w_start, w_end) = interval(&s.log, "w");
    for read in ["r1", "r2"] {
        let (start, end) = interval(&s.log, read);
        assert!(
            end <= w_start || start >= w_end,
            "{read} overlapped the write"
        );
        assert!(
            end <= w_start,
            "{read} was submitted first but ran after the write"
        );
    }
}

#[tokio::test]
async fn a_safe_call_queued_behind_an_unsafe_one_waits_for_it() {
    let s = allowing();
    let mut batch = s.executor.batch();
    batch.submit("w".into(), "SlowWrite".into(), slow("w", 300));
    batch.submit("r".into(), "SlowRead".into(), slow("r", 50));
    batch.submit("w2".into(), "SlowWrite".into(), slow("w2", 50));
    batch.finish().await;
    let (_, w_end) = interval(&s.log, "w");
    let (r_start, r_end) = interval(&s.log, "r");
    let (w2_start, _) = interval(&s.log, "w2");
    assert!(
        r_start >= w_end,
        "the read started before the write ahead of it ended"
    );
    assert!(
        w2_start >= r_end,
        "the second write overlapped the read ahead of it"
    );
}

#[tokio::test]
async fn results_in_submission_order_events_in_completion_order() {
    let mut s = allowing();
    let mut batch = s.executor.batch();
    batch.submit("slow".into(), "SlowRead".into(), slow("slow", 1_000));
    batch.submit("fast".into(), "SlowRead".into(), slow("fast", 20));
    let outcome = batch.finish().await;
    let ids: Vec<_> = outcome.results.iter().map(|r| result(r).0).collect();
    assert_eq!(ids, ["slow", "fast"]);
    assert_eq!(result(&outcome.results[0]).1, "slow");
    let events = drain(&mut s.events);
    assert_eq!(finished_ids(&events), ["fast", "slow"]);
    let started = events
        .iter()
        .filter(|e| matches!(e, Event::ToolStarted { .. }))
        .count();
    assert_eq!(started, 2);
    let slow_timings = events.iter().find_map(|e| match e {
        Event::ToolFinished { id, timings, .. } if id == "slow" => Some(*timings),
        _ => None,
    });
    assert!(slow_timings.unwrap().execution >= Duration::from_millis(1_000));
}

#[tokio::test]
async fn an_unknown_tool_names_the_tools_that_exist() {
    let s = allowing();
    let (content, is_error) = run_one(&s, "Nope", json!({})).await;
    assert!(is_error);
    assert!(content.contains("`Nope`"), "{content}");
    assert!(
        content.contains("Bash, Echo, SlowRead, SlowWrite"),
        "{content}"
    );
}

#[tokio::test]
async fn a_schema_failure_lists_the_path() {
    let s = allowing();
    let (content, is_error) = run_one(&s, "SlowRead", json!({"label": 5, "ms": 1})).await;
    assert!(is_error);
    assert!(content.contains("/label"), "{content}");
    assert!(s.log.lock().unwrap().is_empty());
}

#[tokio::test]
async fn submit_error_records_the_message() {
    let mut s = allowing();
    let mut batch = s.executor.batch();
    batch.submit_error("bad".into(), "Echo".into(), "input JSON was cut off".into());
    batch.submit("ok".into(), "Echo".into(), json!({"text": "hi"}));
    let outcome = batch.finish().await;
    assert_eq!(
        outcome.results,
        vec![
            ContentBlock::tool_result("bad", "input JSON was cut off", true),
            ContentBlock::tool_result("ok", "hi", false),
        ]
    );
    assert_eq!(finished_ids(&drain(&mut s.events)).len(), 2);
}

#[tokio::test]
async fn abort_cancels_running_and_queued_calls() {
    let mut s = allowing();
    let mut batch = s.executor.batch();
    batch.submit("w".into(), "SlowWrite".into(), slow("w", 60_000));
    batch.submit("r".into(), "SlowRead".into(), slow("r", 10));
    batch.submit("sh".into(), "Bash".into(), json!({"command": "sleep 60"}));
    loop {
        match s.events.recv().await.unwrap() {
            Event::ToolStarted { id, .. } if id == "w" => break,
            _ => {}
        }
    }
    let outcome = batch.abort().await;
    assert_eq!(outcome.results.len(), 3);
    for block in &outcome.results {
        let (_, content, is_error) = result(block);
        assert!(is_error);
        assert_eq!(content, CANCELLED);
    }
    assert!(CANCELLED.contains("cancelled by the user"));
    assert!(
        s.log.lock().unwrap().is_empty(),
        "a cancelled call ran to the end"
    );
    assert!(!s.executor.context().cancel.is_cancelled());
    let (content, _) = run_one(&s, "Echo", json!({"text": "still works"})).await;
    assert_eq!(content, "still works");
}

#[tokio::test]
async fn a_policy_denial_is_recorded() {
    let mut s = setup(
        Decision::Deny("writes are off".into()),
        Arc::new(NeverAsk),
        HookSettings::default(),
    );
    let mut batch = s.executor.batch();
    batch.submit("w".into(), "SlowWrite".into(), slow("w", 10));
    let outcome = batch.finish().await;
    let (_, content, is_error) = result(&outcome.results[0]);
    assert!(is_error);
    assert!(content.contains("writes are off"), "{content}");
    assert_eq!(outcome.denials.len(), 1);
    assert_eq!(outcome.denials[0].tool_use_id, "w");
    assert_eq!(outcome.denials[0].tool_input, slow("w", 10));
    assert!(s.log.lock().unwrap().is_empty());
    let events = drain(&mut s.events);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::PermissionDenied(d) if d.tool_name == "SlowWrite"))
    );
}

#[tokio::test]
async fn ask_without_anyone_to_answer_is_a_denial() {
    let s = setup(
        Decision::Ask("needs approval".into()),
        Arc::new(NeverAsk),
        HookSettings::default(),
    );
    let mut batch = s.executor.batch();
    batch.submit("w".into(), "SlowWrite".into(), slow("w", 10));
    let outcome = batch.finish().await;
    let (_, content, is_error) = result(&outcome.results[0]);
    assert!(is_error);
    assert!(content.contains("needs approval"), "{content}");
    assert_eq!(outcome.denials.len(), 1);
    assert!(s.log.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_user_denial_passes_the_message_on() {
    let asker = Arc::new(Answer {
        answer: AskAnswer::Deny(Some("use the staging db".into())),
        asked: Mutex::default(),
    });
    let s = setup(
        Decision::Ask("risky".into()),
        asker.clone(),
        HookSettings::default(),
    );
    let (content, is_error) = run_one(&s, "SlowWrite", slow("w", 10)).await;
    assert!(is_error);
    assert!(content.contains("use the staging db"), "{content}");
    assert!(content.contains("(risky)"), "{content}");
    let asked = asker.asked.lock().unwrap();
    assert_eq!(asked[0].summary, "SlowWrite: w");
    assert_eq!(asked[0].reason, "risky");
    assert_eq!(asked[0].suggested_rule, "SlowWrite(test)");
}

#[tokio::test]
async fn allow_always_grants_and_saves_the_rule() {
    let asker = Arc::new(Answer {
        answer: AskAnswer::AllowAlways,
        asked: Mutex::default(),
    });
    let s = setup(
        Decision::Ask("risky".into()),
        asker,
        HookSettings::default(),
    );
    let (content, is_error) = run_one(&s, "SlowWrite", slow("w", 10)).await;
    assert_eq!((content.as_str(), is_error), ("w", false));
    assert_eq!(*s.policy.granted.lock().unwrap(), ["SlowWrite(test)"]);
    let saved = ouro::settings::read_settings(&ouro::settings::local_settings_path(s.dir.path()))
        .unwrap()
        .unwrap();
    assert_eq!(saved.permissions.allow, ["SlowWrite(test)"]);
}

#[tokio::test]
async fn a_hook_exiting_2_denies_with_its_stderr() {
    let s = pre_hooks(vec![hook(
        "Echo",
        "cat >/dev/null; echo 'no echoing today' >&2; exit 2",
        None,
    )]);
    let mut batch = s.executor.batch();
    batch.submit("e".into(), "Echo".into(), json!({"text": "hi"}));
    let outcome = batch.finish().await;
    let (_, content, is_error) = result(&outcome.results[0]);
    assert!(is_error);
    assert!(content.contains("no echoing today"), "{content}");
    assert_eq!(outcome.denials.len(), 1);
}

#[tokio::test]
async fn a_hook_allow_spares_the_question_but_never_beats_a_deny() {
    let allow = || HookSettings {
        pre_tool_use: vec![hook(
            "SlowWrite|Echo",
            r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'"#,
            None,
        )],
        ..HookSettings::default()
    };
    // NeverAsk refuses every question: the call runs only because the hook answered it.
    let s = setup(Decision::Ask("ask".into()), Arc::new(NeverAsk), allow());
    let (content, is_error) = run_one(&s, "SlowWrite", slow("w", 10)).await;
    assert_eq!((content.as_str(), is_error), ("w", false));
    let s = setup(Decision::Deny("no".into()), Arc::new(NeverAsk), allow());
    let (content, is_error) = run_one(&s, "SlowWrite", slow("w", 10)).await;
    assert!(is_error, "deny beats a hook's allow: {content}");
    assert!(content.contains("denied: no"), "{content}");
}

#[tokio::test]
async fn a_hook_can_rewrite_the_input() {
    let s = pre_hooks(vec![hook(
        "*",
        r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"text":"rewritten"}}}'"#,
        None,
    )]);
    let (content, _) = run_one(&s, "Echo", json!({"text": "original"})).await;
    assert_eq!(content, "rewritten");
}

#[tokio::test]
async fn a_rewrite_that_breaks_the_schema_is_an_error() {
    let s = pre_hooks(vec![hook(
        "Echo",
        r#"echo '{"hookSpecificOutput":{"updatedInput":{"txt":"oops"}}}'"#,
        None,
    )]);
    let (content, is_error) = run_one(&s, "Echo", json!({"text": "original"})).await;
    assert!(is_error);
    assert!(
        content.contains("A PreToolUse hook changed the input"),
        "{content}"
    );
}

#[tokio::test]
async fn a_rewrite_into_an_unsafe_call_makes_it_run_alone() {
    let s = pre_hooks(vec![hook(
        "Echo",
        r#"sleep 0.2; echo '{"hookSpecificOutput":{"updatedInput":{"text":"unsafe now"}}}'"#,
        None,
    )]);
    let mut batch = s.executor.batch();
    batch.submit("r".into(), "SlowRead".into(), slow("r", 1_000));
    batch.submit("e".into(), "Echo".into(), json!({"text": "safe at first"}));
    let outcome = batch.finish().await;
    assert_eq!(result(&outcome.results[1]).1, "unsafe now");
    let (_, r_end) = interval(&s.log, "r");
    let (e_start, _) = interval(&s.log, "unsafe now");
    assert!(e_start >= r_end, "the rewritten call ran beside the read");
}

#[tokio::test]
async fn a_failing_hook_denies_and_says_which() {
    let s = pre_hooks(vec![hook("", "exit 1", None)]);
    let (content, is_error) = run_one(&s, "Echo", json!({"text": "x"})).await;
    assert!(is_error);
    assert!(content.contains("`exit 1`"), "{content}");
    assert!(content.contains("exit code 1"), "{content}");
}

#[tokio::test]
async fn a_hook_that_times_out_denies() {
    let s = pre_hooks(vec![hook("Echo", "sleep 30", Some(1))]);
    let started = Instant::now();
    let (content, is_error) = run_one(&s, "Echo", json!({"text": "x"})).await;
    assert!(is_error);
    assert!(content.contains("timed out after 1 s"), "{content}");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the hook was not killed"
    );
}

#[tokio::test]
async fn a_post_hook_annotates_the_result() {
    let settings = HookSettings {
        post_tool_use: vec![
            hook(
                "Echo",
                r#"grep -q '"tool_response":{"content":"hi","is_error":false}' && echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint is clean"}}'"#,
                None,
            ),
            hook("Echo", "exit 1", None),
        ],
        ..HookSettings::default()
    };
    let s = setup(Decision::Allow, Arc::new(NeverAsk), settings);
    let (content, is_error) = run_one(&s, "Echo", json!({"text": "hi"})).await;
    assert!(!is_error);
    assert!(
        content.starts_with("hi\n\n[PostToolUse hook] lint is clean"),
        "{content}"
    );
    assert!(content.contains("`exit 1` failed"), "{content}");
}

#[tokio::test]
async fn bash_runs_through_the_pipeline_with_progress() {
    let mut s = allowing();
    let (content, is_error) = run_one(&s, "Bash", json!({"command": "echo streamed"})).await;
    assert_eq!((content.as_str(), is_error), ("streamed", false));
    let progress: String = drain(&mut s.events)
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolProgress { chunk, .. } => Some(chunk),
            _ => None,
        })
        .collect();
    assert_eq!(progress, "streamed\n");
}

#[tokio::test]
async fn a_dropped_batch_stops_its_calls() {
    let mut s = allowing();
    let mut batch = s.executor.batch();
    batch.submit("w".into(), "SlowWrite".into(), slow("w", 300));
    drop(batch);
    // The call's end is announced either way: cancelled if the drop stopped it, ok otherwise.
    let status = loop {
        match s.events.recv().await.expect("the call ends") {
            Event::ToolFinished { id, status, .. } if id == "w" => break status,
            _ => {}
        }
    };
    assert_eq!(status, ToolStatus::Cancelled);
    assert!(s.log.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_denial_wins_over_a_rewrite_that_came_with_it() {
    let s = pre_hooks(vec![hook(
        "Echo",
        r#"echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"not today","updatedInput":{"txt":1}}}'"#,
        None,
    )]);
    let (content, is_error) = run_one(&s, "Echo", json!({"text": "x"})).await;
    assert!(is_error);
    assert!(content.contains("not today"), "{content}");
}

#[tokio::test]
async fn a_repeated_tool_use_id_runs_once_and_the_repeat_gets_an_error() {
    let s = allowing();
    let mut batch = s.executor.batch();
    batch.submit("same".into(), "Echo".into(), json!({"text": "first"}));
    batch.submit("same".into(), "Echo".into(), json!({"text": "second"}));
    batch.submit("other".into(), "Echo".into(), json!({"text": "third"}));
    let outcome = batch.finish().await;
    let ran: Vec<String> = s
        .log
        .lock()
        .unwrap()
        .iter()
        .map(|(l, _, _)| l.clone())
        .collect();
    assert_eq!(ran, ["first", "third"]);
    assert_eq!(result(&outcome.results[0]), ("same", "first", false));
    let (id, content, is_error) = result(&outcome.results[1]);
    assert!(
        id == "same" && is_error && content.contains("repeats the id"),
        "{content}"
    );
}
