//! End-to-end: the `ouro` binary in print mode against the mock Messages API (issue: core slice).

use crate::common;

use common::{API_KEY, STREAM_JSON_IO, Sandbox, bodies, server, user_line};
use serde_json::json;

#[tokio::test]
async fn plain_answer_in_text_mode() {
    let mock =
        server(json!({"turns": [{"content": [{"type": "text", "text": "Hello from the mock."}]}]}))
            .await;
    let sb = Sandbox::new();
    let run = sb.run(&mock.url(), &["-p", "say hello"]).await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.stdout.trim(), "Hello from the mock.");
    let req = &mock.requests()[0];
    assert_eq!(
        req.headers.get("x-api-key").map(String::as_str),
        Some(API_KEY)
    );
    assert_eq!(
        req.headers.get("anthropic-version").map(String::as_str),
        Some("2023-06-01")
    );
    assert_eq!(req.body["stream"], true);
    assert_eq!(req.body["messages"][0]["content"][0]["text"], "say hello");
    let names: Vec<String> = req.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tool definitions are sorted by name");
    assert!(names.contains(&"Read".to_string()) && names.contains(&"Bash".to_string()));
    assert!(!run.stderr.contains(API_KEY));
}

#[tokio::test]
async fn prompt_from_stdin_and_json_output() {
    let mock = server(
        json!({"turns": [{"content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 1000, "output_tokens": 200}}]}),
    )
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run_with_stdin(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "json",
                "--model",
                "claude-sonnet-4-5",
            ],
            b"from stdin",
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["result"], "ok");
    assert_eq!(result["num_turns"], 1);
    assert_eq!(result["usage"]["input_tokens"], 1000);
    // sonnet: $3/MTok in, $15/MTok out
    let cost = result["total_cost_usd"].as_f64().unwrap();
    assert!(
        (cost - (1000.0 * 3.0 + 200.0 * 15.0) / 1e6).abs() < 1e-9,
        "{cost}"
    );
    let per_model = &result["modelUsage"]["claude-sonnet-4-5"];
    assert_eq!(per_model["inputTokens"], 1000);
    assert_eq!(per_model["outputTokens"], 200);
    assert_eq!(per_model["costUSD"].as_f64(), Some(cost));
    assert_eq!(
        bodies(&mock)[0]["messages"][0]["content"][0]["text"],
        "from stdin"
    );
}

#[tokio::test]
async fn multi_turn_tool_loop_in_stream_json() {
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "alpha\nbeta\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Reading."},
                     {"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "text", "text": "It has two lines."}], "expect_text": "beta"}
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
                "read notes",
            ],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let events = run.events();
    assert_eq!(events[0]["type"], "system");
    assert_eq!(events[0]["subtype"], "init");
    assert!(
        events[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "Read")
    );
    let assistants = run.of_type("assistant", None);
    assert_eq!(assistants.len(), 3, "one assistant event per content block");
    assert_eq!(
        assistants[0]["message"]["id"],
        assistants[1]["message"]["id"]
    );
    let results = run.tool_results();
    assert_eq!(results.len(), 1);
    assert!(results[0]["content"].as_str().unwrap().contains("1\talpha"));
    let result = run.result();
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["result"], "It has two lines.");
    assert_eq!(result["session_id"], events[0]["session_id"]);
    let second = &bodies(&mock)[1];
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
}

#[tokio::test]
async fn retries_429_529_500_and_sse_error() {
    let mock = server(
        json!({"turns": [{"content": [{"type": "text", "text": "finally"}],
        "faults": [
            {"kind": "http", "status": 429, "retry_after": 1},
            {"kind": "http", "status": 529},
            {"kind": "http", "status": 500},
            {"kind": "sse_error", "after_events": 2, "error_type": "overloaded_error"}
        ]}]}),
    )
    .await;
    let sb = Sandbox::new();
    let started = std::time::Instant::now();
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "stream-json", "go"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let retries = run.of_type("system", Some("api_retry"));
    assert_eq!(retries.len(), 4, "{}", run.debug());
    assert_eq!(retries[0]["error_status"], 429);
    assert_eq!(
        retries[0]["retry_delay_ms"], 1000,
        "429 waits exactly retry-after"
    );
    assert_eq!(retries[1]["error_status"], 529);
    assert_eq!(retries[2]["error_status"], 500);
    assert_eq!(
        retries[3]["error_status"], 529,
        "an SSE overloaded error counts as 529"
    );
    // Labelled in Claude Code's words.
    let labels: Vec<&str> = retries
        .iter()
        .map(|r| r["error"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        ["rate_limit", "overloaded", "server_error", "overloaded"]
    );
    for (i, r) in retries.iter().enumerate() {
        assert_eq!(r["attempt"], i as u64 + 1);
        assert_eq!(r["max_retries"], 10);
    }
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    assert_eq!(run.result()["result"], "finally");
    assert_eq!(mock.turns_served(), 1);
}

#[tokio::test]
async fn non_retryable_4xx_is_a_clear_error() {
    let mock = server(
        json!({"turns": [{"content": [{"type": "text", "text": "x"}],
        "faults": [{"kind": "http", "status": 403, "message": "model not allowed"}]}]}),
    )
    .await;
    let sb = Sandbox::new();
    let run = sb.run(&mock.url(), &["-p", "go"]).await;
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr.contains("403") && run.stderr.contains("model not allowed"),
        "{}",
        run.debug()
    );
    assert_eq!(mock.requests().len(), 1, "no retry on 403");
}

#[tokio::test]
async fn stream_cut_before_any_block_is_re_requested() {
    let mock = server(
        json!({"turns": [{"content": [{"type": "text", "text": "whole answer"}],
        "faults": [{"kind": "cut", "after_events": 3}]}]}),
    )
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "stream-json", "go"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.of_type("system", Some("api_retry")).len(), 1);
    let texts: Vec<_> = run.of_type("assistant", None);
    assert_eq!(texts.len(), 1, "the text block is shown once");
    assert_eq!(run.result()["result"], "whole answer");
}

#[tokio::test]
async fn a_fatal_stream_error_after_a_finished_block_keeps_it_and_does_not_replay() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "first block"}, {"type": "text", "text": "second block"}],
         "faults": [{"kind": "sse_error", "after_events": 8, "error_type": "invalid_request_error"}]},
        {"content": [{"type": "text", "text": "never requested"}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "stream-json", "go"])
        .await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let assistants = run.of_type("assistant", None);
    assert_eq!(assistants.len(), 1, "{}", run.debug());
    assert_eq!(
        assistants[0]["message"]["content"][0]["text"],
        "first block"
    );
    let result = run.result();
    assert_eq!(result["is_error"], true);
    assert!(
        result["result"]
            .as_str()
            .unwrap()
            .contains("invalid_request_error"),
        "{result}"
    );
    assert_eq!(mock.requests().len(), 1, "not re-requested");
}

#[tokio::test]
async fn max_tokens_text_is_continued_and_the_answer_is_whole() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "The quick brown "}], "stop_reason": "max_tokens"},
        {"content": [{"type": "text", "text": "fox jumps."}], "expect_text": "output token limit"}
    ]}))
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "go"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["result"], "The quick brown fox jumps.");
    assert_eq!(result["num_turns"], 2);
    let second = &bodies(&mock)[1];
    assert_eq!(
        second["messages"][1]["content"][0]["text"],
        "The quick brown "
    );
}

#[tokio::test]
async fn max_tokens_continuation_stops_after_three() {
    let cut = json!({"content": [{"type": "text", "text": "more "}], "stop_reason": "max_tokens"});
    let mock = server(
        json!({"turns": [cut, cut, cut, cut, {"content": [{"type": "text", "text": "unused"}]}]}),
    )
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "go"])
        .await;
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["num_turns"], 4, "{}", run.debug());
    assert_eq!(result["stop_reason"], "max_tokens");
    assert_eq!(result["result"], "more more more more ");
}

#[tokio::test]
async fn tool_use_cut_mid_json_is_not_run_and_the_retry_succeeds() {
    let sb = Sandbox::new();
    let target = sb.root().join("out.txt");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Write",
                      "raw_input": format!("{{\"file_path\": \"{}\", \"content\": \"partial", target.display())}],
         "stop_reason": "max_tokens"},
        {"content": [{"type": "tool_use", "name": "Write",
                      "input": {"file_path": target, "content": "complete\n"}}],
         "expect_text": "not valid JSON"},
        {"content": [{"type": "text", "text": "written"}]}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--permission-mode",
                "acceptEdits",
                "write it",
            ],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let results = run.tool_results();
    assert_eq!(results[0]["is_error"], true);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("truncated")
    );
    assert_ne!(results[1]["is_error"], true, "{}", run.debug());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "complete\n");
}

#[tokio::test]
async fn prompt_too_long_compacts_and_continues() {
    let sb = Sandbox::new();
    let big = sb.write("big.txt", &"lorem ipsum dolor sit amet\n".repeat(400));
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "text", "text": "SUMMARY: user wants big.txt read."}], "faults": [{"kind": "prompt_too_long"}]},
        {"content": [{"type": "text", "text": "Done after compaction."}], "expect_text": "SUMMARY: user wants big.txt read."}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "please read big.txt thrice",
            ],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.of_type("system", Some("compact_boundary")).len(), 1);
    assert_eq!(run.result()["result"], "Done after compaction.");
    let last = bodies(&mock).pop().unwrap();
    let text = last["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("please read big.txt thrice"),
        "the user's request is kept verbatim: {text}"
    );
    assert!(text.contains("big.txt"));
    let compaction = &bodies(&mock)[4];
    assert!(
        compaction
            .get("tools")
            .is_none_or(|t| t.as_array().unwrap().is_empty())
    );
}

#[tokio::test]
async fn prompt_too_long_with_too_little_history_is_a_clear_error() {
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "x"}], "faults": [{"kind": "prompt_too_long"}]}]})).await;
    let sb = Sandbox::new();
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "huge prompt"],
        )
        .await;
    assert_eq!(run.status.code(), Some(1));
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    // As Claude Code reports it: a "success" that is an error.
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], true);
    assert!(result["result"].as_str().unwrap().contains("too long"));
}

/// As Claude Code reports an API error it gave up on (its captures: a 529 that never cleared):
/// a "success" that is an error, with the status, the loop "completed" with the error as its
/// answer; the SDKs' result types know no other subtype for it.
#[tokio::test]
async fn an_api_error_is_reported_as_claude_code_reports_it() {
    let mock = server(
        json!({"turns": [{"content": [{"type": "text", "text": "never"}],
        "faults": [{"kind": "http", "status": 529}]}]}),
    )
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "--max-retries", "0", "hi"],
        )
        .await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["api_error_status"], 529);
    assert_eq!(result["terminal_reason"], "completed");
    assert_eq!(result["fast_mode_state"], "off");
    assert!(
        result["result"].as_str().unwrap().contains("529"),
        "{result}"
    );
}

#[tokio::test]
async fn max_turns_gate() {
    let sb = Sandbox::new();
    let f = sb.write("a.txt", "a");
    let read =
        json!({"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": f}}]});
    let mock = server(json!({"turns": [read, read, read]})).await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "--max-turns", "2", "loop"],
        )
        .await;
    assert_eq!(run.status.code(), Some(1));
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["num_turns"], 2);
    assert_eq!(mock.turns_served(), 2);
}

#[tokio::test]
async fn budget_gates() {
    let sb = Sandbox::new();
    let f = sb.write("a.txt", "a");
    let read = json!({"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": f}}],
                      "usage": {"input_tokens": 100000, "output_tokens": 5000}});
    let mock = server(json!({"turns": [read, read, read]})).await;
    let run = sb
        .run(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "json",
                "--model",
                "claude-sonnet-4-5",
                "--max-budget-usd",
                "0.5",
                "loop",
            ],
        )
        .await;
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["subtype"], "error_max_budget_usd", "{}", run.debug());
    // each call costs 0.3 + 0.075 = $0.375: the second call pushes past $0.50
    assert_eq!(result["num_turns"], 2);

    let mock = server(json!({"turns": [read, read, read]})).await;
    let run = sb
        .run(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "json",
                "--max-output-tokens",
                "6000",
                "loop",
            ],
        )
        .await;
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(
        result["subtype"],
        "error_max_output_tokens",
        "{}",
        run.debug()
    );
    assert_eq!(result["num_turns"], 2);
}

#[tokio::test]
async fn unknown_model_costs_zero_and_says_so() {
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "hi"}]}]})).await;
    let sb = Sandbox::new();
    let run = sb
        .run(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "json",
                "--model",
                "my-local-model",
                "x",
            ],
        )
        .await;
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["total_cost_usd"], 0.0);
    assert!(result["cost_note"].as_str().unwrap().contains("no pricing"));
}

#[tokio::test]
async fn missing_key_and_unreachable_url_are_one_clear_line() {
    let sb = Sandbox::new();
    let mut cmd = sb.command("http://127.0.0.1:9", &["-p", "hi"]);
    cmd.env_remove("ANTHROPIC_API_KEY");
    let run = common::Run::from(cmd.output().await.unwrap());
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr.contains("ANTHROPIC_API_KEY is not set"),
        "{}",
        run.debug()
    );
    assert_eq!(run.stderr.trim().lines().count(), 1);

    let run = sb
        .run("http://127.0.0.1:9", &["-p", "--max-retries", "1", "hi"])
        .await;
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr.contains("could not reach the API"),
        "{}",
        run.debug()
    );
    assert!(!run.stderr.contains("panicked"));
}

#[tokio::test]
async fn transcript_has_the_user_message_and_resume_continues() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "first answer"}]},
        {"content": [{"type": "text", "text": "second answer"}], "expect_text": "first answer"},
        {"content": [{"type": "text", "text": "third answer"}], "expect_text": "second answer"}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "remember me"],
        )
        .await;
    let first: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let id = first["session_id"].as_str().unwrap().to_string();
    let transcripts = sb.transcripts();
    assert_eq!(transcripts.len(), 1);
    assert!(transcripts[0].ends_with(format!("{id}.jsonl")));
    assert!(
        std::fs::read_to_string(&transcripts[0])
            .unwrap()
            .contains("remember me")
    );

    let run = sb
        .run(
            &mock.url(),
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
    assert!(run.status.success(), "{}", run.debug());
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "--continue", "once more"],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let last: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(last["session_id"], id.as_str());
    assert_eq!(bodies(&mock)[2]["messages"].as_array().unwrap().len(), 5);

    let run = sb
        .run(&mock.url(), &["-p", "--resume", "no-such-session", "x"])
        .await;
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr.contains("no session `no-such-session`"),
        "{}",
        run.debug()
    );
}

#[tokio::test]
async fn stream_json_input_serves_many_turns_in_one_process() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "one"}], "usage": {"input_tokens": 1000, "output_tokens": 100}},
        {"content": [{"type": "text", "text": "two"}], "expect_text": "second question",
         "usage": {"input_tokens": 1000, "output_tokens": 100}}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut input = String::new();
    for q in ["first question", "second question"] {
        input.push_str(&user_line(q));
    }
    input.push_str("not json\n");
    let run = sb
        .run_with_stdin(&mock.url(), &STREAM_JSON_IO, input.as_bytes())
        .await;
    // The turns are answered, and the unreadable line is said plainly and fails the exit status.
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    assert!(
        run.stderr.contains("stdin line 3 was skipped: not JSON")
            && !run.stderr.contains("\u{1b}["),
        "{}",
        run.debug()
    );
    let results = run.of_type("result", None);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["result"], "one");
    assert_eq!(results[1]["result"], "two");
    assert_eq!(results[0]["session_id"], results[1]["session_id"]);
    // As in Claude Code, total_cost_usd keeps growing over the turns of one process.
    let (first, second) = (
        results[0]["total_cost_usd"].as_f64().unwrap(),
        results[1]["total_cost_usd"].as_f64().unwrap(),
    );
    assert!(
        first > 0.0 && (second - 2.0 * first).abs() < 1e-12,
        "{first} {second}"
    );
    assert_eq!(run.of_type("system", Some("init")).len(), 2);
    assert_eq!(bodies(&mock)[1]["messages"].as_array().unwrap().len(), 3);
}

/// The API key is not in `/proc/<pid>/environ` of a running ouro, even for root (who reads
/// any process's files), while requests still carry it.
#[tokio::test]
async fn the_api_key_is_not_readable_from_procfs_while_ouro_runs() {
    let mock = server(json!({"turns": [
        {"delay_ms": 300, "content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let watched = common::Watched::spawn(sb.command(&mock.url(), &["-p", "hi"]));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while mock.requests().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no request arrived");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let pid = watched.pid();
    // Other variables are still there (ouro's environment was not wiped), the key is not.
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let text = String::from_utf8_lossy(&environ);
    if !environ.is_empty() {
        assert!(text.contains("OURO_HOME="), "{text}");
    }
    assert!(!text.contains(API_KEY), "the key is readable in {text}");
    let run = watched.finish(std::time::Duration::from_secs(30)).await;
    assert!(run.status.success(), "{}", run.debug());
    let requests = mock.requests();
    assert_eq!(
        requests[0].headers.get("x-api-key").map(String::as_str),
        Some(API_KEY)
    );
}
