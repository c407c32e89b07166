//! End-to-end: model aliases resolve to current ids everywhere a model is chosen.

use crate::common;

use common::{Sandbox, bodies, server};
use ouro::api::models;
use serde_json::json;

#[tokio::test]
async fn aliases_send_the_full_current_id_and_init_shows_it() {
    for (how, alias) in [("flag", "sonnet"), ("settings", "opus"), ("env", "haiku")] {
        let sb = Sandbox::new();
        let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "hi"}]}]})).await;
        let mut args = vec!["-p", "--output-format", "stream-json"];
        let mut command = match how {
            "flag" => {
                args.extend(["--model", alias]);
                sb.command(&mock.url(), &args)
            }
            "settings" => {
                std::fs::write(
                    sb.home.path().join("settings.json"),
                    json!({"model": alias}).to_string(),
                )
                .unwrap();
                sb.command(&mock.url(), &args)
            }
            _ => {
                let mut c = sb.command(&mock.url(), &args);
                c.env("ANTHROPIC_MODEL", alias);
                c
            }
        };
        command.arg("hello");
        let run = common::Run::from(command.output().await.unwrap());
        assert!(run.status.success(), "{how}: {}", run.debug());
        let id = models::resolve(alias);
        assert!(id.starts_with("claude-"), "{id}");
        assert_eq!(bodies(&mock)[0]["model"], id.as_str(), "{how}");
        let init = &run.of_type("system", Some("init"))[0];
        assert_eq!(init["model"], id.as_str(), "{how}");
    }
}

#[tokio::test]
async fn with_no_model_named_the_newest_sonnet_runs() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "hi"}]}]})).await;
    let run = sb.run(&mock.url(), &["-p", "hello"]).await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(bodies(&mock)[0]["model"], models::default_model());
    assert_eq!(models::default_model(), models::resolve("sonnet"));
}

/// The first request's body and `anthropic-beta` header for `ouro -p <args> hello`.
async fn first_request(args: &[&str]) -> (serde_json::Value, Option<String>) {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "hi"}]}]})).await;
    let mut all = vec!["-p"];
    all.extend_from_slice(args);
    all.push("hello");
    let run = sb.run(&mock.url(), &all).await;
    assert!(run.status.success(), "{args:?}: {}", run.debug());
    let request = mock
        .requests()
        .into_iter()
        .find(|r| r.path.starts_with("/v1/messages"))
        .unwrap();
    (request.body, request.headers.get("anthropic-beta").cloned())
}

#[tokio::test]
async fn thinking_and_effort_go_only_to_models_that_take_them() {
    // The default model thinks adaptively and takes an effort level.
    let (body, beta) = first_request(&["--effort", "high"]).await;
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(body["output_config"], json!({"effort": "high"}));
    assert_eq!(beta, None);
    // `max` falls back to `high` where only Opus takes it.
    let (body, _) = first_request(&["--effort", "max"]).await;
    assert_eq!(body["output_config"], json!({"effort": "high"}));
    let (body, _) = first_request(&["--model", "opus", "--effort", "max"]).await;
    assert_eq!(body["output_config"], json!({"effort": "max"}));
    // A budget-only model gets a budget, interleaved with tool calls, and no effort.
    let (body, beta) = first_request(&["--model", "claude-sonnet-4-5", "--effort", "high"]).await;
    assert_eq!(body["thinking"]["type"], "enabled");
    assert!(body["thinking"]["budget_tokens"].as_u64().unwrap() >= 1024);
    assert!(body.get("output_config").is_none(), "{body}");
    assert_eq!(beta.as_deref(), Some("interleaved-thinking-2025-05-14"));
    let (body, _) = first_request(&["--model", "claude-sonnet-4-5", "--thinking", "5000"]).await;
    assert_eq!(body["thinking"]["budget_tokens"], 5000);
    // A model with neither gets neither; `--thinking off` sends none.
    let (body, _) = first_request(&["--model", "claude-3-5-haiku", "--effort", "low"]).await;
    assert!(
        body.get("thinking").is_none() && body.get("output_config").is_none(),
        "{body}"
    );
    let (body, _) = first_request(&["--thinking", "off"]).await;
    assert!(body.get("thinking").is_none(), "{body}");
}

#[tokio::test]
async fn thinking_and_effort_come_from_the_settings_too() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("settings.json"),
        json!({"effort": "low", "thinking": "off"}).to_string(),
    )
    .unwrap();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "hi"}]}]})).await;
    let run = sb.run(&mock.url(), &["-p", "hello"]).await;
    assert!(run.status.success(), "{}", run.debug());
    let body = &bodies(&mock)[0];
    assert_eq!(body["output_config"], json!({"effort": "low"}));
    assert!(body.get("thinking").is_none(), "{body}");
    let bad = Sandbox::new();
    std::fs::write(
        bad.home.path().join("settings.json"),
        json!({"effort": "extreme"}).to_string(),
    )
    .unwrap();
    let run = bad.run(&mock.url(), &["-p", "hello"]).await;
    assert!(!run.status.success());
    assert!(
        run.stderr.contains("effort") && run.stderr.contains("low, medium"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn a_persistently_overloaded_model_falls_back() {
    let sb = Sandbox::new();
    let default = models::default_model();
    let fallback = models::resolve("haiku");
    let mock = server(json!({
        "overloaded_models": [default],
        "turns": [{"content": [{"type": "text", "text": "answered by the fallback"}]}]
    }))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--fallback-model",
                "haiku",
                "hello",
            ],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.result()["result"], "answered by the fallback");
    let switch = &run.of_type("system", Some("model_fallback"))[0];
    assert_eq!(switch["from_model"], default);
    assert_eq!(switch["model"], fallback.as_str());
    let models_sent: Vec<String> = bodies(&mock)
        .iter()
        .map(|b| b["model"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        models_sent.iter().filter(|m| *m == default).count(),
        3,
        "{models_sent:?}"
    );
    assert_eq!(models_sent.last(), Some(&fallback));
    assert_eq!(run.of_type("system", Some("api_retry")).len(), 2);

    // Without a fallback, the same overload ends the run as an API error.
    let mock = server(json!({
        "overloaded_models": [default],
        "turns": [{"content": [{"type": "text", "text": "never"}]}]
    }))
    .await;
    let run = sb
        .run(&mock.url(), &["-p", "--max-retries", "1", "hello"])
        .await;
    assert!(!run.status.success(), "{}", run.debug());
}

#[tokio::test]
async fn the_long_context_window_sends_the_plain_id_and_its_beta() {
    let (body, beta) = first_request(&["--model", "sonnet[1m]"]).await;
    assert_eq!(body["model"], models::resolve("sonnet").as_str());
    assert_eq!(beta.as_deref(), Some("context-1m-2025-08-07"));
    let (_, beta) = first_request(&["--model", "sonnet"]).await;
    assert_eq!(beta, None);
}

#[tokio::test]
async fn context_editing_is_off_unless_the_settings_ask_for_it() {
    let (body, beta) = first_request(&[]).await;
    assert!(body.get("context_management").is_none(), "{body}");
    assert_eq!(beta, None);

    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("settings.json"),
        json!({"contextEditing": true}).to_string(),
    )
    .unwrap();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "hi"}]}]})).await;
    let run = sb.run(&mock.url(), &["-p", "hello"]).await;
    assert!(run.status.success(), "{}", run.debug());
    let request = &mock.requests()[0];
    let edits = request.body["context_management"]["edits"].to_string();
    assert!(edits.contains("clear_tool_uses"), "{edits}");
    assert!(
        edits.contains("clear_thinking"),
        "thinking is on by default: {edits}"
    );
    assert_eq!(
        request.headers.get("anthropic-beta").map(String::as_str),
        Some("context-management-2025-06-27")
    );
}

/// `--betas` (as the Agent SDKs pass their `betas` option) reaches every request's
/// `anthropic-beta` header, beside the betas ouro sends itself.
#[tokio::test]
async fn betas_given_on_the_command_line_are_sent() {
    let (_, beta) = first_request(&["--betas", "context-1m-2025-08-07,x-test-1"]).await;
    let beta = beta.unwrap_or_default();
    let names: Vec<&str> = beta.split(',').collect();
    assert!(
        names.contains(&"context-1m-2025-08-07") && names.contains(&"x-test-1"),
        "{beta}"
    );
    let (_, beta) = first_request(&["--model", "sonnet[1m]", "--betas", "x-test-2"]).await;
    assert_eq!(
        beta.as_deref(),
        Some("context-1m-2025-08-07,x-test-2"),
        "each once, ouro's first"
    );
}
