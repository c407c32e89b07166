//! End-to-end: resuming sessions: huge transcripts, transcripts that end in a compaction or
//! mid-message.

#![cfg(feature = "mock")]

mod common;

use common::{Sandbox, bodies, server};
use serde_json::{Value, json};

#[tokio::test]
async fn a_resume_too_big_for_the_window_compacts_before_its_first_request() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "first"}]}]})).await;
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "start"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let id = common::session_id(&run);
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
    // 20k messages are ~2 MB of JSON, ~500k tokens: past a 200k window before anything is sent.
    let mock2 = server(json!({"context_limit_tokens": 10_000_000,
        "turns": [{"content": [{"type": "text", "text": "SUMMARY-20K"}]},
                  {"content": [{"type": "text", "text": "resumed"}], "expect_text": "SUMMARY-20K",
                   "usage": {"input_tokens": 1000, "output_tokens": 5}}]}))
    .await;
    let run2 = sb
        .run(
            &mock2.url(),
            &["-p", "--output-format", "json", "--resume", &id, "last one"],
        )
        .await;
    assert!(run2.status.success(), "{}", run2.debug());
    let sent = bodies(&mock2);
    assert_eq!(sent.len(), 2, "the summary request, then the answer: no refusal first");
    assert!(sent[0].get("tools").is_none(), "the first request is the summary");
    let messages = sent[1]["messages"].as_array().unwrap();
    assert!(messages.len() < 10, "{}", messages.len());
    let last = messages.last().unwrap()["content"].to_string();
    assert!(last.contains("last one"), "{last}");
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
                &common::session_id(&run),
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
async fn a_twenty_thousand_message_resume_over_the_context_limit_is_compacted() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "first"}]}]})).await;
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "start"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let id = common::session_id(&run);
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
    let id = common::session_id(&run);
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
