//! A headless `-p` process: stream-json in on stdin, stream-json out on stdout. Turns are
//! delimited by `result` events, never by the process exiting, so one process serves many turns.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot};

use super::process::{self, ExitReporter, OnExit, ProcessCore};
use crate::brain::output::{CostTracker, TurnAccumulator, TurnOutcome};
use crate::brain::terminal::Subscribers;
use crate::brain::{BrainError, ExitInfo};
use crate::stream_json::read::{Line, parse_line};
use crate::stream_json::wire;
use crate::sys::process::{GroupChild, SpawnError};
use crate::sys::sync::lock;

/// How long an exit report waits for stdout to be read to its end, so that every line the
/// process printed reaches the turn and the subscribers before its exit does.
const DRAIN_STDOUT: Duration = Duration::from_secs(2);

/// How much of an unreadable line goes into the log.
const LOGGED_LINE: usize = 200;

/// The last lines of stderr kept for a report of why a process ended.
const STDERR_TAIL: usize = 8;

pub(crate) struct DispatchProc {
    pub core: ProcessCore,
    /// The flags it was started with, `--resume` left out: a turn that needs other flags
    /// (another tool set, permission mode, system prompt) needs another process.
    pub(super) key: Vec<String>,
    /// The brain's session this process is on: the one it resumed, then the one its last turn
    /// named.
    conversation: Mutex<Option<String>>,
    /// Turn results read so far, so a watchdog can tell whether a turn ended.
    pub(super) results: AtomicU64,
    /// A served turn ran to its result: the next one may use this process. A turn given up
    /// half way may leave a question unanswered inside it, so it is not reused.
    pub(super) reusable: AtomicBool,
    /// The length of its conversation's transcript when its last turn ended: another length
    /// at the next turn means another process continued the conversation meanwhile.
    pub(super) transcript_len: Mutex<Option<u64>>,
    stdin: tokio::sync::Mutex<Option<pipe::Sender>>,
    pub(super) events: tokio::sync::Mutex<Events>,
    costs: Mutex<CostTracker>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_done: tokio::sync::Mutex<Option<oneshot::Receiver<()>>>,
    /// A served turn was asked to stop.
    pub(super) interrupted: AtomicBool,
    /// This turn's prompt is written (`.0`), and an interrupt asked before it was waits for
    /// it (`.1`): a CLI between turns takes an interrupt for nothing, and then answers the
    /// prompt that follows in full.
    pub(super) prompted: Mutex<(bool, bool)>,
}

pub(super) struct Events {
    pub(super) rx: mpsc::UnboundedReceiver<Line>,
    /// Prompts written whose result has not been read: a turn whose caller gave up leaves its
    /// result behind, and the next turn must not take it for its own.
    unanswered: usize,
}

/// How a turn ended.
pub(crate) enum TurnEnd {
    Done(TurnOutcome),
    Died {
        exit: ExitInfo,
        session_id: Option<String>,
    },
}

pub(crate) struct Launch<'a> {
    pub program: &'a OsString,
    /// The binary's short name, for logs.
    pub name: &'static str,
    /// What to do when the program cannot be started.
    pub(crate) spawn_hint: &'static str,
    pub args: Vec<String>,
    pub cwd: &'a Path,
    /// The whole environment of the process.
    pub env: &'a [(OsString, OsString)],
}

/// One user turn as a stdin line (without the newline).
pub fn user_message(prompt: &str) -> String {
    serde_json::to_string(&wire::Line::User(wire::UserLine::prompt(prompt))).unwrap_or_default()
}

impl Launch<'_> {
    /// The process as ouro's one process handle starts it: through the keeper, so it ends
    /// with the ouro process that owns it however that one ends.
    pub(super) fn process(&self) -> crate::sys::process::Launch {
        let mut launch = crate::sys::process::Launch::new(self.program, self.cwd);
        launch.args = self.args.iter().map(OsString::from).collect();
        launch.env = self.env.to_vec();
        launch
    }

    pub(super) fn spawn_error(&self, error: SpawnError) -> BrainError {
        let source = match error {
            SpawnError::Io(e) => e,
            SpawnError::Sandbox(why) => std::io::Error::other(why),
        };
        BrainError::Spawn {
            program: self.program.to_string_lossy().into_owned(),
            source,
            hint: self.spawn_hint,
        }
    }
}

/// Starts a headless process; `key` is its flags without `--resume`, `resume` the session it
/// resumes.
pub(crate) async fn spawn(
    launch: Launch<'_>,
    key: Vec<String>,
    resume: Option<&str>,
    subscribers: Arc<Subscribers>,
    on_exit: OnExit,
) -> Result<DispatchProc, BrainError> {
    let mut process = launch.process();
    process.stdin = true;
    let spawned = process.spawn().await.map_err(|e| launch.spawn_error(e))?;
    let (Some(pid), Some(stdin)) = (spawned.process.pid(), spawned.stdin) else {
        return Err(BrainError::Io {
            action: "connect to",
            source: std::io::Error::other("the child process has no pid or stdin"),
        });
    };
    let (stdout, stderr, child) = (spawned.stdout, spawned.stderr, spawned.process);
    let name = launch.name;
    tracing::debug!(pid, program = name, args = ?launch.args, "started a dispatch process");
    let (core, reporter) = process::track(pid, on_exit);
    let (tx, rx) = mpsc::unbounded_channel();
    let (done_tx, done_rx) = oneshot::channel();
    tokio::spawn(read_stdout(pid, name, stdout, tx, subscribers, done_tx));
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let tail_writer = tail.clone();
    let (stderr_tx, stderr_rx) = oneshot::channel();
    tokio::spawn(async move {
        log_stderr(pid, name, stderr, tail_writer).await;
        let _ = stderr_tx.send(());
    });
    tokio::spawn(watch_exit(child, name, done_rx, reporter));
    Ok(DispatchProc {
        core,
        key,
        conversation: Mutex::new(resume.map(String::from)),
        results: AtomicU64::new(0),
        reusable: AtomicBool::new(false),
        transcript_len: Mutex::new(None),
        stdin: tokio::sync::Mutex::new(Some(stdin)),
        events: tokio::sync::Mutex::new(Events { rx, unanswered: 0 }),
        costs: Mutex::new(CostTracker::default()),
        stderr: tail,
        stderr_done: tokio::sync::Mutex::new(Some(stderr_rx)),
        interrupted: AtomicBool::new(false),
        prompted: Mutex::new((false, false)),
    })
}

/// The line buffer a brain's reader keeps between lines at most.
const KEEP_LINE_BUFFER: usize = 64 << 10;

async fn read_stdout(
    pid: u32,
    name: &'static str,
    stdout: pipe::Receiver,
    tx: mpsc::UnboundedSender<Line>,
    subscribers: Arc<Subscribers>,
    done: oneshot::Sender<()>,
) {
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) => break,
            Ok(_) => {
                subscribers.data(&buf);
                let line = String::from_utf8_lossy(&buf);
                match parse_line(&line) {
                    Ok(Some(event)) => {
                        // No receiver only while the process is being dropped.
                        let _ = tx.send(event);
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(
                        pid,
                        program = name,
                        error = %e,
                        line = %crate::text::prefix_chars(line.trim_end(), LOGGED_LINE).0,
                        "skipping a line of brain output that is not stream-json"
                    ),
                }
            }
            Err(e) => {
                tracing::warn!(pid, program = name, error = %e, "stopped reading brain output");
                break;
            }
        }
        // A warm process lives on between turns: one long line (a big answer) must not
        // leave its size behind in every idle brain.
        if buf.capacity() > KEEP_LINE_BUFFER {
            buf = Vec::new();
        }
    }
    let _ = done.send(());
}

async fn log_stderr(
    pid: u32,
    name: &'static str,
    stderr: pipe::Receiver,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut lines = BufReader::new(stderr).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => {
                tracing::info!(pid, program = name, stderr = %line, "a brain wrote to stderr");
                let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(crate::text::prefix_chars(&line, LOGGED_LINE).0.to_string());
            }
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(pid, program = name, error = %e, "stopped reading brain stderr");
                break;
            }
        }
    }
}

async fn watch_exit(
    mut child: GroupChild,
    name: &'static str,
    stdout_done: oneshot::Receiver<()>,
    reporter: ExitReporter,
) {
    let info = match child.wait().await {
        Ok(status) => status.into(),
        Err(e) => {
            tracing::warn!(program = name, error = %e, "could not wait for a brain process");
            ExitInfo {
                code: None,
                signal: None,
            }
        }
    };
    // A grandchild holding stdout open must not delay the report forever.
    let _ = tokio::time::timeout(DRAIN_STDOUT, stdout_done).await;
    reporter.report(info);
}

impl DispatchProc {
    /// A turn begins on this process: no prompt of it is written yet, no interrupt asked.
    pub(super) fn begin_turn(&self) {
        self.interrupted.store(false, Ordering::SeqCst);
        *lock(&self.prompted) = (false, false);
    }

    /// Writes raw bytes to the process's stdin.
    pub(super) async fn write(&self, data: &[u8]) -> Result<(), BrainError> {
        let mut stdin = self.stdin.lock().await;
        let pipe = stdin
            .as_mut()
            .ok_or(BrainError::NotRunning { verb: "write" })?;
        let written = async {
            pipe.write_all(data).await?;
            pipe.flush().await
        }
        .await;
        written.map_err(|source| BrainError::Io {
            action: "write to",
            source,
        })
    }

    /// Ends the process's input: a headless CLI exits once its last turn is done.
    pub(super) async fn close_stdin(&self) {
        self.stdin.lock().await.take();
    }

    /// What the process last wrote on stderr, one line after another, once its stderr is
    /// read to the end (or a moment has passed).
    pub(super) async fn stderr_tail(&self) -> String {
        if let Some(done) = self.stderr_done.lock().await.take() {
            let _ = tokio::time::timeout(DRAIN_STDOUT, done).await;
        }
        let tail = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        tail.iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// Sends one prompt and reads events until that turn's result, or until the process ends.
    /// `on_line` sees each event of this turn as it arrives (never those of a turn whose
    /// caller gave up).
    pub(super) async fn exchange(
        &self,
        prompt: &str,
        on_line: &mut (dyn FnMut(&Line) + Send),
    ) -> Result<TurnEnd, BrainError> {
        let mut events = self.events.lock().await;
        let mut stale = 0;
        while let Ok(event) = events.rx.try_recv() {
            if matches!(event, Line::Result(_)) {
                events.unanswered = events.unanswered.saturating_sub(1);
            }
        }
        std::mem::swap(&mut stale, &mut events.unanswered);

        let mut line = user_message(prompt);
        line.push('\n');
        if let Err(e) = self.write(line.as_bytes()).await {
            // A broken pipe means the process is ending; report that rather than the pipe.
            return match tokio::time::timeout(DRAIN_STDOUT, self.core.wait()).await {
                Ok(exit) => Ok(TurnEnd::Died {
                    exit,
                    session_id: None,
                }),
                Err(_) => Err(e),
            };
        }
        events.unanswered = stale + 1;
        let waiting = {
            let mut prompted = lock(&self.prompted);
            prompted.0 = true;
            std::mem::take(&mut prompted.1)
        };
        if waiting {
            self.send_interrupt().await?;
        }

        let mut acc = TurnAccumulator::default();
        loop {
            let event = tokio::select! {
                biased;
                event = events.rx.recv() => event,
                _ = self.core.wait() => events.rx.try_recv().ok(),
            };
            let Some(event) = event else {
                let exit = self.core.wait().await;
                return Ok(TurnEnd::Died {
                    exit,
                    session_id: acc.session_id().map(String::from),
                });
            };
            if stale == 0 {
                on_line(&event);
            }
            if !acc.feed(event) {
                continue;
            }
            events.unanswered -= 1;
            self.results.fetch_add(1, Ordering::SeqCst);
            let finished = std::mem::take(&mut acc);
            if stale > 0 {
                stale -= 1;
                continue;
            }
            if let Some(outcome) = finished.finish() {
                if let Some(id) = &outcome.session_id {
                    *self
                        .conversation
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(id.clone());
                }
                return Ok(TurnEnd::Done(outcome));
            }
        }
    }

    /// The brain's session this process is on, when known.
    pub(super) fn conversation(&self) -> Option<String> {
        self.conversation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// This turn's cost from the CLI's running total, or `priced` if it reported none.
    pub(super) fn turn_cost(&self, total: Option<f64>, priced: impl FnOnce() -> f64) -> f64 {
        self.costs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .turn_cost(total, priced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_message_is_one_json_line() {
        let line = user_message("two\nlines \"quoted\"");
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["type"], "user");
        assert_eq!(v["message"]["role"], "user");
        assert_eq!(v["message"]["content"][0]["text"], "two\nlines \"quoted\"");
    }
}
