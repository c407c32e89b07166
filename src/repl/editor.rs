//! The line editor: rustyline with history kept in `~/.ouro/history`, a trailing `\` that
//! continues the message on the next line, bracketed paste (pasted newlines stay in one
//! message), slash commands listed as they are typed, `@path` completion, Shift+Tab for the
//! permission mode, and Ctrl-C that clears a typed line before it quits.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Cmd, CompletionType, ConditionalEventHandler, Config, Context, Editor, Event, EventContext,
    EventHandler, Helper, KeyCode, KeyEvent, Modifiers, Movement, RepeatCount,
};

use super::complete::{Command, CommandHint, Offers};
use super::style::Style;

const MAX_HISTORY: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub(super) enum EditorError {
    #[error("could not set up line editing on this terminal: {0}")]
    Open(#[source] ReadlineError),
    #[error("could not read from the terminal: {0}")]
    Read(#[source] ReadlineError),
    #[error("the line editor stopped unexpectedly; restart ouro (your session is saved)")]
    Lost,
}

/// What one read produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Input {
    Line(String),
    /// Ctrl-C on an empty line.
    Interrupted,
    /// Ctrl-D on an empty line, or the end of piped input.
    Eof,
    /// Shift+Tab, with the text before and after the cursor.
    CycleMode(String, String),
    /// Esc twice on an empty line: `/rewind`, as in Claude Code.
    Rewind,
}

struct ReplHelper {
    offers: Offers,
    style: Style,
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        Ok(self.offers.complete(line, pos))
    }
}

impl Hinter for ReplHelper {
    type Hint = CommandHint;

    fn hint(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> Option<CommandHint> {
        self.offers.hint(line, pos)
    }
}

impl Highlighter for ReplHelper {
    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        Cow::Owned(self.style.dim(hint))
    }
}

impl Validator for ReplHelper {
    /// A line ending in `\` is not finished: Enter then inserts a newline instead.
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        if ctx.input().ends_with('\\') {
            Ok(ValidationResult::Incomplete)
        } else {
            Ok(ValidationResult::Valid(None))
        }
    }
}

impl Helper for ReplHelper {}

/// Shift+Tab ends the read with what was typed kept aside, so the REPL can switch the
/// permission mode and read again with a prompt showing the new one.
struct CycleMode(Arc<Mutex<Option<(String, String)>>>);

impl ConditionalEventHandler for CycleMode {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        let line = ctx.line();
        let (left, right) = line.split_at(ctx.pos().min(line.len()));
        if let Ok(mut typed) = self.0.lock() {
            *typed = Some((left.to_string(), right.to_string()));
        }
        Some(Cmd::Interrupt)
    }
}

/// Esc twice on an empty line ends the read with [`Input::Rewind`]; Esc on a typed line
/// clears it, as in Claude Code. A lone Esc is a key of its own (see [`ESC_WAIT_MS`]), so the
/// second press must come within [`DOUBLE_ESC`] of the first.
struct DoubleEscape {
    rewind: Arc<AtomicBool>,
    last: Mutex<Option<std::time::Instant>>,
}

/// How long a lone Esc waits to be told apart from the start of an escape sequence.
const ESC_WAIT_MS: u16 = 50;

/// Two presses of Esc closer than this are a double Esc.
const DOUBLE_ESC: std::time::Duration = std::time::Duration::from_millis(800);

impl ConditionalEventHandler for DoubleEscape {
    fn handle(&self, event: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if !ctx.line().is_empty() {
            *last = None;
            return Some(Cmd::Kill(Movement::WholeBuffer));
        }
        // Two presses close enough together arrive as one Alt+Esc.
        let both = event.get(0) == Some(&KeyEvent(KeyCode::Esc, Modifiers::ALT));
        let now = std::time::Instant::now();
        if both || last.take().is_some_and(|first| now - first < DOUBLE_ESC) {
            self.rewind.store(true, Ordering::Relaxed);
            return Some(Cmd::Interrupt);
        }
        *last = Some(now);
        Some(Cmd::Noop)
    }
}

/// Ctrl-C clears a typed line and only interrupts (the first step to quitting) on an empty one.
struct ClearOrInterrupt;

impl ConditionalEventHandler for ClearOrInterrupt {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if ctx.line().is_empty() {
            None
        } else {
            Some(Cmd::Kill(Movement::WholeBuffer))
        }
    }
}

type Inner = Editor<ReplHelper, FileHistory>;

pub(super) struct LineEditor {
    /// Lent to a blocking task while a line is read.
    editor: Option<Inner>,
    history: Option<PathBuf>,
    /// What was typed when Shift+Tab ended a read.
    cycled: Arc<Mutex<Option<(String, String)>>>,
    /// Set when a double Esc ended a read.
    rewind: Arc<AtomicBool>,
}

impl LineEditor {
    /// An editor with the history of earlier sessions loaded from `history` (if given); what it
    /// offers is set with `set_offers`.
    pub(super) fn new(
        history: Option<PathBuf>,
        cwd: PathBuf,
        style: Style,
    ) -> Result<LineEditor, EditorError> {
        let config = Config::builder()
            .max_history_size(MAX_HISTORY)
            .and_then(|b| b.history_ignore_dups(true))
            .map_err(EditorError::Open)?
            .history_ignore_space(true)
            .auto_add_history(false)
            .bracketed_paste(true)
            .completion_type(CompletionType::List)
            // A lone Esc is Esc after this long: without a limit, rustyline waits for the
            // next byte and reads it as Meta+key (`/cost` typed after Esc became `cost`).
            // A terminal sends an escape sequence's bytes together, well within it.
            .keyseq_timeout(Some(ESC_WAIT_MS))
            .build();
        let mut editor = Inner::with_config(config).map_err(EditorError::Open)?;
        editor.set_helper(Some(ReplHelper {
            offers: Offers {
                commands: Vec::new(),
                resources: Vec::new(),
                cwd,
            },
            style,
        }));
        editor.bind_sequence(
            KeyEvent::ctrl('C'),
            EventHandler::Conditional(Box::new(ClearOrInterrupt)),
        );
        let cycled = Arc::new(Mutex::new(None));
        editor.bind_sequence(
            KeyEvent(KeyCode::BackTab, Modifiers::NONE),
            EventHandler::Conditional(Box::new(CycleMode(cycled.clone()))),
        );
        let rewind = Arc::new(AtomicBool::new(false));
        for modifiers in [Modifiers::NONE, Modifiers::ALT] {
            editor.bind_sequence(
                KeyEvent(KeyCode::Esc, modifiers),
                EventHandler::Conditional(Box::new(DoubleEscape {
                    rewind: rewind.clone(),
                    last: Mutex::new(None),
                })),
            );
        }
        if let Some(path) = &history
            && path.exists()
            && let Err(e) = editor.load_history(path)
        {
            tracing::warn!(path = %path.display(), error = %e, "could not load the input history");
        }
        Ok(LineEditor {
            editor: Some(editor),
            history,
            cycled,
            rewind,
        })
    }

    /// The slash commands offered while typing.
    /// What Tab and the `/` hints offer: commands, and MCP resources (`server:uri`) after `@`.
    pub(super) fn set_offers(&mut self, commands: Vec<Command>, resources: Vec<String>) {
        if let Some(helper) = self.editor.as_mut().and_then(|e| e.helper_mut()) {
            helper.offers.commands = commands;
            helper.offers.resources = resources;
        }
    }

    /// Reads one message. rustyline blocks, so it runs on the blocking pool while the async
    /// runtime goes on (the engine may be waiting for a permission answer meanwhile).
    pub(super) async fn read(&mut self, prompt: &str) -> Result<Input, EditorError> {
        self.read_with(prompt, (String::new(), String::new())).await
    }

    /// [`LineEditor::read`] with text already typed before and after the cursor (what was
    /// typed during a turn, or before Shift+Tab).
    pub(super) async fn read_with(
        &mut self,
        prompt: &str,
        (left, right): (String, String),
    ) -> Result<Input, EditorError> {
        let mut editor = self.editor.take().ok_or(EditorError::Lost)?;
        let prompt = prompt.to_string();
        let (editor, result) = tokio::task::spawn_blocking(move || {
            let result = editor.readline_with_initial(&prompt, (&left, &right));
            (editor, result)
        })
        .await
        .map_err(|_| EditorError::Lost)?;
        self.editor = Some(editor);
        match result {
            Ok(line) => Ok(Input::Line(join_continued_lines(&line))),
            Err(ReadlineError::Interrupted) if self.rewind.swap(false, Ordering::Relaxed) => {
                Ok(Input::Rewind)
            }
            Err(ReadlineError::Interrupted) => {
                let cycled = self.cycled.lock().ok().and_then(|mut t| t.take());
                Ok(match cycled {
                    Some((left, right)) => Input::CycleMode(left, right),
                    None => Input::Interrupted,
                })
            }
            Err(ReadlineError::Eof) => Ok(Input::Eof),
            Err(e) => Err(EditorError::Read(e)),
        }
    }

    /// Adds a message to the history and appends it to the history file at once, so it
    /// survives a crash as well as a clean exit.
    pub(super) fn remember(&mut self, line: &str) {
        let Some(editor) = self.editor.as_mut() else {
            return;
        };
        if !matches!(editor.add_history_entry(line), Ok(true)) {
            return;
        }
        if let Some(path) = &self.history {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            if let Err(e) = editor.append_history(path) {
                tracing::warn!(path = %path.display(), error = %e, "could not save the input history");
            }
        }
    }
}

/// The message as meant: each `\` that continued a line is dropped, the line break kept.
pub(super) fn join_continued_lines(text: &str) -> String {
    text.replace("\\\r\n", "\n").replace("\\\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_backslashes_are_removed() {
        assert_eq!(join_continued_lines("one\\\ntwo"), "one\ntwo");
        assert_eq!(join_continued_lines("a\\\r\nb\\\nc"), "a\nb\nc");
        assert_eq!(join_continued_lines("path C:\\dir"), "path C:\\dir");
    }
}
