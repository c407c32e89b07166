//! `ouro eval`: how well an agent does a task. A suite's tasks run as trials in throw-away
//! trees, judged by their hidden tests and, beside them, by a calibrated model judge; the
//! results (`results.json`, `docs/eval.md`) say what passed, what it cost and how long it
//! took, with infrastructure failures kept apart from the agent's. Shards of a run merge into
//! the whole run.
//!
//! Data flow: `suite` (its `task`s, native or `harbor`) → `run` (plan, shard, admit, build
//! the images of `docker`; or `remote` on `ray`) → `trial` (tree, brain, `verify`) → `judge`
//! → `results` (summary) → `report` / `html`.

mod docker;
mod harbor;
mod html;
mod judge;
mod learn;
mod load;
mod progress;
mod ray;
mod remote;
pub mod report;
pub mod results;
pub mod run;
mod suite;
mod task;
mod trial;
mod verify;

use std::path::{Path, PathBuf};

pub use run::RunOptions;

use crate::agents::spec::CommandRules;

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A sentence saying what to do.
    #[error("{0}")]
    Usage(String),
}

/// What `ouro eval` was asked to do.
pub enum EvalCommand {
    Run(RunOptions),
    Merge {
        dirs: Vec<PathBuf>,
        out: PathBuf,
    },
    Report {
        dir: PathBuf,
        html: Option<PathBuf>,
    },
    Compare {
        a: PathBuf,
        b: PathBuf,
    },
    /// SWE-bench predictions JSONL, to `out` or stdout.
    ExportSwebench {
        dir: PathBuf,
        out: Option<PathBuf>,
    },
}

/// Runs an `ouro eval` command; the process's exit code.
pub async fn main(command: EvalCommand, cwd: &Path) -> Result<i32, EvalError> {
    match command {
        EvalCommand::Run(options) if options.learn => {
            if options.ray.is_some() {
                return Err(EvalError::Usage(
                    "--learn runs here only: its reflect step reads each trial's log (drop --backend ray)".into(),
                ));
            }
            let agent = agent_options(options.agent.as_deref(), cwd)?;
            let first = run::run(
                RunOptions {
                    out: learn::first_dir(&options.out),
                    learn: false,
                    ..options.clone()
                },
                agent.clone(),
            )
            .await?;
            print!("first pass\n{}", report::text(&first));
            let memory = options.out.join("memory.sqlite");
            let reflected = learn::reflect_on(
                &first,
                &learn::first_dir(&options.out),
                &learn::instructions(&options.suite),
                &memory,
                crate::knowledge::reflect::DEFAULT_MODEL,
                crate::app::memory::configured_embedder(cwd, true)
                    .map_err(|e| EvalError::Usage(e.to_string()))?,
            )
            .await?;
            let second = run::run(
                RunOptions {
                    learn: false,
                    memory_file: Some(memory),
                    ..options.clone()
                },
                agent,
            )
            .await?;
            print!(
                "second pass, with the first's memory\n{}",
                report::text(&second)
            );
            let learned = learn::compare(&first, &second, reflected);
            let json = serde_json::to_vec_pretty(&learned).unwrap_or_default();
            let path = options.out.join("learn.json");
            crate::sys::atomic::write(&path, &json).map_err(|source| EvalError::Io {
                action: "write",
                path: path.clone(),
                source,
            })?;
            print!("{}", learn::text(&learned));
            println!(
                "results: {} (first pass: {})",
                options.out.join("results.json").display(),
                learn::first_dir(&options.out)
                    .join("results.json")
                    .display()
            );
            Ok(0)
        }
        EvalCommand::Run(options) => {
            let results = match &options.ray {
                Some(address) => remote::run(options.clone(), address).await?,
                None => {
                    let agent = agent_options(options.agent.as_deref(), cwd)?;
                    run::run(options.clone(), agent).await?
                }
            };
            print!("{}", report::text(&results));
            println!("results: {}", options.out.join("results.json").display());
            // Nothing was measured when every trial failed to run (a wrong brain, no API):
            // a script must not read that as a finished evaluation.
            let measured = results.trials.iter().any(|t| t.status.scored());
            if !measured && !results.trials.is_empty() {
                eprintln!(
                    "ouro eval: no trial ran (every one is an infra_error); see the errors above"
                );
                return Ok(2);
            }
            Ok(0)
        }
        EvalCommand::Merge { dirs, out } => {
            let results = report::merge(&dirs, &out)?;
            print!("{}", report::text(&results));
            Ok(0)
        }
        EvalCommand::Report { dir, html } => {
            let results = report::load(&dir)?;
            match html {
                Some(path) => {
                    crate::sys::atomic::write(&path, html::page(&results).as_bytes()).map_err(
                        |source| EvalError::Io {
                            action: "write",
                            path: path.clone(),
                            source,
                        },
                    )?;
                    println!("wrote {}", path.display());
                }
                None => print!("{}", report::text(&results)),
            }
            Ok(0)
        }
        EvalCommand::ExportSwebench { dir, out } => {
            let lines = report::swebench(&report::load(&dir)?, &dir)?;
            match out {
                Some(path) => {
                    crate::sys::atomic::write(&path, lines.as_bytes()).map_err(|source| {
                        EvalError::Io {
                            action: "write",
                            path: path.clone(),
                            source,
                        }
                    })?
                }
                None => print!("{lines}"),
            }
            Ok(0)
        }
        EvalCommand::Compare { a, b } => {
            print!(
                "{}",
                report::compare(&report::load(&a)?, &report::load(&b)?)
            );
            Ok(0)
        }
    }
}

/// The turn options of `--agent NAME` (its definition's prompt, tools and rules) and its
/// command patterns, which the trials' asker holds every Bash call to.
fn agent_options(
    name: Option<&str>,
    cwd: &Path,
) -> Result<(crate::brain::TurnOptions, CommandRules), EvalError> {
    let Some(name) = name else {
        return Ok(Default::default());
    };
    let found = crate::app::agent_definitions(cwd)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|p| p.spec.name == name)
        .last()
        .ok_or_else(|| {
            EvalError::Usage(format!(
                "there is no agent definition named {name}; `ouro agent list` shows them"
            ))
        })?;
    let config = crate::agents::instance::InstanceConfig::from_spec(&found.spec, name);
    let patterns = config
        .command_rules()
        .map_err(|e| EvalError::Usage(e.to_string()))?;
    Ok((
        crate::brain::TurnOptions::for_agent(&config, &found.spec.prompt),
        patterns,
    ))
}

pub(crate) fn write_results(out: &Path, results: &results::Results) -> Result<(), EvalError> {
    let path = out.join("results.json");
    let text = serde_json::to_vec_pretty(results).unwrap_or_default();
    crate::sys::atomic::write(&path, &text).map_err(|source| EvalError::Io {
        action: "write",
        path,
        source,
    })
}

/// Copies the files and folders of `from` into `to` (made if missing), leaving out the entries
/// of `from` itself named in `skip`; links are copied as links with `links` (a tree a task
/// starts from), else left out like special files (nothing outside `from` comes along).
///
/// `to` may be a tree an agent worked in (the hidden tests go into it after the agent's turn):
/// nothing there is followed. A link, or a file where a folder goes, is replaced; each file is
/// created anew, never opened through a link.
pub(crate) fn copy_dir(from: &Path, to: &Path, skip: &[&str], links: bool) -> std::io::Result<()> {
    make_real_dir(to)?;
    let folder = crate::sys::beneath::folder(to, to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if skip.iter().any(|s| name == *s) {
            continue;
        }
        let target = to.join(&name);
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_dir(&entry.path(), &target, &[], links)?;
        } else if kind.is_file() {
            remove_any(&target)?;
            copy_file_new(&entry.path(), &folder, Path::new(&name))?;
        } else if kind.is_symlink() && links {
            remove_any(&target)?;
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        }
    }
    Ok(())
}

/// `dir` as a folder of its own: a link or a file in its place is removed first, and a folder
/// already there is kept (its parent is one already).
fn make_real_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => {
            std::fs::remove_file(dir)?;
            std::fs::create_dir(dir)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir_all(dir),
        Err(e) => Err(e),
    }
}

/// Removes whatever is at `path` (a folder with what it holds; a link itself, not where it
/// leads); nothing there is fine.
fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Copies the file `from` to a new file `name` in `folder`, with its mode: created, never
/// opened through a link someone put there since.
fn copy_file_new(from: &Path, folder: &std::os::fd::OwnedFd, name: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut source = std::fs::File::open(from)?;
    let mode = source.metadata()?.permissions().mode() & 0o7777;
    let mut target = crate::sys::beneath::create_in(folder, name, mode)?;
    std::io::copy(&mut source, &mut target)?;
    target.set_permissions(std::fs::Permissions::from_mode(mode))
}
