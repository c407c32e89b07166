//! Drives the mock Messages API server over real HTTP, the way ouro's client will.

use std::time::{Duration, Instant};

use futures::StreamExt;
use ouro::mock::{Fault, MockServer, Scenario, Turn};
use serde_json::{Value, json};

fn client() -> reqwest::Client {
    crate::common::http_client()
}

fn request(text: &str, stream: bool) -> Value {
    json!({"model": "claude-test-1", "max_tokens": 1024, "stream": stream,
        "messages": [{"role": "user", "content": text}]})
}

async fn post(server: &MockServer, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/messages?beta=true", server.url()))
        .header("x-api-key", "sk-test")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Parses complete SSE frames (`event:` + `data:` lines ended by a blank line).
fn parse_sse(text: &str) -> Vec<(String, Value)> {
    text.split_terminator("\n\n")
        .map(|frame| {
            let mut name = "";
            let mut data = "";
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    name = v;
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = v;
                }
            }
            (name.to_string(), serde_json::from_str(data).unwrap())
        })
        .collect()
}

async fn sse_events(response: reqwest::Response) -> Vec<(String, Value)> {
    assert_eq!(response.status(), 200);
    parse_sse(&response.text().await.unwrap())
}

/// Reads a body until it ends or breaks: (text received, whether it broke).
async fn read_until_break(response: reqwest::Response) -> (String, bool) {
    let mut stream = response.bytes_stream();
    let mut text = String::new();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => text.push_str(std::str::from_utf8(&bytes).unwrap()),
            Err(_) => return (text, true),
        }
    }
    (text, false)
}

async fn error_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let request_id = response.headers()["request-id"]
        .to_str()
        .unwrap()
        .to_string();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["request_id"], request_id);
    (status, body["error"].clone())
}

#[tokio::test]
async fn plain_text_turn_streams_the_full_event_sequence() {
    let server = MockServer::start(Scenario::new(vec![Turn::text("Hello from the mock")]))
        .await
        .unwrap();
    let response = post(&server, &request("hi", true)).await;
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream; charset=utf-8"
    );
    assert!(
        response.headers()["request-id"]
            .to_str()
            .unwrap()
            .starts_with("req_")
    );
    let events = sse_events(response).await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    for (name, data) in &events {
        assert_eq!(data["type"], name.as_str());
    }
    let message = &events[0].1["message"];
    assert_eq!(message["id"], "msg_mock_0000");
    assert_eq!(message["model"], "claude-test-1");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["content"], json!([]));
    assert_eq!(message["stop_reason"], Value::Null);
    assert_eq!(message["usage"]["output_tokens"], 1);
    assert!(message["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        events[1].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    let text: String = events[3..6]
        .iter()
        .map(|(_, d)| d["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello from the mock");
    assert_eq!(
        events[7].1["delta"],
        json!({"stop_reason": "end_turn", "stop_sequence": null})
    );
    assert_eq!(server.turns_served(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn the_sse_framing_names_each_event_by_its_type() {
    let server = MockServer::start(Scenario::new(vec![Turn::tool_use(
        "Bash",
        json!({"command": "ls -la"}),
    )]))
    .await
    .unwrap();
    let response = post(&server, &request("hi", true)).await;
    let mut decoder = ouro::api::sse::Decoder::new(1 << 20);
    let mut events = std::collections::VecDeque::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        decoder.feed(&chunk.unwrap(), &mut events).unwrap();
    }
    assert_eq!(events.front().unwrap().event, "message_start");
    assert_eq!(events.back().unwrap().event, "message_stop");
    for e in &events {
        let data: Value = serde_json::from_str(&e.data).unwrap();
        assert_eq!(data["type"], e.event.as_str());
    }
}

#[tokio::test]
async fn tool_use_partial_json_concatenates_to_the_input() {
    let input = json!({"file_path": "/tmp/project/src/main.rs", "offset": 10, "limit": 200});
    let server = MockServer::start(Scenario::new(vec![Turn::tool_use("Read", input.clone())]))
        .await
        .unwrap();
    let events = sse_events(post(&server, &request("read it", true)).await).await;
    assert_eq!(
        events[1].1["content_block"],
        json!({"type": "tool_use", "id": "toolu_mock_0000_00", "name": "Read", "input": {}})
    );
    let parts: Vec<&str> = events
        .iter()
        .filter(|(_, d)| d["delta"]["type"] == "input_json_delta")
        .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(parts[0], "");
    assert!(parts.len() > 2, "{parts:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&parts.concat()).unwrap(),
        input
    );
    let delta = &events[events.len() - 2].1;
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn non_streaming_requests_get_the_whole_message() {
    let server = MockServer::start(Scenario::new(vec![Turn::text("plain")]))
        .await
        .unwrap();
    let response = post(&server, &request("hi", false)).await;
    assert_eq!(response.status(), 200);
    let message: Value = response.json().await.unwrap();
    assert_eq!(message["type"], "message");
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": "plain"}])
    );
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(message["model"], "claude-test-1");
}

#[tokio::test]
async fn http_faults_come_in_order_then_the_turn_is_served() {
    let mut turn = Turn::text("finally");
    turn.faults = vec![
        Fault::Http {
            status: 429,
            retry_after: Some(1),
            message: None,
        },
        Fault::Http {
            status: 529,
            retry_after: None,
            message: None,
        },
        Fault::Http {
            status: 500,
            retry_after: None,
            message: None,
        },
        Fault::PromptTooLong,
    ];
    let server = MockServer::start(Scenario::new(vec![turn])).await.unwrap();

    let response = post(&server, &request("hi", true)).await;
    assert_eq!(response.headers()["retry-after"], "1");
    let (status, error) = error_of(response).await;
    assert_eq!(
        (status, error["type"].as_str()),
        (429, Some("rate_limit_error"))
    );

    let response = post(&server, &request("hi", true)).await;
    assert!(response.headers().get("retry-after").is_none());
    let (status, error) = error_of(response).await;
    assert_eq!(
        (status, error),
        (
            529,
            json!({"type": "overloaded_error", "message": "Overloaded"})
        )
    );

    let (status, error) = error_of(post(&server, &request("hi", true)).await).await;
    assert_eq!((status, error["type"].as_str()), (500, Some("api_error")));

    let (status, error) = error_of(post(&server, &request("hi", true)).await).await;
    assert_eq!(
        (status, error),
        (
            400,
            json!({"type": "invalid_request_error",
                "message": "prompt is too long: 250000 tokens > 200000 maximum"})
        )
    );
    assert_eq!(server.turns_served(), 0);

    let events = sse_events(post(&server, &request("hi", true)).await).await;
    assert_eq!(events.last().unwrap().0, "message_stop");
    assert_eq!(server.turns_served(), 1);
    let statuses: Vec<_> = server.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [429, 529, 500, 400, 200]);
}

#[tokio::test]
async fn cut_fault_drops_the_connection_mid_body() {
    let mut turn = Turn::text("this text will be cut off");
    turn.faults = vec![Fault::Cut {
        after_events: 4,
        served: false,
    }];
    let server = MockServer::start(Scenario::new(vec![turn])).await.unwrap();

    let response = post(&server, &request("hi", true)).await;
    assert_eq!(response.status(), 200);
    let (text, broke) = read_until_break(response).await;
    assert!(broke, "the body should end with an error, got a clean end");
    let events = parse_sse(&text);
    assert_eq!(events.len(), 4, "{text}");
    assert_eq!(events[3].0, "content_block_delta");
    assert_eq!(server.turns_served(), 0);

    let (text, broke) = read_until_break(post(&server, &request("hi", true)).await).await;
    assert!(!broke);
    assert_eq!(parse_sse(&text).last().unwrap().0, "message_stop");
}

#[tokio::test]
async fn cut_fault_on_a_non_streaming_request_breaks_the_json() {
    let mut turn = Turn::text("a reply long enough to be cut in half somewhere");
    turn.faults = vec![Fault::Cut {
        after_events: 0,
        served: false,
    }];
    let server = MockServer::start(Scenario::new(vec![turn])).await.unwrap();
    let (text, broke) = read_until_break(post(&server, &request("hi", false)).await).await;
    assert!(broke);
    assert!(text.starts_with('{'));
    assert!(serde_json::from_str::<Value>(&text).is_err());
}

#[tokio::test]
async fn sse_error_fault_ends_the_stream_with_an_error_event() {
    let mut turn = Turn::text("never finished");
    turn.faults = vec![Fault::SseError {
        after_events: 3,
        error_type: "overloaded_error".into(),
        message: None,
    }];
    let server = MockServer::start(Scenario::new(vec![turn])).await.unwrap();
    let (text, broke) = read_until_break(post(&server, &request("hi", true)).await).await;
    assert!(!broke);
    let events = parse_sse(&text);
    assert_eq!(events.len(), 4);
    assert_eq!(
        events[3],
        (
            "error".to_string(),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        )
    );
    assert_eq!(server.requests()[0].turn, Some(0));
    assert_eq!(server.turns_served(), 0);
}

#[tokio::test]
async fn tool_pairing_violations_are_rejected_without_consuming_the_turn() {
    let server = MockServer::start(Scenario::new(vec![Turn::text("ok")]))
        .await
        .unwrap();
    let body = json!({"model": "m", "max_tokens": 100, "stream": true, "messages": [
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_x", "name": "Read", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "forgot the result"}]}
    ]});
    let (status, error) = error_of(post(&server, &body).await).await;
    assert_eq!(status, 400);
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(
        error["message"],
        "messages.3: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_x. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    );
    let events = sse_events(post(&server, &request("hi", true)).await).await;
    assert_eq!(events[0].1["message"]["id"], "msg_mock_0000");
    let log = server.requests();
    assert_eq!((log[0].status, log[0].turn), (400, None));
    assert_eq!((log[1].status, log[1].turn), (200, Some(0)));
}

#[tokio::test]
async fn missing_api_key_is_a_401() {
    let server = MockServer::start(Scenario::new(vec![Turn::text("ok")]))
        .await
        .unwrap();
    let response = client()
        .post(format!("{}/v1/messages", server.url()))
        .header("anthropic-version", "2023-06-01")
        .json(&request("hi", true))
        .send()
        .await
        .unwrap();
    let (status, error) = error_of(response).await;
    assert_eq!(
        (status, error),
        (
            401,
            json!({"type": "authentication_error", "message": "x-api-key header is required"})
        )
    );
    assert_eq!(server.turns_served(), 0);
}

#[tokio::test]
async fn an_exhausted_scenario_fails_clearly() {
    let server = MockServer::start(Scenario::new(vec![Turn::text("only one")]))
        .await
        .unwrap();
    sse_events(post(&server, &request("hi", true)).await).await;
    let (status, error) = error_of(post(&server, &request("again", true)).await).await;
    assert_eq!(status, 400);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("mock scenario exhausted after 1 turns"),
        "{message}"
    );
    assert_eq!(server.requests()[1].turn, None);
}

#[tokio::test]
async fn context_limit_rejects_large_prompts_only() {
    let scenario = Scenario {
        context_limit_tokens: Some(100),
        cache_min_tokens: None,
        overloaded_models: Vec::new(),
        turns: vec![Turn::text("fits")],
    };
    let server = MockServer::start(scenario).await.unwrap();
    let big = request(&"word ".repeat(200), true);
    let (status, error) = error_of(post(&server, &big).await).await;
    assert_eq!(status, 400);
    let tokens = serde_json::to_vec(&big).unwrap().len() / 4;
    assert_eq!(
        error["message"],
        format!("prompt is too long: {tokens} tokens > 100 maximum")
    );
    let events = sse_events(post(&server, &request("small", true)).await).await;
    assert_eq!(events[0].0, "message_start");
    assert_eq!(server.turns_served(), 1);
}

#[tokio::test]
async fn expect_text_checks_what_the_client_sent() {
    let mut turn = Turn::text("ok");
    turn.expect_text = Some("tool output: 42".into());
    let server = MockServer::start(Scenario::new(vec![turn])).await.unwrap();
    let (status, error) = error_of(post(&server, &request("no answer", true)).await).await;
    assert_eq!(status, 400);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("\"tool output: 42\""),
        "{error}"
    );
    sse_events(post(&server, &request("the tool output: 42 arrived", true)).await).await;
}

#[tokio::test]
async fn the_request_log_records_everything() {
    let server = MockServer::start(Scenario::new(vec![Turn::text("ok")]))
        .await
        .unwrap();
    let body = request("hello log", true);
    sse_events(post(&server, &body).await).await;
    let missing = client()
        .get(format!("{}/v1/models", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    let log = server.requests();
    assert_eq!(log.len(), 2);
    let first = &log[0];
    assert_eq!(
        (first.method.as_str(), first.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(first.query.as_deref(), Some("beta=true"));
    assert_eq!(first.headers["x-api-key"], "sk-test");
    assert_eq!(first.headers["anthropic-version"], "2023-06-01");
    assert_eq!(first.body, body);
    assert_eq!((first.status, first.turn), (200, Some(0)));
    assert_eq!(
        (log[1].method.as_str(), log[1].status, log[1].turn),
        ("GET", 404, None)
    );

    let over_http: Value = client()
        .get(format!("{}/_mock/requests", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(over_http, serde_json::to_value(&log).unwrap());
    assert_eq!(server.requests().len(), 2, "the log endpoint is not logged");
}

#[tokio::test]
async fn delay_ms_spaces_out_the_events() {
    let mut turn = Turn::text("slow");
    turn.delay_ms = 60;
    let server = MockServer::start(Scenario::new(vec![turn])).await.unwrap();
    let response = post(&server, &request("hi", true)).await;
    let mut stream = response.bytes_stream();
    let mut arrivals = Vec::new();
    let mut text = String::new();
    while let Some(chunk) = stream.next().await {
        text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        arrivals.push(Instant::now());
    }
    let events = parse_sse(&text);
    assert!(events.len() >= 2);
    // sleep() never returns early, so the gaps add up to at least (events - 1) delays.
    let spread = *arrivals.last().unwrap() - arrivals[0];
    assert!(
        spread >= Duration::from_millis(60 * (events.len() as u64 - 2)),
        "{spread:?}"
    );
}

#[tokio::test]
async fn shutdown_ends_a_slow_stream_in_flight() {
    let mut turn = Turn::text("a very slow reply");
    turn.delay_ms = 60_000;
    let server = MockServer::start(Scenario::new(vec![turn])).await.unwrap();
    let response = post(&server, &request("hi", true)).await;
    let mut stream = response.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(
        std::str::from_utf8(&first)
            .unwrap()
            .contains("message_start")
    );
    let url = server.url();
    tokio::time::timeout(Duration::from_secs(30), server.shutdown())
        .await
        .expect("shutdown should not wait for the slow stream");
    let rest = tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .expect("the stream should end once the server is shut down");
    assert!(
        !matches!(rest, Some(Ok(_))),
        "no more events after shutdown"
    );
    assert!(
        client()
            .post(format!("{url}/v1/messages"))
            .send()
            .await
            .is_err()
    );
}

#[tokio::test]
async fn scenario_files_load_and_bad_scenarios_are_refused() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/scenarios/read_then_answer.json"
    );
    let scenario = Scenario::from_file(path).unwrap();
    assert!(scenario.turns.len() >= 2);
    let bad = Scenario::new(vec![Turn {
        faults: vec![Fault::Http {
            status: 200,
            retry_after: None,
            message: None,
        }],
        ..Turn::default()
    }]);
    let err = MockServer::start(bad).await.err().unwrap();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[tokio::test]
async fn ouros_own_client_reads_turns_and_faults() {
    use ouro::api::client::{ApiError, Client};
    use ouro::api::stream::Assembler;
    use ouro::api::types::{ContentBlock, Message, MessagesRequest, StopReason};

    let mut first = Turn::tool_use("Read", json!({"file_path": "/x"}));
    first.faults = vec![
        Fault::Http {
            status: 429,
            retry_after: Some(3),
            message: None,
        },
        Fault::Cut {
            after_events: 5,
            served: false,
        },
    ];
    let server = MockServer::start(Scenario::new(vec![first])).await.unwrap();
    let client = Client::new(server.url(), "sk-test-key").unwrap();
    let request = MessagesRequest {
        model: "claude-test-1",
        max_tokens: 100,
        messages: ouro::api::types::Messages::plain(&[Message::user_text("read /x")]),
        system: &[],
        tools: None,
        thinking: None,
        output_config: None,
        context_management: None,
        stream: true,
    }
    .to_body();

    let err = client.stream(&request, &[], None).await.err().unwrap();
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));

    let mut events = Box::pin(client.stream(&request, &[], None).await.unwrap());
    let mut broke = false;
    while let Some(item) = events.next().await {
        if let Err(e) = item {
            assert!(matches!(e, ApiError::Stream(_)), "{e}");
            broke = true;
        }
    }
    assert!(broke, "a cut stream must surface as a stream error");

    let mut assembler = Assembler::new();
    let mut events = Box::pin(client.stream(&request, &[], None).await.unwrap());
    while let Some(item) = events.next().await {
        assembler.push(item.unwrap()).unwrap();
    }
    assert!(assembler.complete);
    assert_eq!(assembler.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(
        assembler.blocks,
        [ContentBlock::ToolUse {
            id: "toolu_mock_0000_00".into(),
            name: "Read".into(),
            input: json!({"file_path": "/x"}),
        }]
    );
}

/// A request for ouro's own client, and the client with short stream limits.
fn own_client(server: &MockServer) -> (ouro::api::client::Client, ouro::api::body::Body) {
    use ouro::api::client::{Client, StreamLimits};
    use ouro::api::types::{Message, MessagesRequest};
    let client = Client::new(server.url(), "sk-test-key")
        .unwrap()
        .with_limits(StreamLimits {
            max_event_bytes: 1 << 20,
            idle_timeout: Duration::from_millis(400),
        });
    let body = MessagesRequest {
        model: "claude-test-1",
        max_tokens: 100,
        messages: ouro::api::types::Messages::plain(&[Message::user_text("hi")]),
        system: &[],
        tools: None,
        thinking: None,
        output_config: None,
        context_management: None,
        stream: true,
    }
    .to_body();
    (client, body)
}

/// Everything one streamed response gives ouro's client: the events assembled, and the first
/// error (from the stream or the assembler).
async fn assemble(
    server: &MockServer,
) -> (
    ouro::api::stream::Assembler,
    Option<ouro::api::client::ApiError>,
) {
    let (client, body) = own_client(server);
    let mut assembler = ouro::api::stream::Assembler::new();
    let mut events = Box::pin(client.stream(&body, &[], None).await.unwrap());
    while let Some(item) = events.next().await {
        match item.and_then(|event| assembler.push(event)) {
            Ok(_) => {}
            Err(e) => return (assembler, Some(e)),
        }
    }
    (assembler, None)
}

fn faulty(fault: Fault) -> Scenario {
    let mut turn = Turn::text("Hello there, this is a complete answer.");
    turn.faults = vec![fault];
    Scenario::new(vec![turn])
}

#[tokio::test]
async fn an_unreadable_delta_is_an_error_not_a_gap() {
    let server = MockServer::start(faulty(Fault::InvalidJson { after_events: 4 }))
        .await
        .unwrap();
    let (assembler, error) = assemble(&server).await;
    let error = error.expect("the invalid event must surface");
    assert!(
        matches!(&error, ouro::api::client::ApiError::Malformed(m) if m.contains("content_block_delta")),
        "{error}"
    );
    assert!(error.is_retryable());
    assert!(!assembler.complete);
}

#[tokio::test]
async fn a_block_without_its_stop_is_an_error() {
    for event in ["content_block_stop", "message_stop"] {
        let server = MockServer::start(faulty(Fault::DropEvents {
            event: event.into(),
        }))
        .await
        .unwrap();
        let (assembler, error) = assemble(&server).await;
        let error = match error {
            Some(e) => e.to_string(),
            None => {
                assert!(
                    !assembler.complete,
                    "{event}: the message must not count as complete"
                );
                continue;
            }
        };
        assert!(
            error.contains("still open") || error.contains("not open"),
            "{event}: {error}"
        );
        assert!(assembler.blocks.is_empty(), "{event}");
    }
}

#[tokio::test]
async fn a_stalled_stream_ends_even_while_pings_arrive() {
    for pings in [false, true] {
        let server = MockServer::start(faulty(Fault::Stall {
            after_events: 3,
            pings,
        }))
        .await
        .unwrap();
        let started = Instant::now();
        let (_, error) = assemble(&server).await;
        let error = error.expect("a stall must end the stream");
        assert!(
            matches!(error, ouro::api::client::ApiError::Stalled(_)),
            "pings={pings}: {error}"
        );
        assert!(error.to_string().contains("stalled"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}

#[tokio::test]
async fn an_endless_line_is_stopped_at_the_event_limit() {
    let server = MockServer::start(faulty(Fault::OversizedLine {
        after_events: 2,
        bytes: 4 << 20,
    }))
    .await
    .unwrap();
    let (_, error) = assemble(&server).await;
    let error = error
        .expect("the oversized line must be refused")
        .to_string();
    assert!(
        error.contains("larger than 1048576 bytes")
            && error.contains("OURO_STREAM_MAX_EVENT_BYTES"),
        "{error}"
    );
}

/// A request lets go of its `Sent` once its whole body is on its way, so work that waits for it
/// (the prompt's checkpoint) starts after the request went out; an attempt that never sends its
/// body (nobody listens) lets go of it unsent, so nothing waits forever.
#[tokio::test]
async fn a_request_says_when_its_body_is_on_its_way_or_never_will_be() {
    let server = MockServer::start(Scenario::new(vec![Turn::text("Hello.")]))
        .await
        .unwrap();
    let (client, body) = own_client(&server);
    let (sent, when_sent) = ouro::api::body::when_sent();
    let mut events = Box::pin(client.stream(&body, &[], Some(sent)).await.unwrap());
    assert_eq!(when_sent.await, Ok(()));
    while let Some(event) = events.next().await {
        event.unwrap();
    }
    assert_eq!(server.requests().len(), 1);

    let nobody = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", nobody.local_addr().unwrap());
    drop(nobody);
    let client = ouro::api::client::Client::new(url, "sk-test-key").unwrap();
    let (sent, when_sent) = ouro::api::body::when_sent();
    assert!(client.stream(&body, &[], Some(sent)).await.is_err());
    assert!(
        when_sent.await.is_err(),
        "an unsent body must not say it was sent"
    );
}

/// The mock notes when its first request had been read whole, on the clock every process
/// shares, so a benchmark times a client's start without polling for it.
#[tokio::test]
async fn the_first_request_is_timed_on_the_shared_clock() {
    let server = MockServer::start(Scenario::new(vec![
        Turn::text("Hello."),
        Turn::text("Again."),
    ]))
    .await
    .unwrap();
    assert_eq!(server.first_request_ns(), None);
    let (client, body) = own_client(&server);
    let before = ouro::sys::clock::monotonic_ns();
    for _ in 0..2 {
        let mut events = Box::pin(client.stream(&body, &[], None).await.unwrap());
        while let Some(event) = events.next().await {
            event.unwrap();
        }
    }
    let after = ouro::sys::clock::monotonic_ns();
    let first = server.first_request_ns().expect("a request came");
    assert!(
        before <= first && first <= after,
        "{before} {first} {after}"
    );
    assert_eq!(server.requests().len(), 2);
    let sent_second = server.first_request_ns();
    assert_eq!(sent_second, Some(first), "the first request's time stays");
}
