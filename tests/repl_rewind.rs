//! End-to-end in a terminal (issue 19): Esc twice on an empty prompt opens the rewind picker;
//! code and conversation go back, the prompt returns to the input; a file the user changed
//! since is named and kept unless the user agrees to overwrite it.

use crate::common;
use crate::common::pty;

use common::{Sandbox, bodies, server};
use pty::{Options, Term};
use serde_json::{Value, json};

const ENTER: &str = "\r";

fn edits(sb: &Sandbox) -> Value {
    let a = sb.write("a.txt", "alpha\n");
    json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": a}}]},
        {"content": [{"type": "tool_use", "name": "Edit",
                      "input": {"file_path": a, "old_string": "alpha", "new_string": "ALPHA"}}]},
        {"content": [{"type": "text", "text": "Changed it."}]},
        {"content": [{"type": "text", "text": "Asked again."}]}
    ]})
}

fn accept_edits() -> Options<'static> {
    Options {
        args: &["--permission-mode", "acceptEdits"],
        ..Options::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_twice_rewinds_code_and_conversation_and_gives_the_prompt_back() {
    let sb = Sandbox::new();
    let mock = server(edits(&sb)).await;
    let mut term = Term::start(&sb, &mock.url(), accept_edits());
    term.submit("make it loud");
    term.expect("Changed it.");
    assert_eq!(
        std::fs::read_to_string(sb.root().join("a.txt")).unwrap(),
        "ALPHA\n"
    );
    term.expect("› ");
    // Esc presses until the menu opens, each sent once the menu has had 500 ms to show after
    // the last: any two the REPL reads as separate keys within its 800 ms double-press window
    // open it, however loaded the machine (two that arrive in one read are one Esc to the line
    // editor, and a press read late starts a new pair).
    let menu = "Rewind to before which prompt?";
    let shown = |term: &Term| term.text()[term.seen()..].contains(menu);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    'pressing: while !shown(&term) {
        assert!(std::time::Instant::now() < deadline, "{}", term.text());
        term.send("\x1b");
        let wait = std::time::Instant::now() + std::time::Duration::from_millis(500);
        while std::time::Instant::now() < wait {
            if shown(&term) {
                break 'pressing;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    term.expect(menu);
    term.expect("#1 make it loud  (changed a.txt)");
    term.send(ENTER);
    term.expect("Restore code and conversation");
    term.send(ENTER);
    term.expect("Restored a.txt");
    term.expect("The conversation now ends before prompt #1");
    assert_eq!(
        std::fs::read_to_string(sb.root().join("a.txt")).unwrap(),
        "alpha\n"
    );
    // The prompt is back at the input: Enter sends it again, on a conversation without it.
    term.expect("› make it loud");
    term.send(ENTER);
    term.expect("Asked again.");
    let last = bodies(&mock).pop().unwrap();
    assert_eq!(last["messages"].as_array().unwrap().len(), 1, "{last}");
    term.exit();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_changed_outside_ouro_is_named_and_kept_when_the_user_says_no() {
    let sb = Sandbox::new();
    let mock = server(edits(&sb)).await;
    let mut term = Term::start(&sb, &mock.url(), accept_edits());
    term.submit("make it loud");
    term.expect("Changed it.");
    // The turn is over (its last checkpoint taken) once its cost line shows.
    term.expect("$0.");
    sb.write("a.txt", "the user's own\n");
    term.submit("/rewind");
    term.expect("Rewind to before which prompt?");
    term.send(ENTER);
    term.expect("Restore code only");
    // Code only: the third choice.
    term.send("\x1b[B\x1b[B");
    term.send(ENTER);
    term.expect("a.txt changed outside ouro since then. Overwrite them too?");
    term.send("n");
    term.expect("Kept a.txt as they are");
    assert_eq!(
        std::fs::read_to_string(sb.root().join("a.txt")).unwrap(),
        "the user's own\n"
    );
    term.exit();
}
