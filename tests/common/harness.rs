//! The real `ouro` binary against the mock Messages API: scratch projects and homes, runs,
//! and what the mock received.

use std::path::{Path, PathBuf};
use std::process::Output;

use ouro::mock::{MockServer, Scenario};
use serde_json::Value;

pub(crate) const API_KEY: &str = "sk-ant-test-0123456789abcdef";

/// Print mode with stream-json in and out, as the Agent SDKs start it.
pub(crate) const STREAM_JSON_IO: [&str; 6] = [
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

/// One user prompt as a stream-json input line, newline included.
pub(crate) fn user_line(text: &str) -> String {
    let line = serde_json::json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}});
    format!("{line}\n")
}

/// A scratch project directory and a private OURO_HOME, so tests never touch the real home.
pub(crate) struct Sandbox {
    pub home: tempfile::TempDir,
    pub project: tempfile::TempDir,
}

impl Sandbox {
    pub(crate) fn new() -> Sandbox {
        let project = tempfile::tempdir().unwrap();
        Sandbox {
            home: tempfile::tempdir().unwrap(),
            project,
        }
    }

    /// The project root as ouro sees it (canonical, so paths in scenarios match).
    pub(crate) fn root(&self) -> PathBuf {
        self.project.path().canonicalize().unwrap()
    }

    pub(crate) fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    pub(crate) fn command(&self, url: &str, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_ouro"));
        cmd.args(args)
            .current_dir(self.root())
            .env("ANTHROPIC_BASE_URL", url)
            .env("ANTHROPIC_API_KEY", API_KEY)
            .env("OURO_HOME", self.home.path())
            .env("HOME", self.home.path())
            .env_remove("ANTHROPIC_MODEL")
            .env_remove("OURO_LOG")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    pub(crate) async fn run(&self, url: &str, args: &[&str]) -> Run {
        let output = self.command(url, args).output().await.unwrap();
        Run::from(output)
    }

    /// [`Sandbox::run`], with the first request waiting for the MCP servers as long as a busy
    /// machine takes to start them (ouro's default wait is a second): for tests about what the
    /// servers say or do, not how soon they come.
    pub(crate) async fn run_waiting_for_mcp(&self, url: &str, args: &[&str]) -> Run {
        let mut cmd = self.command(url, args);
        cmd.env("OURO_MCP_STARTUP_WAIT_MS", "20000");
        Run::from(cmd.output().await.unwrap())
    }

    /// Run with `input` on stdin (closed afterwards).
    pub(crate) async fn run_with_stdin(&self, url: &str, args: &[&str], input: &[u8]) -> Run {
        use tokio::io::AsyncWriteExt;
        let mut cmd = self.command(url, args);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input).await.unwrap();
        drop(stdin);
        Run::from(child.wait_with_output().await.unwrap())
    }

    /// Wait (up to 30 s) until this project's transcript contains `needle`.
    pub(crate) async fn wait_for_transcript(&self, needle: &str) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        while !self.transcripts().first().is_some_and(|t| {
            std::fs::read_to_string(t)
                .unwrap_or_default()
                .contains(needle)
        }) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the transcript never showed {needle:?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Transcript files of this project.
    pub(crate) fn transcripts(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let projects = self.home.path().join("projects");
        if let Ok(dirs) = std::fs::read_dir(projects) {
            for d in dirs.flatten() {
                for f in std::fs::read_dir(d.path()).unwrap().flatten() {
                    out.push(f.path());
                }
            }
        }
        out
    }
}

pub(crate) struct Run {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            status: o.status,
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    /// stream-json lines, parsed.
    pub(crate) fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
            .collect()
    }

    pub(crate) fn result(&self) -> Value {
        self.events()
            .into_iter()
            .rev()
            .find(|e| e["type"] == "result")
            .unwrap_or_else(|| {
                panic!(
                    "no result event.\nstdout:\n{}\nstderr:\n{}",
                    self.stdout, self.stderr
                )
            })
    }

    pub(crate) fn of_type(&self, kind: &str, subtype: Option<&str>) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == kind && subtype.is_none_or(|s| e["subtype"] == s))
            .collect()
    }

    /// All tool_result blocks the stream-json output showed.
    pub(crate) fn tool_results(&self) -> Vec<Value> {
        self.of_type("user", None)
            .into_iter()
            .flat_map(|e| {
                e["message"]["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|b| b["type"] == "tool_result")
            .collect()
    }

    pub(crate) fn debug(&self) -> String {
        format!(
            "status {:?}\nstdout:\n{}\nstderr:\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// An HTTP client for tests (rustls needs its crypto provider first).
pub(crate) fn http_client() -> reqwest::Client {
    ouro::api::client::install_crypto();
    reqwest::Client::new()
}

pub(crate) async fn server(json: Value) -> MockServer {
    let scenario = Scenario::from_json(&json.to_string()).expect("test scenario is valid");
    MockServer::start(scenario).await.unwrap()
}

/// The JSON bodies of the successful `/v1/messages` requests the mock received.
pub(crate) fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/v1/messages"))
        .map(|r| r.body)
        .collect()
}

pub(crate) fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The session id a run's `result` reports.
pub(crate) fn session_id(run: &Run) -> String {
    run.result()["session_id"].as_str().unwrap().to_string()
}

/// A running `ouro` whose output is collected as it comes, so a test can wait for the line
/// that proves the state it wants to act on (and never for a guessed amount of time).
pub(crate) struct Watched {
    child: tokio::process::Child,
    stdout: std::sync::Arc<std::sync::Mutex<String>>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    pumps: Vec<tokio::task::JoinHandle<()>>,
}

/// How long a test waits for a state before it fails.
const WATCH_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

impl Watched {
    /// Spawns `command` with its stdout and stderr collected.
    pub(crate) fn spawn(mut command: tokio::process::Command) -> Watched {
        command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stdout = std::sync::Arc::default();
        let stderr = std::sync::Arc::default();
        let pumps = vec![
            pump(child.stdout.take().unwrap(), std::sync::Arc::clone(&stdout)),
            pump(child.stderr.take().unwrap(), std::sync::Arc::clone(&stderr)),
        ];
        Watched {
            child,
            stdout,
            stderr,
            pumps,
        }
    }

    pub(crate) fn pid(&self) -> i32 {
        self.child.id().unwrap() as i32
    }

    /// The process's stdin, when the command was given a piped one.
    pub(crate) fn take_stdin(&mut self) -> tokio::process::ChildStdin {
        self.child.stdin.take().unwrap()
    }

    /// Waits until stdout holds `needle`.
    pub(crate) async fn wait_stdout(&self, needle: &str) {
        wait_for_text(&self.stdout, needle, "stdout", &self.stderr).await;
    }

    /// Waits until stderr holds `needle`.
    pub(crate) async fn wait_stderr(&self, needle: &str) {
        wait_for_text(&self.stderr, needle, "stderr", &self.stdout).await;
    }

    /// Waits until a process running `program` descends from this one (a tool's command).
    pub(crate) async fn wait_for_descendant(&self, program: &str) {
        let deadline = tokio::time::Instant::now() + WATCH_LIMIT;
        while !descendants(self.pid()).iter().any(|p| p == program) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no `{program}` process was started"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// What the process printed on stderr so far.
    pub(crate) fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// What the process printed on stdout so far.
    pub(crate) fn stdout_text(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    pub(crate) fn signal(&self, signal: i32) {
        // SAFETY: kill only sends a signal to our own child.
        unsafe { libc::kill(self.pid(), signal) };
    }

    pub(crate) fn interrupt(&self) {
        // SAFETY: kill only sends a signal to our own child.
        unsafe { libc::kill(self.pid(), libc::SIGINT) };
    }

    /// Waits (at most `limit`) for the process to end; its whole output.
    pub(crate) async fn finish(mut self, limit: std::time::Duration) -> Run {
        let status = tokio::time::timeout(limit, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("ouro did not exit within {limit:?}"))
            .unwrap();
        for pump in self.pumps.drain(..) {
            pump.await.unwrap();
        }
        let text = |s: &std::sync::Mutex<String>| s.lock().unwrap().clone();
        Run {
            status,
            stdout: text(&self.stdout),
            stderr: text(&self.stderr),
        }
    }
}

fn pump(
    mut from: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    into: std::sync::Arc<std::sync::Mutex<String>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf).await {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
}

async fn wait_for_text(
    text: &std::sync::Mutex<String>,
    needle: &str,
    name: &str,
    other: &std::sync::Mutex<String>,
) {
    let deadline = tokio::time::Instant::now() + WATCH_LIMIT;
    while !text.lock().unwrap().contains(needle) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} never showed {needle:?}.\n{name}:\n{}\nother stream:\n{}",
            text.lock().unwrap(),
            other.lock().unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The program names of every process below `pid`.
fn descendants(pid: i32) -> Vec<String> {
    descendant_processes(pid)
        .into_iter()
        .map(|(_, comm)| comm)
        .collect()
}

/// The pids of every live process below `pid`.
pub(crate) fn descendant_pids(pid: i32) -> Vec<i32> {
    descendant_processes(pid)
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| !gone(*id))
        .collect()
}

/// Every process below `pid`: its pid and program name.
fn descendant_processes(pid: i32) -> Vec<(i32, String)> {
    let mut parents: Vec<(i32, i32, String)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(id) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let ppid = stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        parents.push((id, ppid, comm));
    }
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for (id, ppid, comm) in &parents {
            if *ppid == parent {
                frontier.push(*id);
                found.push((*id, comm.clone()));
            }
        }
    }
    found
}

/// The text of the last user message of a request body (the prompt, or tool results).
pub(crate) fn last_user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("")
}

/// Every tool_result block of a request body.
pub(crate) fn request_tool_results(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .collect()
}

/// A tmpfs of a few hundred KB mounted on a directory, for tests of a full disk; unmounted
/// when dropped. Mounting needs root (CI has it): `None` otherwise.
pub(crate) struct SmallDisk(PathBuf);

impl SmallDisk {
    pub(crate) fn mount(dir: &Path, size: &str) -> Option<SmallDisk> {
        std::fs::create_dir_all(dir).ok()?;
        std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
            .then(|| SmallDisk(dir.to_path_buf()))
    }

    /// Bytes still free on it.
    pub(crate) fn free(&self) -> usize {
        let out = std::process::Command::new("df")
            .args(["--output=avail", "-B1"])
            .arg(&self.0)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Whether process `pid` is gone (or only a zombie waiting to be reaped).
pub(crate) fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

/// Waits up to five seconds for process `pid` to be gone; fails the test if it is not.
pub(crate) fn wait_gone(pid: i32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !gone(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "process {pid} outlived the session"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Every file under `root` (but `.git`), relative, with its bytes.
pub(crate) fn tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_path_buf();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

pub(crate) fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        let path = to.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}
