//! The native brain: the real `ouro` binary as a child process (`ouro -p` in stream-json mode for
//! dispatch, the REPL in a pseudo-terminal for interact), against ouro's mock Messages API.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ouro::api::types::Usage;
use ouro::brain::ouro::OuroBrain;
use ouro::brain::{
    BrainCli, BrainConfig, BrainError, BrainOutput, BrainTerminal, ExitInfo, Mode, TermSize,
};
use ouro::mock::{MockBlock, MockServer, Scenario, Turn};
use serde_json::{Value, json};

const SLUG: &str = "ouro@anthropic/claude/opus/v4.5";
const API_KEY: &str = "sk-ant-test-0123456789abcdef";
/// Generous: the machine running the tests may be busy.
const PATIENCE: Duration = Duration::from_secs(90);

fn text(answer: &str) -> Turn {
    Turn::text(answer)
}

/// A turn that is only served to a request containing `expect`.
fn text_for(expect: &str, answer: &str) -> Turn {
    Turn {
        expect_text: Some(expect.to_string()),
        ..Turn::text(answer)
    }
}

fn tool(name: &str, input: Value) -> Turn {
    Turn {
        content: vec![MockBlock::ToolUse {
            id: None,
            name: name.to_string(),
            input: Some(input),
            raw_input: None,
        }],
        ..Turn::default()
    }
}

fn with_usage(turn: Turn, input: u64, output: u64) -> Turn {
    Turn {
        usage: Some(Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }),
        ..turn
    }
}

struct Rig {
    server: MockServer,
    dir: tempfile::TempDir,
    brain: OuroBrain,
    exits: Arc<Mutex<Vec<ExitInfo>>>,
    data: Arc<Mutex<Vec<u8>>>,
}

impl Rig {
    async fn start(turns: Vec<Turn>) -> Rig {
        Rig::start_in(|_| turns).await
    }

    /// A rig whose scenario is made knowing the brain's (canonical) working directory.
    async fn start_in(scenario: impl FnOnce(&Path) -> Vec<Turn>) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let work = dir.path().join("work").canonicalize().unwrap();
        let server = MockServer::start(Scenario::new(scenario(&work)))
            .await
            .unwrap();
        let brain = OuroBrain::new(SLUG, config(dir.path(), &server.url())).unwrap();
        let exits = Arc::new(Mutex::new(Vec::new()));
        let data = Arc::new(Mutex::new(Vec::new()));
        let e = exits.clone();
        brain.on_exit(Arc::new(move |info| e.lock().unwrap().push(info)));
        let d = data.clone();
        brain.on_data(Arc::new(move |bytes| {
            d.lock().unwrap().extend_from_slice(bytes)
        }));
        Rig {
            server,
            dir,
            brain,
            exits,
            data,
        }
    }

    /// The brain's working directory, as ouro sees it (canonical).
    fn work(&self) -> PathBuf {
        self.dir.path().join("work").canonicalize().unwrap()
    }

    fn exits(&self) -> Vec<ExitInfo> {
        self.exits.lock().unwrap().clone()
    }

    fn data_text(&self) -> String {
        String::from_utf8_lossy(&self.data.lock().unwrap()).into_owned()
    }

    async fn ask(&self, prompt: &str) -> BrainOutput {
        self.settle(prompt, self.brain.ask(prompt)).await
    }

    async fn act(&self, prompt: &str) -> BrainOutput {
        self.settle(prompt, self.brain.act(prompt)).await
    }

    async fn settle(
        &self,
        prompt: &str,
        call: impl Future<Output = Result<BrainOutput, BrainError>>,
    ) -> BrainOutput {
        tokio::time::timeout(PATIENCE, call)
            .await
            .unwrap_or_else(|_| panic!("no answer to {prompt:?}\n{}", self.requests()))
            .unwrap_or_else(|e| panic!("{prompt:?}: {e}\n{}", self.requests()))
    }

    /// The `/v1/messages` requests the mock answered, as sent.
    fn posts(&self) -> Vec<Value> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.status == 200)
            .map(|r| r.body)
            .collect()
    }

    /// The server's log, for failure messages.
    fn requests(&self) -> String {
        self.server
            .requests()
            .iter()
            .map(|r| {
                format!(
                    "{} {} -> {} (turn {:?})",
                    r.method, r.path, r.status, r.turn
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    async fn eventually(&self, what: &str, mut check: impl FnMut(&Rig) -> bool) {
        let start = Instant::now();
        while !check(self) {
            assert!(
                start.elapsed() < PATIENCE,
                "timed out waiting for {what}; output so far:\n{}",
                self.data_text()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

fn config(dir: &Path, url: &str) -> BrainConfig {
    let home = dir.join("home");
    BrainConfig::new(dir.join("work"), dir.join("state"))
        .program(env!("CARGO_BIN_EXE_ouro"))
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("OURO_HOME", &home)
        .env("HOME", &home)
        .env("NO_COLOR", "1")
        .kill_grace(Duration::from_secs(10))
}

/// The names of the tools a request offered, sorted.
fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(String::from))
                .collect()
        })
        .map(|mut names: Vec<String>| {
            names.sort();
            names
        })
        .unwrap_or_default()
}

fn contains(haystack: &Value, needle: &str) -> bool {
    haystack.to_string().contains(needle)
}

#[tokio::test]
async fn a_fresh_handle_has_no_instance_and_no_series() {
    let r = Rig::start(vec![]).await;
    assert_eq!(r.brain.instance(), None);
    assert_eq!(r.brain.series(), None);
    assert_eq!(r.brain.slug(), SLUG);
}

#[tokio::test]
async fn invalid_and_foreign_slugs_are_refused_and_open_picks_the_supplier() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = || config(dir.path(), "http://127.0.0.1:9");
    let Err(e) = OuroBrain::new("ouro@anthropic/claude/opus/v0", cfg()) else {
        panic!("an unknown version was accepted");
    };
    assert!(e.to_string().contains("ouro@anthropic/claude/haiku"), "{e}");
    let Err(e) = OuroBrain::new("claude@anthropic/claude/opus", cfg()) else {
        panic!("a claude slug was accepted by the ouro supplier");
    };
    assert!(matches!(e, BrainError::WrongBinary { .. }), "{e}");

    let Err(e) = ouro::brain::open("ouro@anthropic", cfg()) else {
        panic!("a slug without an atom was accepted");
    };
    assert!(
        e.to_string().contains("claude@anthropic/claude/opus/v4.5"),
        "{e}"
    );
    let native = ouro::brain::open(SLUG, cfg()).unwrap();
    assert_eq!(native.slug(), SLUG);
    let claude = ouro::brain::open("claude@anthropic/claude/haiku", cfg()).unwrap();
    assert_eq!(claude.slug(), "claude@anthropic/claude/haiku");
}

#[tokio::test]
async fn ask_returns_text_tokens_and_a_series_from_one_live_process() {
    let r = Rig::start(vec![text("First answer."), text("Second answer.")]).await;
    let inst = r.brain.boot(Mode::Dispatch).await.unwrap();
    assert!(inst.pid > 0);
    assert_eq!(inst.mode, Mode::Dispatch);
    assert_eq!(r.brain.instance(), Some(inst));

    let out = r.ask("first question").await;
    assert_eq!(out.text, "First answer.");
    assert!(
        // With prompt caching the prompt is mostly cache writes, not plain input.
        out.metrics.input_tokens + out.metrics.cache_write_tokens + out.metrics.cache_read_tokens
            > 0
            && out.metrics.output_tokens > 0,
        "{:?}",
        out.metrics
    );
    assert!(out.metrics.cost_usd > 0.0, "{:?}", out.metrics);
    assert!(out.metrics.wall_time > Duration::ZERO);
    let series = r.brain.series().unwrap();
    assert_eq!(out.series, series);
    assert!(!series.exid.is_empty());
    assert_eq!(series.episodes.len(), 1);
    assert_eq!(series.episodes[0].prompt, "first question");
    // Ouro's session id is the series id: its transcript is there to resume.
    let transcripts: Vec<_> = walk(&r.dir.path().join("home"))
        .into_iter()
        .filter(|p| p.file_stem().is_some_and(|s| *s == *series.exid))
        .collect();
    assert_eq!(transcripts.len(), 1, "no transcript named {}", series.exid);

    // The request carried the chosen model and only the read-only tools.
    let posts = r.posts();
    assert_eq!(posts[0]["model"], "claude-opus-4-5");
    assert_eq!(tool_names(&posts[0]), ["Glob", "Grep", "Read"]);

    let again = r.ask("second question").await;
    assert_eq!(again.text, "Second answer.");
    assert_eq!(r.brain.instance(), Some(inst), "the process stays alive");
    assert_eq!(again.series.exid, series.exid);
    assert!(r.exits().is_empty());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn sequential_asks_report_their_own_metrics() {
    let r = Rig::start(vec![
        with_usage(text("a"), 1200, 30),
        with_usage(text("b"), 400, 7),
    ])
    .await;
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let a = r.ask("one").await;
    let b = r.ask("two").await;
    assert_eq!(
        (a.metrics.input_tokens, a.metrics.output_tokens),
        (1200, 30)
    );
    assert_eq!((b.metrics.input_tokens, b.metrics.output_tokens), (400, 7));
    // Ouro reports each turn's own cost, so the second is not a difference of totals.
    let cost = |input: f64, output: f64| (input * 5.0 + output * 25.0) / 1e6;
    assert!(
        (a.metrics.cost_usd - cost(1200.0, 30.0)).abs() < 1e-12,
        "{:?}",
        a.metrics
    );
    assert!(
        (b.metrics.cost_usd - cost(400.0, 7.0)).abs() < 1e-12,
        "{:?}",
        b.metrics
    );
}

#[tokio::test]
async fn act_runs_a_tool_that_ask_may_not() {
    let r = Rig::start_in(|work| {
        let file = work.join("out.txt");
        let write = json!({"file_path": file.to_string_lossy(), "content": "written by act\n"});
        vec![
            tool("Write", write.clone()),
            text_for("please try writing", "Could not write."),
            tool("Write", write),
            text_for("now write it", "Wrote it."),
        ]
    })
    .await;
    let target = r.work().join("out.txt");

    let first = r.brain.boot(Mode::Dispatch).await.unwrap();
    let asked = r.ask("please try writing").await;
    assert_eq!(asked.text, "Could not write.");
    assert_eq!(asked.tool_calls.len(), 1, "{:?}", asked.tool_calls);
    assert!(asked.tool_calls[0].is_error, "{:?}", asked.tool_calls);
    assert!(!target.exists(), "ask must not be able to write");

    let acted = r.act("now write it").await;
    assert_eq!(acted.text, "Wrote it.");
    assert_eq!(acted.tool_calls.len(), 1, "{:?}", acted.tool_calls);
    assert_eq!(acted.tool_calls[0].name, "Write");
    assert!(!acted.tool_calls[0].is_error, "{:?}", acted.tool_calls);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "written by act\n"
    );

    // The tool set is a start-up flag: act ran in a new process resuming the same session.
    let second = r.brain.instance().unwrap();
    assert_ne!(second.pid, first.pid);
    assert_eq!(r.exits().len(), 1, "the ask process was replaced");
    assert_eq!(acted.series.exid, asked.series.exid);
    let posts = r.posts();
    let act_request = &posts[2];
    assert_eq!(
        tool_names(act_request),
        ["Bash", "Edit", "Glob", "Grep", "Read", "Write"]
    );
    assert!(contains(act_request, "Could not write."), "{act_request}");
}

#[tokio::test]
async fn kill_then_boot_gives_a_new_pid_and_resumes_the_series() {
    let r = Rig::start(vec![
        text_for("remember PLUM", "Noted."),
        text_for("what fruit", "PLUM."),
    ])
    .await;
    let first = r.brain.boot(Mode::Dispatch).await.unwrap();
    let out = r.ask("remember PLUM").await;

    r.brain.kill().await.unwrap();
    assert_eq!(r.brain.instance(), None);
    assert_eq!(r.exits().len(), 1, "kill fires exit once: {:?}", r.exits());
    assert_eq!(r.brain.series(), Some(out.series.clone()));
    r.brain.kill().await.unwrap();
    assert_eq!(r.exits().len(), 1, "killing nothing is a no-op");

    let second = r.brain.boot(Mode::Dispatch).await.unwrap();
    assert_ne!(second.pid, first.pid);
    let next = r.ask("what fruit").await;
    assert_eq!(next.text, "PLUM.");
    assert_eq!(next.series.exid, out.series.exid);
    assert_eq!(next.series.episodes.len(), 2);
    let last = r.posts().pop().unwrap();
    assert!(
        contains(&last, "remember PLUM") && contains(&last, "Noted."),
        "the new process sent the earlier conversation: {last}"
    );

    // A new handle on the same state directory resumes too.
    r.brain.kill().await.unwrap();
    let again = OuroBrain::new(SLUG, config(r.dir.path(), &r.server.url())).unwrap();
    assert_eq!(again.series(), Some(next.series));
}

#[tokio::test]
async fn boot_interact_runs_the_repl_on_the_same_conversation() {
    let r = Rig::start(vec![
        text_for("remember KIWI", "Noted."),
        text_for("typed-in-repl", "KIWI it was."),
    ])
    .await;
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let series = r.ask("remember KIWI").await.series;

    let inst = r.brain.boot(Mode::Interact).await.unwrap();
    assert_eq!(inst.mode, Mode::Interact);
    assert_eq!(r.exits().len(), 1, "the dispatch process was stopped");
    let session_line = format!("session {}", series.exid);
    r.eventually("the REPL banner on the resumed session", |r| {
        r.data_text().contains(&session_line)
    })
    .await;
    r.eventually("the REPL prompt", |r| r.data_text().contains('›'))
        .await;
    let e = r.brain.ask("remember KIWI").await.unwrap_err();
    assert!(matches!(e, BrainError::InteractMode { verb: "ask" }), "{e}");

    r.brain.write(b"typed-in-repl\r").await.unwrap();
    r.eventually("the answer on screen", |r| {
        r.data_text().contains("KIWI it was.")
    })
    .await;
    let last = r.posts().pop().unwrap();
    assert!(
        contains(&last, "remember KIWI") && contains(&last, "Noted."),
        "the REPL resumed the conversation: {last}"
    );

    r.brain.kill().await.unwrap();
    assert_eq!(r.exits().len(), 2);
    assert_eq!(r.brain.instance(), None);
    assert_eq!(r.brain.series(), Some(series));
}

#[tokio::test]
async fn data_subscription_fires_during_ask() {
    let r = Rig::start(vec![Turn {
        delay_ms: 100,
        ..text("A slowly streamed answer.")
    }])
    .await;
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::<(Instant, String)>::new()));
    let s = seen.clone();
    r.brain.on_data(Arc::new(move |bytes| {
        s.lock()
            .unwrap()
            .push((Instant::now(), String::from_utf8_lossy(bytes).into_owned()))
    }));
    let out = r.ask("stream it").await;
    let returned = Instant::now();
    assert_eq!(out.text, "A slowly streamed answer.");
    let seen = seen.lock().unwrap();
    let when = |needle: &str| {
        seen.iter()
            .find(|(_, line)| line.contains(needle))
            .map(|(t, _)| *t)
            .unwrap_or_else(|| panic!("no chunk with {needle}: {seen:?}"))
    };
    let init = when("\"subtype\":\"init\"");
    let answer = when("A slowly streamed answer.");
    let result = when("\"type\":\"result\"");
    assert!(init < answer && answer <= result && result <= returned);
}

#[tokio::test]
async fn an_external_kill_fires_exit_exactly_once() {
    let r = Rig::start(vec![]).await;
    let inst = r.brain.boot(Mode::Dispatch).await.unwrap();
    // SAFETY: signalling a child this test started.
    assert_eq!(unsafe { libc::kill(inst.pid as i32, libc::SIGKILL) }, 0);
    r.eventually("the exit report", |r| !r.exits().is_empty())
        .await;
    assert_eq!(
        r.exits(),
        vec![ExitInfo {
            code: None,
            signal: Some(libc::SIGKILL)
        }]
    );
    r.eventually("the instance to clear", |r| r.brain.instance().is_none())
        .await;
    // Nothing runs now: this kill reports no exit. A second process then gives the second
    // exit, reported before its kill returns, so a duplicate of the first would make three.
    r.brain.kill().await.unwrap();
    assert_eq!(r.exits().len(), 1);
    r.brain.boot(Mode::Dispatch).await.unwrap();
    r.brain.kill().await.unwrap();
    assert_eq!(r.exits().len(), 2, "{:?}", r.exits());
}

#[tokio::test]
async fn ask_and_write_need_a_live_process() {
    let r = Rig::start(vec![]).await;
    let e = r.brain.ask("hi").await.unwrap_err();
    assert!(matches!(e, BrainError::NotRunning { verb: "ask" }), "{e}");
    assert!(e.to_string().contains("boot it in dispatch mode"), "{e}");
    let e = r.brain.write(b"x").await.unwrap_err();
    assert!(matches!(e, BrainError::NotRunning { .. }), "{e}");

    r.brain.boot(Mode::Dispatch).await.unwrap();
    r.brain.kill().await.unwrap();
    let e = r.brain.act("hi").await.unwrap_err();
    assert!(matches!(e, BrainError::NotRunning { verb: "act" }), "{e}");
    assert!(r.server.requests().is_empty(), "{}", r.requests());
}

#[tokio::test]
async fn ask_in_interact_mode_is_refused() {
    let r = Rig::start(vec![]).await;
    r.brain.boot(Mode::Interact).await.unwrap();
    let e = r.brain.ask("hi").await.unwrap_err();
    assert!(matches!(e, BrainError::InteractMode { verb: "ask" }), "{e}");
    let e = r.brain.act("hi").await.unwrap_err();
    assert!(matches!(e, BrainError::InteractMode { verb: "act" }), "{e}");
    assert_eq!(r.brain.instance().unwrap().mode, Mode::Interact);
    r.brain.kill().await.unwrap();
}

#[tokio::test]
async fn write_in_dispatch_mode_reaches_stdin() {
    let r = Rig::start(vec![
        text_for("typed raw", "Raw answer."),
        text_for("after", "After answer."),
    ])
    .await;
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let line = json!({"type": "user", "message": {"role": "user", "content": "typed raw"}});
    r.brain.write(format!("{line}\n").as_bytes()).await.unwrap();
    // Ouro read the line as a turn: the mock was asked and the answer came out.
    r.eventually("the raw turn's result", |r| {
        r.data_text().contains("\"result\":\"Raw answer.\"")
    })
    .await;
    assert!(contains(&r.posts()[0], "typed raw"));
    // The next call gets its own answer, not the raw turn's.
    assert_eq!(r.ask("after").await.text, "After answer.");
}

#[tokio::test]
async fn interact_mode_is_a_raw_terminal() {
    let r = Rig::start(vec![text_for("hi there", "Hello from the mock.")]).await;
    let inst = r.brain.boot(Mode::Interact).await.unwrap();
    assert_eq!(inst.mode, Mode::Interact);
    r.eventually("the banner", |r| r.data_text().contains("claude-opus-4-5"))
        .await;
    // A terminal turns the program's newlines into CR LF.
    assert!(r.data_text().contains("\r\n"), "{:?}", r.data_text());
    assert_eq!(r.brain.series(), None, "no conversation yet");
    r.brain
        .resize(TermSize {
            cols: 100,
            rows: 30,
        })
        .unwrap();
    r.eventually("the REPL prompt", |r| r.data_text().contains('›'))
        .await;
    r.brain.write(b"hi there\r").await.unwrap();
    r.eventually("the answer", |r| {
        r.data_text().contains("Hello from the mock.")
    })
    .await;

    r.brain.kill().await.unwrap();
    assert_eq!(r.exits().len(), 1);
    assert_eq!(r.brain.instance(), None);
}

#[tokio::test]
async fn a_missing_binary_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-ouro");
    let brain = OuroBrain::new(
        SLUG,
        config(dir.path(), "http://127.0.0.1:9").program(&missing),
    )
    .unwrap();
    let e = brain.boot(Mode::Dispatch).await.unwrap_err();
    assert!(matches!(e, BrainError::Spawn { .. }), "{e}");
    assert!(e.to_string().contains("OURO_BIN"), "{e}");
    assert_eq!(brain.instance(), None);
}
