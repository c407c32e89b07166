//! TodoWrite, Claude Code's task list: the model keeps a visible plan. Each call sends the
//! whole list, so the latest call in the conversation is the list: a resumed session has it
//! back without storing anything else, and `/todos` reads it from there.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Progress, Tool, ToolContext, ToolError, ToolOutput};
use crate::api::types::{ContentBlock, Message};
use crate::permissions::Access;

pub const NAME: &str = "TodoWrite";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// What to do, in the imperative ("Run the tests").
    #[schemars(length(min = 1))]
    pub content: String,
    pub status: TodoStatus,
    /// The same while it is being done ("Running the tests").
    #[serde(rename = "activeForm")]
    #[schemars(length(min = 1))]
    pub active_form: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct TodoInput {
    /// The whole, updated task list.
    pub todos: Vec<Todo>,
}

pub(crate) struct TodoWriteTool;

impl Tool for TodoWriteTool {
    type Input = TodoInput;

    const NAME: &'static str = NAME;

    fn description(&self) -> &'static str {
        include_str!("../../tools/TodoWrite.md")
    }

    /// Only ouro's own state changes.
    fn access(&self, _input: &TodoInput, _ctx: &ToolContext) -> Access {
        Access::None
    }

    fn is_read_only(&self, _input: &TodoInput) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &TodoInput) -> bool {
        true
    }

    fn summary(&self, input: &TodoInput) -> String {
        let done = input
            .todos
            .iter()
            .filter(|t| t.status == TodoStatus::Completed)
            .count();
        format!("{done}/{} done", input.todos.len())
    }

    async fn call(
        &self,
        _input: TodoInput,
        _ctx: &ToolContext,
        _progress: &Progress,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::ok(
            "Todos have been modified successfully. Ensure that you continue to use the todo \
             list to track your progress. Please proceed with the current tasks if applicable",
        ))
    }
}

/// The list a TodoWrite call's input holds, if it is one.
pub fn parse(input: &Value) -> Option<Vec<Todo>> {
    serde_json::from_value::<TodoInput>(input.clone())
        .ok()
        .map(|i| i.todos)
}

/// The task list as of the end of `history`: the input of its last TodoWrite call.
pub fn latest(history: &[Message]) -> Option<Vec<Todo>> {
    history.iter().rev().find_map(|m| {
        m.content.iter().rev().find_map(|b| match b {
            ContentBlock::ToolUse { name, input, .. } if name == NAME => parse(input),
            _ => None,
        })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_last_call_in_the_conversation_is_the_list() {
        let call = |todos: Value| {
            Message::assistant(vec![ContentBlock::ToolUse {
                id: "t".into(),
                name: NAME.into(),
                input: json!({ "todos": todos }),
            }])
        };
        let first = json!([{"content": "Plan", "status": "in_progress", "activeForm": "Planning"}]);
        let second = json!([
            {"content": "Plan", "status": "completed", "activeForm": "Planning"},
            {"content": "Build", "status": "in_progress", "activeForm": "Building"}
        ]);
        let history = vec![
            call(first),
            Message::user_text("go on"),
            call(second),
            Message::user_text("and?"),
        ];
        let todos = latest(&history).unwrap();
        assert_eq!(todos.len(), 2);
        assert_eq!(todos[1].status, TodoStatus::InProgress);
        assert_eq!(todos[1].active_form, "Building");
        assert!(latest(&history[1..2]).is_none());
    }
}
