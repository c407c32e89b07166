//! The parser against recorded Claude Code captures (`tests/fixtures/claude-cli/`, copied from
//! the real CLI's stream-json output).

use super::{CostTracker, TurnAccumulator, TurnOutcome};
use crate::api::types::ContentBlock;
use crate::stream_json::read::*;

fn fixture(name: &str) -> Vec<Line> {
    let path = format!(
        "{}/tests/fixtures/claude-cli/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            parse_line(line)
                .unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1))
                .unwrap_or_else(|| panic!("{name}:{}: blank", i + 1))
        })
        .collect()
}

/// Feeds events until each result, returning the outcome of every completed turn.
fn turns(events: Vec<Line>) -> (Vec<TurnOutcome>, TurnAccumulator) {
    let mut out = Vec::new();
    let mut acc = TurnAccumulator::default();
    for event in events {
        if acc.feed(event) {
            out.push(std::mem::take(&mut acc).finish().unwrap());
        }
    }
    (out, acc)
}

#[test]
fn tools_read_gives_text_tools_usage_cost_and_session() {
    let events = fixture("tools-read.jsonl");
    let Line::Init(init) = &events[0] else {
        panic!("first event is not init: {:?}", events[0]);
    };
    assert_eq!(init.session_id, "d0e54d9c-fa16-4e6c-b274-956c240d1ce1");
    assert_eq!(init.cwd, "/home/user/project");
    assert!(init.tools.contains(&"Read".to_string()));

    let (outcomes, _) = turns(events);
    assert_eq!(outcomes.len(), 1);
    let t = &outcomes[0];
    assert_eq!(
        t.session_id.as_deref(),
        Some("d0e54d9c-fa16-4e6c-b274-956c240d1ce1")
    );
    assert_eq!(t.text, "Fixed the typo: brwon -> brown.");
    assert!(!t.is_error);
    assert_eq!(t.usage.input_tokens, 673);
    assert_eq!(t.usage.output_tokens, 54);
    assert_eq!(t.total_cost_usd, Some(0.004715));
    let names: Vec<&str> = t.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Read", "Edit"]);
    assert_eq!(
        t.tool_calls[0].input["file_path"],
        "/home/user/project/notes.txt"
    );
    assert!(t.tool_calls[0].result.as_deref().unwrap().contains("brwon"));
    assert!(
        t.tool_calls[1]
            .result
            .as_deref()
            .unwrap()
            .contains("updated successfully")
    );
    assert!(t.tool_calls.iter().all(|c| !c.is_error));
}

#[test]
fn tools_parallel_matches_results_that_arrive_out_of_order() {
    let events = fixture("tools-parallel.jsonl");
    let assistants = events
        .iter()
        .filter(|e| matches!(e, Line::Assistant(a) if a.message_id == "msg_fake_0001"))
        .count();
    assert_eq!(assistants, 6, "one assistant event per block");

    let (outcomes, acc) = turns(events);
    // The capture stops before the turn's result.
    assert!(outcomes.is_empty());
    assert_eq!(
        acc.session_id(),
        Some("998d59b0-f91a-47cf-a9c9-c99fb04201f0")
    );
    assert!(acc.finish().is_none());

    let (_, acc) = turns(fixture("tools-parallel.jsonl"));
    let mut acc = acc;
    acc.feed(
        parse_line(r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s"}"#)
            .unwrap()
            .unwrap(),
    );
    let t = acc.finish().unwrap();
    assert_eq!(t.tool_calls.len(), 5);
    for (i, call) in t.tool_calls.iter().enumerate() {
        assert_eq!(call.id, format!("toolu_fake_0001_0{}", i + 1));
        assert_eq!(
            call.input["file_path"],
            format!("/home/user/project/src/f{i}.txt")
        );
        let result = call.result.as_deref().unwrap();
        assert!(
            result.contains(&format!("file {i} line 1")),
            "{i}: {result}"
        );
    }
    // No text in the result line: the last assistant message's text stands in.
    assert_eq!(t.text, "Step 2.");
    // No usage in the result line: each message's last usage, summed.
    assert_eq!(t.usage.input_tokens, 139 + 1168);
}

#[test]
fn multiturn_results_are_per_turn_and_cost_totals_are_cumulative() {
    let events = fixture("multiturn-stdin.jsonl");
    let inits = events.iter().filter(|e| matches!(e, Line::Init(_))).count();
    assert_eq!(inits, 2, "every turn starts with init");
    let (outcomes, _) = turns(events);
    assert_eq!(outcomes.len(), 2);
    assert_eq!(outcomes[0].usage.input_tokens, 1669);
    assert_eq!(outcomes[1].usage.input_tokens, 1723);
    assert_eq!(outcomes[1].usage.output_tokens, 7);
    assert_eq!(outcomes[1].text, "(fakeapi: scenario exhausted)");

    let mut costs = CostTracker::default();
    let first = costs.turn_cost(outcomes[0].total_cost_usd, || unreachable!());
    let second = costs.turn_cost(outcomes[1].total_cost_usd, || unreachable!());
    assert!((first - 0.008795).abs() < 1e-12, "{first}");
    // 1723 input and 7 output tokens at $5/$25 per million.
    assert!((second - 0.00879).abs() < 1e-12, "{second}");
    assert_eq!(costs.turn_cost(None, || 0.25), 0.25);
}

#[test]
fn extra_events_parse_retries_compaction_and_error_results() {
    let events = fixture("extra-events.jsonl");
    let retries: Vec<&ApiRetry> = events
        .iter()
        .filter_map(|e| match e {
            Line::ApiRetry(r) => Some(r),
            _ => None,
        })
        .collect();
    let statuses: Vec<Option<u16>> = retries.iter().map(|r| r.error_status).collect();
    assert_eq!(statuses, [Some(529), Some(529), Some(529), Some(429)]);
    assert_eq!(retries[3].error, "rate_limit");
    assert_eq!(retries[2].attempt, 3);

    let others: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Line::Other(kind) => Some(kind.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        others,
        [
            "system/status",
            "system/status",
            "system/compact_boundary",
            "system/status",
            "system/status"
        ]
    );
    let synthetic = events
        .iter()
        .filter(|e| matches!(e, Line::User(u) if u.synthetic))
        .count();
    assert_eq!(synthetic, 1, "the compaction summary is marked synthetic");

    let results: Vec<&ResultEvent> = events
        .iter()
        .filter_map(|e| match e {
            Line::Result(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r.is_error));
    let statuses: Vec<Option<u16>> = results.iter().map(|r| r.api_error_status).collect();
    assert_eq!(statuses, [Some(400), None, Some(529)]);
    assert_eq!(results[0].text.as_deref(), Some("Prompt is too long"));
    assert_eq!(results[2].total_cost_usd, Some(0.0));

    let errors: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Line::Assistant(a) => a.error.as_deref(),
            _ => None,
        })
        .collect();
    assert!(errors.contains(&"server_error"), "{errors:?}");
}

#[test]
fn extra_events_fold_into_error_outcomes_and_error_tool_results() {
    let (outcomes, mut rest) = turns(fixture("extra-events.jsonl"));
    assert_eq!(outcomes.len(), 3);
    assert!(outcomes.iter().all(|o| o.is_error));
    assert!(outcomes[1].text.starts_with("API Error: Connection closed"));
    assert_eq!(outcomes[2].api_error_status, Some(529));

    // The last line is an is_error tool_result for a tool_use whose JSON was cut off.
    rest.feed(
        parse_line(
            r#"{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"toolu_fake_0001_01","name":"Write","input":{}}]}}"#,
        )
        .unwrap()
        .unwrap(),
    );
    let last = fixture("extra-events.jsonl").pop().unwrap();
    rest.feed(last);
    rest.feed(Line::Result(ResultEvent {
        subtype: "success".into(),
        is_error: false,
        text: Some("done".into()),
        session_id: None,
        usage: None,
        total_cost_usd: None,
        api_error_status: None,
        num_turns: 1,
        duration_ms: 0,
    }));
    let t = rest.finish().unwrap();
    assert_eq!(t.tool_calls.len(), 1);
    assert!(t.tool_calls[0].is_error);
    assert!(
        t.tool_calls[0]
            .result
            .as_deref()
            .unwrap()
            .contains("InputValidationError")
    );
}

#[test]
fn stream_event_wrappers_give_text_deltas() {
    let line = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}},"session_id":"s"}"#;
    assert_eq!(
        parse_line(line).unwrap(),
        Some(Line::TextDelta("Hel".into()))
    );
    let line = r#"{"type":"stream_event","event":{"type":"message_start","message":{}}}"#;
    assert_eq!(
        parse_line(line).unwrap(),
        Some(Line::Other("stream_event/message_start".into()))
    );
}

#[test]
fn malformed_lines_are_errors_and_unknown_events_are_other() {
    assert_eq!(parse_line("   ").unwrap(), None);
    assert!(matches!(
        parse_line("not json"),
        Err(ParseError::NotJson(_))
    ));
    assert!(matches!(
        parse_line("{\"type\":"),
        Err(ParseError::NotJson(_))
    ));
    assert_eq!(parse_line("[1,2]"), Err(ParseError::NoType));
    assert_eq!(parse_line(r#"{"type":7}"#), Err(ParseError::NoType));
    assert_eq!(
        parse_line(r#"{"type":"rate_limit_event","info":{}}"#).unwrap(),
        Some(Line::Other("rate_limit_event".into()))
    );
    // Unknown content blocks are skipped, known ones kept.
    let line = r#"{"type":"assistant","message":{"id":"m","content":[{"type":"image","source":{}},{"type":"text","text":"hi"}]}}"#;
    let Some(Line::Assistant(a)) = parse_line(line).unwrap() else {
        panic!("not an assistant event");
    };
    assert_eq!(a.blocks, vec![ContentBlock::text("hi")]);
}

#[test]
fn cumulative_totals_become_differences() {
    let mut cumulative = CostTracker::default();
    assert_eq!(cumulative.turn_cost(Some(0.25), || 9.0), 0.25);
    assert_eq!(cumulative.turn_cost(Some(0.75), || 9.0), 0.5);
    assert_eq!(cumulative.turn_cost(None, || 0.125), 0.125);
}
