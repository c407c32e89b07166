//! End-to-end probes of the query loop, executor and transcript paths that are easy to get
//! wrong: pause_turn, thinking before tool_use, max_tokens with tool calls, cuts after a tool
//! call, Ctrl-C during compaction, hooks from the project settings, and huge resumes.

#![cfg(feature = "mock")]

mod common;

use std::time::Duration;

use common::{Sandbox, bodies, server};
use serde_json::{Value, json};

fn sid(run: &common::Run) -> String {
    run.result()["session_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn pause_turn_sends_the_paused_message_back_and_finishes() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Part one."}], "stop_reason": "pause_turn"},
        {"content": [{"type": "text", "text": "Part two."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "go"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["num_turns"], 2);
    assert!(result["result"].as_str().unwrap().contains("Part two."));
    let second = &bodies(&mock)[1];
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["role"], "assistant");
    assert_eq!(messages.last().unwrap()["content"][0]["text"], "Part one.");
}

#[tokio::test]
async fn thinking_stays_before_tool_use_in_the_history_and_after_resume() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "alpha\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "thinking", "thinking": "I should read it.", "signature": "sig-1"},
                     {"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "text", "text": "It says alpha."}], "expect_text": "alpha"}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "read a.txt"],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let check = |body: &Value| {
        let assistant = &body["messages"][1];
        assert_eq!(assistant["role"], "assistant");
        assert_eq!(assistant["content"][0]["type"], "thinking", "{assistant}");
        assert_eq!(assistant["content"][0]["signature"], "sig-1");
        assert_eq!(assistant["content"][1]["type"], "tool_use");
    };
    check(&bodies(&mock)[1]);

    let mock2 = server(json!({"turns": [{"content": [{"type": "text", "text": "again"}]}]})).await;
    let id = sid(&run);
    let run2 = sb
        .run(&mock2.url(), &["-p", "--resume", &id, "and now?"])
        .await;
    assert!(run2.status.success(), "{}", run2.debug());
    check(&bodies(&mock2)[0]);
}

#[tokio::test]
async fn max_tokens_with_a_finished_tool_call_runs_the_tool() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "alpha\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Reading."},
                     {"type": "tool_use", "name": "Read", "input": {"file_path": file}}],
         "stop_reason": "max_tokens"},
        {"content": [{"type": "text", "text": "Done."}], "expect_text": "alpha"}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "stream-json", "--verbose", "go"],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.result()["result"], "Done.");
    assert_eq!(run.result()["num_turns"], 2);
    assert_ne!(run.tool_results()[0]["is_error"], true, "{}", run.debug());
}

#[tokio::test]
async fn a_cut_after_a_tool_call_leaves_a_valid_history_for_the_next_prompt() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "alpha\n");
    // message_start, block start, ping?, input deltas, block stop, then the text block is cut.
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}},
                     {"type": "text", "text": "and then some more words here"}],
         "faults": [{"kind": "cut", "after_events": 9}]},
        {"content": [{"type": "text", "text": "second answer"}], "expect_text": "next prompt"}
    ]}))
    .await;
    let input = concat!(
        r#"{"type":"user","message":{"role":"user","content":"first prompt"}}"#,
        "\n",
        r#"{"type":"user","message":{"role":"user","content":"next prompt"}}"#,
        "\n"
    );
    let run = sb
        .run_with_stdin(
            &mock.url(),
            &[
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
            ],
            input.as_bytes(),
        )
        .await;
    let results = run.of_type("result", None);
    assert_eq!(results.len(), 2, "{}", run.debug());
    assert_eq!(
        results[0]["subtype"],
        "error_during_execution",
        "{}",
        run.debug()
    );
    assert_eq!(results[1]["subtype"], "success", "{}", run.debug());
    assert_eq!(results[1]["result"], "second answer");
    let last = bodies(&mock).pop().unwrap();
    let text = last["messages"].to_string();
    assert!(
        text.contains("tool_result") && text.contains("alpha"),
        "{text}"
    );
}

#[tokio::test]
async fn ctrl_c_during_the_compaction_request_is_an_abort() {
    let sb = Sandbox::new();
    let big = sb.write("big.txt", &"lorem ipsum dolor sit amet\n".repeat(400));
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "text", "text": "SUMMARY that streams very slowly"}],
         "faults": [{"kind": "prompt_too_long"}], "delay_ms": 3000},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let child = sb
        .command(&mock.url(), &["-p", "--output-format", "stream-json", "go"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    // Three tool rounds, the rejected fourth request, then the summary request.
    while mock.requests().len() < 5 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the summary request never came"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    let out = tokio::time::timeout(Duration::from_secs(15), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let run = common::Run::from(out);
    assert_eq!(run.result()["subtype"], "error_aborted", "{}", run.debug());
    assert_eq!(mock.requests().len(), 5, "no request after the interrupt");
}

#[tokio::test]
async fn hooks_from_project_settings_deny_and_annotate_end_to_end() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "alpha\n");
    std::fs::create_dir_all(sb.root().join(".ouro")).unwrap();
    let settings = json!({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo 'no shell today' >&2; exit 2"}]}],
        "PostToolUse": [{"matcher": "Read", "hooks": [
            {"type": "command", "command":
             "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\"additionalContext\":\"HOOK-NOTE\"}}'"}]}]
    }});
    std::fs::write(sb.root().join(".ouro/settings.json"), settings.to_string()).unwrap();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo hi > hit.txt"}},
                     {"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "text", "text": "ok"}], "expect_text": "HOOK-NOTE"}
    ]}))
    .await;
    let out = sb
        .command(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "bypassPermissions",
                "go",
            ],
        )
        .env("OURO_ALLOW_ROOT_BYPASS", "1")
        .output()
        .await
        .unwrap();
    let run = common::Run::from(out);
    assert!(run.status.success(), "{}", run.debug());
    assert!(
        !sb.root().join("hit.txt").exists(),
        "the hook's deny outranks bypass"
    );
    let results = run.tool_results();
    let bash = results
        .iter()
        .find(|r| r["tool_use_id"] == "toolu_mock_0000_00")
        .unwrap();
    assert_eq!(bash["is_error"], true);
    assert!(
        bash["content"].to_string().contains("no shell today"),
        "{bash}"
    );
    let read = results
        .iter()
        .find(|r| r["tool_use_id"] == "toolu_mock_0000_01")
        .unwrap();
    assert!(read["content"].to_string().contains("HOOK-NOTE"), "{read}");
    assert!(read["content"].to_string().contains("alpha"), "{read}");
}

#[tokio::test]
async fn resume_of_a_twenty_thousand_message_transcript() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "first"}]}]})).await;
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "start"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let id = sid(&run);
    let path = sb.transcripts()[0].clone();
    let mut text = std::fs::read_to_string(&path).unwrap();
    for i in 0..10_000 {
        text.push_str(&json!({"type": "user", "uuid": format!("u{i}"), "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": format!("question {i}")}]}}).to_string());
        text.push('\n');
        text.push_str(&json!({"type": "assistant", "uuid": format!("a{i}"), "timestamp": "2026-01-01T00:00:00.000Z",
            "message_id": format!("msg_{i}"),
            "message": {"role": "assistant", "content": [{"type": "text", "text": format!("answer {i}")}]}}).to_string());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    let mock2 = server(json!({"context_limit_tokens": 10_000_000,
        "turns": [{"content": [{"type": "text", "text": "resumed"}],
                   "usage": {"input_tokens": 1000, "output_tokens": 5}}]}))
    .await;
    let run2 = sb
        .run(
            &mock2.url(),
            &["-p", "--output-format", "json", "--resume", &id, "last one"],
        )
        .await;
    assert!(run2.status.success(), "{}", run2.debug());
    let body = &bodies(&mock2)[0];
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 20_003, "start, first, 20k, the new prompt");
    assert_eq!(messages.last().unwrap()["content"][0]["text"], "last one");
}

#[tokio::test]
async fn resume_after_compaction_starts_from_the_summary() {
    let sb = Sandbox::new();
    let big = sb.write("big.txt", &"lorem ipsum dolor sit amet\n".repeat(400));
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "text", "text": "SUMMARY-XYZ"}], "faults": [{"kind": "prompt_too_long"}]},
        {"content": [{"type": "text", "text": "Done after compaction."}], "expect_text": "SUMMARY-XYZ"}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "read big.txt thrice"],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(
        run.result()["num_turns"],
        4,
        "the summary call is not a turn"
    );
    let mock2 = server(json!({"turns": [
        {"content": [{"type": "text", "text": "still here"}], "expect_text": "SUMMARY-XYZ"}
    ]}))
    .await;
    let run2 = sb
        .run(
            &mock2.url(),
            &[
                "-p",
                "--output-format",
                "json",
                "--resume",
                &sid(&run),
                "more",
            ],
        )
        .await;
    assert!(run2.status.success(), "{}", run2.debug());
    let body = &bodies(&mock2)[0];
    let messages = body["messages"].as_array().unwrap();
    let all = body["messages"].to_string();
    assert!(all.contains("Done after compaction."), "{all}");
    assert!(
        messages.len() < 8,
        "the summarised rounds are gone: {}",
        messages.len()
    );
}

#[tokio::test]
async fn a_retried_attempt_is_not_counted_twice_in_usage_or_cost() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "after the retry"}],
         "usage": {"input_tokens": 1000, "output_tokens": 10},
         "faults": [{"kind": "sse_error", "after_events": 3, "error_type": "overloaded_error"}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--model",
                "claude-sonnet-4-5",
                "go",
            ],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(
        run.of_type("system", Some("api_retry")).len(),
        1,
        "{}",
        run.debug()
    );
    let result = run.result();
    assert_eq!(result["usage"]["input_tokens"], 1000, "{result}");
    let cost = result["total_cost_usd"].as_f64().unwrap();
    assert!(
        (cost - (1000.0 * 3.0 + 10.0 * 15.0) / 1e6).abs() < 1e-9,
        "{cost}"
    );
}

#[tokio::test]
async fn ctrl_c_during_a_retry_wait_ends_the_run_at_once() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "never"}],
         "faults": [{"kind": "http", "status": 429, "retry_after": 60}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let child = sb
        .command(&mock.url(), &["-p", "--output-format", "stream-json", "go"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while mock.requests().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no request came");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the retry wait is interrupted")
        .unwrap();
    let run = common::Run::from(out);
    assert_eq!(run.result()["subtype"], "error_aborted", "{}", run.debug());
    assert_eq!(mock.turns_served(), 0);
}

#[tokio::test]
async fn a_twenty_thousand_message_resume_over_the_context_limit_is_compacted() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "first"}]}]})).await;
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "start"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let id = sid(&run);
    let path = sb.transcripts()[0].clone();
    let mut text = std::fs::read_to_string(&path).unwrap();
    for i in 0..10_000 {
        let user = json!({"type": "user", "uuid": format!("u{i}"),
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": [
                {"type": "text", "text": format!("question number {i} about the parser")}]}});
        let assistant = json!({"type": "assistant", "uuid": format!("a{i}"),
            "timestamp": "2026-01-01T00:00:00.000Z", "message_id": format!("msg_{i}"),
            "message": {"role": "assistant", "content": [
                {"type": "text", "text": format!("answer number {i} about the parser")}]}});
        text.push_str(&format!("{user}\n{assistant}\n"));
    }
    std::fs::write(&path, text).unwrap();
    let mock2 = server(json!({"context_limit_tokens": 200_000, "turns": [
        {"content": [{"type": "text", "text": "SUMMARY-OF-20K"}]},
        {"content": [{"type": "text", "text": "resumed"}], "expect_text": "SUMMARY-OF-20K"}
    ]}))
    .await;
    let run2 = sb
        .run(
            &mock2.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--resume",
                &id,
                "last one",
            ],
        )
        .await;
    assert!(run2.status.success(), "{}", run2.debug());
    assert_eq!(run2.result()["result"], "resumed");
    assert_eq!(run2.of_type("system", Some("compact_boundary")).len(), 1);
    let last = bodies(&mock2).pop().unwrap();
    assert!(last["messages"].to_string().contains("last one"));
}

#[tokio::test]
async fn resume_of_a_transcript_that_ends_mid_message_is_repaired() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "first"}]}]})).await;
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "start"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let id = sid(&run);
    let path = sb.transcripts()[0].clone();
    let mut text = std::fs::read_to_string(&path).unwrap();
    let block = |uuid: &str, b: Value| {
        json!({"type": "assistant", "uuid": uuid, "timestamp": "2026-01-01T00:00:00.000Z",
               "message_id": "msg_cut", "message": {"role": "assistant", "content": [b]}})
        .to_string()
    };
    text.push_str(
        &json!({"type": "user", "uuid": "u1", "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "do two things"}]}})
        .to_string(),
    );
    text.push('\n');
    text.push_str(&block(
        "a1",
        json!({"type": "thinking", "thinking": "plan", "signature": "s"}),
    ));
    text.push('\n');
    text.push_str(&block(
        "a2",
        json!({"type": "tool_use", "id": "toolu_cut_1", "name": "Bash", "input": {"command": "true"}}),
    ));
    text.push('\n');
    text.push_str(r#"{"type":"assistant","uuid":"a3","timestamp":"2026-01-01T00:00:00.000Z","message_id":"msg_cut","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_cut_2","na"#);
    std::fs::write(&path, text).unwrap();

    let mock2 = server(json!({"turns": [
        {"content": [{"type": "text", "text": "picked up"}], "expect_text": "interrupted"}
    ]}))
    .await;
    let run2 = sb
        .run(
            &mock2.url(),
            &["-p", "--output-format", "json", "--resume", &id, "go on"],
        )
        .await;
    assert!(run2.status.success(), "{}", run2.debug());
    let body = &bodies(&mock2)[0];
    let messages = body["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 2];
    assert_eq!(assistant["content"][0]["type"], "thinking");
    assert_eq!(assistant["content"][1]["id"], "toolu_cut_1");
    let last = messages.last().unwrap();
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_cut_1");
    assert_eq!(last["content"][0]["is_error"], true);
    assert_eq!(last["content"][1]["text"], "go on");

    // What the resumed run wrote must survive the next resume too, although the file
    // ended in a torn line.
    let mock3 = server(json!({"turns": [{"content": [{"type": "text", "text": "third"}]}]})).await;
    let run3 = sb
        .run(
            &mock3.url(),
            &[
                "-p",
                "--output-format",
                "json",
                "--resume",
                &id,
                "and again",
            ],
        )
        .await;
    assert!(run3.status.success(), "{}", run3.debug());
    let all = bodies(&mock3)[0]["messages"].to_string();
    assert!(
        all.contains("go on"),
        "the prompt after the torn line was lost: {all}"
    );
    assert!(all.contains("picked up"), "{all}");
}

#[tokio::test]
async fn ctrl_c_mid_stream_after_a_tool_call_keeps_the_pair_for_resume() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "sleep 30"}},
                     {"type": "text", "text": "a slow trailing text block that never finishes"}],
         "delay_ms": 400},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let child = sb
        .command(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--allowedTools",
                "Bash(sleep:*)",
                "wait",
            ],
        )
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    sb.wait_for_transcript("sleep 30").await;
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    let out = tokio::time::timeout(Duration::from_secs(15), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let run = common::Run::from(out);
    assert_eq!(run.result()["subtype"], "error_aborted", "{}", run.debug());
    assert_eq!(run.tool_results().len(), 1, "{}", run.debug());
    assert_eq!(mock.turns_served(), 1);

    let mock2 = server(json!({"turns": [{"content": [{"type": "text", "text": "fine"}]}]})).await;
    let run2 = sb
        .run(
            &mock2.url(),
            &["-p", "--output-format", "json", "--continue", "status?"],
        )
        .await;
    assert!(run2.status.success(), "{}", run2.debug());
    let messages = bodies(&mock2)[0]["messages"].clone();
    let last = messages.as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["content"][0]["tool_use_id"], "toolu_mock_0000_00",
        "{messages}"
    );
    assert_eq!(last["content"][0]["is_error"], true);
}

#[tokio::test]
async fn ctrl_c_reaches_a_tool_still_running_after_the_stream_was_cut() {
    let sb = Sandbox::new();
    // The tool_use block completes (7 events), then the connection drops in the text block.
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "sleep 30"}},
                     {"type": "text", "text": "trailing words that are cut"}],
         "faults": [{"kind": "cut", "after_events": 9}]},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let child = sb
        .command(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--allowedTools",
                "Bash(sleep:*)",
                "wait",
            ],
        )
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    sb.wait_for_transcript("sleep 30").await;
    // Let the cut land, so the engine is waiting for the tool.
    tokio::time::sleep(Duration::from_millis(700)).await;
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    let out = tokio::time::timeout(Duration::from_secs(15), child.wait_with_output())
        .await
        .expect("Ctrl-C stops the tool instead of waiting 30 s for it")
        .unwrap();
    let run = common::Run::from(out);
    assert_eq!(run.result()["subtype"], "error_aborted", "{}", run.debug());
    let results = run.tool_results();
    assert_eq!(results.len(), 1, "{}", run.debug());
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(mock.turns_served(), 0, "the cut attempt served no turn");
}

#[tokio::test]
async fn proactive_compaction_is_not_a_turn_and_its_usage_is_counted_once() {
    let sb = Sandbox::new();
    let f = sb.write("a.txt", "a\n");
    std::fs::create_dir_all(sb.root().join(".ouro")).unwrap();
    std::fs::write(
        sb.root().join(".ouro/settings.json"),
        r#"{"autoCompactThreshold": 0.5}"#,
    )
    .unwrap();
    let read = |n: u64| {
        json!({"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": f}}],
               "usage": {"input_tokens": n, "output_tokens": 10}})
    };
    let mock = server(json!({"turns": [
        read(1000), read(150000),
        {"content": [{"type": "text", "text": "SUMMARY"}], "usage": {"input_tokens": 500, "output_tokens": 20}},
        {"content": [{"type": "text", "text": "finished"}], "expect_text": "SUMMARY",
         "usage": {"input_tokens": 700, "output_tokens": 5}}
    ]}))
    .await;
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "go"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let result = run.result();
    assert_eq!(result["num_turns"], 3, "{result}");
    assert_eq!(
        result["usage"]["input_tokens"],
        1000 + 150000 + 500 + 700,
        "{result}"
    );
    assert_eq!(
        result["usage"]["output_tokens"],
        10 + 10 + 20 + 5,
        "{result}"
    );
}
