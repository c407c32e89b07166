//! The claude-CLI brain driven against a fake `claude` (tests/fixtures/fake_claude.py), which
//! makes faults easy to stage: crashes mid-turn, garbage output, hangs after the result.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ouro::brain::BrainConfig;
use ouro::brain::claude::ClaudeBrain;
use ouro::brain::{BrainCli, BrainError, BrainTerminal, ExitInfo, Mode, TermSize, Verb};
use serde_json::Value;

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_claude.py");
const SLUG: &str = "claude@anthropic/claude/opus/v4.5";
/// Generous: the machine running the tests may be busy.
const PATIENCE: Duration = Duration::from_secs(20);

struct Rig {
    dir: tempfile::TempDir,
    brain: ClaudeBrain,
    exits: Arc<Mutex<Vec<ExitInfo>>>,
    data: Arc<Mutex<Vec<u8>>>,
}

fn config(dir: &Path) -> BrainConfig {
    BrainConfig::new(dir, dir.join("state"))
        .program(FAKE)
        .env("FAKE_CLAUDE_LOG", dir.join("fake.log"))
        .env("CLAUDE_CONFIG_DIR", dir.join("claude"))
        .kill_grace(Duration::from_secs(10))
}

fn rig_with(tweak: impl FnOnce(BrainConfig) -> BrainConfig) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let brain = ClaudeBrain::new(SLUG, tweak(config(dir.path()))).unwrap();
    let exits = Arc::new(Mutex::new(Vec::new()));
    let data = Arc::new(Mutex::new(Vec::new()));
    let e = exits.clone();
    brain.on_exit(Arc::new(move |info| e.lock().unwrap().push(info)));
    let d = data.clone();
    brain.on_data(Arc::new(move |bytes| {
        d.lock().unwrap().extend_from_slice(bytes)
    }));
    Rig {
        dir,
        brain,
        exits,
        data,
    }
}

fn rig() -> Rig {
    rig_with(|c| c)
}

impl Rig {
    /// What the fake logged: one `argv` entry per start, one `stdin` / `tty` entry per line.
    fn log(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("fake.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn starts(&self) -> Vec<Vec<String>> {
        self.log()
            .iter()
            .filter_map(|e| e.get("argv"))
            .map(|a| serde_json::from_value(a.clone()).unwrap())
            .collect()
    }

    fn exits(&self) -> Vec<ExitInfo> {
        self.exits.lock().unwrap().clone()
    }

    fn data_text(&self) -> String {
        String::from_utf8_lossy(&self.data.lock().unwrap()).into_owned()
    }
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn flag_value(argv: &[String], flag: &str) -> Option<String> {
    let i = argv.iter().position(|a| a == flag)?;
    argv.get(i + 1).cloned()
}

#[tokio::test]
async fn a_fresh_handle_has_no_instance_and_no_series() {
    let r = rig();
    assert_eq!(r.brain.instance(), None);
    assert_eq!(r.brain.series(), None);
    assert_eq!(r.brain.slug(), SLUG);
}

#[tokio::test]
async fn invalid_and_foreign_slugs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Err(e) = ClaudeBrain::new("claude@anthropic/claude/opus/v0", config(dir.path())) else {
        panic!("an unknown version was accepted");
    };
    assert!(
        e.to_string().contains("claude@anthropic/claude/haiku"),
        "{e}"
    );
    let Err(e) = ClaudeBrain::new("ouro@anthropic/claude/opus", config(dir.path())) else {
        panic!("an ouro slug was accepted by the claude supplier");
    };
    assert!(matches!(e, BrainError::WrongBinary { .. }), "{e}");
}

#[tokio::test]
async fn boot_ask_returns_text_tokens_and_a_series() {
    let r = rig();
    let inst = r.brain.boot(Mode::Dispatch).await.unwrap();
    assert!(inst.pid > 0);
    assert_eq!(inst.mode, Mode::Dispatch);
    assert_eq!(r.brain.instance(), Some(inst));

    let out = r.brain.ask("hello").await.unwrap();
    assert_eq!(out.text, "echo: hello");
    assert_eq!(out.metrics.input_tokens, 105);
    assert_eq!(out.metrics.output_tokens, 11);
    assert_eq!(out.metrics.cache_write_tokens, 7);
    assert_eq!(out.metrics.cache_read_tokens, 11);
    assert!(out.metrics.wall_time > Duration::ZERO);
    let series = r.brain.series().unwrap();
    assert_eq!(out.series, series);
    assert!(!series.exid.is_empty());
    assert_eq!(series.episodes.len(), 1);
    assert_eq!(series.episodes[0].verb, Verb::Ask);
    assert_eq!(series.episodes[0].prompt, "hello");

    let starts = r.starts();
    assert_eq!(starts.len(), 1);
    let argv = &starts[0];
    for f in ["-p", "--verbose"] {
        assert!(argv.contains(&f.to_string()), "{argv:?}");
    }
    assert_eq!(
        flag_value(argv, "--output-format").as_deref(),
        Some("stream-json")
    );
    assert_eq!(
        flag_value(argv, "--input-format").as_deref(),
        Some("stream-json")
    );
    assert_eq!(
        flag_value(argv, "--allowedTools").as_deref(),
        Some("Glob,Grep,Read")
    );
    assert_eq!(
        flag_value(argv, "--model").as_deref(),
        Some("claude-opus-4-5")
    );
    assert_eq!(flag_value(argv, "--resume"), None);
    // The same process answers the next call.
    r.brain.ask("again").await.unwrap();
    assert_eq!(r.brain.instance(), Some(inst));
    assert_eq!(r.starts().len(), 1);
}

#[tokio::test]
async fn kill_then_boot_gives_a_new_pid_and_resumes_the_series() {
    let r = rig();
    let first = r.brain.boot(Mode::Dispatch).await.unwrap();
    r.brain.ask("remember me").await.unwrap();
    let series = r.brain.series().unwrap();

    r.brain.kill().await.unwrap();
    assert_eq!(r.brain.instance(), None);
    assert_eq!(r.exits().len(), 1, "kill fires exit once: {:?}", r.exits());
    assert_eq!(r.brain.series(), Some(series.clone()));
    r.brain.kill().await.unwrap();
    assert_eq!(r.exits().len(), 1, "killing nothing is a no-op");

    let second = r.brain.boot(Mode::Dispatch).await.unwrap();
    assert_ne!(second.pid, first.pid);
    let out = r.brain.ask("still there?").await.unwrap();
    assert_eq!(out.series.exid, series.exid);
    assert_eq!(out.series.episodes.len(), 2);
    let starts = r.starts();
    assert_eq!(
        flag_value(&starts[1], "--resume"),
        Some(series.exid.clone())
    );

    // A new handle on the same state directory resumes too.
    r.brain.kill().await.unwrap();
    let again = ClaudeBrain::new(SLUG, config(r.dir.path())).unwrap();
    assert_eq!(again.series(), Some(out.series));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    again.on_data(Arc::new(move |b| s.lock().unwrap().extend_from_slice(b)));
    again.boot(Mode::Interact).await.unwrap();
    // Killed before it has started, the fake would log nothing.
    eventually("the interactive banner", || {
        String::from_utf8_lossy(&seen.lock().unwrap()).contains("FAKE CLAUDE TUI ready")
    })
    .await;
    again.kill().await.unwrap();
    let starts = r.starts();
    let last = starts.last().unwrap();
    assert!(!last.contains(&"-p".to_string()), "{last:?}");
    assert_eq!(flag_value(last, "--resume"), Some(series.exid));
}

#[tokio::test]
async fn ask_and_write_need_a_live_process() {
    let r = rig();
    let e = r.brain.ask("hi").await.unwrap_err();
    assert!(matches!(e, BrainError::NotRunning { verb: "ask" }), "{e}");
    assert!(e.to_string().contains("boot it in dispatch mode"), "{e}");
    let e = r.brain.write(b"x").await.unwrap_err();
    assert!(matches!(e, BrainError::NotRunning { .. }), "{e}");

    r.brain.boot(Mode::Dispatch).await.unwrap();
    r.brain.kill().await.unwrap();
    let e = r.brain.act("hi").await.unwrap_err();
    assert!(matches!(e, BrainError::NotRunning { verb: "act" }), "{e}");
}

#[tokio::test]
async fn ask_in_interact_mode_is_refused() {
    let r = rig();
    r.brain.boot(Mode::Interact).await.unwrap();
    let e = r.brain.ask("hi").await.unwrap_err();
    assert!(matches!(e, BrainError::InteractMode { verb: "ask" }), "{e}");
    let e = r.brain.act("hi").await.unwrap_err();
    assert!(matches!(e, BrainError::InteractMode { verb: "act" }), "{e}");
    assert_eq!(r.brain.instance().unwrap().mode, Mode::Interact);
}

#[tokio::test]
async fn data_subscription_fires_during_ask() {
    let r = rig();
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let seen_at = Arc::new(Mutex::new(None));
    let s = seen_at.clone();
    r.brain.on_data(Arc::new(move |bytes| {
        if String::from_utf8_lossy(bytes).contains("part 1") {
            s.lock().unwrap().get_or_insert(Instant::now());
        }
    }));
    let out = r.brain.ask("slow").await.unwrap();
    let returned = Instant::now();
    let seen = seen_at
        .lock()
        .unwrap()
        .expect("no data chunk carried the streamed text");
    assert!(seen < returned);
    assert_eq!(out.text, "echo: slow");
    let text = r.data_text();
    assert!(text.contains("\"type\": \"result\""), "{text}");
}

#[tokio::test]
async fn a_call_given_up_mid_turn_does_not_hand_its_answer_to_the_next() {
    let r = rig();
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let streaming = Arc::new(tokio::sync::Notify::new());
    let n = streaming.clone();
    r.brain.on_data(Arc::new(move |bytes| {
        if String::from_utf8_lossy(bytes).contains("part 0") {
            n.notify_one();
        }
    }));
    // Abandon the call once its prompt is being answered.
    tokio::select! {
        out = r.brain.ask("slow") => panic!("the slow answer came too soon: {out:?}"),
        _ = streaming.notified() => {}
    }
    let out = r.brain.ask("next").await.unwrap();
    assert_eq!(out.text, "echo: next");
    assert_eq!(out.metrics.input_tokens, 104);
}

#[tokio::test]
async fn an_external_kill_fires_exit_exactly_once() {
    let r = rig();
    let inst = r.brain.boot(Mode::Dispatch).await.unwrap();
    // SAFETY: signalling a child this test started.
    assert_eq!(unsafe { libc::kill(inst.pid as i32, libc::SIGKILL) }, 0);
    eventually("the exit report", || !r.exits().is_empty()).await;
    assert_eq!(
        r.exits(),
        vec![ExitInfo {
            code: None,
            signal: Some(libc::SIGKILL)
        }]
    );
    eventually("the instance to clear", || r.brain.instance().is_none()).await;
    // Nothing runs now: this kill reports no exit. A second process then gives the second
    // exit, reported before its kill returns, so a duplicate of the first would make three.
    r.brain.kill().await.unwrap();
    assert_eq!(r.exits().len(), 1);
    r.brain.boot(Mode::Dispatch).await.unwrap();
    r.brain.kill().await.unwrap();
    assert_eq!(r.exits().len(), 2, "{:?}", r.exits());
}

#[tokio::test]
async fn kill_escalates_to_sigkill_when_sigterm_is_ignored() {
    let r = rig_with(|c| {
        c.env("FAKE_CLAUDE_IGNORE_TERM", "1")
            .kill_grace(Duration::from_millis(500))
    });
    r.brain.boot(Mode::Dispatch).await.unwrap();
    // The fake installs its handler before it reads stdin, so a finished turn proves it is set.
    r.brain.ask("ready?").await.unwrap();
    r.brain.kill().await.unwrap();
    assert_eq!(r.exits().len(), 1);
    assert_eq!(r.exits()[0].signal, Some(libc::SIGKILL));
}

#[tokio::test]
async fn sequential_asks_report_their_own_metrics() {
    let r = rig();
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let a = r.brain.ask("a").await.unwrap();
    let b = r.brain.ask("bbbbbbbbbb").await.unwrap();
    assert_eq!(a.metrics.input_tokens, 101);
    assert_eq!(b.metrics.input_tokens, 110);
    // The fake reports a running total; each call gets only its own share.
    let cost = |input: f64, output: f64| (input * 5.0 + output * 25.0) / 1e6;
    assert!(
        (a.metrics.cost_usd - cost(101.0, 7.0)).abs() < 1e-12,
        "{:?}",
        a.metrics
    );
    assert!(
        (b.metrics.cost_usd - cost(110.0, 16.0)).abs() < 1e-12,
        "{:?}",
        b.metrics
    );
}

#[tokio::test]
async fn without_a_reported_cost_the_pricing_table_is_used() {
    let r = rig();
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let out = r.brain.ask("nocost").await.unwrap();
    // 106 input, 12 output, 7 cache-write and 11 cache-read tokens at Opus 4.5 prices.
    let expected = (106.0 * 5.0 + 12.0 * 25.0 + 7.0 * 6.25 + 11.0 * 0.5) / 1e6;
    assert!(
        (out.metrics.cost_usd - expected).abs() < 1e-12,
        "{:?}",
        out.metrics
    );
}

#[tokio::test]
async fn write_in_dispatch_mode_reaches_stdin() {
    let r = rig();
    r.brain.boot(Mode::Dispatch).await.unwrap();
    r.brain.write(b"raw bytes\n").await.unwrap();
    eventually("the fake to log the line", || {
        r.log().iter().any(|e| e["stdin"] == "raw bytes\n")
    })
    .await;
    // The stray line does not disturb the next turn.
    assert_eq!(r.brain.ask("after").await.unwrap().text, "echo: after");
}

#[tokio::test]
async fn interact_mode_is_a_raw_terminal() {
    let r = rig();
    let inst = r.brain.boot(Mode::Interact).await.unwrap();
    assert_eq!(inst.mode, Mode::Interact);
    eventually("the banner", || {
        r.data_text().contains("FAKE CLAUDE TUI ready (session ")
    })
    .await;
    r.brain.write(b"hi there\r").await.unwrap();
    eventually("the echo", || r.data_text().contains("got: hi there")).await;
    r.brain
        .resize(TermSize {
            cols: 100,
            rows: 30,
        })
        .unwrap();
    eventually("the new size", || r.data_text().contains("size: 100x30")).await;
    let argv = &r.starts()[0];
    assert_eq!(
        argv[..3],
        ["--model", "claude-opus-4-5", "--session-id"],
        "no series yet: no --resume, a new session with an id of the brain's choosing"
    );

    r.brain.kill().await.unwrap();
    assert_eq!(r.exits().len(), 1);
    assert_eq!(r.brain.instance(), None);
    // The series follows the session the TUI wrote, so a dispatch continues it.
    let text = r.data_text();
    let session = text
        .split("(session ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap();
    assert_eq!(r.brain.series().unwrap().exid, session);
    assert_eq!(argv[3], session);
}

#[tokio::test]
async fn a_crash_mid_turn_is_a_clear_error_and_one_exit() {
    let r = rig();
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let e = r.brain.ask("crash now").await.unwrap_err();
    let BrainError::DiedMidTurn { exit } = e else {
        panic!("expected DiedMidTurn, got {e}");
    };
    assert_eq!(exit.code, Some(3));
    assert!(e_text(exit).contains("exit code 3"));
    assert_eq!(r.exits(), vec![exit]);
    assert_eq!(r.brain.instance(), None);
    // The conversation id seen before the crash is kept for the next boot.
    assert!(!r.brain.series().unwrap().exid.is_empty());
    assert!(r.brain.series().unwrap().episodes.is_empty());
}

fn e_text(exit: ExitInfo) -> String {
    BrainError::DiedMidTurn { exit }.to_string()
}

#[tokio::test]
async fn garbage_lines_are_skipped() {
    let r = rig();
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let out = r.brain.ask("garbage").await.unwrap();
    assert_eq!(out.text, "echo: garbage");
    assert!(r.data_text().contains("this line is not json"));
    assert!(
        !r.data_text().contains("a warning on stderr"),
        "stderr is logged, not output"
    );
    assert_eq!(r.brain.ask("fine").await.unwrap().text, "echo: fine");
}

#[tokio::test]
async fn a_process_that_hangs_after_its_result_still_answers() {
    let r = rig();
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let out = tokio::time::timeout(PATIENCE, r.brain.ask("hang"))
        .await
        .expect("ask waited for the process instead of the result")
        .unwrap();
    assert_eq!(out.text, "echo: hang");
    r.brain.kill().await.unwrap();
    assert_eq!(r.exits().len(), 1);
}

#[tokio::test]
async fn switching_verbs_restarts_with_the_other_tool_set_and_resumes() {
    let r = rig();
    let first = r.brain.boot(Mode::Dispatch).await.unwrap();
    std::fs::write(r.dir.path().join("notes.txt"), "the secret is 42\n").unwrap();
    let asked = r.brain.ask("look").await.unwrap();
    let acted = r.brain.act("tool time").await.unwrap();
    let second = r.brain.instance().unwrap();
    assert_ne!(second.pid, first.pid);
    assert_eq!(r.exits().len(), 1, "the replaced process reported its exit");

    let starts = r.starts();
    assert_eq!(starts.len(), 2);
    assert_eq!(
        flag_value(&starts[1], "--allowedTools").as_deref(),
        Some("Glob,Grep,Read,Bash,Edit,Write")
    );
    assert_eq!(flag_value(&starts[1], "--resume"), Some(asked.series.exid));
    assert_eq!(acted.tool_calls.len(), 1);
    let call = &acted.tool_calls[0];
    assert_eq!(call.name, "Read");
    assert_eq!(call.result.as_deref(), Some("the secret is 42\n"));
    assert!(!call.is_error);
    let verbs: Vec<Verb> = acted.series.episodes.iter().map(|e| e.verb).collect();
    assert_eq!(verbs, [Verb::Ask, Verb::Act]);
}

#[tokio::test]
async fn an_error_result_is_an_error_that_still_enters_the_series() {
    let r = rig();
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let e = r.brain.ask("fail").await.unwrap_err();
    let BrainError::TurnFailed {
        message,
        api_error_status,
    } = &e
    else {
        panic!("expected TurnFailed, got {e}");
    };
    assert_eq!(message, "API Error: 529 Overloaded");
    assert_eq!(*api_error_status, Some(529));
    let series = r.brain.series().unwrap();
    assert!(series.episodes[0].is_error);
    // The process survives an error result.
    assert_eq!(r.brain.ask("ok").await.unwrap().text, "echo: ok");
}

#[tokio::test]
async fn a_missing_binary_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing: PathBuf = dir.path().join("no-such-claude");
    let brain = ClaudeBrain::new(SLUG, config(dir.path()).program(&missing)).unwrap();
    let e = brain.boot(Mode::Dispatch).await.unwrap_err();
    assert!(matches!(e, BrainError::Spawn { .. }), "{e}");
    assert!(e.to_string().contains("OURO_CLAUDE_BIN"), "{e}");
    assert_eq!(brain.instance(), None);
}
