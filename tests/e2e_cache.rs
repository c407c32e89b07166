//! End-to-end: prompt caching across turns, billed as the API bills it (the mock keeps the
//! prefixes written at cache breakpoints and reports reads and writes).

use crate::common;

use common::{Sandbox, server};
use serde_json::{Value, json};

/// `turns` tool rounds reading a file, then an answer.
fn session(sb: &Sandbox, turns: usize) -> Value {
    let file = sb.write("notes.txt", &"a line of notes for the model\n".repeat(40));
    let mut script: Vec<Value> = (0..turns)
        .map(|_| json!({"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}}]}))
        .collect();
    script.push(json!({"content": [{"type": "text", "text": "done"}]}));
    json!({"turns": script})
}

/// Per request: (uncached input, cache writes, cache reads), from the stream-json messages.
fn usages(run: &common::Run) -> Vec<(u64, u64, u64)> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for event in run.of_type("assistant", None) {
        let id = event["message"]["id"].as_str().unwrap().to_string();
        if seen.contains(&id) {
            continue;
        }
        seen.push(id);
        let u = &event["message"]["usage"];
        let n = |k: &str| u[k].as_u64().unwrap();
        out.push((
            n("input_tokens"),
            n("cache_creation_input_tokens"),
            n("cache_read_input_tokens"),
        ));
    }
    out
}

/// Input billed in base-rate tokens: uncached + 1.25 × writes + 0.1 × reads.
fn billed(usages: &[(u64, u64, u64)]) -> f64 {
    usages
        .iter()
        .map(|(input, write, read)| *input as f64 + 1.25 * *write as f64 + 0.1 * *read as f64)
        .sum()
}

#[tokio::test]
async fn every_turn_reads_the_previous_turns_prefix_from_cache() {
    let sb = Sandbox::new();
    let mock = server(session(&sb, 20)).await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "stream-json", "read it"],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let usages = usages(&run);
    assert_eq!(usages.len(), 21, "{usages:?}");
    let (first_input, first_write, first_read) = usages[0];
    assert_eq!(first_read, 0);
    assert!(
        first_write > 1000,
        "tools and system prompt are cached: {usages:?}"
    );
    assert!(first_input < 100, "{usages:?}");
    for pair in usages.windows(2) {
        let ((_, write_before, read_before), (input, _, read)) = (pair[0], pair[1]);
        assert_eq!(
            read,
            read_before + write_before,
            "a turn reads everything the turn before it read or wrote: {usages:?}"
        );
        assert!(
            input < 100,
            "only the newest blocks are uncached: {usages:?}"
        );
    }
    // The requests carry at most four breakpoints, the newest on the last message.
    for body in common::bodies(&mock) {
        let marks = body.to_string().matches("cache_control").count();
        assert!((1..=4).contains(&marks), "{marks} breakpoints");
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        assert!(last.to_string().contains("cache_control"), "{last}");
    }
    // The history itself stays free of breakpoints.
    let transcript = std::fs::read_to_string(&sb.transcripts()[0]).unwrap();
    assert!(!transcript.contains("cache_control"));
}

#[tokio::test]
async fn caching_bills_a_fifty_turn_session_five_times_less() {
    let cached = {
        let sb = Sandbox::new();
        let mock = server(session(&sb, 50)).await;
        let run = sb
            .run(
                &mock.url(),
                &["-p", "--output-format", "stream-json", "read it"],
            )
            .await;
        assert!(run.status.success(), "{}", run.debug());
        billed(&usages(&run))
    };
    let uncached = {
        let sb = Sandbox::new();
        let mock = server(session(&sb, 50)).await;
        let run = sb
            .command(
                &mock.url(),
                &["-p", "--output-format", "stream-json", "read it"],
            )
            .env("DISABLE_PROMPT_CACHING", "1")
            .output()
            .await
            .unwrap();
        let run = common::Run::from(run);
        assert!(run.status.success(), "{}", run.debug());
        for body in common::bodies(&mock) {
            assert!(!body.to_string().contains("cache_control"));
        }
        billed(&usages(&run))
    };
    assert!(
        uncached >= 5.0 * cached,
        "billed input: {uncached} uncached vs {cached} cached"
    );
    eprintln!(
        "50-turn session, billed input tokens: {uncached:.0} without caching, {cached:.0} with ({:.1}x)",
        uncached / cached
    );
}

#[tokio::test]
async fn the_caching_setting_switches_breakpoints_off() {
    let sb = Sandbox::new();
    sb.write(".ouro/settings.json", r#"{"promptCaching": false}"#);
    let mock = server(session(&sb, 2)).await;
    let run = sb
        .run(&mock.url(), &["-p", "--trust-project", "read it"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    for body in common::bodies(&mock) {
        assert!(!body.to_string().contains("cache_control"));
    }
}
