//! `--recall`: memory at scale. A generated graph of 100,000 nodes (or as many as asked) and
//! three edges each (a tenth of them invalidated), then Recall — keyword seeds, the bounded walk, the text — for many
//! queries: p50 and p99. Then the same store with a vector per node (a generated model2vec
//! model of the graph's words, loaded as a real one is): the embedding rate and semantic
//! Recall's p50 and p99. And what reflect adds after a print-mode turn's answer: the time from
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
use crate::knowledge::embed::fixture::write_model2vec;
use crate::knowledge::embed::{Embedder, backfill, query_vector};
use crate::knowledge::recall::{self, Reach};
use crate::knowledge::{EdgeKind, NodeKind, Store};
use crate::mock::Scenario;

pub const EDGES_PER_NODE: usize = 3;
const QUERIES: usize = 2_000;
/// Semantic queries read every vector, so fewer of them give as steady a figure.
const SEMANTIC_QUERIES: usize = 100;
/// The generated model's vector length, that of model2vec's small models (potion-base-8M).
const DIMENSIONS: usize = 256;
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
    /// Nodes given a vector per second (model and store), and Recall with semantic seeds.
    pub(crate) embedded_per_s: f64,
    pub(crate) semantic_p50_ms: f64,
    pub(crate) semantic_p99_ms: f64,
}

pub(crate) async fn measure(host: &MockHost, nodes: usize) -> Result<RecallCost, BenchError> {
    let dir =
        WorkDir::new("recall").map_err(|e| BenchError::io("could not create a work dir", e))?;
    let path = dir.path().join("memory.sqlite");
    let words = vocabulary();
    let started = Instant::now();
    let edges = build(&path, &words, nodes)?;
    let build_s = started.elapsed().as_secs_f64();
    let file_mb = std::fs::metadata(&path).map_or(0.0, |m| m.len() as f64 / 1e6);
    let store = Store::open(&path).map_err(failed)?;
    let mut rng = Rng::new(7);
    let mut times = Vec::with_capacity(QUERIES);
    for _ in 0..QUERIES {
        let query = question(&mut rng, &words);
        times.push(time_recall(&store, &query, None)?);
    }
    let mut store = store;
    let (embedded_per_s, semantic) = semantic(&mut store, &dir, &words).await?;
    let reflect_after_answer_ms = reflect_latency(host).await?;
    Ok(RecallCost {
        nodes,
        edges,
        build_s,
        file_mb,
        p50_ms: median(&times).unwrap_or_default(),
        p99_ms: percentile(&times, 99.0).unwrap_or_default(),
        reflect_after_answer_ms,
        embedded_per_s,
        semantic_p50_ms: median(&semantic).unwrap_or_default(),
        semantic_p99_ms: percentile(&semantic, 99.0).unwrap_or_default(),
    })
}

fn question(rng: &mut Rng, words: &[String]) -> String {
    format!(
        "how do we {} the {} {}",
        words[zipf(rng, words.len())],
        words[zipf(rng, words.len())],
        words[rng.below(words.len())]
    )
}

/// One Recall as the tool makes it (seeds, walk, text), in milliseconds.
fn time_recall(
    store: &Store,
    query: &str,
    semantic: Option<recall::Semantic<'_>>,
) -> Result<f64, BenchError> {
    let t = Instant::now();
    let found =
        recall::walk(store, "project memory", query, semantic, Reach::default()).map_err(failed)?;
    let text = recall::render(query, &[found], crate::knowledge::now());
    std::hint::black_box(text);
    Ok(t.elapsed().as_secs_f64() * 1000.0)
}

/// Every node embedded by a generated model of `words` (random directions), then semantic
/// Recall: (nodes embedded per second, each query's time in ms).
async fn semantic(
    store: &mut Store,
    dir: &WorkDir,
    words: &[String],
) -> Result<(f64, Vec<f64>), BenchError> {
    let mut rng = Rng::new(11);
    let vectors: Vec<(&str, Vec<f32>)> = words
        .iter()
        .map(|w| {
            let v = (0..DIMENSIONS)
                .map(|_| rng.below(2001) as f32 / 1000.0 - 1.0)
                .collect();
            (w.as_str(), v)
        })
        .collect();
    let model = dir.path().join("model");
    write_model2vec(&model, &vectors)
        .map_err(|e| BenchError::io("could not write the model", e))?;
    let embedder = Embedder::local(&model);
    let embed_failed = |e: crate::knowledge::embed::EmbedError| BenchError::Failed(e.to_string());
    let started = Instant::now();
    let embedded = backfill(store, &embedder, None)
        .await
        .map_err(embed_failed)?;
    let embedded_per_s = embedded as f64 / started.elapsed().as_secs_f64().max(1e-9);
    let mut times = Vec::with_capacity(SEMANTIC_QUERIES);
    for _ in 0..SEMANTIC_QUERIES {
        let query = question(&mut rng, words);
        let vector = query_vector(Some(&embedder), &query).await;
        if !vector.unavailable.is_empty() {
            return Err(BenchError::Failed(vector.unavailable));
        }
        times.push(time_recall(store, &query, vector.semantic())?);
    }
    Ok((embedded_per_s, times))
}

fn failed(e: crate::knowledge::StoreError) -> BenchError {
    BenchError::Failed(format!("the memory store failed: {e}"))
}

/// The graph, written in one transaction: node `n` has three edges to nodes drawn at random.
fn build(path: &std::path::Path, words: &[String], nodes: usize) -> Result<usize, BenchError> {
    let mut store = Store::open(path).map_err(failed)?;
    let mut rng = Rng::new(42);
    let now = crate::knowledge::now();
    let edges = store
        .bulk(|tx| {
            let mut node = tx.prepare(
                "INSERT INTO nodes (id, kind, name, description, origin, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, 'reflect', ?5, ?5)",
            )?;
            for n in 0..nodes {
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
            for n in 0..nodes {
                for k in 0..EDGES_PER_NODE {
                    let target = rng.below(nodes);
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
