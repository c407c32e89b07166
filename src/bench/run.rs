//! One measured run: the real engine, built as print mode builds it, against the mock API over
//! HTTP + SSE, timed from its event stream as the events arrive.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use super::BenchError;
use super::fixture::{Fixture, WorkDir};
use super::host::MockHost;
use super::scenario::{self, BASH_ALLOW_RULES, FINAL_TEXT, Plan};
use crate::api::types::{ContentBlock, Usage};
use crate::app::{self, Endpoint, Options};
use crate::event::PhaseTimings;
use crate::event::{Event, ResultKind, RunResult};
use crate::exec::NeverAsk;
use crate::permissions::{CliPermissions, PermissionMode};

pub const PROMPT: &str = "Work through the benchmark project.";
/// The mock checks that a key is sent, not which.
pub const API_KEY: &str = "sk-ant-bench-0000000000000000";

/// What every measured session gets: edits in the project and the scenario's read-only shell
/// commands are allowed, and a failed request is not retried (it would distort timings).
pub fn session_options() -> Options {
    Options {
        max_retries: Some(0),
        permissions: CliPermissions {
            allowed: BASH_ALLOW_RULES.iter().map(|r| r.to_string()).collect(),
            disallowed: Vec::new(),
            ask: Vec::new(),
            mode: Some(PermissionMode::AcceptEdits),
            add_dirs: Vec::new(),
        },
        ..Options::default()
    }
}

/// [`session_options`] as `ouro -p` flags, for the measured start-up of the real binary.
pub fn session_flags() -> Vec<String> {
    let mut flags: Vec<String> = ["--permission-mode", "acceptEdits", "--max-retries", "0"]
        .map(String::from)
        .to_vec();
    for rule in BASH_ALLOW_RULES {
        flags.extend(["--allowedTools".to_string(), rule.to_string()]);
    }
    flags
}

/// One finished tool call.
#[derive(Debug, Clone)]
pub struct ToolSample {
    pub name: String,
    pub timings: PhaseTimings,
    /// Submission to result, queueing included.
    pub elapsed: Duration,
}

#[derive(Debug, Clone)]
pub struct RunSample {
    /// `Engine::run`, first byte of work to the final result.
    pub wall: Duration,
    pub calls: usize,
    pub requests: usize,
    /// For each response with tool calls: its `MessageDone` to the next `RequestStarted`.
    pub(crate) client_turns: Vec<Duration>,
    /// `RequestStarted` to `MessageDone`: the mock answering plus HTTP and SSE parsing.
    pub responses: Vec<Duration>,
    pub tools: Vec<ToolSample>,
    /// What the session's requests were billed, as the mock bills them (prompt caching too).
    pub usage: Usage,
    pub cost_usd: f64,
    /// The body size of the session's last request.
    pub(crate) last_request_bytes: usize,
}

impl RunSample {
    pub fn calls_per_sec(&self) -> f64 {
        self.calls as f64 / self.wall.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// Generates a fresh tree and scenario (edits change the tree), serves it and runs it once.
pub(crate) async fn run_once(
    host: &MockHost,
    plan: &Plan,
    files: usize,
) -> Result<RunSample, BenchError> {
    run_with(host, plan, files, &session_options()).await
}

/// [`run_once`] with other session options.
pub async fn run_with(
    host: &MockHost,
    plan: &Plan,
    files: usize,
    options: &Options,
) -> Result<RunSample, BenchError> {
    let dir = WorkDir::new("run")
        .map_err(|e| BenchError::io("could not create the fixture directory", e))?;
    let fixture = Fixture::generate(dir.path(), files, plan.seed)
        .map_err(|e| BenchError::io("could not write the fixture tree", e))?;
    let generated = scenario::generate(plan, &fixture);
    let server = host.serve(generated.scenario).await?;
    let outcome = drive(&server.url(), dir.path(), options).await;
    let last_request_bytes = server.body_sizes().last().copied().unwrap_or(0);
    host.stop(server).await;
    let (result, stamps, wall) = outcome?;
    check(&result, &stamps, generated.calls)?;
    let mut sample = sample(stamps, wall);
    sample.usage = result.usage;
    sample.cost_usd = result.cost_usd;
    sample.last_request_bytes = last_request_bytes;
    Ok(sample)
}

enum Stamp {
    Request,
    Done,
    Tool(ToolSample, Option<String>),
    Denied(String),
}

type Stamped = Vec<(Instant, Stamp)>;

async fn drive(
    base_url: &str,
    root: &Path,
    options: &Options,
) -> Result<(RunResult, Stamped, Duration), BenchError> {
    let endpoint = Endpoint::with_key(base_url, API_KEY);
    let session = app::build(options, root, endpoint, Arc::new(NeverAsk))
        .map_err(|e| BenchError::Failed(format!("could not build the session: {e:#}")))?;
    let mut engine = session.engine;
    let collector = tokio::spawn(collect(session.events));
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let result = engine.run(PROMPT, &cancel).await;
    let wall = started.elapsed();
    drop(engine);
    let stamps = collector
        .await
        .map_err(|e| BenchError::Failed(format!("the event collector failed: {e}")))?;
    Ok((result, stamps, wall))
}

/// Stamps each event as it arrives; only what the figures need is kept.
async fn collect(mut events: UnboundedReceiver<Event>) -> Stamped {
    let mut stamps = Vec::new();
    while let Some(event) = events.recv().await {
        let now = Instant::now();
        let stamp = match event {
            Event::RequestStarted { .. } => Stamp::Request,
            Event::MessageDone { .. } => Stamp::Done,
            Event::ToolFinished {
                name,
                result,
                elapsed,
                timings,
                ..
            } => {
                let error = match result {
                    ContentBlock::ToolResult {
                        is_error: true,
                        content,
                        ..
                    } => Some(content.text),
                    _ => None,
                };
                let sample = ToolSample {
                    name,
                    timings,
                    elapsed,
                };
                Stamp::Tool(sample, error)
            }
            Event::PermissionDenied(denial) => {
                Stamp::Denied(format!("{}: {}", denial.tool_name, denial.reason))
            }
            _ => continue,
        };
        stamps.push((now, stamp));
    }
    stamps
}

/// A run whose calls failed measured something else than the scenario; refuse it loudly.
fn check(result: &RunResult, stamps: &Stamped, expected_calls: usize) -> Result<(), BenchError> {
    if result.kind != ResultKind::Success || result.text.as_str() != FINAL_TEXT {
        return Err(BenchError::Invalid(format!(
            "the run ended with {:?}: {}",
            result.kind, result.text
        )));
    }
    for (_, stamp) in stamps {
        match stamp {
            Stamp::Tool(sample, Some(error)) => {
                return Err(BenchError::Invalid(format!(
                    "a {} call failed: {error}",
                    sample.name
                )));
            }
            Stamp::Denied(what) => {
                return Err(BenchError::Invalid(format!("a call was denied: {what}")));
            }
            _ => {}
        }
    }
    let calls = stamps
        .iter()
        .filter(|(_, s)| matches!(s, Stamp::Tool(..)))
        .count();
    if calls != expected_calls {
        return Err(BenchError::Invalid(format!(
            "the scenario has {expected_calls} tool calls but the engine ran {calls}"
        )));
    }
    Ok(())
}

fn sample(stamps: Stamped, wall: Duration) -> RunSample {
    let mut out = RunSample {
        wall,
        calls: 0,
        requests: 0,
        client_turns: Vec::new(),
        responses: Vec::new(),
        tools: Vec::new(),
        usage: Usage::default(),
        cost_usd: 0.0,
        last_request_bytes: 0,
    };
    let mut last_request: Option<Instant> = None;
    let mut last_done: Option<Instant> = None;
    for (at, stamp) in stamps {
        match stamp {
            Stamp::Request => {
                out.requests += 1;
                if let Some(done) = last_done.take() {
                    out.client_turns.push(at - done);
                }
                last_request = Some(at);
            }
            Stamp::Done => {
                if let Some(request) = last_request.take() {
                    out.responses.push(at - request);
                }
                last_done = Some(at);
            }
            Stamp::Tool(tool, _) => {
                out.calls += 1;
                out.tools.push(tool);
            }
            Stamp::Denied(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_time_runs_from_message_done_to_the_next_request() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let tool = |name: &str| {
            Stamp::Tool(
                ToolSample {
                    name: name.into(),
                    timings: PhaseTimings::default(),
                    elapsed: Duration::from_millis(1),
                },
                None,
            )
        };
        let stamps = vec![
            (at(0), Stamp::Request),
            (at(10), tool("Read")),
            (at(12), Stamp::Done),
            (at(13), tool("Grep")),
            (at(15), Stamp::Request),
            (at(40), Stamp::Done),
            (at(47), Stamp::Request),
            (at(50), Stamp::Done),
        ];
        let s = sample(stamps, Duration::from_millis(50));
        assert_eq!(s.requests, 3);
        assert_eq!(s.calls, 2);
        assert_eq!(
            s.client_turns,
            [Duration::from_millis(3), Duration::from_millis(7)]
        );
        assert_eq!(s.responses, [12, 25, 3].map(Duration::from_millis).to_vec());
        assert_eq!(s.calls_per_sec(), 40.0);
    }
}
