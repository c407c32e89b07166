//! The task list as a checklist: drawn whenever the model updates it (TodoWrite), and by
//! `/todos`.

use serde_json::Value;

use super::Renderer;
use crate::repl::style::Style;
use crate::tools::todo::{self, Todo, TodoStatus};

/// One line per task: done ones ticked and dim, the current one bold in its "-ing" form.
pub(crate) fn checklist(todos: &[Todo], style: Style) -> String {
    if todos.is_empty() {
        return style.dim("  (the task list is empty)");
    }
    todos
        .iter()
        .map(|t| match t.status {
            TodoStatus::Completed => style.dim(&format!("  ☒ {}", t.content)),
            TodoStatus::InProgress => format!("  ◼ {}", style.bold(&t.active_form)),
            TodoStatus::Pending => format!("  ☐ {}", t.content),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Renderer {
    pub(super) fn todo_list(&mut self, input: &Value) {
        let Some(todos) = todo::parse(input) else {
            return;
        };
        self.stop_spinner();
        self.end_stream();
        let text = format!(
            "{}\n{}",
            self.style.bold("Tasks"),
            checklist(&todos, self.style)
        );
        for line in text.lines() {
            self.line(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_status_has_its_mark() {
        let todo = |content: &str, status, active: &str| Todo {
            content: content.into(),
            status,
            active_form: active.into(),
        };
        let text = checklist(
            &[
                todo("Plan", TodoStatus::Completed, "Planning"),
                todo("Build", TodoStatus::InProgress, "Building"),
                todo("Test", TodoStatus::Pending, "Testing"),
            ],
            Style::new(false),
        );
        assert_eq!(text, "  ☒ Plan\n  ◼ Building\n  ☐ Test");
    }
}
