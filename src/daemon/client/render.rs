//! `ouro ask` / `ouro act` and `ouro watch`: what the daemon relays, as text on the terminal.
//! A permission question is shown to every one of them; when stdin is a terminal, a line
//! answers it (`y`, `n`, or `a` for always), and the first answer from anyone wins.

use std::collections::VecDeque;
use std::io::Write;

use tokio::sync::mpsc;

use super::{Client, unexpected};
use crate::brain::Verb;
use crate::daemon::frame::{Frame, Header};
use crate::daemon::{DaemonError, Paths};
use crate::ui_event::UiEvent;

/// `ouro ask|act NAME PROMPT`: the answer on stdout (or the brain's stream-json lines with
/// `lines`); the exit code is 0 for an answer, 1 for an error.
pub async fn ask(
    paths: &Paths,
    name: &str,
    verb: Verb,
    prompt: String,
    lines: bool,
) -> Result<i32, DaemonError> {
    let mut client = Client::connect(paths, true).await?;
    client
        .send(Header::Dispatch {
            name: name.to_string(),
            verb,
            prompt,
            lines,
        })
        .await?;
    let mut answers = Answers::new();
    let mut stdout = std::io::stdout();
    loop {
        let frame = tokio::select! {
            frame = client.next() => frame?,
            Some(line) = answers.line() => {
                answers.answer(&client, &line).await?;
                continue;
            }
        };
        match frame.header {
            Header::Queued { reason: said } | Header::Notice { message: said } => {
                eprintln!("ouro: {said}");
            }
            Header::Line => {
                let _ = stdout.write_all(&frame.payload);
                let _ = stdout.flush();
            }
            Header::Event { event, .. } => {
                if let UiEvent::ToolStart { name, input, .. } = &event
                    && std::io::IsTerminal::is_terminal(&std::io::stderr())
                {
                    eprintln!("● {name}({})", summary(input));
                }
            }
            Header::Permission { .. } | Header::PermissionSettled { .. } => {
                answers.show(&frame.header);
            }
            Header::TurnEnd { is_error, text, .. } => {
                if !lines {
                    if is_error {
                        eprintln!("ouro: {text}");
                    } else {
                        let _ = writeln!(stdout, "{text}");
                    }
                }
                return Ok(i32::from(is_error));
            }
            Header::Error { message } => return Err(DaemonError::Remote(message)),
            other => return Err(unexpected(&other)),
        }
    }
}

/// `ouro watch NAME`: everything the clone does, live, until Ctrl-C or the daemon stops.
pub async fn watch(paths: &Paths, name: &str) -> Result<i32, DaemonError> {
    let mut client = Client::connect(paths, true).await?;
    client
        .send(Header::Watch {
            name: name.to_string(),
            replay: false,
            since: None,
        })
        .await?;
    match client.next().await?.header {
        Header::Ok { message } => eprintln!("ouro: {message}"),
        Header::Error { message } => return Err(DaemonError::Remote(message)),
        other => return Err(unexpected(&other)),
    }
    follow(&mut client, name, false).await
}

/// Shows what the daemon relays on `client` (answering questions from the terminal) until
/// Ctrl-C, the daemon going away, or, with `until_result`, an agent run's result: then the
/// exit code is 0 for a run that succeeded, 1 otherwise.
pub(super) async fn follow(
    client: &mut Client,
    name: &str,
    until_result: bool,
) -> Result<i32, DaemonError> {
    let mut answers = Answers::new();
    let mut out = WatchOutput::default();
    loop {
        let frame = tokio::select! {
            frame = client.next() => match frame {
                Ok(frame) => frame,
                Err(DaemonError::Lost) => {
                    out.finish();
                    let again = if until_result { format!("ouro agent logs {name} -f") } else { format!("ouro watch {name}") };
                    eprintln!("ouro: the daemon went away; `{again}` follows again");
                    return Ok(1);
                }
                Err(e) => return Err(e),
            },
            Some(line) = answers.line() => {
                answers.answer(client, &line).await?;
                continue;
            }
            _ = tokio::signal::ctrl_c() => {
                out.finish();
                if until_result {
                    eprintln!("ouro: the agent {name} runs on; `ouro agent logs {name} -f` follows it, `ouro agent stop {name}` stops it");
                }
                return Ok(0);
            }
        };
        match &frame.header {
            Header::Permission { .. } | Header::PermissionSettled { .. } => {
                out.break_line();
                answers.show(&frame.header);
            }
            Header::AgentResult { result, .. } if until_result => {
                out.finish();
                return Ok(show_result(result, out.answered));
            }
            _ => out.show(frame),
        }
    }
}

/// A run's `task:result` as lines on stderr, its summary on stdout: a successful run's
/// summary is its answer, so it is left out when the answer was shown as it came
/// (`answered`); the exit code.
fn show_result(result: &serde_json::Value, answered: bool) -> i32 {
    let field = |key: &str| result.get(key).and_then(|v| v.as_str()).unwrap_or_default();
    let status = field("status");
    let text = field("summary");
    let shown = answered && status == "success";
    if !text.is_empty() && !shown {
        println!("{text}");
    }
    let cost = result
        .get("costUsd")
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0);
    let changed = result.get("changed").and_then(|v| v.as_u64()).unwrap_or(0);
    eprintln!(
        "ouro: run {} ended: {status}, {changed} file(s) changed, ${cost:.4}",
        field("runId")
    );
    if !field("artifact").is_empty() {
        eprintln!("ouro: its changes: {}", field("artifact"));
    }
    i32::from(status != "success")
}

/// What a watcher prints: brain events as text, a talk's terminal bytes as they are.
#[derive(Default)]
struct WatchOutput {
    /// The cursor is not at the start of a line.
    mid_line: bool,
    /// Terminal bytes were relayed: put the terminal's modes back at the end.
    raw_seen: bool,
    /// The current message's text arrived as deltas (a brain without them sends it whole).
    streamed: bool,
    /// The brain's answer was printed as it came: the run's summary (the same words) is not
    /// printed again.
    answered: bool,
}

impl WatchOutput {
    fn show(&mut self, frame: Frame) {
        let mut stdout = std::io::stdout();
        match frame.header {
            Header::Output | Header::Screen => {
                self.raw_seen = true;
                let _ = stdout.write_all(&frame.payload);
            }
            Header::Notice { message } => self.line(&format!("— {message}")),
            Header::Event { event, .. } => self.event(event),
            Header::TurnEnd {
                is_error, cost_usd, ..
            } => {
                let how = if is_error { "with an error" } else { "" };
                self.line(&format!("— the turn ended {how}(${cost_usd:.4})"));
            }
            Header::TalkEnd { reason, code } => {
                if self.raw_seen {
                    let _ = write!(stdout, "{}", super::terminal::RESET_MODES);
                }
                let code = code.map(|c| format!(", code {c}")).unwrap_or_default();
                self.line(&format!("— the talk ended ({reason:?}{code})"));
            }
            Header::Error { message } => self.line(&format!("— error: {message}")),
            _ => {}
        }
        let _ = stdout.flush();
    }

    fn event(&mut self, event: UiEvent) {
        match event {
            UiEvent::ChatDelta { text, .. } => {
                print!("{text}");
                self.mid_line = !text.ends_with('\n');
                self.streamed = true;
            }
            UiEvent::ChatComplete { text, .. } => {
                if self.streamed {
                    self.break_line();
                } else {
                    self.line(&text);
                }
                self.streamed = false;
                self.answered = true;
            }
            UiEvent::ToolStart { name, input, .. } => {
                self.line(&format!("● {name}({})", summary(&input)));
            }
            UiEvent::ToolResult {
                content, is_error, ..
            } => {
                let first = content.lines().next().unwrap_or_default();
                let mark = if is_error { "error: " } else { "" };
                self.line(&format!("  ⎿ {mark}{}", crate::text::truncate(first, 100)));
            }
            UiEvent::SessionError { error, .. } => self.line(&format!("— {error}")),
            UiEvent::SessionInit { .. }
            | UiEvent::PermissionRequest { .. }
            | UiEvent::SessionComplete { .. }
            | UiEvent::ProcessExit { .. } => {}
        }
    }

    fn break_line(&mut self) {
        if self.mid_line {
            println!();
            self.mid_line = false;
        }
    }

    fn line(&mut self, text: &str) {
        self.break_line();
        println!("{text}");
    }

    fn finish(&mut self) {
        self.break_line();
        if self.raw_seen {
            print!("{}", super::terminal::RESET_MODES);
        }
        let _ = std::io::stdout().flush();
    }
}

/// The open permission questions (oldest first) and the terminal lines that answer them.
struct Answers {
    open: VecDeque<String>,
    lines: Option<mpsc::Receiver<String>>,
}

impl Answers {
    fn new() -> Answers {
        // A thread, not tokio's stdin: a read blocked on the terminal must never keep the
        // process from exiting once the answer is printed.
        let lines = std::io::IsTerminal::is_terminal(&std::io::stdin()).then(|| {
            let (tx, rx) = mpsc::channel(8);
            std::thread::spawn(move || {
                for line in std::io::stdin().lines() {
                    let Ok(line) = line else { return };
                    if tx.blocking_send(line).is_err() {
                        return;
                    }
                }
            });
            rx
        });
        Answers {
            open: VecDeque::new(),
            lines,
        }
    }

    async fn line(&mut self) -> Option<String> {
        match &mut self.lines {
            Some(rx) => rx.recv().await,
            None => std::future::pending().await,
        }
    }

    fn show(&mut self, header: &Header) {
        match header {
            // Put again (a watcher's late join, a zone's link back up): it is on screen already.
            Header::Permission { request_id, .. } if self.open.contains(request_id) => {}
            Header::Permission {
                clone,
                request_id,
                tool_name,
                input,
                reason,
            } => {
                let why = reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                eprintln!(
                    "? {clone} wants to run {tool_name}({}){why}",
                    summary(input)
                );
                if self.lines.is_some() {
                    eprintln!("  allow? [y]es, [n]o, [a]lways for this turn: ");
                } else {
                    eprintln!(
                        "  (answer with `ouro agent approve {request_id}` or `ouro agent deny {request_id}`, or from `ouro watch {clone}` in a terminal)"
                    );
                }
                self.open.push_back(request_id.clone());
            }
            Header::PermissionSettled {
                request_id,
                outcome,
            } if self.open.contains(request_id) => {
                self.open.retain(|id| id != request_id);
                eprintln!("  → {outcome}");
            }
            _ => {}
        }
    }

    async fn answer(&mut self, client: &Client, line: &str) -> Result<(), DaemonError> {
        let Some(request_id) = self.open.front().cloned() else {
            return Ok(());
        };
        let (allow, always) = match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => (true, false),
            "a" | "always" => (true, true),
            "n" | "no" => (false, false),
            _ => {
                eprintln!("  answer y, n or a");
                return Ok(());
            }
        };
        client
            .send(Header::PermissionAnswer {
                request_id,
                allow,
                always,
            })
            .await
    }
}

/// A tool call's input in one short line: its command or path when it has one.
fn summary(input: &serde_json::Value) -> String {
    let text = ["command", "file_path", "path", "pattern", "url"]
        .iter()
        .find_map(|key| input.get(*key).and_then(|v| v.as_str()).map(String::from))
        .unwrap_or_else(|| input.to_string());
    crate::text::truncate(&text, 100)
}
