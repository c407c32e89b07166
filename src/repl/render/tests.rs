use std::sync::{Arc, Mutex};

use serde_json::json;

use super::*;
use crate::api::types::Usage;
use crate::event::InitInfo;
use crate::event::PhaseTimings;

#[derive(Clone, Default)]
struct Screen(Arc<Mutex<Vec<u8>>>);

impl Write for Screen {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Screen {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

fn renderer(colour: bool, live: bool) -> (Renderer, Screen) {
    let screen = Screen::default();
    (
        Renderer::new(Box::new(screen.clone()), Style::new(colour), live),
        screen,
    )
}

fn finished(id: &str, name: &str, content: &str, is_error: bool) -> Event {
    let status = if is_error {
        ToolStatus::Error
    } else {
        ToolStatus::Ok
    };
    finished_as(id, name, content, status, None)
}

fn finished_as(
    id: &str,
    name: &str,
    content: &str,
    status: ToolStatus,
    display: Option<ToolDisplay>,
) -> Event {
    Event::ToolFinished {
        id: id.into(),
        name: name.into(),
        result: ContentBlock::tool_result(id, content, status != ToolStatus::Ok),
        status,
        display,
        elapsed: Duration::from_millis(5),
        timings: PhaseTimings::default(),
    }
}

fn started(id: &str, name: &str, input: serde_json::Value, summary: &str) -> Event {
    Event::ToolStarted {
        id: id.into(),
        name: name.into(),
        input,
        summary: summary.into(),
    }
}

fn result(kind: ResultKind) -> RunResult {
    RunResult {
        kind,
        text: std::sync::Arc::new("went wrong".into()),
        session_id: "s".into(),
        num_turns: 1,
        duration: Duration::ZERO,
        api_duration: Duration::ZERO,
        stop_reason: None,
        usage: Usage {
            input_tokens: 1000,
            output_tokens: 200,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 50,
        },
        cost_usd: 0.006,
        total_cost_usd: 0.006,
        model_usage: Default::default(),
        cost_unknown: false,
        api_error_status: None,
        permission_denials: Vec::new(),
        structured_output: None,
    }
}

#[test]
fn text_streams_as_it_arrives_and_is_not_repeated_by_the_finished_block() {
    let (mut r, screen) = renderer(false, false);
    r.event(&Event::TextDelta { text: "Hel".into() });
    assert_eq!(screen.text(), "Hel");
    r.event(&Event::TextDelta { text: "lo".into() });
    r.event(&Event::AssistantBlock {
        message_id: "m".into(),
        model: "x".into(),
        block: ContentBlock::text("Hello").into(),
        usage: Usage::default(),
    });
    assert_eq!(screen.text(), "Hello\n");
}

#[test]
fn tool_call_is_one_line_with_key_argument_and_a_result_summary() {
    let (mut r, screen) = renderer(false, false);
    r.event(&started(
        "t1",
        "Read",
        json!({"file_path": "/p/a.txt"}),
        "/p/a.txt",
    ));
    r.event(&finished_as(
        "t1",
        "Read",
        "1\tone\n2\ttwo\n3\t",
        ToolStatus::Ok,
        Some(ToolDisplay::LinesRead(2)),
    ));
    assert_eq!(screen.text(), "● Read(/p/a.txt)\n  ⎿ Read 2 lines\n");
    r.event(&finished(
        "t2",
        "Read",
        "The file /p/b exists but is empty.",
        false,
    ));
    assert!(
        screen
            .text()
            .ends_with("  ⎿ The file /p/b exists but is empty.\n")
    );
}

#[test]
fn a_refusal_shows_what_the_user_said_whole() {
    let (mut r, screen) = renderer(false, false);
    let said = "no, do not touch the database; run the migration on the staging copy first and show me the plan before anything else happens";
    r.event(&started(
        "t1",
        "Bash",
        json!({"command": "migrate"}),
        "migrate",
    ));
    r.event(&finished_as(
        "t1",
        "Bash",
        &format!("This Bash call needed the user's approval (it runs a program) and was not approved. The user said: {said}"),
        ToolStatus::Denied,
        None,
    ));
    assert!(
        screen.text().contains(&format!("    You said: {said}\n")),
        "{}",
        screen.text()
    );
}

#[test]
fn the_time_shown_leaves_out_the_wait_for_approval() {
    let (mut r, screen) = renderer(false, false);
    r.event(&started("t1", "Bash", json!({"command": "make"}), "make"));
    r.event(&Event::ToolFinished {
        id: "t1".into(),
        name: "Bash".into(),
        result: ContentBlock::tool_result("t1", "built", false),
        status: ToolStatus::Ok,
        display: None,
        elapsed: Duration::from_millis(9_500),
        timings: PhaseTimings {
            permission: Duration::from_secs(8),
            execution: Duration::from_millis(1_500),
            ..PhaseTimings::default()
        },
    });
    let text = screen.text();
    assert!(text.contains("· 1.5s"), "{text}");
    assert!(!text.contains("9.5s"), "{text}");
}

#[test]
fn bash_output_is_capped_on_screen() {
    let (mut r, screen) = renderer(false, false);
    r.event(&started(
        "b",
        "Bash",
        json!({"command": "seq 100"}),
        "seq 100",
    ));
    let all: String = (1..=100).map(|i| format!("{i}\n")).collect();
    let (a, b) = all.split_at(7);
    r.event(&Event::ToolProgress {
        id: "b".into(),
        chunk: a.into(),
    });
    r.event(&Event::ToolProgress {
        id: "b".into(),
        chunk: b.into(),
    });
    r.event(&finished("b", "Bash", all.trim_end(), false));
    let text = screen.text();
    assert!(text.contains("  │ 12\n"), "{text}");
    assert!(!text.contains("  │ 13\n"), "{text}");
    assert_eq!(text.matches("more output").count(), 1, "{text}");
    assert!(text.contains("⎿ Done (100 lines of output)"), "{text}");
}

#[test]
fn partial_progress_line_is_flushed_when_the_call_ends() {
    let (mut r, screen) = renderer(false, false);
    r.event(&started(
        "b",
        "Bash",
        json!({"command": "printf x"}),
        "printf x",
    ));
    r.event(&Event::ToolProgress {
        id: "b".into(),
        chunk: "no newline".into(),
    });
    assert!(!screen.text().contains("no newline"));
    r.event(&finished("b", "Bash", "no newline", false));
    assert!(
        screen.text().contains("  │ no newline\n"),
        "{}",
        screen.text()
    );
}

#[test]
fn edit_diff_is_coloured_on_a_terminal() {
    let (mut r, screen) = renderer(true, false);
    let diff = "@@ -1,2 +1,2 @@\n keep\n-old line\n+new line";
    r.event(&finished_as(
        "e",
        "Edit",
        &format!("The file a.rs has been updated.\n\n{diff}"),
        ToolStatus::Ok,
        Some(ToolDisplay::Diff(diff.into())),
    ));
    let text = screen.text();
    assert!(text.contains("\x1b[31m    -old line\x1b[0m"), "{text:?}");
    assert!(text.contains("\x1b[32m    +new line\x1b[0m"), "{text:?}");
    assert!(
        text.contains("\x1b[36m    @@ -1,2 +1,2 @@\x1b[0m"),
        "{text:?}"
    );
}

#[test]
fn without_colour_there_are_no_escape_codes() {
    let (mut r, screen) = renderer(false, false);
    r.event(&finished_as(
        "e",
        "Edit",
        "Updated.\n\n@@ -1 +1 @@\n-a\n+b",
        ToolStatus::Ok,
        Some(ToolDisplay::Diff("@@ -1 +1 @@\n-a\n+b".into())),
    ));
    r.event(&Event::Result(result(ResultKind::Success)));
    assert!(!screen.text().contains('\x1b'), "{:?}", screen.text());
}

#[test]
fn cancelled_and_failed_calls_are_marked() {
    let (mut r, screen) = renderer(false, false);
    r.event(&finished_as(
        "a",
        "Bash",
        crate::exec::CANCELLED,
        ToolStatus::Cancelled,
        None,
    ));
    r.event(&finished("b", "Bash", "boom\nExit code 2", true));
    let text = screen.text();
    assert!(text.contains("⎿ Cancelled"), "{text}");
    assert!(text.contains("✗ boom"), "{text}");
}

#[test]
fn status_line_shows_model_tokens_and_cost() {
    let (mut r, screen) = renderer(false, false);
    r.event(&Event::Init(InitInfo {
        session_id: "s".into(),
        cwd: "/".into(),
        model: "claude-sonnet-4-5".into(),
        tools: vec![],
        permission_mode: "default".into(),
        mcp_servers: Vec::new(),
        meta: crate::event::InitMeta::default(),
    }));
    r.event(&Event::Result(result(ResultKind::Success)));
    assert_eq!(
        screen.text(),
        "claude-sonnet-4-5 · 1050 in / 200 out · $0.0060\n"
    );
}

#[test]
fn aborted_and_failed_turns_say_so_before_the_status() {
    let (mut r, screen) = renderer(false, false);
    r.event(&Event::Result(result(ResultKind::ErrorAborted)));
    r.event(&Event::Result(result(ResultKind::ErrorDuringExecution)));
    let text = screen.text();
    assert!(text.contains("Interrupted."), "{text}");
    assert!(text.contains("✗ went wrong"), "{text}");
}

#[test]
fn spinner_is_drawn_while_waiting_and_erased_by_the_first_token() {
    let (mut r, screen) = renderer(false, true);
    r.event(&Event::RequestStarted { turn: 1 });
    assert!(
        screen.text().contains("Thinking… 0s"),
        "{:?}",
        screen.text()
    );
    r.event(&Event::TextDelta { text: "Hi".into() });
    assert!(
        screen.text().ends_with("\r\x1b[2KHi"),
        "{:?}",
        screen.text()
    );
    r.tick();
    assert!(
        screen.text().ends_with("Hi"),
        "no spinner after the first token"
    );
}

#[test]
fn last_exchange_shows_the_final_prompt_and_its_answer() {
    let (mut r, screen) = renderer(false, false);
    let history = vec![
        Message::user_text("first"),
        Message::assistant(vec![ContentBlock::text("one")]),
        Message::user_text("second"),
        Message::assistant(vec![ContentBlock::ToolUse {
            id: "t".into(),
            name: "Read".into(),
            input: json!({"file_path": "x"}),
        }]),
        Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result("t", "1\tx", false)],
        },
        Message::assistant(vec![ContentBlock::text("two")]),
    ];
    r.last_exchange(&history, |name, input| {
        assert_eq!(name, "Read");
        input["file_path"].as_str().unwrap_or_default().to_string()
    });
    assert_eq!(screen.text(), "› second\n● Read(x)\ntwo\n");
}
