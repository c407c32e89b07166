//! Print mode as Claude Code users drive it: piped input, budgets, what is said on stderr, and
//! JSON answers even when a run cannot start.

#![cfg(feature = "mock")]
#![allow(clippy::unwrap_used)] // a failed unwrap in a test is a failed test

mod common;

use common::{Run, Sandbox, bodies, server};
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
