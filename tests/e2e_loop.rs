//! End-to-end: the query loop's harder paths against the mock Messages API: pause_turn,
//! thinking before tool_use, max_tokens with tool calls, cuts after a tool call, usage of
//! retried attempts and proactive compaction.

use crate::common;

use common::{STREAM_JSON_IO, Sandbox, bodies, server};
use serde_json::{Value, json};

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
    let id = common::session_id(&run);
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
async fn a_cut_after_a_tool_call_runs_it_continues_and_leaves_a_valid_history() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "alpha\n");
    // message_start, block start, ping?, input deltas, block stop, then the text block is cut.
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}},
                     {"type": "text", "text": "and then some more words here"}],
         "faults": [{"kind": "cut", "after_events": 9, "served": true}]},
        {"content": [{"type": "text", "text": "It says alpha."}], "expect_text": "alpha"},
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
        .run_with_stdin(&mock.url(), &STREAM_JSON_IO, input.as_bytes())
        .await;
    let results = run.of_type("result", None);
    assert_eq!(results.len(), 2, "{}", run.debug());
    assert_eq!(results[0]["subtype"], "success", "{}", run.debug());
    assert_eq!(results[0]["result"], "It says alpha.");
    assert_eq!(results[1]["subtype"], "success", "{}", run.debug());
    assert_eq!(results[1]["result"], "second answer");
    let last = bodies(&mock).pop().unwrap();
    let text = last["messages"].to_string();
    assert!(
        text.contains("tool_result") && text.contains("alpha"),
        "{text}"
    );
    assert!(!text.contains("more words"), "{text}");
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

/// When the summary request itself fails (529, retries used up) and the conversation is
/// known not to fit the model's window, nothing more is sent: the run ends saying which step
/// failed, instead of sending the whole history to fail again.
#[tokio::test]
async fn a_failed_compaction_never_sends_a_request_known_to_be_too_long() {
    let sb = Sandbox::new();
    let f = sb.write("a.txt", "a\n");
    let read = |n: u64| {
        json!({"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": f}}],
               "usage": {"input_tokens": n, "output_tokens": 10}})
    };
    let mock = server(json!({"turns": [
        read(1000), read(250_000),
        {"content": [{"type": "text", "text": "SUMMARY"}],
         "faults": [{"kind": "http", "status": 529}]},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "--max-retries", "0", "go"],
        )
        .await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let result = run.result();
    assert_eq!(result["subtype"], "error_during_execution", "{result}");
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("Compacting the conversation failed") && text.contains("too long to send"),
        "{text}"
    );
    assert_eq!(
        mock.requests().len(),
        3,
        "two turns and the failed summary only"
    );
}
