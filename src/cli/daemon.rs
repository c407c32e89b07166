//! The flags of the daemon's commands: `ouro daemon`, `ouro clone`, `ouro ask|act|watch|talk`
//! and `ouro agent` (the binary hands them to `ouro::daemon::command`, but `ouro agent ipc` to
//! `ouro::agent::ipc`).

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
    /// Carry the daemon's frames between stdio and its socket (what a zone's ssh runs).
    #[command(hide = true)]
    Bridge,
    /// Start the daemon if none runs and print its socket (what a zone forwards over ssh).
    #[command(hide = true)]
    Socket,
    /// Print this ouro's daemon protocol, version and platform as JSON (what `zone check` asks).
    #[command(hide = true)]
    Probe,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ZoneAction {
    /// Add a zone: a host reached with your own ssh (checked unless --no-check).
    Add {
        name: String,
        /// `ssh://[user@]host[:port]`, or a Host alias from ~/.ssh/config.
        target: String,
        #[arg(long)]
        no_check: bool,
    },
    /// The zones: name, ssh target, where ouro is there.
    List,
    /// Exit 0 only when the host answers and a compatible ouro is there.
    Check { name: String },
    /// Copy this ouro to the host (platforms must match), to ~/.ouro/bin/ouro there.
    Install { name: String },
    /// Forget a zone (nothing on the host is touched).
    Rm { name: String },
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
        /// Run it in this zone (`ouro zone list`): its daemon owns the brain, this one relays.
        #[arg(long, value_name = "ZONE")]
        zone: Option<String>,
        /// Variables of this shell the zone's brain gets (an API key that lives only here);
        /// sent over ssh, kept in memory only, never written to disk.
        #[arg(long = "forward-env", value_name = "NAME,…", value_delimiter = ',')]
        forward_env: Vec<String>,
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

#[derive(Debug, Clone, Subcommand)]
pub enum AgentAction {
    /// Agent definitions (name, file, version) and instances (state, pid, task, cost).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Make an instance from a definition file (`*.agent.md`, or any agent file).
    Create {
        name: String,
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
    },
    /// Remove an instance, its artifacts and its log.
    Rm { name: String },
    /// Run an agent (an instance, or a definition's name: its instance is made on first run)
    /// on a task, in the daemon; follows it here unless --detach.
    Run {
        name: String,
        /// The task.
        task: String,
        /// The tree it works in (default: this directory); with --context, a new or empty
        /// folder the bundle is written into.
        #[arg(long, value_name = "DIR", conflicts_with = "worktree")]
        dir: Option<PathBuf>,
        /// A cats bundle whose files become the starting tree (in a fresh folder in ouro's
        /// home unless --dir names one).
        #[arg(long, value_name = "CATS.md", conflicts_with = "worktree")]
        context: Option<PathBuf>,
        /// Work in a new git worktree of this project (as a definition's `isolation:
        /// worktree` does), so the checked-out files are not touched.
        #[arg(long)]
        worktree: bool,
        /// The brain's slug (default: the definition's `engine.brain`, else ouro on its model).
        #[arg(long, value_name = "SLUG")]
        brain: Option<String>,
        /// Start it and return; `ouro agent logs NAME -f` follows it.
        #[arg(long)]
        detach: bool,
    },
    /// The instance's log; -f follows it.
    Logs {
        name: String,
        #[arg(short = 'f', long)]
        follow: bool,
    },
    /// Stop an instance's run (its changes so far still become its artifact).
    Stop { name: String },
    /// Every permission question parked by any agent or clone.
    Pending {
        #[arg(long)]
        json: bool,
    },
    /// Allow a parked call by its id.
    Approve {
        id: String,
        /// Also allow calls like it for the rest of the run.
        #[arg(long)]
        always: bool,
    },
    /// Deny a parked call by its id; the agent is told MESSAGE.
    Deny {
        id: String,
        #[arg(long, value_name = "TEXT")]
        message: Option<String>,
    },
    /// Run one task for a supervisor speaking the Ouroboros IPC v1 (newline-delimited JSON on
    /// stdin and stdout), in this process rather than in the daemon.
    Ipc {
        /// Print the protocol's JSON Schema and exit.
        #[arg(long)]
        schema: bool,
    },
}
