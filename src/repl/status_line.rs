//! The status line, as Claude Code's `statusLine` setting has it (`{"type": "command",
//! "command": "…", "padding": N}`): the command gets the session's JSON on stdin and the first
//! line it prints is shown, drawn again before each prompt — so after each turn and each mode
//! change. ouro prints it above the prompt (Claude Code draws it under its input box); the
//! command runs as hooks do, with the environment's secrets scrubbed, for 3 s at most.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::Repl;
use crate::settings::StatusLineSettings;

/// How long the command may take before the prompt is shown without it.
const TIMEOUT_SECS: u64 = 3;

pub(super) struct StatusLine {
    settings: Option<StatusLineSettings>,
    env_passthrough: Arc<Vec<String>>,
    started: Instant,
    /// The last failure shown, so a broken command is reported once, not at every prompt.
    failed: Option<String>,
}

impl StatusLine {
    pub(super) fn new(
        settings: Option<StatusLineSettings>,
        env_passthrough: Arc<Vec<String>>,
    ) -> StatusLine {
        StatusLine {
            settings: settings.filter(|s| {
                !s.command.trim().is_empty() && matches!(s.kind.as_str(), "" | "command")
            }),
            env_passthrough,
            started: Instant::now(),
            failed: None,
        }
    }
}

/// The first line of a command's output, without the line break and trailing blanks.
fn first_line(output: &str) -> Option<&str> {
    output
        .lines()
        .next()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
}

impl Repl {
    /// Runs the status line's command (when one is set) and shows its first line.
    pub(super) async fn draw_status_line(&mut self) {
        let Some(settings) = self.status.settings.clone() else {
            return;
        };
        let config = self.engine.config();
        let root = crate::app::project_root(&self.cwd);
        let payload = json!({
            "hook_event_name": "Status",
            "session_id": self.engine.session_id(),
            "transcript_path": self.engine.transcript_path(),
            "cwd": self.cwd,
            "model": {"id": config.model, "display_name": config.model},
            "workspace": {"current_dir": self.cwd, "project_dir": root},
            "version": env!("CARGO_PKG_VERSION"),
            "output_style": {"name": config.init_meta.output_style},
            "permission_mode": self.ui.permissions.mode().to_string(),
            "cost": {
                "total_cost_usd": self.engine.costs().total_usd(),
                "total_duration_ms": self.status.started.elapsed().as_millis() as u64,
            },
        });
        let ran = crate::exec::hooks::run_command(
            &settings.command,
            &payload,
            &root,
            &self.status.env_passthrough,
            TIMEOUT_SECS,
        )
        .await;
        match ran {
            Ok(output) => {
                self.status.failed = None;
                if let Some(line) = first_line(&output) {
                    let pad = " ".repeat(usize::from(settings.padding.unwrap_or(0)));
                    self.ui.render.print(&format!("{pad}{line}"));
                }
            }
            Err(why) => {
                if self.status.failed.as_deref() != Some(why.as_str()) {
                    let said = format!("status line: {why} (statusLine.command in the settings)");
                    let said = self.ui.render.style().dim(&said);
                    self.ui.render.print(&said);
                    self.status.failed = Some(why);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_first_line_shows() {
        assert_eq!(
            super::first_line("main ✓ $0.01  \nmore\n"),
            Some("main ✓ $0.01")
        );
        assert_eq!(super::first_line("\nlater"), None);
        assert_eq!(super::first_line(""), None);
    }
}
