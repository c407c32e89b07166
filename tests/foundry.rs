//! End-to-end: the agent foundry (`ouro agent …`) with real processes: the CLI, the daemon it
//! starts, the native brain, against the mock API.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Run, Sandbox, bodies, copy_tree, git, server, tree};

const LIMIT: Duration = Duration::from_secs(60);

struct Foundry {
    sb: Sandbox,
    url: String,
    env: Vec<(String, String)>,
}

impl Foundry {
    fn new(sb: Sandbox, url: &str) -> Foundry {
        Foundry {
            sb,
            url: url.to_string(),
            env: Vec::new(),
        }
    }

    async fn run(&self, args: &[&str]) -> Run {
        let mut command = self.sb.command(&self.url, args);
        for (k, v) in &self.env {
            command.env(k, v);
        }
        Run::from(
            tokio::time::timeout(LIMIT, command.output())
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

    async fn pending(&self) -> Vec<Value> {
        let run = self.ok(&["agent", "pending", "--json"]).await;
        serde_json::from_str(run.stdout.trim()).unwrap()
    }

    /// Waits for `check` to hold of `ouro agent list --json`'s instance `name`.
    async fn wait_instance(&self, name: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let run = self.ok(&["agent", "list", "--json"]).await;
            let list: Value = serde_json::from_str(run.stdout.trim()).unwrap();
            if let Some(row) = list["instances"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == name)
                && check(row)
            {
                return row.clone();
            }
            assert!(tokio::time::Instant::now() < deadline, "{list}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn wait_pending(&self, n: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let pending = self.pending().await;
            if pending.len() >= n {
                return pending;
            }
            assert!(tokio::time::Instant::now() < deadline, "{pending:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn instance_dir(&self, name: &str) -> PathBuf {
        self.sb.home.path().join("agents/instances").join(name)
    }

    fn runs(&self, name: &str) -> Vec<Value> {
        std::fs::read_to_string(self.instance_dir(name).join("runs.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Foundry {
    fn drop(&mut self) {
        let lock = self.sb.home.path().join("daemon/daemon.lock");
        if let Some(pid) = std::fs::read_to_string(lock)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            // SAFETY: kill only signals the daemon this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Each request's signature header and body.
type Posts = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// A webhook receiver: every request's signature header and body, answered 200.
struct Receiver {
    url: String,
    got: Posts,
}

impl Receiver {
    async fn start() -> Receiver {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let got: Posts = Default::default();
        let sink = got.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let sink = sink.clone();
                tokio::spawn(async move {
                    let mut data = Vec::new();
                    let mut buf = [0u8; 4096];
                    let (head, body_at) = loop {
                        let n = socket.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        data.extend_from_slice(&buf[..n]);
                        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                            break (String::from_utf8_lossy(&data[..at]).to_lowercase(), at + 4);
                        }
                    };
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    while data.len() < body_at + length {
                        let n = socket.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        data.extend_from_slice(&buf[..n]);
                    }
                    let signature = head
                        .lines()
                        .find_map(|l| l.strip_prefix("x-ouro-signature:"))
                        .unwrap_or_default()
                        .trim()
                        .to_string();
                    sink.lock()
                        .unwrap()
                        .push((signature, data[body_at..body_at + length].to_vec()));
                    let _ = socket
                        .write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                        )
                        .await;
                });
            }
        });
        Receiver { url, got }
    }

    /// The posts so far, each checked against `secret` and parsed.
    fn posts(&self, secret: &[u8]) -> Vec<Value> {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
        self.got
            .lock()
            .unwrap()
            .iter()
            .map(|(signature, body)| {
                let hex = signature.strip_prefix("sha256=").expect(signature);
                let tag: Vec<u8> = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect();
                ring::hmac::verify(&key, body, &tag).expect("the signature verifies");
                serde_json::from_slice(body).unwrap()
            })
            .collect()
    }
}

const DEFINITION: &str = "---
name: fixer
description: Fixes small things
version: 1.2.0
author: ouro tests
permissionMode: acceptEdits
tools:
  - Read
  - Write
  - Edit
  - name: Bash
    denied_commands: ['rm .*']
engine:
  max_turns: 8
---
You fix small things, carefully.
";

/// The whole supervised path: a detached run parks a Bash question, `pending --json` lists
/// it, `approve` releases it, the run finishes, and its dogs artifact applied to the starting
/// tree reproduces the agent's tree.
#[tokio::test(flavor = "multi_thread")]
async fn a_detached_run_parks_a_question_that_approve_releases_and_its_artifact_reproduces_the_tree()
 {
    let sb = Sandbox::new();
    let root = sb.root().to_path_buf();
    let new_rs = root.join("src/new.rs").display().to_string();
    let a_txt = sb.write("a.txt", "old line\n");
    sb.write("kept.txt", "kept\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo built > built.txt"}}]},
        {"content": [
            {"type": "tool_use", "name": "Read", "input": {"file_path": a_txt}}]},
        {"content": [
            {"type": "tool_use", "name": "Write", "input": {"file_path": new_rs, "content": "pub fn new() {}\n"}},
            {"type": "tool_use", "name": "Edit", "input": {"file_path": a_txt, "old_string": "old", "new_string": "new"}}]},
        {"content": [{"type": "text", "text": "Fixed it."}]}
    ]}))
    .await;
    let hook = Receiver::start().await;
    std::fs::write(
        sb.home.path().join("settings.json"),
        json!({"agents": {"notify": {"url": hook.url}}}).to_string(),
    )
    .unwrap();
    let f = Foundry::new(sb, &mock.url());
    let start = tempfile::tempdir().unwrap();
    copy_tree(&root, start.path());
    f.sb.write("fixer.agent.md", DEFINITION);

    f.ok(&["agent", "create", "fixer", "--from", "fixer.agent.md"])
        .await;
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(f.instance_dir("fixer").join("config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(config["version"], "1.2.0");
    assert_eq!(config["deniedCommands"], json!(["rm .*"]));
    assert_eq!(
        std::fs::read_to_string(f.instance_dir("fixer").join("system_prompt.md")).unwrap(),
        "You fix small things, carefully."
    );
    std::fs::remove_file(root.join("fixer.agent.md")).unwrap();

    let started = f
        .ok(&[
            "agent",
            "run",
            "fixer",
            "--detach",
            "build it and fix a.txt",
        ])
        .await;
    let run_id = started.stdout.trim().to_string();
    assert!(!run_id.is_empty(), "{}", started.debug());

    let pending = f.wait_pending(1).await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    let q = &pending[0];
    assert_eq!(q["agent"], "fixer");
    assert_eq!(q["tool"], "Bash");
    assert_eq!(q["input"]["command"], "echo built > built.txt");
    assert!(q["expiresAt"].as_str().unwrap().ends_with('Z'), "{q}");
    assert!(q["id"].as_str().is_some_and(|id| !id.is_empty()));
    f.wait_instance("fixer", |r| r["state"] == "blocked").await;

    let id = q["id"].as_str().unwrap();
    f.ok(&["agent", "approve", id]).await;
    // The id is spent: a second answer is refused with a sentence.
    let again = f.run(&["agent", "deny", id]).await;
    assert!(!again.status.success());
    assert!(again.stderr.contains("no question"), "{}", again.debug());

    let row = f.wait_instance("fixer", |r| r["state"] == "done").await;
    assert_eq!(row["runId"], run_id.as_str());
    let runs = f.runs("fixer");
    assert_eq!(runs.len(), 1);
    let result = &runs[0];
    assert_eq!(result["status"], "success", "{result}");
    assert_eq!(result["summary"], "Fixed it.");
    assert_eq!(result["changed"], 3, "{result}");
    let artifact = PathBuf::from(result["artifact"].as_str().unwrap());
    assert_eq!(
        artifact,
        f.instance_dir("fixer")
            .join("artifacts")
            .join(format!("{run_id}.dogs.md"))
    );
    let bundle = std::fs::read_to_string(&artifact).unwrap();
    assert!(bundle.starts_with("---\n"), "{bundle}");
    assert!(bundle.contains("agent_name: \"fixer\""), "{bundle}");

    // The artifact applied to the starting tree gives the agent's tree.
    let artifact_arg = artifact.display().to_string();
    let start_arg = start.path().display().to_string();
    f.ok(&["dogs", &artifact_arg, "--dir", &start_arg, "--yes"])
        .await;
    assert_eq!(tree(start.path()), tree(&root));
    assert_eq!(
        std::fs::read_to_string(root.join("built.txt")).unwrap(),
        "built\n"
    );

    let logs = f.ok(&["agent", "logs", "fixer"]).await;
    assert!(logs.stdout.contains("task:result"), "{}", logs.debug());
    let list = f.ok(&["agent", "list"]).await;
    assert!(
        list.stdout.contains("fixer") && list.stdout.contains("done"),
        "{}",
        list.debug()
    );
    assert_eq!(bodies(&mock).len(), 4);

    // The webhook got the question and the result, each signed with the home's secret.
    let secret_file = f.sb.home.path().join("agents/webhook-secret");
    let deadline = tokio::time::Instant::now() + LIMIT;
    let posts = loop {
        let secret = std::fs::read_to_string(&secret_file).unwrap_or_default();
        let posts = hook.posts(secret.trim().as_bytes());
        if posts.len() >= 2 {
            break posts;
        }
        assert!(tokio::time::Instant::now() < deadline, "{posts:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&secret_file)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(posts[0]["type"], "permission:request");
    assert_eq!(posts[0]["question"]["id"], id);
    assert_eq!(posts[1]["type"], "task:result");
    assert_eq!(posts[1]["result"]["runId"], run_id.as_str());
}

/// `denied_commands` refuses without asking and tells the model which pattern refused it; a
/// question nobody answers expires and is denied, and the agent is told why.
#[tokio::test(flavor = "multi_thread")]
async fn denied_commands_refuse_unasked_and_an_unanswered_question_expires() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "rm -rf src"}}]},
        {"expect_text": "denied_commands pattern `rm .*`", "content": [
            {"type": "tool_use", "name": "Bash", "input": {"command": "echo late > late.txt"}}]},
        {"expect_text": "Nobody answered", "content": [{"type": "text", "text": "Gave up."}]}
    ]}))
    .await;
    let mut f = Foundry::new(Sandbox::new(), &mock.url());
    f.env
        .push(("OURO_AGENT_APPROVAL_TIMEOUT".into(), "1".into()));
    f.sb.write("src/keep.rs", "fn keep() {}\n");
    f.sb.write("fixer.agent.md", DEFINITION);
    f.ok(&["agent", "create", "fixer", "--from", "fixer.agent.md"])
        .await;
    // Attached: the run streams here and the exit code is the run's.
    let run = f.run(&["agent", "run", "fixer", "clean up"]).await;
    assert!(run.status.success(), "{}", run.debug());
    assert!(run.stdout.contains("Gave up."), "{}", run.debug());
    assert!(f.sb.root().join("src/keep.rs").exists());
    assert!(!f.sb.root().join("late.txt").exists());
    let result = &f.runs("fixer")[0];
    assert_eq!(result["status"], "success");
    assert_eq!(result["changed"], 0, "{result}");
    assert_eq!(bodies(&mock).len(), 3);
}

/// A Claude Code agent file with every one of its fields loads unchanged; a wrong type is an
/// error naming the file and the key, an unknown key a warning, and one setting under two
/// names an error naming both.
#[tokio::test]
async fn claude_code_agent_files_load_unchanged_and_mistakes_are_named() {
    let mock = server(json!({"turns": []})).await;
    let f = Foundry::new(Sandbox::new(), &mock.url());
    f.sb.write(
        ".claude/agents/reviewer.md",
        "---
name: reviewer
description: Reviews diffs
tools: Read, Grep, Glob, Bash(git diff:*)
disallowedTools: Write
model: haiku
effort: high
permissionMode: plan
mcpServers:
  - github
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: ./check.sh
maxTurns: 7
skills: [review]
initialPrompt: Start with the diff.
memory: project
background: true
isolation: worktree
color: blue
---
You review diffs.
",
    );
    let created = f
        .ok(&[
            "agent",
            "create",
            "reviewer",
            "--from",
            ".claude/agents/reviewer.md",
        ])
        .await;
    assert!(!created.stderr.contains("warning"), "{}", created.debug());
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(f.instance_dir("reviewer").join("config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(config["tools"], json!(["Read", "Grep", "Glob", "Bash"]));
    assert_eq!(config["allowedRules"], json!(["Bash(git diff:*)"]));
    assert_eq!(config["disallowedTools"], json!(["Write"]));
    assert_eq!(config["model"], "haiku");
    assert_eq!(config["permissionMode"], "plan");
    assert_eq!(config["maxTurns"], 7);
    assert_eq!(config["description"], "Reviews diffs");

    f.sb.write("bad.agent.md", "---\nmaxTurns: ten\n---\nBody.\n");
    let bad = f
        .run(&["agent", "create", "bad", "--from", "bad.agent.md"])
        .await;
    assert!(!bad.status.success());
    assert!(
        bad.stderr.contains("bad.agent.md") && bad.stderr.contains("maxTurns"),
        "{}",
        bad.debug()
    );
    f.sb.write(
        "two.agent.md",
        "---\nmaxTurns: 3\nengine:\n  max_turns: 4\n---\nBody.\n",
    );
    let two = f
        .run(&["agent", "create", "two", "--from", "two.agent.md"])
        .await;
    assert!(!two.status.success());
    assert!(
        two.stderr.contains("maxTurns") && two.stderr.contains("engine.max_turns"),
        "{}",
        two.debug()
    );
    f.sb.write("odd.agent.md", "---\nflavour: mint\n---\nBody.\n");
    let odd = f
        .ok(&["agent", "create", "odd", "--from", "odd.agent.md"])
        .await;
    assert!(
        odd.stderr.contains("warning") && odd.stderr.contains("flavour"),
        "{}",
        odd.debug()
    );
    let list = f.ok(&["agent", "list", "--json"]).await;
    let list: Value = serde_json::from_str(list.stdout.trim()).unwrap();
    let names: Vec<&str> = list["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["odd", "reviewer"]);
    assert!(
        list["instances"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["state"] == "idle")
    );
}

const MAKER: &str = "---
name: maker
description: Makes files
tools:
  - Read
  - name: Bash
    allowed_commands: ['echo [a-z]+ > made[.]txt']
---
You make files.";

/// `--context` makes the starting tree from a cats bundle (in ouro's home, or in an empty
/// `--dir`); `--worktree` runs in a new git worktree of the project. Neither touches the
/// checked-out files.
#[tokio::test]
async fn context_and_worktree_give_a_run_a_tree_of_its_own() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo one > made.txt"}}]},
        {"content": [{"type": "text", "text": "Made one."}]},
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo two > made.txt"}}]},
        {"content": [{"type": "text", "text": "Made two."}]}
    ]}))
    .await;
    let f = Foundry::new(Sandbox::new(), &mock.url());
    let root = f.sb.root().to_path_buf();
    f.sb.write("src/lib.rs", "pub fn lib() {}\n");
    f.sb.write("maker.agent.md", MAKER);
    f.ok(&["agent", "create", "maker", "--from", "maker.agent.md"])
        .await;
    f.ok(&["cats", "src", "-o", "context.md"]).await;

    let run = f
        .ok(&[
            "agent",
            "run",
            "maker",
            "--context",
            "context.md",
            "make one",
        ])
        .await;
    assert_eq!(
        run.stdout.matches("Made one.").count(),
        1,
        "the answer once: {}",
        run.debug()
    );
    assert!(run.stderr.contains("starting tree"), "{}", run.debug());
    let work: Vec<PathBuf> = std::fs::read_dir(f.instance_dir("maker").join("work"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let [tree_dir] = work.as_slice() else {
        panic!("one tree: {work:?}");
    };
    let mut made = tree(tree_dir);
    made.sort();
    assert_eq!(
        made,
        [
            (PathBuf::from("made.txt"), b"one\n".to_vec()),
            (PathBuf::from("src/lib.rs"), b"pub fn lib() {}\n".to_vec())
        ]
    );
    assert!(!root.join("made.txt").exists());
    assert_eq!(f.runs("maker")[0]["changed"], 1);

    // A --dir that is not empty is refused before anything runs.
    let refused = f
        .run(&[
            "agent",
            "run",
            "maker",
            "--context",
            "context.md",
            "--dir",
            "src",
            "x",
        ])
        .await;
    assert!(!refused.status.success());
    assert!(refused.stderr.contains("not empty"), "{}", refused.debug());

    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "start"]);
    let run = f
        .ok(&["agent", "run", "maker", "--worktree", "make two"])
        .await;
    assert!(run.stdout.contains("Made two."), "{}", run.debug());
    let listed = f.ok(&["worktree", "list"]).await;
    let path = listed
        .stdout
        .split_whitespace()
        .find(|w| w.contains("agent-maker-") && w.starts_with('/'))
        .unwrap_or_else(|| panic!("{}", listed.debug()));
    assert_eq!(
        std::fs::read_to_string(PathBuf::from(path).join("made.txt")).unwrap(),
        "two\n"
    );
    assert!(!root.join("made.txt").exists(), "the checkout is untouched");
    assert!(
        git(&root, &["status", "--porcelain"]).is_empty(),
        "{}",
        git(&root, &["status", "--porcelain"])
    );
    let conflicting = f
        .run(&["agent", "run", "maker", "--worktree", "--dir", "src", "x"])
        .await;
    assert!(!conflicting.status.success());
    assert_eq!(bodies(&mock).len(), 4);
}

/// `engine.max_cost_usd` is a budget: the run ends once it has spent that much, as a failure
/// that says so, and the model is not asked again.
#[tokio::test]
async fn a_run_stops_at_its_definitions_cost_budget() {
    let costly = json!({"input_tokens": 1_000_000, "output_tokens": 10});
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo one > made.txt"}}],
         "usage": costly},
        {"content": [{"type": "text", "text": "Spent more."}]}
    ]}))
    .await;
    let f = Foundry::new(Sandbox::new(), &mock.url());
    f.sb.write(
        "thrifty.agent.md",
        &MAKER
            .replace("name: maker", "name: thrifty")
            .replace("---\nYou", "engine:\n  max_cost_usd: 0.5\n---\nYou"),
    );
    f.ok(&["agent", "create", "thrifty", "--from", "thrifty.agent.md"])
        .await;
    let run = f.run(&["agent", "run", "thrifty", "make one"]).await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let result = &f.runs("thrifty")[0];
    assert_eq!(result["status"], "failure", "{result}");
    assert!(
        result["summary"].as_str().unwrap().contains("budget"),
        "{result}"
    );
    assert!(result["costUsd"].as_f64().unwrap() >= 0.5, "{result}");
    assert_eq!(bodies(&mock).len(), 1);
}

/// `ouro agent approve --always` lets calls like the approved one run unasked for the rest of
/// the run, even with command patterns (which send every Bash call to the asker).
#[tokio::test]
async fn approve_always_lets_the_same_call_run_unasked_for_the_rest_of_the_run() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "touch once.txt"}}]},
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "touch once.txt"}}]},
        {"content": [{"type": "text", "text": "Touched twice."}]}
    ]}))
    .await;
    let f = Foundry::new(Sandbox::new(), &mock.url());
    f.sb.write("maker.agent.md", MAKER);
    f.ok(&["agent", "create", "maker", "--from", "maker.agent.md"])
        .await;
    f.ok(&["agent", "run", "maker", "--detach", "touch it twice"])
        .await;
    let pending = f.wait_pending(1).await;
    let id = pending[0]["id"].as_str().unwrap();
    f.ok(&["agent", "approve", id, "--always"]).await;
    let row = f
        .wait_instance("maker", |r| r["state"] == "done" || r["state"] == "failed")
        .await;
    assert_eq!(row["state"], "done", "{row}");
    assert_eq!(f.runs("maker")[0]["summary"], "Touched twice.");
    assert_eq!(bodies(&mock).len(), 3);
    // Had the second call asked, the run would wait for an answer nobody gives.
    let log = std::fs::read_to_string(f.instance_dir("maker").join("log.jsonl")).unwrap();
    assert_eq!(log.matches(r#""isError":false"#).count(), 2, "{log}");
    // The grant lasted the run: nothing was written into the agent's tree.
    let settings: Vec<PathBuf> = walk_files(&f.sb.root())
        .into_iter()
        .chain(walk_files(&f.instance_dir("maker")))
        .filter(|p| p.ends_with(".ouro/settings.local.json"))
        .collect();
    assert!(settings.is_empty(), "{settings:?}");
}

/// A question whose run is stopped is withdrawn with it: nobody can answer it afterwards.
#[tokio::test]
async fn a_stopped_run_takes_its_question_with_it() {
    let (f, _mock) = maker_asking().await;
    let pending = f.wait_pending(1).await;
    let id = pending[0]["id"].as_str().unwrap().to_string();
    f.ok(&["agent", "stop", "maker"]).await;
    let deadline = tokio::time::Instant::now() + LIMIT;
    while !f.pending().await.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the question stayed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let late = f.run(&["agent", "approve", &id]).await;
    assert!(!late.status.success(), "{}", late.debug());
}

/// The maker agent running detached, its first call a question nobody has answered yet.
async fn maker_asking() -> (Foundry, ouro::mock::MockServer) {
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "touch never.txt"}}]},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let f = Foundry::new(Sandbox::new(), &mock.url());
    f.sb.write("maker.agent.md", MAKER);
    f.ok(&["agent", "create", "maker", "--from", "maker.agent.md"])
        .await;
    f.ok(&["agent", "run", "maker", "--detach", "touch it"])
        .await;
    (f, mock)
}

fn walk_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A daemon killed while a run waits on a question: when a daemon starts again, the run is
/// recorded as failed (a line in runs.jsonl, the instance `failed`), not left "blocked" by a
/// process that is gone.
#[tokio::test]
async fn a_run_whose_daemon_died_is_recorded_failed_by_the_next_daemon() {
    let (f, _mock) = maker_asking().await;
    f.wait_pending(1).await;
    let lock = f.sb.home.path().join("daemon/daemon.lock");
    let pid: i32 = std::fs::read_to_string(&lock)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill only signals the daemon this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let deadline = tokio::time::Instant::now() + LIMIT;
    // SAFETY: a signal 0 only asks whether the process is there.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the daemon lived on"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    f.ok(&["daemon", "start"]).await;
    let row = f.wait_instance("maker", |r| r["state"] == "failed").await;
    assert_eq!(row["state"], "failed", "{row}");
    let runs = f.runs("maker");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "failure");
}
