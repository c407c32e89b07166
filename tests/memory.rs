//! Memory end to end against the mock API: reflect in `auto` stores what the mocked model
//! proposed (secrets redacted), a later session's Recall returns it with its provenance, an
//! invalidated relation stays in history and out of Recall, and an untrusted project's
//! memory is neither read nor written.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::{Run, Sandbox, bodies, server};

const TOKEN: &str = "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

fn stream_lines(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The project's store: the one file under `memory/projects` (its name is the project's key).
fn project_store(sb: &Sandbox) -> PathBuf {
    let folder = sb.home.path().join("memory/projects");
    let stores: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    assert_eq!(stores.len(), 1, "{stores:?}");
    stores[0].clone()
}

async fn memory(sb: &Sandbox, url: &str, args: &[&str]) -> Run {
    let mut all = vec!["memory"];
    all.extend(args);
    let run = sb.run(url, &all).await;
    assert!(run.status.success(), "{}", run.debug());
    run
}

/// The text of the tool_result of `tool_use_id` in the last request.
fn result_text(body: &Value, tool_use_id: &str) -> String {
    let messages = body["messages"].as_array().unwrap();
    for message in messages {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" && block["tool_use_id"] == tool_use_id {
                return match &block["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
            }
        }
    }
    panic!("no result for {tool_use_id} in {body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn reflect_in_auto_stores_the_proposals_and_a_later_recall_returns_them() {
    let sb = Sandbox::new();
    sb.write(".ouro/settings.json", r#"{"memory": {"reflect": "auto"}}"#);
    sb.write(
        "notes.txt",
        &format!("durations look like 5m30s; key {TOKEN}\n"),
    );
    let proposal = json!([
        {"op": "add_node", "type": "Strategy", "id": "parse-durations",
         "properties": {"name": "Parse durations with a suffix table",
                        "description": format!("split number and unit; the key was {TOKEN}")}},
        {"op": "add_node", "type": "Library", "id": "humantime", "properties": {"name": "humantime crate"}},
        {"op": "add_edge", "source": "parse-durations", "target": "humantime", "type": "USES"}
    ]);
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "id": "toolu_read", "name": "Read",
                      "input": {"file_path": sb.root().join("notes.txt")}}]},
        {"content": [{"type": "text", "text": "Durations are number-unit pairs."}]},
        {"expect_text": "The user's prompt, quoted",
         "content": [{"type": "text", "text": format!("```json\n{proposal}\n```")}],
         "usage": {"input_tokens": 900, "output_tokens": 120}},
        {"content": [{"type": "tool_use", "id": "toolu_recall", "name": "Recall",
                      "input": {"query": "how do we parse durations"}}]},
        {"content": [{"type": "text", "text": "We use a suffix table."}]},
        {"expect_text": "The user's prompt, quoted", "content": [{"type": "text", "text": "[]"}]}
    ]}))
    .await;
    let url = mock.url();
    let first = sb
        .run(
            &url,
            &[
                "-p",
                "--trust-project",
                "--output-format",
                "stream-json",
                "--verbose",
                "how are durations written here?",
            ],
        )
        .await;
    assert!(first.status.success(), "{}", first.debug());
    let lines = stream_lines(&first);
    let reflect = lines
        .iter()
        .find(|l| l["type"] == "system" && l["subtype"] == "memory_reflect")
        .unwrap_or_else(|| panic!("no memory_reflect line: {}", first.debug()));
    assert_eq!(reflect["proposed"], 3, "{reflect}");
    assert_eq!(reflect["stored"], 3, "{reflect}");
    assert_eq!(reflect["input_tokens"], 900);
    assert!(reflect["cost_usd"].as_f64().unwrap() > 0.0, "{reflect}");
    assert!(
        reflect["model"].as_str().unwrap().contains("haiku"),
        "{reflect}"
    );
    let result_at = lines.iter().position(|l| l["type"] == "result").unwrap();
    let reflect_at = lines
        .iter()
        .position(|l| l["subtype"] == "memory_reflect")
        .unwrap();
    assert!(reflect_at > result_at, "reflect runs after the result");
    let session_id = lines[result_at]["session_id"].as_str().unwrap().to_string();
    let transcript = std::fs::read_to_string(&sb.transcripts()[0]).unwrap();
    assert!(
        transcript.contains("\"type\":\"memory_reflect\""),
        "{transcript}"
    );
    let request = &bodies(&mock)[2];
    assert_eq!(
        request["tools"],
        Value::Null,
        "reflect offers no tools: {request}"
    );

    let store = std::fs::read(project_store(&sb)).unwrap();
    assert!(
        !String::from_utf8_lossy(&store).contains("sk-ant-api03"),
        "a secret reached the memory file"
    );

    let second = sb
        .run(&url, &["-p", "--trust-project", "what about durations?"])
        .await;
    assert!(second.status.success(), "{}", second.debug());
    let recalled = result_text(&bodies(&mock)[4], "toolu_recall");
    assert!(
        recalled.contains("Parse durations with a suffix table"),
        "{recalled}"
    );
    assert!(recalled.contains("[redacted]"), "{recalled}");
    assert!(
        recalled.contains("USES → [humantime] humantime crate"),
        "{recalled}"
    );
    let short: String = session_id.chars().take(8).collect();
    assert!(
        recalled.contains(&format!("session {short} turn 1")),
        "{recalled}"
    );
    assert!(recalled.contains("from tool output"), "{recalled}");
    assert_eq!(bodies(&mock).len(), 6);

    let ops = sb.write(
        "end.json",
        r#"[{"op": "invalidate_edge", "source": "parse-durations", "target": "humantime", "type": "USES"}]"#,
    );
    memory(&sb, &url, &["apply", ops.to_str().unwrap()]).await;
    let shown = memory(&sb, &url, &["show", "parse-durations", "--history"]).await;
    assert!(
        shown.stdout.contains("USES → humantime (humantime crate)")
            && shown.stdout.contains("invalidated"),
        "{}",
        shown.debug()
    );
    let now = memory(&sb, &url, &["show", "parse-durations"]).await;
    assert!(!now.stdout.contains("humantime"), "{}", now.debug());
    let recall = memory(&sb, &url, &["recall", "parse durations"]).await;
    assert!(
        recall.stdout.contains("suffix table") && !recall.stdout.contains("humantime"),
        "{}",
        recall.debug()
    );
    let markdown = memory(&sb, &url, &["export", "--markdown"]).await;
    assert!(
        markdown.stdout.contains("## Strategies"),
        "{}",
        markdown.debug()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_untrusted_projects_memory_is_neither_read_nor_written() {
    let sb = Sandbox::new();
    sb.write(".ouro/settings.json", r#"{"memory": {"reflect": "auto"}}"#);
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "id": "toolu_recall", "name": "Recall",
                      "input": {"query": "release habit"}}]},
        {"content": [{"type": "text", "text": "ok"}]}
    ]}))
    .await;
    let url = mock.url();
    memory(
        &sb,
        &url,
        &[
            "add",
            "--type",
            "Fact",
            "--id",
            "plan",
            "--name",
            "project release plan",
        ],
    )
    .await;
    memory(
        &sb,
        &url,
        &[
            "add",
            "--user",
            "--type",
            "Strategy",
            "--id",
            "habit",
            "--name",
            "user habit: small commits",
        ],
    )
    .await;
    let run = sb.run(&url, &["-p", "what is the plan?"]).await;
    assert!(run.status.success(), "{}", run.debug());
    let bodies = bodies(&mock);
    assert_eq!(
        bodies.len(),
        2,
        "no reflect request in an untrusted project"
    );
    let recalled = result_text(&bodies[1], "toolu_recall");
    assert!(recalled.contains("small commits"), "{recalled}");
    assert!(!recalled.contains("project release plan"), "{recalled}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_reflect_answer_is_asked_again_once_then_nothing_is_stored() {
    let sb = Sandbox::new();
    sb.write(".ouro/settings.json", r#"{"memory": {"reflect": "auto"}}"#);
    let good = json!([{"op": "add_node", "type": "Fact", "id": "f", "properties": {"name": "the build uses make"}}]);
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Use make."}]},
        {"content": [{"type": "text", "text": "I learned that the build uses make."}]},
        {"expect_text": "not valid", "content": [{"type": "text", "text": good.to_string()}]},
        {"content": [{"type": "text", "text": "Still make."}]},
        {"content": [{"type": "text", "text": "[{\"op\": \"add_node\"}]"}]},
        {"expect_text": "not valid", "content": [{"type": "text", "text": "no"}]}
    ]}))
    .await;
    let url = mock.url();
    let args = [
        "-p",
        "--trust-project",
        "--output-format",
        "stream-json",
        "--verbose",
        "how do I build?",
    ];
    let first = sb.run(&url, &args).await;
    let reflect = stream_lines(&first)
        .into_iter()
        .find(|l| l["subtype"] == "memory_reflect")
        .unwrap_or_else(|| panic!("{}", first.debug()));
    assert_eq!(reflect["stored"], 1, "{reflect}");
    assert!(reflect.get("error").is_none(), "{reflect}");
    let second = sb.run(&url, &args).await;
    assert!(second.status.success(), "{}", second.debug());
    let reflect = stream_lines(&second)
        .into_iter()
        .find(|l| l["subtype"] == "memory_reflect")
        .unwrap_or_else(|| panic!("{}", second.debug()));
    assert_eq!(reflect["stored"], 0, "{reflect}");
    assert!(
        reflect["error"].as_str().unwrap().contains("twice"),
        "{reflect}"
    );
    let list = memory(&sb, &url, &["list"]).await;
    assert_eq!(list.stdout.lines().count(), 1, "{}", list.debug());
}

/// The REPL's `ask` flow through a real PTY: one proposal kept, one dropped (and the relation
/// to it with it); `/cost` counts the reflect request; `/memory graph` shows what was kept.
#[tokio::test(flavor = "multi_thread")]
async fn the_repls_ask_flow_keeps_one_memory_and_drops_another() {
    use crate::common::pty::{Options, Term};
    let sb = Sandbox::new();
    sb.write(".ouro/settings.json", r#"{"memory": {"reflect": "ask"}}"#);
    let proposal = json!([
        {"op": "add_node", "type": "Strategy", "id": "small-commits", "properties": {"name": "Commit in small steps", "description": "one change per commit"}},
        {"op": "add_node", "type": "Fact", "id": "noise", "properties": {"name": "The sky was blue today", "description": "irrelevant"}},
        {"op": "add_edge", "source": "small-commits", "target": "noise", "type": "USES"}
    ]);
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Commit often."}]},
        {"expect_text": "The user's prompt, quoted", "content": [{"type": "text", "text": proposal.to_string()}],
         "usage": {"input_tokens": 1000, "output_tokens": 100}}
    ]}))
    .await;
    let url = mock.url();
    let mut term = Term::start(&sb, &url, Options::default());
    term.expect("Trust this directory");
    term.line("y");
    term.submit("how should I commit?");
    term.expect("Commit often.");
    term.expect("Memory: 3 proposed");
    term.expect("Commit in small steps");
    term.expect("keep? [y/n/e]");
    term.line("y");
    term.expect("The sky was blue today");
    term.expect("keep? [y/n/e]");
    term.line("n");
    term.expect("memory: kept 1 of 3 proposed");
    term.submit("/memory graph commit");
    term.expect("Commit in small steps");
    term.submit("/cost");
    term.expect("claude-haiku");
    term.exit();
    let list = memory(&sb, &url, &["list"]).await;
    assert!(list.stdout.contains("small-commits"), "{}", list.debug());
    assert!(!list.stdout.contains("noise"), "{}", list.debug());
}
