//! The REPL commands about the session and the project rather than the conversation:
//! `/add-dir`, `/status`, `/context`, `/config`, `/doctor`, `/export`, `/memory`, `#note` (project memory)
//! and `!command` (a shell command whose output joins the next prompt), plus the prompts behind
//! `/init` and `/review`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::Repl;
use crate::api::models;
use crate::api::types::{ContentBlock, Message, Role};

/// The prompt `/init` sends.
pub(super) const INIT_PROMPT: &str = "Look through this project (its layout, build and test commands, code style, and anything a newcomer would trip over) and write what an agent needs to work here into OURO.md at the project root: commands first, then conventions and architecture, briefly. If OURO.md, CLAUDE.md or AGENTS.md exists, improve it instead of starting over.";

/// The prompt `/review` sends; the argument, if any, narrows it.
pub(super) const REVIEW_PROMPT: &str = "Review the current changes in this repository (run `git status` and `git diff`, and `git diff --staged`): point out bugs, risky changes, missing tests and unclear code, most important first, with file and line. Do not change any file.";

/// Output of a `!` command kept for the model, per stream.
const MAX_SHELL_OUTPUT: usize = 20_000;

impl Repl {
    /// `/add-dir <path>`: one more directory the session may work in, for the rest of it
    /// (and after `/resume`); without a path, the ones added so far.
    pub(super) fn add_dir(&mut self, path: Option<&str>) {
        let Some(path) = path else {
            let dirs = self.ui.permissions.additional_dirs().list();
            let text = if dirs.is_empty() {
                "No directories added; /add-dir <path> lets the session work in one more."
                    .to_string()
            } else {
                let listed: Vec<String> =
                    dirs.iter().map(|d| format!("  {}", d.display())).collect();
                format!("Directories besides the project:\n{}", listed.join("\n"))
            };
            self.ui.render.print(&text);
            return;
        };
        let home = dirs::home_dir();
        let typed = crate::permissions::paths::expand_home(path, home.as_deref())
            .unwrap_or_else(|| PathBuf::from(path));
        let dir = self.cwd.join(typed);
        match self.ui.permissions.add_dir(&dir) {
            Ok(Some(added)) => {
                self.options.permissions.add_dirs.push(added.clone());
                let text = format!(
                    "Added {}: tools may read there without asking and edit there with \
                     approval, as in the project.",
                    added.display()
                );
                self.ui.render.print(&text);
            }
            Ok(None) => {
                let text = format!("{} is already part of this session.", dir.display());
                self.ui.render.print(&text);
            }
            Err(e) => self.fail(&e.to_string()),
        }
    }

    /// `/status`: what this session is and where it writes.
    pub(super) fn status(&mut self) {
        let config = self.engine.config();
        let root = crate::app::project_root(&self.cwd);
        let mut out = String::new();
        let _ = writeln!(out, "Session:     {}", self.engine.session_id());
        let _ = writeln!(out, "Model:       {}", config.model);
        let _ = writeln!(out, "Permissions: {}", self.ui.permissions.mode());
        let _ = writeln!(out, "Directory:   {}", self.cwd.display());
        let _ = writeln!(out, "Project:     {}", root.display());
        match self.engine.transcript_path() {
            Some(path) => {
                let _ = writeln!(out, "Transcript:  {}", path.display());
            }
            None => {
                let _ = writeln!(out, "Transcript:  none (this session is not saved)");
            }
        }
        let _ = write!(
            out,
            "Spent:       ${:.4} in this session",
            self.engine.costs().total_usd()
        );
        self.ui.render.print(&out);
    }

    /// `/config`: the settings in force, merged, and the files they came from.
    pub(super) fn config(&mut self) {
        let text = match crate::app::load_settings(&self.options, &self.cwd) {
            Ok((layered, ignored)) => {
                let mut out = String::from("Settings files, lowest priority first:\n");
                for (source, _) in &layered.layers {
                    let _ = writeln!(out, "  {}", source.label());
                }
                if layered.layers.is_empty() {
                    out.push_str("  (none)\n");
                }
                let merged = serde_json::to_string_pretty(&layered.merged())
                    .unwrap_or_else(|e| format!("(could not show them: {e})"));
                let _ = write!(out, "In force:\n{merged}");
                if !ignored.is_empty() {
                    let _ = write!(out, "\n{}", crate::app::untrusted_notice(&ignored));
                }
                out
            }
            Err(e) => format!("The settings could not be read: {e}"),
        };
        self.ui.render.print(&text);
    }

    /// `/doctor`: what this machine and configuration give ouro, each with what to do if not.
    pub(super) async fn doctor(&mut self) {
        let transcript = self.engine.transcript_path().map(Path::to_path_buf);
        let out = crate::app::doctor::report(
            &self.options,
            &self.cwd,
            &self.endpoint.base_url,
            Some(transcript.as_deref()),
        )
        .await;
        self.ui.render.print(out.trim_end());
    }

    /// `/context`: how full the context window is, by part.
    pub(super) fn context(&mut self) {
        let window = models::context_window(&self.engine.config().model);
        let (prompt, messages) = self.engine.context_use();
        let used = prompt + messages;
        let share = |n: u64| n as f64 / window.max(1) as f64;
        let mut out = format!(
            "Context: ~{used} of {window} tokens ({:.0}%)\n{}\n",
            share(used) * 100.0,
            bar(share(used), 40)
        );
        let _ = writeln!(
            out,
            "  system prompt and tools  ~{prompt:>8} tokens  {:>5.1}%",
            share(prompt) * 100.0
        );
        let _ = write!(
            out,
            "  messages ({:>4})         ~{messages:>8} tokens  {:>5.1}%",
            self.engine.history().len(),
            share(messages) * 100.0
        );
        self.ui.render.print(&out);
    }

    /// `/export [file]`: the conversation as Markdown.
    pub(super) fn export(&mut self, file: Option<&str>) {
        let path = match file {
            Some(f) => self.cwd.join(f),
            None => self
                .cwd
                .join(format!("ouro-{}.md", self.engine.session_id())),
        };
        let text = conversation_markdown(self.engine.history());
        // Never over an existing file: `/export src/main.rs` must not destroy it.
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
        match written {
            Ok(()) => {
                let line = format!("Exported the conversation to {}.", path.display());
                self.ui.render.print(&line);
            }
            Err(e) => self.fail(&format!("Could not write {}: {e}", path.display())),
        }
    }

    /// `/memory`: the memory files in `$EDITOR` (or `$VISUAL`, or `vi`).
    pub(super) fn memory(&mut self) {
        let file = memory_file(&self.cwd);
        let editor = std::env::var("VISUAL")
            .or_else(|_| std::env::var("EDITOR"))
            .unwrap_or_else(|_| "vi".into());
        let mut words = editor.split_whitespace();
        let Some(program) = words.next() else {
            self.fail("$EDITOR is empty; set it to your editor, e.g. export EDITOR=nano.");
            return;
        };
        let status = std::process::Command::new(program)
            .args(words)
            .arg(&file)
            .status();
        match status {
            Ok(s) if s.success() => {
                let line = format!(
                    "Saved {}. It is read at the start of each session.",
                    file.display()
                );
                self.ui.render.print(&line);
            }
            Ok(s) => self.fail(&format!("{editor} ended with {s}.")),
            Err(e) => self.fail(&format!("Could not start {editor}: {e}")),
        }
    }

    /// `#note`: appended to the project's memory file, read by every later session.
    pub(super) fn remember_note(&mut self, note: &str) {
        let file = memory_file(&self.cwd);
        match append_note(&file, note) {
            Ok(()) => {
                let line = format!("Noted in {}.", file.display());
                self.ui.render.print(&line);
            }
            Err(e) => self.fail(&format!("Could not write {}: {e}", file.display())),
        }
    }

    /// `!command`: runs in the working directory like a command typed in a terminal (it is
    /// the user's own, so it is not judged or sandboxed); its output is shown and joins the
    /// next prompt, so the model knows what the user saw.
    pub(super) async fn shell(&mut self, command: &str) {
        let output = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(&self.cwd)
            .stdin(std::process::Stdio::null())
            .output()
            .await;
        let output = match output {
            Ok(o) => o,
            Err(e) => {
                self.fail(&format!("Could not run the command: {e}"));
                return;
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let shown = format!("{stdout}{stderr}");
        if !shown.trim().is_empty() {
            self.ui.render.print(shown.trim_end());
        }
        if !output.status.success() {
            let line = self
                .ui
                .render
                .style()
                .dim(&format!("(exit status {})", output.status));
            self.ui.render.print(&line);
        }
        let cut = |s: &str| crate::text::elide_middle(s, MAX_SHELL_OUTPUT);
        self.shell_context.push(format!(
            "<bash-input>{command}</bash-input>\n<bash-stdout>{}</bash-stdout>\n<bash-stderr>{}</bash-stderr>",
            cut(&stdout),
            cut(&stderr)
        ));
    }
}

/// The project memory file: the first instruction file the project root has, else OURO.md.
fn memory_file(cwd: &Path) -> PathBuf {
    let root = crate::app::project_root(cwd);
    crate::engine::prompt::INSTRUCTION_FILES
        .iter()
        .map(|name| root.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| root.join("OURO.md"))
}

fn append_note(file: &Path, note: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let existing = std::fs::read_to_string(file).unwrap_or_default();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?;
    if !existing.is_empty() && !existing.ends_with('\n') {
        f.write_all(b"\n")?;
    }
    writeln!(f, "- {}", note.trim())
}

fn bar(share: f64, width: usize) -> String {
    let filled = ((share.clamp(0.0, 1.0)) * width as f64).round() as usize;
    format!("[{}{}]", "█".repeat(filled), "░".repeat(width - filled))
}

/// The conversation as Markdown: each message under its speaker, tool calls and results as
/// code blocks.
pub(super) fn conversation_markdown(history: &[Message]) -> String {
    let mut out = String::new();
    for m in history {
        let who = match m.role {
            Role::User => "## User",
            Role::Assistant => "## Assistant",
        };
        let _ = writeln!(out, "{who}\n");
        for block in &m.content {
            match block {
                ContentBlock::Text { text } => {
                    let _ = writeln!(out, "{}\n", text.trim_end());
                }
                ContentBlock::Image { .. } => {
                    let _ = writeln!(out, "_(an image)_\n");
                }
                ContentBlock::Document { .. } => {
                    let _ = writeln!(out, "_(a document)_\n");
                }
                ContentBlock::ToolUse { name, input, .. } => {
                    let _ = writeln!(out, "Tool call: {name}\n```json\n{input}\n```\n");
                }
                ContentBlock::ToolResult {
                    content, is_error, ..
                } => {
                    let label = if *is_error {
                        "Tool error"
                    } else {
                        "Tool result"
                    };
                    let _ = writeln!(out, "{label}:\n```\n{}\n```\n", content.trim_end());
                }
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_go_to_the_existing_memory_file_on_their_own_line() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(memory_file(dir.path()), dir.path().join("OURO.md"));
        std::fs::write(dir.path().join("CLAUDE.md"), "# Rules").unwrap();
        let file = memory_file(dir.path());
        assert_eq!(file, dir.path().join("CLAUDE.md"));
        append_note(&file, " use tabs ").unwrap();
        append_note(&file, "no unwrap").unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "# Rules\n- use tabs\n- no unwrap\n"
        );
    }

    #[test]
    fn the_export_has_every_speaker_and_call() {
        let history = vec![
            Message::user_text("read it"),
            Message::assistant(vec![
                ContentBlock::text("Reading."),
                ContentBlock::ToolUse {
                    id: "t".into(),
                    name: "Read".into(),
                    input: serde_json::json!({"file_path": "/a"}),
                },
            ]),
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result("t", "1\thello", false)],
            },
        ];
        let md = conversation_markdown(&history);
        assert!(md.starts_with("## User\n\nread it"));
        assert!(md.contains("Tool call: Read") && md.contains("\"file_path\":\"/a\""));
        assert!(md.contains("Tool result:\n```\n1\thello\n```"));
    }

    #[test]
    fn the_bar_fills_by_share() {
        assert_eq!(bar(0.5, 4), "[██░░]");
        assert_eq!(bar(2.0, 2), "[██]");
    }
}
