//! Print mode as Claude Code users drive it: piped input, budgets, what is said on stderr, and
//! JSON answers even when a run cannot start.

use crate::common;

use common::{Run, STREAM_JSON_IO, Sandbox, bodies, server, user_line};
use serde_json::{Value, json};

#[tokio::test]
async fn piped_text_and_the_prompt_argument_are_both_sent() {
    let mock =
        server(json!({"turns": [{"content": [{"type": "text", "text": "it is a log"}]}]})).await;
    let sb = Sandbox::new();
    let run = sb
        .run_with_stdin(
            &mock.url(),
            &["-p", "explain this"],
            b"ERROR disk full at 12:00\n",
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let sent = bodies(&mock)[0]["messages"][0]["content"].to_string();
    assert!(
        sent.contains("explain this") && sent.contains("ERROR disk full"),
        "{sent}"
    );
}

/// Print mode drives its session from one thread: while its first request waits for the answer
/// there is no async worker thread (tokio's threads would be its workers or its blocking pool,
/// which nothing has used yet with checkpoints off), and Ctrl-C still ends it at once.
#[tokio::test]
async fn print_mode_waits_for_its_answer_without_async_workers() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "never"}], "hold_after_events": 0}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.command(&mock.url(), &["-p", "--output-format", "stream-json", "hi"]);
    cmd.env("OURO_CHECKPOINTS", "0");
    let ouro = common::Watched::spawn(cmd);
    mock.wait_held(1).await;
    let threads: Vec<String> = std::fs::read_dir(format!("/proc/{}/task", ouro.pid()))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .collect();
    assert!(!threads.is_empty());
    assert!(
        !threads.iter().any(|name| name.starts_with("tokio")),
        "threads while the first request waits: {threads:?}"
    );
    ouro.interrupt();
    let run = ouro.finish(std::time::Duration::from_secs(15)).await;
    assert_eq!(run.status.code(), Some(130), "{}", run.debug());
}

/// A harness that leaves stdin open and says nothing: the prompt argument goes alone once stdin
/// stayed silent for the wait (3 s); text that starts flowing within it is read to the end.
#[tokio::test]
async fn silent_stdin_is_given_up_on_and_slow_stdin_is_read_to_the_end() {
    use tokio::io::AsyncWriteExt;
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "alone"}]},
        {"content": [{"type": "text", "text": "with the log"}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.command(&mock.url(), &["-p", "explain this"]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let held_open = child.stdin.take().unwrap();
    let silent = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("ouro waited for a silent stdin forever")
        .unwrap();
    drop(held_open);
    let silent = Run::from(silent);
    assert!(silent.status.success(), "{}", silent.debug());
    assert_eq!(silent.stdout.trim(), "alone", "{}", silent.debug());
    assert_eq!(
        bodies(&mock)[0]["messages"][0]["content"][0]["text"],
        "explain this"
    );

    let mut child = sb
        .command(&mock.url(), &["-p", "explain this"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stdin.write_all(b"ERROR disk").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stdin.write_all(b" full\n").await.unwrap();
    drop(stdin);
    let slow = Run::from(child.wait_with_output().await.unwrap());
    assert!(slow.status.success(), "{}", slow.debug());
    assert_eq!(
        bodies(&mock)[1]["messages"][0]["content"][0]["text"],
        "explain this\n\nERROR disk full\n"
    );
}

#[tokio::test]
async fn max_turns_zero_makes_no_call() {
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "x"}]}]})).await;
    let sb = Sandbox::new();
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "--max-turns", "0", "hi"],
        )
        .await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "error_max_turns");
    assert!(mock.requests().is_empty());
}

/// As Claude Code: with stream-json input too, the exit status is the last turn's, 1 after an
/// error result (the Agent SDKs raise it as the process's error) and 0 after a success.
#[tokio::test]
async fn stream_json_input_exits_1_after_an_error_result_and_0_after_a_success() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "fine"}]},
        {"content": [{"type": "text", "text": "fine"}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let args = [&STREAM_JSON_IO[..], &["--max-turns", "0"]].concat();
    let failed = sb
        .run_with_stdin(&mock.url(), &args, user_line("hi").as_bytes())
        .await;
    assert_eq!(
        failed.result()["subtype"],
        "error_max_turns",
        "{}",
        failed.debug()
    );
    assert_eq!(failed.status.code(), Some(1), "{}", failed.debug());
    let fine = sb
        .run_with_stdin(&mock.url(), &STREAM_JSON_IO, user_line("hi").as_bytes())
        .await;
    assert_eq!(fine.result()["subtype"], "success", "{}", fine.debug());
    assert!(fine.status.success(), "{}", fine.debug());
}

#[tokio::test]
async fn retries_are_said_on_stderr_without_verbose() {
    let mock = server(
        json!({"turns": [{"content": [{"type": "text", "text": "fine"}],
        "faults": [{"kind": "http", "status": 529}]}]}),
    )
    .await;
    let sb = Sandbox::new();
    let run = sb.run(&mock.url(), &["-p", "hi"]).await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.stdout.trim(), "fine");
    assert!(
        run.stderr.contains("overloaded") && run.stderr.contains("retry 1/10"),
        "{}",
        run.debug()
    );
}

#[tokio::test]
async fn an_unreachable_api_is_one_clear_sentence() {
    let sb = Sandbox::new();
    let run = sb
        .run("http://127.0.0.1:9", &["-p", "--max-retries", "0", "hi"])
        .await;
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr.contains("could not reach the API"),
        "{}",
        run.debug()
    );
    assert!(!run.stderr.contains(".."), "{}", run.debug());
}

#[tokio::test]
async fn json_output_without_a_key_is_still_a_json_result() {
    let sb = Sandbox::new();
    for format in ["json", "stream-json"] {
        let mut cmd = sb.command(
            "http://127.0.0.1:9",
            &["-p", "--output-format", format, "hi"],
        );
        cmd.env_remove("ANTHROPIC_API_KEY");
        let run = Run::from(cmd.output().await.unwrap());
        assert_eq!(run.status.code(), Some(1), "{}", run.debug());
        let result = run.result();
        assert_eq!(result["is_error"], true);
        assert!(
            result["result"]
                .as_str()
                .unwrap()
                .contains("ANTHROPIC_API_KEY"),
            "{result}"
        );
        assert_eq!(result["total_cost_usd"].to_string(), "0.0");
    }
}

#[tokio::test]
async fn costs_are_never_negative_zero() {
    // No response at all: nothing was spent, which is 0.0 (an empty float sum is -0.0).
    let sb = Sandbox::new();
    let run = sb
        .run(
            "http://127.0.0.1:9",
            &["-p", "--output-format", "json", "--max-retries", "0", "hi"],
        )
        .await;
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["total_cost_usd"].to_string(), "0.0", "{result}");
}

#[tokio::test]
async fn verbose_says_a_denial_once() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "rm -rf build"}}]},
        {"content": [{"type": "text", "text": "ok"}]}
    ]}))
    .await;
    let run = sb.run(&mock.url(), &["-p", "--verbose", "clean"]).await;
    assert!(run.status.success(), "{}", run.debug());
    let denials = run.stderr.matches("✗").count();
    assert_eq!(denials, 1, "{}", run.debug());
}

const JSON: &[&str] = &["-p", "--output-format", "json"];

fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    JSON.iter().copied().chain(extra.iter().copied()).collect()
}

fn ok_turn() -> Value {
    json!({"turns": [{"content": [{"type": "text", "text": "ok"}]}]})
}

#[tokio::test]
async fn system_prompt_flags_replace_and_append() {
    let sb = Sandbox::new();
    let mock = server(ok_turn()).await;
    let run = sb
        .run(
            &mock.url(),
            &with(&[
                "--system-prompt",
                "You are a terse pirate.",
                "--append-system-prompt",
                "Always answer in French.",
                "hi",
            ]),
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let system = &bodies(&mock)[0]["system"];
    let first = system[0]["text"].as_str().unwrap();
    assert!(first.starts_with("You are a terse pirate."), "{first}");
    assert!(first.ends_with("Always answer in French."), "{first}");
    assert!(
        !system.to_string().contains("ouro"),
        "ouro's own prompt is replaced: {system}"
    );

    let sb = Sandbox::new();
    let file = sb.write("extra.md", "Mention the tests.");
    let mock = server(ok_turn()).await;
    let run = sb
        .run(
            &mock.url(),
            &with(&["--append-system-prompt-file", file.to_str().unwrap(), "hi"]),
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let first = bodies(&mock)[0]["system"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(first.ends_with("Mention the tests."), "{first}");
}

#[tokio::test]
async fn add_dir_lets_the_session_read_another_directory() {
    let sb = Sandbox::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().canonicalize().unwrap().join("notes.txt");
    std::fs::write(&outside, "far away\n").unwrap();
    let scenario = json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": outside}}]},
        {"content": [{"type": "text", "text": "done"}]}
    ]});
    let mock = server(scenario.clone()).await;
    let run = sb
        .run(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "read it",
            ],
        )
        .await;
    assert_eq!(
        run.tool_results()[0]["is_error"],
        true,
        "outside the project: {}",
        run.debug()
    );
    let mock = server(scenario).await;
    let dir = elsewhere.path().to_str().unwrap();
    let run = sb
        .run(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--add-dir",
                dir,
                "read it",
            ],
        )
        .await;
    let result = &run.tool_results()[0];
    assert_ne!(result["is_error"], true, "{}", run.debug());
    assert!(result["content"].to_string().contains("far away"));
}

#[tokio::test]
async fn settings_flag_adds_a_layer_and_sources_can_be_limited() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "alpha\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--settings",
                r#"{"permissions": {"deny": ["Read"]}}"#,
                "read",
            ],
        )
        .await;
    assert_eq!(run.tool_results()[0]["is_error"], true, "{}", run.debug());

    let run = sb
        .run(
            &mock.url(),
            &with(&["--setting-sources", "user,bogus", "hi"]),
        )
        .await;
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr
            .contains("--setting-sources takes user, project and local"),
        "{}",
        run.debug()
    );
}

#[tokio::test]
async fn claude_code_project_settings_are_read_and_typos_are_named() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "alpha\n");
    sb.write(
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Read"]}, "env": {"X": "1"}}"#,
    );
    sb.write(
        ".ouro/settings.json",
        r#"{"permisions": {"allow": ["Bash"]}}"#,
    );
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "stream-json", "--verbose", "read"],
        )
        .await;
    assert_eq!(
        run.tool_results()[0]["is_error"],
        true,
        "the .claude deny rule holds: {}",
        run.debug()
    );
    assert!(
        run.stderr.contains("unknown setting \"permisions\"")
            && run.stderr.contains("did you mean \"permissions\"")
            && run.stderr.contains(".ouro/settings.json"),
        "{}",
        run.debug()
    );
    assert!(
        !run.stderr.contains("\"env\""),
        "Claude Code's own keys are not typos: {}",
        run.debug()
    );
}

#[tokio::test]
async fn session_id_fork_and_no_persistence() {
    let sb = Sandbox::new();
    let id = "123e4567-e89b-12d3-a456-426614174000";
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "one"}]},
        {"content": [{"type": "text", "text": "two"}]},
        {"content": [{"type": "text", "text": "three"}]}
    ]}))
    .await;
    let run = sb
        .run(&mock.url(), &with(&["--session-id", id, "first"]))
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(common::session_id(&run), id);
    assert!(sb.transcripts()[0].ends_with(format!("{id}.jsonl")));
    let again = sb.run(&mock.url(), &with(&["--session-id", id, "x"])).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(again.stdout.contains("already exists"), "{}", again.debug());
    let bad = sb
        .run(&mock.url(), &with(&["--session-id", "nope", "x"]))
        .await;
    assert!(bad.stdout.contains("not a UUID"), "{}", bad.debug());

    let original = std::fs::read_to_string(&sb.transcripts()[0]).unwrap();
    let fork = sb
        .run(
            &mock.url(),
            &with(&["--resume", id, "--fork-session", "second"]),
        )
        .await;
    assert!(fork.status.success(), "{}", fork.debug());
    assert_ne!(common::session_id(&fork), id);
    let kept = sb
        .transcripts()
        .into_iter()
        .find(|p| p.ends_with(format!("{id}.jsonl")))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(kept).unwrap(),
        original,
        "the original is untouched"
    );
    let forked = bodies(&mock)[1]["messages"].to_string();
    assert!(
        forked.contains("first") && forked.contains("second"),
        "{forked}"
    );

    let before = sb.transcripts().len();
    let run = sb
        .run(&mock.url(), &with(&["--no-session-persistence", "third"]))
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(sb.transcripts().len(), before);
}

#[tokio::test]
async fn partial_messages_wrap_the_raw_stream_events() {
    let sb = Sandbox::new();
    let mock = server(ok_turn()).await;
    let run = sb
        .run(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "hi",
            ],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let events = run.of_type("stream_event", None);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"message_start"));
    assert!(
        kinds.contains(&"content_block_delta") && kinds.last() == Some(&"message_stop"),
        "{kinds:?}"
    );
    assert!(
        events
            .iter()
            .all(|e| e["parent_tool_use_id"].is_null() && e["session_id"].is_string())
    );
    let plain = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "stream-json", "--verbose", "hi"],
        )
        .await;
    assert!(plain.of_type("stream_event", None).is_empty());
}

#[tokio::test]
async fn auth_token_and_custom_headers_are_sent() {
    let sb = Sandbox::new();
    let mock = server(ok_turn()).await;
    let mut cmd = sb.command(&mock.url(), &["-p", "hi"]);
    cmd.env_remove("ANTHROPIC_API_KEY")
        .env("ANTHROPIC_AUTH_TOKEN", "gateway-token")
        .env("ANTHROPIC_CUSTOM_HEADERS", "X-Team: blue\nX-Trace: 42");
    let run = Run::from(cmd.output().await.unwrap());
    assert!(run.status.success(), "{}", run.debug());
    let headers = &mock.requests()[0].headers;
    assert_eq!(headers["authorization"], "Bearer gateway-token");
    assert!(!headers.contains_key("x-api-key"));
    assert_eq!(
        (headers["x-team"].as_str(), headers["x-trace"].as_str()),
        ("blue", "42")
    );
}

#[tokio::test]
async fn debug_version_skip_permissions_and_trailing_prompts() {
    let sb = Sandbox::new();
    let mock = server(ok_turn()).await;
    let run = sb.run(&mock.url(), &["-p", "-d", "hi"]).await;
    assert!(run.status.success(), "{}", run.debug());
    assert!(run.stderr.contains("DEBUG"), "{}", run.debug());
    let version = sb.run(&mock.url(), &["-v"]).await;
    assert!(version.stdout.starts_with("ouro "), "{}", version.debug());

    let skip = sb
        .run(
            &mock.url(),
            &with(&["--dangerously-skip-permissions", "hi"]),
        )
        .await;
    let bypass = sb
        .run(
            &mock.url(),
            &with(&["--permission-mode", "bypassPermissions", "hi"]),
        )
        .await;
    assert_eq!(
        skip.status.code(),
        bypass.status.code(),
        "{}\n{}",
        skip.debug(),
        bypass.debug()
    );

    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "ok"}], "expect_text": "say hello"}]})).await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--allowedTools", "Read", "Grep", "say hello"],
        )
        .await;
    assert!(
        run.status.success(),
        "the last value is the prompt: {}",
        run.debug()
    );
}

#[tokio::test]
async fn a_session_started_in_a_subdirectory_works_on_the_git_root() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.root().join(".git")).unwrap();
    sb.write(
        ".ouro/settings.json",
        r#"{"permissions": {"deny": ["Grep"]}}"#,
    );
    sb.write("OURO.md", "Root instructions: use tabs.");
    sb.write("src/OURO.md", "Src instructions: no unwrap.");
    let top = sb.write("top.txt", "at the root\n");
    sb.write("src/lib.rs", "fn main() {}\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": top}},
                     {"type": "tool_use", "name": "Grep", "input": {"pattern": "main"}}]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let mut cmd = sb.command(
        &mock.url(),
        &[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--trust-project",
            "look",
        ],
    );
    cmd.current_dir(sb.root().join("src"));
    let run = Run::from(cmd.output().await.unwrap());
    assert!(run.status.success(), "{}", run.debug());
    // Results arrive in completion order; find each by its call.
    let result_of = |id: &str| {
        run.tool_results()
            .into_iter()
            .find(|r| r["tool_use_id"] == id)
            .unwrap()
    };
    let read = result_of("toolu_mock_0000_00");
    let grep = result_of("toolu_mock_0000_01");
    assert_ne!(
        read["is_error"],
        true,
        "the root is in the project: {}",
        run.debug()
    );
    assert_eq!(
        grep["is_error"],
        true,
        "the root's deny rule holds: {}",
        run.debug()
    );
    let system = bodies(&mock)[0]["system"].to_string();
    assert!(
        system.contains("Root instructions") && system.contains("Src instructions"),
        "{system}"
    );
    assert!(system.find("Root instructions") < system.find("Src instructions"));
}

#[tokio::test]
async fn verbose_narration_names_each_result_and_shows_text_between_calls() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "alpha\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Let me look first."},
                     {"type": "tool_use", "name": "Read", "input": {"file_path": file}},
                     {"type": "tool_use", "name": "Edit", "input": {"file_path": 7}}]},
        {"content": [{"type": "text", "text": "FINAL-ANSWER"}]}
    ]}))
    .await;
    let run = sb.run(&mock.url(), &["-p", "--verbose", "go"]).await;
    assert!(run.status.success(), "{}", run.debug());
    assert!(
        run.stderr.contains("✻ Let me look first."),
        "{}",
        run.debug()
    );
    assert!(run.stderr.contains("⎿ Read: 1\talpha"), "{}", run.debug());
    assert!(
        run.stderr.contains("✗ Edit: "),
        "a refused input still names its tool: {}",
        run.debug()
    );
    assert!(
        !run.stderr.contains("FINAL-ANSWER"),
        "the answer goes to stdout only"
    );
    assert_eq!(run.stdout.trim(), "FINAL-ANSWER");
}

/// As Claude Code: an object schema is the input of a StructuredOutput tool. A call that does
/// not match is refused with what is wrong (and the model calls again); the first accepted
/// call ends the run with `structured_output`; five refusals end it with
/// `error_max_structured_output_retries`.
#[tokio::test]
async fn json_schema_is_answered_through_the_structured_output_tool() {
    let schema =
        r#"{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}"#;
    let call = |input: Value| json!({"content": [{"type": "tool_use", "name": "StructuredOutput", "input": input}]});
    let mock = server(json!({"turns": [
        call(json!({"count": "three"})),
        {"expect_text": "does not match", "content": [{"type": "tool_use", "name": "StructuredOutput", "input": {"count": 3}}]},
        {"content": [{"type": "text", "text": "never asked"}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(&mock.url(), &with(&["--json-schema", schema, "count them"]))
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["structured_output"], json!({"count": 3}));
    assert_eq!(bodies(&mock).len(), 2, "the accepted call ends the run");
    let tools = bodies(&mock)[0]["tools"].to_string();
    assert!(
        tools.contains("StructuredOutput") && tools.contains("\"count\""),
        "{tools}"
    );

    let refusals: Vec<Value> = (0..6).map(|_| call(json!({"count": "many"}))).collect();
    let mock = server(json!({ "turns": refusals })).await;
    let run = sb
        .run(&mock.url(), &with(&["--json-schema", schema, "count them"]))
        .await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "error_max_structured_output_retries");
    assert_eq!(bodies(&mock).len(), 5);
}

#[tokio::test]
async fn json_schema_checks_the_answer_and_retries_once() {
    let schema =
        r#"{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}"#;
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "There are three."}]},
        {"content": [{"type": "text", "text": "```json\n{\"count\": 3}\n```"}], "expect_text": "could not be used"}
    ]}))
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(&mock.url(), &with(&["--json-schema", schema, "count them"]))
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["structured_output"], json!({"count": 3}));
    let system = bodies(&mock)[0]["system"].to_string();
    assert!(
        system.contains("\\\"count\\\""),
        "the schema is in the system prompt: {system}"
    );

    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "no"}]},
        {"content": [{"type": "text", "text": "still no"}]}
    ]}))
    .await;
    let run = sb
        .run(&mock.url(), &with(&["--json-schema", schema, "count them"]))
        .await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "error_max_structured_output_retries");
    assert!(result.get("structured_output").is_none());
}

#[tokio::test]
async fn a_home_that_is_a_repository_does_not_adopt_the_folders_below_it() {
    let sb = Sandbox::new();
    let home = sb.home.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join(".git")).unwrap();
    std::fs::write(home.join("CLAUDE.md"), "HOME-INSTRUCTIONS").unwrap();
    let work = home.join("Downloads/unpacked");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("CLAUDE.md"), "UNPACKED-INSTRUCTIONS").unwrap();
    let mock = server(ok_turn()).await;
    let mut cmd = sb.command(&mock.url(), &["-p", "hi"]);
    cmd.current_dir(&work);
    let run = Run::from(cmd.output().await.unwrap());
    assert!(run.status.success(), "{}", run.debug());
    let system = bodies(&mock)[0]["system"].to_string();
    assert!(
        !system.contains("HOME-INSTRUCTIONS") && !system.contains("UNPACKED-INSTRUCTIONS"),
        "an untrusted folder under a repository home is its own, untrusted project: {system}"
    );
}

/// An untrusted directory's instructions count once the user names its settings in
/// `--setting-sources` (as an Agent SDK program does with `setting_sources=["project"]`), and
/// not otherwise.
#[tokio::test]
async fn naming_project_settings_sources_is_consent_for_the_directory() {
    let sb = Sandbox::new();
    sb.write("CLAUDE.md", "PROJECT-INSTRUCTIONS");
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "one"}]},
        {"content": [{"type": "text", "text": "two"}]},
        {"content": [{"type": "text", "text": "three"}]}
    ]}))
    .await;
    for (args, read) in [
        (vec!["-p", "hi"], false),
        (vec!["-p", "--setting-sources", "user", "hi"], false),
        (vec!["-p", "--setting-sources", "user,project", "hi"], true),
    ] {
        let before = bodies(&mock).len();
        let run = sb.run(&mock.url(), &args).await;
        assert!(run.status.success(), "{}", run.debug());
        let system = bodies(&mock)[before]["system"].to_string();
        assert_eq!(system.contains("PROJECT-INSTRUCTIONS"), read, "{args:?}");
    }
}

#[tokio::test]
async fn a_claude_settings_file_ouro_cannot_read_does_not_stop_it() {
    let sb = Sandbox::new();
    sb.write(
        ".claude/settings.json",
        r#"{"sandbox": {"network": {"allowUnixSockets": ["/var/run/docker.sock"]}}}"#,
    );
    let mock = server(ok_turn()).await;
    let run = sb.run(&mock.url(), &["-p", "hi"]).await;
    assert!(run.status.success(), "{}", run.debug());
    assert!(
        run.stderr.contains(".claude/settings.json")
            && run
                .stderr
                .contains("This session runs without the project settings"),
        "{}",
        run.debug()
    );
}

#[tokio::test]
async fn an_invalid_ouro_settings_file_is_left_out_loudly_with_its_line_and_column() {
    let sb = Sandbox::new();
    sb.write(".ouro/settings.json", "{\n  \"model\": \"x\",\n  oops\n}\n");
    sb.write(".claude/settings.local.json", "{\"permissions\": [}");
    let mock = server(ok_turn()).await;
    let run = sb.run(&mock.url(), &["-p", "hi", "--trust-project"]).await;
    assert!(run.status.success(), "{}", run.debug());
    for (file, place) in [
        (".ouro/settings.json", "line 3 column 3"),
        (".claude/settings.local.json", "line 1 column"),
    ] {
        let line = run
            .stderr
            .lines()
            .find(|l| l.contains(file))
            .unwrap_or_else(|| panic!("{file}: {}", run.debug()));
        assert!(line.starts_with("ouro: warning: "), "{line}");
        assert!(line.contains(place), "{line}");
        assert!(line.contains("This session runs without the"), "{line}");
    }
}

/// `--debug-to-stderr`, which the Agent SDKs pass when a program reads the CLI's stderr, is
/// accepted and logs there; `--debug-file` logs to its file instead.
#[tokio::test]
async fn debug_to_stderr_is_accepted_and_logs_on_stderr() {
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "hi"}]}]})).await;
    let sb = Sandbox::new();
    let run = sb
        .run(&mock.url(), &["-p", "--debug-to-stderr", "hello"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.stdout.trim(), "hi");
    assert!(run.stderr.contains("DEBUG"), "{}", run.debug());

    // Claude Code's --debug-file: the same lines, in that file, none on stderr.
    let log = sb.root().join("debug.log");
    let log_arg = log.display().to_string();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "hi"}]}]})).await;
    let run = sb
        .run(&mock.url(), &["-p", "hello", "--debug-file", &log_arg])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert!(!run.stderr.contains("DEBUG"), "{}", run.debug());
    assert!(std::fs::read_to_string(&log).unwrap().contains("DEBUG"));
    let nowhere = sb
        .run(
            &mock.url(),
            &["-p", "hello", "--debug-file", "/no/such/dir/x.log"],
        )
        .await;
    assert_eq!(nowhere.status.code(), Some(1), "{}", nowhere.debug());
    assert!(
        nowhere.stderr.contains("--debug-file /no/such/dir/x.log"),
        "{}",
        nowhere.debug()
    );
}

#[tokio::test]
async fn claude_code_subcommands_ouro_lacks_are_refused_by_name_never_sent_as_prompts() {
    let api = server(json!({"turns": []})).await;
    let sb = Sandbox::new();
    for (args, name) in [
        (&["update"][..], "update (upgrade)"),
        (&["upgrade"][..], "update (upgrade)"),
        (&["auth", "login"][..], "auth"),
        (&["kill", "abc"][..], "stop (kill)"),
        (&["ultrareview"][..], "ultrareview"),
        (&["install", "stable"][..], "install"),
        (&["config", "set", "-g", "theme", "dark"][..], "config"),
        (&["setup-token"][..], "setup-token"),
        (&["migrate-installer"][..], "migrate-installer"),
        (&["plugin", "list"][..], "plugin"),
    ] {
        let run = sb.run(&api.url(), args).await;
        assert_eq!(run.status.code(), Some(1), "{args:?}: {}", run.debug());
        assert!(
            run.stderr.contains(&format!(
                "`{name}` is a Claude Code command ouro does not have"
            )),
            "{args:?}: {}",
            run.debug()
        );
    }
    assert!(bodies(&api).is_empty(), "nothing went to the model");

    // A script checking the setup notices a failed line: no API answers here.
    let failing = sb.run("http://127.0.0.1:9", &["doctor"]).await;
    assert_eq!(failing.status.code(), Some(1), "{}", failing.debug());
    assert!(failing.stdout.contains('✗'), "{}", failing.debug());
    let doctor = sb.run(&api.url(), &["doctor"]).await;
    assert!(doctor.status.success(), "{}", doctor.debug());
    for line in [
        "✓ API key: ANTHROPIC_API_KEY is set",
        "answers",
        "Sandbox: ",
        "Settings: ",
    ] {
        assert!(doctor.stdout.contains(line), "{line}: {}", doctor.debug());
    }
    assert!(bodies(&api).is_empty());
}

#[tokio::test]
async fn newer_claude_code_flags_are_refused_by_name_and_manual_is_default() {
    let api = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Manual works."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    for given in [
        &["--safe-mode"][..],
        &["--restricted"][..],
        &["--permission-prompts", "x"][..],
        &["--autocompact", "auto"][..],
        &["--ide"][..],
    ] {
        let flag = given[0];
        let run = sb
            .run(&api.url(), &[&["-p", "hi"][..], given].concat())
            .await;
        assert_eq!(run.status.code(), Some(1), "{flag}: {}", run.debug());
        assert!(
            run.stderr
                .contains(&format!("ouro does not support {flag}")),
            "{flag}: {}",
            run.debug()
        );
    }
    let run = sb
        .run(&api.url(), &["-p", "hi", "--permission-mode", "manual"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.stdout.trim(), "Manual works.");
}

#[tokio::test]
async fn flags_that_would_do_nothing_say_so() {
    let api = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Ran."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let missing = sb
        .run(&api.url(), &["-p", "hi", "--add-dir", "/no/such/dir"])
        .await;
    assert_eq!(missing.status.code(), Some(1), "{}", missing.debug());
    assert!(
        missing
            .stderr
            .contains("--add-dir /no/such/dir: there is no such directory")
    );
    let fork = sb.run(&api.url(), &["-p", "hi", "--fork-session"]).await;
    assert_eq!(fork.status.code(), Some(1), "{}", fork.debug());
    assert!(
        fork.stderr.contains("--fork-session copies the session"),
        "{}",
        fork.debug()
    );
    let tools = sb
        .run(&api.url(), &["-p", "hi", "--tools", "Read,Teleport"])
        .await;
    assert!(tools.status.success(), "{}", tools.debug());
    assert!(
        tools
            .stderr
            .contains("--tools names `Teleport` that ouro does not have"),
        "{}",
        tools.debug()
    );
    assert_eq!(bodies(&api).len(), 1, "only the last run reached the model");
}

#[tokio::test]
async fn an_unknown_model_in_print_mode_is_said_not_billed_as_free_silently() {
    let api = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Fine."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(&api.url(), &["-p", "hi", "--model", "claude-imaginary-9"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert!(
        run.stderr
            .contains("claude-imaginary-9 is not a model ouro knows a price for"),
        "{}",
        run.debug()
    );
}

#[tokio::test]
async fn the_same_retry_error_is_said_once_then_briefly() {
    let mock = server(
        json!({"turns": [{"content": [{"type": "text", "text": "fine"}],
        "faults": [{"kind": "http", "status": 529}, {"kind": "http", "status": 529},
                   {"kind": "http", "status": 529}]}]}),
    )
    .await;
    let sb = Sandbox::new();
    let run = sb.run(&mock.url(), &["-p", "hi"]).await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(
        run.stderr.matches("overloaded").count(),
        1,
        "{}",
        run.debug()
    );
    assert!(
        run.stderr.contains("· the same again; retry 2/10"),
        "{}",
        run.debug()
    );
    assert!(
        run.stderr.contains("· the same again; retry 3/10"),
        "{}",
        run.debug()
    );
}

#[test]
fn every_refused_claude_code_flag_is_named_in_help_and_refused_with_its_reason() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_ouro"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    for (flag, why) in ouro::cli::refused::REFUSED {
        assert!(help.contains(flag), "{flag} missing from --help");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ouro"))
            .args(["-p", "hi", flag])
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{flag}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "{flag} is a Claude Code flag ouro does not have: {why}."
            )),
            "{flag}: {stderr}"
        );
    }
}

/// Every flag and subcommand of Claude Code 2.1.331's `claude --help` (captured in
/// tests/fixtures/claude-help-2.1.331.txt) meets ouro before and after the prompt: a flag is
/// taken (the prompt reaches the API) or refused naming itself, never read as the prompt's
/// owner ("no prompt given") or met with a parser's generic error; a subcommand runs or is
/// refused by name, never sent to the model.
#[tokio::test]
async fn every_flag_and_subcommand_of_claude_code_is_taken_or_refused_by_name() {
    let help = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/claude-help-2.1.331.txt"
    ))
    .unwrap();
    let api = server(json!({"turns": []})).await;
    let sb = Sandbox::new();
    let (flags, commands) = claude_help(&help);
    assert!(
        flags.len() > 60 && commands.len() > 15,
        "{flags:?} {commands:?}"
    );
    let mut wrong = Vec::new();
    let mut runs = 0u32;
    for (names, value) in &flags {
        let flag = names.last().unwrap().clone();
        let given: Vec<String> = match value {
            Value::Null => vec![flag.clone()],
            Value::String(v) => vec![flag.clone(), v.clone()],
            _ => vec![flag.clone()],
        };
        // A flag whose value is optional or a list takes the words after it, in Claude Code
        // too: only "after the prompt" is meaningful for it.
        let before = matches!(value, Value::Null | Value::String(_));
        let mut orders = vec![[vec!["-p".into(), "hi".into()], given.clone()].concat()];
        if before {
            orders.push([vec!["-p".into()], given.clone(), vec!["hi".into()]].concat());
        }
        for mut args in orders {
            args.extend(["--max-retries".into(), "0".into()]);
            // A session id is taken once per project.
            runs += 1;
            for arg in args.iter_mut().filter(|a| a.starts_with("2b6f0a8e-")) {
                *arg = format!("2b6f0a8e-3c1d-4e5f-8a9b-0c1d2e3f{runs:04x}");
            }
            let sent = bodies(&api).len();
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            // CI runs as root, where bypassPermissions needs this said.
            let run = Run::from(
                sb.command(&api.url(), &argv)
                    .env("OURO_ALLOW_ROOT_BYPASS", "1")
                    .output()
                    .await
                    .unwrap(),
            );
            let reached = bodies(&api).len() > sent;
            let named = names.iter().any(|n| run.stderr.contains(n.as_str()));
            let generic = run.stderr.contains("no prompt given")
                || run.stderr.contains("unexpected argument")
                || run.stderr.contains("unrecognized");
            if generic || !(reached || named || run.status.success()) {
                wrong.push(format!("{argv:?}: {}", run.stderr.trim()));
            }
        }
    }
    for command in &commands {
        for args in [vec![command.as_str()], vec![command.as_str(), "x"]] {
            let sent = bodies(&api).len();
            let run = sb.run(&api.url(), &args).await;
            let said = format!("{}{}", run.stdout, run.stderr);
            if bodies(&api).len() > sent
                || !(run.status.success() || said.contains(command.as_str()))
            {
                wrong.push(format!("{args:?}: {}", said.trim()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The flags of a `claude --help` (each with its spellings, and a value to give it: `null` for a
/// switch, a string for a one-value flag, `true` for an optional or list value) and the
/// subcommands' names.
fn claude_help(help: &str) -> (Vec<(Vec<String>, Value)>, Vec<String>) {
    let value_for = |flag: &str| match flag {
        "--add-dir" | "--plugin-dir" => ".",
        "--agents" | "--settings" => "{}",
        "--mcp-config" => r#"{"mcpServers":{}}"#,
        "--json-schema" => r#"{"type":"object"}"#,
        "--allowedTools" | "--allowed-tools" | "--tools" => "Read",
        "--disallowedTools" | "--disallowed-tools" => "Bash",
        "--effort" => "high",
        "--model" | "--fallback-model" => "sonnet",
        "--input-format" | "--output-format" => "text",
        "--permission-mode" => "default",
        "--max-budget-usd" => "1",
        "--setting-sources" => "user",
        "--session-id" => "2b6f0a8e-3c1d-4e5f-8a9b-0c1d2e3f4a5b",
        "--autocompact" => "auto",
        "--system-prompt-snapshot" => "on",
        _ => "x",
    };
    let mut flags = Vec::new();
    let mut commands = Vec::new();
    let mut in_commands = false;
    for line in help.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        let Some(entry) = line.strip_prefix("  ") else {
            continue;
        };
        if entry.starts_with(' ') {
            continue;
        }
        let spec = entry.split("  ").next().unwrap_or("").trim();
        if in_commands {
            let name = spec.split_whitespace().next().unwrap_or("");
            commands.extend(name.split('|').filter(|n| *n != "help").map(String::from));
            continue;
        }
        if !spec.starts_with('-') {
            continue;
        }
        let (names_part, value) = match spec.find([' ']) {
            Some(_) if spec.contains(" <") || spec.contains(" [") => {
                let at = spec.find(" <").or_else(|| spec.find(" [")).unwrap();
                (&spec[..at], Some(&spec[at + 1..]))
            }
            _ => (spec, None),
        };
        let names: Vec<String> = names_part
            .split(", ")
            .map(|n| n.trim().to_string())
            .filter(|n| n.starts_with('-'))
            .collect();
        let Some(long) = names.iter().rev().find(|n| n.starts_with("--")) else {
            continue;
        };
        let value = match value {
            None => Value::Null,
            Some(v) if v.starts_with('[') || v.contains("...") => Value::Bool(true),
            Some(_) => Value::String(value_for(long).to_string()),
        };
        flags.push((names, value));
    }
    (flags, commands)
}

/// Claude Code's `--name`: a session named in print mode is found again by `--resume NAME`,
/// and the resumed turn carries the named session's conversation.
#[tokio::test]
async fn a_named_session_is_resumed_by_its_name() {
    let api = server(json!({"turns": [
        {"content": [{"type": "text", "text": "First answer."}]},
        {"content": [{"type": "text", "text": "Other answer."}]},
        {"content": [{"type": "text", "text": "Second answer."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let named = sb
        .run(
            &api.url(),
            &["-p", "remember the word kumquat", "-n", "fruit-work"],
        )
        .await;
    assert!(named.status.success(), "{}", named.debug());
    let other = sb.run(&api.url(), &["-p", "something else"]).await;
    assert!(other.status.success(), "{}", other.debug());
    let back = sb
        .run(&api.url(), &["-p", "--resume", "fruit-work", "which word?"])
        .await;
    assert!(back.status.success(), "{}", back.debug());
    assert_eq!(back.stdout.trim(), "Second answer.");
    let sent = bodies(&api);
    let last = sent.last().unwrap().to_string();
    assert!(
        last.contains("kumquat") && !last.contains("something else"),
        "{last}"
    );
    let unknown = sb
        .run(&api.url(), &["-p", "--resume", "no-such-name", "hi"])
        .await;
    assert_eq!(unknown.status.code(), Some(1), "{}", unknown.debug());
}
