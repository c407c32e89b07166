//! End-to-end: model aliases resolve to current ids everywhere a model is chosen.

#![cfg(feature = "mock")]
#![allow(clippy::unwrap_used)] // a failed unwrap in a test is a failed test

mod common;

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
