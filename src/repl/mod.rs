//! The interactive session (`ouro` without `-p`).
//!
//! One task owns the terminal: it reads lines with the editor, and while a turn runs it polls
//! the engine's future together with the event stream (rendered as it comes), permission
//! questions (answered through the same editor) and SIGINT (which cancels only that turn).
//! The engine never touches stdin, so a question can never race the prompt for input.

mod agents;
mod ask;
mod commands;
mod complete;
mod editor;
mod highlight;
mod hooks;
mod keys;
mod markdown;
mod mcp;
mod memory;
mod mentions;
mod output_style;
mod plugins;
mod render;
mod rewind;
mod sessions;
mod slash;
mod spinner;
mod status_line;
mod style;
mod workspace;

use std::future::Future;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use futures::FutureExt;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::sys::shutdown::Ending;

use crate::app::{self, Endpoint, Options};
use crate::engine::Engine;
use crate::event::Event;
use crate::exec::AskAnswer;
use crate::permissions::{PermissionEngine, PermissionMode};
use ask::{Pending, ReplAsker};
use editor::{Input, LineEditor};
use render::Renderer;
use style::Style;

/// The prompt messages are typed at (after the mode's badge, if any).
const PROMPT: &str = "› ";
/// How often the spinner moves.
const TICK: Duration = Duration::from_millis(100);
/// How long a SIGTERM or SIGHUP leaves the session to end its turn before it exits anyway.
const ENDING_GRACE: Duration = Duration::from_secs(5);

/// Runs the REPL until the user quits. `first_prompt` is sent first; `options.resume` /
/// `options.continue_last` open the earlier session and show its last exchange. `brain` is the
/// slug the session was started with, if any.
pub async fn run(
    mut options: Options,
    brain: Option<String>,
    first_prompt: Option<String>,
    cwd: &Path,
) -> anyhow::Result<Option<i32>> {
    let endpoint = Endpoint::from_env()?;
    let (_, ignored) = app::load_settings(&options, cwd)?;
    let root = app::project_root(cwd);
    if !ignored.is_empty() && ask_trust(&root, &ignored)? {
        crate::settings::trust_directory(&root)?;
        options.trust_project = true;
    }
    let (asker, questions) = ask::channel();
    // `--resume` without an id: a new session first, then the picker.
    let pick = options.resume.as_deref() == Some("");
    if pick {
        options.resume = None;
    }
    let session = app::build(&options, cwd, endpoint.clone(), asker.clone())?;
    // Registered before the first read: rustyline puts back the SIGINT handler it found, so
    // this one is active whenever a turn runs.
    let sigint = signal(SignalKind::interrupt()).context("could not watch for Ctrl-C")?;
    keys::remember_terminal();
    let ending = crate::sys::shutdown::watch_ending(ENDING_GRACE, keys::restore_terminal);
    let style = Style::detect();
    let live = std::io::stdout().is_terminal();
    let mut renderer = Renderer::new(Box::new(std::io::stdout()), style, live);
    renderer.set_model(&session.engine.config().model);
    let history = crate::settings::ouro_home().map(|home| home.join("history"));
    let editor = LineEditor::new(history, cwd.to_path_buf(), style)?;
    let mut repl = Repl {
        options,
        brain,
        cwd: cwd.to_path_buf(),
        endpoint,
        asker,
        engine: session.engine,
        ui: Ui {
            bypass_allowed: session.permissions.mode() == PermissionMode::BypassPermissions,
            permissions: session.permissions,
            render: renderer,
            editor,
            events: session.events,
            questions,
            sigint,
            ending,
            parked: Vec::new(),
            type_ahead: String::new(),
            draft: String::new(),
        },
        interrupted_once: false,
        shell_context: Vec::new(),
        mcp: session.mcp,
        memory: session.memory,
        embedder: session.embedder,
        reflecting: None,
        status: status_line::StatusLine::new(session.status_line, session.env_passthrough),
        plugins: session.plugins,
        base_system_prompt: session.base_system_prompt,
    };
    repl.greet(session.resumed);
    if pick {
        repl.pick_session().await;
    }
    if let Some(prompt) = first_prompt.filter(|p| !p.trim().is_empty()) {
        repl.typed(&prompt).await;
    }
    repl.main_loop().await
}

/// Asks once, before the session starts, whether the directory's own files may take effect.
fn ask_trust(cwd: &Path, ignored: &[String]) -> anyhow::Result<bool> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Do you trust the files in {}?\nIf you do, these take effect: {}. They can allow \
         commands, run hooks and steer the model, so trust only a project whose files you know.",
        cwd.display(),
        ignored.join("; ")
    )?;
    write!(
        out,
        "Trust this directory (remembered in {}/settings.json)? [y/N] ",
        crate::settings::home_label()
    )?;
    out.flush()?;
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .context("could not read the answer")?;
    let yes = matches!(answer.trim().to_lowercase().as_str(), "y" | "yes");
    if !yes {
        writeln!(
            out,
            "Not trusted: this session ignores them. (--trust-project trusts for one run.)"
        )?;
    }
    Ok(yes)
}

struct Repl {
    /// What the session was built from; `/resume` rebuilds from it.
    options: Options,
    /// The brain slug the session runs on, when one was chosen.
    brain: Option<String>,
    cwd: PathBuf,
    endpoint: Endpoint,
    asker: Arc<ReplAsker>,
    engine: Engine,
    ui: Ui,
    /// Ctrl-C was pressed on an empty prompt; pressing it again right away quits.
    interrupted_once: bool,
    /// `!` commands run since the last prompt, with their output, for the model.
    shell_context: Vec<String>,
    /// The MCP servers, for `/mcp`, their prompts and resources.
    mcp: Option<Arc<crate::mcp::McpHub>>,
    /// The reflect step after each turn, when `memory.reflect` is on and the project trusted.
    memory: Option<app::memory::Memory>,
    /// `/memory graph QUERY` seeds by meaning too with `memory.embeddings`.
    embedder: Option<std::sync::Arc<crate::knowledge::embed::Embedder>>,
    /// A reflect request still running after its turn.
    reflecting: Option<tokio::task::JoinHandle<crate::engine::reflect::Reflected>>,
    /// The `statusLine` command, drawn above each prompt.
    status: status_line::StatusLine,
    /// The plugins in force: their commands are slash commands.
    plugins: Vec<crate::plugins::Plugin>,
    /// `--system-prompt` or the `--agent` body, which an output style keeps.
    base_system_prompt: Option<String>,
}

/// Everything a running turn needs besides the engine, so both can be borrowed at once.
struct Ui {
    /// Shift+Tab changes its mode, during a turn too.
    permissions: Arc<PermissionEngine>,
    /// Shift+Tab offers bypassPermissions only to a session started in it, as Claude Code does.
    bypass_allowed: bool,
    render: Renderer,
    editor: LineEditor,
    events: UnboundedReceiver<Event>,
    questions: UnboundedReceiver<Pending>,
    sigint: Signal,
    /// SIGTERM or SIGHUP: the turn ends as on Ctrl-C, then the session.
    ending: Ending,
    /// Questions left unanswered by Ctrl-C: their calls end as cancelled when the turn stops,
    /// rather than as refused, so they are held until then.
    parked: Vec<Pending>,
    /// What was typed while the last turn ran: lines to submit (each ended by Enter), then
    /// the start of the next prompt.
    type_ahead: String,
    /// Text to put back in the editor as it is (a rewound prompt), never submitted unasked.
    draft: String,
}

impl Repl {
    fn greet(&mut self, resumed: bool) {
        let style = self.ui.render.style();
        let config = self.engine.config();
        let head = format!(
            "{} {} · {} · {}",
            style.bold("ouro"),
            env!("CARGO_PKG_VERSION"),
            config.model,
            self.cwd.display()
        );
        let line = format!(
            "session {} · /help lists commands · Esc or Ctrl-C interrupts · Ctrl-D quits",
            self.engine.session_id()
        );
        self.ui.render.print(&head);
        self.ui.render.print(&style.dim(&line));
        if resumed {
            let note = style.dim("Resumed. The last exchange was:");
            self.ui.render.print(&note);
            let executor = self.engine.executor();
            self.ui
                .render
                .last_exchange(self.engine.history(), |name, input| {
                    executor.summarize(name, input)
                });
        }
    }

    /// Runs until the user leaves; `Some(exit code)` when SIGTERM or SIGHUP ended it.
    async fn main_loop(&mut self) -> anyhow::Result<Option<i32>> {
        // Text kept across a Shift+Tab, before and after the cursor.
        let mut kept = (String::new(), String::new());
        let ending = self.ui.ending.token.clone();
        loop {
            if ending.is_cancelled() {
                break;
            }
            self.settle_reflect(false).await;
            self.refresh_offers();
            if self.ui.type_ahead.is_empty() {
                self.draw_status_line().await;
            }
            let prompt = self.ui.prompt();
            // A line entered during the turn is submitted as it was typed; text without its
            // Enter waits in the editor.
            let input = match self.ui.type_ahead.split_once('\n') {
                Some((line, rest)) => {
                    let line = line.to_string();
                    self.ui.type_ahead = rest.to_string();
                    self.ui.render.print(&format!("{prompt}{line}"));
                    Input::Line(line)
                }
                None => {
                    kept.0
                        .insert_str(0, &std::mem::take(&mut self.ui.type_ahead));
                    kept.0.insert_str(0, &std::mem::take(&mut self.ui.draft));
                    tokio::select! {
                        read = self.ui.editor.read_with(&prompt, std::mem::take(&mut kept)) => read?,
                        () = ending.cancelled() => {
                            keys::restore_terminal();
                            self.ui.render.print("");
                            break;
                        }
                    }
                }
            };
            let line = match input {
                Input::Eof => break,
                Input::CycleMode(left, right) => {
                    self.ui.cycle_mode();
                    kept = (left, right);
                    continue;
                }
                Input::Interrupted if self.interrupted_once => break,
                Input::Interrupted => {
                    self.interrupted_once = true;
                    let hint = self.ui.render.style().dim("Press Ctrl-C again to exit.");
                    self.ui.render.print(&hint);
                    continue;
                }
                Input::Rewind => {
                    self.rewind().await;
                    continue;
                }
                Input::Line(line) => line,
            };
            self.interrupted_once = false;
            if line.trim().is_empty() {
                continue;
            }
            self.ui.editor.remember(&line);
            if let Some(command) = line.trim_start().strip_prefix('!') {
                self.shell(command.trim()).await;
                continue;
            }
            if let Some(note) = line.trim_start().strip_prefix('#')
                && !note.trim().is_empty()
                && !note.starts_with('#')
            {
                self.remember_note(note);
                continue;
            }
            let project = self.custom_commands();
            match slash::parse(&line, project) {
                Some(command) => {
                    if self.slash(command).await == slash::Flow::Exit {
                        break;
                    }
                }
                None => self.typed(&line).await,
            }
        }
        self.settle_reflect(true).await;
        let signal = self.ui.ending.received.exit_code();
        let reason = if signal.is_some() {
            "other"
        } else {
            "prompt_input_exit"
        };
        self.engine.end_session(reason).await;
        Ok(signal)
    }

    /// What Tab and the `/` hints offer, MCP prompts and resources included.
    fn refresh_offers(&mut self) {
        let mut offered = slash::completions(&self.custom_commands());
        let (prompts, resources) = mcp::offers(self.mcp.as_deref());
        offered.extend(prompts);
        self.ui.editor.set_offers(offered, resources);
    }

    /// A message the user typed: its `@path` and `@server:uri` mentions are attached. Only typed
    /// text counts: a project command's template (which a cloned repository may bring)
    /// attaches nothing.
    async fn typed(&mut self, text: &str) {
        let mut attached = mentions::attachments(text, &self.cwd, self.ui.permissions.as_ref());
        attached.extend(self.mcp_attachments(text).await);
        if attached.is_empty() {
            return self.prompt(text).await;
        }
        let note = self.ui.render.style().dim(&format!(
            "Attached {} mentioned file{}.",
            attached.len(),
            if attached.len() == 1 { "" } else { "s" }
        ));
        self.ui.render.print(&note);
        let message = format!("{text}\n\n{}", attached.join("\n\n"));
        self.prompt_as(&message, text).await;
    }

    fn fail(&mut self, text: &str) {
        let line = self.ui.render.style().red(&format!("✗ {text}"));
        self.ui.render.print(&line);
    }

    /// One prompt to the model, after the `!` commands run since the last one; the outcome
    /// is rendered from the events.
    async fn prompt(&mut self, text: &str) {
        self.prompt_as(text, text).await;
    }

    /// [`Repl::prompt`] of `text`, which the user asked for by typing `typed` (a command, or a
    /// line whose mentions were attached): only that counts as the user's words for auto
    /// mode's reviewer, not a template or a file's content.
    async fn prompt_as(&mut self, text: &str, typed: &str) {
        self.engine.user_typed(typed);
        let mut message = std::mem::take(&mut self.shell_context).join("\n\n");
        if !message.is_empty() {
            message.push_str("\n\n");
        }
        message.push_str(text);
        self.settle_reflect(false).await;
        let cancel = CancellationToken::new();
        self.ui
            .drive(self.engine.run(&message, &cancel), &cancel)
            .await;
        if !cancel.is_cancelled() {
            self.reflect_after_turn().await;
        }
    }
}

/// How a mode shows at the prompt and when it is switched to, as Claude Code words it.
fn mode_badge(mode: PermissionMode) -> Option<(&'static str, &'static str)> {
    match mode {
        PermissionMode::Default => None,
        PermissionMode::AcceptEdits => Some(("⏵⏵", "accept edits on")),
        PermissionMode::Plan => Some(("⏸", "plan mode on")),
        PermissionMode::DontAsk => Some(("⊘", "don't ask on: whatever would ask is denied")),
        PermissionMode::BypassPermissions => Some(("⏵⏵!", "bypass permissions on")),
        // Not acceptEdits' marker: auto mode also runs commands its reviewer allows.
        PermissionMode::Auto => Some(("⏵⏵⏵", "auto mode on")),
    }
}

impl Ui {
    fn prompt(&self) -> String {
        match mode_badge(self.permissions.mode()) {
            Some((badge, _)) => format!("{badge} {PROMPT}"),
            None => PROMPT.to_string(),
        }
    }

    /// Shift+Tab: the next mode, at once (a running turn's next call is judged under it).
    fn cycle_mode(&mut self) {
        let current = self.permissions.mode();
        let next = current.next(self.bypass_allowed);
        if let Err(e) = self.permissions.set_mode(next) {
            let line = self.render.style().red(&format!("✗ {e}"));
            self.render.print(&line);
            return;
        }
        let label = match mode_badge(next) {
            Some((badge, words)) => format!("{badge} {words} (shift+tab to cycle)"),
            None => "default mode: edits and commands ask first (shift+tab to cycle)".to_string(),
        };
        let line = self.render.style().dim(&label);
        self.render.print(&line);
    }

    /// Runs `work` (a turn, or a compaction) to its end while rendering its events, answering
    /// its permission questions and turning Ctrl-C into `cancel`.
    async fn drive<F: Future>(&mut self, work: F, cancel: &CancellationToken) -> F::Output {
        // A Ctrl-C that arrived between turns belongs to no turn.
        while let Some(Some(())) = self.sigint.recv().now_or_never() {}
        let mut ticker = tokio::time::interval(TICK);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut keys = keys::TurnKeys::start();
        let ending = self.ending.token.clone();
        tokio::pin!(work);
        let output = loop {
            tokio::select! {
                biased;
                Some(event) = self.events.recv() => self.render.event(&event),
                Some(pending) = self.questions.recv() => self.answer(pending, cancel).await,
                Some(()) = self.sigint.recv() => {
                    if !cancel.is_cancelled() {
                        cancel.cancel();
                        self.render.interrupting();
                    }
                }
                () = ending.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
                output = &mut work => break output,
                _ = ticker.tick() => {
                    let pressed = keys.poll();
                    for _ in 0..pressed.shift_tabs {
                        self.cycle_mode();
                    }
                    if pressed.escape && !cancel.is_cancelled() {
                        cancel.cancel();
                        self.render.interrupting();
                    }
                    self.render.tick();
                }
            }
        };
        // Shift+Tab pressed since the last tick still counts; an Esc has nothing left to stop.
        for _ in 0..keys.poll().shift_tabs {
            self.cycle_mode();
        }
        self.type_ahead.push_str(&keys.finish());
        while let Ok(event) = self.events.try_recv() {
            self.render.event(&event);
        }
        // Questions of calls that were cancelled before anyone saw them.
        while let Ok(pending) = self.questions.try_recv() {
            pending.answer(AskAnswer::Deny(None));
        }
        self.parked.clear();
        output
    }

    /// Shows a permission question inline and reads the answer. Ctrl-C here interrupts the
    /// turn, as it would anywhere else during a turn.
    async fn answer(&mut self, pending: Pending, cancel: &CancellationToken) {
        if pending.is_stale() || cancel.is_cancelled() {
            pending.answer(AskAnswer::Deny(None));
            return;
        }
        let question = ask::question(self.render.style(), &pending.request);
        self.render.question(&question);
        let prompt = ask::answer_prompt(&pending.request);
        let ending = self.ending.token.clone();
        loop {
            let read = tokio::select! {
                read = self.editor.read(prompt) => read,
                () = ending.cancelled() => {
                    keys::restore_terminal();
                    cancel.cancel();
                    self.parked.push(pending);
                    return;
                }
            };
            let answer = match read {
                Ok(Input::Line(text)) => match ask::parse_choice(&text, &pending.request) {
                    Some(ask::Choice::AcceptEdits) => {
                        match self.permissions.set_mode(PermissionMode::AcceptEdits) {
                            Ok(()) => {
                                let line = self.render.style().dim(
                                    "Edits are allowed for the rest of this session (accept edits; shift+tab changes it).",
                                );
                                self.render.print(&line);
                            }
                            Err(e) => {
                                let line = self.render.style().red(&format!("✗ {e}"));
                                self.render.print(&line);
                            }
                        }
                        AskAnswer::AllowOnce
                    }
                    Some(ask::Choice::Answer(answer)) => {
                        if let AskAnswer::AllowRule(rule) = &answer {
                            let line = self.render.style().dim(&format!(
                                "Saved {rule} to .ouro/settings.local.json: edits there no longer ask."
                            ));
                            self.render.print(&line);
                        }
                        answer
                    }
                    None => {
                        let hint = self.render.style().dim(
                            "Type y (yes), n (no), `n, <message>` (no, and tell the model), or a (always).",
                        );
                        self.render.print(&hint);
                        continue;
                    }
                },
                Ok(Input::Interrupted) => {
                    cancel.cancel();
                    self.render.interrupting();
                    self.parked.push(pending);
                    return;
                }
                Ok(Input::CycleMode(..)) => {
                    self.cycle_mode();
                    continue;
                }
                Ok(Input::Eof) => AskAnswer::Deny(None),
                Ok(Input::Rewind) => continue,
                Err(e) => {
                    let line = self.render.style().red(&format!("✗ {e}"));
                    self.render.print(&line);
                    AskAnswer::Deny(None)
                }
            };
            pending.answer(answer);
            return;
        }
    }
}
