//! The protocol loop without a brain: what it answers to lines that start no turn.

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::*;

/// Feeds `lines` (then the end of input) to the loop; its exit code and its messages.
async fn exchange(lines: &[String], home: &std::path::Path) -> (i32, Vec<Value>) {
    let (tx, rx) = mpsc::channel(16);
    for line in lines {
        tx.send(line.clone()).await.unwrap();
    }
    drop(tx);
    let (out, mut read) = tokio::io::duplex(1 << 20);
    let code = serve(rx, out, Some(home.to_path_buf())).await;
    let mut text = String::new();
    read.read_to_string(&mut text).await.unwrap();
    let messages = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (code, messages)
}

fn message(kind: &str, payload: Value) -> String {
    json!({
        "protocolVersion": "1.0",
        "messageId": uuid::Uuid::new_v4().to_string(),
        "timestamp": "2026-01-02T03:04:05Z",
        "type": kind,
        "payload": payload,
    })
    .to_string()
}

fn kinds(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match m["type"].as_str().unwrap() {
            "log" => format!("log:{}", m["payload"]["level"].as_str().unwrap()),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test]
async fn a_bad_line_is_logged_and_the_agent_goes_on_until_terminated() {
    let home = tempfile::tempdir().unwrap();
    let (code, out) = exchange(
        &[
            "{not json".into(),
            message("task:dance", json!({})),
            message(
                "permission:response",
                json!({"requestId": "nobody", "behavior": "allow"}),
            ),
            message("task:terminate", json!({"reason": "enough"})),
            message("task:terminate", json!({})),
        ],
        home.path(),
    )
    .await;
    assert_eq!(code, EXIT_FAILURE);
    assert_eq!(
        kinds(&out),
        ["log:error", "log:error", "log:error", "task:result"],
        "{out:#?}"
    );
    assert!(
        out[0]["payload"]["message"]
            .as_str()
            .unwrap()
            .contains("{not json")
    );
    assert!(
        out[1]["payload"]["message"]
            .as_str()
            .unwrap()
            .contains("task:dance")
    );
    assert!(
        out[2]["payload"]["message"]
            .as_str()
            .unwrap()
            .contains("nobody")
    );
    let result = &out[3]["payload"];
    assert_eq!(result["status"], "failure");
    assert_eq!(result["outputArtifactPath"], Value::Null);
    assert!(
        result["summary"].as_str().unwrap().contains("enough"),
        "{result}"
    );
    for m in &out {
        assert_eq!(m["protocolVersion"], "1.0");
    }
}

#[tokio::test]
async fn another_major_version_ends_the_agent_with_exit_code_2() {
    let home = tempfile::tempdir().unwrap();
    let mut two: Value = serde_json::from_str(&message("task:terminate", json!({}))).unwrap();
    two["protocolVersion"] = json!("2.0");
    let (code, out) = exchange(
        &[two.to_string(), message("task:terminate", json!({}))],
        home.path(),
    )
    .await;
    assert_eq!(code, EXIT_VERSION);
    assert_eq!(
        kinds(&out),
        ["log:error"],
        "nothing is read after it: {out:#?}"
    );
    let text = out[0]["payload"]["message"].as_str().unwrap();
    assert!(text.contains("1.0") && text.contains("2.0"), "{text}");
}

#[tokio::test]
async fn stdin_closing_before_a_task_ends_it_as_a_failure() {
    let home = tempfile::tempdir().unwrap();
    let (code, out) = exchange(&[], home.path()).await;
    assert_eq!(code, EXIT_FAILURE);
    assert_eq!(kinds(&out), ["task:result"]);
    let summary = out[0]["payload"]["summary"].as_str().unwrap();
    assert!(summary.contains("closed stdin"), "{summary}");
}

/// A task whose context cannot be read fails before any brain starts: its warnings first,
/// then the error, then a failed result with no bundle.
#[tokio::test]
async fn a_task_that_cannot_begin_fails_with_its_reason() {
    let home = tempfile::tempdir().unwrap();
    let definition = home.path().join("fixer.agent.md");
    std::fs::write(&definition, "---\nname: fixer\n---\nYou fix things.\n").unwrap();
    let missing = home.path().join("missing.cats.md");
    let init = message(
        "task:initialize",
        json!({
            "agentConfigPath": definition,
            "systemPromptPath": "",
            "initialContextArtifactPath": missing,
            "task": "fix it",
            "knowledgeGraphPath": "/kg.json",
        }),
    );
    let (code, out) = exchange(&[init.clone(), init], home.path()).await;
    assert_eq!(code, EXIT_FAILURE);
    assert!(
        out.iter().any(|m| m["payload"]["message"]
            .as_str()
            .is_some_and(|t| t.contains("knowledgeGraphPath") && t.contains("ignored"))
            && m["payload"]["level"] == "warn"),
        "{out:#?}"
    );
    assert!(
        out.iter().any(|m| m["payload"]["message"]
            .as_str()
            .is_some_and(|t| t.contains("one task"))),
        "a second task:initialize is refused: {out:#?}"
    );
    let result = &out.last().unwrap()["payload"];
    assert_eq!(out.last().unwrap()["type"], "task:result");
    assert_eq!(result["status"], "failure");
    assert_eq!(result["outputArtifactPath"], Value::Null);
    let summary = result["summary"].as_str().unwrap();
    assert!(summary.contains("missing.cats.md"), "{summary}");
    assert!(result["runId"].as_str().is_some_and(|id| !id.is_empty()));
}
