//! `/rewind` (also Esc twice on an empty prompt): pick one of the session's prompts, then put
//! back the code, the conversation or both as they were before it. Files changed outside ouro
//! since then are named and overwritten only if the user says so; a rewound prompt comes back
//! at the input, to be edited and sent again.

use std::io::IsTerminal;

use super::Repl;
use crate::checkpoint::record::{self, Record};
use crate::checkpoint::timeline::{self, PromptEntry};

/// What to put back.
#[derive(Debug, Clone, Copy, PartialEq)]
enum What {
    Both,
    Conversation,
    Code,
}

impl Repl {
    pub(super) async fn rewind(&mut self) {
        let checkpoints = self.engine.executor().context().checkpoints.clone();
        let (Some(checkpoints), Some(path)) = (checkpoints, self.engine.transcript_path()) else {
            self.ui.render.print(
                "This session keeps no checkpoints (it is not saved, or \"checkpoints\" are off in the settings).",
            );
            return;
        };
        let records = match record::read(path) {
            Ok(records) => records,
            Err(e) => return self.fail(&format!("Could not read the checkpoints: {e}")),
        };
        let entries = timeline::prompts(checkpoints.shadow(), &records).await;
        if entries.is_empty() {
            self.ui.render.print("Nothing to rewind yet.");
            return;
        }
        let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        if !interactive {
            let text = format!(
                "{}Go back with `ouro rewind --to <number>`.",
                timeline::render(&records, &entries)
            );
            self.ui.render.print(&text);
            return;
        }
        let Some(entry) = pick_prompt(&entries).await else {
            return self.ui.render.print("Nothing was rewound.");
        };
        let record = records[entry.index].clone();
        let in_conversation =
            crate::engine::checkpoints::at_prompt(self.engine.history(), &record).is_some();
        let Some(what) = pick_what(&entry, in_conversation).await else {
            return self.ui.render.print("Nothing was rewound.");
        };
        if what != What::Conversation {
            let plan = match checkpoints.plan_restore(path, &records, entry.index).await {
                Ok(plan) => plan,
                Err(e) => return self.fail(&format!("Could not rewind the code: {e}")),
            };
            let force = if plan.outside.is_empty() {
                false
            } else {
                let names: Vec<&str> = plan.outside.iter().map(String::as_str).collect();
                let question = format!(
                    "{} changed outside ouro since then. Overwrite them too?",
                    names.join(", ")
                );
                confirm(question).await
            };
            match checkpoints.restore(&plan, force).await {
                Ok(applied) => self.ui.render.print(&applied.report()),
                Err(e) => self.fail(&format!("Could not rewind the code: {e}")),
            }
        }
        if what != What::Code {
            self.rewind_conversation(&record, entry.number);
        }
        self.engine.save_checkpoints();
    }

    fn rewind_conversation(&mut self, record: &Record, number: usize) {
        match self.engine.rewind_conversation(record) {
            Ok(prompt) => {
                self.ui.draft = prompt;
                let note = format!(
                    "The conversation now ends before prompt #{number}; that prompt is back at the input."
                );
                self.ui.render.print(&note);
            }
            Err(e) => self.fail(&format!("Could not rewind the conversation: {e}")),
        }
    }
}

async fn pick_prompt(entries: &[PromptEntry]) -> Option<PromptEntry> {
    let labels: Vec<String> = entries
        .iter()
        .map(|e| {
            let prompt = crate::text::truncate(e.prompt.lines().next().unwrap_or_default(), 60);
            let changed = match &e.changed {
                None => "checkpoints pruned".to_string(),
                Some(files) if files.is_empty() => "no files changed".to_string(),
                Some(files) => format!("changed {}", files.join(", ")),
            };
            format!("#{} {prompt}  ({changed})", e.number)
        })
        .collect();
    let last = labels.len().saturating_sub(1);
    let picked = tokio::task::spawn_blocking(move || {
        dialoguer::Select::new()
            .with_prompt("Rewind to before which prompt? (↑/↓, Enter picks, Esc cancels)")
            .items(&labels)
            .default(last)
            .report(false)
            .interact_opt()
    })
    .await;
    let index = picked.ok()?.ok()??;
    entries.get(index).cloned()
}

async fn pick_what(entry: &PromptEntry, in_conversation: bool) -> Option<What> {
    let mut choices = Vec::new();
    if in_conversation {
        choices.push((What::Both, "Restore code and conversation"));
        choices.push((What::Conversation, "Restore the conversation only"));
    }
    let code = if entry.changed.as_ref().is_some_and(Vec::is_empty) {
        "Restore code only (this prompt changed no files)"
    } else {
        "Restore code only"
    };
    choices.push((What::Code, code));
    let labels: Vec<&'static str> = choices.iter().map(|(_, label)| *label).collect();
    let picked = tokio::task::spawn_blocking(move || {
        dialoguer::Select::new()
            .with_prompt("What goes back? (Esc cancels)")
            .items(&labels)
            .default(0)
            .report(false)
            .interact_opt()
    })
    .await;
    let index = picked.ok()?.ok()??;
    choices.get(index).map(|(what, _)| *what)
}

async fn confirm(question: String) -> bool {
    tokio::task::spawn_blocking(move || {
        dialoguer::Confirm::new()
            .with_prompt(question)
            .default(false)
            .interact_opt()
    })
    .await
    .ok()
    .and_then(Result::ok)
    .flatten()
    .unwrap_or(false)
}
