//! Broken, stalled and malformed response streams, end to end: nothing is lost silently, what
//! finished is kept, and the run says what happened.

use crate::common;

use common::{Sandbox, bodies, server};
use serde_json::json;

const STREAM_JSON: &[&str] = &["-p", "--output-format", "stream-json", "--verbose"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    STREAM_JSON
        .iter()
        .copied()
        .chain(extra.iter().copied())
        .collect()
}

#[tokio::test]
async fn a_cut_after_a_finished_block_keeps_it_and_continues() {
    // Events: message_start, block 0 start, ping, 3 deltas, block 0 stop, block 1 start,
    // one delta of block 1: the cut comes in the middle of the second block.
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Part one. "},
                     {"type": "text", "text": "LOST second half"}],
         "faults": [{"kind": "cut", "after_events": 9, "served": true}]},
        {"content": [{"type": "text", "text": "Part two."}],
         "expect_text": "cut off by a connection failure"}
    ]}))
    .await;
    let sb = Sandbox::new();
    let run = sb.run(&mock.url(), &args(&["tell me"])).await;
    assert!(run.status.success(), "{}", run.debug());
    let result = run.result();
    assert_eq!(result["subtype"], "success", "{}", run.debug());
    assert_eq!(result["result"], "Part one. Part two.");
    let cut = run.of_type("system", Some("stream_cut"));
    assert_eq!(cut.len(), 1, "{}", run.debug());
    assert_eq!(cut[0]["kept_blocks"], 1);
    let sent = bodies(&mock);
    assert_eq!(sent.len(), 2);
    let history = sent[1]["messages"].to_string();
    assert!(history.contains("Part one. "), "{history}");
    assert!(
        !history.contains("LOST"),
        "an unfinished block is dropped: {history}"
    );
}

#[tokio::test]
async fn a_cut_tool_call_is_dropped_and_the_finished_one_runs() {
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "alpha\n");
    // The Read block finishes (events 0..=7), the Write block is cut mid-input.
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}},
                     {"type": "tool_use", "name": "Write", "input": {"file_path": "/tmp/x", "content": "never"}}],
         "faults": [{"kind": "cut", "after_events": 10, "served": true}]},
        {"content": [{"type": "text", "text": "The file says alpha."}], "expect_text": "alpha"}
    ]}))
    .await;
    let run = sb.run(&mock.url(), &args(&["read a.txt"])).await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.result()["result"], "The file says alpha.");
    let results = run.tool_results();
    assert_eq!(
        results.len(),
        1,
        "only the finished call runs: {}",
        run.debug()
    );
    let history = bodies(&mock)[1]["messages"].to_string();
    assert!(!history.contains("never"), "{history}");
}

#[tokio::test]
async fn continuations_after_cuts_are_bounded() {
    let cut_turn = json!({"content": [{"type": "text", "text": "again "},
                                      {"type": "text", "text": "and lost"}],
                          "faults": [{"kind": "cut", "after_events": 9, "served": true}]});
    let mock = server(json!({"turns": [cut_turn, cut_turn, cut_turn, cut_turn]})).await;
    let sb = Sandbox::new();
    let run = sb.run(&mock.url(), &args(&["go"])).await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let result = run.result();
    assert_eq!(result["subtype"], "error_during_execution");
    assert!(
        result["result"]
            .as_str()
            .unwrap()
            .contains("cut off mid-stream"),
        "{result}"
    );
    assert_eq!(run.of_type("system", Some("stream_cut")).len(), 3);
    assert_eq!(mock.turns_served(), 4);
}

/// Runs one turn behind `faults` with short stream limits; returns the `api_retry` errors.
async fn retried_errors(faults: serde_json::Value) -> Vec<String> {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Finally complete."}], "faults": faults}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.command(&mock.url(), &args(&["hi"]));
    cmd.env("OURO_STREAM_IDLE_TIMEOUT_MS", "300")
        .env("OURO_STREAM_MAX_EVENT_BYTES", "100000");
    let run = common::Run::from(cmd.output().await.unwrap());
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.result()["result"], "Finally complete.");
    run.of_type("system", Some("api_retry"))
        .iter()
        .map(|r| r["error"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn stalls_before_any_block_are_retried_even_with_pings() {
    let errors = retried_errors(json!([
        {"kind": "stall", "after_events": 2, "pings": true},
        {"kind": "stall", "after_events": 0}
    ]))
    .await;
    assert_eq!(errors, ["stream_stalled", "stream_stalled"]);
}

#[tokio::test]
async fn malformed_events_before_any_block_are_retried() {
    let errors = retried_errors(json!([
        {"kind": "invalid_json", "after_events": 3},
        {"kind": "drop_events", "event": "content_block_stop"}
    ]))
    .await;
    assert_eq!(errors, ["malformed_stream", "malformed_stream"]);
}

#[tokio::test]
async fn an_oversized_event_fails_at_once_and_says_how_to_allow_it() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "never"}],
         "faults": [{"kind": "oversized_line", "after_events": 1, "bytes": 300000}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.command(&mock.url(), &["-p", "--output-format", "json", "hi"]);
    cmd.env("OURO_STREAM_MAX_EVENT_BYTES", "100000");
    let run = common::Run::from(cmd.output().await.unwrap());
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("larger than 100000 bytes") && text.contains("OURO_STREAM_MAX_EVENT_BYTES"),
        "{text}"
    );
    assert_eq!(mock.requests().len(), 1, "not fetched again");
}

#[tokio::test]
async fn a_stream_that_stays_malformed_fails_the_run_and_says_why() {
    let drop_stop = json!({"kind": "drop_events", "event": "content_block_stop"});
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "never delivered"}],
         "faults": [drop_stop, drop_stop, drop_stop]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "--max-retries", "2", "hi"],
        )
        .await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["is_error"], true);
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("malformed") && text.contains("content_block_stop"),
        "{text}"
    );
}

#[tokio::test]
async fn retry_after_zero_still_waits_a_second_and_a_long_one_fails_fast() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "ok"}],
         "faults": [{"kind": "http", "status": 429, "retry_after": 0}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let started = std::time::Instant::now();
    let run = sb.run(&mock.url(), &args(&["hi"])).await;
    assert!(run.status.success(), "{}", run.debug());
    let retries = run.of_type("system", Some("api_retry"));
    assert_eq!(retries[0]["retry_delay_ms"], 1000, "{}", run.debug());
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));

    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "ok"}],
         "faults": [{"kind": "http", "status": 429, "retry_after": 3600}]}
    ]}))
    .await;
    let run = sb.run(&mock.url(), &args(&["hi"])).await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let text = run.result()["result"].as_str().unwrap().to_string();
    assert!(
        text.contains("wait 3600 s") && text.contains("try again after"),
        "{text}"
    );
    assert_eq!(mock.requests().len(), 1, "no retry inside the long wait");
}

#[tokio::test]
async fn request_too_large_compacts_like_prompt_too_long() {
    let sb = Sandbox::new();
    let big = sb.write("big.txt", &"lorem ipsum dolor sit amet\n".repeat(400));
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "text", "text": "SUMMARY: read big.txt."}],
         "faults": [{"kind": "http", "status": 413}]},
        {"content": [{"type": "text", "text": "Done."}], "expect_text": "SUMMARY: read big.txt."}
    ]}))
    .await;
    let run = sb.run(&mock.url(), &args(&["read big.txt thrice"])).await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.of_type("system", Some("compact_boundary")).len(), 1);
    assert_eq!(run.result()["result"], "Done.");
}

/// A 200 that is a web page (a captive portal, a proxy's login) is named for what it is, not
/// reported as a broken stream, whatever content type it claims.
#[tokio::test]
async fn a_200_that_is_not_an_event_stream_says_what_arrived() {
    for (content_type, said) in [
        (
            "text/html",
            "answered 200 with text/html instead of an event stream",
        ),
        (
            "text/event-stream",
            "answered 200 with an event stream that holds no event",
        ),
    ] {
        web_page_instead_of_events(content_type, said).await;
    }
}

async fn web_page_instead_of_events(content_type: &'static str, said: &str) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming().take(20) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let body = "\n<html><head><title>Hotel Wi-Fi login</title></head></html>\n";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let sb = Sandbox::new();
    let run = sb.run(&url, &["-p", "hi"]).await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    assert!(
        run.stderr.contains(said) && run.stderr.contains("<html><head><title>Hotel Wi-Fi login"),
        "{}",
        run.debug()
    );
    assert!(!run.stderr.contains("closed before"), "{}", run.debug());
}
