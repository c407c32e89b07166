//! End-to-end: the prompt's keys in a pseudo-terminal (issue 15): Shift+Tab switches the
//! permission mode, `/` lists commands as they are typed, Tab completes `@` paths, and
//! `/add-dir` widens where the session may work; answers are drawn as Markdown.

use crate::common;
use crate::common::pty;

use common::{Sandbox, bodies, last_user_text, request_tool_results, server};
use pty::{Options, Term};
use serde_json::json;

const SHIFT_TAB: &str = "\x1b[Z";
const CTRL_C: &str = "\x03";

#[tokio::test(flavor = "multi_thread")]
async fn shift_tab_cycles_the_mode_and_keeps_what_was_typed() {
    let sb = Sandbox::new();
    let target = sb.root().join("made.txt");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Write", "input": {"file_path": target, "content": "made\n"}}],
         "expect_text": "hello world"},
        {"content": [{"type": "text", "text": "Written."}]}
    ]}))
    .await;
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.expect("› ");
    term.send("hello");
    term.send(SHIFT_TAB);
    term.expect("⏵⏵ accept edits on (shift+tab to cycle)");
    term.expect("⏵⏵ › hello");
    term.send(" world\r");
    // acceptEdits: the Write runs without a question.
    term.expect("Written.");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "made\n");
    assert!(!term.text().contains("Allow?"), "{}", term.text());
    assert!(last_user_text(&bodies(&mock)[0]).contains("hello world"));

    term.send(SHIFT_TAB);
    term.expect("⏸ plan mode on");
    term.submit("/status");
    term.expect("Permissions: plan");
    term.send(SHIFT_TAB);
    // Its own marker, not acceptEdits' (auto also runs the commands its reviewer allows).
    term.expect("⏵⏵⏵ auto mode on");
    term.submit("/status");
    term.expect("Permissions: auto");
    term.send(SHIFT_TAB);
    term.expect("default mode");
    term.submit("/status");
    term.expect("Permissions: default");
    term.exit();
}

#[tokio::test(flavor = "multi_thread")]
async fn shift_tab_during_a_turn_applies_to_its_next_call() {
    let sb = Sandbox::new();
    let target = sb.root().join("later.txt");
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Thinking it over."},
                     {"type": "tool_use", "name": "Write", "input": {"file_path": target, "content": "x\n"}}],
         "hold_after_events": 4},
        {"content": [{"type": "text", "text": "Done."}]}
    ]}))
    .await;
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("write it");
    term.expect("Thinking");
    term.send(SHIFT_TAB);
    term.expect("accept edits on");
    mock.release();
    term.expect("Done.");
    assert!(target.is_file());
    assert!(!term.text().contains("Allow?"), "{}", term.text());
    let results = request_tool_results(&bodies(&mock)[1]);
    assert_ne!(results[0]["is_error"], true, "{results:?}");
    term.exit();
}

#[tokio::test(flavor = "multi_thread")]
async fn typing_a_slash_lists_matching_commands_with_what_they_do() {
    let mock = server(json!({"turns": []})).await;
    let sb = Sandbox::new();
    sb.write(
        ".claude/commands/cowsay.md",
        "---\ndescription: Moo at the user\n---\nMoo\n",
    );
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    // The project's commands count once it is trusted.
    term.expect("Trust this directory");
    term.line("y");
    term.expect("› ");
    term.send("/co");
    term.expect("/compact");
    term.expect("Summarise the conversation so far");
    term.expect("/cost");
    term.expect("/cowsay");
    term.expect("Moo at the user");
    term.send(CTRL_C);
    term.send("/he");
    term.expect("List the commands");
    // Right arrow takes the first match; Enter runs it.
    term.send("\x1b[C\r");
    term.expect("Commands:");
    term.exit();
    assert!(mock.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn tab_completes_a_mentioned_path_and_the_file_is_attached() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "It defines helper."}], "expect_text": "fn helper() {}"}
    ]}))
    .await;
    let sb = Sandbox::new();
    sb.write("src/util.rs", "fn helper() {}\n");
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.expect("› ");
    term.send("what is in @sr\t");
    term.expect("@src/");
    term.send("ut\t");
    term.expect("@src/util.rs");
    term.send("?\r");
    term.expect("Attached 1 mentioned file.");
    term.expect("It defines helper.");
    term.exit();
    assert!(last_user_text(&bodies(&mock)[0]).contains("what is in @src/util.rs ?"));
}

#[tokio::test(flavor = "multi_thread")]
async fn add_dir_lets_the_session_read_another_directory_without_asking() {
    let sb = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("data.txt");
    std::fs::write(&file, "OUTSIDE-DATA\n").unwrap();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "text", "text": "Read it."}]}
    ]}))
    .await;
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit(&format!(
        "/add-dir {}",
        outside.path().join("missing").display()
    ));
    term.expect("is not a directory");
    term.submit(&format!("/add-dir {}", outside.path().display()));
    term.expect("Added");
    term.submit("/add-dir");
    term.expect("Directories besides the project:");
    term.submit("read the data");
    term.expect("Read it.");
    assert!(!term.text().contains("Allow?"), "{}", term.text());
    term.exit();
    let results = request_tool_results(&bodies(&mock)[1]);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("OUTSIDE-DATA"),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_are_rendered_as_markdown_with_highlighted_code() {
    let answer = "# Plan\n\nUse `cargo` and **care**:\n\n```rust\nfn main() { let s = \"hi\"; }\n```\n- done\n";
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": answer}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(
        &sb,
        &mock.url(),
        Options {
            args: &[],
            colour: true,
            ..Options::default()
        },
    );
    term.submit("plan it");
    term.expect("• done");
    let raw = term.raw();
    assert!(raw.contains("\x1b[1mPlan\x1b[22m"), "{raw:?}");
    assert!(raw.contains("\x1b[36mcargo\x1b[39m"), "{raw:?}");
    assert!(raw.contains("\x1b[1mcare\x1b[22m"), "{raw:?}");
    // The code line is coloured piece by piece, its fence lines are not drawn.
    let code = raw
        .lines()
        .find(|l| l.contains("main") && l.contains("\x1b[38;"))
        .unwrap_or_else(|| panic!("no highlighted code line in {raw:?}"));
    assert!(code.matches("\x1b[38;").count() >= 4, "{code:?}");
    term.exit();
}

/// Esc at an idle prompt clears what was typed and leaves the next keystroke alone: a slash
/// command typed after it is that command, not Meta+`/` and a prompt for the model.
#[tokio::test(flavor = "multi_thread")]
async fn esc_clears_the_line_and_the_next_key_is_read_as_typed() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "never asked"}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.expect("› ");
    term.send("half a thought");
    term.send("\x1b");
    std::thread::sleep(std::time::Duration::from_millis(300));
    term.send("/cost");
    term.send("\r");
    term.expect("No API calls in this session yet");
    term.send("\x1b");
    std::thread::sleep(std::time::Duration::from_millis(300));
    term.submit("/status");
    term.expect("Permissions: default");
    assert!(
        mock.requests().is_empty(),
        "a slash command went to the model"
    );
    assert!(!term.text().contains("half a thought\n"), "{}", term.text());
    term.exit();
}

#[tokio::test(flavor = "multi_thread")]
async fn lines_entered_during_a_turn_are_submitted_one_by_one_after_it() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "A slow answer."}], "hold_after_events": 3}
    ]}))
    .await;
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("first question");
    mock.wait_held(1).await;
    term.expect("Thinking");
    // Typed as a person would while the answer streams: two commands, each with its Enter.
    term.send("/cost\r");
    term.send("/exit\r");
    mock.release();
    term.expect("A slow answer.");
    term.expect("/cost");
    let status = term.wait_exit();
    assert!(status.success(), "{}", term.text());
    assert_eq!(
        bodies(&mock).len(),
        1,
        "no prompt `/cost/exit` went to the model"
    );
    assert!(!term.text().contains("/cost/exit"), "{}", term.text());
}
