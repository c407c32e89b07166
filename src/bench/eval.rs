//! `--eval`: what `ouro eval` adds around the agent's own work, on a suite like the starter
//! one (8 small tasks, one trial each, one at a time): the time from starting `ouro eval run`
//! to the first trial's first API request, and per trial the overhead beyond the agent's own
//! time (making the tree and its commit, the change's bundle and patch, the tests in the
//! sandbox, the bookkeeping), from the whole run's wall time less the trials' agent time.

use std::process::Stdio;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;

use super::BenchError;
use super::fixture::WorkDir;
use super::host::MockHost;
use super::measure::median;
use crate::mock::Scenario;
use crate::sys::clock::monotonic_ns;

const TASKS: usize = 8;
const RUNS: usize = 3;

#[derive(Debug, Clone, Serialize)]
pub struct EvalCost {
    pub tasks: usize,
    /// From spawning `ouro eval run` to the first trial's first request (median).
    pub(crate) first_request_ms: f64,
    /// The run's wall time less the trials' agent time, per trial (median).
    pub(crate) overhead_per_trial_ms: f64,
}

/// The overhead a trial may add, as `--strict` holds it.
pub const OVERHEAD_LIMIT_MS: f64 = 100.0;

pub(crate) async fn measure(host: &MockHost) -> Result<EvalCost, BenchError> {
    let dir = WorkDir::new("eval").map_err(|e| BenchError::io("could not create a work dir", e))?;
    let suite = dir.path().join("suite");
    write_suite(&suite).map_err(|e| BenchError::io("could not write the suite", e))?;
    let exe = std::env::current_exe()
        .map_err(|e| BenchError::io("could not find the ouro executable", e))?;
    let (mut firsts, mut overheads) = (Vec::new(), Vec::new());
    for n in 0..RUNS {
        let mock = host.serve(scenario()?).await?;
        let out = dir.path().join(format!("out-{n}"));
        let started_ns = monotonic_ns();
        let mut child = tokio::process::Command::new(&exe)
            .args(["eval", "run"])
            .arg(&suite)
            .args(["--brain", "ouro@anthropic/claude/sonnet", "--no-judge"])
            .args(["--concurrency", "1", "--out"])
            .arg(&out)
            .env("ANTHROPIC_BASE_URL", mock.url())
            .env("ANTHROPIC_API_KEY", "bench")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BenchError::io("could not start ouro eval", e))?;
        let status = child
            .wait()
            .await
            .map_err(|e| BenchError::io("could not wait for ouro eval", e))?;
        let wall = Duration::from_nanos(monotonic_ns().saturating_sub(started_ns));
        let first = mock
            .first_request_ns()
            .map(|at| Duration::from_nanos(at.saturating_sub(started_ns)));
        host.stop(mock).await;
        if !status.success() {
            return Err(BenchError::Failed(format!(
                "ouro eval run failed: {status}"
            )));
        }
        let results: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.join("results.json"))
                .map_err(|e| BenchError::io("could not read the results", e))?,
        )
        .map_err(|e| BenchError::Failed(format!("the results are not JSON: {e}")))?;
        let trials = results["trials"].as_array().cloned().unwrap_or_default();
        if trials.iter().any(|t| t["status"] != "passed") {
            return Err(BenchError::Failed(format!(
                "a benchmark trial did not pass: {results}"
            )));
        }
        let agent_s: f64 = trials.iter().filter_map(|t| t["wall_s"].as_f64()).sum();
        firsts.push(first.unwrap_or(wall).as_secs_f64() * 1000.0);
        overheads.push((wall.as_secs_f64() - agent_s) * 1000.0 / trials.len().max(1) as f64);
    }
    Ok(EvalCost {
        tasks: TASKS,
        first_request_ms: median(&firsts).unwrap_or_default(),
        overhead_per_trial_ms: median(&overheads).unwrap_or_default(),
    })
}

/// Small tasks: a three-file start, a hidden test, a reference change.
fn write_suite(suite: &std::path::Path) -> std::io::Result<()> {
    for i in 0..TASKS {
        let dir = suite.join(format!("t{i}"));
        std::fs::create_dir_all(dir.join("tests"))?;
        std::fs::write(
            dir.join("task.md"),
            format!(
                "---\nid: t{i}\nversion: \"1.0\"\ntests: sh tests/check.sh\ntimeout_s: 60\n---\nWrite yes into answer.txt. Task token: EVAL-t{i}\n"
            ),
        )?;
        let mut bundle = String::from("# Cats Bundle\n# Format: FULL\n\n");
        for file in ["README.md", "src/main.py", "src/util.py"] {
            bundle.push_str(&format!(
                "🐈 --- CATS_START_FILE: {file} ---\n```\n# {file} of t{i}\n\n```\n🐈 --- CATS_END_FILE: {file} ---\n\n"
            ));
        }
        std::fs::write(dir.join("context.cats.md"), bundle)?;
        std::fs::write(dir.join("tests/check.sh"), "grep -qx yes answer.txt\n")?;
    }
    Ok(())
}

fn scenario() -> Result<Scenario, BenchError> {
    let mut turns = Vec::new();
    for i in 0..TASKS {
        turns.push(json!({"when_text": format!("DONE-t{i}"), "content": [{"type": "text", "text": "done"}]}));
        turns.push(json!({"when_text": format!("EVAL-t{i}"), "content": [{"type": "tool_use",
            "name": "Bash", "input": {"command": format!("echo yes > answer.txt; echo DONE-t{i}")}}]}));
    }
    Scenario::from_json(&json!({ "turns": turns }).to_string())
        .map_err(|e| BenchError::Failed(format!("the eval scenario is invalid: {e}")))
}
