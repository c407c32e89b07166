//! Session assembly: a ready engine, its event stream and its permission engine, built from
//! plain [`Options`], the settings files and the environment. Every front end (print mode, the
//! REPL, the benchmark) builds its session here; none of them needs another's flags.

pub mod doctor;
mod main_agent;
pub mod memory;
pub mod output_style;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use crate::agents;
use crate::api::client::{ApiError, Client, DEFAULT_BASE_URL};
use crate::api::models;
use crate::api::reasoning::{Effort, ThinkingChoice};
use crate::engine::prompt::{ProjectContext, project_instruction_files};
use crate::engine::{Conversation, Engine, EngineConfig};
use crate::event::Event;
use crate::exec::hooks::Hooks;
use crate::exec::{Asker, Executor};
use crate::mcp::McpHub;
use crate::permissions::{CliPermissions, PermissionEngine, PermissionError};
use crate::session::{self, Transcript, TranscriptError};
use crate::settings::{LayeredSettings, SettingsError};
use crate::sys::job::Job;
use crate::tools::bash::SandboxConfig;
use crate::tools::{ToolContext, Toolbox, pool};

/// What a front end decided from its own flags; everything else comes from the settings.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The model id, already resolved from `--model` or a brain slug.
    pub model: Option<String>,
    /// API calls allowed per run.
    pub max_turns: Option<u32>,
    pub max_budget_usd: Option<f64>,
    pub max_output_tokens: Option<u64>,
    pub max_retries: Option<u32>,
    /// Rules and mode from the command line (highest priority).
    pub permissions: CliPermissions,
    /// Only these tools are offered to the model (`--tools`); all when `None`.
    pub tools: Option<Vec<String>>,
    /// Load this earlier session (`--resume`).
    pub resume: Option<String>,
    /// Load the latest session of the directory (`--continue`).
    pub continue_last: bool,
    /// Write the conversation to a transcript (off for the demo and the benchmark).
    pub persist: bool,
    /// `--name`: what this session is called in `/resume` and `--resume NAME`.
    pub session_name: Option<String>,
    /// Trust the directory's own settings and instructions for this run (`--trust-project`).
    pub trust_project: bool,
    /// `--effort`, over the settings' `effort`.
    pub effort: Option<Effort>,
    /// `--thinking`, over the settings' `thinking`.
    pub thinking: Option<ThinkingChoice>,
    /// `--fallback-model`.
    pub fallback_model: Option<String>,
    /// `--betas`: sent in every request's `anthropic-beta` header.
    pub betas: Vec<String>,
    /// Over the settings' `autoCompactThreshold` (the benchmark's long sessions turn it off).
    pub auto_compact_threshold: Option<f64>,
    /// `--system-prompt`: replaces ouro's own instructions.
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`.
    pub append_system_prompt: Option<String>,
    /// `--settings`: a file or JSON text, above the settings files.
    pub settings: Option<String>,
    /// `--setting-sources`: which settings files to read (all when `None`).
    pub setting_sources: Option<Vec<String>>,
    /// `--session-id`: the new session's id.
    pub session_id: Option<String>,
    /// `--fork-session`: a resumed conversation goes on under a new id.
    pub fork_session: bool,
    /// `--include-partial-messages`: raw stream events for stream-json.
    pub include_partial_messages: bool,
    /// `--json-schema`: the final answer must match it.
    pub json_schema: Option<serde_json::Value>,
    /// `--mcp-config`: files or JSON texts with `mcpServers`.
    pub mcp_config: Vec<String>,
    /// `--strict-mcp-config`: only the servers of `--mcp-config`.
    pub strict_mcp_config: bool,
    /// `--agents`: sub-agent definitions as JSON.
    pub agents: Option<String>,
    /// The Agent SDK driving the session serves its in-process MCP servers through this.
    pub sdk_mcp: Option<crate::mcp::SdkLink>,
    /// `--include-hook-events`: each hook's start and end are events.
    pub include_hook_events: bool,
    /// `--bare`: no hooks, MCP servers or instruction files from settings and folders, no
    /// memory; only what the command line gives.
    pub bare: bool,
    /// `--disable-slash-commands`: no skills and no custom commands.
    pub disable_slash_commands: bool,
    /// `--agent NAME`: the main thread runs as that agent definition.
    pub agent: Option<String>,
    /// `--plugin-dir`: plugins for this session, in force at once.
    pub plugin_dirs: Vec<PathBuf>,
}

/// The agent definitions `cwd` sees: the user's, and its project's once that is trusted.
pub fn agent_definitions(
    cwd: &Path,
) -> Vec<Result<crate::agents::spec::Parsed, crate::agents::spec::SpecError>> {
    let root = project_root(cwd);
    let trusted = crate::settings::trusted(&root);
    crate::agents::spec::load_all(&crate::settings::user_dirs("agents"), &root, trusted)
}

/// The project a session started in `cwd` works on: the enclosing git repository's root (as
/// Claude Code does), or `cwd` itself outside one. Settings, instructions, trust, permissions
/// and the sandbox are the root's; commands still start in `cwd`.
/// The search stops below the home directory: a home that is itself a repository (dotfiles)
/// must not make every folder under it one project, trusted as home is.
pub fn project_root(cwd: &Path) -> PathBuf {
    let home = dirs::home_dir();
    cwd.ancestors()
        .take_while(|dir| {
            cwd == home.as_deref().unwrap_or(Path::new("")) || Some(*dir) != home.as_deref()
        })
        .find(|dir| dir.join(".git").exists())
        .map_or_else(|| cwd.to_path_buf(), Path::to_path_buf)
}

/// The settings in force: every layer, less what an untrusted directory's own files would widen.
/// Also says what was left out (and the instruction files an untrusted directory has), empty
/// when the directory is trusted.
pub fn load_settings(
    options: &Options,
    cwd: &Path,
) -> Result<(LayeredSettings, Vec<String>), AppError> {
    let root = project_root(cwd);
    let mut layered = LayeredSettings::load(&root)?;
    if let Some(sources) = &options.setting_sources {
        layered.keep_sources(sources)?;
    }
    let ignored = untrusted(options, &root, cwd, &mut layered);
    // Given on the command line by the user, so trusted like the other flags.
    if let Some(extra) = &options.settings {
        layered.add_flag_layer(extra)?;
    }
    Ok((layered, ignored))
}

/// The built-in tools, plus a source of MCP tools when any server is configured: the servers
/// start connecting now, in the background.
fn with_mcp_servers(
    tools: Vec<Arc<dyn crate::tools::DynTool>>,
    from_settings: &std::collections::BTreeMap<String, serde_json::Value>,
    options: &Options,
    root: &Path,
    trusted: bool,
) -> (Toolbox, Option<Arc<McpHub>>) {
    let (servers, errors) = crate::mcp::config::gather(
        from_settings,
        root,
        trusted,
        &options.mcp_config,
        options.strict_mcp_config || options.bare,
    );
    for error in errors {
        eprintln!("ouro: {error}; that server is left out.");
    }
    let toolbox = Toolbox::from(tools);
    if servers.is_empty() {
        return (toolbox, None);
    }
    let hub = McpHub::start(
        servers,
        crate::mcp::Limits::from_env(),
        options.sdk_mcp.clone(),
    );
    (toolbox.with_source(hub.clone()), Some(hub))
}

/// Whether a tool added after the built-ins is offered: `--tools` names it (or is not given)
/// and no rule denies it outright.
fn offered(options: &Options, denied: &[String], name: &str) -> bool {
    options
        .tools
        .as_ref()
        .is_none_or(|names| names.iter().any(|n| crate::tools::pool::named(n, name)))
        && !denied.iter().any(|n| crate::tools::pool::named(n, name))
}

/// The session's tools plus Skill when there are skills (the user's, and the project's once
/// trusted).
fn with_skills(
    tools: Toolbox,
    options: &Options,
    denied: &[String],
    root: &Path,
    trusted: bool,
    plugins: &[crate::plugins::Plugin],
    names: &mut Vec<String>,
) -> Toolbox {
    if options.disable_slash_commands || !offered(options, denied, crate::skills::NAME) {
        return tools;
    }
    let mut dirs = crate::settings::user_dirs("skills");
    dirs.extend(plugins.iter().map(crate::plugins::Plugin::skills_dir));
    let skills = crate::skills::load(&dirs, root, trusted);
    names.extend(skills.iter().map(|s| s.name.clone()));
    match crate::skills::SkillTool::new(skills) {
        Some(tool) => tools.with_tool(Arc::new(tool)),
        None => tools,
    }
}

/// What sub-agents are built from: the session's own parts.
struct AgentParts<'a> {
    reviewer: Arc<crate::exec::review::Reviewer>,
    root: &'a Path,
    trusted: bool,
    /// The session's transcript; children's go beside it.
    transcript: Option<&'a Path>,
    client: &'a Client,
    config: &'a EngineConfig,
    context: &'a ProjectContext,
    policy: Arc<PermissionEngine>,
    asker: Arc<dyn Asker>,
    hooks: Arc<Hooks>,
    /// The user's agent folders and the plugins'.
    agent_dirs: Vec<PathBuf>,
}

/// The session's tools plus Agent, unless `--tools` leaves it out or a rule denies it.
fn with_agents(
    tools: Toolbox,
    options: &Options,
    denied: &[String],
    parts: AgentParts<'_>,
    infos: &mut Vec<crate::event::AgentInfo>,
) -> Result<Toolbox, AppError> {
    if !offered(options, denied, agents::NAME) {
        return Ok(tools);
    }
    let flag = match &options.agents {
        Some(json) => {
            agents::definition::from_flag(json).map_err(|reason| AppError::InvalidSetting {
                key: "agents",
                reason,
            })?
        }
        None => Vec::new(),
    };
    let defs = agents::definition::load(&parts.agent_dirs, parts.root, parts.trusted, flag);
    infos.extend(defs.iter().map(|d| crate::event::AgentInfo {
        name: d.name.clone(),
        description: d.description.clone(),
        model: d.model.clone(),
    }));
    let spawner = agents::Spawner {
        client: parts.client.clone(),
        config: parts.config.clone(),
        context: parts.context.clone(),
        toolbox: tools.clone(),
        policy: parts.policy,
        asker: parts.asker,
        hooks: parts.hooks,
        reviewer: parts.reviewer,
        transcripts: parts
            .transcript
            .map(|t| t.with_extension("").join("subagents")),
    };
    let tool = agents::AgentTool::new(Arc::new(spawner), defs);
    Ok(tools.with_tool(Arc::new(tool)))
}

/// Drops what an untrusted directory brings from `layered`; says what that was.
fn untrusted(
    options: &Options,
    root: &Path,
    cwd: &Path,
    layered: &mut LayeredSettings,
) -> Vec<String> {
    if options.trust_project || layered.trusts(root) {
        return Vec::new();
    }
    let mut ignored = layered.drop_untrusted_widenings();
    for file in project_instruction_files(root, cwd) {
        ignored.push(format!("the instructions in {}", file.display()));
    }
    if root.join(".mcp.json").is_file() {
        ignored.push("the MCP servers in .mcp.json".to_string());
    }
    for (dir, what) in [
        (".claude/agents", "agents"),
        (".ouro/agents", "agents"),
        (".claude/skills", "skills"),
        (".ouro/skills", "skills"),
        (".claude/commands", "slash commands"),
        (".ouro/commands", "slash commands"),
    ] {
        if root.join(dir).is_dir() {
            ignored.push(format!("the {what} in {dir}"));
        }
    }
    let personas = std::fs::read_dir(root.join("agents")).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("AGENT_"))
    });
    if personas {
        ignored.push("the agents in agents/AGENT_*.md".to_string());
    }
    ignored
}

/// One line for stderr naming what an untrusted directory's files would have done.
pub fn untrusted_notice(ignored: &[String]) -> String {
    format!(
        "ouro: this directory is not trusted, so ouro ignores {}. Trust it by answering the \
         question `ouro` asks here, by passing --trust-project, or by listing it in \
         trustedDirectories in {}/settings.json.",
        ignored.join("; "),
        crate::settings::home_label()
    )
}

/// Where requests go and with which credentials.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub base_url: String,
    pub api_key: String,
    /// `ANTHROPIC_AUTH_TOKEN`, sent as `Authorization: Bearer` (gateways and proxies).
    pub auth_token: Option<String>,
    /// `ANTHROPIC_CUSTOM_HEADERS`: `Name: value` lines added to every request.
    pub headers: Vec<(String, String)>,
}

impl Endpoint {
    /// The API client for this endpoint: its key, its bearer token and its extra headers.
    pub fn client(self) -> Result<Client, crate::api::client::ApiError> {
        Client::new(self.base_url, self.api_key)
            .and_then(|c| c.with_auth(self.auth_token, &self.headers))
    }

    /// A server and its key, nothing else (the demo and the benchmark).
    pub fn with_key(base_url: impl Into<String>, api_key: impl Into<String>) -> Self {
        Endpoint {
            base_url: base_url.into(),
            api_key: api_key.into(),
            auth_token: None,
            headers: Vec::new(),
        }
    }

    pub fn from_env() -> Result<Self, AppError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let api_key = var("ANTHROPIC_API_KEY").unwrap_or_default();
        let auth_token = var("ANTHROPIC_AUTH_TOKEN");
        if api_key.is_empty() && auth_token.is_none() {
            return Err(AppError::NoApiKey);
        }
        let base_url = var("ANTHROPIC_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let headers = var("ANTHROPIC_CUSTOM_HEADERS")
            .map(|text| custom_headers(&text))
            .transpose()?
            .unwrap_or_default();
        Ok(Endpoint {
            base_url,
            api_key,
            auth_token,
            headers,
        })
    }
}

/// `Name: value` lines (newline separated, as Claude Code takes them).
fn custom_headers(text: &str) -> Result<Vec<(String, String)>, AppError> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| match line.split_once(':') {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_string(), value.trim().to_string()))
            }
            _ => Err(AppError::BadCustomHeader(line.to_string())),
        })
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(
        "ANTHROPIC_API_KEY is not set. Export your Anthropic API key (export ANTHROPIC_API_KEY=sk-ant-...) or a gateway's ANTHROPIC_AUTH_TOKEN, or run `ouro demo` to try ouro against its built-in mock API."
    )]
    NoApiKey,
    #[error("ANTHROPIC_CUSTOM_HEADERS has a line that is not `Name: value`: {0:?}")]
    BadCustomHeader(String),
    #[error(
        "There is no session `{0}` for this directory. Run `ouro --continue` for the latest one, or check the id under ~/.ouro/projects/."
    )]
    NoSuchSession(String),
    #[error("`{prefix}` starts {count} sessions of this directory; give more of the id")]
    AmbiguousSession { prefix: String, count: usize },
    #[error(
        "--resume without an id opens the session picker in an interactive session; in print mode give the id, or its first characters"
    )]
    ResumeNeedsId,
    #[error("--session-id {0} is not a UUID; pass one like 123e4567-e89b-12d3-a456-426614174000.")]
    BadSessionId(String),
    #[error("A session {0} already exists here; resume it with --resume {0}, or pick another id.")]
    SessionExists(String),
    #[error(
        "There is no earlier session in this directory to continue. Start one with `ouro -p \"...\"`."
    )]
    NothingToContinue,
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Permissions(#[from] PermissionError),
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    #[error(transparent)]
    Client(#[from] ApiError),
    #[error("{0} failed unexpectedly")]
    StartupTask(&'static str),
    #[error("the setting `{key}` in the settings files is not valid: {reason}")]
    InvalidSetting { key: &'static str, reason: String },
    #[error("{0}")]
    Agent(String),
}

/// A session ready to run.
pub struct App {
    /// What this untrusted directory's files would have done; empty when trusted.
    pub ignored: Vec<String>,
    pub engine: Engine,
    pub events: UnboundedReceiver<Event>,
    /// Set when an earlier conversation was loaded (`--resume`, `--continue`).
    pub resumed: bool,
    /// The live permission engine (rules granted during the session included), for `/permissions`.
    pub permissions: Arc<PermissionEngine>,
    /// The MCP servers, for their prompts, resources and `/mcp`; `None` when none is configured.
    pub mcp: Option<Arc<McpHub>>,
    /// The reflect step after each turn; `None` when it is off or the project is untrusted.
    pub memory: Option<memory::Memory>,
    /// The model of `memory.embeddings`, for views of memory that search by meaning.
    pub embedder: Option<Arc<crate::knowledge::embed::Embedder>>,
    /// The `statusLine` command, for a front end that draws one.
    pub status_line: Option<crate::settings::StatusLineSettings>,
    /// Secret-looking variables a user's command may still see (`envPassthrough`).
    pub env_passthrough: Arc<Vec<String>>,
    /// The plugins in force, for their commands and `/plugin`.
    pub plugins: Vec<crate::plugins::Plugin>,
    /// What stands in for ouro's own instructions before any output style: `--system-prompt`,
    /// or the `--agent` definition's body.
    pub base_system_prompt: Option<String>,
}

/// Everything a session needs, resolved from the options (highest), settings files and defaults.
pub fn build(
    options: &Options,
    cwd: &Path,
    endpoint: Endpoint,
    asker: Arc<dyn Asker>,
) -> Result<App, AppError> {
    // The slow, independent parts of start-up, loading the system's CA certificates (only
    // HTTPS needs them) and running git for the prompt's environment facts (only in a trusted
    // repository), run on their own threads meanwhile.
    let client_job = Job::start(
        crate::api::client::needs_certificates(&endpoint.base_url),
        move || endpoint.client(),
    );
    let (layered, ignored) = load_settings(options, cwd)?;
    let root = project_root(cwd);
    let trusted = options.trust_project || layered.trusts(&root);
    let (context_root, context_dir, bare) = (root.clone(), cwd.to_path_buf(), options.bare);
    let runs_git = trusted && crate::sys::git::is_in_work_tree(cwd);
    let context_job = Job::start(runs_git, move || {
        if bare {
            ProjectContext::without_instructions(&context_dir, trusted)
        } else {
            ProjectContext::gather_in(&context_root, &context_dir, trusted)
        }
    });
    let mut settings = layered.merged();
    if options.bare {
        settings.hooks = Default::default();
        settings.mcp_servers.clear();
        settings.memory = Default::default();
    }
    let (plugins, plugin_errors) =
        crate::plugins::load(&options.plugin_dirs, &settings, options.bare);
    for error in plugin_errors {
        eprintln!("ouro: {error}");
    }
    for plugin in &plugins {
        settings.hooks.extend(&plugin.hooks);
        for (name, server) in &plugin.mcp_servers {
            settings
                .mcp_servers
                .entry(name.clone())
                .or_insert_with(|| server.clone());
        }
    }
    let named = match (&options.agent, &settings.agent) {
        (Some(name), _) => Some((name.clone(), "--agent")),
        (None, Some(name)) => Some((name.clone(), "the agent setting")),
        (None, None) => None,
    };
    let agent_options;
    let (options, asker, guard) = match named {
        Some((name, given_by)) => {
            let applied = main_agent::apply(options, &name, given_by, cwd, asker)?;
            agent_options = applied.options;
            (&agent_options, applied.asker, applied.guard)
        }
        None => (options, asker, None),
    };
    let permissions = Arc::new(PermissionEngine::from_settings(
        &root,
        &layered,
        &options.permissions,
    )?);
    if let Some(guard) = guard {
        permissions.guard_commands(guard);
    }

    let denied_tools: Vec<String> = settings
        .permissions
        .deny
        .iter()
        .chain(options.permissions.disallowed.iter())
        .flat_map(|r| crate::permissions::split_rule_list(r))
        .filter(|r| !r.contains('('))
        .collect();
    let tools = pool::select(
        pool::builtin_tools(),
        options.tools.as_deref(),
        &denied_tools,
    );

    let (tools, mcp) = with_mcp_servers(tools, &settings.mcp_servers, options, &root, trusted);

    let (loaded, session_id, path) = resolve_session(options, cwd)?;
    if let Some(name) = options.session_name.as_deref().filter(|_| options.persist)
        && let Some(names) = session::names::Names::of(cwd)
        && let Err(e) = names.set(&session_id, name)
    {
        eprintln!("ouro: could not name this session {name:?}: {e}");
    }
    let model = options
        .model
        .clone()
        .or(settings.model.clone())
        .or_else(|| {
            std::env::var("ANTHROPIC_MODEL")
                .ok()
                .filter(|m| !m.is_empty())
        })
        .or(loaded.as_ref().and_then(|l| l.model.clone()))
        .map_or_else(
            || models::default_model().to_string(),
            |m| models::resolve(&m),
        );
    let path = path.filter(|_| options.persist);
    let transcript = match &path {
        Some(path) => Some(Transcript::open(path, &session_id, cwd, &model)?),
        None => None,
    };

    let client = client_job
        .finish()
        .ok_or(AppError::StartupTask("building the HTTP client"))??;
    let mut ctx = ToolContext::new(root.clone());
    ctx.start_in(cwd.to_path_buf());
    let mut passthrough = settings.env_passthrough.clone();
    passthrough.extend(crate::sys::secrets::inherited_keep());
    ctx.env_passthrough = Arc::new(passthrough);
    ctx.file_denials = permissions.file_denials();
    ctx.sandbox = Arc::new(SandboxConfig::from_settings(
        &settings.sandbox,
        &root,
        permissions.additional_dirs(),
    ));
    // Only a session kept on disk can be rewound: its checkpoints are in its transcript.
    if transcript.is_some() {
        let config = crate::checkpoint::CheckpointConfig::from_settings(&settings.checkpoints);
        ctx.checkpoints =
            crate::checkpoint::Checkpoints::new(&root, &session_id, config).map(|c| {
                crate::checkpoint::prune::prune_in_background(c.shadow().git_dir(), config);
                Arc::new(c)
            });
    }
    let (tx, rx) = unbounded_channel();
    let mut hooks = Hooks::new(&settings.hooks, session_id.clone())
        .with_transcript(path.clone())
        .with_env_passthrough(ctx.env_passthrough.clone());
    if options.include_hook_events {
        hooks = hooks.with_events(tx.clone());
    }
    let hooks = Arc::new(hooks);

    let mut config = EngineConfig::new(model, cwd.to_path_buf());
    config.max_turns = options.max_turns;
    config.max_budget_usd = options.max_budget_usd;
    config.max_output_tokens = options.max_output_tokens;
    let styles = output_style::all(&root, trusted);
    let style = output_style::in_force(&styles, settings.output_style.as_deref());
    (config.system_prompt, config.append_system_prompt) = output_style::with_flags(style, options);
    config.partial_messages = options.include_partial_messages;
    if let Some(schema) = &options.json_schema {
        config.json_schema = Some(schema.clone());
        let instruction = crate::engine::structured::instruction(schema);
        config.append_system_prompt = Some(match config.append_system_prompt.take() {
            Some(text) => format!("{text}\n\n{instruction}"),
            None => instruction,
        });
    }
    // Claude Code's switch works here too.
    let caching_off_by_env = std::env::var("DISABLE_PROMPT_CACHING").is_ok_and(|v| v == "1");
    config.prompt_caching = settings.prompt_caching.unwrap_or(true) && !caching_off_by_env;
    config.fallback_model = options.fallback_model.as_deref().map(models::resolve);
    config.context_editing = settings.context_editing.unwrap_or(false);
    config.betas.clone_from(&options.betas);
    config.effort = match (options.effort, &settings.effort) {
        (Some(effort), _) => Some(effort),
        (None, Some(text)) => Some(text.parse().map_err(|reason| AppError::InvalidSetting {
            key: "effort",
            reason,
        })?),
        (None, None) => None,
    };
    config.thinking = match (options.thinking, &settings.thinking) {
        (Some(choice), _) => choice,
        (None, Some(text)) => text.parse().map_err(|reason| AppError::InvalidSetting {
            key: "thinking",
            reason,
        })?,
        (None, None) => ThinkingChoice::Auto,
    };
    if let Some(share) = options
        .auto_compact_threshold
        .or(settings.auto_compact_threshold)
    {
        config.auto_compact_threshold = share;
    }
    if let Some(n) = options.max_retries {
        config.retry.max_retries = n;
    }
    let resumed = loaded.is_some();
    let history = loaded.map(|l| l.messages).unwrap_or_default();
    let context = context_job
        .finish()
        .ok_or(AppError::StartupTask("reading the project's instructions"))?;
    let conversation = Conversation {
        session_id,
        history,
        transcript,
    };
    let mut meta = crate::event::InitMeta {
        additional_directories: permissions
            .additional_dirs()
            .list()
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect(),
        sandbox_enabled: ctx.sandbox.enabled,
        ..Default::default()
    };
    let tools = with_skills(
        tools,
        options,
        &denied_tools,
        &root,
        trusted,
        &plugins,
        &mut meta.skills,
    );
    if !options.disable_slash_commands {
        for plugin in &plugins {
            meta.skills.extend(plugin.command_names());
        }
    }
    let mut agent_dirs = crate::settings::user_dirs("agents");
    agent_dirs.extend(plugins.iter().map(crate::plugins::Plugin::agents_dir));
    let embedder = memory::embedder(&settings.memory, &root)?;
    let reflect = memory::plan(&settings.memory, &root, trusted, embedder.clone())?;
    let tools = memory::with_recall(
        tools,
        options,
        &denied_tools,
        &root,
        trusted,
        reflect.is_some(),
        embedder.clone(),
    );
    // Made for every session: Shift+Tab or `set_permission_mode` may switch to auto later.
    // Sub-agents share it, so its circuit breaker counts their blocks too.
    let reviewer = Arc::new(crate::exec::review::Reviewer::new(
        client.clone(),
        &settings.auto_mode,
    ));
    let tools = with_agents(
        tools,
        options,
        &denied_tools,
        AgentParts {
            reviewer: reviewer.clone(),
            root: &root,
            trusted,
            transcript: path.as_deref(),
            client: &client,
            config: &config,
            context: &context,
            policy: permissions.clone(),
            asker: asker.clone(),
            hooks: hooks.clone(),
            agent_dirs,
        },
        &mut meta.agents,
    )?;
    meta.output_style = style.name.clone();
    meta.output_styles = styles.iter().map(|s| s.name.clone()).collect();
    config.init_meta = meta;
    // An object schema becomes the StructuredOutput tool's input, as with Claude Code; any
    // other is asked for in the prompt and checked on the answer's text.
    let tools = match config.json_schema.clone().map(|schema| {
        let slot = crate::tools::structured_output::Slot::default();
        crate::tools::structured_output::StructuredOutputTool::new(schema, slot.clone())
            .map(|tool| (tool, slot))
    }) {
        Some(Ok((tool, slot))) => {
            config.structured = Some(slot);
            tools.with_tool(Arc::new(tool))
        }
        _ => tools,
    };
    let env_passthrough = ctx.env_passthrough.clone();
    let executor = Executor::new(tools, ctx, permissions.clone(), asker, hooks, tx.clone());
    executor.set_reviewer(reviewer);
    let engine = Engine::new(client, executor, config, context, conversation, tx);
    Ok(App {
        ignored,
        engine,
        events: rx,
        resumed,
        permissions,
        mcp,
        memory: reflect,
        embedder,
        status_line: settings.status_line.clone(),
        env_passthrough,
        plugins,
        base_system_prompt: options.system_prompt.clone(),
    })
}

type Resolved = (Option<session::Loaded>, String, Option<PathBuf>);

fn resolve_session(options: &Options, cwd: &Path) -> Result<Resolved, AppError> {
    let existing = if let Some(id) = &options.resume {
        if id.is_empty() {
            return Err(AppError::ResumeNeedsId);
        }
        let id = session::resolve(cwd, id).map_err(|matching| AppError::AmbiguousSession {
            prefix: id.clone(),
            count: matching.len(),
        })?;
        Some(session::locate(cwd, &id).ok_or(AppError::NoSuchSession(id))?)
    } else if options.continue_last {
        Some(
            session::list(cwd)
                .into_iter()
                .next()
                .map(|s| s.path)
                .ok_or(AppError::NothingToContinue)?,
        )
    } else {
        None
    };
    let new_id = match &options.session_id {
        Some(id) => {
            let parsed = uuid::Uuid::parse_str(id)
                .map_err(|_| AppError::BadSessionId(id.clone()))?
                .to_string();
            if session::locate(cwd, &parsed).is_some() {
                return Err(AppError::SessionExists(parsed));
            }
            parsed
        }
        None => session::new_session_id(),
    };
    let new_path = |id: &str| session::project_dir(cwd).map(|d| d.join(format!("{id}.jsonl")));
    match existing {
        Some(path) => {
            let mut loaded = session::transcript::load(&path)?;
            if options.fork_session {
                // The copy starts from the loaded conversation; the original stays as it was.
                loaded.session_id = Some(new_id.clone());
                let path = new_path(&new_id);
                if let Some(path) = &path
                    && options.persist
                {
                    let model = loaded.model.clone().unwrap_or_default();
                    let mut copy = Transcript::open(path, &new_id, cwd, &model)?;
                    copy.append_compaction(&loaded.messages)?;
                }
                return Ok((Some(loaded), new_id, path));
            }
            let id = loaded
                .session_id
                .clone()
                .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .unwrap_or_else(session::new_session_id);
            Ok((Some(loaded), id, Some(path)))
        }
        None => {
            let path = new_path(&new_id);
            Ok((None, new_id, path))
        }
    }
}
