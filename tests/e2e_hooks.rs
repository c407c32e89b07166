//! End-to-end: the session's hook events (issue 17) with Claude Code's payloads on stdin and
//! its answers: UserPromptSubmit adds context or blocks, SessionStart adds context, Stop sends
//! the model back to work, PermissionRequest answers a question, Notification hears it,
//! SubagentStop and SessionEnd are told.

use crate::common;

use std::path::Path;

use common::{Sandbox, bodies, last_user_text, request_tool_results, server};
use serde_json::{Value, json};

/// A hook that appends its payload to `<logs>/<event>.jsonl`, then runs `then`.
fn logging(logs: &Path, event: &str, then: &str) -> Value {
    let log = logs.join(format!("{event}.jsonl"));
    json!([{"hooks": [{"type": "command",
        "command": format!("cat >> '{}'; echo >> '{}'; {then}", log.display(), log.display())}]}])
}

fn payloads(logs: &Path, event: &str) -> Vec<Value> {
    std::fs::read_to_string(logs.join(format!("{event}.jsonl")))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn settings(sb: &Sandbox, hooks: Value) {
    std::fs::write(
        sb.home.path().join("settings.json"),
        json!({ "hooks": hooks }).to_string(),
    )
    .unwrap();
}

#[tokio::test]
async fn lifecycle_hooks_fire_with_their_payloads_and_answers() {
    let sb = Sandbox::new();
    let logs = sb.root().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let stop = "grep -q '\"stop_hook_active\":true' || { echo '{\"decision\":\"block\",\"reason\":\"KEEP-GOING: check the file\"}'; }";
    let permission = "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PermissionRequest\",\"decision\":{\"behavior\":\"allow\"}}}'";
    let mut hooks = json!({
        "SessionStart": logging(&logs, "SessionStart", "echo CTX-FROM-SESSION-START"),
        "UserPromptSubmit": logging(&logs, "UserPromptSubmit",
            "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"UserPromptSubmit\",\"additionalContext\":\"CTX-FROM-PROMPT-HOOK\"}}'"),
        "Stop": [{"hooks": [{"type": "command", "command":
            format!("p=$(cat); printf '%s\\n' \"$p\" >> '{}'; printf '%s' \"$p\" | {{ {stop}; }}",
                logs.join("Stop.jsonl").display())}]}],
        "SessionEnd": logging(&logs, "SessionEnd", "true"),
        "Notification": logging(&logs, "Notification", "true"),
        "SubagentStop": logging(&logs, "SubagentStop", "true"),
    });
    hooks["PermissionRequest"] = json!([{"matcher": "Write", "hooks": [
        {"type": "command", "command": format!("cat >> '{}'; echo >> '{}'; {permission}",
            logs.join("PermissionRequest.jsonl").display(), logs.join("PermissionRequest.jsonl").display())}]}]);
    settings(&sb, hooks);
    let written = sb.root().join("written.txt");
    let mock = server(json!({"turns": [
        {"content": [
            {"type": "tool_use", "name": "Write", "input": {"file_path": written, "content": "ok\n"}},
            {"type": "tool_use", "name": "Bash", "input": {"command": "touch touched.txt"}},
            {"type": "tool_use", "name": "Agent", "input": {"description": "look", "prompt": "CHILD-TASK", "subagent_type": "explore"}}
        ]},
        {"when_text": "CHILD-TASK", "content": [{"type": "text", "text": "child done"}]},
        {"content": [{"type": "text", "text": "first done"}]},
        {"content": [{"type": "text", "text": "really done"}], "expect_text": "KEEP-GOING"}
    ]}))
    .await;
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "do it"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.result()["result"], "really done");

    let requests = bodies(&mock);
    let first = requests[0]["messages"][0].to_string();
    assert!(first.contains("CTX-FROM-SESSION-START"), "{first}");
    assert!(first.contains("CTX-FROM-PROMPT-HOOK"), "{first}");
    assert!(
        !requests
            .iter()
            .any(|r| r["messages"][0].to_string().contains("CHILD-TASK")
                && r["messages"][0].to_string().contains("CTX-FROM")),
        "a sub-agent's prompt goes through no prompt hooks"
    );

    let start = &payloads(&logs, "SessionStart")[0];
    assert_eq!(start["hook_event_name"], "SessionStart");
    assert_eq!(start["source"], "startup");
    let session = run.result()["session_id"].clone();
    assert_eq!(start["session_id"], session);
    assert!(
        start["transcript_path"]
            .as_str()
            .unwrap()
            .ends_with(".jsonl")
    );
    assert!(start["cwd"].is_string());
    let prompt = &payloads(&logs, "UserPromptSubmit")[0];
    assert_eq!(prompt["prompt"], "do it");
    assert_eq!(prompt["permission_mode"], "default");

    // PermissionRequest answered the Write's question; the Bash call was asked about, which
    // Notification heard (print mode then refuses it).
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "ok\n");
    let asked = payloads(&logs, "PermissionRequest");
    assert_eq!(asked.len(), 1, "only Write matches");
    assert_eq!(asked[0]["tool_name"], "Write");
    assert_eq!(asked[0]["tool_input"]["content"], "ok\n");
    let results = request_tool_results(&requests[2]);
    assert_ne!(results[0]["is_error"], true, "{results:?}");
    assert_eq!(results[1]["is_error"], true, "{results:?}");
    let notified = payloads(&logs, "Notification");
    assert_eq!(notified[0]["notification_type"], "permission_prompt");
    assert!(notified[0]["message"].as_str().unwrap().contains("Bash"));

    // Stop sent the model back once, with its reason; the second time it let go.
    let stops = payloads(&logs, "Stop");
    assert_eq!(stops.len(), 2);
    assert_eq!(stops[0]["stop_hook_active"], false);
    assert_eq!(stops[1]["stop_hook_active"], true);
    assert!(last_user_text(&requests[3]).contains("KEEP-GOING"));

    assert_eq!(payloads(&logs, "SubagentStop").len(), 1);
    assert_eq!(payloads(&logs, "SessionEnd")[0]["reason"], "other");
}

#[tokio::test]
async fn a_user_prompt_submit_hook_blocks_the_prompt_before_the_model_sees_it() {
    let sb = Sandbox::new();
    settings(
        &sb,
        json!({"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": "grep -q secret && { echo 'prompts must not carry secrets' >&2; exit 2; }; exit 0"}]}]}),
    );
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "fine"}]}]})).await;
    let blocked = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "the secret is 42"],
        )
        .await;
    assert!(!blocked.status.success());
    let result = blocked.result();
    assert_eq!(result["is_error"], true);
    assert!(
        result["result"]
            .as_str()
            .unwrap()
            .contains("prompts must not carry secrets"),
        "{result}"
    );
    assert!(bodies(&mock).is_empty(), "nothing was sent");
    let allowed = sb.run(&mock.url(), &["-p", "hello"]).await;
    assert!(allowed.status.success(), "{}", allowed.debug());
}

#[tokio::test]
async fn pre_compact_hears_an_automatic_compaction_before_the_summary() {
    let sb = Sandbox::new();
    let logs = sb.root().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(
        sb.home.path().join("settings.json"),
        json!({"autoCompactThreshold": 0.5,
               "hooks": {"PreCompact": [{"matcher": "auto", "hooks": [{"type": "command",
                   "command": format!("cat >> '{}'", logs.join("PreCompact.jsonl").display())}]}]}})
        .to_string(),
    )
    .unwrap();
    let f = sb.write("a.txt", "a\n");
    let read = |n: u64| {
        json!({"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": f}}],
               "usage": {"input_tokens": n, "output_tokens": 10}})
    };
    let mock = server(json!({"turns": [
        read(1000), read(1000), read(150000),
        {"content": [{"type": "text", "text": "SUMMARY-OF-EARLIER"}]},
        {"content": [{"type": "text", "text": "finished"}], "expect_text": "SUMMARY-OF-EARLIER"}
    ]}))
    .await;
    let run = sb.run(&mock.url(), &["-p", "go"]).await;
    assert!(run.status.success(), "{}", run.debug());
    let fired = payloads(&logs, "PreCompact");
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0]["hook_event_name"], "PreCompact");
    assert_eq!(fired[0]["trigger"], "auto");
    assert_eq!(fired[0]["custom_instructions"], "");
}
