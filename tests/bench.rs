//! Smoke tests of `ouro bench` with tiny settings: it runs end to end and reports every field.
//! Nothing here asserts a timing.

use std::process::{Command, Output};

use crate::common;

use serde_json::Value;

fn bench(extra: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_ouro"))
        .args([
            "bench",
            "--turns",
            "2",
            "--calls-per-turn",
            "3",
            "--files",
            "30",
            "--runs",
            "1",
            "--warmup",
            "0",
        ])
        .args(extra)
        .env("OURO_HOME", home.path())
        .env_remove("OURO_LOG")
        .env_remove("ANTHROPIC_MODEL")
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "ouro bench failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn the_table_names_every_figure() {
    let text = stdout(&bench(&["--mix", "read,grep,glob,edit,bash"]));
    for label in [
        "2 turns x 3 calls (read,grep,glob,edit,bash), 30 files, seed 42",
        "6 tool calls and 3 requests per run",
        "total wall time",
        "tool calls per second",
        "client time per turn",
        "response time (mock + HTTP + SSE)",
        "start to first request (ouro -p)",
        "peak RSS (ouro -p)",
        "ouro -p wall time, checkpoints off",
        "ouro -p, new project",
        "ouro -p, new project, checkpoints off",
        "hello session: start to first request",
        "hello session: wall time",
        "checkpoints add",
        "checkpoint cost per tool call",
        "marginal read-only call: the same turns with 1 vs 3 Read calls each",
        "per extra call:",
        "schema",
        "semantic",
        "pre-hooks",
        "permission",
        "execution",
        "post-hooks",
        "targets",
    ] {
        assert!(text.contains(label), "missing {label:?} in:\n{text}");
    }
    for tool in ["Bash", "Glob", "Grep", "Read"] {
        assert!(
            text.lines().any(|l| l.starts_with(tool)),
            "no phase row for {tool}:\n{text}"
        );
    }
}

fn number(v: &Value, path: &str) -> f64 {
    v.pointer(path)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{path} is missing or not a number in {v:#}"))
}

#[test]
fn json_has_the_same_figures() {
    if !common::skip::mcp_everything() {
        return;
    }
    let report: Value = serde_json::from_str(&stdout(&bench(&[
        "--json",
        "--compare-rg",
        "--compare-mcp",
    ])))
    .unwrap();
    assert_eq!(report["config"]["mix"], "read,grep,glob,edit,bash");
    assert_eq!(report["tool_calls_per_run"], 6);
    assert_eq!(report["requests_per_run"], 3);
    for figure in [
        "wall_ms",
        "calls_per_sec",
        "client_turn_ms",
        "response_ms",
        "startup/first_request_ms",
        "startup/peak_rss_mb",
        "startup/hello_first_request_ms",
        "startup/hello_wall_ms",
        "startup/tools_wall_ms",
        "startup/tools_wall_without_checkpoints_ms",
        "startup/known_wall_ms",
        "startup/known_wall_without_checkpoints_ms",
        "marginal/wall_low_ms",
        "marginal/wall_high_ms",
    ] {
        for stat in ["median", "min", "max"] {
            let value = number(&report, &format!("/{figure}/{stat}"));
            assert!(value > 0.0, "{figure}.{stat} = {value}");
        }
    }
    assert_eq!(number(&report, "/client_turn_all_ms/count"), 2.0);
    number(&report, "/marginal/per_call_wall_ms");
    let phases = report["phases"].as_array().unwrap();
    let calls: f64 = phases.iter().map(|p| number(p, "/total_ms/count")).sum();
    assert_eq!(calls, 6.0);
    for phase in phases {
        for key in [
            "schema_ms",
            "semantic_ms",
            "pre_hooks_ms",
            "permission_ms",
            "execution_ms",
            "post_hooks_ms",
        ] {
            for stat in ["p50", "p95", "max"] {
                number(phase, &format!("/{key}/{stat}"));
            }
        }
    }
    let rg = &report["compare_rg"];
    match rg["rg_version"].as_str() {
        Some(_) => {
            assert_eq!(rg["cases"].as_array().unwrap().len(), 5);
            assert!(number(rg, "/overall_ratio") > 0.0);
        }
        None => assert!(rg["cases"].as_array().unwrap().is_empty()),
    }
    // .ci/run installs mcp-server-everything.
    let mcp = &report["mcp"];
    assert_eq!(mcp["server"], "mcp-server-everything");
    assert_eq!(number(mcp, "/calls"), 200.0);
    assert!(number(mcp, "/tool_ms/median") > 0.0);
    assert!(number(mcp, "/raw_ms/median") > 0.0);
    number(mcp, "/added_ms");
    let targets = report["targets"].as_array().unwrap();
    assert!(targets.len() >= 4);
    assert!(targets.iter().all(|t| t["met"].is_boolean()));
}

#[test]
fn long_session_and_resume_series_report_their_figures() {
    let output = bench(&["--json", "--history-turns", "20", "--resume-mb", "1"]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["history"]["turns"], 20);
    assert!(number(&report, "/history/early_turn_ms") > 0.0);
    assert!(number(&report, "/history/late_turn_ms") > 0.0);
    assert!(number(&report, "/history/last_request_mb") > 0.0);
    assert!(number(&report, "/resume/transcript_mb") >= 1.0);
    for run in ["with_compactions", "without_compactions"] {
        assert!(number(&report, &format!("/resume/{run}/wall_ms")) > 0.0);
        assert!(number(&report, &format!("/resume/{run}/peak_rss_mb")) > 0.0);
        assert!(number(&report, &format!("/resume/{run}/requests")) >= 1.0);
    }
}

#[test]
fn the_eval_series_reports_its_overhead() {
    let output = bench(&["--json", "--eval"]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["eval"]["tasks"], 8);
    assert!(number(&report, "/eval/first_request_ms") > 0.0);
    assert!(number(&report, "/eval/overhead_per_trial_ms").is_finite());
    let targets = report["targets"].as_array().unwrap();
    assert!(
        targets
            .iter()
            .any(|t| t["name"] == "eval overhead per trial beyond the agent"),
        "{targets:?}"
    );
}

#[test]
fn a_bad_mix_is_refused_with_the_choices() {
    let output = bench(&["--mix", "read,write"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`write` is not a benchmark tool"),
        "{stderr}"
    );
}

#[test]
fn strict_fails_exactly_when_a_target_is_missed() {
    let output = bench(&["--json", "--strict"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let targets = report["targets"].as_array().unwrap();
    let names: Vec<&str> = targets
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in [
        "start to first request, hello session",
        "hello session wall time",
        "tools session wall time, checkpoints on / off",
        "checkpoint cost per tool call",
        "peak RSS, tools session (ouro -p)",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    let all_met = targets.iter().all(|t| t["met"] == true);
    assert_eq!(output.status.success(), all_met, "{targets:?}");
    if !all_met {
        assert!(String::from_utf8_lossy(&output.stderr).contains("a target was missed"));
    }
}

/// `--write-scenario` writes what the benchmark measures, and the printed arguments replay it:
/// every scripted call runs, none fails, and the session ends with the scripted answer.
#[tokio::test]
async fn the_written_scenario_replays_the_measured_session() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("session");
    let written: Value = serde_json::from_str(&stdout(&bench(&[
        "--mix",
        "read,grep,glob,edit,bash",
        "--json",
        "--write-scenario",
        out.to_str().unwrap(),
    ])))
    .unwrap();
    let scenario = std::fs::read_to_string(written["scenario"].as_str().unwrap()).unwrap();
    let scenario: Value = serde_json::from_str(&scenario).unwrap();
    let server = common::server(scenario).await;
    let args: Vec<String> = written["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let home = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_ouro"))
        .args(&args)
        .args(["--output-format", "stream-json", "--verbose"])
        .current_dir(written["project"].as_str().unwrap())
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("OURO_HOME", home.path())
        .env_remove("ANTHROPIC_MODEL")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let run = common::Run::from(output);
    let results = run.tool_results();
    assert_eq!(results.len(), 6, "{}", run.debug());
    assert!(
        results.iter().all(|r| r["is_error"] != true),
        "{}",
        run.debug()
    );
    assert_eq!(run.result()["subtype"], "success", "{}", run.debug());

    // A second write into the same place is refused rather than mixed with the first.
    let again = bench(&["--write-scenario", out.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));
}

/// `--recall` builds a memory and times Recall on it (by keywords and with vectors), and
/// reflect after an answer; the p99 is a strict target. A smaller memory than the default
/// 100,000 nodes: a debug build's figures say nothing, and embedding 100,000 nodes unoptimised
/// takes minutes.
#[test]
fn the_recall_series_reports_its_percentiles() {
    let output = bench(&["--json", "--recall=5000"]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["recall"]["nodes"], 5_000);
    assert!(report["recall"]["edges"].as_u64().unwrap() > 14_900);
    let (p50, p99) = (
        number(&report, "/recall/p50_ms"),
        number(&report, "/recall/p99_ms"),
    );
    assert!(p50 > 0.0 && p99 >= p50, "{report}");
    let (p50, p99) = (
        number(&report, "/recall/semantic_p50_ms"),
        number(&report, "/recall/semantic_p99_ms"),
    );
    assert!(p50 > 0.0 && p99 >= p50, "{report}");
    assert!(number(&report, "/recall/embedded_per_s") > 0.0);
    assert!(number(&report, "/recall/reflect_after_answer_ms") > 0.0);
    let targets = report["targets"].as_array().unwrap();
    assert!(
        targets
            .iter()
            .any(|t| t["name"].as_str().unwrap().starts_with("Recall p99")),
        "{targets:?}"
    );
}
