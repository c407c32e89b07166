//! The daemon's commands: `ouro daemon`, `ouro clone`, `ouro ask|act|watch|talk`.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args as ClapArgs, Subcommand, ValueEnum};

use super::Command;
use crate::brain::Verb;
use crate::daemon::client::{self, DetachKeys};
use crate::daemon::frame::Header;
use crate::daemon::{self, Paths};

#[derive(Debug, Clone, Subcommand)]
pub enum DaemonAction {
    /// Start the daemon in the background (a no-op when it runs).
    Start,
    /// Stop the daemon and every brain it runs; clones stay on disk.
    Stop,
    /// Whether the daemon runs, where, and how many clones it has.
    Status,
    /// Run the daemon in this terminal (what `start` runs in the background).
    #[command(hide = true)]
    Run,
}

#[derive(Debug, Clone, Subcommand)]
pub enum CloneAction {
    /// Make a clone: a named brain working in a directory.
    New {
        name: String,
        /// The brain's slug (`ouro brains` lists them).
        #[arg(
            long,
            default_value = "ouro@anthropic/claude/sonnet",
            value_name = "SLUG"
        )]
        brain: String,
        /// The directory it works in (default: this one).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// List the clones: brain, mode, pid, series, directory, busy or idle.
    List,
    /// Remove a clone (stopping its brain) and its stored series.
    Rm { name: String },
}

#[derive(Debug, Clone, ClapArgs)]
pub struct DispatchArgs {
    pub name: String,
    /// The prompt; `-` or none reads it from stdin.
    pub prompt: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub output_format: DispatchFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DispatchFormat {
    Text,
    StreamJson,
}

pub async fn run(command: &Command, cwd: &Path) -> anyhow::Result<ExitCode> {
    let paths = Paths::current()?;
    let code = match command {
        Command::Daemon { action } => match action {
            DaemonAction::Start => print(client::daemon_start(&paths).await?),
            DaemonAction::Stop => print(client::daemon_stop(&paths).await?),
            DaemonAction::Status => match client::daemon_status(&paths).await? {
                Some(status) => {
                    print!("{status}");
                    0
                }
                None => {
                    println!("no daemon runs for {}", paths.home.display());
                    1
                }
            },
            DaemonAction::Run => {
                daemon::run(paths).await?;
                0
            }
        },
        Command::Clone { action } => match action {
            CloneAction::New { name, brain, dir } => {
                crate::brain::slug::parse(brain)?;
                let dir = dir.clone().unwrap_or_else(|| cwd.to_path_buf());
                let dir = cwd.join(dir);
                let header = Header::CloneNew {
                    name: name.clone(),
                    brain: brain.clone(),
                    dir,
                };
                print(client::simple(&paths, header).await?)
            }
            CloneAction::List => {
                print!("{}", client::clone_list(&paths).await?);
                0
            }
            CloneAction::Rm { name } => {
                print(client::simple(&paths, Header::CloneRm { name: name.clone() }).await?)
            }
        },
        Command::Ask(args) => dispatch(&paths, args, Verb::Ask).await?,
        Command::Act(args) => dispatch(&paths, args, Verb::Act).await?,
        Command::Watch { name } => client::watch(&paths, name).await?,
        Command::Talk { name, detach_keys } => {
            let keys = detach_keys_for(detach_keys.as_deref())?;
            client::talk(&paths, name, keys).await?
        }
        _ => anyhow::bail!("not a daemon command"),
    };
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

fn print(message: String) -> i32 {
    println!("{message}");
    0
}

async fn dispatch(paths: &Paths, args: &DispatchArgs, verb: Verb) -> anyhow::Result<i32> {
    let prompt = match args.prompt.as_deref() {
        Some(prompt) if prompt != "-" => prompt.to_string(),
        _ if std::io::stdin().is_terminal() => {
            anyhow::bail!("give a prompt after the clone's name, or pipe one in")
        }
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("could not read the prompt from stdin")?;
            text
        }
    };
    if prompt.trim().is_empty() {
        anyhow::bail!("the prompt is empty; say what the clone should do");
    }
    let lines = args.output_format == DispatchFormat::StreamJson;
    Ok(client::ask(paths, &args.name, verb, prompt, lines).await?)
}

/// The flag, else `detachKeys` in the user's own settings (never a project's), else the default.
fn detach_keys_for(flag: Option<&str>) -> anyhow::Result<DetachKeys> {
    let from_settings = || {
        let path = crate::settings::ouro_home()?.join("settings.json");
        let text = std::fs::read_to_string(path).ok()?;
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        value.get("detachKeys")?.as_str().map(String::from)
    };
    match flag.map(String::from).or_else(from_settings) {
        Some(spec) => DetachKeys::parse(&spec).map_err(anyhow::Error::msg),
        None => Ok(DetachKeys::default()),
    }
}
