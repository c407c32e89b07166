//! `--memory`: peak RSS of `ouro -p` (through the probe, see [`super::startup`]) when one
//! answer is a single 50 MB text delta, when a tool result is 50 MB, and when a Bash command
//! prints 1 GB. Each should hold about two copies of what is large, and the Bash output none.

use serde::Serialize;
use serde_json::json;

use super::BenchError;
use super::fixture::WorkDir;
use super::host::MockHost;
use super::startup::{probe_command, probe_report};
use crate::mock::Scenario;

const MB: usize = 1 << 20;

#[derive(Debug, Clone, Serialize)]
pub struct MemoryCost {
    /// The same session with a one-word answer: the floor the others are compared with.
    pub(crate) baseline_mb: f64,
    pub(crate) delta_50mb_mb: f64,
    /// The same delta printed as `--output-format stream-json --verbose`, as the SDKs read it.
    pub(crate) delta_50mb_stream_json_mb: f64,
    pub(crate) tool_result_50mb_mb: f64,
    pub(crate) bash_1gb_mb: f64,
}

pub(crate) async fn measure(host: &MockHost) -> Result<MemoryCost, BenchError> {
    let dir = WorkDir::new("memory")
        .map_err(|e| BenchError::io("could not create the fixture directory", e))?;
    let big = dir.path().join("big.txt");
    // 50 MB of 100-character lines: Read returns it whole when asked for every line.
    let line = format!("{}\n", "r".repeat(99));
    std::fs::write(&big, line.repeat(50 * MB / line.len()))
        .map_err(|e| BenchError::io("could not write the 50 MB file", e))?;
    let done = json!({"content": [{"type": "text", "text": "done"}]});
    let baseline = json!({"turns": [done.clone()]});
    let delta = json!({"turns": [
        {"content": [{"type": "text", "text": "d".repeat(50 * MB)}], "delta_chunks": 1}
    ]});
    let tool_result = json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read",
            "input": {"file_path": big.display().to_string(), "limit": 1_000_000}}]},
        done.clone()
    ]});
    let bash = json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash",
            "input": {"command": "head -c 1073741824 /dev/zero | tr '\\0' 'b'"}}]},
        done
    ]});
    Ok(MemoryCost {
        baseline_mb: peak(host, &dir, baseline, &[]).await?,
        delta_50mb_mb: peak(host, &dir, delta.clone(), &[]).await?,
        delta_50mb_stream_json_mb: peak(
            host,
            &dir,
            delta,
            &["--output-format", "stream-json", "--verbose"],
        )
        .await?,
        tool_result_50mb_mb: peak(host, &dir, tool_result, &[]).await?,
        bash_1gb_mb: peak(host, &dir, bash, &[]).await?,
    })
}

/// Peak RSS (MiB) of one print-mode session on `scenario`.
async fn peak(
    host: &MockHost,
    dir: &WorkDir,
    scenario: serde_json::Value,
    output: &[&str],
) -> Result<f64, BenchError> {
    let scenario: Scenario = serde_json::from_value(scenario)
        .map_err(|e| BenchError::Failed(format!("a memory scenario is invalid: {e}")))?;
    let home = WorkDir::new("memory-home")
        .map_err(|e| BenchError::io("could not create a private OURO_HOME", e))?;
    let server = host.serve(scenario).await?;
    let flags: Vec<String> = ["-p", "--max-retries", "0", "--allowedTools", "Bash"]
        .iter()
        .chain(output)
        .chain(&["go"])
        .map(|f| f.to_string())
        .collect();
    let mut command = probe_command(dir.path(), home.path(), &server.url(), &flags)?;
    command.env("OURO_CHECKPOINTS", "0");
    let output = tokio::task::spawn_blocking(move || command.output()).await;
    host.stop(server).await;
    let output = output
        .map_err(|e| BenchError::Failed(format!("waiting for the probe failed: {e}")))?
        .map_err(|e| BenchError::io("waiting for the probe failed", e))?;
    Ok(probe_report(&output)?.max_rss_kb as f64 / 1024.0)
}
