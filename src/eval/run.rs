//! `ouro eval run`: the trials of a suite (or of one shard of it), as many at once as the
//! machine allows up to `--concurrency`, an `infra_error` retried once, the judge calibrated
//! and asked, and `results.json` written with everything a report needs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::EvalError;
use super::judge::{Judge, NoVerdict};
use super::results::{Calibration, Results, Status, Trial};
use super::task::{Broken, Context, Place, Task};
use super::trial::{self, Setup};
use crate::agents::spec::CommandRules;
use crate::brain::TurnOptions;

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub suite: PathBuf,
    pub brain: String,
    pub agent: Option<String>,
    pub trials: u32,
    pub concurrency: usize,
    /// `(i, n)`: this is shard i of n (1-based).
    pub shard: Option<(u32, u32)>,
    pub out: PathBuf,
    pub judge: bool,
    pub judge_model: String,
    pub permission_mode: Option<String>,
    /// `Some(address)`: run the shards as jobs on the Ray cluster whose dashboard is there.
    pub ray: Option<String>,
    /// The binary shipped to Ray jobs; `None`: this one.
    pub ray_binary: Option<PathBuf>,
    /// Run the suite twice, reflecting on the first pass into a memory the second reads.
    pub learn: bool,
    /// A memory file the trials' Recall reads (the second pass of `--learn`).
    pub memory_file: Option<PathBuf>,
    pub env: Env,
}

/// Where a Harbor task's trials run (native tasks carry no image: always here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Env {
    /// In its image when the suite has images to build and Docker answers; else here, saying so.
    #[default]
    Auto,
    Host,
    Docker,
}

impl Env {
    /// Whether the run builds and uses the tasks' images.
    pub(super) async fn docker(self, suite: &Path) -> Result<bool, EvalError> {
        let docker = super::docker::Docker::from_env();
        match self {
            Env::Host => Ok(false),
            Env::Docker => docker.check().await.map(|_| true).map_err(|why| {
                EvalError::Usage(format!(
                    "{why}: start it, or run with --env host (OURO_DOCKER names another client, such as podman)"
                ))
            }),
            Env::Auto if !super::suite::has_images(suite) => Ok(false),
            Env::Auto => match docker.check().await {
                Ok(()) => Ok(true),
                Err(why) => {
                    eprintln!(
                        "ouro eval: warning: {why}, so the Harbor tasks run on the host and those written for their image are infra_error (start Docker, or set OURO_DOCKER to another client such as podman)"
                    );
                    Ok(false)
                }
            },
        }
    }
}

/// One trial to run: task index and trial number.
type Planned = (usize, u32);

/// The trials of a whole run, in order, and the share of them shard `(i, n)` runs: every
/// n-th, starting at the i-th, so shards are about the same size and together are the run.
pub fn plan(tasks: usize, trials: u32, shard: Option<(u32, u32)>) -> Vec<Planned> {
    let all = (0..tasks).flat_map(|t| (1..=trials).map(move |n| (t, n)));
    match shard {
        None => all.collect(),
        Some((i, n)) => all
            .enumerate()
            .filter(|(at, _)| (*at as u64) % u64::from(n) == u64::from(i - 1))
            .map(|(_, p)| p)
            .collect(),
    }
}

/// Runs the trials of `options` as the agent `(turn options, command patterns)`.
pub async fn run(
    options: RunOptions,
    (setup_options, patterns): (TurnOptions, CommandRules),
) -> Result<Results, EvalError> {
    let docker = options.env.docker(&options.suite).await?;
    let mut loaded =
        super::suite::load_suite(&options.suite, docker).map_err(|source| EvalError::Io {
            action: "read the suite",
            path: options.suite.clone(),
            source,
        })?;
    if loaded.is_empty() {
        return Err(EvalError::Usage(format!(
            "{} holds no task (a task is a directory with a task.md)",
            options.suite.display()
        )));
    }
    // Two tasks by one id would share their trials' numbers, files and scores.
    let mut ids: Vec<&str> = loaded
        .iter()
        .map(|t| match t {
            Ok(task) => task.id.as_str(),
            Err(broken) => broken.id.as_str(),
        })
        .collect();
    ids.sort_unstable();
    if let Some(pair) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(EvalError::Usage(format!(
            "two tasks of {} have the id {:?}; give each task an id of its own",
            options.suite.display(),
            pair[0]
        )));
    }
    std::fs::create_dir_all(&options.out).map_err(|source| EvalError::Io {
        action: "create",
        path: options.out.clone(),
        source,
    })?;
    let out = options.out.canonicalize().unwrap_or(options.out.clone());
    let suite = options
        .suite
        .canonicalize()
        .unwrap_or(options.suite.clone());
    let setup = Arc::new(Setup {
        brain: options.brain.clone(),
        options: setup_options,
        patterns,
        permission_mode: options.permission_mode.clone(),
        out: out.clone(),
        hidden: vec![suite.clone(), out.clone()],
        memory_file: options.memory_file.clone(),
    });
    let judge = if options.judge {
        Some(Arc::new(Judge::new(judge_client()?, &options.judge_model)))
    } else {
        None
    };
    let calibration = match &judge {
        Some(judge) => Some(calibrate(judge, &loaded).await),
        None => None,
    };
    let planned = plan(loaded.len(), options.trials, options.shard);
    // Kept until the trials end: the images' starting trees and the copy of ouro they mount.
    let _images = build_images(&mut loaded, &planned, options.memory_file.is_some()).await?;
    let loaded = Arc::new(loaded);
    let progress = Arc::new(super::progress::Progress::new(planned.len()));
    let slots = Arc::new(tokio::sync::Semaphore::new(options.concurrency.max(1)));
    let mut running = tokio::task::JoinSet::new();
    for (at, n) in planned {
        let permit = super::load::admit(&slots, running.len()).await;
        let (loaded, setup, judge, progress) = (
            loaded.clone(),
            setup.clone(),
            judge.clone(),
            progress.clone(),
        );
        running.spawn(async move {
            let trial = match &loaded[at] {
                Ok(task) => one(task, n, &setup, judge.as_deref()).await,
                Err(broken) => Trial::infra(&broken.id, n, &broken.reason),
            };
            progress.done(&trial);
            drop(permit);
            trial
        });
    }
    let mut trials = Vec::new();
    while let Some(joined) = running.join_next().await {
        match joined {
            Ok(trial) => trials.push(trial),
            Err(e) => return Err(EvalError::Usage(format!("a trial panicked: {e}"))),
        }
    }
    progress.finish();
    let mut results = Results::new(
        suite.display().to_string(),
        options.brain.clone(),
        options.agent.clone(),
        options.trials,
        trials,
        calibration,
    );
    results.shard = options.shard.map(|(i, n)| format!("{i}/{n}"));
    super::write_results(&out, &results)?;
    Ok(results)
}

/// Builds the images of the tasks this shard's trials run in one (none: nothing is made), in
/// a folder that holds their starting trees and the one copy of this ouro their containers
/// mount (the binary here may be rebuilt while the run goes on).
async fn build_images(
    loaded: &mut [Result<Task, Broken>],
    planned: &[Planned],
    learned: bool,
) -> Result<Option<tempfile::TempDir>, EvalError> {
    let mut used: Vec<usize> = planned
        .iter()
        .map(|(at, _)| *at)
        .filter(|at| matches!(&loaded[*at], Ok(task) if matches!(task.place, Place::Unbuilt(_))))
        .collect();
    used.dedup();
    if used.is_empty() {
        return Ok(None);
    }
    if learned {
        eprintln!(
            "ouro eval: warning: the trials that run in their task's image cannot read the first pass's memory (it is not carried into containers)"
        );
    }
    let images = tempfile::Builder::new()
        .prefix("ouro-eval-images-")
        .tempdir()
        .map_err(|source| EvalError::Io {
            action: "make a folder in",
            path: std::env::temp_dir(),
            source,
        })?;
    let ouro = images.path().join("ouro");
    let copied = std::env::current_exe().and_then(|exe| std::fs::copy(exe, &ouro));
    for at in used {
        match &copied {
            Ok(_) => build(&mut loaded[at], &images.path().join(at.to_string()), &ouro).await,
            Err(e) => unbuilt(
                &mut loaded[at],
                format!("cannot copy this ouro for its containers: {e}"),
            ),
        }
    }
    Ok(Some(images))
}

/// Builds the image of a task that runs in one, and makes its starting tree the image's
/// working directory; a build that fails is the task's `infra_error`.
async fn build(task: &mut Result<Task, Broken>, scratch: &Path, ouro: &Path) {
    let Ok(ready) = task else { return };
    let Place::Unbuilt(context) = &ready.place else {
        return;
    };
    eprintln!("ouro eval: building the image of {}", ready.id);
    let tree = scratch.join("tree");
    let built = match std::fs::create_dir_all(scratch) {
        Ok(()) => {
            super::docker::Docker::from_env()
                .prepare(context, scratch, &tree, ouro)
                .await
        }
        Err(e) => Err(format!("cannot make {}: {e}", scratch.display())),
    };
    match built {
        Ok(image) => {
            ready.place = Place::Image(image);
            ready.context = Context::Image(tree);
        }
        Err(reason) => unbuilt(task, reason),
    }
}

/// A task whose image could not be had: its trials are `infra_error`, saying why.
fn unbuilt(task: &mut Result<Task, Broken>, reason: String) {
    if let Ok(ready) = task
        && matches!(ready.place, Place::Unbuilt(_))
    {
        *task = Err(Broken {
            id: ready.id.clone(),
            reason,
        });
    }
}

fn judge_client() -> Result<crate::api::client::Client, EvalError> {
    let endpoint = crate::app::Endpoint::from_env().map_err(|_| {
        EvalError::Usage(
            "the judge needs an API key: set ANTHROPIC_API_KEY, or pass --no-judge to judge by the tests alone".into(),
        )
    })?;
    endpoint
        .client()
        .map_err(|e| EvalError::Usage(format!("the judge's API client: {e}")))
}

/// A trial, run again once if the first try was an `infra_error`; then judged.
async fn one(task: &Task, n: u32, setup: &Setup, judge: Option<&Judge>) -> Trial {
    let mut ran = trial::run(task, n, setup).await;
    if ran.trial.status == Status::InfraError {
        tokio::time::sleep(Duration::from_secs(1)).await;
        ran = trial::run(task, n, setup).await;
    }
    if let Some(judge) = judge
        && ran.trial.status.scored()
        && task.expected.is_some()
    {
        match judge.judge(task, ran.change.as_deref()).await {
            Ok(judged) => ran.trial.judge = Some(judged),
            Err(NoVerdict(why)) => ran.trial.judge_error = Some(why),
        }
    }
    ran.trial
}

/// Calibrates the judge on the first task (by id) that has a reference change: the same task
/// in every shard, so merged shards agree.
async fn calibrate(judge: &Judge, tasks: &[Result<Task, Broken>]) -> Calibration {
    match tasks.iter().flatten().find(|t| t.expected.is_some()) {
        Some(task) => judge.calibrate(task).await,
        None => Calibration::default(),
    }
}

/// `I/N` as given on the command line.
pub fn parse_shard(text: &str) -> Result<(u32, u32), EvalError> {
    let bad = || {
        EvalError::Usage(format!(
            "--shard takes I/N with 1 <= I <= N (e.g. 2/4), not `{text}`"
        ))
    };
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if i == 0 || n == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

/// The results' directory a run writes to when none is given: named by the time, and claimed
/// (made) here, so two runs started in the same second never share one.
pub fn default_out(cwd: &Path) -> PathBuf {
    let parent = cwd.join("eval-results");
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    let _ = std::fs::create_dir_all(&parent);
    for n in 1..1000 {
        let name = if n == 1 {
            stamp.clone()
        } else {
            format!("{stamp}-{n}")
        };
        let dir = parent.join(name);
        match std::fs::create_dir(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            _ => return dir,
        }
    }
    parent.join(stamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_plan_evenly_and_together_are_the_whole() {
        let whole = plan(3, 2, None);
        assert_eq!(whole.len(), 6);
        let mut joined: Vec<Planned> = (1..=4).flat_map(|i| plan(3, 2, Some((i, 4)))).collect();
        joined.sort();
        assert_eq!(joined, whole);
        assert_eq!(plan(3, 2, Some((1, 4))), vec![(0, 1), (2, 1)]);
        assert_eq!(parse_shard("2/4").unwrap(), (2, 4));
        for bad in ["0/2", "3/2", "x", "1/0", "1-2"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
