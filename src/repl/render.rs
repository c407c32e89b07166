//! Draws the engine's event stream on the terminal while a turn runs: text token by token, one
//! line per tool call with a short result, Bash output dimmed and capped, Edit diffs in colour,
//! a spinner while nothing else moves, and a status line when the turn ends.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use serde_json::Value;

use super::markdown;
use super::spinner::Spinner;
use super::style::Style;
use crate::api::types::{ContentBlock, Message, Role};
use crate::event::{Event, ResultKind, RunResult, ToolDisplay, ToolStatus};
use crate::text::truncate;
use crate::tools::todo;
use answer::Answer;

mod answer;
mod child;
pub(super) mod todos;

/// Lines of one call's live output shown on screen; the model still gets all of it.
const MAX_PROGRESS_LINES: usize = 12;
const MAX_LINE_CHARS: usize = 160;
/// Longest key argument shown on a call's line.
const MAX_KEY_CHARS: usize = 120;

/// What kind of streamed text is being written, so a switch starts a new line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Text,
    Thinking,
}

struct ToolView {
    name: String,
    key: String,
    shown: usize,
    hidden: bool,
    /// Output after the last newline, printed once its line is complete.
    partial: String,
}

pub(super) struct Renderer {
    out: Box<dyn Write + Send>,
    style: Style,
    /// A spinner needs a terminal that understands carriage return and erase-line.
    live: bool,
    spinner: Option<Spinner>,
    spinner_drawn: bool,
    at_line_start: bool,
    stream: Option<Stream>,
    /// Set by deltas, so a finished text block is not printed a second time.
    streamed: bool,
    /// The answer text of the block being streamed.
    answer: Answer,
    model: String,
    tools: HashMap<String, ToolView>,
    /// The call whose line is the latest on screen; its output and result follow directly.
    last_tool: Option<String>,
    running: usize,
}

impl Renderer {
    pub(super) fn new(out: Box<dyn Write + Send>, style: Style, live: bool) -> Renderer {
        Renderer {
            out,
            style,
            live,
            spinner: None,
            spinner_drawn: false,
            at_line_start: true,
            stream: None,
            streamed: false,
            answer: Answer::new(style, live),
            model: String::new(),
            tools: HashMap::new(),
            last_tool: None,
            running: 0,
        }
    }

    pub(super) fn style(&self) -> Style {
        self.style
    }

    pub(super) fn set_model(&mut self, model: &str) {
        self.model = model.to_string();
    }

    /// Writes whole lines (slash command output, banners, questions).
    pub(super) fn print(&mut self, text: &str) {
        self.stop_spinner();
        self.end_line();
        let mut text = text.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        self.put(&text);
    }

    /// Shows a question above the line where its answer is typed. The spinner is only
    /// hidden, so it comes back once the answer is in and the approved call runs.
    pub(super) fn question(&mut self, text: &str) {
        self.erase_spinner();
        self.end_line();
        let mut text = text.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        self.put(&text);
    }

    /// Ctrl-C was pressed during a turn; the result line follows once the turn has stopped.
    pub(super) fn interrupting(&mut self) {
        if self.live && self.at_line_start {
            // The terminal echoed ^C on the spinner's line.
            self.write_raw("\r\x1b[2K");
            self.spinner_drawn = false;
        }
        if let Some(s) = self.spinner.as_mut() {
            *s = Spinner::new("Interrupting");
            self.tick();
        }
    }

    /// Redraws the spinner, if one runs and nothing else is on its line.
    pub(super) fn tick(&mut self) {
        if !self.live || !self.at_line_start {
            return;
        }
        let Some(spinner) = self.spinner.as_mut() else {
            return;
        };
        let frame = self.style.dim(&spinner.next_frame());
        self.write_raw(&format!("\r\x1b[2K{frame}"));
        self.spinner_drawn = true;
    }

    pub(super) fn event(&mut self, event: &Event) {
        match event {
            Event::Init(info) => self.model.clone_from(&info.model),
            Event::RequestStarted { .. } => self.start_spinner("Thinking"),
            Event::TextDelta { text } => self.stream_text(Stream::Text, text),
            Event::ThinkingDelta { text } => self.stream_text(Stream::Thinking, text),
            Event::AssistantBlock { block, .. } => {
                if let ContentBlock::Text { text } = block.as_ref()
                    && !self.streamed
                {
                    self.stream_text(Stream::Text, text);
                }
                self.streamed = false;
                self.end_stream();
            }
            Event::MessageDone { .. } => {
                // Calls may already run while their message ends; their spinner stays.
                if self.running == 0 {
                    self.stop_spinner();
                }
                self.end_stream();
            }
            Event::ToolStarted { name, input, .. } if name == todo::NAME => self.todo_list(input),
            Event::ToolFinished {
                name,
                status: ToolStatus::Ok,
                ..
            } if name == todo::NAME => {}
            Event::ToolStarted {
                id, name, summary, ..
            } => self.tool_started(id, name, summary),
            Event::ToolProgress { id, chunk } => self.tool_progress(id, chunk),
            Event::Child { event, .. } => self.child_event(event),
            // The time shown is the call's own: minus the wait for the user's answer.
            Event::ToolFinished {
                id,
                name,
                result,
                status,
                display,
                elapsed,
                timings,
            } => self.tool_finished(
                id,
                name,
                result,
                *status,
                display.as_ref(),
                elapsed.saturating_sub(timings.permission),
            ),
            Event::ApiRetry(r) => {
                let status = r.error_status.map(|s| format!(" {s}")).unwrap_or_default();
                let line = format!(
                    "· API error{status} ({}); retry {}/{} in {:.1}s",
                    r.error,
                    r.attempt,
                    r.max_retries,
                    r.retry_delay_ms as f64 / 1000.0
                );
                let line = self.style.dim(&line);
                self.line(&line);
            }
            Event::ModelFallback { from, to, reason } => {
                self.model.clone_from(to);
                let line = self.style.dim(&format!(
                    "· {from} is overloaded ({reason}); switched to {to}"
                ));
                self.line(&line);
            }
            Event::Notice(text) => {
                let line = self.style.dim(&format!("· {text}"));
                self.line(&line);
            }
            Event::MemoryReflect(reflect) => {
                let line = self.style.dim(&reflect_line(reflect));
                self.line(&line);
            }
            Event::AutoReview(review) => {
                let text = match (review.verdict.as_str(), &review.reason) {
                    ("allow", _) => format!("· auto mode allowed {}", review.tool),
                    ("block", Some(why)) => format!("· auto mode blocked {}: {why}", review.tool),
                    (_, Some(why)) => format!("· {why}; asking you"),
                    _ => format!("· auto mode: {}", review.verdict),
                };
                let line = self.style.dim(&text);
                self.line(&line);
            }
            Event::StreamCut {
                error, kept_blocks, ..
            } => {
                let line = self.style.dim(&format!(
                    "· The response stream broke ({error}); kept {kept_blocks} finished blocks and asked the model to continue"
                ));
                self.line(&line);
            }
            Event::ToolsChanged { mcp_servers, .. } => {
                let ready: Vec<String> = mcp_servers
                    .iter()
                    .filter(|s| s.status == "connected")
                    .map(|s| format!("{} ({} tools)", s.name, s.tools))
                    .collect();
                if !ready.is_empty() {
                    let line = self
                        .style
                        .dim(&format!("· MCP servers ready: {}", ready.join(", ")));
                    self.line(&line);
                }
            }
            Event::CompactStarted => self.start_spinner("Compacting the conversation"),
            Event::CompactFinished => self.stop_spinner(),
            Event::CompactBoundary(c) => {
                let line = format!(
                    "· Compacted {} earlier messages into a summary ({} kept as they were)",
                    c.messages_summarised, c.messages_kept
                );
                let line = self.style.dim(&line);
                self.line(&line);
            }
            // Denials arrive as the call's error result too; engine-written messages
            // (continuations, summaries) are bookkeeping the user did not type.
            Event::PermissionDenied(_)
            | Event::SyntheticUser { .. }
            | Event::StreamEvent(_)
            | Event::PromptReplay { .. }
            | Event::HookStarted { .. }
            | Event::HookResponse { .. } => {}
            Event::Result(result) => self.result(result),
        }
    }

    /// The last prompt of a loaded conversation and the answer to it, after `--resume`.
    /// `summarize` gives a call's one-line summary from its tool name and input.
    pub(super) fn last_exchange(
        &mut self,
        history: &[Message],
        summarize: impl Fn(&str, &Value) -> String,
    ) {
        let prompt_at = history.iter().rposition(|m| {
            m.role == Role::User
                && m.content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Text { text } if !text.trim().is_empty()))
        });
        let Some(at) = prompt_at else {
            self.print(&self.style.dim("(the conversation has no messages yet)"));
            return;
        };
        let prompt = format!("› {}", history[at].text().trim());
        let prompt = self.style.bold(&prompt);
        self.print(&prompt);
        for message in &history[at + 1..] {
            for block in &message.content {
                match block {
                    ContentBlock::Text { text } if message.role == Role::Assistant => {
                        let text = markdown::render(self.style, text.trim_end());
                        self.print(&text);
                    }
                    ContentBlock::ToolUse { name, input, .. } => {
                        let key = truncate(&summarize(name, input), MAX_KEY_CHARS);
                        let line = self.tool_line(name, &key);
                        self.print(&line);
                    }
                    _ => {}
                }
            }
        }
    }

    fn result(&mut self, r: &RunResult) {
        self.stop_spinner();
        self.end_stream();
        match r.kind {
            ResultKind::Success => {}
            ResultKind::ErrorAborted => {
                let line = self
                    .style
                    .yellow("⎿ Interrupted. Tell ouro what to do instead.");
                self.line(&line);
            }
            _ => {
                let line = self.style.red(&format!("✗ {}", r.text));
                self.line(&line);
            }
        }
        let line = self.style.dim(&status_line(&self.model, r));
        self.line(&line);
        self.tools.clear();
        self.last_tool = None;
        self.running = 0;
    }

    fn stream_text(&mut self, kind: Stream, text: &str) {
        if text.is_empty() {
            return;
        }
        self.stop_spinner();
        if self.stream != Some(kind) {
            self.end_stream();
            self.end_line();
            self.stream = Some(kind);
        }
        self.streamed = true;
        self.last_tool = None;
        let text = match kind {
            Stream::Text => self.answer.push(text),
            Stream::Thinking => self.style.dim(text),
        };
        self.put(&text);
    }

    fn end_stream(&mut self) {
        match self.stream.take() {
            Some(Stream::Text) => {
                let tail = self.answer.finish();
                if self.style.is_colour() {
                    // Rendering always ends at the start of a line.
                    self.write_raw(&tail);
                    self.at_line_start = true;
                }
                self.end_line();
            }
            Some(Stream::Thinking) => self.end_line(),
            None => {}
        }
    }

    fn tool_line(&self, name: &str, key: &str) -> String {
        let head = format!("{} {}", self.style.cyan("●"), self.style.bold(name));
        if key.is_empty() {
            head
        } else {
            format!("{head}({key})")
        }
    }

    fn tool_started(&mut self, id: &str, name: &str, summary: &str) {
        self.stop_spinner();
        self.end_stream();
        let key = truncate(summary, MAX_KEY_CHARS);
        let line = self.tool_line(name, &key);
        self.line(&line);
        self.tools.insert(
            id.to_string(),
            ToolView {
                name: name.to_string(),
                key,
                shown: 0,
                hidden: false,
                partial: String::new(),
            },
        );
        self.last_tool = Some(id.to_string());
        self.running += 1;
        self.start_spinner(&format!("Running {name}"));
    }

    /// Reprints a call's line when other output came in between, so its output and result
    /// stay readable next to their call.
    fn focus(&mut self, id: &str) {
        if self.last_tool.as_deref() == Some(id) {
            return;
        }
        if let Some(view) = self.tools.get(id) {
            let line = self.tool_line(&view.name, &view.key);
            self.line(&line);
        }
        self.last_tool = Some(id.to_string());
    }

    fn tool_progress(&mut self, id: &str, chunk: &str) {
        if !self.tools.contains_key(id) {
            return;
        }
        self.focus(id);
        let lines = match self.tools.get_mut(id) {
            Some(view) => {
                view.partial.push_str(chunk);
                take_lines(&mut view.partial)
            }
            None => return,
        };
        for line in lines {
            self.progress_line(id, &line);
        }
    }

    fn progress_line(&mut self, id: &str, line: &str) {
        let Some(view) = self.tools.get_mut(id) else {
            return;
        };
        let text = if view.shown < MAX_PROGRESS_LINES {
            view.shown += 1;
            format!("  │ {}", truncate(line, MAX_LINE_CHARS))
        } else if !view.hidden {
            view.hidden = true;
            "  │ … (more output; the model sees all of it)".to_string()
        } else {
            return;
        };
        let text = self.style.dim(&text);
        self.line(&text);
    }

    fn tool_finished(
        &mut self,
        id: &str,
        name: &str,
        result: &ContentBlock,
        status: ToolStatus,
        display: Option<&ToolDisplay>,
        elapsed: Duration,
    ) {
        let ContentBlock::ToolResult { content, .. } = result else {
            return;
        };
        self.erase_spinner();
        self.end_stream();
        if !self.tools.contains_key(id) {
            self.tools.insert(
                id.to_string(),
                ToolView {
                    name: name.to_string(),
                    key: String::new(),
                    shown: 0,
                    hidden: false,
                    partial: String::new(),
                },
            );
            self.last_tool = None;
        } else {
            self.running = self.running.saturating_sub(1);
        }
        self.focus(id);
        let rest = self
            .tools
            .get_mut(id)
            .map(|v| std::mem::take(&mut v.partial))
            .unwrap_or_default();
        if !rest.is_empty() {
            self.progress_line(id, &rest);
        }
        let streamed = self.tools.get(id).is_some_and(|v| v.shown > 0);
        let report = Report {
            content,
            status,
            display,
            streamed,
            elapsed,
        };
        for line in report.lines(self.style) {
            self.line(&line);
        }
        if self.running == 0 {
            self.stop_spinner();
        }
    }

    fn start_spinner(&mut self, label: &str) {
        if self.spinner.as_ref().is_some_and(|s| s.label() == label) {
            return;
        }
        self.spinner = Some(Spinner::new(label));
        self.tick();
    }

    fn stop_spinner(&mut self) {
        self.erase_spinner();
        self.spinner = None;
    }

    fn erase_spinner(&mut self) {
        if self.spinner_drawn {
            self.spinner_drawn = false;
            self.write_raw("\r\x1b[2K");
        }
    }

    fn end_line(&mut self) {
        if !self.at_line_start {
            self.put("\n");
        }
    }

    fn line(&mut self, text: &str) {
        self.erase_spinner();
        self.end_line();
        self.put(&format!("{text}\n"));
    }

    fn put(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.erase_spinner();
        self.write_raw(text);
        self.at_line_start = text.ends_with('\n');
    }

    /// A terminal that went away cannot be told so; the turn goes on and is kept in the
    /// transcript, hence write errors are ignored.
    fn write_raw(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }
}

/// `model · tokens in / out · cost` after every turn.
pub(super) fn status_line(model: &str, r: &RunResult) -> String {
    let cost = if r.cost_unknown {
        "cost unknown (no price for this model)".to_string()
    } else {
        format!("${:.4}", r.cost_usd)
    };
    format!(
        "{model} · {} in / {} out · {cost}",
        r.usage.context_tokens(),
        r.usage.output_tokens
    )
}

/// Complete lines from the front of `buffer`; the unfinished tail stays.
fn take_lines(buffer: &mut String) -> Vec<String> {
    let Some(end) = buffer.rfind('\n') else {
        return Vec::new();
    };
    let rest = buffer.split_off(end + 1);
    let done = std::mem::replace(buffer, rest);
    done.lines()
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect()
}

/// What is known of a finished call when its short report is written.
struct Report<'a> {
    content: &'a str,
    status: ToolStatus,
    display: Option<&'a ToolDisplay>,
    /// Its output was shown live while it ran.
    streamed: bool,
    elapsed: Duration,
}

impl Report<'_> {
    /// The short report under a finished call.
    fn lines(&self, style: Style) -> Vec<String> {
        let took = if self.elapsed >= Duration::from_secs(1) {
            style.dim(&format!(" · {:.1}s", self.elapsed.as_secs_f64()))
        } else {
            String::new()
        };
        let lines: Vec<&str> = self.content.lines().collect();
        let first = lines
            .iter()
            .find(|l| !l.trim().is_empty())
            .copied()
            .unwrap_or("");
        let more = |shown: usize| match lines.len().saturating_sub(shown) {
            0 => String::new(),
            n => style.dim(&format!(" (+{n} lines)")),
        };
        match self.status {
            ToolStatus::Cancelled => return vec![style.yellow("  ⎿ Cancelled")],
            // What the user typed with a refusal is theirs: shown whole, under the reason.
            ToolStatus::Denied if self.content.contains(" The user said: ") => {
                let (why, said) = self
                    .content
                    .split_once(" The user said: ")
                    .unwrap_or((self.content, ""));
                let text = format!("  ✗ {}", truncate(why, MAX_LINE_CHARS));
                return vec![
                    format!("{}{took}", style.red(&text)),
                    format!("    You said: {}", said.trim()),
                ];
            }
            ToolStatus::Error | ToolStatus::Denied => {
                let last = lines.last().copied().unwrap_or("");
                let shown = if self.streamed { last } else { first };
                let text = format!("  ✗ {}", truncate(shown, MAX_LINE_CHARS));
                return vec![format!("{}{took}", style.red(&text))];
            }
            ToolStatus::Ok => {}
        }
        match self.display {
            Some(ToolDisplay::LinesRead(n)) => vec![format!("  ⎿ Read {n} lines{took}")],
            Some(ToolDisplay::Diff(diff)) => {
                let mut out = vec![format!("  ⎿ {}{took}", truncate(first, MAX_LINE_CHARS))];
                out.extend(diff_lines(style, diff));
                out
            }
            _ if self.streamed => {
                vec![format!("  ⎿ Done ({} lines of output){took}", lines.len())]
            }
            _ => vec![format!(
                "  ⎿ {}{}{took}",
                truncate(first, MAX_LINE_CHARS),
                more(1)
            )],
        }
    }
}

/// A unified diff, coloured line by line.
pub(super) fn diff_lines(style: Style, diff: &str) -> Vec<String> {
    diff.lines()
        .map(|line| {
            let text = format!("    {}", truncate(line, MAX_LINE_CHARS));
            if line.starts_with("@@") {
                style.cyan(&text)
            } else if line.starts_with('+') {
                style.green(&text)
            } else if line.starts_with('-') {
                style.red(&text)
            } else if line.starts_with('…') {
                style.dim(&text)
            } else {
                text
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;

/// The status line of a reflect step: what it kept, and what it cost.
fn reflect_line(reflect: &crate::event::ReflectInfo) -> String {
    match &reflect.error {
        Some(why) => format!("· memory: nothing kept ({why})"),
        None if reflect.proposed == 0 => format!(
            "· memory: nothing new to remember (${:.4})",
            reflect.cost_usd
        ),
        None => format!(
            "· memory: kept {} of {} proposed (${:.4})",
            reflect.stored, reflect.proposed, reflect.cost_usd
        ),
    }
}
