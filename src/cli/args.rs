//! Command-line flags, spelled as Claude Code spells them.

use clap::{Parser, Subcommand};

use super::print::{InputFormat, OutputFormat};
use crate::api::reasoning::{Effort, ThinkingChoice};
use crate::app::Options;
use crate::permissions::{CliPermissions, PermissionMode};

#[derive(Debug, Parser)]
#[command(
    name = "ouro",
    version,
    disable_version_flag = true,
    about = "A fast, transparent coding agent for your terminal.",
    after_help = "Claude Code flags ouro refuses, each with its reason when given: --ax-screen-reader, \
--bg/--background, --brief, --chrome/--no-chrome, --cloud, --desktop, --environment, \
--exclude-dynamic-system-prompt-sections, --file, --forward-subagent-text, --from-pr, \
--plugin-url, --prompt-suggestions, --remote-control, --remote-control-session-name-prefix, \
--system-prompt-snapshot, --teleport, --tmux; and not yet: --autocompact, --ide, \
--permission-prompts, --plugin-dir-no-mcp, --restricted, --safe-mode. docs/reference.md has the table.",
    args_conflicts_with_subcommands = true
)]
pub struct Args {
    /// Print the version.
    #[arg(short = 'v', long = "version", action = clap::ArgAction::Version)]
    pub version: Option<bool>,

    /// The prompt. Without --print, opens the interactive session with it.
    pub prompt: Option<String>,

    /// Answer one prompt and exit (the prompt is the argument, or stdin).
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// Work in a git worktree of this project kept in ouro's home: a new one, or the one
    /// named (as Claude Code's flag, the next word is the name).
    #[arg(short = 'w', long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    pub worktree: Option<String>,

    #[arg(long, value_enum, default_value = "text")]
    pub output_format: OutputFormat,

    /// `stream-json`: read one user message per JSON line on stdin, answering each in turn.
    #[arg(long, value_enum, default_value = "text")]
    pub input_format: InputFormat,

    /// Model id, or opus, sonnet or haiku for the newest of each.
    #[arg(long)]
    pub model: Option<String>,

    /// How much effort the model spends: low, medium, high or max (models that take it).
    #[arg(long, value_name = "LEVEL")]
    pub effort: Option<Effort>,

    /// Move to this model once the model stays overloaded (three 529 answers in a row).
    #[arg(long, value_name = "MODEL")]
    pub fallback_model: Option<String>,

    /// Extended thinking: off, adaptive, auto (the default) or a token budget.
    #[arg(long, value_name = "MODE")]
    pub thinking: Option<ThinkingChoice>,

    /// Claude Code's older spelling of a thinking budget (`--thinking N`); 0 turns thinking off.
    #[arg(long, value_name = "TOKENS", conflicts_with = "thinking")]
    pub(crate) max_thinking_tokens: Option<u32>,

    /// Beta features every API request asks for (its `anthropic-beta` header), e.g.
    /// context-1m-2025-08-07; comma-separated, or the flag repeated.
    #[arg(long = "betas", value_name = "BETAS")]
    pub betas: Vec<String>,
    /// Flags of Claude Code (and its Agent SDKs) that ouro does not honour yet: named in a
    /// clear error rather than ignored.
    #[arg(long = "task-budget", hide = true)]
    task_budget: Option<String>,
    #[arg(long = "thinking-display", hide = true)]
    thinking_display: Option<String>,
    #[arg(long = "resume-session-at", hide = true)]
    resume_session_at: Option<String>,
    #[arg(long = "resume-drops-turn", hide = true)]
    resume_drops_turn: Option<String>,
    #[arg(long = "session-mirror", hide = true)]
    session_mirror: bool,
    /// Load a plugin from this folder for this session (a folder of plugins loads each one);
    /// repeatable.
    #[arg(long = "plugin-dir", value_name = "PATH")]
    pub plugin_dir: Vec<std::path::PathBuf>,
    /// Run the main thread as this agent definition (its prompt, tools, model, permission mode
    /// and limits), over the `agent` setting.
    #[arg(long = "agent", value_name = "NAME")]
    pub agent: Option<String>,
    #[arg(long = "channels", hide = true, num_args = 0..)]
    channels: Option<Vec<String>>,
    #[arg(long = "initialize-fields", hide = true, num_args = 0..=1, default_missing_value = "")]
    initialize_fields: Option<String>,
    #[arg(long = "managed-settings", hide = true)]
    managed_settings: Option<String>,
    #[arg(long = "project-config-root", hide = true)]
    project_config_root: Option<String>,
    #[arg(long = "plugin-dir-no-mcp", hide = true)]
    plugin_dir_no_mcp: Vec<String>,
    /// A name for this session: `/resume` shows it, `--resume NAME` finds it, `/rename`
    /// changes it.
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    pub session_name: Option<String>,
    /// Minimal mode: no hooks, MCP servers or instruction files (CLAUDE.md, OURO.md) from
    /// settings and folders, no memory; give context with --system-prompt, --mcp-config,
    /// --settings, --agents.
    #[arg(long = "bare")]
    pub bare: bool,
    /// Claude Code 2.1.331's newer flags, taking a value exactly when Claude Code's do (a
    /// switch never takes the prompt for its value).
    #[arg(long = "safe-mode", hide = true)]
    safe_mode: bool,
    #[arg(long = "restricted", hide = true)]
    restricted: bool,
    #[arg(long = "permission-prompts", hide = true)]
    permission_prompts: Option<String>,
    #[arg(long = "autocompact", hide = true)]
    autocompact: Option<String>,
    #[arg(long = "ide", hide = true)]
    ide: bool,
    /// No skills and no custom slash commands (the built-in ones stay).
    #[arg(long = "disable-slash-commands")]
    pub disable_slash_commands: bool,

    /// Report each hook's start and end in stream-json (`system` `hook_started` /
    /// `hook_response`), as the Agent SDK's `include_hook_events` asks.
    #[arg(long)]
    pub include_hook_events: bool,

    /// Echo each user message read from stdin (stream-json) with its `uuid`, as the Agent SDK
    /// asks to name checkpoints for `rewind_files`.
    #[arg(long, requires = "input_format")]
    pub(crate) replay_user_messages: bool,

    /// Claude Code's permission to switch to bypassPermissions later; ouro's `set_permission_mode`
    /// and Shift+Tab may always switch, so it changes nothing.
    #[arg(long = "allow-dangerously-skip-permissions", hide = true)]
    allow_dangerously_skip_permissions: bool,

    /// Run on this brain, e.g. ouro@anthropic/claude/sonnet/v4.5 (`ouro brains` lists them).
    #[arg(long, value_name = "SLUG", conflicts_with = "model")]
    pub brain: Option<String>,

    /// Maximum API calls for this prompt.
    #[arg(long)]
    pub max_turns: Option<u32>,

    /// Stop once this prompt has cost this many US dollars.
    #[arg(long)]
    pub max_budget_usd: Option<f64>,

    /// Stop once this prompt has produced this many output tokens.
    #[arg(long)]
    pub max_output_tokens: Option<u64>,

    /// Retries for overloaded or failing API requests (default 10).
    #[arg(long)]
    pub max_retries: Option<u32>,

    /// Show each step on stderr (text output).
    #[arg(long)]
    pub verbose: bool,

    /// Log what ouro does on stderr; `--debug=FILTER` narrows it (`--debug=ouro::api=trace`).
    #[arg(
        short = 'd',
        long,
        value_name = "FILTER",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "debug"
    )]
    pub debug: Option<String>,

    /// Debug logging on stderr, as `--debug` (the Agent SDKs pass it when a program reads
    /// the CLI's stderr).
    #[arg(long)]
    pub debug_to_stderr: bool,

    /// Debug logging appended to this file instead of stderr (turns --debug on).
    #[arg(long, value_name = "PATH")]
    pub debug_file: Option<std::path::PathBuf>,

    /// Use this system prompt instead of ouro's own (project instructions still apply).
    #[arg(long, value_name = "TEXT", conflicts_with = "system_prompt_file")]
    pub system_prompt: Option<String>,

    /// Read the replacement system prompt from a file.
    #[arg(long, value_name = "FILE")]
    pub(crate) system_prompt_file: Option<std::path::PathBuf>,

    /// Add this text to the end of the system prompt.
    #[arg(
        long,
        value_name = "TEXT",
        conflicts_with = "append_system_prompt_file"
    )]
    pub append_system_prompt: Option<String>,

    /// Add a file's text to the end of the system prompt.
    #[arg(long, value_name = "FILE")]
    pub(crate) append_system_prompt_file: Option<std::path::PathBuf>,

    /// More settings, highest of the settings layers: a JSON file, or JSON text.
    #[arg(long, value_name = "FILE_OR_JSON")]
    pub settings: Option<String>,

    /// Which settings files to read: user, project, local (comma separated; all by default).
    #[arg(long, value_name = "SOURCES", value_delimiter = ',')]
    pub setting_sources: Option<Vec<String>>,

    /// Start the session with this id (a UUID) instead of a new one.
    #[arg(long, value_name = "UUID")]
    pub session_id: Option<String>,

    /// With --resume or --continue: go on in a new session (a copy), leaving the old one as it was.
    #[arg(long)]
    pub fork_session: bool,

    /// Do not write the session to a transcript (it cannot be resumed).
    #[arg(long)]
    pub(crate) no_session_persistence: bool,

    /// The final answer must be JSON matching this JSON Schema (JSON text or a file); it is
    /// in the result's `structured_output`.
    #[arg(long, value_name = "SCHEMA")]
    pub json_schema: Option<String>,

    /// stream-json: also emit the API's raw stream events as `stream_event` lines.
    #[arg(long)]
    pub include_partial_messages: bool,

    /// MCP servers to use: files or JSON texts holding {"mcpServers": {...}} (repeatable).
    #[arg(long = "mcp-config", value_name = "CONFIGS", num_args = 1..)]
    pub mcp_config: Vec<String>,

    /// Use only the MCP servers of --mcp-config, none from settings or .mcp.json.
    #[arg(long)]
    pub strict_mcp_config: bool,

    /// Where permission questions go in print mode: `stdio` asks the Agent SDK's can_use_tool
    /// callback over the control protocol (with --input-format stream-json).
    #[arg(long, value_name = "TOOL")]
    pub(crate) permission_prompt_tool: Option<String>,

    /// Sub-agents for this run, as JSON: {"name": {"description", "prompt", "tools"?, "model"?}}.
    #[arg(long, value_name = "JSON")]
    pub agents: Option<String>,

    /// Resume the session with this id (or a unique prefix of it); without one, pick it.
    #[arg(short = 'r', long, num_args = 0..=1, default_missing_value = "", value_name = "ID")]
    pub resume: Option<String>,

    /// Continue the most recent session in this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_last: bool,

    #[command(flatten)]
    pub permissions: PermissionFlags,

    /// Trust this directory's own settings (allow rules, hooks, added directories) and
    /// instruction files for this run, without being asked.
    #[arg(long)]
    pub trust_project: bool,

    /// Only offer these tools to the model (comma or space separated).
    #[arg(long, value_name = "NAMES")]
    pub tools: Vec<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `ouro serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The address to listen on; anything but loopback is reachable from other machines.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 8417)]
    pub port: u16,
    /// A project the GUI offers (repeatable); clients may name any directory.
    #[arg(long = "project", value_name = "DIR")]
    pub projects: Vec<std::path::PathBuf>,
    /// Where the API token is kept (default: serve/token in ouro's home).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
    /// A web origin allowed to call the API from a browser (CORS), e.g. https://app.example.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Option<String>,
    /// Seconds a permission request waits for an answer before it is denied.
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub permission_timeout: u64,
    /// An environment variable passed to turns although its name looks secret (repeatable).
    #[arg(long = "pass-env", value_name = "NAME")]
    pub pass_env: Vec<String>,
    /// The brain of a session that names none.
    #[arg(
        long,
        default_value = "ouro@anthropic/claude/sonnet",
        value_name = "SLUG"
    )]
    pub brain: String,
}

/// Each subcommand's arguments are built only when it is the one given (or its help is shown):
/// a print-mode start does not build the dozens it does not use.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Run a scripted example against the built-in mock API (no key needed).
    #[cfg(feature = "mock")]
    Demo,
    /// Serve the scriptable mock Messages API on loopback.
    #[cfg(feature = "mock")]
    MockServer {
        /// Scenario JSON file.
        #[arg(long)]
        scenario: std::path::PathBuf,
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// List the effective permission rules and where each came from.
    Permissions {
        #[command(flatten)]
        flags: PermissionFlags,
        /// Count this directory's own settings as trusted.
        #[arg(long)]
        trust_project: bool,
    },
    /// Measure tool throughput end to end against the built-in mock API.
    #[cfg(feature = "mock")]
    Bench(crate::bench::BenchArgs),
    /// List the brain slugs --brain takes, with their models and prices.
    Brains,
    /// Serve the harness API (sessions, personas, SSE events) for a GUI.
    #[cfg(feature = "serve")]
    Serve(ServeArgs),
    /// The OS sandbox Bash runs in.
    Sandbox {
        #[command(subcommand)]
        action: SandboxAction,
    },
    /// A session's checkpoints: list them, diff against one, or go back to one.
    Rewind(crate::cli::rewind::RewindArgs),
    /// Configure and check MCP servers (as `claude mcp`).
    Mcp {
        #[command(subcommand)]
        action: crate::cli::mcp::McpAction,
    },
    /// Zones: other hosts reached with your own ssh, where clones can run.
    Zone {
        #[command(subcommand)]
        action: crate::cli::daemon::ZoneAction,
    },
    /// The daemon that owns the clones' brains (clients start it on demand).
    Daemon {
        #[command(subcommand)]
        action: crate::cli::daemon::DaemonAction,
    },
    /// Clones: named brains, each in a directory, kept by the daemon.
    Clone {
        #[command(subcommand)]
        action: crate::cli::daemon::CloneAction,
    },
    /// Ask a clone a question (read-only tools) and print the answer.
    Ask(crate::cli::daemon::DispatchArgs),
    /// Have a clone do a task (full tools) and print the answer.
    Act(crate::cli::daemon::DispatchArgs),
    /// Show what a clone does, live, until Ctrl-C.
    Watch { name: String },
    /// The agent foundry: agents as files, run in the background by the daemon, their
    /// questions answered from anywhere.
    Agent {
        #[command(subcommand)]
        action: crate::cli::daemon::AgentAction,
    },
    /// Every background brain (agent runs and the daemon's clones) with its state and the
    /// questions it waits on, as Claude Code's `claude agents` lists its own.
    Agents {
        /// A JSON array: `agent list --json`'s instances, then the clones, each with `kind`
        /// and `pending` (the ids of its waiting questions).
        #[arg(long)]
        json: bool,
    },
    /// How well an agent does a suite's tasks: trials judged by tests and a calibrated judge.
    Eval {
        #[command(subcommand)]
        action: crate::cli::eval::EvalAction,
    },
    /// Memory's knowledge graph: list, search, show, forget, add, apply, export, import.
    Memory {
        #[command(subcommand)]
        action: crate::cli::memory::MemoryAction,
    },
    /// What this machine and configuration give ouro (the REPL's /doctor).
    Doctor,
    /// Auto mode's settings: `ouro auto-mode defaults` prints what it starts from.
    #[command(name = "auto-mode")]
    AutoMode {
        #[command(subcommand)]
        action: AutoModeAction,
    },
    /// Claude Code's maintenance commands, which ouro has no counterpart of: each is refused
    /// with what to do instead, never sent to the model as a prompt.
    #[command(hide = true, alias = "upgrade")]
    Update(Refused),
    #[command(hide = true)]
    Install(Refused),
    #[command(hide = true)]
    Config(Refused),
    #[command(hide = true, name = "setup-token")]
    SetupToken(Refused),
    #[command(hide = true, name = "migrate-installer")]
    MigrateInstaller(Refused),
    #[command(hide = true, alias = "plugins")]
    Plugin(Refused),
    #[command(hide = true)]
    Attach(Refused),
    #[command(hide = true)]
    Auth(Refused),
    #[command(hide = true)]
    Gateway(Refused),
    #[command(hide = true)]
    Import(Refused),
    #[command(hide = true)]
    Logs(Refused),
    #[command(hide = true)]
    Purge(Refused),
    #[command(hide = true)]
    Respawn(Refused),
    #[command(hide = true)]
    Rm(Refused),
    #[command(hide = true, alias = "kill")]
    Stop(Refused),
    #[command(hide = true)]
    Ultrareview(Refused),
    /// Older Claude Code releases' project commands.
    #[command(hide = true)]
    Project(Refused),
    /// Git worktrees of this project in ouro's home, with a checkpoint per applied bundle.
    Worktree {
        #[command(subcommand)]
        action: WorktreeAction,
    },
    /// Bundle files for a chat model, in PAWS's format (token counts on stderr).
    Cats(CatsArgs),
    /// Apply a model's reply bundle: checked whole, shown, confirmed; optionally verified.
    Dogs(DogsArgs),
    /// Talk to a clone in its own interactive UI (detach: Ctrl-P Ctrl-Q).
    Talk {
        name: String,
        /// The detach key sequence, as docker writes it (default ctrl-p,ctrl-q, or
        /// `detachKeys` in ~/.ouro/settings.json).
        #[arg(long, value_name = "KEYS")]
        detach_keys: Option<String>,
    },
}

/// Whatever follows a refused subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct Refused {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub rest: Vec<String>,
}

/// What to do instead of Claude Code's background-session commands.
const BACKGROUND: &str = "ouro's background brains are the daemon's clones and agent runs: `ouro agents` lists them, `ouro talk NAME` attaches, `ouro watch NAME` and `ouro agent logs NAME -f` follow, `ouro clone rm NAME` and `ouro agent stop NAME` end them";

/// What to do instead of Claude Code's installer commands.
const SELF_UPDATE: &str = "ouro has no self-updater: build and install it with `cargo install --locked --path .` in its repository";

impl Command {
    /// Why ouro refuses this Claude Code subcommand, and what to do instead.
    pub fn refusal(&self) -> Option<(&'static str, &'static str)> {
        Some(match self {
            Command::Update(_) => ("update (upgrade)", SELF_UPDATE),
            Command::Install(_) => ("install", SELF_UPDATE),
            Command::MigrateInstaller(_) => ("migrate-installer", SELF_UPDATE),
            Command::Config(_) => (
                "config",
                "ouro's settings are JSON files (~/.ouro/settings.json, .ouro/settings.json, .ouro/settings.local.json); edit them, or see what is in force with /config in a session",
            ),
            Command::SetupToken(_) => (
                "setup-token",
                "ouro has no subscription login: export ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)",
            ),
            Command::Plugin(_) => (
                "plugin",
                "ouro manages plugins in a session: /plugin lists them and enables or disables one, /plugin marketplace add PATH adds a local marketplace, and --plugin-dir PATH loads one for a run",
            ),
            Command::Attach(_) => ("attach", BACKGROUND),
            Command::Logs(_) => ("logs", BACKGROUND),
            Command::Respawn(_) => ("respawn", BACKGROUND),
            Command::Rm(_) => ("rm", BACKGROUND),
            Command::Stop(_) => ("stop (kill)", BACKGROUND),
            Command::Auth(_) => (
                "auth",
                "ouro has no login: export ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)",
            ),
            Command::Gateway(_) => (
                "gateway",
                "ouro talks to the Messages API at ANTHROPIC_BASE_URL directly; point that at your gateway",
            ),
            Command::Import(_) => (
                "import",
                "ouro reads Claude Code's files where they are (.claude/, CLAUDE.md, .mcp.json); there is nothing to import",
            ),
            Command::Purge(_) => (
                "purge",
                "a project's ouro data is its .ouro/ folder and its sessions in ~/.ouro/projects/; remove those",
            ),
            Command::Ultrareview(_) => (
                "ultrareview",
                "ouro has no cloud review; /review in a session reviews the current changes",
            ),
            Command::Project(_) => (
                "project",
                "ouro keeps a project's settings in .ouro/settings.json and its sessions in ~/.ouro/projects/",
            ),
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Subcommand)]
pub enum WorktreeAction {
    /// Make a worktree on a new branch from HEAD (named, or given a name).
    Start {
        /// Its name (default: a generated one); the folder and the branch are named after it.
        name: Option<String>,
        /// The branch to make (default: ouro/NAME).
        #[arg(long, value_name = "BRANCH")]
        branch: Option<String>,
    },
    /// The worktrees of this project, with their checkpoints.
    List,
    /// Go back to a checkpoint (`base`: where it started); refuses over uncommitted changes.
    Rewind {
        /// The worktree (`ouro worktree list` names them).
        id: String,
        /// The checkpoint to go back to (`ouro worktree list` shows them), or `base`.
        #[arg(long, value_name = "CHECKPOINT")]
        to: String,
    },
    /// Merge its branch into the project's current branch; refuses over uncommitted changes.
    /// An archived worktree merges from its branch.
    Merge {
        /// The worktree (`ouro worktree list` names them).
        id: String,
        /// One commit on the current branch instead of the worktree's history.
        #[arg(long)]
        squash: bool,
    },
    /// Remove its folder; the branch and the checkpoints stay.
    Archive {
        /// The worktree (`ouro worktree list` names them).
        id: String,
    },
}

#[derive(Debug, Clone, clap::Args)]
pub struct CatsArgs {
    /// Files, directories or globs; `-` reads more from stdin, one per line.
    #[arg(required_unless_present = "ai_curate")]
    pub paths: Vec<String>,
    /// Where the bundle goes (`-`: stdout).
    #[arg(short, long, default_value = "-", value_name = "FILE")]
    pub output: String,
    /// Keep only files matching this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Leave out files matching this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Stop adding files before the bundle passes this many tokens (estimated).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Have a brain pick the files this task needs (among the paths given, default `.`).
    #[arg(long, value_name = "TASK")]
    pub ai_curate: Option<String>,
    /// The brain that picks (`ouro brains` lists them).
    #[arg(
        long,
        default_value = "ouro@anthropic/claude/sonnet",
        value_name = "SLUG"
    )]
    pub brain: String,
    /// Keep the files rated at least this relevant (0 to 1).
    #[arg(long, default_value_t = 0.7, value_name = "SCORE")]
    pub threshold: f64,
    /// `api`: have the Messages API count the whole bundle's tokens (this sends the bundle to
    /// Anthropic; without it the table's estimates are all, and nothing is sent).
    #[arg(long, value_name = "HOW", value_enum)]
    pub count_tokens: Option<CountTokens>,
    /// Leave out the short instructions that tell a chat model how to answer (the 🐕 markers).
    #[arg(long)]
    pub no_instructions: bool,
    /// Start the bundle with YAML front matter (version 1.0) naming this task; with
    /// --ai-curate it is written anyway, naming the curated task unless this is given.
    #[arg(long, value_name = "TEXT")]
    pub task: Option<String>,
}

/// How `ouro cats` counts tokens beyond its estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CountTokens {
    /// The Messages API's token counter.
    Api,
}

#[derive(Debug, Clone, clap::Args)]
pub struct DogsArgs {
    /// The reply bundle (`-`: stdin; questions then go to the terminal).
    #[arg(required_unless_present = "recover")]
    pub bundle: Option<String>,
    /// Finish an apply that was cut off (a crash, kill -9) in this directory, and remove what
    /// it staged.
    #[arg(long, conflicts_with_all = ["dry_run", "verify", "interactive"])]
    pub recover: bool,
    /// With --recover: put back every file the cut-off apply replaced or deleted instead.
    #[arg(long, requires = "recover")]
    pub rollback: bool,
    /// The directory to apply it in.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub dir: std::path::PathBuf,
    /// Apply without asking (protected files still need a typed yes).
    #[arg(short, long)]
    pub yes: bool,
    /// Also write protected files (what runs later: Makefiles, CI files, executables, agent
    /// settings) without the typed yes, for scripts; each is named on stderr.
    #[arg(long)]
    pub yes_protected: bool,
    /// Print the diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// After applying, run this command (sh -c) in DIR; exit 1 when it fails.
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// When the verify command fails, restore exactly the files dogs touched.
    #[arg(long, requires = "verify")]
    pub revert_on_fail: bool,
    /// The cats bundle the reply answers: its manifest tells which files changed since.
    #[arg(long, value_name = "BUNDLE")]
    pub manifest: Option<std::path::PathBuf>,
    /// Apply over files that changed on disk since they were bundled.
    #[arg(long)]
    pub force: bool,
    /// Apply inside this worktree (`ouro worktree list`) and checkpoint it: a commit and a tag.
    #[arg(long, value_name = "ID", conflicts_with = "dir")]
    pub worktree: Option<String>,
    /// Review each file and hunk in a full-screen view; `q` writes what was accepted.
    #[arg(short, long)]
    pub interactive: bool,
    /// Write the review's comments on hunks here, for the next prompt to the model.
    #[arg(long, value_name = "FILE", requires = "interactive")]
    pub feedback: Option<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SandboxAction {
    /// Show what the kernel supports and the sandbox a Bash call here would get.
    Check,
}

/// The permission flags, shared by sessions and `ouro permissions`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PermissionFlags {
    /// Allow rules, e.g. "Bash(git status:*),Edit(src/**)"; several values, commas or spaces.
    #[arg(long = "allowedTools", alias = "allowed-tools", value_name = "RULES", num_args = 1..)]
    pub allowed_tools: Vec<String>,

    /// Deny rules, same syntax as --allowedTools.
    #[arg(
        long = "disallowedTools",
        alias = "disallowed-tools",
        value_name = "RULES",
        num_args = 1..
    )]
    pub disallowed_tools: Vec<String>,

    /// default, acceptEdits, plan, auto, dontAsk or bypassPermissions.
    #[arg(long)]
    pub permission_mode: Option<String>,

    /// The same as --permission-mode bypassPermissions.
    #[arg(long, conflicts_with = "permission_mode")]
    pub(crate) dangerously_skip_permissions: bool,

    /// More directories the session may read and work in.
    #[arg(long = "add-dir", value_name = "DIRS", num_args = 1..)]
    pub add_dirs: Vec<std::path::PathBuf>,
}

impl PermissionFlags {
    /// The flags as the permission engine takes them.
    pub fn cli_permissions(&self) -> Result<CliPermissions, String> {
        let mode = self
            .permission_mode
            .as_deref()
            .map(str::parse::<PermissionMode>)
            .transpose()
            .map_err(|e| e.to_string())?
            .or(self
                .dangerously_skip_permissions
                .then_some(PermissionMode::BypassPermissions));
        Ok(CliPermissions {
            allowed: self.allowed_tools.clone(),
            disallowed: self.disallowed_tools.clone(),
            ask: Vec::new(),
            mode,
            // Relative to where the flag was typed, not to the project root.
            add_dirs: self
                .add_dirs
                .iter()
                .map(|d| std::env::current_dir().map_or_else(|_| d.clone(), |cwd| cwd.join(d)))
                .collect(),
        })
    }
}

impl Args {
    /// Print mode: `-p`, or stream-json input without it (the Agent SDKs run the CLI with
    /// stream-json in and out and no `-p`).
    pub fn is_headless(&self) -> bool {
        self.print || self.input_format == InputFormat::StreamJson
    }

    /// `--allowedTools A B "prompt"` takes every following word as a rule (and `--add-dir` as a
    /// directory), as Claude Code's parser does; a last value that is not a rule (not a
    /// directory) is the prompt instead.
    pub fn take_trailing_prompt(&mut self) {
        if self.prompt.is_some() {
            return;
        }
        for list in [
            &mut self.permissions.allowed_tools,
            &mut self.permissions.disallowed_tools,
        ] {
            if list.len() > 1 && list.last().is_some_and(|v| !is_rule_list(v)) {
                self.prompt = list.pop();
                return;
            }
        }
        let dirs = &mut self.permissions.add_dirs;
        if dirs.len() > 1 && dirs.last().is_some_and(|d| !d.is_dir()) {
            self.prompt = dirs.pop().map(|d| d.to_string_lossy().into_owned());
            return;
        }
        // `--mcp-config a.json "prompt"`: the last value is neither JSON nor a file.
        let configs = &mut self.mcp_config;
        if configs.len() > 1
            && configs.last().is_some_and(|c| {
                !c.trim_start().starts_with('{') && !std::path::Path::new(c).is_file()
            })
        {
            self.prompt = configs.pop();
        }
    }

    /// The Claude Code flags given that ouro cannot honour yet.
    fn unsupported(&self) -> Vec<&'static str> {
        let given = [
            ("--task-budget", self.task_budget.is_some()),
            ("--thinking-display", self.thinking_display.is_some()),
            ("--resume-session-at", self.resume_session_at.is_some()),
            ("--resume-drops-turn", self.resume_drops_turn.is_some()),
            ("--session-mirror", self.session_mirror),
            ("--channels", self.channels.is_some()),
            ("--initialize-fields", self.initialize_fields.is_some()),
            ("--managed-settings", self.managed_settings.is_some()),
            ("--project-config-root", self.project_config_root.is_some()),
            ("--plugin-dir-no-mcp", !self.plugin_dir_no_mcp.is_empty()),
            ("--safe-mode", self.safe_mode),
            ("--restricted", self.restricted),
            ("--permission-prompts", self.permission_prompts.is_some()),
            ("--autocompact", self.autocompact.is_some()),
            ("--ide", self.ide),
        ];
        given
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(flag, _)| flag)
            .collect()
    }

    /// Flags that would otherwise be taken and do nothing: a directory that is not there, a
    /// fork of no session. Unknown tool names are said, not fatal (the SDKs pass Claude
    /// Code's whole list, and ouro has not every tool of it).
    fn check_meaning(&self) -> anyhow::Result<()> {
        if let Some(name) = &self.session_name
            && let Err(why) = crate::session::names::check(name)
        {
            anyhow::bail!("--name {name:?}: {why}; give another name");
        }
        for dir in &self.permissions.add_dirs {
            if !dir.is_dir() {
                anyhow::bail!(
                    "--add-dir {}: there is no such directory; give one that exists",
                    dir.display()
                );
            }
        }
        if self.fork_session && self.resume.is_none() && !self.continue_last {
            anyhow::bail!(
                "--fork-session copies the session that --resume or --continue names; add one of them"
            );
        }
        if let Some(names) = self.tool_names() {
            let known: Vec<String> = crate::tools::pool::builtin_tools()
                .iter()
                .map(|t| t.name().to_string())
                .collect();
            let unknown: Vec<&String> = names
                .iter()
                .filter(|n| *n != "default" && !n.starts_with("mcp__") && !known.contains(n))
                .collect();
            if !unknown.is_empty() {
                eprintln!(
                    "ouro: --tools names {} that ouro does not have; it has {}",
                    unknown
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    known.join(", ")
                );
            }
        }
        Ok(())
    }

    /// Refuses the Claude Code flags ouro cannot honour yet, by name: called before anything
    /// else is read (a prompt on stdin), so the refusal is what the user sees.
    pub fn refuse_unsupported(&self) -> anyhow::Result<()> {
        let unsupported = self.unsupported();
        if !unsupported.is_empty() {
            anyhow::bail!(
                "ouro does not support {} yet; run without {} (ouro says so rather than \
                 ignore what you asked for)",
                unsupported.join(", "),
                if unsupported.len() == 1 { "it" } else { "them" }
            );
        }
        Ok(())
    }

    pub fn options(&self) -> anyhow::Result<Options> {
        self.check_meaning()?;
        self.refuse_unsupported()?;
        Ok(Options {
            model: self.model_choice()?,
            max_turns: self.max_turns,
            max_budget_usd: self.max_budget_usd,
            max_output_tokens: self.max_output_tokens,
            max_retries: self.max_retries,
            session_name: self.session_name.clone(),
            permissions: self
                .permissions
                .cli_permissions()
                .map_err(anyhow::Error::msg)?,
            tools: self.tool_names(),
            resume: self.resume.clone(),
            continue_last: self.continue_last,
            // Naming the project's own settings (as an Agent SDK program does with
            // `setting_sources=["project"]`) is the user's consent for this directory.
            trust_project: self.trust_project
                || self.setting_sources.as_ref().is_some_and(|sources| {
                    sources
                        .iter()
                        .flat_map(|s| s.split(','))
                        .any(|s| matches!(s.trim(), "project" | "local"))
                }),
            effort: self.effort,
            thinking: match self.max_thinking_tokens {
                Some(0) => Some(ThinkingChoice::Off),
                Some(budget) => Some(ThinkingChoice::Budget(budget)),
                None => self.thinking,
            },
            fallback_model: self.fallback_model.clone(),
            betas: self
                .betas
                .iter()
                .flat_map(|b| b.split(','))
                .map(str::trim)
                .filter(|b| !b.is_empty())
                .map(String::from)
                .collect(),
            auto_compact_threshold: None,
            system_prompt: text_or_file(&self.system_prompt, &self.system_prompt_file)?,
            append_system_prompt: text_or_file(
                &self.append_system_prompt,
                &self.append_system_prompt_file,
            )?,
            settings: self.settings.clone(),
            setting_sources: self.setting_sources.clone(),
            session_id: self.session_id.clone(),
            fork_session: self.fork_session,
            persist: !self.no_session_persistence,
            include_partial_messages: self.include_partial_messages,
            json_schema: self.json_schema.as_deref().map(json_or_file).transpose()?,
            mcp_config: self.mcp_config.clone(),
            strict_mcp_config: self.strict_mcp_config,
            agents: self.agents.clone(),
            sdk_mcp: None,
            include_hook_events: self.include_hook_events,
            bare: self.bare,
            disable_slash_commands: self.disable_slash_commands,
            agent: self.agent.clone(),
            plugin_dirs: self
                .plugin_dir
                .iter()
                .map(|d| std::env::current_dir().map_or_else(|_| d.clone(), |cwd| cwd.join(d)))
                .collect(),
        })
    }

    /// The model to run: `--model`, or the one an `ouro@…` `--brain` slug names.
    pub(crate) fn model_choice(&self) -> Result<Option<String>, crate::brain::BrainError> {
        match &self.brain {
            Some(slug) => crate::brain::catalogue::ouro_model(slug).map(|m| Some(m.to_string())),
            None => Ok(self.model.clone()),
        }
    }

    /// `--tools`, split on commas and spaces.
    pub fn tool_names(&self) -> Option<Vec<String>> {
        if self.tools.is_empty() {
            return None;
        }
        Some(
            self.tools
                .iter()
                .flat_map(|t| t.split([',', ' ']))
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect(),
        )
    }
}

/// Whether every item of `text` looks like a permission rule: a tool name (`Bash`, `mcp__x__y`)
/// with an optional `(specifier)`.
fn is_rule_list(text: &str) -> bool {
    let items = crate::permissions::split_rule_list(text);
    !items.is_empty()
        && items.iter().all(|item| {
            let name = item.split('(').next().unwrap_or_default();
            let tool_like = name.starts_with("mcp__")
                || name.chars().next().is_some_and(|c| c.is_ascii_uppercase());
            tool_like
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*'))
                && (item.len() == name.len() || item.ends_with(')'))
        })
}

/// A JSON flag given as text, or as the path of a file holding it.
fn json_or_file(text: &str) -> anyhow::Result<serde_json::Value> {
    let source = if text.trim_start().starts_with('{') {
        text.to_string()
    } else {
        std::fs::read_to_string(text)
            .map_err(|e| anyhow::anyhow!("could not read the schema file {text}: {e}"))?
    };
    let schema: serde_json::Value = serde_json::from_str(&source)
        .map_err(|e| anyhow::anyhow!("--json-schema is not valid JSON: {e}"))?;
    // Refused before any request: a schema that cannot compile could never be met.
    jsonschema::validator_for(&schema)
        .map_err(|e| anyhow::anyhow!("--json-schema is not a valid JSON Schema: {e}"))?;
    Ok(schema)
}

/// A flag given as text, or as a file to read it from.
fn text_or_file(
    text: &Option<String>,
    file: &Option<std::path::PathBuf>,
) -> anyhow::Result<Option<String>> {
    match (text, file) {
        (Some(text), _) => Ok(Some(text.clone())),
        (None, Some(path)) => std::fs::read_to_string(path)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("could not read {}: {e}", path.display())),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subcommand_is_a_sound_definition_though_built_only_when_used() {
        use clap::CommandFactory;
        Args::command().debug_assert();
        let argv = [
            "ouro", "eval", "run", "s", "--brain", "ouro@x", "--env", "docker",
        ];
        let args = Args::try_parse_from(argv).unwrap();
        let Some(Command::Eval {
            action: crate::cli::eval::EvalAction::Run { env, brain, .. },
        }) = args.command
        else {
            panic!("{:?}", args.command);
        };
        assert_eq!(
            (env, brain.as_str()),
            (Some(crate::cli::eval::EvalEnv::Docker), "ouro@x")
        );
        let wrong = Args::try_parse_from(["ouro", "eval", "run", "s", "--no-such-flag"]);
        assert!(wrong.is_err());
    }

    #[test]
    fn the_benchmark_session_flags_parse_to_its_session_options() {
        let mut argv = vec!["ouro".to_string(), "-p".to_string()];
        argv.extend(crate::bench::run::session_flags());
        let args = Args::try_parse_from(argv).unwrap();
        assert_eq!(
            args.permissions.permission_mode.as_deref(),
            Some("acceptEdits")
        );
        assert_eq!(
            args.permissions.allowed_tools,
            crate::bench::scenario::BASH_ALLOW_RULES
        );
        assert_eq!(args.max_retries, Some(0));
        let options = args.options().unwrap();
        let expected = crate::bench::run::session_options();
        assert_eq!(options.permissions, expected.permissions);
        assert_eq!(options.max_retries, expected.max_retries);
    }

    #[test]
    fn space_separated_rules_leave_the_prompt_alone() {
        let parse = |argv: &[&str]| {
            let mut args = Args::try_parse_from(argv).unwrap();
            args.take_trailing_prompt();
            args
        };
        let args = parse(&[
            "ouro",
            "-p",
            "--allowedTools",
            "Read",
            "Bash(git status:*)",
            "fix the bug",
        ]);
        assert_eq!(args.prompt.as_deref(), Some("fix the bug"));
        assert_eq!(
            args.permissions.allowed_tools,
            ["Read", "Bash(git status:*)"]
        );
        let args = parse(&["ouro", "-p", "--disallowedTools", "Write", "Edit", "hello"]);
        assert_eq!(args.prompt.as_deref(), Some("hello"));
        let args = parse(&["ouro", "-p", "explain", "--allowedTools", "Read", "Grep"]);
        assert_eq!(args.prompt.as_deref(), Some("explain"));
        assert_eq!(args.permissions.allowed_tools, ["Read", "Grep"]);
        let args = parse(&["ouro", "-p", "--allowedTools", "Read", "mcp__github__*"]);
        assert_eq!(args.prompt, None);
    }

    #[test]
    fn sdk_flags_are_honoured_or_refused_by_name() {
        let parse = |argv: &[&str]| Args::try_parse_from(argv).unwrap();
        let args = parse(&["ouro", "-p", "--max-thinking-tokens", "2000", "hi"]);
        assert_eq!(
            args.options().unwrap().thinking,
            Some(ThinkingChoice::Budget(2000))
        );
        let off = parse(&["ouro", "-p", "--max-thinking-tokens", "0", "hi"]);
        assert_eq!(off.options().unwrap().thinking, Some(ThinkingChoice::Off));
        let args = parse(&["ouro", "-p", "--session-mirror", "--task-budget", "9", "hi"]);
        let error = args.options().unwrap_err().to_string();
        assert!(error.contains("--task-budget, --session-mirror"), "{error}");
        let betas = parse(&["ouro", "-p", "--betas", "a-1,b-2", "--betas", "c-3", "hi"]);
        assert_eq!(betas.options().unwrap().betas, ["a-1", "b-2", "c-3"]);
        assert_eq!(betas.prompt.as_deref(), Some("hi"));
    }
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum AutoModeAction {
    /// The reviewer's model, rule lists and prompt, as JSON to copy into settings.
    Defaults,
}
