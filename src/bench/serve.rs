//! `--serve`: `ouro serve` as a GUI drives it, over HTTP against the mock API: the time from
//! sending a message to its first `chat:delta`, turns per second with 1, 10 and 50 sessions at
//! once, and the server's own memory (its brains are processes of their own): at its peak,
//! after 1,000 turns over 200 sessions, and while 20 clients that never read follow sessions
//! streaming 2 MB answers. The last two are bounded, and printed beside their limits.

use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::Serialize;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::BenchError;
use super::fixture::WorkDir;
use super::measure::{Spread, ms, status_mb};
use super::run::API_KEY;
use crate::mock::{MockServer, Scenario};

/// Sessions at once, and turns each runs, per concurrency figure.
const CONCURRENCY: [usize; 3] = [1, 10, 50];
const TURNS_EACH: usize = 2;
/// The load run: sessions, turns each, and how many sessions run a turn at once.
const LOAD_SESSIONS: usize = 200;
const LOAD_TURNS_EACH: usize = 5;
const LOAD_AT_ONCE: usize = 50;
/// Clients that follow a session's events and never read a byte, each session's answer
/// this long, in deltas of about a KiB.
const SLOW_CLIENTS: usize = 20;
const BIG_ANSWER: usize = 2_000_000;
/// Turns per second with 50 sessions at once: 3× what a brain process per turn gave on the
/// 2-core VM the figures were first taken on (104–115).
pub(crate) const TURNS_50_GOAL: f64 = 330.0;
/// What the server may hold after the load run, and with the clients that never read.
pub(crate) const LOAD_RSS_LIMIT_MB: f64 = 96.0;
pub(crate) const SLOW_RSS_LIMIT_MB: f64 = 96.0;

#[derive(Debug, Clone, Serialize)]
pub struct ServeCost {
    pub(crate) first_delta_ms: Spread,
    /// (sessions at once, turns per second).
    pub(crate) turns_per_sec: Vec<(usize, f64)>,
    pub peak_rss_mb: f64,
    /// The server's RSS after [`LOAD_SESSIONS`] × [`LOAD_TURNS_EACH`] turns.
    pub(crate) load_rss_mb: f64,
    /// Its RSS with [`SLOW_CLIENTS`] clients that never read, each following a session that
    /// streamed a [`BIG_ANSWER`]-byte answer; and once they have gone.
    pub(crate) slow_rss_mb: f64,
    pub(crate) slow_gone_rss_mb: f64,
}

struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Client {
    fn post(&self, path: &str, body: serde_json::Value) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
    }

    async fn session(&self, root: &std::path::Path) -> Result<String, BenchError> {
        let body = json!({"projectRoot": root, "persona": null, "mode": "direct"});
        let v: serde_json::Value = self
            .post("/api/harness/session/create", body)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(failed)?
            .json()
            .await
            .map_err(failed)?;
        v["session"]["id"]
            .as_str()
            .map(String::from)
            .ok_or_else(|| BenchError::Failed(format!("the server made no session: {v}")))
    }

    async fn sessions(&self, root: &std::path::Path, n: usize) -> Result<Vec<String>, BenchError> {
        let mut ids = Vec::with_capacity(n);
        for _ in 0..n {
            ids.push(self.session(root).await?);
        }
        Ok(ids)
    }

    /// A client that asks for a session's events and then never reads: its requests go out
    /// on a bare socket, which is held until it is dropped.
    async fn never_reading(&self, session: &str) -> Result<tokio::net::TcpStream, BenchError> {
        use tokio::io::AsyncWriteExt;
        let addr = self.base.trim_start_matches("http://");
        let mut socket = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| BenchError::io("could not connect to ouro serve", e))?;
        let request = format!(
            "GET /api/harness/session/{session}/events HTTP/1.1\r\nHost: {addr}\r\n\
             Authorization: Bearer {}\r\nAccept: text/event-stream\r\n\r\n",
            self.token
        );
        socket
            .write_all(request.as_bytes())
            .await
            .map_err(|e| BenchError::io("could not ask ouro serve for events", e))?;
        Ok(socket)
    }

    /// One turn: the time to its first `chat:delta`, once it has ended.
    async fn turn(&self, session: &str) -> Result<Duration, BenchError> {
        let started = Instant::now();
        let mut response = self
            .post(
                "/api/harness/turn",
                json!({"sessionId": session, "message": "hello"}),
            )
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(failed)?;
        let mut first = None;
        let mut seen = String::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if first.is_none() && seen.contains("event: chat:delta") {
                first = Some(started.elapsed());
            }
        }
        if !seen.contains("event: process:exit") || seen.contains("event: session:error") {
            return Err(BenchError::Failed(format!(
                "a served turn did not run as scripted: {}",
                crate::text::prefix_chars(&seen, 600).0
            )));
        }
        first.ok_or_else(|| BenchError::Failed("a served turn streamed no text".into()))
    }
}

fn failed(e: reqwest::Error) -> BenchError {
    BenchError::Failed(format!("a request to ouro serve failed: {e}"))
}

pub(crate) async fn measure(runs: usize) -> Result<ServeCost, BenchError> {
    let total =
        runs + 1 + CONCURRENCY.iter().sum::<usize>() * TURNS_EACH + LOAD_SESSIONS * LOAD_TURNS_EACH;
    let big = "x".repeat(BIG_ANSWER);
    let turns: Vec<_> = (0..total)
        .map(|_| json!({"content": [{"type": "text", "text": "Hello from the mock."}]}))
        .chain((0..SLOW_CLIENTS).map(|_| {
            json!({"delta_chunks": BIG_ANSWER / 1024, "content": [{"type": "text", "text": big}]})
        }))
        .collect();
    let scenario = Scenario::from_json(&json!({ "turns": turns }).to_string())
        .map_err(|e| BenchError::Failed(format!("the serve scenario is invalid: {e}")))?;
    let api = MockServer::start(scenario)
        .await
        .map_err(|e| BenchError::io("could not start the mock API", e))?;
    let dir =
        WorkDir::new("serve").map_err(|e| BenchError::io("could not create a work dir", e))?;
    let (home, project) = (dir.path().join("home"), dir.path().join("project"));
    for d in [&home, &project] {
        std::fs::create_dir_all(d).map_err(|e| BenchError::io("could not create a work dir", e))?;
    }
    let exe = std::env::current_exe()
        .map_err(|e| BenchError::io("could not find the ouro executable", e))?;
    let mut server = tokio::process::Command::new(exe)
        .args(["serve", "--port", "0"])
        .current_dir(&project)
        .env("OURO_HOME", &home)
        .env("ANTHROPIC_BASE_URL", api.url())
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env_remove("OURO_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| BenchError::io("could not start `ouro serve`", e))?;
    let stdout = server
        .stdout
        .take()
        .ok_or_else(|| BenchError::Failed("`ouro serve` has no stdout".into()))?;
    let mut lines = BufReader::new(stdout).lines();
    let url = loop {
        match lines.next_line().await {
            Ok(Some(line)) => {
                if let Some(url) = line.strip_prefix("ouro serve: ") {
                    break url.to_string();
                }
            }
            _ => return Err(BenchError::Failed("`ouro serve` did not start".into())),
        }
    };
    let (base, token) = url
        .split_once("/?token=")
        .ok_or_else(|| BenchError::Failed(format!("`ouro serve` printed {url}")))?;
    crate::api::client::install_crypto();
    let client = Client {
        http: reqwest::Client::new(),
        base: base.to_string(),
        token: token.to_string(),
    };
    let root = project
        .canonicalize()
        .map_err(|e| BenchError::io("could not resolve the project", e))?;

    let session = client.session(&root).await?;
    client.turn(&session).await?;
    let mut first = Vec::with_capacity(runs);
    for _ in 0..runs {
        first.push(ms(client.turn(&session).await?));
    }
    let mut turns_per_sec = Vec::new();
    for sessions in CONCURRENCY {
        let ids = client.sessions(&root, sessions).await?;
        let started = Instant::now();
        let all = ids.iter().map(|id| {
            let client = &client;
            async move {
                for _ in 0..TURNS_EACH {
                    client.turn(id).await?;
                }
                Ok::<(), BenchError>(())
            }
        });
        for done in futures::future::join_all(all).await {
            done?;
        }
        let rate = (sessions * TURNS_EACH) as f64 / started.elapsed().as_secs_f64();
        turns_per_sec.push((sessions, rate));
    }
    let rss = |field| server.id().map_or(0.0, |pid| status_mb(pid, field));
    let ids = client.sessions(&root, LOAD_SESSIONS).await?;
    let load = ids.iter().map(|id| {
        let client = &client;
        async move {
            for _ in 0..LOAD_TURNS_EACH {
                client.turn(id).await?;
            }
            Ok::<(), BenchError>(())
        }
    });
    let mut load = futures::stream::iter(load).buffer_unordered(LOAD_AT_ONCE);
    while let Some(done) = load.next().await {
        done?;
    }
    drop(load);
    let load_rss_mb = rss("VmRSS");

    let ids = client.sessions(&root, SLOW_CLIENTS).await?;
    let mut slow = Vec::with_capacity(SLOW_CLIENTS);
    for id in &ids {
        slow.push(client.never_reading(id).await?);
    }
    for done in futures::future::join_all(ids.iter().map(|id| client.turn(id))).await {
        done?;
    }
    // What they hold, not the turns' own passing peak (which `peak_rss_mb` shows).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let slow_rss_mb = rss("VmRSS");
    drop(slow);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let slow_gone_rss_mb = rss("VmRSS");
    let peak_rss_mb = rss("VmHWM");
    // SAFETY: kill only sends a signal to our own child.
    if let Some(pid) = server.id().and_then(|p| i32::try_from(p).ok()) {
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let _ = tokio::time::timeout(Duration::from_secs(30), server.wait()).await;
    api.shutdown().await;
    Ok(ServeCost {
        first_delta_ms: Spread::of(&first)
            .ok_or_else(|| BenchError::Failed("no served turn was timed".into()))?,
        turns_per_sec,
        peak_rss_mb,
        load_rss_mb,
        slow_rss_mb,
        slow_gone_rss_mb,
    })
}
