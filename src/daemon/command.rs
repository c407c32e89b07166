//! What each daemon command does on the client's side, given its parsed flags.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use super::client::{self, DetachKeys};
use super::frame::Header;
use super::{DaemonError, Paths, zone};
use crate::brain::Verb;

pub enum Command {
    Start,
    Stop,
    Status,
    /// The daemon itself, in this process.
    Run,
    CloneNew {
        name: String,
        brain: String,
        dir: Option<PathBuf>,
        permission_mode: Option<String>,
        pass_env: Vec<String>,
        zone: Option<String>,
        forward_env: Vec<String>,
    },
    CloneList,
    CloneRm {
        name: String,
    },
    Dispatch {
        name: String,
        verb: Verb,
        /// `None` or `-`: read from stdin.
        prompt: Option<String>,
        stream_json: bool,
    },
    Watch {
        name: String,
    },
    Talk {
        name: String,
        detach_keys: Option<String>,
    },
    Agent(client::agent::AgentCommand),
    /// Stdio to the daemon's socket (a zone's ssh runs it on the far side).
    Bridge,
    Socket,
    Probe,
    Zone(ZoneCommand),
}

/// `ouro zone …`.
pub enum ZoneCommand {
    Add {
        name: String,
        target: String,
        no_check: bool,
    },
    List,
    Check {
        name: String,
    },
    Install {
        name: String,
    },
    Rm {
        name: String,
    },
}

/// Runs `command` from `cwd`; the exit code.
pub async fn run(command: Command, cwd: &Path) -> Result<i32, DaemonError> {
    let paths = Paths::current()?;
    Ok(match command {
        Command::Start => print(client::daemon_start(&paths).await?),
        Command::Stop => print(client::daemon_stop(&paths).await?),
        Command::Status => match client::daemon_status(&paths).await? {
            Some(status) => {
                print!("{status}");
                0
            }
            None => {
                println!("no daemon runs for {}", paths.home.display());
                1
            }
        },
        Command::Run => {
            super::run(paths).await?;
            0
        }
        Command::Bridge => {
            zone::bridge::run(&paths).await?;
            0
        }
        Command::Socket => {
            println!("{}", zone::bridge::socket(&paths).await?.display());
            0
        }
        Command::Probe => {
            println!(
                "{}",
                serde_json::to_string(&zone::Probe::here()).unwrap_or_default()
            );
            0
        }
        Command::Zone(command) => print(match command {
            ZoneCommand::Add {
                name,
                target,
                no_check,
            } => zone::add(&paths, &name, &target, no_check).await?,
            ZoneCommand::List => {
                print!("{}", zone::list(&paths)?);
                return Ok(0);
            }
            ZoneCommand::Check { name } => zone::check(&paths, &name).await?,
            ZoneCommand::Install { name } => zone::install(&paths, &name).await?,
            ZoneCommand::Rm { name } => zone::remove(&paths, &name)?,
        }),
        Command::CloneNew {
            name,
            brain,
            dir,
            permission_mode,
            pass_env,
            zone,
            forward_env,
        } => {
            crate::brain::slug::parse(&brain).map_err(|e| DaemonError::Client(e.to_string()))?;
            if let Some(mode) = &permission_mode {
                super::store::check_mode(mode)?;
            }
            let dir = match (&zone, dir) {
                // A directory on the zone's host: nothing here can resolve it.
                (Some(_), Some(dir)) if dir.is_absolute() => dir,
                (Some(zone), _) => {
                    return Err(DaemonError::Client(format!(
                        "a clone in a zone needs --dir with an absolute path on {zone}'s host"
                    )));
                }
                (None, dir) => cwd.join(dir.unwrap_or_else(|| cwd.to_path_buf())),
            };
            let env = forwarded(&forward_env)?;
            let header = Header::CloneNew {
                name,
                brain,
                dir,
                permission_mode,
                pass_env,
                zone,
                env,
            };
            print(client::simple(&paths, header).await?)
        }
        Command::CloneList => {
            print!("{}", client::clone_list(&paths).await?);
            0
        }
        Command::CloneRm { name } => print(client::simple(&paths, Header::CloneRm { name }).await?),
        Command::Dispatch {
            name,
            verb,
            prompt,
            stream_json,
        } => {
            let prompt = read_prompt(prompt)?;
            client::ask(&paths, &name, verb, prompt, stream_json).await?
        }
        Command::Watch { name } => client::watch(&paths, &name).await?,
        Command::Talk { name, detach_keys } => {
            let keys = detach_keys_for(detach_keys.as_deref())?;
            client::talk(&paths, &name, keys).await?
        }
        Command::Agent(command) => client::agent::run(command, &paths, cwd).await?,
    })
}

/// The values of `names` in this shell, for a clone's brain in a zone (`--forward-env`).
fn forwarded(names: &[String]) -> Result<super::frame::ForwardedEnv, DaemonError> {
    let mut env = std::collections::BTreeMap::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let value = std::env::var(name).map_err(|_| {
            DaemonError::Client(format!(
                "--forward-env {name}: it is not set in this shell; export it first"
            ))
        })?;
        env.insert(name.to_string(), value);
    }
    Ok(super::frame::ForwardedEnv(env))
}

fn print(message: String) -> i32 {
    println!("{message}");
    0
}

fn read_prompt(prompt: Option<String>) -> Result<String, DaemonError> {
    let prompt = match prompt {
        Some(prompt) if prompt != "-" => prompt,
        _ if std::io::stdin().is_terminal() => {
            return Err(DaemonError::Client(
                "give a prompt after the clone's name, or pipe one in".into(),
            ));
        }
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|source| DaemonError::Io {
                    action: "read the prompt from",
                    path: "stdin".into(),
                    source,
                })?;
            text
        }
    };
    if prompt.trim().is_empty() {
        return Err(DaemonError::Client(
            "the prompt is empty; say what the clone should do".into(),
        ));
    }
    Ok(prompt)
}

/// The flag, else `detachKeys` in the user's own settings (never a project's), else the default.
fn detach_keys_for(flag: Option<&str>) -> Result<DetachKeys, DaemonError> {
    let from_settings = || {
        let path = crate::settings::ouro_home()?.join("settings.json");
        let text = std::fs::read_to_string(path).ok()?;
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        value.get("detachKeys")?.as_str().map(String::from)
    };
    match flag.map(String::from).or_else(from_settings) {
        Some(spec) => DetachKeys::parse(&spec).map_err(DaemonError::Client),
        None => Ok(DetachKeys::default()),
    }
}
