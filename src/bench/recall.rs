//! `--recall`: memory at scale. A generated graph of 100,000 nodes and 300,000 edges (a tenth
//! of them invalidated), then Recall — keyword seeds, the bounded walk, the text — for many
//! queries: p50 and p99. And what reflect adds after a print-mode turn's answer: the time from
//! the result line to the process's exit, with a mocked reflect answer.

use std::process::Stdio;
use std::time::Instant;

use serde::Serialize;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

use super::BenchError;
use super::fixture::{Rng, WorkDir};
use super::host::MockHost;
use super::measure::{median, percentile};
use crate::knowledge::recall::{self, Reach};
use crate::knowledge::{EdgeKind, NodeKind, Store};
use crate::mock::Scenario;

pub const NODES: usize = 100_000;
pub const EDGES_PER_NODE: usize = 3;
const QUERIES: usize = 2_000;
const REFLECT_RUNS: usize = 5;

/// Recall's p99 that `--strict` holds.
pub const P99_LIMIT_MS: f64 = 5.0;

#[derive(Debug, Clone, Serialize)]
pub struct RecallCost {
    pub nodes: usize,
    pub edges: usize,
    pub(crate) build_s: f64,
    pub(crate) file_mb: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    /// From the result line to the exit of `ouro -p` with `memory.reflect` `auto` (median).
    pub(crate) reflect_after_answer_ms: f64,
}

pub(crate) async fn measure(host: &MockHost) -> Result<RecallCost, BenchError> {
    let dir =
        WorkDir::new("recall").map_err(|e| BenchError::io("could not create a work dir", e))?;
    let path = dir.path().join("memory.sqlite");
    let words = vocabulary();
    let started = Instant::now();
    let edges = build(&path, &words)?;
    let build_s = started.elapsed().as_secs_f64();
    let file_mb = std::fs::metadata(&path).map_or(0.0, |m| m.len() as f64 / 1e6);
    let store = Store::open(&path).map_err(failed)?;
    let mut rng = Rng::new(7);
    let mut times = Vec::with_capacity(QUERIES);
    for _ in 0..QUERIES {
        let query = format!(
            "how do we {} the {} {}",
            words[zipf(&mut rng, words.len())],
            words[zipf(&mut rng, words.len())],
            words[rng.below(words.len())]
        );
        let t = Instant::now();
        let found =
            recall::walk(&store, "project memory", &query, Reach::default()).map_err(failed)?;
        let text = recall::render(&query, &[found], crate::knowledge::now());
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        std::hint::black_box(text);
    }
    let reflect_after_answer_ms = reflect_latency(host).await?;
    Ok(RecallCost {
        nodes: NODES,
        edges,
        build_s,
        file_mb,
        p50_ms: median(&times).unwrap_or_default(),
        p99_ms: percentile(&times, 99.0).unwrap_or_default(),
        reflect_after_answer_ms,
    })
}

fn failed(e: crate::knowledge::StoreError) -> BenchError {
    BenchError::Failed(format!("the memory store failed: {e}"))
}

/// The graph, written in one transaction: node `n` has three edges to nodes drawn at random.
fn build(path: &std::path::Path, words: &[String]) -> Result<usize, BenchError> {
    let mut store = Store::open(path).map_err(failed)?;
    let mut rng = Rng::new(42);
    let now = crate::knowledge::now();
    let edges = store
        .bulk(|tx| {
            let mut node = tx.prepare(
                "INSERT INTO nodes (id, kind, name, description, origin, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, 'reflect', ?5, ?5)",
            )?;
            for n in 0..NODES {
                let name: Vec<&str> = (0..3).map(|_| words[zipf(&mut rng, words.len())].as_str()).collect();
                let description: Vec<&str> =
                    (0..12).map(|_| words[zipf(&mut rng, words.len())].as_str()).collect();
                let kind = NodeKind::ALL[n % NodeKind::ALL.len()];
                node.execute(rusqlite::params![
                    format!("n{n}"),
                    kind.as_str(),
                    name.join(" "),
                    description.join(" "),
                    now
                ])?;
            }
            let mut edge = tx.prepare(
                "INSERT INTO edges (source, target, kind, valid_from, valid_to, created_at, expired_at, origin) VALUES (?1, ?2, ?3, ?4, ?5, ?4, ?5, 'reflect')",
            )?;
            let mut count = 0;
            for n in 0..NODES {
                for k in 0..EDGES_PER_NODE {
                    let target = rng.below(NODES);
                    if target == n {
                        continue;
                    }
                    let ended = (rng.below(10) == 0).then_some(now);
                    edge.execute(rusqlite::params![
                        format!("n{n}"),
                        format!("n{target}"),
                        EdgeKind::ALL[(n + k) % EdgeKind::ALL.len()].as_str(),
                        now - 1,
                        ended
                    ])?;
                    count += 1;
                }
            }
            Ok(count)
        })
        .map_err(failed)?;
    Ok(edges)
}

/// 3,000 made-up words of two or three syllables.
fn vocabulary() -> Vec<String> {
    const SYLLABLES: [&str; 15] = [
        "ka", "lo", "mi", "ter", "van", "sul", "dre", "po", "quin", "ra", "shi", "tam", "ul",
        "vex", "zor",
    ];
    let mut words = Vec::new();
    'out: for a in SYLLABLES {
        for b in SYLLABLES {
            for c in SYLLABLES {
                words.push(format!("{a}{b}{c}"));
                if words.len() == 3_000 {
                    break 'out;
                }
            }
        }
    }
    words
}

/// A word index skewed toward small indices, as word use is: a few common words, many rare
/// ones.
fn zipf(rng: &mut Rng, n: usize) -> usize {
    let u = (rng.next_u64() % 1_000_000) as f64 / 1_000_000.0;
    ((n as f64).powf(u) as usize).saturating_sub(1).min(n - 1)
}

/// The median time from a print-mode run's result line to its exit, with `memory.reflect`
/// `auto` and a mocked reflect answer of three operations.
async fn reflect_latency(host: &MockHost) -> Result<f64, BenchError> {
    let dir =
        WorkDir::new("reflect").map_err(|e| BenchError::io("could not create a work dir", e))?;
    let project = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(project.join(".ouro"))
        .and_then(|()| std::fs::create_dir_all(&home))
        .and_then(|()| {
            std::fs::write(
                project.join(".ouro/settings.json"),
                r#"{"memory": {"reflect": "auto"}}"#,
            )
        })
        .map_err(|e| BenchError::io("could not write the project", e))?;
    let exe = std::env::current_exe()
        .map_err(|e| BenchError::io("could not find the ouro executable", e))?;
    let ops = json!([
        {"op": "add_node", "type": "Strategy", "id": "s", "properties": {"name": "a strategy"}},
        {"op": "add_node", "type": "Tool", "id": "t", "properties": {"name": "a tool"}},
        {"op": "add_edge", "source": "s", "target": "t", "type": "USES"}
    ]);
    let mut after = Vec::new();
    for _ in 0..REFLECT_RUNS {
        let scenario = Scenario::from_json(
            &json!({"turns": [
                {"content": [{"type": "text", "text": "hello"}]},
                {"content": [{"type": "text", "text": ops.to_string()}]}
            ]})
            .to_string(),
        )
        .map_err(|e| BenchError::Failed(e.to_string()))?;
        let mock = host.serve(scenario).await?;
        let mut child = tokio::process::Command::new(&exe)
            .args([
                "-p",
                "--trust-project",
                "--output-format",
                "stream-json",
                "--verbose",
                "hi",
            ])
            .current_dir(&project)
            .env("ANTHROPIC_BASE_URL", mock.url())
            .env("ANTHROPIC_API_KEY", "bench")
            .env("OURO_HOME", &home)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BenchError::io("could not start ouro", e))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| BenchError::Failed("no stdout".into()))?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let mut answered = None;
        while let Ok(Some(line)) = lines.next_line().await {
            let result = serde_json::from_str::<serde_json::Value>(&line)
                .is_ok_and(|v| v["type"] == "result");
            if answered.is_none() && result {
                answered = Some(Instant::now());
            }
        }
        let status = child
            .wait()
            .await
            .map_err(|e| BenchError::io("could not wait for ouro", e))?;
        host.stop(mock).await;
        match answered {
            Some(at) if status.success() => after.push(at.elapsed().as_secs_f64() * 1000.0),
            _ => {
                return Err(BenchError::Failed(format!(
                    "ouro -p with reflect failed: {status}"
                )));
            }
        }
    }
    Ok(median(&after).unwrap_or_default())
}
