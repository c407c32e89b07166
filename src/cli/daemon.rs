//! The flags of the daemon's commands: `ouro daemon`, `ouro clone`, `ouro ask|act|watch|talk`
//! (the binary hands them to `ouro::daemon::command`).

use std::path::PathBuf;

use clap::{Args as ClapArgs, Subcommand, ValueEnum};

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
        /// The permission mode of its `ask` / `act` turns (default: its settings decide).
        #[arg(long, value_name = "MODE")]
        permission_mode: Option<String>,
        /// An environment variable the clone's brain and its tools may see although its name
        /// looks secret (repeatable; the daemon's own value is used).
        #[arg(long = "pass-env", value_name = "NAME")]
        pass_env: Vec<String>,
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
