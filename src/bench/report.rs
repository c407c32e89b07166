//! The benchmark's figures, built from the raw samples; serialised as is for `--json`.
//! Every duration is in milliseconds (`_ms`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::measure::{Percentiles, Spread, median, ms};
use super::rg::RgReport;
use super::run::RunSample;
use super::startup::StartSample;

#[derive(Debug, Clone, Serialize)]
pub struct Config {
    pub version: &'static str,
    pub turns: usize,
    pub(crate) calls_per_turn: usize,
    pub mix: String,
    pub files: usize,
    pub runs: usize,
    pub warmup: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub config: Config,
    pub tool_calls_per_run: usize,
    pub requests_per_run: usize,
    pub wall_ms: Spread,
    pub calls_per_sec: Spread,
    /// Per run, the median of the turns' client time; then median/min/max over runs.
    pub client_turn_ms: Spread,
    /// Every turn of every measured run.
    pub client_turn_all_ms: Percentiles,
    /// Request start to message end (mock, HTTP, SSE parsing), per-run medians.
    pub response_ms: Spread,
    pub phases: Vec<ToolPhases>,
    pub marginal: Marginal,
    pub startup: Startup,
    pub compare_rg: Option<RgReport>,
    /// What the OS sandbox adds to starting a Bash call; `None` where the kernel has none.
    pub sandbox: Option<SandboxCost>,
    /// `--compare-mcp`: an MCP tool call through ouro and bare.
    pub mcp: Option<super::mcp::McpCost>,
    /// `--checkpoints`: what a snapshot of the project costs.
    pub checkpoints: Option<super::checkpoints::CheckpointCost>,
    /// `--serve`: `ouro serve` driven over HTTP.
    #[cfg(feature = "serve")]
    pub serve: Option<super::serve::ServeCost>,
    /// `--cats`: bundling a large tree and applying it back.
    pub cats: Option<super::cats::CatsCost>,
    /// `--memory`: peak RSS with large answers, results and outputs.
    pub memory: Option<super::memory::MemoryCost>,
    /// `--relay`: a talk through the daemon.
    pub relay: Option<super::relay::RelayCost>,
    /// `--relay --zone`: a talk through a zone, beside plain ssh.
    pub relay_zone: Option<super::relay::ZoneRelayCost>,
    /// `--eval`: what `ouro eval run` adds around the agent.
    pub eval: Option<super::eval::EvalCost>,
    /// `--recall`: Recall at scale and reflect's added latency.
    pub recall: Option<super::recall::RecallCost>,
    /// What scripted sessions of a few lengths are billed for input.
    pub cost: Vec<SessionCost>,
    /// `--history-turns`: client time per turn early and late in one long session.
    pub history: Option<super::long::HistoryCost>,
    /// `--resume-mb`: resuming a huge transcript.
    pub resume: Option<super::long::ResumeCost>,
    pub targets: Vec<Target>,
}

/// One scripted session's input bill, with prompt caching as the mock bills it.
#[derive(Debug, Clone, Serialize)]
pub struct SessionCost {
    pub turns: usize,
    pub model: String,
    /// Uncached input + 1.25 × cache writes + 0.1 × cache reads.
    pub(crate) base_rate_input_tokens: f64,
    /// Every input token, as if none were cached.
    pub(crate) input_tokens_uncached_equivalent: u64,
    /// Cache reads over all input tokens.
    pub(crate) cache_hit_ratio: f64,
    /// The session's cost, output included.
    pub usd: f64,
}

impl SessionCost {
    pub fn new(turns: usize, model: &str, usage: &crate::api::types::Usage, usd: f64) -> Self {
        let (input, write, read) = (
            usage.input_tokens,
            usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens,
        );
        let all = input + write + read;
        SessionCost {
            turns,
            model: model.to_string(),
            base_rate_input_tokens: input as f64 + 1.25 * write as f64 + 0.1 * read as f64,
            input_tokens_uncached_equivalent: all,
            cache_hit_ratio: read as f64 / all.max(1) as f64,
            usd,
        }
    }
}

/// Median start of `true`, unconfined and under an approved call's sandbox.
#[derive(Debug, Clone, Serialize)]
pub struct SandboxCost {
    pub spawns: usize,
    pub(crate) plain_ms: f64,
    pub(crate) confined_ms: f64,
    pub added_ms: f64,
    /// What the sandbox adds when file deny rules are masked too; `None` when the kernel
    /// cannot mask.
    pub(crate) masked_added_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolPhases {
    pub tool: String,
    pub schema_ms: Percentiles,
    pub semantic_ms: Percentiles,
    pub pre_hooks_ms: Percentiles,
    pub permission_ms: Percentiles,
    pub execution_ms: Percentiles,
    pub post_hooks_ms: Percentiles,
    /// Submission to result, queueing for the concurrency gate included.
    pub total_ms: Percentiles,
}

/// The same turns with 1 and with `reads_high` Read calls each.
#[derive(Debug, Clone, Serialize)]
pub struct Marginal {
    pub(crate) reads_low: usize,
    pub(crate) reads_high: usize,
    pub wall_low_ms: Spread,
    pub wall_high_ms: Spread,
    pub(crate) client_turn_low_ms: Spread,
    pub(crate) client_turn_high_ms: Spread,
    /// Extra wall time per extra call, from the medians.
    pub per_call_wall_ms: f64,
    /// Extra client time per turn per extra call, from the medians.
    pub(crate) per_call_client_ms: f64,
}

/// The `ouro -p` processes measured: the tools scenario with checkpoints and without, in a new
/// project and in one ouro knows, and the hello session.
pub struct Processes<'a> {
    /// The first session in a new project (its first snapshot reads every file).
    pub tools: &'a [StartSample],
    pub(crate) tools_without_checkpoints: &'a [StartSample],
    /// A session in a project ouro has answered in before.
    pub known: &'a [StartSample],
    pub(crate) known_without_checkpoints: &'a [StartSample],
    pub hello: &'a [StartSample],
    /// Tool calls in one tools session.
    pub calls: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Startup {
    /// Start to first request of the tools session.
    pub first_request_ms: Spread,
    /// The hello session: one answer, no tools.
    pub hello_first_request_ms: Spread,
    pub hello_wall_ms: Spread,
    /// The tools session, the first in a new project.
    pub tools_wall_ms: Spread,
    pub tools_wall_without_checkpoints_ms: Spread,
    /// The tools session in a project ouro knows.
    pub known_wall_ms: Spread,
    pub known_wall_without_checkpoints_ms: Spread,
    /// What checkpoints add per tool call in a project ouro knows: the difference of the two
    /// medians over the calls.
    pub(crate) checkpoint_per_call_ms: f64,
    /// Peak RSS of the tools session.
    pub peak_rss_mb: Spread,
    /// The probe's own high-water mark, which the child's peak includes as a lower bound.
    pub(crate) floor_mb: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub name: String,
    pub measured: f64,
    pub limit: f64,
    pub unit: &'static str,
    /// The figure must reach the limit (a rate), not stay under it.
    pub at_least: bool,
    pub met: bool,
}

/// The three series behind the marginal cost, each a list of measured runs.
pub struct MarginalRuns<'a> {
    pub low: &'a [RunSample],
    pub high: &'a [RunSample],
    pub(crate) reads_low: usize,
    pub(crate) reads_high: usize,
    pub turns: usize,
}

fn spread(values: impl IntoIterator<Item = f64>) -> Spread {
    let values: Vec<f64> = values.into_iter().collect();
    Spread::of(&values).unwrap_or(Spread {
        median: 0.0,
        min: 0.0,
        max: 0.0,
    })
}

fn percentiles(values: &[f64]) -> Percentiles {
    Percentiles::of(values).unwrap_or(Percentiles {
        count: 0,
        p50: 0.0,
        p95: 0.0,
        max: 0.0,
    })
}

fn client_median(run: &RunSample) -> f64 {
    let turns: Vec<f64> = run.client_turns.iter().copied().map(ms).collect();
    median(&turns).unwrap_or(0.0)
}

pub fn build(
    config: Config,
    runs: &[RunSample],
    marginal: MarginalRuns<'_>,
    processes: Processes<'_>,
    compare_rg: Option<RgReport>,
) -> Report {
    let all_turns: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.client_turns.iter().copied().map(ms))
        .collect();
    let marginal = marginal_figures(&marginal);
    let starts = processes.tools;
    let wall = |samples: &[StartSample]| spread(samples.iter().map(|s| ms(s.wall)));
    let tools_wall_ms = wall(starts);
    let tools_wall_without_checkpoints_ms = wall(processes.tools_without_checkpoints);
    let known_wall_ms = wall(processes.known);
    let known_wall_without_checkpoints_ms = wall(processes.known_without_checkpoints);
    let startup = Startup {
        first_request_ms: spread(starts.iter().map(|s| ms(s.first_request))),
        hello_first_request_ms: spread(processes.hello.iter().map(|s| ms(s.first_request))),
        hello_wall_ms: wall(processes.hello),
        checkpoint_per_call_ms: (known_wall_ms.median - known_wall_without_checkpoints_ms.median)
            / processes.calls.max(1) as f64,
        tools_wall_ms,
        tools_wall_without_checkpoints_ms,
        known_wall_ms,
        known_wall_without_checkpoints_ms,
        peak_rss_mb: spread(starts.iter().map(|s| s.peak_rss_kb as f64 / 1024.0)),
        floor_mb: starts.iter().map(|s| s.floor_kb).max().unwrap_or(0) as f64 / 1024.0,
    };
    let mut report = Report {
        tool_calls_per_run: runs.first().map_or(0, |r| r.calls),
        requests_per_run: runs.first().map_or(0, |r| r.requests),
        wall_ms: spread(runs.iter().map(|r| ms(r.wall))),
        calls_per_sec: spread(runs.iter().map(RunSample::calls_per_sec)),
        client_turn_ms: spread(runs.iter().map(client_median)),
        client_turn_all_ms: percentiles(&all_turns),
        response_ms: spread(runs.iter().map(|r| {
            let responses: Vec<f64> = r.responses.iter().copied().map(ms).collect();
            median(&responses).unwrap_or(0.0)
        })),
        phases: phases(runs),
        marginal,
        startup,
        compare_rg,
        sandbox: None,
        mcp: None,
        checkpoints: None,
        #[cfg(feature = "serve")]
        serve: None,
        cats: None,
        memory: None,
        relay: None,
        relay_zone: None,
        eval: None,
        recall: None,
        cost: Vec::new(),
        history: None,
        resume: None,
        targets: Vec::new(),
        config,
    };
    report.targets = targets(&report);
    report
}

fn marginal_figures(m: &MarginalRuns<'_>) -> Marginal {
    let wall_low = spread(m.low.iter().map(|r| ms(r.wall)));
    let wall_high = spread(m.high.iter().map(|r| ms(r.wall)));
    let client_low = spread(m.low.iter().map(client_median));
    let client_high = spread(m.high.iter().map(client_median));
    let extra_per_turn = m.reads_high.saturating_sub(m.reads_low).max(1) as f64;
    Marginal {
        reads_low: m.reads_low,
        reads_high: m.reads_high,
        per_call_wall_ms: (wall_high.median - wall_low.median)
            / (extra_per_turn * m.turns.max(1) as f64),
        per_call_client_ms: (client_high.median - client_low.median) / extra_per_turn,
        wall_low_ms: wall_low,
        wall_high_ms: wall_high,
        client_turn_low_ms: client_low,
        client_turn_high_ms: client_high,
    }
}

fn phases(runs: &[RunSample]) -> Vec<ToolPhases> {
    let mut by_tool: BTreeMap<&str, [Vec<f64>; 7]> = BTreeMap::new();
    for tool in runs.iter().flat_map(|r| &r.tools) {
        let t = tool.timings;
        let slots = by_tool.entry(tool.name.as_str()).or_default();
        let values = [
            t.schema,
            t.semantic,
            t.pre_hooks,
            t.permission,
            t.execution,
            t.post_hooks,
            tool.elapsed,
        ];
        for (slot, value) in slots.iter_mut().zip(values) {
            slot.push(ms(value));
        }
    }
    by_tool
        .into_iter()
        .map(
            |(tool, [schema, semantic, pre, permission, execution, post, total])| ToolPhases {
                tool: tool.to_string(),
                schema_ms: percentiles(&schema),
                semantic_ms: percentiles(&semantic),
                pre_hooks_ms: percentiles(&pre),
                permission_ms: percentiles(&permission),
                execution_ms: percentiles(&execution),
                post_hooks_ms: percentiles(&post),
                total_ms: percentiles(&total),
            },
        )
        .collect()
}

fn target(name: String, measured: f64, limit: f64, unit: &'static str) -> Target {
    Target {
        name,
        measured,
        limit,
        unit,
        at_least: false,
        met: measured <= limit,
    }
}

/// A target the figure must reach.
fn at_least(name: String, measured: f64, limit: f64, unit: &'static str) -> Target {
    Target {
        at_least: true,
        met: measured >= limit,
        ..target(name, measured, limit, unit)
    }
}

/// `part / whole`, or infinity when the whole measured nothing (a miss, never a division by
/// zero that passes).
pub(super) fn ratio(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole
    } else {
        f64::INFINITY
    }
}

/// Every measured figure that has a target, beside it. Call again once the optional series
/// (checkpoints, rg) are in the report.
pub fn targets(r: &Report) -> Vec<Target> {
    let m = &r.marginal;
    let s = &r.startup;
    let mut out = vec![
        target(
            "marginal cost per read-only tool call".into(),
            m.per_call_wall_ms,
            1.0,
            "ms",
        ),
        target(
            format!(
                "client time per turn, {} parallel read-only calls",
                m.reads_high
            ),
            m.client_turn_high_ms.median,
            5.0,
            "ms",
        ),
        target(
            "start to first request, hello session".into(),
            s.hello_first_request_ms.median,
            5.0,
            "ms",
        ),
        target(
            "hello session wall time".into(),
            s.hello_wall_ms.median,
            15.0,
            "ms",
        ),
        target(
            "tools session wall time, checkpoints on / off".into(),
            s.known_wall_ms
                .ratio_to(&s.known_wall_without_checkpoints_ms),
            1.05,
            "x",
        ),
        target(
            "checkpoint cost per tool call".into(),
            s.checkpoint_per_call_ms,
            2.0,
            "ms",
        ),
        target(
            "peak RSS, tools session (ouro -p)".into(),
            s.peak_rss_mb.median,
            16.0,
            "MiB",
        ),
    ];
    if let Some(sandbox) = &r.sandbox {
        out.push(target(
            "sandbox cost per Bash call".into(),
            sandbox.added_ms,
            1.0,
            "ms",
        ));
        if let Some(masked) = sandbox.masked_added_ms {
            out.push(target(
                "sandbox cost per Bash call, with file deny rules".into(),
                masked,
                2.0,
                "ms",
            ));
        }
    }
    if let Some(c) = &r.checkpoints {
        out.push(target(
            format!("first snapshot of a {}-file project", c.files),
            c.first_ms,
            300.0,
            "ms",
        ));
    }
    if let Some(eval) = &r.eval {
        out.push(target(
            "eval overhead per trial beyond the agent".into(),
            eval.overhead_per_trial_ms,
            super::eval::OVERHEAD_LIMIT_MS,
            "ms",
        ));
    }
    if let Some(recall) = &r.recall {
        out.push(target(
            format!(
                "Recall p99 at {} nodes and {} edges",
                recall.nodes, recall.edges
            ),
            recall.p99_ms,
            super::recall::P99_LIMIT_MS,
            "ms",
        ));
    }
    if let Some(relay) = &r.relay {
        out.push(target(
            "daemon relay overhead per keystroke, p99".into(),
            relay.overhead_p99_ms,
            1.0,
            "ms",
        ));
        out.push(at_least(
            "daemon relay output rate / direct PTY's".into(),
            ratio(relay.relay_mb_per_sec, relay.direct_mb_per_sec),
            0.7,
            "x",
        ));
    }
    if let Some(c) = &r.cats {
        out.push(target(
            format!("cats of {} files / find + cat", c.files),
            ratio(c.cats_ms, c.floor_ms),
            1.5,
            "x",
        ));
        out.push(target(
            "dogs of that bundle / find + cat".into(),
            ratio(c.dogs_ms, c.floor_ms),
            4.0,
            "x",
        ));
    }
    if let Some(zone) = &r.relay_zone {
        out.push(target(
            format!(
                "zone {} relay overhead per keystroke over plain ssh, p99",
                zone.zone
            ),
            zone.overhead_p99_ms,
            super::relay::ZONE_OVERHEAD_P99_LIMIT_MS,
            "ms",
        ));
    }
    #[cfg(feature = "serve")]
    if let Some(serve) = &r.serve {
        use super::serve::{LOAD_RSS_LIMIT_MB, SLOW_RSS_LIMIT_MB, TURNS_50_GOAL};
        out.push(target(
            "serve first chat:delta of a follow-up turn / hello session".into(),
            ratio(serve.first_delta_ms.median, s.hello_wall_ms.median),
            0.5,
            "x",
        ));
        if let Some((_, rate)) = serve.turns_per_sec.iter().find(|(n, _)| *n == 50) {
            out.push(at_least(
                "serve turns/s, 50 sessions at once".into(),
                *rate,
                TURNS_50_GOAL,
                "/s",
            ));
        }
        out.push(target(
            "serve RSS after 1000 turns over 200 sessions".into(),
            serve.load_rss_mb,
            LOAD_RSS_LIMIT_MB,
            "MiB",
        ));
        out.push(target(
            "serve RSS with 20 clients that never read 2 MB answers".into(),
            serve.slow_rss_mb,
            SLOW_RSS_LIMIT_MB,
            "MiB",
        ));
    }
    if let Some(ratio) = r.compare_rg.as_ref().and_then(|c| c.overall_ratio) {
        out.push(target("Grep time / rg time".into(), ratio, 1.3, "x"));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::bench::run::ToolSample;
    use crate::event::PhaseTimings;

    fn run(wall_ms: u64, client_ms: &[u64], tools: &[(&str, u64)]) -> RunSample {
        RunSample {
            wall: Duration::from_millis(wall_ms),
            calls: tools.len(),
            requests: client_ms.len() + 1,
            client_turns: client_ms
                .iter()
                .map(|&m| Duration::from_millis(m))
                .collect(),
            responses: vec![Duration::from_millis(1); client_ms.len() + 1],
            last_request_bytes: 0,
            tools: tools
                .iter()
                .map(|&(name, exec_ms)| ToolSample {
                    name: name.into(),
                    timings: PhaseTimings {
                        execution: Duration::from_millis(exec_ms),
                        ..PhaseTimings::default()
                    },
                    elapsed: Duration::from_millis(exec_ms + 1),
                })
                .collect(),
            usage: crate::api::types::Usage::default(),
            cost_usd: 0.0,
        }
    }

    fn config() -> Config {
        Config {
            version: "0",
            turns: 10,
            calls_per_turn: 5,
            mix: "read".into(),
            files: 10,
            runs: 2,
            warmup: 0,
            seed: 1,
        }
    }

    #[test]
    fn figures_marginal_cost_and_targets() {
        let runs = [
            run(100, &[2, 4, 6], &[("Read", 1), ("Grep", 3)]),
            run(120, &[3, 5, 7], &[("Read", 2)]),
        ];
        let low = [run(50, &[1], &[]), run(52, &[1], &[])];
        let high = [run(90, &[3], &[]), run(94, &[5], &[])];
        let marginal = MarginalRuns {
            low: &low,
            high: &high,
            reads_low: 1,
            reads_high: 5,
            turns: 10,
        };
        let start = StartSample {
            first_request: Duration::from_millis(12),
            wall: Duration::from_millis(100),
            peak_rss_kb: 10 * 1024,
            floor_kb: 2048,
        };
        let bare = StartSample {
            wall: Duration::from_millis(90),
            ..start
        };
        let hello = StartSample {
            first_request: Duration::from_millis(4),
            wall: Duration::from_millis(9),
            ..start
        };
        // A new project's first snapshot: 150 ms against 90.
        let first = StartSample {
            wall: Duration::from_millis(150),
            ..start
        };
        let processes = Processes {
            tools: &[first],
            tools_without_checkpoints: &[bare],
            known: &[start],
            known_without_checkpoints: &[bare],
            hello: &[hello],
            calls: 20,
        };
        let r = build(config(), &runs, marginal, processes, None);
        assert_eq!(
            (r.wall_ms.median, r.wall_ms.min, r.wall_ms.max),
            (110.0, 100.0, 120.0)
        );
        assert_eq!(r.client_turn_ms.median, 4.5);
        assert_eq!(r.client_turn_all_ms.count, 6);
        // (92 - 51) ms over 10 turns x 4 extra calls; (4 - 1) ms over 4 extra calls per turn.
        assert!((r.marginal.per_call_wall_ms - 1.025).abs() < 1e-9);
        assert!((r.marginal.per_call_client_ms - 0.75).abs() < 1e-9);
        let tools: Vec<(&str, usize)> = r
            .phases
            .iter()
            .map(|p| (p.tool.as_str(), p.total_ms.count))
            .collect();
        assert_eq!(tools, [("Grep", 1), ("Read", 2)]);
        assert_eq!(r.phases[1].execution_ms.max, 2.0);
        // 10 ms more over 20 calls: 0.5 ms a call, but 100 / 90 is over 5 %.
        assert_eq!(r.startup.checkpoint_per_call_ms, 0.5);
        let met: Vec<(&str, bool)> = r.targets.iter().map(|t| (t.name.as_str(), t.met)).collect();
        assert_eq!(
            met,
            [
                ("marginal cost per read-only tool call", false),
                ("client time per turn, 5 parallel read-only calls", true),
                ("start to first request, hello session", true),
                ("hello session wall time", true),
                ("tools session wall time, checkpoints on / off", false),
                ("checkpoint cost per tool call", true),
                ("peak RSS, tools session (ouro -p)", true),
            ]
        );
        assert_eq!(r.startup.floor_mb, 2.0);
        #[cfg(feature = "serve")]
        {
            let served = |rate| {
                let mut r = r.clone();
                r.serve = Some(crate::bench::serve::ServeCost {
                    first_delta_ms: Spread::of(&[2.0]).unwrap(),
                    turns_per_sec: vec![(1, 100.0), (10, 400.0), (50, rate)],
                    peak_rss_mb: 100.0,
                    load_rss_mb: 30.0,
                    slow_rss_mb: 70.0,
                    slow_gone_rss_mb: 30.0,
                });
                let t = targets(&r);
                let fifty = t
                    .iter()
                    .find(|t| t.name == "serve turns/s, 50 sessions at once");
                fifty.map(|t| t.met)
            };
            assert_eq!(served(300.0), Some(false));
            assert_eq!(served(350.0), Some(true));
        }
        let table = crate::bench::table::render(&r);
        assert!(table.contains("[MISS] marginal cost per read-only tool call"));
        assert!(table.contains("[ ok ] peak RSS, tools session (ouro -p)"));
        assert!(table.contains("checkpoints add 0.500 ms per tool call"));
        assert!(table.contains("the first snapshot makes the session 1.67x as long"));
    }

    #[test]
    fn the_grep_target_appears_only_with_a_ratio() {
        let runs = [run(10, &[1], &[])];
        let marginal = || MarginalRuns {
            low: &runs,
            high: &runs,
            reads_low: 1,
            reads_high: 2,
            turns: 1,
        };
        let rg = RgReport {
            rg_version: Some("ripgrep 14".into()),
            cases: Vec::new(),
            overall_ratio: Some(1.5),
        };
        let none = || Processes {
            tools: &[],
            tools_without_checkpoints: &[],
            known: &[],
            known_without_checkpoints: &[],
            hello: &[],
            calls: 0,
        };
        let with = build(config(), &runs, marginal(), none(), Some(rg));
        let last = with.targets.last().unwrap();
        assert_eq!((last.measured, last.met), (1.5, false));
        let missing = RgReport {
            rg_version: None,
            cases: Vec::new(),
            overall_ratio: None,
        };
        let without = build(config(), &runs, marginal(), none(), Some(missing));
        assert_eq!(without.targets.len(), 7);
        assert!(crate::bench::table::render(&without).contains("rg is not on PATH"));
    }
}
