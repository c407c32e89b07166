//! A sub-agent's progress under its Agent call: one indented, dim line per tool it runs, and
//! a mark when one fails. Its text stays inside the call until its report comes back.

use super::Renderer;
use crate::event::{Event, ToolStatus};

impl Renderer {
    pub(super) fn child_event(&mut self, event: &Event) {
        let line = match event {
            Event::ToolStarted { name, summary, .. } => format!("    ⎿ {name} {summary}"),
            Event::ToolFinished { name, status, .. } if *status != ToolStatus::Ok => {
                format!("    ✗ {name} failed")
            }
            _ => return,
        };
        let line = self.style.dim(line.trim_end());
        self.line(&line);
    }
}
