//! End-to-end in a terminal (issue 17): the task list is drawn as the model updates it, shown
//! by `/todos`, and back after `--continue`; `/agents` lists the sub-agents.

use crate::common;
use crate::common::pty;

use common::{Sandbox, server};
use pty::{Options, Term};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn the_task_list_is_drawn_kept_and_restored_on_resume() {
    let sb = Sandbox::new();
    let todos = json!([
        {"content": "Plan the change", "status": "completed", "activeForm": "Planning the change"},
        {"content": "Build it", "status": "in_progress", "activeForm": "Building it"},
        {"content": "Test it", "status": "pending", "activeForm": "Testing it"}
    ]);
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "TodoWrite", "input": {"todos": todos}}]},
        {"content": [{"type": "text", "text": "Planned."}]}
    ]}))
    .await;
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("plan the work");
    term.expect("Tasks");
    term.expect("☒ Plan the change");
    term.expect("◼ Building it");
    term.expect("☐ Test it");
    term.expect("Planned.");
    term.exit();

    let mut term = Term::start(
        &sb,
        &mock.url(),
        Options {
            args: &["--continue"],
            ..Options::default()
        },
    );
    term.submit("/todos");
    term.expect("☒ Plan the change");
    term.expect("◼ Building it");
    term.submit("/agents");
    term.expect("explore");
    term.expect("Glob, Grep, Read");
    term.expect("general-purpose");
    term.exit();
}
