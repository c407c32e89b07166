//! `ouro daemon` and its thin clients as a user runs them: real processes, the client of a
//! talk inside a real PTY, brains that are a scripted REPL (tests/fixtures/fake_claude.py),
//! ouro's own engine against the mock API, and the real `claude` CLI where it is installed.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::pty::{Options, Term};
use crate::common::secrets::{SECRET_ENV, assert_no_secrets, fake_claude_envs};
use crate::common::{Run, Sandbox, Watched, bodies, server};

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_claude.py");
const SCRIPTED: &str = "claude@anthropic/claude/sonnet";
const OURO: &str = "ouro@anthropic/claude/sonnet";
const LIMIT: Duration = Duration::from_secs(60);

/// A private ouro home with its own daemon, killed when the test ends.
struct Home {
    sb: Sandbox,
    url: String,
    env: Vec<(String, String)>,
}

impl Home {
    fn new(url: &str) -> Home {
        let sb = Sandbox::new();
        let log = sb.home.path().join("fake.log").display().to_string();
        Home {
            sb,
            url: url.to_string(),
            env: vec![
                ("OURO_CLAUDE_BIN".into(), FAKE.into()),
                ("FAKE_CLAUDE_LOG".into(), log),
            ],
        }
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = self.sb.command(&self.url, args);
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
    }

    async fn run(&self, args: &[&str]) -> Run {
        Run::from(
            tokio::time::timeout(LIMIT, self.command(args).output())
                .await
                .expect("the command did not finish")
                .unwrap(),
        )
    }

    async fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args).await;
        assert!(run.status.success(), "{args:?}\n{}", run.debug());
        run
    }

    fn term(&self, args: &[&str]) -> Term {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Term::start(
            &self.sb,
            &self.url,
            Options {
                args,
                env: &env,
                ..Options::default()
            },
        )
    }

    /// `clone new NAME --brain BRAIN --dir <the sandbox's project>`.
    async fn clone_new(&self, name: &str, brain: &str) -> Run {
        let dir = self.sb.root().display().to_string();
        self.ok(&["clone", "new", name, "--brain", brain, "--dir", &dir])
            .await
    }

    fn daemon_pid(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.sb.home.path().join("daemon/daemon.lock")).ok()?;
        text.trim().parse().ok()
    }

    /// The fake's starts, one argv each.
    fn fake_starts(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.sb.home.path().join("fake.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| serde_json::from_value(v.get("argv")?.clone()).ok())
            .collect()
    }

    /// `clone list` as rows of cells.
    async fn clones(&self) -> Vec<Vec<String>> {
        let run = self.ok(&["clone", "list"]).await;
        run.stdout
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect()
    }

    /// Waits until clone `name` is idle, in dispatch mode with no process; its series.
    async fn idle_series(&self, name: &str) -> String {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let rows = self.clones().await;
            let row = rows.iter().find(|r| r[0] == name).unwrap();
            if row[2] == "dispatch" && row[3] == "-" && row[6] == "idle" {
                return row[4].clone();
            }
            assert!(tokio::time::Instant::now() < deadline, "{rows:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        if let Some(pid) = self.daemon_pid() {
            // SAFETY: kill only signals the daemon this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Whether the real `claude` CLI is here (a counted skip when not).
fn claude_installed() -> bool {
    let here = crate::common::skip::on_path("claude");
    if !here {
        crate::common::skip::not_installed(
            "the real `claude` CLI (npm install -g @anthropic-ai/claude-code; .ci/run does)",
        );
    }
    here
}

fn resume_of(argv: &[String]) -> Option<&str> {
    let at = argv.iter().position(|a| a == "--resume")?;
    argv.get(at + 1).map(String::as_str)
}

fn session_in_banner(term: &mut Term) -> String {
    term.expect("FAKE CLAUDE TUI ready (session ");
    term.expect(")").trim_end_matches(')').to_string()
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[tokio::test(flavor = "multi_thread")]
async fn talk_echoes_resizes_detaches_and_ask_continues_the_conversation() {
    let home = Home::new("http://127.0.0.1:9");
    let made = home.clone_new("c1", SCRIPTED).await;
    assert!(made.stdout.contains("clone c1"), "{}", made.debug());

    let mut term = home.term(&["talk", "c1"]);
    let session = session_in_banner(&mut term);
    assert!(term.is_raw());
    term.line("hello brain");
    term.expect("got: hello brain");
    term.resize(100, 30);
    term.expect("size: 100x30");
    term.send("\x10\x11");
    term.expect("detached from c1");
    assert!(term.wait_exit().success(), "{}", term.text());
    assert!(!term.is_raw(), "the terminal was not restored");

    // Back in dispatch with the series the talk wrote; the next ask resumes it.
    assert_eq!(home.idle_series("c1").await, session);
    let asked = home.ok(&["ask", "c1", "what did I say?"]).await;
    assert_eq!(asked.stdout.trim(), "echo: what did I say?");
    let starts = home.fake_starts();
    let last = starts.last().unwrap();
    assert!(last.contains(&"-p".to_string()), "{starts:?}");
    assert_eq!(resume_of(last), Some(session.as_str()), "{starts:?}");

    // From a terminal too, the answer is printed and the client exits (no read of the
    // keyboard keeps it alive).
    let mut asking = home.term(&["ask", "c1", "from a terminal"]);
    asking.expect("echo: from a terminal");
    assert!(asking.wait_exit().success(), "{}", asking.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_killed_mid_talk_leaves_the_clone_in_dispatch_with_its_series() {
    let home = Home::new("http://127.0.0.1:9");
    home.clone_new("c1", SCRIPTED).await;
    home.ok(&["ask", "c1", "before the talk"]).await;
    let before = home.idle_series("c1").await;
    let mut term = home.term(&["talk", "c1"]);
    // The scripted REPL hands out a new session id on resume, as a forking resume does.
    let session = session_in_banner(&mut term);
    assert_ne!(session, before);
    term.line("remember this");
    term.expect("got: remember this");
    // A watcher that joins now sees the screen as it is, then what follows.
    let watcher = Watched::spawn(home.command(&["watch", "c1"]));
    watcher.wait_stdout("got: remember this").await;
    term.line("and this");
    watcher.wait_stdout("got: and this").await;
    let brain_pid = {
        let rows = home.clones().await;
        assert_eq!(rows[0][2], "interact", "{rows:?}");
        rows[0][3].parse::<i32>().unwrap()
    };
    // SAFETY: kill only signals the client this test started.
    unsafe { libc::kill(term.pid(), libc::SIGKILL) };
    assert_eq!(home.idle_series("c1").await, session);
    assert!(!alive(brain_pid), "the talk's brain still runs");
    watcher.wait_stdout("the talk ended").await;
    let asked = home.ok(&["ask", "c1", "still there?"]).await;
    assert_eq!(asked.stdout.trim(), "echo: still there?");
    let starts = home.fake_starts();
    assert_eq!(resume_of(starts.last().unwrap()), Some(session.as_str()));
    watcher.interrupt();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_brain_exiting_ends_the_talk_with_its_code() {
    let home = Home::new("http://127.0.0.1:9");
    home.clone_new("c1", SCRIPTED).await;
    let mut term = home.term(&["talk", "c1"]);
    session_in_banner(&mut term);
    term.line("exit 7");
    term.expect("exited (code 7)");
    let status = term.wait_exit();
    assert_eq!(status.exit_code(), 7, "{}", term.text());
    home.idle_series("c1").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ask_during_a_talk_waits_in_the_queue_and_says_so() {
    let home = Home::new("http://127.0.0.1:9");
    home.clone_new("c1", SCRIPTED).await;
    let mut term = home.term(&["talk", "c1"]);
    session_in_banner(&mut term);
    let asking = Watched::spawn(home.command(&["ask", "c1", "queued question"]));
    asking.wait_stderr("c1 is in a talk; this waits").await;
    term.send("\x10\x11");
    term.expect("detached from c1");
    let run = asking.finish(LIMIT).await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.stdout.trim(), "echo: queued question");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_daemon_is_restarted_by_the_next_command_and_recovers_its_clones() {
    let home = Home::new("http://127.0.0.1:9");
    home.clone_new("c1", SCRIPTED).await;
    home.ok(&["ask", "c1", "first"]).await;
    let series = home.idle_series("c1").await;
    let first = home.daemon_pid().unwrap();
    // SAFETY: kill only signals the daemon this test started.
    unsafe { libc::kill(first, libc::SIGKILL) };
    while alive(first) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let rows = home.clones().await;
    assert_eq!(rows[0][0], "c1");
    assert_eq!(rows[0][4], series, "{rows:?}");
    assert_ne!(home.daemon_pid(), Some(first));
    home.ok(&["ask", "c1", "second"]).await;
    let starts = home.fake_starts();
    assert_eq!(resume_of(starts.last().unwrap()), Some(series.as_str()));
}

/// A daemon killed with -9 in the middle of a turn: the next command's restarted daemon
/// continues the same conversation (never a silent new one) and says the turn was cut.
#[tokio::test(flavor = "multi_thread")]
async fn a_turn_cut_by_a_killed_daemon_is_named_and_its_conversation_continues() {
    let home = Home::new("http://127.0.0.1:9");
    home.clone_new("c1", SCRIPTED).await;
    let slow = Watched::spawn(home.command(&["ask", "c1", "slow story"]));
    // Mid-turn: the clone is busy and its brain has named the conversation.
    let deadline = tokio::time::Instant::now() + LIMIT;
    let series = loop {
        let row = home.clones().await[0].clone();
        if row[6] != "idle" && row[4] != "-" {
            break row[4].clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "{row:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let first = home.daemon_pid().unwrap();
    // SAFETY: kill only signals the daemon this test started.
    unsafe { libc::kill(first, libc::SIGKILL) };
    while alive(first) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = slow.finish(LIMIT).await;
    let next = home.ok(&["ask", "c1", "second"]).await;
    assert!(
        next.stderr.contains("was cut off") && next.stderr.contains("slow story"),
        "{}",
        next.debug()
    );
    let starts = home.fake_starts();
    assert_eq!(resume_of(starts.last().unwrap()), Some(series.as_str()));
    let after = home.ok(&["ask", "c1", "third"]).await;
    assert!(!after.stderr.contains("was cut off"), "{}", after.debug());
}

/// A killed daemon's brain ends with it, and one that somehow still runs (here a stand-in the
/// test started, in a process group of its own) is ended before the next turn takes the
/// conversation, and the user is told which process that was.
#[tokio::test(flavor = "multi_thread")]
async fn a_brain_left_running_by_a_killed_daemon_is_ended_and_named() {
    let home = Home::new("http://127.0.0.1:9");
    home.clone_new("c1", SCRIPTED).await;
    let marker = home.sb.home.path().join("daemon/clones/c1/turn-running");
    let slow = Watched::spawn(home.command(&["ask", "c1", "slow story"]));
    let deadline = tokio::time::Instant::now() + LIMIT;
    let brain = loop {
        let recorded = std::fs::read_to_string(&marker)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["brain"]["pid"].as_i64());
        if let Some(pid) = recorded {
            break pid as i32;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no brain in the marker"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(alive(brain));
    let first = home.daemon_pid().unwrap();
    // SAFETY: kill only signals the daemon this test started.
    unsafe { libc::kill(first, libc::SIGKILL) };
    let _ = slow.finish(LIMIT).await;
    let gone = tokio::time::Instant::now() + LIMIT;
    while alive(brain) {
        assert!(
            tokio::time::Instant::now() < gone,
            "the brain outlived its daemon"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let mut stray = std::process::Command::new("setsid")
        .args(["sleep", "60"])
        .spawn()
        .unwrap();
    let stray_pid = stray.id();
    let ticks = std::fs::read_to_string(format!("/proc/{stray_pid}/stat")).unwrap();
    let started: u64 = ticks[ticks.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let mut cut: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&marker).unwrap()).unwrap();
    cut["brain"] = serde_json::json!({"pid": stray_pid, "started": started});
    std::fs::write(&marker, cut.to_string()).unwrap();
    let reaper = std::thread::spawn(move || stray.wait());

    let next = home.ok(&["ask", "c1", "second"]).await;
    assert!(
        next.stderr.contains("was cut off")
            && next.stderr.contains(&format!("pid {stray_pid}"))
            && next.stderr.contains("ended it"),
        "{}",
        next.debug()
    );
    assert!(!reaper.join().unwrap().unwrap().success());
    assert!(!marker.exists());
}

/// The socket's folder removed under a running daemon: it listens again where clients look,
/// commands reach the same daemon, and status and stop find it even before that.
#[tokio::test(flavor = "multi_thread")]
async fn a_daemon_whose_socket_was_removed_is_still_found_and_stopped() {
    let home = Home::new("http://127.0.0.1:9");
    home.clone_new("c1", SCRIPTED).await;
    let pid = home.daemon_pid().unwrap();
    let status = home.ok(&["daemon", "status"]).await;
    let socket = status
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("socket: "))
        .map(|s| std::path::PathBuf::from(s.trim()))
        .unwrap();
    std::fs::remove_dir_all(socket.parent().unwrap()).unwrap();
    let status = home.ok(&["daemon", "status"]).await;
    assert!(
        status.stdout.contains(&format!("pid {pid}")),
        "{}",
        status.debug()
    );
    let listed = home.ok(&["clone", "list"]).await;
    assert!(listed.stdout.contains("c1"), "{}", listed.debug());
    assert_eq!(home.daemon_pid(), Some(pid), "a second daemon started");
    assert!(socket.exists(), "the daemon did not listen again");

    std::fs::remove_dir_all(socket.parent().unwrap()).unwrap();
    let stopped = home.ok(&["daemon", "stop"]).await;
    assert!(
        stopped
            .stdout
            .contains(&format!("stopped the daemon (pid {pid})")),
        "{}",
        stopped.debug()
    );
    assert!(!alive(pid));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_watchers_see_a_dispatch_turn_as_it_runs() {
    let home = Home::new("http://127.0.0.1:9");
    home.clone_new("c1", SCRIPTED).await;
    let watchers: Vec<Watched> = (0..2)
        .map(|_| Watched::spawn(home.command(&["watch", "c1"])))
        .collect();
    for w in &watchers {
        w.wait_stderr("watching c1").await;
    }
    let asked = home.ok(&["ask", "c1", "slow story"]).await;
    assert_eq!(asked.stdout.trim(), "echo: slow story");
    for w in &watchers {
        w.wait_stdout("ask: slow story").await;
        w.wait_stdout("part 2").await;
        w.wait_stdout("echo: slow story").await;
        w.wait_stdout("the turn ended").await;
    }
    for w in watchers {
        w.interrupt();
        let run = w.finish(LIMIT).await;
        assert!(run.status.success(), "{}", run.debug());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn daemon_commands_one_daemon_per_home_and_a_stale_socket_is_replaced() {
    let home = Home::new("http://127.0.0.1:9");
    let status = home.run(&["daemon", "status"]).await;
    assert_eq!(status.status.code(), Some(1));
    assert!(
        status.stdout.contains("no daemon runs"),
        "{}",
        status.debug()
    );

    // A socket file left by a daemon that died is no obstacle.
    let socket = home.sb.home.path().join("run/daemon.sock");
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
        drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
        assert!(socket.exists());
    }
    let started = home.ok(&["daemon", "start"]).await;
    assert!(
        started.stdout.contains("started the daemon"),
        "{}",
        started.debug()
    );
    let again = home.ok(&["daemon", "start"]).await;
    assert!(again.stdout.contains("already runs"), "{}", again.debug());
    let second = home.run(&["daemon", "run"]).await;
    assert_eq!(second.status.code(), Some(1));
    assert!(
        second.stderr.contains("a daemon already runs"),
        "{}",
        second.debug()
    );
    let status = home.ok(&["daemon", "status"]).await;
    assert!(status.stdout.contains("clones: 0"), "{}", status.debug());

    let bad = home.run(&["clone", "new", "../x"]).await;
    assert!(
        bad.stderr.contains("is not a clone name"),
        "{}",
        bad.debug()
    );
    let missing = home.run(&["ask", "nobody", "hi"]).await;
    assert!(
        missing.stderr.contains("no clone named `nobody`"),
        "{}",
        missing.debug()
    );

    let pid = home.daemon_pid().unwrap();
    let stopped = home.ok(&["daemon", "stop"]).await;
    assert!(
        stopped.stdout.contains("stopped the daemon"),
        "{}",
        stopped.debug()
    );
    assert!(!alive(pid));
}

/// Where the daemon of `home` listens.
fn socket_of(home: &Home) -> PathBuf {
    ouro::daemon::Paths::for_home(
        home.sb.home.path().to_path_buf(),
        std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .as_deref(),
    )
    .socket
}

async fn frame(stream: &mut tokio::net::UnixStream, header: Value) {
    let header = serde_json::to_vec(&header).unwrap();
    let mut buf = (header.len() as u32).to_be_bytes().to_vec();
    buf.extend_from_slice(&0u32.to_be_bytes());
    buf.extend_from_slice(&header);
    stream.write_all(&buf).await.unwrap();
}

async fn read_header(stream: &mut tokio::net::UnixStream) -> Value {
    let mut lengths = [0u8; 8];
    stream.read_exact(&mut lengths).await.unwrap();
    let header_len = u32::from_be_bytes(lengths[..4].try_into().unwrap()) as usize;
    let payload_len = u32::from_be_bytes(lengths[4..].try_into().unwrap()) as usize;
    let mut rest = vec![0u8; header_len + payload_len];
    stream.read_exact(&mut rest).await.unwrap();
    serde_json::from_slice(&rest[..header_len]).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_protocol_mismatch_fails_clearly_on_both_sides() {
    let home = Home::new("http://127.0.0.1:9");
    home.ok(&["daemon", "start"]).await;
    // An old or new client meets this daemon.
    let mut stream = tokio::net::UnixStream::connect(socket_of(&home))
        .await
        .unwrap();
    frame(
        &mut stream,
        json!({"type": "hello", "protocol": 999, "version": "9.9.9"}),
    )
    .await;
    let answer = read_header(&mut stream).await;
    assert_eq!(answer["type"], "refused");
    let reason = answer["reason"].as_str().unwrap();
    assert!(
        reason.contains("protocol 999") && reason.contains("daemon stop"),
        "{reason}"
    );
    home.ok(&["daemon", "stop"]).await;

    // This client meets a daemon of another protocol.
    let socket = socket_of(&home);
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&socket);
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    let other = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        read_header(&mut stream).await;
        frame(
            &mut stream,
            json!({"type": "welcome", "protocol": 2, "version": "9.9.9", "pid": 4242}),
        )
        .await;
    });
    let run = home.run(&["clone", "list"]).await;
    other.await.unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr.contains("speaks protocol 2") && run.stderr.contains("kill 4242"),
        "{}",
        run.debug()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permission_question_is_relayed_and_a_watcher_answers_it() {
    let api = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash",
                      "input": {"command": "touch made-by-act.txt"}}]},
        {"content": [{"type": "text", "text": "Made the file."}]}
    ]}))
    .await;
    let home = Home::new(&api.url());
    home.clone_new("n1", OURO).await;
    let mut watcher = home.term(&["watch", "n1"]);
    watcher.expect("watching n1");
    let acting = Watched::spawn(home.command(&["act", "n1", "make the file"]));
    acting
        .wait_stderr("n1 wants to run Bash(touch made-by-act.txt)")
        .await;
    watcher.expect("n1 wants to run Bash(touch made-by-act.txt)");
    watcher.expect("allow?");
    watcher.line("y");
    let run = acting.finish(LIMIT).await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.stdout.trim(), "Made the file.");
    assert!(run.stderr.contains("→ allowed"), "{}", run.debug());
    assert!(home.sb.root().join("made-by-act.txt").exists());
}

/// A watcher that attaches while a question waits is put that question (it was asked before
/// the watcher came) and its answer settles it.
#[tokio::test(flavor = "multi_thread")]
async fn a_watcher_that_comes_while_a_question_waits_is_asked_it() {
    let api = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash",
                      "input": {"command": "touch made-late.txt"}}]},
        {"content": [{"type": "text", "text": "Made the file."}]}
    ]}))
    .await;
    let home = Home::new(&api.url());
    home.clone_new("n1", OURO).await;
    let acting = Watched::spawn(home.command(&["act", "n1", "make the file"]));
    acting
        .wait_stderr("n1 wants to run Bash(touch made-late.txt)")
        .await;
    // `ouro agents` (Claude Code's agent view) shows the clone at work, and what it waits on.
    let agents = home.ok(&["agents", "--json"]).await;
    let rows: Value = serde_json::from_str(&agents.stdout).unwrap();
    let row = rows
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "n1"))
        .unwrap_or_else(|| panic!("{}", agents.debug()))
        .clone();
    assert_eq!(row["kind"], "clone", "{row}");
    assert_eq!(row["state"], "running", "{row}");
    assert_eq!(row["pending"].as_array().map(Vec::len), Some(1), "{row}");
    let mut watcher = home.term(&["watch", "n1"]);
    watcher.expect("watching n1");
    watcher.expect("n1 wants to run Bash(touch made-late.txt)");
    watcher.expect("allow?");
    watcher.line("y");
    let run = acting.finish(LIMIT).await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.stdout.trim(), "Made the file.");
    assert_eq!(
        run.stderr.matches("wants to run").count(),
        1,
        "{}",
        run.debug()
    );
    assert!(home.sb.root().join("made-late.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_native_brain_talks_in_its_repl_and_ask_continues_that_conversation() {
    let api = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Answer one from the mock."}]},
        {"content": [{"type": "text", "text": "Answer two from the mock."}]},
        {"content": [{"type": "text", "text": "Answer three from the mock."}]}
    ]}))
    .await;
    let home = Home::new(&api.url());
    home.clone_new("n1", OURO).await;
    let asked = home.ok(&["ask", "n1", "first question"]).await;
    assert_eq!(asked.stdout.trim(), "Answer one from the mock.");

    let mut term = home.term(&["talk", "n1"]);
    term.submit("second question");
    term.expect("Answer two from the mock.");
    term.expect("› ");
    term.send("\x10\x11");
    term.expect("detached from n1");
    assert!(term.wait_exit().success(), "{}", term.text());

    home.idle_series("n1").await;
    let asked = home.ok(&["ask", "n1", "third question"]).await;
    assert_eq!(asked.stdout.trim(), "Answer three from the mock.");
    let bodies = bodies(&api);
    let last = serde_json::to_string(&bodies.last().unwrap()["messages"]).unwrap();
    for earlier in [
        "first question",
        "Answer one",
        "second question",
        "Answer two",
    ] {
        assert!(last.contains(earlier), "{earlier} missing from {last}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_claude_cli_brain_answers_through_the_daemon() {
    if !claude_installed() {
        return;
    }
    let api = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Claude says one."}]},
        {"content": [{"type": "text", "text": "Claude says two."}]}
    ]}))
    .await;
    let mut home = Home::new(&api.url());
    home.env.retain(|(k, _)| k != "OURO_CLAUDE_BIN");
    home.clone_new("k1", SCRIPTED).await;
    let one = home.ok(&["ask", "k1", "first"]).await;
    assert_eq!(one.stdout.trim(), "Claude says one.");
    let series = home.idle_series("k1").await;
    let two = home
        .ok(&["ask", "k1", "second", "--output-format", "stream-json"])
        .await;
    let result = two
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .unwrap();
    assert_eq!(result["result"], "Claude says two.");
    assert!(!series.is_empty() && series != "-");
    let bodies = bodies(&api);
    let last = serde_json::to_string(&bodies.last().unwrap()["messages"]).unwrap();
    assert!(last.contains("Claude says one."), "{last}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_terminal_is_restored_when_the_client_is_told_to_stop_or_the_daemon_dies() {
    let home = Home::new("http://127.0.0.1:9");
    home.clone_new("c1", SCRIPTED).await;
    for signal in [libc::SIGTERM, libc::SIGHUP] {
        let mut term = home.term(&["talk", "c1"]);
        session_in_banner(&mut term);
        assert!(term.is_raw());
        // SAFETY: kill only signals the client this test started.
        unsafe { libc::kill(term.pid(), signal) };
        let status = term.wait_exit();
        assert_eq!(status.exit_code() as i32, 128 + signal, "{}", term.text());
        assert!(!term.is_raw(), "signal {signal} left the terminal raw");
        home.idle_series("c1").await;
    }

    let mut term = home.term(&["talk", "c1"]);
    let session = session_in_banner(&mut term);
    term.line("typed before the crash");
    term.expect("got: typed before the crash");
    // SAFETY: kill only signals the daemon this test started.
    unsafe { libc::kill(home.daemon_pid().unwrap(), libc::SIGKILL) };
    term.expect("connection to the daemon was lost");
    term.expect("Run `ouro talk` again");
    assert!(!term.wait_exit().success());
    assert!(!term.is_raw(), "a dead daemon left the terminal raw");
    // The next command brings the daemon and the clone back, in the conversation of the talk.
    let rows = home.clones().await;
    assert_eq!(rows[0][0], "c1");
    assert_eq!(rows[0][4], session, "{rows:?}");
}

/// Claude Code's first-run questions answered the way a user who set it up has: onboarding
/// done, the test key approved, the project trusted.
fn seed_claude_config(home: &Home) {
    let key = crate::common::API_KEY;
    let config = json!({
        "hasCompletedOnboarding": true,
        "customApiKeyResponses": {"approved": [&key[key.len() - 20..]], "rejected": []},
        "projects": {home.sb.root().display().to_string(): {"hasTrustDialogAccepted": true}},
    });
    std::fs::write(home.sb.home.path().join(".claude.json"), config.to_string()).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_claude_cli_brain_talks_in_its_own_tui_and_ask_continues_that_conversation() {
    if !claude_installed() {
        return;
    }
    let api = server(json!({"turns": [
        {"when_text": "typed in the TUI",
         "content": [{"type": "text", "text": "TUI-acknowledged-7731"}]},
        {"when_text": "asked afterwards",
         "content": [{"type": "text", "text": "The ask got it."}]}
    ]}))
    .await;
    let mut home = Home::new(&api.url());
    home.env.retain(|(k, _)| k != "OURO_CLAUDE_BIN");
    home.env.push(("DISABLE_TELEMETRY".into(), "1".into()));
    home.env.push((
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
        "1".into(),
    ));
    seed_claude_config(&home);
    home.clone_new("k1", SCRIPTED).await;

    let mut term = home.term(&["talk", "k1"]);
    // The screen, not the byte stream: the TUI may move the cursor instead of printing spaces.
    term.wait_screen("Claude Code");
    term.expect("❯");
    term.send("typed in the TUI");
    term.send("\r");
    // One word: the TUI moves the cursor instead of printing spaces.
    term.expect("TUI-acknowledged-7731");
    term.send("\x10\x11");
    term.expect("detached from k1");
    assert!(term.wait_exit().success(), "{}", term.text());
    assert!(!term.is_raw());

    let series = home.idle_series("k1").await;
    assert_ne!(series, "-");
    let asked = home.ok(&["ask", "k1", "asked afterwards"]).await;
    assert_eq!(asked.stdout.trim(), "The ask got it.", "{}", asked.debug());
    let last = bodies(&api)
        .into_iter()
        .rev()
        .find(|b| b.to_string().contains("asked afterwards"))
        .unwrap();
    let messages = serde_json::to_string(&last["messages"]).unwrap();
    assert!(messages.contains("typed in the TUI"), "{messages}");
    assert!(messages.contains("TUI-acknowledged-7731"), "{messages}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clone_runs_its_turns_in_its_own_permission_mode() {
    let mut home = Home::new("");
    let out = home.sb.root().join("out.txt");
    let api = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Write",
                      "input": {"file_path": out, "content": "written\n"}}]},
        {"content": [{"type": "text", "text": "Wrote it."}]}
    ]}))
    .await;
    home.url = api.url();
    let dir = home.sb.root().display().to_string();
    let bad = home
        .run(&[
            "clone",
            "new",
            "n2",
            "--dir",
            &dir,
            "--permission-mode",
            "yolo",
        ])
        .await;
    assert!(
        bad.stderr.contains("unknown permission mode `yolo`"),
        "{}",
        bad.debug()
    );
    home.ok(&[
        "clone",
        "new",
        "n2",
        "--brain",
        OURO,
        "--dir",
        &dir,
        "--permission-mode",
        "acceptEdits",
    ])
    .await;
    let run = home.ok(&["act", "n2", "write the file"]).await;
    assert_eq!(run.stdout.trim(), "Wrote it.", "{}", run.debug());
    assert!(!run.stderr.contains("wants to run"), "{}", run.debug());
    assert_eq!(std::fs::read_to_string(out).unwrap(), "written\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clone_brain_gets_no_secret_but_what_was_passed_by_name() {
    let api = server(json!({"turns": []})).await;
    let mut home = Home::new(&api.url());
    home.env
        .extend(SECRET_ENV.map(|(k, v)| (k.to_string(), v.to_string())));
    let dir = home.sb.root().display().to_string();
    home.ok(&[
        "clone",
        "new",
        "c",
        "--brain",
        SCRIPTED,
        "--dir",
        &dir,
        "--pass-env",
        "KEEP_TOKEN",
    ])
    .await;
    home.ok(&["clone", "new", "d", "--brain", SCRIPTED, "--dir", &dir])
        .await;
    home.ok(&["ask", "c", "hello"]).await;
    let log = home.sb.home.path().join("fake.log");
    assert_no_secrets(&fake_claude_envs(&log), Some("KEEP_TOKEN"));
    std::fs::remove_file(&log).unwrap();
    home.ok(&["ask", "d", "hello"]).await;
    let envs = fake_claude_envs(&log);
    assert_no_secrets(&envs, None);
    assert!(!envs[0].iter().any(|n| n == "KEEP_TOKEN"), "{envs:?}");
}

/// A socket another user planted where the daemon's would be (a runtime folder anyone may
/// write): the client refuses it and sends it nothing, not even the handshake.
#[tokio::test(flavor = "multi_thread")]
async fn a_socket_another_user_planted_is_sent_nothing() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if crate::common::skip::needs_root("listen on a socket as another user") {
        return;
    }
    let api = server(json!({"turns": []})).await;
    let mut home = Home::new(&api.url());
    // In /tmp itself: the other user must reach it, and the test's own temp folder may be
    // private to this user.
    let shared = tempfile::tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let runtime = shared.path().display().to_string();
    home.env.push(("XDG_RUNTIME_DIR".into(), runtime));
    // Where this home's daemon puts its socket, learnt from one, which then stops.
    home.ok(&["daemon", "start"]).await;
    let socket = std::fs::read_to_string(home.sb.home.path().join("daemon/socket")).unwrap();
    home.ok(&["daemon", "stop"]).await;
    let socket = PathBuf::from(socket.trim());
    let _ = std::fs::remove_file(&socket);
    let folder = socket.parent().unwrap();
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o777)).unwrap();
    let got = shared.path().join("got");
    let ready = shared.path().join("ready");
    let script = format!(
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.bind({socket:?})\ns.listen()\nopen({ready:?}, 'w').close()\nc, _ = s.accept()\nc.settimeout(5)\ndata = b''\ntry:\n    while True:\n        chunk = c.recv(65536)\n        if not chunk:\n            break\n        data += chunk\nexcept Exception:\n    pass\nopen({got:?}, 'wb').write(data)\n",
    );
    let mut planted = std::process::Command::new("python3")
        .args(["-c", &script])
        .uid(65534)
        .gid(65534)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + LIMIT;
    while !ready.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the planted socket never listened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let run = home.run(&["ask", "c", "my secret prompt"]).await;
    assert!(!run.status.success(), "{}", run.debug());
    assert!(run.stderr.contains("another user"), "{}", run.debug());
    let status = planted.wait().unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read(&got).unwrap(),
        b"",
        "the planted socket was sent bytes"
    );
}
