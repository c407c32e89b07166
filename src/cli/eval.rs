//! The arguments of `ouro eval …`.

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalEnv {
    Host,
    Docker,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalBackend {
    Local,
    Ray,
}

#[derive(Debug, Clone, Subcommand)]
pub enum EvalAction {
    /// Run a suite's tasks as trials and judge them; writes DIR/results.json.
    Run {
        /// A suite (a directory of task directories) or one task directory.
        suite: PathBuf,
        /// The brain every trial runs on (`ouro@…`, `claude@…`).
        #[arg(long, value_name = "SLUG")]
        brain: String,
        /// Run as this agent definition (its prompt, tools and rules).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// Trials per task (k of pass@k).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
        trials: u32,
        /// At most this many trials at once (fewer while the machine is busy).
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        /// Run shard I of N (a deterministic share of the trials); `ouro eval merge` joins them.
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
        /// Where results, artifacts and logs go (default: eval-results/<time>).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Judge by the tests alone (no model judge).
        #[arg(long)]
        no_judge: bool,
        /// The judge's model.
        #[arg(long, value_name = "MODEL", default_value = "sonnet")]
        judge_model: String,
        /// Where a Harbor task's trials run: `docker` (in its image, built from its
        /// Dockerfile) or `host` (its Dockerfile unused; a task written for its image is an
        /// infra_error). Default: docker when the suite has images and Docker answers, else
        /// host with a warning. Native tasks always run here.
        #[arg(long, value_enum)]
        env: Option<EvalEnv>,
        /// Where the trials run: here, or as one job per shard on a Ray cluster.
        #[arg(long, value_enum, default_value_t = EvalBackend::Local)]
        backend: EvalBackend,
        /// The Ray dashboard (with --backend ray; default: $RAY_ADDRESS, else
        /// http://127.0.0.1:8265).
        #[arg(long, value_name = "URL")]
        ray_address: Option<String>,
        /// The ouro binary shipped to the Ray jobs (default: this one; give a Linux build when
        /// this machine is not the cluster's kind).
        #[arg(long, value_name = "PATH")]
        ray_binary: Option<PathBuf>,
        /// The trials' permission mode (default acceptEdits; calls it would ask about are
        /// allowed inside the trial's tree).
        #[arg(long, value_name = "MODE")]
        permission_mode: Option<String>,
        /// Run the suite twice: memory's reflect step on every trial of the first pass, the
        /// second pass's agents able to Recall it; reports the change in pass rate and cost.
        #[arg(long)]
        learn: bool,
    },
    /// Merge the results of shards into one run.
    Merge {
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Show a run's results (or write them as one HTML page).
    Report {
        dir: PathBuf,
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// Compare two runs task by task.
    Compare { a: PathBuf, b: PathBuf },
    /// Export a run's changes in another harness's format.
    Export {
        dir: PathBuf,
        /// SWE-bench's predictions JSONL (`instance_id`, `model_name_or_path`, `model_patch`).
        #[arg(long, required = true)]
        swebench: bool,
        /// Write here instead of standard output.
        #[arg(long, short = 'o', value_name = "FILE")]
        out: Option<PathBuf>,
    },
}
