//! Long sessions: the client's time per turn early and late in a session whose history grows
//! to megabytes (it should not grow with the history), and `ouro -p --resume` of a huge
//! transcript (wall time and peak memory), with compactions in it as a real long session has,
//! and without any.

use std::io::{BufWriter, Write};
use std::path::Path;

use serde::Serialize;
use serde_json::json;

use super::BenchError;
use super::fixture::WorkDir;
use super::host::MockHost;
use super::measure::median;
use super::run::{self, session_options};
use super::scenario::{Mix, Plan, ToolKind};
use super::startup::{probe_command, probe_report};
use crate::mock::{Scenario, Turn};

/// Client time per turn at the start and at the end of one long session.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryCost {
    pub turns: usize,
    /// Median over turns 5 to 15.
    pub early_turn_ms: f64,
    /// Median over the last 10 turns.
    pub late_turn_ms: f64,
    /// The size of the last request: the history the late turns carry.
    pub last_request_mb: f64,
}

/// One Read per turn for `turns` turns, never compacted, so the history only grows.
pub(crate) async fn history_cost(
    host: &MockHost,
    turns: usize,
    files: usize,
    seed: u64,
) -> Result<HistoryCost, BenchError> {
    let plan = Plan {
        turns,
        calls_per_turn: 1,
        mix: Mix(vec![ToolKind::Read]),
        seed,
    };
    let options = crate::app::Options {
        auto_compact_threshold: Some(f64::INFINITY),
        ..session_options()
    };
    let sample = run::run_with(host, &plan, files, &options).await?;
    let ms = |d: &[std::time::Duration]| {
        median(
            &d.iter()
                .map(|d| d.as_secs_f64() * 1000.0)
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0)
    };
    let all = &sample.client_turns;
    let early = &all[5.min(all.len())..15.min(all.len())];
    let late = &all[all.len().saturating_sub(10)..];
    Ok(HistoryCost {
        turns,
        early_turn_ms: ms(early),
        late_turn_ms: ms(late),
        last_request_mb: sample.last_request_bytes as f64 / (1 << 20) as f64,
    })
}

/// `ouro -p --resume` of generated transcripts of one size.
#[derive(Debug, Clone, Serialize)]
pub struct ResumeCost {
    pub transcript_mb: f64,
    /// Compacted every ~600 KB, as a session in a 200k-token window is.
    pub with_compactions: ResumeRun,
    /// One conversation that was never compacted: the resume has to compact it first.
    pub without_compactions: ResumeRun,
}

#[derive(Debug, Clone, Serialize)]
pub struct ResumeRun {
    /// Spawn to exit, the answer included.
    pub wall_ms: f64,
    pub peak_rss_mb: f64,
    pub requests: usize,
}

/// Bytes of live conversation between two compactions of the generated session.
const COMPACT_EVERY: usize = 600 << 10;
/// The size of one generated tool result.
const RESULT_BYTES: usize = 8 << 10;

pub(crate) async fn resume_cost(
    host: &MockHost,
    megabytes: usize,
) -> Result<ResumeCost, BenchError> {
    let dir = WorkDir::new("resume")
        .map_err(|e| BenchError::io("could not create the fixture directory", e))?;
    let mut runs = Vec::new();
    let mut size = 0;
    for compact in [true, false] {
        let path = dir.path().join(format!("session-{compact}.jsonl"));
        size = write_transcript(&path, megabytes << 20, compact)
            .map_err(|e| BenchError::io("could not write the generated transcript", e))?;
        runs.push(resume_once(host, dir.path(), &path).await?);
    }
    let without_compactions = runs
        .pop()
        .ok_or(BenchError::Failed("no resume run".into()))?;
    let with_compactions = runs
        .pop()
        .ok_or(BenchError::Failed("no resume run".into()))?;
    Ok(ResumeCost {
        transcript_mb: size as f64 / (1 << 20) as f64,
        with_compactions,
        without_compactions,
    })
}

async fn resume_once(
    host: &MockHost,
    dir: &Path,
    transcript: &Path,
) -> Result<ResumeRun, BenchError> {
    let home = WorkDir::new("home")
        .map_err(|e| BenchError::io("could not create a private OURO_HOME", e))?;
    // Summaries for a compaction in chunks, then the answer; whatever is not asked for is
    // simply left over.
    let turns = (0..8)
        .map(|_| Turn::text("Resumed: the work goes on."))
        .collect();
    let server = host.serve(Scenario::new(turns)).await?;
    let flags: Vec<String> = ["-p", "--max-retries", "0", "--resume"]
        .iter()
        .map(|s| s.to_string())
        .chain([transcript.to_string_lossy().into_owned(), "go on".into()])
        .collect();
    let command = probe_command(dir, home.path(), &server.url(), &flags)?;
    let output = tokio::task::spawn_blocking(move || {
        let mut command = command;
        command.output()
    })
    .await;
    let requests = server.body_sizes().len();
    host.stop(server).await;
    let output = output
        .map_err(|e| BenchError::Failed(format!("waiting for the probe failed: {e}")))?
        .map_err(|e| BenchError::io("waiting for the probe failed", e))?;
    let report = probe_report(&output)?;
    Ok(ResumeRun {
        wall_ms: report.exited_ns.saturating_sub(report.spawned_ns) as f64 / 1e6,
        peak_rss_mb: report.max_rss_kb as f64 / 1024.0,
        requests,
    })
}

/// A session of Read rounds with code-like results, `bytes` long; with `compact`, a
/// compaction (summary plus the last two rounds) every [`COMPACT_EVERY`] bytes. Returns its size.
fn write_transcript(path: &Path, bytes: usize, compact: bool) -> std::io::Result<usize> {
    let mut out = Lines {
        out: BufWriter::new(std::fs::File::create(path)?),
        written: 0,
    };
    let stamp = "2026-01-01T00:00:00.000Z";
    out.line(json!({"type": "meta", "session_id": "bench-resume", "cwd": "/bench", "model": "claude-sonnet-5-5", "timestamp": stamp}))?;
    let code: String = (0..RESULT_BYTES / 64)
        .map(|i| format!("    let value_{i:04} = compute(\"input\", {i});    // step\n"))
        .collect();
    let mut since_compaction = 0;
    let mut recent: Vec<serde_json::Value> = Vec::new();
    let mut round = 0usize;
    out.line(
        json!({"type": "user", "uuid": "u-start", "timestamp": stamp,
               "message": {"role": "user", "content": "Refactor the parser module step by step."}}),
    )?;
    while out.written < bytes {
        let id = format!("toolu_bench_{round:07}");
        let call = json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Reading part {round}.")},
            {"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": format!("/bench/src/part_{round}.rs")}}]});
        let result = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": code}]});
        out.line(
            json!({"type": "assistant", "uuid": format!("a{round}"), "timestamp": stamp,
                   "message_id": format!("msg_{round}"), "message": call}),
        )?;
        out.line(json!({"type": "user", "uuid": format!("u{round}"), "timestamp": stamp, "message": result}))?;
        recent = [
            recent.split_off(recent.len().saturating_sub(2)),
            vec![call, result],
        ]
        .concat();
        since_compaction += 2 * RESULT_BYTES;
        round += 1;
        if compact && since_compaction > COMPACT_EVERY {
            let mut messages = vec![json!({"role": "user", "content":
                format!("Summary of the earlier conversation: parts 0 to {round} of the parser were read and refactored.")})];
            messages.extend(recent.iter().cloned());
            out.line(json!({"type": "compact", "uuid": format!("c{round}"), "timestamp": stamp, "messages": messages}))?;
            since_compaction = 0;
        }
    }
    out.line(json!({"type": "assistant", "uuid": "a-end", "timestamp": stamp, "message_id": "msg_end",
               "message": {"role": "assistant", "content": [{"type": "text", "text": "Done for now."}]}}))?;
    out.out.flush()?;
    Ok(out.written)
}

/// JSON lines written, and their bytes.
struct Lines {
    out: BufWriter<std::fs::File>,
    written: usize,
}

impl Lines {
    fn line(&mut self, value: serde_json::Value) -> std::io::Result<()> {
        let text = value.to_string();
        self.written += text.len() + 1;
        writeln!(self.out, "{text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_transcripts_load_as_sessions() {
        let dir = tempfile::tempdir().unwrap();
        for compact in [true, false] {
            let path = dir.path().join(format!("{compact}.jsonl"));
            let size = write_transcript(&path, 2 << 20, compact).unwrap();
            assert!(size >= 2 << 20);
            assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, size);
            let loaded = crate::session::transcript::load(&path).unwrap();
            assert_eq!(loaded.skipped_lines, 0);
            assert_eq!(loaded.session_id.as_deref(), Some("bench-resume"));
            let live: usize = loaded
                .messages
                .iter()
                .map(|m| serde_json::to_vec(m).unwrap().len())
                .sum();
            if compact {
                assert!(live < 2 * COMPACT_EVERY, "{live}");
            } else {
                assert!(live > 1 << 20, "{live}");
            }
        }
    }
}
