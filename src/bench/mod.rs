//! `ouro bench`: tool throughput of the real engine, end to end through HTTP + SSE against the
//! built-in mock API, on a generated project, with a fixed seed so anyone can reproduce it.
//!
//! Four series are measured, each after warm-up runs: the scenario as asked (wall time, calls
//! per second, client time per turn, per-tool pipeline phases); the same turns with one and
//! with many Read calls (the marginal cost of a read-only call); `ouro -p` as a separate
//! process (start to first request, peak RSS); and with `--compare-rg`, Grep against `rg`.

use std::future::Future;
use std::io;

pub mod cats;
pub mod checkpoints;
pub mod eval;
pub mod fixture;
mod host;
pub mod long;
pub mod mcp;
pub(crate) mod measure;
pub mod memory;
pub mod recall;
pub mod relay;
pub mod replay;
pub mod report;
pub mod rg;
pub mod run;
pub mod scenario;
#[cfg(feature = "serve")]
pub mod serve;
pub mod startup;
mod table;

use fixture::{Fixture, WorkDir};
use host::MockHost;
use report::{Config, MarginalRuns};
use scenario::{Mix, Plan, ToolKind};
use startup::Project;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    #[error("{0}")]
    Failed(String),
    /// The scenario did not run as scripted, so its timings would mean nothing.
    #[error(
        "the benchmark scenario did not run as scripted ({0}); its timings would be meaningless. Check that no settings or hooks in OURO_HOME deny or change tool calls, then report it if it persists"
    )]
    Invalid(String),
}

impl BenchError {
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        BenchError::Io {
            context: context.into(),
            source,
        }
    }
}

/// `ouro bench` flags.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Model turns with tool calls (a final text turn follows).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub turns: u32,
    /// Tool calls in each of those turns.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) calls_per_turn: u32,
    /// Tools the calls cycle through: read, grep, glob, edit, bash (comma separated).
    #[arg(long, default_value = "read,grep,glob,edit,bash")]
    pub mix: Mix,
    /// Files in the generated project tree.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(10..=200_000))]
    pub files: u32,
    /// Measured runs of each series (median, min and max are reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Unmeasured runs before each series.
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// Seed of the generated tree and scenario.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Print the results as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also time the Grep tool against ripgrep (`rg`) on the same tree and patterns.
    #[arg(long)]
    pub compare_rg: bool,
    /// Also time an MCP tool call over stdio, through ouro and bare, against this server
    /// command (it needs an `echo` tool taking `message`, as `mcp-server-everything` has).
    #[arg(long, value_name = "COMMAND", num_args = 0..=1, default_missing_value = "mcp-server-everything")]
    pub(crate) compare_mcp: Option<String>,
    /// Also time checkpoints on a generated project of this many files (default 10000).
    #[arg(long, value_name = "FILES", num_args = 0..=1, default_missing_value = "10000")]
    pub checkpoints: Option<u32>,
    /// Also drive `ouro serve` over HTTP: time to the first `chat:delta`, turns per second
    /// with 1, 10 and 50 sessions at once, the server's peak RSS.
    #[cfg(feature = "serve")]
    #[arg(long)]
    pub serve: bool,
    /// Also time `ouro cats` on a 10,000-file, 100 MB tree against find + cat, and `ouro dogs`
    /// applying that bundle.
    #[arg(long)]
    pub cats: bool,
    /// Also time what `ouro eval run` adds around the agent: start to the first trial's first
    /// request, and overhead per trial beyond the agent's own time (8 small tasks).
    #[arg(long)]
    pub eval: bool,
    /// Also time Recall on a memory of NODES nodes (default 100,000) and three edges each
    /// (p50/p99), by keywords and with a vector per node, and what memory's reflect step adds
    /// after a print-mode answer.
    #[arg(long, value_name = "NODES", num_args = 0..=1, default_missing_value = "100000",
          value_parser = clap::value_parser!(u32).range(1000..=10_000_000))]
    pub recall: Option<u32>,
    /// Also measure peak RSS when one answer is a single 50 MB text delta, a tool result is
    /// 50 MB, and a Bash command prints 1 GB.
    #[arg(long)]
    pub memory: bool,
    /// Also time a talk through the daemon's relay against a direct PTY: keystroke round trip
    /// (p50/p99), output throughput, and the daemon's RSS with 10 idle clones.
    #[arg(long)]
    pub relay: bool,
    /// With --relay: also time keystrokes through this zone (`ouro zone list`) beside a plain
    /// `ssh -t` to its host, with a scratch daemon there that is removed afterwards.
    #[arg(long, value_name = "NAME", requires = "relay")]
    pub zone: Option<String>,
    /// Also measure the client's time per turn at turn 10 and at turn N of one N-turn
    /// session whose history only grows (e.g. 1000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(20..=5000))]
    pub(crate) history_turns: Option<u32>,
    /// Also time `ouro -p --resume` of a generated transcript of this many MB (with and
    /// without compactions in it), with its peak memory (e.g. 100).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=2000))]
    pub(crate) resume_mb: Option<u32>,
    /// Measure nothing: write the tools session's project (DIR/project) and scripted API output
    /// (DIR/scenario.json) and print the commands that replay it (as JSON with --json).
    #[arg(long, value_name = "DIR")]
    pub(crate) write_scenario: Option<std::path::PathBuf>,
    /// Exit non-zero when a measured figure misses its target (for runs by hand: timings on
    /// a shared machine are noisy).
    #[arg(long)]
    pub strict: bool,
    /// Internal: run `ouro <flags after -->` and report its peak RSS (see bench::startup).
    #[arg(long, hide = true)]
    pub probe: bool,
    #[arg(last = true, hide = true)]
    pub(crate) probe_flags: Vec<String>,
}

/// Runs the benchmark and prints the report on stdout (progress goes to stderr). Returns
/// whether it completed.
pub async fn run(args: &BenchArgs) -> Result<bool, BenchError> {
    if args.probe {
        return startup::probe(&args.probe_flags);
    }
    let files = args.files as usize;
    let plan = Plan {
        turns: args.turns as usize,
        calls_per_turn: args.calls_per_turn as usize,
        mix: args.mix.clone(),
        seed: args.seed,
    };
    if let Some(dir) = &args.write_scenario {
        let written = replay::write(dir, &plan, files)?;
        if args.json {
            let line = serde_json::to_string(&written)
                .map_err(|e| BenchError::Failed(format!("could not encode the paths: {e}")))?;
            println!("{line}");
        } else {
            print!("{}", replay::instructions(&written));
        }
        return Ok(true);
    }
    if let Some(home) = crate::settings::ouro_home()
        && home.join("settings.json").exists()
    {
        eprintln!(
            "ouro bench: note: {} applies to the in-process runs; hooks in it are timed too",
            home.join("settings.json").display()
        );
    }
    let host = MockHost::new()?;
    let (warmup, runs) = (args.warmup as usize, args.runs as usize);

    progress("the scenario, in process");
    let main = series(warmup, runs, || run::run_once(&host, &plan, files)).await?;

    let reads_high = plan.calls_per_turn.max(2);
    let read_plan = |calls| Plan {
        calls_per_turn: calls,
        mix: Mix(vec![ToolKind::Read]),
        ..plan.clone()
    };
    progress("the marginal cost of a read-only call");
    let (low_plan, high_plan) = (read_plan(1), read_plan(reads_high));
    let low = series(warmup, runs, || run::run_once(&host, &low_plan, files)).await?;
    let high = series(warmup, runs, || run::run_once(&host, &high_plan, files)).await?;

    // With and without checkpoints in turns, each pair in the other order from the last, so
    // that the machine drifting (a shared VM's neighbours, its clock) weighs on both alike.
    let print_mode = |project| {
        let (host, plan) = (&host, &plan);
        let mut turn = 0;
        series(warmup, runs, move || {
            turn += 1;
            let first = turn % 2 == 0;
            async move {
                let a = startup::measure(host, plan, files, project, first).await?;
                let b = startup::measure(host, plan, files, project, !first).await?;
                Ok(if first { (a, b) } else { (b, a) })
            }
        })
    };
    progress("`ouro -p` in its own process, with checkpoints and without, in a new project");
    let (starts, bare): (Vec<_>, Vec<_>) = print_mode(Project::New).await?.into_iter().unzip();
    progress("`ouro -p` with checkpoints and without, in a project ouro knows");
    let (known, known_bare): (Vec<_>, Vec<_>) =
        print_mode(Project::Known).await?.into_iter().unzip();
    progress("the hello session (one answer, no tools, in a project ouro knows)");
    let hello_plan = plan.hello();
    let place = startup::Place::new(files, plan.seed)?;
    let hello = series(warmup.max(1), runs, || {
        startup::measure_in(&host, &hello_plan, &place, true)
    })
    .await?;

    let compare_rg = if args.compare_rg {
        progress("Grep against rg");
        let dir = WorkDir::new("rg")
            .map_err(|e| BenchError::io("could not create the fixture directory", e))?;
        Fixture::generate(dir.path(), files, plan.seed)
            .map_err(|e| BenchError::io("could not write the fixture tree", e))?;
        Some(rg::compare(dir.path(), runs.max(5)).await?)
    } else {
        None
    };

    let config = Config {
        version: env!("CARGO_PKG_VERSION"),
        turns: plan.turns,
        calls_per_turn: plan.calls_per_turn,
        mix: plan.mix.to_string(),
        files,
        runs,
        warmup,
        seed: plan.seed,
    };
    let marginal = MarginalRuns {
        low: &low,
        high: &high,
        reads_low: 1,
        reads_high,
        turns: plan.turns,
    };
    progress("what the sandbox adds to a Bash call");
    let processes = report::Processes {
        tools: &starts,
        tools_without_checkpoints: &bare,
        known: &known,
        known_without_checkpoints: &known_bare,
        hello: &hello,
        calls: main.first().map_or(0, |r| r.calls),
    };
    let mut report = report::build(config, &main, marginal, processes, compare_rg);
    report.sandbox = sandbox_cost(runs).await;
    if let Some(command) = &args.compare_mcp {
        progress("an MCP tool call over stdio");
        report.mcp = Some(mcp::compare(command, MCP_CALLS.max(runs)).await?);
    }
    if let Some(files) = args.checkpoints {
        progress(&format!("checkpoints of a {files}-file project"));
        report.checkpoints =
            Some(checkpoints::measure(files as usize, runs.max(11), plan.seed).await?);
    }
    #[cfg(feature = "serve")]
    if args.serve {
        progress("ouro serve over HTTP");
        report.serve = Some(serve::measure(runs).await?);
    }
    if args.cats {
        progress("cats and dogs on a 100 MB tree");
        report.cats = Some(cats::measure()?);
    }
    if args.eval {
        progress("what ouro eval adds around the agent");
        report.eval = Some(eval::measure(&host).await?);
    }
    if let Some(nodes) = args.recall {
        progress(&format!(
            "Recall on a {nodes}-node memory, by keywords and by meaning, and reflect after an answer"
        ));
        report.recall = Some(recall::measure(&host, nodes as usize).await?);
    }
    if args.memory {
        progress("peak memory with a 50 MB delta, a 50 MB tool result and 1 GB of Bash output");
        report.memory = Some(memory::measure(&host).await?);
    }
    if args.relay {
        progress("a talk through the daemon's relay");
        report.relay = Some(relay::measure().await?);
        if let Some(zone) = &args.zone {
            progress(&format!("a talk through the zone {zone}, and plain ssh"));
            report.relay_zone = Some(relay::measure_zone(zone).await?);
        }
    }
    progress("what 10- and 50-turn sessions are billed");
    for turns in COST_SESSION_TURNS {
        let cost_plan = Plan {
            turns,
            calls_per_turn: 1,
            ..plan.clone()
        };
        let sample = run::run_once(&host, &cost_plan, files).await?;
        report.cost.push(report::SessionCost::new(
            turns,
            crate::api::models::default_model(),
            &sample.usage,
            sample.cost_usd,
        ));
    }
    if let Some(turns) = args.history_turns {
        progress(&format!("client time per turn over {turns} turns"));
        report.history = Some(long::history_cost(&host, turns as usize, files, plan.seed).await?);
    }
    if let Some(mb) = args.resume_mb {
        progress(&format!("resuming a {mb} MB transcript"));
        report.resume = Some(long::resume_cost(&host, mb as usize).await?);
    }
    report.targets = report::targets(&report);
    let met = report.targets.iter().all(|t| t.met);
    if args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| BenchError::Failed(format!("could not encode the report: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", table::render(&report));
    }
    if args.strict && !met {
        eprintln!("ouro bench: a target was missed (--strict)");
        return Ok(false);
    }
    Ok(true)
}

/// The session lengths the cost series bills.
const COST_SESSION_TURNS: [usize; 2] = [10, 50];

/// Timed MCP calls each way.
const MCP_CALLS: usize = 200;

/// Spawns of `true` per figure.
const SANDBOX_SPAWNS: usize = 41;

async fn sandbox_cost(runs: usize) -> Option<report::SandboxCost> {
    use crate::permissions::{Confinement, FileDenials};
    use crate::tools::bash::SandboxConfig;
    let tmp = std::env::temp_dir();
    let plan = SandboxConfig::default().plan(
        Confinement::Approved,
        &tmp,
        "",
        &tmp.join("ouro-bench-cwd"),
        &FileDenials::default(),
    );
    let spawns = SANDBOX_SPAWNS.max(runs);
    let policy = plan.policy?;
    let (plain, confined) = crate::sys::process::spawn_cost(&policy, spawns)
        .await
        .ok()??;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    Some(report::SandboxCost {
        spawns,
        plain_ms: ms(plain),
        confined_ms: ms(confined),
        added_ms: ms(confined.saturating_sub(plain)),
        masked_added_ms: masked_cost(policy, spawns)
            .await
            .map(|(plain, masked)| ms(masked.saturating_sub(plain))),
    })
}

/// The same spawn with two deny rules to enforce (a hidden directory, a read-only file), as
/// masks in a mount namespace; `None` when the kernel cannot mask.
async fn masked_cost(
    mut policy: crate::sys::sandbox::Policy,
    spawns: usize,
) -> Option<(std::time::Duration, std::time::Duration)> {
    crate::sys::masks::support().ok()?;
    let dir = WorkDir::new("masks").ok()?;
    let (hidden, frozen) = (dir.path().join("secrets"), dir.path().join("prod.yml"));
    std::fs::create_dir(&hidden).ok()?;
    std::fs::write(&frozen, "x").ok()?;
    policy.masks.hide = vec![hidden];
    policy.masks.freeze = vec![frozen];
    crate::sys::process::spawn_cost(&policy, spawns)
        .await
        .ok()
        .flatten()
}

fn progress(what: &str) {
    eprintln!("ouro bench: measuring {what}...");
}

/// `warmup` unmeasured runs, then `runs` measured ones.
async fn series<T, F, Fut>(warmup: usize, runs: usize, mut once: F) -> Result<Vec<T>, BenchError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, BenchError>>,
{
    for _ in 0..warmup {
        once().await?;
    }
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        out.push(once().await?);
    }
    Ok(out)
}
