//! The claude-CLI brain driving the real `claude` binary (npm `@anthropic-ai/claude-code`)
//! against ouro's mock Messages API. Each test prints a notice and passes when `claude` is not
//! installed; CI installs it.
//!
//! Besides one `POST /v1/messages?beta=true` per model call, the CLI sends `HEAD /` when a
//! process starts (a reachability probe, answered 404). Every scripted turn names the prompt it
//! expects, so a request the scenario does not script gets a 400 instead of stealing a turn.
//! The fresh `HOME` gets a `.claude.json` that marks onboarding done, the test key approved and
//! the working directory trusted, so the interactive TUI opens straight at its prompt.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ouro::brain::BrainConfig;
use ouro::brain::claude::ClaudeBrain;
use ouro::brain::{BrainCli, BrainOutput, BrainTerminal, ExitInfo, Mode};
use ouro::mock::{MockBlock, MockServer, Scenario, Turn};
use serde_json::json;

const SLUG: &str = "claude@anthropic/claude/haiku/v4.5";
/// The CLI starts in about a second; a busy machine may need far more.
const PATIENCE: Duration = Duration::from_secs(120);

fn installed_claude() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join("claude"))
        .find(|p| p.is_file());
    if found.is_none() {
        crate::common::skip::not_installed(
            "the real `claude` CLI (npm install -g @anthropic-ai/claude-code; .ci/run does)",
        );
    }
    found
}

fn turn(expect: &str, content: Vec<MockBlock>) -> Turn {
    Turn {
        content,
        expect_text: Some(expect.to_string()),
        ..Turn::default()
    }
}

fn text(expect: &str, answer: &str) -> Turn {
    turn(
        expect,
        vec![MockBlock::Text {
            text: answer.to_string(),
        }],
    )
}

fn tool(expect: &str, name: &str, input: serde_json::Value) -> Turn {
    turn(
        expect,
        vec![MockBlock::ToolUse {
            id: None,
            name: name.to_string(),
            input: Some(input),
            raw_input: None,
        }],
    )
}

struct Rig {
    server: MockServer,
    _dir: tempfile::TempDir,
    brain: ClaudeBrain,
    exits: Arc<Mutex<Vec<ExitInfo>>>,
}

impl Rig {
    async fn start(program: PathBuf, turns: Vec<Turn>) -> Rig {
        let server = MockServer::start(Scenario::new(turns)).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        // Without these the TUI starts with its first-run screens, whose network check fails
        // here and ends the process; with them it goes straight to the prompt.
        let settings = json!({
            "hasCompletedOnboarding": true,
            "customApiKeyResponses": {"approved": ["test"], "rejected": []},
            "projects": {work.to_string_lossy(): {"hasTrustDialogAccepted": true}},
        });
        std::fs::write(home.join(".claude.json"), settings.to_string()).unwrap();
        let config = BrainConfig::new(work, dir.path().join("state"))
            .program(program)
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "test")
            .env("HOME", &home)
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        let brain = ClaudeBrain::new(SLUG, config).unwrap();
        let exits = Arc::new(Mutex::new(Vec::new()));
        let e = exits.clone();
        brain.on_exit(Arc::new(move |info| e.lock().unwrap().push(info)));
        Rig {
            server,
            _dir: dir,
            brain,
            exits,
        }
    }

    fn exits(&self) -> usize {
        self.exits.lock().unwrap().len()
    }

    async fn ask(&self, prompt: &str) -> BrainOutput {
        tokio::time::timeout(PATIENCE, self.brain.ask(prompt))
            .await
            .unwrap_or_else(|_| panic!("no answer to {prompt:?}"))
            .unwrap_or_else(|e| panic!("{prompt:?}: {e}\n{}", self.requests()))
    }

    async fn act(&self, prompt: &str) -> BrainOutput {
        tokio::time::timeout(PATIENCE, self.brain.act(prompt))
            .await
            .unwrap_or_else(|_| panic!("no answer to {prompt:?}"))
            .unwrap_or_else(|e| panic!("{prompt:?}: {e}\n{}", self.requests()))
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
}

fn contains(haystack: &serde_json::Value, needle: &str) -> bool {
    haystack.to_string().contains(needle)
}

#[tokio::test]
async fn real_claude_asks_keeps_one_process_and_resumes_after_kill() {
    let Some(program) = installed_claude() else {
        return;
    };
    let r = Rig::start(
        program,
        vec![
            text("first question", "First answer."),
            text("second question", "Second answer."),
            text("third question", "Third answer."),
        ],
    )
    .await;
    assert_eq!(r.brain.instance(), None);
    assert_eq!(r.brain.series(), None);

    let first = r.brain.boot(Mode::Dispatch).await.unwrap();
    let a = r.ask("first question").await;
    assert_eq!(a.text, "First answer.");
    assert!(
        // The mock bills Claude Code's cache breakpoints: the prompt is mostly cache writes.
        a.metrics.input_tokens + a.metrics.cache_write_tokens + a.metrics.cache_read_tokens > 0
            && a.metrics.output_tokens > 0,
        "{:?}",
        a.metrics
    );
    assert!(a.metrics.cost_usd > 0.0);
    let exid = a.series.exid.clone();
    assert!(!exid.is_empty());

    let b = r.ask("second question").await;
    assert_eq!(b.text, "Second answer.");
    assert_eq!(
        r.brain.instance(),
        Some(first),
        "the process stays alive between calls"
    );
    // Per-call, not cumulative: the second call's usage is its own request's.
    let posts: Vec<_> = r
        .server
        .requests()
        .into_iter()
        .filter(|q| q.method == "POST")
        .collect();
    assert_eq!(posts.len(), 2, "{}", r.requests());
    // Both requests are about the same size, so a running total would nearly double.
    let prompt =
        |m: &ouro::brain::Metrics| m.input_tokens + m.cache_write_tokens + m.cache_read_tokens;
    assert!(
        prompt(&b.metrics) < prompt(&a.metrics) * 3 / 2,
        "{:?} then {:?}",
        a.metrics,
        b.metrics
    );
    // The mock bills Claude Code's own cache breakpoints: the second call reads the first's.
    assert!(b.metrics.cache_read_tokens > 0, "{:?}", b.metrics);
    assert_eq!(b.series.exid, exid);

    let start = Instant::now();
    r.brain.kill().await.unwrap();
    assert!(start.elapsed() < PATIENCE);
    assert_eq!(r.exits(), 1);
    assert_eq!(r.brain.instance(), None);

    let second = r.brain.boot(Mode::Dispatch).await.unwrap();
    assert_ne!(second.pid, first.pid);
    let c = r.ask("third question").await;
    assert_eq!(c.text, "Third answer.");
    assert_eq!(c.series.exid, exid);
    assert_eq!(c.series.episodes.len(), 3);
    let last = r
        .server
        .requests()
        .into_iter()
        .rfind(|q| q.method == "POST")
        .unwrap();
    assert!(
        contains(&last.body, "First answer.") && contains(&last.body, "second question"),
        "the resumed process sent the earlier conversation: {}",
        last.body
    );
    for q in r.server.requests() {
        assert!(
            (q.method == "POST" && q.path == "/v1/messages") || q.method == "HEAD",
            "unexpected request {} {}",
            q.method,
            q.path
        );
    }
    r.brain.kill().await.unwrap();
    assert_eq!(r.exits(), 2);
}

#[tokio::test]
async fn real_claude_act_runs_a_tool_that_ask_may_not() {
    let Some(program) = installed_claude() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.txt");
    let path = target.to_string_lossy().into_owned();
    let write = json!({"file_path": path, "content": "written by act\n"});
    let r = Rig::start(
        program,
        vec![
            tool("please try writing", "Write", write.clone()),
            text("please try writing", "Could not write."),
            tool("now write it", "Write", write),
            text("now write it", "Wrote it."),
        ],
    )
    .await;
    r.brain.boot(Mode::Dispatch).await.unwrap();

    let asked = r.ask("please try writing").await;
    assert_eq!(asked.text, "Could not write.");
    assert_eq!(asked.tool_calls.len(), 1);
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
    assert_eq!(
        acted.series.exid, asked.series.exid,
        "the act process resumed"
    );
    assert_eq!(r.exits(), 1, "the ask process was replaced");
    r.brain.kill().await.unwrap();
}

#[tokio::test]
async fn real_claude_interact_mode_is_a_live_terminal_on_the_same_conversation() {
    let Some(program) = installed_claude() else {
        return;
    };
    let r = Rig::start(
        program,
        vec![text("hello", "Hi."), text("typed-in-tui", "PINEAPPLE")],
    )
    .await;
    r.brain.boot(Mode::Dispatch).await.unwrap();
    let series = r.ask("hello").await.series;

    let data = Arc::new(Mutex::new(Vec::<u8>::new()));
    let d = data.clone();
    r.brain
        .on_data(Arc::new(move |b| d.lock().unwrap().extend_from_slice(b)));
    let inst = r.brain.boot(Mode::Interact).await.unwrap();
    assert_eq!(inst.mode, Mode::Interact);
    let screen = || String::from_utf8_lossy(&data.lock().unwrap()).into_owned();
    let wait_for = |what: &'static str| {
        let screen = &screen;
        async move {
            let start = Instant::now();
            while !screen().contains(what) {
                assert!(
                    start.elapsed() < PATIENCE,
                    "no {what:?} on screen:\n{}",
                    screen()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    // The input hint shows once the prompt takes keys.
    wait_for("shortcuts").await;
    assert!(
        screen().contains('\x1b'),
        "a full-screen program draws with escapes"
    );
    assert!(
        r.brain.ask("hello").await.is_err(),
        "ask is refused in interact mode"
    );
    r.brain.write(b"typed-in-tui").await.unwrap();
    wait_for("typed-in-tui").await;
    // Enter on its own: in the same write it would count as pasted text.
    r.brain.write(b"\r").await.unwrap();
    wait_for("PINEAPPLE").await;
    r.brain
        .resize(ouro::brain::TermSize {
            cols: 120,
            rows: 40,
        })
        .unwrap();

    r.brain.kill().await.unwrap();
    assert_eq!(
        r.exits(),
        2,
        "one exit for the dispatch process, one for the terminal"
    );
    assert_eq!(r.brain.instance(), None);
    assert_eq!(r.brain.series(), Some(series));
    let last = r
        .server
        .requests()
        .into_iter()
        .rfind(|q| q.method == "POST")
        .unwrap();
    assert!(
        contains(&last.body, "Hi."),
        "the terminal resumed the conversation"
    );
}
