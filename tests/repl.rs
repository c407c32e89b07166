//! End-to-end: the interactive REPL of the real `ouro` binary in a pseudo-terminal, against the
//! mock Messages API (issue 7).

use crate::common;
use crate::common::pty;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{Sandbox, bodies, last_user_text, request_tool_results as tool_results, server};
use ouro::exec::CANCELLED;
use pty::{Options, Term};
use serde_json::json;

fn session_id_after(text: &str, marker: &str) -> String {
    let at = text
        .rfind(marker)
        .unwrap_or_else(|| panic!("{marker:?} not in {text}"));
    text[at + marker.len()..].chars().take(36).collect()
}

fn transcript_of(sb: &Sandbox, id: &str) -> Option<PathBuf> {
    sb.transcripts()
        .into_iter()
        .find(|p| p.file_stem().is_some_and(|s| s == id))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_gets_its_answer_and_cost_prints_figures() {
    let mock = server(json!({"turns": [{
        "content": [{"type": "text", "text": "Hello from the mock."}],
        "usage": {"input_tokens": 1000, "output_tokens": 200}
    }]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(
        &sb,
        &mock.url(),
        Options {
            args: &["--model", "claude-sonnet-4-5"],
            ..Options::default()
        },
    );
    term.expect("ouro ");
    term.expect("claude-sonnet-4-5");
    term.submit("say hello");
    term.expect("Hello from the mock.");
    term.expect("claude-sonnet-4-5 · 1000 in / 200 out · $0.0060");
    term.submit("/cost");
    term.expect("claude-sonnet-4-5: 1000 in (+0 cache read, +0 cache write) / 200 out · $0.0060");
    term.exit();
    let bodies = bodies(&mock);
    assert_eq!(bodies.len(), 1);
    assert_eq!(last_user_text(&bodies[0]), "say hello");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_is_rendered_with_its_result() {
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "one\ntwo\nthree\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "text", "text": "The file has three lines."}]}
    ]}))
    .await;
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("read notes");
    term.expect(&format!("● Read({})", file.display()));
    term.expect("⎿ Read 3 lines");
    term.expect("The file has three lines.");
    term.exit();
    let results = tool_results(&bodies(&mock)[1]);
    assert_eq!(results.len(), 1);
    assert!(results[0]["content"].as_str().unwrap().contains("three"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_shows_a_coloured_diff() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "keep\nold line\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "tool_use", "name": "Edit", "input": {
            "file_path": file, "old_string": "old line", "new_string": "new line"}}]},
        {"content": [{"type": "text", "text": "Edited."}]}
    ]}))
    .await;
    let mut term = Term::start(
        &sb,
        &mock.url(),
        Options {
            args: &["--permission-mode", "acceptEdits"],
            colour: true,
            ..Options::default()
        },
    );
    term.submit("change it");
    term.expect("● Edit(");
    term.expect("-old line");
    term.expect("+new line");
    term.expect("Edited.");
    let raw = term.raw();
    assert!(raw.contains("\x1b[31m    -old line\x1b[0m"), "{raw:?}");
    assert!(raw.contains("\x1b[32m    +new line\x1b[0m"), "{raw:?}");
    term.exit();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep\nnew line\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn no_color_turns_colours_off() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "old\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "tool_use", "name": "Edit", "input": {
            "file_path": file, "old_string": "old", "new_string": "new"}}]},
        {"content": [{"type": "text", "text": "Edited."}]}
    ]}))
    .await;
    let mut term = Term::start(
        &sb,
        &mock.url(),
        Options {
            args: &["--permission-mode", "acceptEdits"],
            ..Options::default()
        },
    );
    term.submit("change it");
    term.expect("+new");
    term.expect("Edited.");
    term.exit();
    let raw = term.raw();
    for code in ["\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[1m", "\x1b[2m"] {
        assert!(!raw.contains(code), "{code:?} in {raw:?}");
    }
}

/// Processes whose command line is exactly `words`.
fn processes_running(words: &[&str]) -> usize {
    let wanted: Vec<u8> = words.join("\0").into_bytes();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.strip_suffix(b"\0").unwrap_or(&c) == wanted.as_slice())
        })
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_interrupts_a_long_bash_call_and_the_next_prompt_works() {
    // A duration no other test (or test run) uses, so the process can be found by its
    // command line.
    let seconds = format!("41.{}", std::process::id());
    let sleep = ["sleep", seconds.as_str()];
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash",
            "input": {"command": format!("echo started; {}", sleep.join(" "))}}]},
        {"content": [{"type": "text", "text": "Stopped as you asked."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(
        &sb,
        &mock.url(),
        Options {
            args: &["--allowedTools", "Bash"],
            ..Options::default()
        },
    );
    term.submit("run the slow thing");
    term.expect("● Bash(echo started;");
    term.expect("│ started");
    // `echo` prints before bash has started `sleep`: wait for it to appear.
    let appear = Instant::now() + pty::WAIT;
    while processes_running(&sleep) == 0 && Instant::now() < appear {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_running(&sleep), 1, "the command is running");
    let pressed = Instant::now();
    term.send("\x03");
    term.expect("⎿ Cancelled");
    term.expect("Interrupted.");
    term.expect("› ");
    // The command sleeps for 41 s; being back well before proves the turn was cut short.
    assert!(pressed.elapsed() < Duration::from_secs(30));
    let deadline = Instant::now() + pty::WAIT;
    while processes_running(&sleep) > 0 {
        assert!(
            Instant::now() < deadline,
            "the sleep process was not killed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    term.line("go on");
    term.expect("Stopped as you asked.");
    term.exit();
    let bodies = bodies(&mock);
    assert_eq!(bodies.len(), 2);
    let results = tool_results(&bodies[1]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["content"], CANCELLED);
    assert_eq!(results[0]["is_error"], true);
    assert!(bodies[1].to_string().contains("go on"));
}

#[tokio::test(flavor = "multi_thread")]
async fn clear_starts_a_new_session_without_calling_the_api() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "First answer."}]},
        {"content": [{"type": "text", "text": "Second answer."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    let banner = term.expect("/help lists commands");
    let first = session_id_after(&banner, "session ");
    term.submit("first question");
    term.expect("First answer.");
    term.submit("/clear");
    let cleared = term.expect("The previous one is kept");
    let second = session_id_after(&cleared, "Started a new session ");
    assert_ne!(first, second);
    assert_eq!(mock.requests().len(), 1, "/clear made no request");
    assert!(
        transcript_of(&sb, &second).is_some(),
        "{:?}",
        sb.transcripts()
    );
    term.submit("second question");
    term.expect("Second answer.");
    term.exit();
    let bodies = bodies(&mock);
    assert_eq!(
        bodies[1]["messages"].as_array().unwrap().len(),
        1,
        "history was cleared"
    );
    assert_eq!(last_user_text(&bodies[1]), "second question");
    let saved = std::fs::read_to_string(transcript_of(&sb, &second).unwrap()).unwrap();
    assert!(saved.contains("second question") && !saved.contains("first question"));
}

#[tokio::test(flavor = "multi_thread")]
async fn history_survives_a_restart() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Noted once."}]},
        {"content": [{"type": "text", "text": "Noted twice."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("remember this line");
    term.expect("Noted once.");
    term.exit();
    drop(term);
    let saved = std::fs::read_to_string(sb.home.path().join("history")).unwrap();
    assert!(saved.contains("remember this line"), "{saved}");

    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.expect("› ");
    // Arrow up twice: past `/exit` to the prompt of the earlier run.
    term.send("\x1b[A");
    term.expect("/exit");
    term.send("\x1b[A");
    term.expect("remember this line");
    term.send("\r");
    term.expect("Noted twice.");
    term.exit();
    let bodies = bodies(&mock);
    assert_eq!(last_user_text(&bodies[1]), "remember this line");
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_that_need_no_model_never_call_the_api() {
    let mock = server(json!({"turns": []})).await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("/help");
    for name in [
        "/help",
        "/clear",
        "/compact",
        "/cost",
        "/model",
        "/resume",
        "/permissions",
        "/brain",
        "/exit",
    ] {
        term.expect(name);
    }
    term.submit("/nope");
    term.expect("Unknown command /nope; /help lists the commands.");
    term.submit("/cots");
    term.expect("Unknown command /cots. Did you mean /cost? (/help lists them all)");
    term.submit("/cost");
    term.expect("No API calls in this session yet");
    term.submit("/permissions");
    term.expect("Permission mode: default");
    // With no model named, the newest Sonnet runs.
    let default = ouro::api::models::default_model();
    term.submit("/model");
    term.expect(&format!("Model: {default}."));
    term.submit("/brain");
    term.expect("claude@anthropic/");
    term.expect(&format!(
        "This session runs on ouro's engine with {default}."
    ));
    term.submit("/model opus");
    term.expect(&format!(
        "Model set to {}.",
        ouro::api::models::resolve("opus")
    ));
    term.submit("/brain claude@anthropic/claude/opus");
    term.expect("print mode only");
    term.submit("/resume");
    term.expect("Resume which session?");
    term.expect("(current)");
    term.send("\x1b");
    term.expect("Kept the current session.");
    term.exit();
    assert!(mock.requests().is_empty(), "{:?}", mock.requests());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permission_ask_answered_no_reaches_the_model_as_a_denial() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "touch made.txt"}}]},
        {"content": [{"type": "text", "text": "Understood, I did not touch it."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("make a file");
    term.expect("Permission needed");
    term.expect("touch made.txt");
    term.expect("Allow? (y/n");
    term.line("n, use the Write tool instead");
    term.expect("Understood, I did not touch it.");
    term.exit();
    assert!(!sb.root().join("made.txt").exists());
    let results = tool_results(&bodies(&mock)[1]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["is_error"], true);
    let text = results[0]["content"].as_str().unwrap();
    assert!(text.contains("was not approved"), "{text}");
    assert!(
        text.contains("The user said: use the Write tool instead"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permission_answered_always_runs_and_saves_the_rule() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "touch made.txt"}}]},
        {"content": [{"type": "text", "text": "Made it."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("make a file");
    term.expect("don't ask again for ");
    term.expect("Allow? (y/n/a)");
    term.line("a");
    term.expect("Made it.");
    term.submit("/permissions");
    term.expect("Bash(");
    term.exit();
    assert!(sb.root().join("made.txt").exists());
    let local = std::fs::read_to_string(sb.root().join(".ouro/settings.local.json")).unwrap();
    assert!(local.contains("Bash("), "{local}");
}

#[tokio::test(flavor = "multi_thread")]
async fn multi_line_input_is_one_message() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Got two lines."}]},
        {"content": [{"type": "text", "text": "Got the paste."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("first line\\");
    term.line("second line");
    term.expect("Got two lines.");
    term.expect("› ");
    // Bracketed paste, as a terminal sends it: the newline inside does not submit.
    term.send("\x1b[200~alpha\rbeta\x1b[201~");
    term.send("\r");
    term.expect("Got the paste.");
    term.exit();
    let bodies = bodies(&mock);
    assert_eq!(bodies.len(), 2);
    assert_eq!(last_user_text(&bodies[0]), "first line\nsecond line");
    assert_eq!(last_user_text(&bodies[1]), "alpha\nbeta");
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_clears_a_line_and_twice_on_an_empty_line_quits() {
    let mock = server(json!({"turns": []})).await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.expect("› ");
    term.send("typed but not sent");
    term.expect("typed but not sent");
    term.send("\x03");
    term.send("\x03");
    term.expect("Press Ctrl-C again to exit.");
    term.send("\x03");
    let status = term.wait_exit();
    assert!(status.success(), "{status:?}");
    assert!(mock.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_d_quits() {
    let mock = server(json!({"turns": []})).await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.expect("› ");
    term.send("\x04");
    assert!(term.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread")]
async fn project_commands_expand_their_arguments() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Hello, Ada."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    sb.write(
        ".ouro/commands/greet.md",
        "---\ndescription: Greet someone\n---\nSay hello to $ARGUMENTS.\n",
    );
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    // The project's commands count once it is trusted.
    term.expect("Trust this directory");
    term.line("y");
    term.submit("/help");
    term.expect("/greet [args]");
    term.expect("Greet someone");
    term.submit("/greet Ada");
    term.expect("Hello, Ada.");
    term.exit();
    assert_eq!(last_user_text(&bodies(&mock)[0]), "Say hello to Ada.");
}

#[tokio::test(flavor = "multi_thread")]
async fn model_and_brain_switches_apply_to_the_next_request() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Opus here."}]},
        {"content": [{"type": "text", "text": "Haiku here."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("/model claude-opus-4-5");
    term.expect("Model set to claude-opus-4-5.");
    term.submit("who are you");
    term.expect("Opus here.");
    term.expect("claude-opus-4-5 · ");
    term.submit("/brain ouro@anthropic/claude/haiku");
    let shown = term.expect(").");
    let model = shown
        .rsplit("(model ")
        .next()
        .unwrap()
        .trim_end_matches(").")
        .to_string();
    assert!(model.starts_with("claude-haiku"), "{shown}");
    term.submit("and now?");
    term.expect("Haiku here.");
    term.exit();
    let bodies = bodies(&mock);
    assert_eq!(bodies[0]["model"], "claude-opus-4-5");
    assert_eq!(bodies[1]["model"], model.as_str());
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_and_resume_show_the_last_exchange() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "The first answer."}]},
        {"content": [{"type": "text", "text": "Still here."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    let banner = term.expect("/help lists commands");
    let id = session_id_after(&banner, "session ");
    term.submit("the first question");
    term.expect("The first answer.");
    // Claude Code's /rename: the picker shows the name, and `--resume NAME` would find it.
    term.submit("/rename first-try");
    term.expect("This session is now called \"first-try\"");
    term.exit();
    drop(term);

    let mut term = Term::start(
        &sb,
        &mock.url(),
        Options {
            args: &["--continue"],
            ..Options::default()
        },
    );
    term.expect(&format!("session {id}"));
    term.expect("Resumed.");
    term.expect("› the first question");
    term.expect("The first answer.");
    term.submit("and now?");
    term.expect("Still here.");
    term.exit();
    drop(term);
    assert_eq!(bodies(&mock)[1]["messages"].as_array().unwrap().len(), 3);

    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("/resume");
    term.expect("Resume which session?");
    term.expect("(current)");
    term.expect(&id[..8]);
    term.expect("[first-try] the first question");
    // The earlier session is the one picked at first (not this new one): Enter loads it.
    term.send("\r");
    term.expect(&format!("Resumed session {id}"));
    term.expect("› and now?");
    term.expect("Still here.");
    // A unique prefix of the id loads it without the picker.
    term.submit(&format!("/resume {}", &id[..6]));
    term.expect(&format!("Resumed session {id}"));
    term.exit();
}

#[tokio::test(flavor = "multi_thread")]
async fn compact_summarises_with_the_given_focus() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Hi, Ada."}]},
        {"content": [{"type": "text", "text": "Summary: the user is Ada."}],
         "expect_text": "Pay particular attention to: the user's name"},
        {"content": [{"type": "text", "text": "You are Ada."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("/compact");
    term.expect("Nothing was compacted: there is too little conversation to summarise.");
    assert!(mock.requests().is_empty());
    term.submit("I am Ada");
    term.expect("Hi, Ada.");
    term.submit("/compact the user's name");
    term.expect("Compacted 2 earlier messages into a summary");
    term.submit("who am I?");
    term.expect("You are Ada.");
    term.exit();
    let bodies = bodies(&mock);
    assert_eq!(bodies.len(), 3, "{:?}", mock.requests());
    let first = &bodies[2]["messages"][0];
    assert!(
        first.to_string().contains("Summary: the user is Ada."),
        "{first}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_positional_prompt_is_the_first_message() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Started with your prompt."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(
        &sb,
        &mock.url(),
        Options {
            args: &["explain this repo"],
            ..Options::default()
        },
    );
    term.expect("Started with your prompt.");
    term.exit();
    assert_eq!(last_user_text(&bodies(&mock)[0]), "explain this repo");
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_at_a_permission_question_interrupts_the_turn() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "touch made.txt"}}]},
        {"content": [{"type": "text", "text": "Back again."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("make a file");
    term.expect("Allow? (y/n");
    term.send("\x03");
    term.expect("⎿ Cancelled");
    term.expect("Interrupted.");
    term.submit("hello");
    term.expect("Back again.");
    term.exit();
    assert!(!sb.root().join("made.txt").exists());
    let results = tool_results(&bodies(&mock)[1]);
    assert_eq!(results[0]["content"], CANCELLED);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_untrusted_directory_asks_once_and_remembers_the_answer() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "First answer."}], "expect_text": "REPO-NOTE"},
        {"content": [{"type": "text", "text": "Second answer."}], "expect_text": "REPO-NOTE"}
    ]}))
    .await;
    let sb = Sandbox::new();
    sb.write("OURO.md", "REPO-NOTE: prefer small commits.");
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.expect("Do you trust the files in");
    term.expect("If you do, these take effect: the instructions in OURO.md.");
    // ouro's home is named as it is, not as the default `~/.ouro`.
    term.expect(&format!(
        "(remembered in {}/settings.json)",
        sb.home.path().display()
    ));
    term.line("y");
    term.submit("hello");
    term.expect("First answer.");
    term.exit();
    let user = std::fs::read_to_string(sb.home.path().join("settings.json")).unwrap();
    assert!(
        user.contains(&*sb.root().to_string_lossy()),
        "trust is remembered: {user}"
    );
    // Trusted now: no question, the instructions are in.
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("again");
    term.expect("Second answer.");
    assert!(!term.text().contains("Do you trust"), "{}", term.text());
    term.exit();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_question_shows_the_diff_before_the_answer() {
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "alpha line\nsecond\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "tool_use", "name": "Edit", "input": {
            "file_path": file, "old_string": "alpha line", "new_string": "beta line"}}]},
        {"content": [{"type": "text", "text": "Left it alone."}]}
    ]}))
    .await;
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("change it");
    term.expect("Permission needed");
    term.expect("-alpha line");
    term.expect("+beta line");
    term.expect("Allow? (y/n");
    term.line("n");
    term.expect("Left it alone.");
    term.exit();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "alpha line\nsecond\n",
        "nothing changed before or after the answer"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn esc_interrupts_a_streaming_reply_and_does_not_leak_into_the_next_line() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "STREAMING-START and then a very long answer that keeps coming"}],
         "hold_after_events": 4}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("tell me a story");
    term.expect("STREAMING-START");
    term.send("\x1b");
    term.expect("Interrupted.");
    // Typed right after Esc: a command, not a message to the model.
    term.submit("/cost");
    term.expect("Session cost:");
    term.exit();
    assert_eq!(mock.requests().len(), 1, "/cost never reached the API");
}

#[tokio::test(flavor = "multi_thread")]
async fn typing_during_a_turn_waits_at_the_next_prompt() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "FIRST-ANSWER"}], "hold_after_events": 4},
        {"content": [{"type": "text", "text": "SECOND-ANSWER"}], "expect_text": "follow up"}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("first");
    term.expect("FIRS");
    term.send("follow up");
    mock.release();
    term.expect("› follow up");
    term.send("\r");
    term.expect("SECOND-ANSWER");
    term.exit();
}

#[tokio::test(flavor = "multi_thread")]
async fn workspace_commands_work_offline() {
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "x"}]}]})).await;
    let sb = Sandbox::new();
    sb.write(
        ".claude/commands/hello.md",
        "---\ndescription: Say hello from Claude's folder\n---\nSay hello\n",
    );
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    // The project's commands count once it is trusted.
    term.expect("Trust this directory");
    term.line("y");
    term.submit("/status");
    term.expect("Permissions: default");
    term.expect("Transcript:");
    term.submit("/context");
    term.expect("system prompt and tools");
    term.submit("#always run cargo fmt");
    term.expect("Noted in");
    term.submit("/export talk.md");
    term.expect("Exported the conversation to");
    term.submit("/help");
    term.expect("Say hello from Claude's folder");
    term.submit("/config");
    term.expect("In force:");
    term.submit("/doctor");
    term.expect("✓ API key: ANTHROPIC_API_KEY is set");
    term.expect("answers");
    term.expect("git:");
    term.exit();
    assert!(
        mock.requests().iter().all(|r| r.method == "GET"),
        "only /doctor's reachability check: {:?}",
        mock.requests()
    );
    let memory = std::fs::read_to_string(sb.root().join("OURO.md")).unwrap();
    assert_eq!(memory, "- always run cargo fmt\n");
    assert!(sb.root().join("talk.md").is_file());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bang_command_runs_and_its_output_joins_the_next_prompt() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "I see the marker."}], "expect_text": "BANG-MARKER-42"}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("!echo BANG-MARKER-$((40+2))");
    term.expect("BANG-MARKER-42");
    assert!(mock.requests().is_empty(), "the command alone asks nothing");
    term.submit("what did that print?");
    term.expect("I see the marker.");
    term.exit();
    let sent = last_user_text(&bodies(&mock)[0]);
    assert!(
        sent.contains("<bash-input>echo BANG-MARKER") && sent.contains("what did that print?"),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn init_and_review_ask_the_model_and_clear_resets_the_cost() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Wrote OURO.md."}], "expect_text": "OURO.md"},
        {"content": [{"type": "text", "text": "Reviewed."}], "expect_text": "git diff"}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("/init");
    term.expect("Wrote OURO.md.");
    term.submit("/review error handling");
    term.expect("Reviewed.");
    term.submit("/clear");
    term.expect("Started a new session");
    term.submit("/cost");
    term.expect("No API calls in this session yet");
    term.exit();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_command_shows_that_it_runs_and_its_output() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo STEP-ONE; sleep 2; echo STEP-TWO > made.txt"}}]},
        {"content": [{"type": "text", "text": "All done."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("run it");
    term.expect("Allow? (y/n");
    term.line("y");
    term.expect("STEP-ONE");
    // The spinner comes back while the approved command goes on.
    term.expect("Running Bash");
    term.expect("All done.");
    term.exit();
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_without_an_id_opens_the_picker() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Saved."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let first = sb
        .run(&mock.url(), &["-p", "a session to find again"])
        .await;
    assert!(first.status.success(), "{}", first.debug());
    let mut term = Term::start(
        &sb,
        &mock.url(),
        Options {
            args: &["--resume"],
            ..Options::default()
        },
    );
    term.expect("Resume which session?");
    term.expect("a session to find again");
}

#[tokio::test(flavor = "multi_thread")]
async fn always_on_an_edit_offers_the_session_or_the_folder() {
    let sb = Sandbox::new();
    let (a, b, c) = (
        sb.root().join("sub/a.txt"),
        sb.root().join("sub/b.txt"),
        sb.root().join("other/c.txt"),
    );
    std::fs::create_dir_all(sb.root().join("sub")).unwrap();
    std::fs::create_dir_all(sb.root().join("other")).unwrap();
    let write = |path: &std::path::Path| {
        json!({"content": [{"type": "tool_use", "name": "Write",
                            "input": {"file_path": path, "content": "x\n"}}]})
    };
    let text = |t: &str| json!({"content": [{"type": "text", "text": t}]});
    let mock = server(json!({"turns": [
        write(&a), text("Wrote a."), write(&b), text("Wrote b."), write(&c), text("Wrote c.")
    ]}))
    .await;
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.submit("write a");
    term.expect("Permission needed");
    term.expect("a  yes, and allow every edit for the rest of this session");
    term.expect("d  yes, and don't ask again for edits in Edit(sub/**)");
    term.line("d");
    term.expect("Saved Edit(sub/**) to .ouro/settings.local.json");
    term.expect("Wrote a.");
    // The folder's rule answers the next edit there.
    term.submit("write b");
    term.expect("Wrote b.");
    // Elsewhere it asks again; `a` allows every edit for the session.
    term.submit("write c");
    term.expect("Permission needed");
    term.line("a");
    term.expect("Edits are allowed for the rest of this session");
    term.expect("Wrote c.");
    term.exit();
    assert!(a.is_file() && b.is_file() && c.is_file());
    assert_eq!(
        term.text().matches("Permission needed").count(),
        2,
        "{}",
        term.text()
    );
    let local = std::fs::read_to_string(sb.root().join(".ouro/settings.local.json")).unwrap();
    assert!(local.contains("Edit(sub/**)"), "{local}");
}

fn pid_in(sb: &Sandbox, name: &str) -> Option<i32> {
    std::fs::read_to_string(sb.root().join(name))
        .ok()
        .and_then(|t| t.trim().parse().ok())
}

/// SIGTERM during a turn ends it as Ctrl-C would (the call's result is written, so the
/// conversation resumes whole), then the REPL exits with 143, the terminal back as it was and
/// nothing the command started left running.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_in_a_turn_ends_the_turn_then_the_repl() {
    let sb = Sandbox::new();
    let command = "setsid sleep 300 & echo $! > escaped.pid; echo $$ > shell.pid; sleep 300";
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": command}}]},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let mut term = Term::start(
        &sb,
        &mock.url(),
        Options {
            args: &["--allowedTools", "Bash"],
            ..Options::default()
        },
    );
    term.submit("run it");
    let deadline = Instant::now() + pty::WAIT;
    while pid_in(&sb, "escaped.pid").is_none() || pid_in(&sb, "shell.pid").is_none() {
        assert!(Instant::now() < deadline, "{}", term.text());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(term.is_raw(), "a turn reads keys without echo");
    // SAFETY: kill only sends a signal to our own child.
    unsafe { libc::kill(term.pid(), libc::SIGTERM) };
    let status = term.wait_exit();
    assert_eq!(status.exit_code(), 143, "{}", term.text());
    assert!(!term.is_raw(), "the terminal is back in line mode");
    for name in ["escaped.pid", "shell.pid"] {
        common::wait_gone(pid_in(&sb, name).unwrap());
    }
    assert_eq!(bodies(&mock).len(), 1, "no request after the signal");
    let transcript = std::fs::read_to_string(&sb.transcripts()[0]).unwrap();
    let lines: Vec<serde_json::Value> = transcript
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.iter().any(|l| l.to_string().contains("tool_result")),
        "the call's result is in the transcript: {transcript}"
    );
}

/// SIGHUP (the terminal closed) at the prompt, mid-line: the REPL exits with 129 at once and
/// leaves the terminal in line mode.
#[tokio::test(flavor = "multi_thread")]
async fn sighup_at_the_prompt_exits_with_the_terminal_restored() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": []})).await;
    let mut term = Term::start(&sb, &mock.url(), Options::default());
    term.expect("› ");
    term.send("half a thought");
    term.expect("half a thought");
    assert!(term.is_raw(), "the line editor has the terminal");
    // SAFETY: kill only sends a signal to our own child.
    unsafe { libc::kill(term.pid(), libc::SIGHUP) };
    let status = term.wait_exit();
    assert_eq!(status.exit_code(), 129, "{}", term.text());
    assert!(!term.is_raw(), "the terminal is back in line mode");
    assert!(bodies(&mock).is_empty());
}
