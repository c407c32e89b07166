//! `--backend ray`: one Ray job per shard, through the Ray Jobs REST API. The suite and this
//! very `ouro` binary travel as the jobs' working_dir package (no shared file system needed);
//! each job runs its shard with the local backend and prints its results folder into its log
//! (a gzipped tar, base64, between markers), which is read back through the API, unpacked and
//! merged. Ctrl-C stops every job.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::EvalError;
use super::ray::{JobStatus, RayJobs};
use super::results::{Results, Trial};
use super::run::{RunOptions, plan};

const BEGIN: &str = "OURO-EVAL-RESULTS-BEGIN";
const END: &str = "OURO-EVAL-RESULTS-END";

/// How often the jobs are asked how they are doing.
const POLL: Duration = Duration::from_secs(1);

/// The environment the jobs' brains need: the API's address and credentials.
const PASSED_ENV: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "OURO_DOCKER",
];

fn ray_error(e: super::ray::RayError) -> EvalError {
    EvalError::Usage(e.to_string())
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> EvalError + use<> {
    let path = path.to_path_buf();
    move |source| EvalError::Io {
        action,
        path,
        source,
    }
}

pub(super) async fn run(options: RunOptions, address: &str) -> Result<Results, EvalError> {
    if options.agent.is_some() {
        return Err(EvalError::Usage(
            "--agent is not sent to Ray jobs yet: run agent definitions with --backend local"
                .into(),
        ));
    }
    let ray = RayJobs::new(address).map_err(ray_error)?;
    // As the jobs will see them (where Docker answers, the tasks with images are not broken).
    let tasks = super::suite::load_suite(&options.suite, options.env != super::run::Env::Host)
        .map_err(io("read", &options.suite))?;
    let total = tasks.len() * options.trials as usize;
    let shards = options.concurrency.clamp(1, total.max(1)) as u32;

    let stage = tempfile::Builder::new()
        .prefix("ouro-eval-ray-")
        .tempdir()
        .map_err(io("make a folder in", &std::env::temp_dir()))?;
    let exe = match &options.ray_binary {
        Some(binary) => binary.clone(),
        None => std::env::current_exe().map_err(io("find", Path::new("ouro")))?,
    };
    std::fs::copy(&exe, stage.path().join("ouro")).map_err(io("copy", &exe))?;
    super::copy_dir(&options.suite, &stage.path().join("suite"), &[], false)
        .map_err(io("copy", &options.suite))?;
    let package = ray.upload_dir(stage.path()).await.map_err(ray_error)?;
    drop(stage);

    let env: BTreeMap<String, String> = PASSED_ENV
        .iter()
        .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
        .collect();
    if env
        .keys()
        .any(|k| k.ends_with("KEY") || k.ends_with("TOKEN"))
    {
        eprintln!(
            "ouro eval: warning: the API key travels in the Ray jobs' environment, which anyone who can reach the dashboard at {address} can read"
        );
    }
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let mut jobs = Vec::new();
    for i in 1..=shards {
        let id = format!("ouro-eval-{run_id}-{i}");
        let entrypoint = entrypoint(&options, i, shards);
        ray.submit(&id, &entrypoint, &package, &env)
            .await
            .map_err(ray_error)?;
        eprintln!("ouro eval: shard {i}/{shards} is Ray job {id}");
        jobs.push((i, id));
    }

    let finished = tokio::select! {
        finished = follow(&ray, &jobs) => finished?,
        _ = tokio::signal::ctrl_c() => {
            for (_, id) in &jobs {
                let _ = ray.stop(id).await;
            }
            return Err(EvalError::Usage("stopped: every Ray job of this run was stopped".into()));
        }
    };

    std::fs::create_dir_all(&options.out).map_err(io("create", &options.out))?;
    let mut dirs = Vec::new();
    for ((i, id), status) in jobs.iter().zip(finished) {
        let dir = options.out.join("shards").join(i.to_string());
        let got = match status {
            JobStatus::Succeeded => collect(&ray, id, &dir).await,
            JobStatus::Failed(why) => Err(format!("the Ray job {id} failed: {why}")),
            other => Err(format!("the Ray job {id} ended {other:?}")),
        };
        match got {
            // The job saw the suite where Ray unpacked it; the run is of the suite here.
            Ok(()) => {
                let mut results = super::report::load(&dir)?;
                results.suite = suite_name(&options);
                super::write_results(&dir, &results)?;
            }
            Err(why) => lost_shard(&options, &tasks, (*i, shards), &dir, &why)?,
        }
        dirs.push(dir);
    }
    super::report::merge(&dirs, &options.out)
}

/// The shell command one job runs: its shard, then its results folder into the log.
fn entrypoint(options: &RunOptions, i: u32, n: u32) -> String {
    let mut args = vec![
        "./ouro".to_string(),
        "eval".into(),
        "run".into(),
        "suite".into(),
        "--brain".into(),
        quote(&options.brain),
        "--trials".into(),
        options.trials.to_string(),
        "--shard".into(),
        format!("{i}/{n}"),
        "--concurrency".into(),
        "1".into(),
        "--out".into(),
        "\"$out\"".into(),
        "--judge-model".into(),
        quote(&options.judge_model),
    ];
    if !options.judge {
        args.push("--no-judge".into());
    }
    if let Some(mode) = &options.permission_mode {
        args.extend(["--permission-mode".into(), quote(mode)]);
    }
    match options.env {
        super::run::Env::Auto => {}
        super::run::Env::Host => args.extend(["--env".into(), "host".into()]),
        super::run::Env::Docker => args.extend(["--env".into(), "docker".into()]),
    }
    // Jobs of one package share its unpacked folder: the work happens in a folder of its own.
    format!(
        "chmod +x ./ouro && out=$(mktemp -d) && {} >&2 && echo {BEGIN} && tar -C \"$out\" -cz . | base64 -w0 && echo && echo {END} && rm -rf \"$out\"",
        args.join(" ")
    )
}

use crate::text::shell_quote as quote;

/// Waits until every job has ended; their last statuses, in order.
async fn follow(ray: &RayJobs, jobs: &[(u32, String)]) -> Result<Vec<JobStatus>, EvalError> {
    let mut last: Vec<Option<JobStatus>> = vec![None; jobs.len()];
    loop {
        for (at, (i, id)) in jobs.iter().enumerate() {
            if last[at].as_ref().is_some_and(ended) {
                continue;
            }
            let status = ray.status(id).await.map_err(ray_error)?;
            if last[at].as_ref() != Some(&status) {
                eprintln!("ouro eval: shard {i}: {status:?}");
            }
            last[at] = Some(status);
        }
        if last.iter().all(|s| s.as_ref().is_some_and(ended)) {
            return Ok(last.into_iter().flatten().collect());
        }
        tokio::time::sleep(POLL).await;
    }
}

fn ended(status: &JobStatus) -> bool {
    matches!(
        status,
        JobStatus::Succeeded | JobStatus::Failed(_) | JobStatus::Stopped
    )
}

/// Unpacks the results folder a job printed into its log into `dir`.
async fn collect(ray: &RayJobs, id: &str, dir: &Path) -> Result<(), String> {
    use base64::Engine;
    let log = ray.logs(id).await.map_err(|e| e.to_string())?;
    // The markers on lines of their own (Ray's log also shows the entrypoint that echoes them).
    let mut lines = log.lines().skip_while(|l| l.trim() != BEGIN).skip(1);
    let packed: String = lines
        .by_ref()
        .take_while(|l| l.trim() != END)
        .map(str::trim)
        .collect();
    if packed.is_empty() {
        return Err(format!("the log of the Ray job {id} holds no results"));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(packed)
        .map_err(|e| format!("the results in the log of {id} are damaged: {e}"))?;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut tar = tokio::process::Command::new("tar")
        .arg("-C")
        .arg(dir)
        .arg("-xz")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if let Some(mut stdin) = tar.stdin.take() {
        use tokio::io::AsyncWriteExt;
        stdin.write_all(&bytes).await.map_err(|e| e.to_string())?;
    }
    let status = tar.wait().await.map_err(|e| e.to_string())?;
    if !status.success() || !dir.join("results.json").exists() {
        return Err(format!("the results of {id} could not be unpacked"));
    }
    Ok(())
}

fn suite_name(options: &RunOptions) -> String {
    options
        .suite
        .canonicalize()
        .unwrap_or(options.suite.clone())
        .display()
        .to_string()
}

/// A shard whose job broke: its trials are `infra_error`, with the reason.
fn lost_shard(
    options: &RunOptions,
    tasks: &[Result<super::task::Task, super::task::Broken>],
    shard: (u32, u32),
    dir: &Path,
    why: &str,
) -> Result<(), EvalError> {
    let trials: Vec<Trial> = plan(tasks.len(), options.trials, Some(shard))
        .into_iter()
        .map(|(at, n)| {
            let task = match &tasks[at] {
                Ok(t) => t.id.clone(),
                Err(b) => b.id.clone(),
            };
            Trial::infra(&task, n, why)
        })
        .collect();
    let results = Results::new(
        suite_name(options),
        options.brain.clone(),
        None,
        options.trials,
        trials,
        None,
    );
    std::fs::create_dir_all(dir).map_err(io("create", dir))?;
    super::write_results(dir, &results)
}
