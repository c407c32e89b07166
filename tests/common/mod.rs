//! Shared harness for end-to-end tests: the real `ouro` binary against the mock Messages API.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use ouro::mock::{MockServer, Scenario};
use serde_json::Value;

pub const API_KEY: &str = "sk-ant-test-0123456789abcdef";

/// A scratch project directory and a private OURO_HOME, so tests never touch the real home.
pub struct Sandbox {
    pub home: tempfile::TempDir,
    pub project: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let project = tempfile::tempdir().unwrap();
        Sandbox {
            home: tempfile::tempdir().unwrap(),
            project,
        }
    }

    /// The project root as ouro sees it (canonical, so paths in scenarios match).
    pub fn root(&self) -> PathBuf {
        self.project.path().canonicalize().unwrap()
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn command(&self, url: &str, args: &[&str]) -> tokio::process::Command {
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

    pub async fn run(&self, url: &str, args: &[&str]) -> Run {
        let output = self.command(url, args).output().await.unwrap();
        Run::from(output)
    }

    /// Run with `input` on stdin (closed afterwards).
    pub async fn run_with_stdin(&self, url: &str, args: &[&str], input: &[u8]) -> Run {
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
    pub async fn wait_for_transcript(&self, needle: &str) {
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
    pub fn transcripts(&self) -> Vec<PathBuf> {
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

pub struct Run {
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
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
            .collect()
    }

    pub fn result(&self) -> Value {
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

    pub fn of_type(&self, kind: &str, subtype: Option<&str>) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == kind && subtype.is_none_or(|s| e["subtype"] == s))
            .collect()
    }

    /// All tool_result blocks the stream-json output showed.
    pub fn tool_results(&self) -> Vec<Value> {
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

    pub fn debug(&self) -> String {
        format!(
            "status {:?}\nstdout:\n{}\nstderr:\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

pub async fn server(json: Value) -> MockServer {
    let scenario = Scenario::from_json(&json.to_string()).expect("test scenario is valid");
    MockServer::start(scenario).await.unwrap()
}

/// The JSON bodies of the successful `/v1/messages` requests the mock received.
pub fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/v1/messages"))
        .map(|r| r.body)
        .collect()
}

pub fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
