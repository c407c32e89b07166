//! End-to-end: `ouro brains` and `ouro --brain <slug> -p`, for an ouro slug against the mock
//! Messages API and for a claude slug against the fake `claude` (tests/fixtures/fake_claude.py).

use crate::common;

use common::{Run, Sandbox, bodies, server};
use serde_json::{Value, json};

const FAKE_CLAUDE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_claude.py");
const CLAUDE_SLUG: &str = "claude@anthropic/claude/opus/v4.5";

/// `ouro --brain CLAUDE_SLUG -p <args>` on the fake claude, and what the fake logged.
async fn run_claude(sb: &Sandbox, args: &[&str]) -> (Run, Vec<Value>) {
    let log = sb.home.path().join("fake.log");
    let mut all = vec!["--brain", CLAUDE_SLUG, "-p"];
    all.extend_from_slice(args);
    let mut cmd = sb.command("http://127.0.0.1:9", &all);
    cmd.env("OURO_CLAUDE_BIN", FAKE_CLAUDE)
        .env("FAKE_CLAUDE_LOG", &log);
    let run = Run::from(cmd.output().await.unwrap());
    let entries = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (run, entries)
}

#[tokio::test]
async fn brains_lists_every_slug_with_its_model_and_prices() {
    let sb = Sandbox::new();
    let run = sb.run("http://127.0.0.1:9", &["brains"]).await;
    assert!(run.status.success(), "{}", run.debug());
    let slugs = ouro::brain::list_slugs();
    assert!(slugs.len() > 10);
    for slug in &slugs {
        let spec = ouro::brain::slug::parse(slug).unwrap();
        let line = run
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(slug.as_str()))
            .unwrap_or_else(|| panic!("{slug} is not listed:\n{}", run.stdout));
        assert!(line.contains(spec.model_id()), "{line}");
    }
    let opus = run
        .stdout
        .lines()
        .find(|l| l.starts_with("ouro@anthropic/claude/opus/v4.7 "))
        .unwrap();
    let columns: Vec<&str> = opus.split_whitespace().collect();
    assert_eq!(
        columns,
        [
            "ouro@anthropic/claude/opus/v4.7",
            "claude-opus-4-7",
            "5.00",
            "25.00",
            "6.25",
            "0.50"
        ]
    );
}

#[tokio::test]
async fn an_ouro_brain_runs_print_mode_on_its_model() {
    let mock = server(json!({"turns": [{
        "content": [{"type": "text", "text": "Native answer."}],
        "usage": {"input_tokens": 1000, "output_tokens": 200}
    }]}))
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(
            &mock.url(),
            &[
                "--brain",
                "ouro@anthropic/claude/haiku/v4.5",
                "-p",
                "hello",
                "--output-format",
                "json",
            ],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["result"], "Native answer.");
    // Haiku 4.5: $1 in, $5 out per million tokens.
    let cost = result["total_cost_usd"].as_f64().unwrap();
    assert!(
        (cost - (1000.0 + 200.0 * 5.0) / 1e6).abs() < 1e-12,
        "{cost}"
    );
    assert_eq!(bodies(&mock)[0]["model"], "claude-haiku-4-5");
}

#[tokio::test]
async fn bad_brain_flags_are_clear_errors() {
    let sb = Sandbox::new();
    let run = sb
        .run(
            "http://127.0.0.1:9",
            &["--brain", "ouro@anthropic/claude/opus/v9", "-p", "hi"],
        )
        .await;
    assert!(!run.status.success());
    assert!(run.stderr.contains("unknown model"), "{}", run.debug());
    assert!(
        run.stderr.contains("ouro@anthropic/claude/sonnet/v4.5"),
        "the valid slugs are listed: {}",
        run.debug()
    );

    let run = sb
        .run(
            "http://127.0.0.1:9",
            &[
                "--brain",
                "ouro@anthropic/claude/opus",
                "--model",
                "claude-opus-4-5",
                "-p",
                "hi",
            ],
        )
        .await;
    assert!(!run.status.success());
    assert!(
        run.stderr.contains("cannot be used with"),
        "{}",
        run.debug()
    );
}

#[tokio::test]
async fn a_claude_brain_prints_the_answer_as_text() {
    let sb = Sandbox::new();
    let (run, log) = run_claude(&sb, &["hello"]).await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.stdout, "echo: hello\n");
    // One start, in dispatch mode with the act tool set, in the project directory.
    let argv: Vec<String> = log
        .iter()
        .filter_map(|e| e.get("argv"))
        .map(|a| serde_json::from_value(a.clone()).unwrap())
        .collect::<Vec<Vec<String>>>()
        .concat();
    let pos = argv.iter().position(|a| a == "--allowedTools").unwrap();
    assert_eq!(argv[pos + 1], "Glob,Grep,Read,Bash,Edit,Write");
    assert!(argv.contains(&"-p".to_string()), "{argv:?}");
    assert!(argv.contains(&"claude-opus-4-5".to_string()), "{argv:?}");
}

#[tokio::test]
async fn a_claude_brain_prints_json_with_usage_and_cost() {
    let sb = Sandbox::new();
    let (run, _) = run_claude(&sb, &["--output-format", "json", "hi"]).await;
    assert!(run.status.success(), "{}", run.debug());
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "echo: hi");
    assert_eq!(result["usage"]["input_tokens"], 102);
    assert_eq!(result["usage"]["output_tokens"], 8);
    let cost = result["total_cost_usd"].as_f64().unwrap();
    assert!(
        (cost - (102.0 * 5.0 + 8.0 * 25.0) / 1e6).abs() < 1e-12,
        "{cost}"
    );
    assert!(!result["session_id"].as_str().unwrap().is_empty());
}

#[tokio::test]
async fn a_claude_brain_passes_stream_json_through() {
    let sb = Sandbox::new();
    let (run, _) = run_claude(&sb, &["--output-format", "stream-json", "hi"]).await;
    assert!(run.status.success(), "{}", run.debug());
    let kinds: Vec<String> = run
        .events()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["system", "assistant", "result"]);
    assert_eq!(run.result()["result"], "echo: hi");
}

#[tokio::test]
async fn a_claude_brain_error_result_fails_the_run() {
    let sb = Sandbox::new();
    let (run, _) = run_claude(&sb, &["fail"]).await;
    assert!(!run.status.success(), "{}", run.debug());
    assert!(run.stdout.is_empty(), "{}", run.debug());
    assert!(
        run.stderr.contains("API Error: 529 Overloaded"),
        "{}",
        run.debug()
    );
}
