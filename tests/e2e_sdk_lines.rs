//! End-to-end: what an Agent SDK writes on stdin beyond a text prompt (images and documents in
//! a user message, `keep_alive`, `update_environment_variables`), and the permission questions
//! ouro asks it: each names its call, is withdrawn when the turn is interrupted, and is refused
//! at once once stdin has closed (nothing could answer it).

use crate::common;

use std::time::Duration;

use common::{STREAM_JSON_IO, Sandbox, Watched, bodies, request_tool_results, server, user_line};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

fn line(value: Value) -> String {
    format!("{value}\n")
}

fn types(content: &Value) -> Vec<&str> {
    content
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn images_and_documents_in_a_user_message_reach_the_model_in_order() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "a pixel and notes"}]},
        {"content": [{"type": "text", "text": "the pixel again"}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}});
    let document = json!({"type": "document", "title": "notes.txt",
        "source": {"type": "text", "media_type": "text/plain", "data": "the notes"}});
    let input = [
        line(json!({"type": "user", "message": {"role": "user",
            "content": [image, {"type": "text", "text": "what are these?"}, document]}})),
        // An image alone is a prompt too (the API refuses an empty text block beside it).
        line(json!({"type": "user", "message": {"role": "user",
            "content": [{"type": "text", "text": ""}, image]}})),
    ]
    .concat();
    let run = sb
        .run_with_stdin(&mock.url(), &STREAM_JSON_IO, input.as_bytes())
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let sent = bodies(&mock);
    assert_eq!(sent.len(), 2, "{}", run.debug());
    let first = &sent[0]["messages"][0]["content"];
    assert_eq!(types(first)[..3], ["image", "text", "document"], "{first}");
    assert_eq!(first[0]["source"], image["source"]);
    assert_eq!(first[2]["title"], "notes.txt");
    assert_eq!(first[2]["source"]["data"], "the notes");
    let messages = sent[1]["messages"].as_array().unwrap();
    let last = &messages[messages.len() - 1]["content"];
    assert_eq!(types(last), ["image"], "{last}");
}

#[tokio::test]
async fn keep_alive_and_environment_updates_are_taken() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "printenv OURO_SDK_SET"}}]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let input = [
        line(json!({"type": "keep_alive"})),
        line(json!({"type": "update_environment_variables",
            "variables": {"OURO_SDK_SET": "from the sdk"}})),
        user_line("go"),
    ]
    .concat();
    let args = [&STREAM_JSON_IO[..], &["--allowedTools", "Bash"]].concat();
    let run = sb
        .run_with_stdin(&mock.url(), &args, input.as_bytes())
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.result()["result"], "done");
    assert!(!run.stderr.contains("skipped"), "{}", run.debug());
    let results = request_tool_results(&bodies(&mock)[1]);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("from the sdk"),
        "{results:?}"
    );
}

fn write_then_text(sb: &Sandbox) -> Value {
    let target = sb.root().join("out.txt");
    json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Write",
            "input": {"file_path": target, "content": "x\n"}}]},
        {"content": [{"type": "text", "text": "could not write"}]}
    ]})
}

#[tokio::test]
async fn a_question_is_refused_once_stdin_has_closed() {
    let sb = Sandbox::new();
    let mock = server(write_then_text(&sb)).await;
    let args = [&STREAM_JSON_IO[..], &["--permission-prompt-tool", "stdio"]].concat();
    let run = tokio::time::timeout(
        Duration::from_secs(60),
        sb.run_with_stdin(&mock.url(), &args, user_line("write it").as_bytes()),
    )
    .await
    .expect("ouro waited for an answer that could never come");
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.result()["result"], "could not write");
    assert!(!sb.root().join("out.txt").exists());
    let results = request_tool_results(&bodies(&mock)[1]);
    assert_eq!(results[0]["is_error"], true, "{results:?}");
}

#[tokio::test]
async fn an_interrupt_withdraws_the_question_it_cut_short() {
    let sb = Sandbox::new();
    let mock = server(write_then_text(&sb)).await;
    let args = [&STREAM_JSON_IO[..], &["--permission-prompt-tool", "stdio"]].concat();
    let mut command = sb.command(&mock.url(), &args);
    command.stdin(std::process::Stdio::piped());
    let mut ouro = Watched::spawn(command);
    let mut stdin = ouro.take_stdin();
    stdin
        .write_all(user_line("write it").as_bytes())
        .await
        .unwrap();
    ouro.wait_stdout(r#""subtype":"can_use_tool""#).await;
    let asked: Value = ouro
        .stdout_text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["request"]["subtype"] == "can_use_tool")
        .unwrap();
    let id = asked["request_id"].as_str().unwrap().to_string();
    assert_eq!(asked["request"]["tool_name"], "Write");
    assert_eq!(asked["request"]["tool_use_id"], "toolu_mock_0000_00");
    let interrupt = json!({"type": "control_request", "request_id": "stop-1",
        "request": {"subtype": "interrupt"}});
    stdin.write_all(line(interrupt).as_bytes()).await.unwrap();
    ouro.wait_stdout("control_cancel_request").await;
    let cancelled: Value = ouro
        .stdout_text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["type"] == "control_cancel_request")
        .unwrap();
    assert_eq!(cancelled["request_id"], id);
    drop(stdin);
    let run = ouro.finish(Duration::from_secs(30)).await;
    assert!(!sb.root().join("out.txt").exists(), "{}", run.debug());
}
