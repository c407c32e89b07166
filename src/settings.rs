//! Settings files: `~/.ouro/settings.json` < `.claude/settings.json` < `.ouro/settings.json` <
//! `.claude/settings.local.json` < `.ouro/settings.local.json` < `--settings` (flags override
//! all). Claude Code's project files are read so a repository set up for it works unchanged.
//! Each file is kept with its source so rules can say where they came from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SettingsSource {
    User,
    ClaudeProject,
    Project,
    ClaudeLocal,
    Local,
    /// `--settings`.
    Flag,
    Cli,
    Session,
}

impl SettingsSource {
    pub fn label(self) -> &'static str {
        match self {
            SettingsSource::User => "user settings (~/.ouro/settings.json)",
            SettingsSource::ClaudeProject => "project settings (.claude/settings.json)",
            SettingsSource::Project => "project settings (.ouro/settings.json)",
            SettingsSource::ClaudeLocal => "local settings (.claude/settings.local.json)",
            SettingsSource::Local => "local settings (.ouro/settings.local.json)",
            SettingsSource::Flag => "--settings",
            SettingsSource::Cli => "command-line flags",
            SettingsSource::Session => "granted in this session",
        }
    }

    /// Whether the file came with the directory (and so needs the user's trust to widen).
    pub(crate) fn is_the_directorys(self) -> bool {
        matches!(
            self,
            SettingsSource::ClaudeProject
                | SettingsSource::Project
                | SettingsSource::ClaudeLocal
                | SettingsSource::Local
        )
    }

    /// The `--setting-sources` name of the file kind.
    fn kind(self) -> &'static str {
        match self {
            SettingsSource::User => "user",
            SettingsSource::ClaudeProject | SettingsSource::Project => "project",
            SettingsSource::ClaudeLocal | SettingsSource::Local => "local",
            SettingsSource::Flag | SettingsSource::Cli | SettingsSource::Session => "flag",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionSettings {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<String>,
    #[serde(default)]
    pub additional_directories: Vec<String>,
    /// More paths that need the user's yes even where edits are allowed, as globs relative to
    /// the project root (`scripts/deploy.sh`, `ops/**`): joined from every layer, since they
    /// only ever add protection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected_paths: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookCommand {
    #[serde(rename = "type", default = "command_kind")]
    pub kind: String,
    pub command: String,
    /// Seconds; a hook that runs longer is killed and denies the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

fn command_kind() -> String {
    "command".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookMatcher {
    /// Tool name, `A|B` alternatives, or empty / `*` for every tool.
    #[serde(default)]
    pub matcher: String,
    pub hooks: Vec<HookCommand>,
}

/// `hooks` in the settings: Claude Code's events, each a list of matcher groups.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HookSettings {
    #[serde(default, rename = "PreToolUse")]
    pub pre_tool_use: Vec<HookMatcher>,
    #[serde(default, rename = "PostToolUse")]
    pub post_tool_use: Vec<HookMatcher>,
    #[serde(default, rename = "UserPromptSubmit")]
    pub user_prompt_submit: Vec<HookMatcher>,
    #[serde(default, rename = "Stop")]
    pub stop: Vec<HookMatcher>,
    #[serde(default, rename = "SubagentStop")]
    pub subagent_stop: Vec<HookMatcher>,
    #[serde(default, rename = "SessionStart")]
    pub session_start: Vec<HookMatcher>,
    #[serde(default, rename = "SessionEnd")]
    pub session_end: Vec<HookMatcher>,
    #[serde(default, rename = "PreCompact")]
    pub pre_compact: Vec<HookMatcher>,
    #[serde(default, rename = "Notification")]
    pub notification: Vec<HookMatcher>,
    #[serde(default, rename = "PermissionRequest")]
    pub permission_request: Vec<HookMatcher>,
}

impl HookSettings {
    /// Every event with its groups, by the event's name.
    pub fn events(&self) -> [(&'static str, &Vec<HookMatcher>); 10] {
        [
            ("PreToolUse", &self.pre_tool_use),
            ("PostToolUse", &self.post_tool_use),
            ("UserPromptSubmit", &self.user_prompt_submit),
            ("Stop", &self.stop),
            ("SubagentStop", &self.subagent_stop),
            ("SessionStart", &self.session_start),
            ("SessionEnd", &self.session_end),
            ("PreCompact", &self.pre_compact),
            ("Notification", &self.notification),
            ("PermissionRequest", &self.permission_request),
        ]
    }

    /// The groups of the event named `event` (empty for an unknown name).
    pub fn groups(&self, event: &str) -> &[HookMatcher] {
        self.events()
            .into_iter()
            .find(|(name, _)| *name == event)
            .map_or(&[], |(_, groups)| groups.as_slice())
    }

    /// Every hook's command through `change` (a plugin's `${CLAUDE_PLUGIN_ROOT}`).
    pub fn map_commands(&mut self, change: impl Fn(&str) -> String) {
        for groups in self.events_mut() {
            for hook in groups.iter_mut().flat_map(|g| g.hooks.iter_mut()) {
                hook.command = change(&hook.command);
            }
        }
    }

    /// A later settings layer's hooks run after this one's.
    pub fn extend(&mut self, later: &HookSettings) {
        for (groups, (_, more)) in self.events_mut().into_iter().zip(later.events()) {
            groups.extend(more.iter().cloned());
        }
    }

    fn events_mut(&mut self) -> [&mut Vec<HookMatcher>; 10] {
        [
            &mut self.pre_tool_use,
            &mut self.post_tool_use,
            &mut self.user_prompt_submit,
            &mut self.stop,
            &mut self.subagent_stop,
            &mut self.session_start,
            &mut self.session_end,
            &mut self.pre_compact,
            &mut self.notification,
            &mut self.permission_request,
        ]
    }
}

/// The OS sandbox Bash runs in (`sandbox` in the settings).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxSettings {
    /// `false` runs Bash without the sandbox (a warning says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// `false` refuses TCP to approved commands too (auto-allowed ones never have it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<bool>,
    /// Extra paths approved commands may write (e.g. `~/.cargo`).
    #[serde(default)]
    pub writable_paths: Vec<String>,
    /// Extra paths every command may read.
    #[serde(default)]
    pub readable_paths: Vec<String>,
    /// Commands that, once approved, run outside the sandbox: a plain command whose first
    /// words are an entry (`docker`, `docker compose`), never a command line holding more.
    #[serde(default)]
    pub excluded_commands: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default)]
    pub permissions: PermissionSettings,
    #[serde(default)]
    pub hooks: HookSettings,
    /// Secret-looking environment variables that brains, Bash calls and hooks may still see
    /// (`bashEnvPassthrough`, its earlier name, is read too).
    #[serde(default, alias = "bashEnvPassthrough")]
    pub env_passthrough: Vec<String>,
    /// Share of the context window at which the conversation is compacted before sending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_compact_threshold: Option<f64>,
    #[serde(default)]
    pub sandbox: SandboxSettings,
    /// `false` sends no cache breakpoints (every turn is billed as fresh input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_caching: Option<bool>,
    /// `low`, `medium`, `high` or `max`, as `--effort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// `off`, `adaptive`, `auto` or a token budget, as `--thinking`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// `true` lets the API clear old tool results (and thinking) server-side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_editing: Option<bool>,
    /// Directories whose own settings and instructions take effect (honoured from the user's
    /// settings only; the REPL's trust question adds to it).
    #[serde(default)]
    pub(crate) trusted_directories: Vec<String>,
    /// MCP servers by name, in Claude Code's format (each entry is checked when the session
    /// starts, so one bad entry does not hide the others).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_servers: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub checkpoints: CheckpointSettings,
    /// Auto mode's reviewer (`autoMode`, as Claude Code names it).
    #[serde(default, skip_serializing_if = "AutoModeSettings::is_empty")]
    pub auto_mode: AutoModeSettings,
    /// `ouro serve`'s own settings, read from the user's file.
    #[serde(default, skip_serializing_if = "ServeSettings::is_empty")]
    pub serve: ServeSettings,
    /// The agent foundry's settings (`ouro agent`), read from the user's file.
    #[serde(default, skip_serializing_if = "AgentsSettings::is_empty")]
    pub agents: AgentsSettings,
    /// Memory's reflect step (`memory.reflect`, `memory.model`).
    #[serde(default, skip_serializing_if = "MemorySettings::is_empty")]
    pub memory: MemorySettings,
    /// The agent definition the main thread runs as (`--agent` wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The output style (`default`, `Explanatory`, `Learning`, or one of `output-styles/*.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_style: Option<String>,
    /// A command whose first line of output is shown above the REPL's prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_line: Option<StatusLineSettings>,
    /// Plugins on or off, as `NAME@MARKETPLACE`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub enabled_plugins: BTreeMap<String, bool>,
    /// Local marketplaces by name (`{"source": {"source": "directory", "path": …}}`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_known_marketplaces: BTreeMap<String, serde_json::Value>,
}

/// `statusLine`: `{"type": "command", "command": "…", "padding": 0}`, as Claude Code has it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusLineSettings {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub padding: Option<u16>,
}

/// `memory`: whether a turn is reflected on, and by which model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemorySettings {
    /// `off` (the default), `ask` or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflect: Option<String>,
    /// The model reflect asks (default: the newest Haiku).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Semantic search beside the keywords (none: keywords only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<EmbeddingsSettings>,
}

/// `memory.embeddings`: an OpenAI-compatible embeddings endpoint (`url`, `model`, and the
/// name of the variable holding its key), or a local model2vec folder (`path`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddingsSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The environment variable whose value is sent as the bearer token (never the key
    /// itself: settings files get committed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl MemorySettings {
    pub fn is_empty(&self) -> bool {
        self == &MemorySettings::default()
    }
}

/// `agents`: how long a parked question of a background agent waits, and how many agents run
/// at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsSettings {
    /// Seconds a parked permission question waits before it is denied (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_timeout: Option<u64>,
    /// Agents running at once per daemon; the rest queue (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<usize>,
    /// Where each parked question and each finished run is posted, signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<NotifySettings>,
}

/// `agents.notify`: a webhook (a phone notification service, a chat bot).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotifySettings {
    pub url: String,
}

impl AgentsSettings {
    pub fn is_empty(&self) -> bool {
        *self == AgentsSettings::default()
    }
}

/// `serve`: how long a served session's brain process stays warm between turns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServeSettings {
    /// Seconds a brain may sit idle before its process ends (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brain_idle_seconds: Option<u64>,
    /// How many brains stay warm at most; the least recently used ends first (default 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_warm_brains: Option<usize>,
}

impl ServeSettings {
    pub fn is_empty(&self) -> bool {
        *self == ServeSettings::default()
    }
}

/// `autoMode`: the model that reviews calls in auto mode, and free-text rules it is given
/// (lists joined from every layer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoModeSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Actions to let through.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Actions to block unless the user's messages clearly asked for them.
    #[serde(default, rename = "soft_deny", skip_serializing_if = "Vec::is_empty")]
    pub soft_deny: Vec<String>,
    /// Actions to block whatever the user said.
    #[serde(default, rename = "hard_deny", skip_serializing_if = "Vec::is_empty")]
    pub hard_deny: Vec<String>,
    /// What the reviewer should know about this environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environment: Vec<String>,
}

impl AutoModeSettings {
    pub fn is_empty(&self) -> bool {
        *self == AutoModeSettings::default()
    }
}

/// `checkpoints`: snapshots of the project for `/rewind` (each field over the layers below).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Untracked files larger than this (MB) are left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_file_size_mb: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_days: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_per_session: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid settings JSON ({source}); fix or remove the file")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("--setting-sources takes user, project and local, not \"{0}\"")]
    UnknownSource(String),
    #[error("could not write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Every settings file that exists, lowest priority first.
#[derive(Debug, Clone, Default)]
pub struct LayeredSettings {
    pub layers: Vec<(SettingsSource, Settings)>,
}

/// `~` and `~/x` expanded; other forms left alone.
pub fn expand_home(text: &str, home: Option<&Path>) -> Option<PathBuf> {
    let rest = if text == "~" {
        ""
    } else {
        text.strip_prefix("~/")?
    };
    home.map(|h| h.join(rest))
}

/// The user's folders for `kind` (`agents`, `skills`): Claude Code's `~/.claude/<kind>`, shared,
/// then ouro's own, which wins on a name both define.
pub fn user_dirs(kind: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = dirs::home_dir() {
        dirs.push(home.join(".claude").join(kind));
    }
    if let Some(ouro) = ouro_home() {
        dirs.push(ouro.join(kind));
    }
    dirs
}

/// A folder's path as one folder name under ouro's home (`/home/me/app` → `-home-me-app`,
/// as Claude Code names its project folders).
pub fn folder_name(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// A folder's path as one folder name that no other path shares: [`folder_name`] plus a hash
/// of the whole path, so that `/x/a b`, `/x/a-b` and `/x/a/b` never meet (for what one project
/// must never see of another's: its memory, its checkpoints).
pub fn project_key(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    // FNV-1a: stable across builds, unlike the standard library's hasher.
    let hash = path
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{}-{hash:016x}", folder_name(path))
}

/// ouro's home as the user should read it: `~/.ouro`, or the directory `OURO_HOME` names.
pub fn home_label() -> String {
    match std::env::var_os("OURO_HOME") {
        Some(dir) => PathBuf::from(dir).display().to_string(),
        None => "~/.ouro".into(),
    }
}

pub fn ouro_home() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("OURO_HOME") {
        return Some(PathBuf::from(dir));
    }
    dirs::home_dir().map(|h| h.join(".ouro"))
}

/// Whether the user trusts `project_root` (its own settings, instructions, agents and
/// memory take effect), as the settings files say now.
pub fn trusted(project_root: &Path) -> bool {
    LayeredSettings::load(project_root).is_ok_and(|s| s.trusts(project_root))
}

pub fn local_settings_path(project_root: &Path) -> PathBuf {
    project_root.join(".ouro").join("settings.local.json")
}

impl LayeredSettings {
    pub fn load(project_root: &Path) -> Result<Self, SettingsError> {
        let mut candidates = Vec::new();
        if let Some(home) = ouro_home() {
            candidates.push((SettingsSource::User, home.join("settings.json")));
        }
        let claude = project_root.join(".claude");
        candidates.push((SettingsSource::ClaudeProject, claude.join("settings.json")));
        candidates.push((
            SettingsSource::Project,
            project_root.join(".ouro").join("settings.json"),
        ));
        candidates.push((
            SettingsSource::ClaudeLocal,
            claude.join("settings.local.json"),
        ));
        candidates.push((SettingsSource::Local, local_settings_path(project_root)));
        let mut layers = Vec::new();
        for (source, path) in candidates {
            match read_settings(&path) {
                Ok(Some(settings)) => layers.push((source, settings)),
                Ok(None) => {}
                // A file that does not parse (one of Claude Code's may use shapes ouro does
                // not read) is left out, loudly, with where it went wrong: it never stops the
                // session from starting, nor does it half-apply.
                Err(e @ SettingsError::Parse { .. }) => {
                    eprintln!(
                        "ouro: warning: {e}. This session runs without the {}; fix the file to use it.",
                        source.label()
                    );
                }
                Err(e) => return Err(e),
            }
        }
        Ok(LayeredSettings { layers })
    }

    /// Keeps only the layers of these kinds (`user`, `project`, `local`), as
    /// `--setting-sources` asks.
    pub fn keep_sources(&mut self, kinds: &[String]) -> Result<(), SettingsError> {
        for kind in kinds {
            if !["user", "project", "local"].contains(&kind.trim()) {
                return Err(SettingsError::UnknownSource(kind.clone()));
            }
        }
        for (source, settings) in &mut self.layers {
            if *source == SettingsSource::User && !kinds.iter().any(|k| k.trim() == "user") {
                // Which directories the user trusts is theirs to say, not a setting to skip.
                *settings = Settings {
                    trusted_directories: std::mem::take(&mut settings.trusted_directories),
                    ..Settings::default()
                };
            }
        }
        self.layers.retain(|(source, _)| {
            *source == SettingsSource::User || kinds.iter().any(|k| k.trim() == source.kind())
        });
        Ok(())
    }

    /// Adds `--settings`: a JSON file's path, or JSON text.
    pub fn add_flag_layer(&mut self, file_or_json: &str) -> Result<(), SettingsError> {
        let settings = if file_or_json.trim_start().starts_with('{') {
            parse_settings(file_or_json, Path::new("--settings"))?
        } else {
            let path = Path::new(file_or_json);
            read_settings(path)?.ok_or_else(|| SettingsError::Read {
                path: path.to_path_buf(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            })?
        };
        self.layers.push((SettingsSource::Flag, settings));
        Ok(())
    }

    /// Whether the user trusts `project_root`: their own settings list it (or a directory
    /// above it), or it is their home directory (whose `.ouro` is their own).
    pub fn trusts(&self, project_root: &Path) -> bool {
        if dirs::home_dir().is_some_and(|h| h == project_root) {
            return true;
        }
        let home = dirs::home_dir();
        self.layers
            .iter()
            .filter(|(source, _)| *source == SettingsSource::User)
            .flat_map(|(_, s)| &s.trusted_directories)
            .map(|d| expand_home(d, home.as_deref()).unwrap_or_else(|| PathBuf::from(d)))
            .any(|d| project_root.starts_with(d))
    }

    /// Drops from the project's own layers whatever widens what ouro may do (allow rules, a
    /// permissive mode, added directories, hooks, passed-through secrets, sandbox relaxations,
    /// memory's reflect step),
    /// keeping what narrows it (deny and ask rules). Says what was dropped, with its file.
    pub fn drop_untrusted_widenings(&mut self) -> Vec<String> {
        let mut dropped = Vec::new();
        for (source, s) in &mut self.layers {
            if !source.is_the_directorys() {
                continue;
            }
            let mut what = Vec::new();
            let p = &mut s.permissions;
            if !p.allow.is_empty() {
                what.push("allow rules");
                p.allow.clear();
            }
            if p.default_mode
                .as_deref()
                .is_some_and(|m| !matches!(m, "default" | "plan" | "dontAsk"))
            {
                what.push("defaultMode");
                p.default_mode = None;
            }
            if !p.additional_directories.is_empty() {
                what.push("additionalDirectories");
                p.additional_directories.clear();
            }
            if s.hooks != HookSettings::default() {
                what.push("hooks");
                s.hooks = HookSettings::default();
            }
            if !s.env_passthrough.is_empty() {
                what.push("envPassthrough");
                s.env_passthrough.clear();
            }
            let narrowing_sandbox = SandboxSettings {
                network: s.sandbox.network.filter(|on| !on),
                ..SandboxSettings::default()
            };
            if s.sandbox != narrowing_sandbox {
                what.push("sandbox relaxations");
                s.sandbox = narrowing_sandbox;
            }
            if s.model.take().is_some() {
                what.push("model");
            }
            // Only narrowing is safe; a repository's reviewer rules could widen anything.
            if !s.auto_mode.is_empty() {
                what.push("autoMode");
                s.auto_mode = AutoModeSettings::default();
            }
            // Reflect spends on the API and writes memory: the user's choice, once trusted.
            if !s.memory.is_empty() {
                what.push("memory");
                s.memory = MemorySettings::default();
            }
            s.trusted_directories.clear();
            if s.status_line.take().is_some() {
                what.push("statusLine");
            }
            if !s.enabled_plugins.is_empty() || !s.extra_known_marketplaces.is_empty() {
                what.push("plugins");
                s.enabled_plugins.clear();
                s.extra_known_marketplaces.clear();
            }
            // An agent's definition of the project's own would run as the main thread.
            if s.agent.take().is_some() {
                what.push("agent");
            }
            if !s.mcp_servers.is_empty() {
                what.push("MCP servers");
                s.mcp_servers.clear();
            }
            if !what.is_empty() {
                dropped.push(format!("{} in {}", what.join(", "), source.label()));
            }
        }
        dropped
    }

    /// Scalars from the highest layer that sets them; lists joined from all layers.
    pub fn merged(&self) -> Settings {
        let mut out = Settings::default();
        for (_, s) in &self.layers {
            if s.model.is_some() {
                out.model.clone_from(&s.model);
            }
            if s.permissions.default_mode.is_some() {
                out.permissions
                    .default_mode
                    .clone_from(&s.permissions.default_mode);
            }
            if s.auto_compact_threshold.is_some() {
                out.auto_compact_threshold = s.auto_compact_threshold;
            }
            if s.prompt_caching.is_some() {
                out.prompt_caching = s.prompt_caching;
            }
            if s.effort.is_some() {
                out.effort.clone_from(&s.effort);
            }
            if s.thinking.is_some() {
                out.thinking.clone_from(&s.thinking);
            }
            if s.context_editing.is_some() {
                out.context_editing = s.context_editing;
            }
            if s.agent.is_some() {
                out.agent.clone_from(&s.agent);
            }
            if s.output_style.is_some() {
                out.output_style.clone_from(&s.output_style);
            }
            if s.status_line.is_some() {
                out.status_line.clone_from(&s.status_line);
            }
            out.enabled_plugins
                .extend(s.enabled_plugins.iter().map(|(k, v)| (k.clone(), *v)));
            out.extra_known_marketplaces.extend(
                s.extra_known_marketplaces
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
            let (memory, layer) = (&mut out.memory, &s.memory);
            memory.reflect = layer.reflect.clone().or(memory.reflect.take());
            memory.model = layer.model.clone().or(memory.model.take());
            memory.embeddings = layer.embeddings.clone().or(memory.embeddings.take());
            let (auto, layer) = (&mut out.auto_mode, &s.auto_mode);
            if layer.model.is_some() {
                auto.model.clone_from(&layer.model);
            }
            auto.allow.extend(layer.allow.iter().cloned());
            auto.soft_deny.extend(layer.soft_deny.iter().cloned());
            auto.hard_deny.extend(layer.hard_deny.iter().cloned());
            auto.environment.extend(layer.environment.iter().cloned());
            out.permissions
                .allow
                .extend(s.permissions.allow.iter().cloned());
            out.permissions
                .deny
                .extend(s.permissions.deny.iter().cloned());
            out.permissions
                .ask
                .extend(s.permissions.ask.iter().cloned());
            out.permissions
                .additional_directories
                .extend(s.permissions.additional_directories.iter().cloned());
            out.permissions
                .protected_paths
                .extend(s.permissions.protected_paths.iter().cloned());
            out.hooks.extend(&s.hooks);
            let (checkpoints, layer) = (&mut out.checkpoints, &s.checkpoints);
            checkpoints.enabled = layer.enabled.or(checkpoints.enabled);
            checkpoints.max_file_size_mb = layer.max_file_size_mb.or(checkpoints.max_file_size_mb);
            checkpoints.keep_days = layer.keep_days.or(checkpoints.keep_days);
            checkpoints.keep_per_session = layer.keep_per_session.or(checkpoints.keep_per_session);
            out.env_passthrough
                .extend(s.env_passthrough.iter().cloned());
            out.mcp_servers
                .extend(s.mcp_servers.iter().map(|(k, v)| (k.clone(), v.clone())));
            let (sandbox, layer) = (&mut out.sandbox, &s.sandbox);
            if layer.enabled.is_some() {
                sandbox.enabled = layer.enabled;
            }
            if layer.network.is_some() {
                sandbox.network = layer.network;
            }
            sandbox
                .writable_paths
                .extend(layer.writable_paths.iter().cloned());
            sandbox
                .readable_paths
                .extend(layer.readable_paths.iter().cloned());
            sandbox
                .excluded_commands
                .extend(layer.excluded_commands.iter().cloned());
        }
        out
    }
}

pub fn read_settings(path: &Path) -> Result<Option<Settings>, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SettingsError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    parse_settings(&text, path).map(Some)
}

fn parse_settings(text: &str, path: &Path) -> Result<Settings, SettingsError> {
    if text.trim().is_empty() {
        return Ok(Settings::default());
    }
    let parse_error = |source| SettingsError::Parse {
        path: path.to_path_buf(),
        source,
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(parse_error)?;
    warn_unknown_keys(&value, path);
    serde_json::from_value(value).map_err(parse_error)
}

/// Top-level keys ouro reads: the `Settings` fields under their JSON names, asked of serde
/// itself, so a new setting can never be warned about as unknown.
fn known_keys() -> &'static [&'static str] {
    static KEYS: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
    KEYS.get_or_init(field_names::<Settings>)
}

/// The field names a derived `Deserialize` of `T` asks for (its `deserialize_struct` call
/// carries them); empty for a type that is not a struct.
fn field_names<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    struct Names(&'static [&'static str]);
    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("field names taken")
        }
    }
    impl std::error::Error for Stop {}
    impl serde::de::Error for Stop {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    impl<'de> serde::Deserializer<'de> for &mut Names {
        type Error = Stop;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0 = fields;
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut names = Names(&[]);
    let _ = T::deserialize(&mut names);
    names.0
}

/// Claude Code keys ouro does not use: valid in a `.claude/` file, so not typos.
const CLAUDE_CODE_KEYS: &[&str] = &[
    "env",
    "apiKeyHelper",
    "cleanupPeriodDays",
    "includeCoAuthoredBy",
    "forceLoginMethod",
    "enableAllProjectMcpServers",
    "enabledMcpjsonServers",
    "disabledMcpjsonServers",
    "awsAuthRefresh",
    "awsCredentialExport",
    "spinnerTipsEnabled",
    "alwaysThinkingEnabled",
    "$schema",
    "feedbackSurveyState",
    "theme",
    "verbose",
];

/// A key that is neither ouro's nor Claude Code's is most likely a typo, which would otherwise
/// be ignored without a word.
fn warn_unknown_keys(value: &serde_json::Value, path: &Path) {
    let Some(map) = value.as_object() else {
        return;
    };
    for key in map.keys() {
        if known_keys().contains(&key.as_str()) || CLAUDE_CODE_KEYS.contains(&key.as_str()) {
            continue;
        }
        let closest = known_keys()
            .iter()
            .min_by_key(|k| crate::text::edit_distance(k, key))
            .filter(|k| crate::text::edit_distance(k, key) <= 2)
            .map(|k| format!(" (did you mean \"{k}\"?)"))
            .unwrap_or_default();
        let warning = format!(
            "ouro: {}: unknown setting \"{key}\" is ignored{closest}",
            path.display()
        );
        // Settings are read again as a session goes (the REPL, a resume): said once.
        static SAID: std::sync::Mutex<BTreeSet<String>> = std::sync::Mutex::new(BTreeSet::new());
        if crate::sys::sync::lock(&SAID).insert(warning.clone()) {
            eprintln!("{warning}");
        }
    }
}

/// Add an allow rule to a settings file, keeping every other key the file has.
pub fn append_allow_rule(path: &Path, rule: &str) -> Result<(), SettingsError> {
    append_to_list(path, &["permissions", "allow"], rule)
}

/// Sets the value at `keys` (objects made as needed) of the settings file at `path`,
/// keeping the rest.
pub fn set_path(path: &Path, keys: &[&str], value: serde_json::Value) -> Result<(), SettingsError> {
    let Some((last, parents)) = keys.split_last() else {
        return Ok(());
    };
    edit_json_file(path, |doc| {
        object_at(doc, parents)?.insert((*last).to_string(), value);
        Ok(())
    })
}

/// The user's settings file (`~/.ouro/settings.json`), or why there is none.
pub fn user_settings_path() -> Result<PathBuf, SettingsError> {
    ouro_home()
        .map(|home| home.join("settings.json"))
        .ok_or_else(|| SettingsError::Write {
            path: PathBuf::from("~/.ouro/settings.json"),
            source: std::io::Error::other("there is no home directory"),
        })
}

/// Records in the user's settings that `dir` is trusted.
pub fn trust_directory(dir: &Path) -> Result<(), SettingsError> {
    append_to_list(
        &user_settings_path()?,
        &["trustedDirectories"],
        &dir.to_string_lossy(),
    )
}

/// Adds `value` (once) to the list at `keys` in the JSON file at `path`, keeping the rest.
fn append_to_list(path: &Path, keys: &[&str], value: &str) -> Result<(), SettingsError> {
    let Some((last, parents)) = keys.split_last() else {
        return Ok(());
    };
    edit_json_file(path, |doc| {
        let list = object_at(doc, parents)?
            .entry(*last)
            .or_insert_with(|| serde_json::json!([]))
            .as_array_mut()
            .ok_or_else(|| format!("\"{}\" is not a list", keys.join(".")))?;
        if !list.iter().any(|r| r.as_str() == Some(value)) {
            list.push(serde_json::Value::String(value.to_string()));
        }
        Ok(())
    })
}

/// The object at `keys` in `doc`, each missing one made empty; which is not an object, if one
/// is not.
fn object_at<'d>(
    doc: &'d mut serde_json::Value,
    keys: &[&str],
) -> Result<&'d mut serde_json::Map<String, serde_json::Value>, String> {
    let mut node = doc;
    for (depth, key) in keys.iter().enumerate() {
        node = node
            .as_object_mut()
            .ok_or_else(|| format!("\"{}\" is not a JSON object", keys[..depth].join(".")))?
            .entry(*key)
            .or_insert_with(|| serde_json::json!({}));
    }
    node.as_object_mut()
        .ok_or_else(|| format!("\"{}\" is not a JSON object", keys.join(".")))
}

/// Changes the JSON document in the file at `path` (an empty or missing file is `{}`),
/// keeping everything `change` leaves alone. `change` refuses with a sentence.
pub fn edit_json_file(
    path: &Path,
    change: impl FnOnce(&mut serde_json::Value) -> Result<(), String>,
) -> Result<(), SettingsError> {
    let write_err = |source| SettingsError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut doc: serde_json::Value = match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => {
            serde_json::from_str(&text).map_err(|source| SettingsError::Parse {
                path: path.to_path_buf(),
                source,
            })?
        }
        _ => serde_json::json!({}),
    };
    change(&mut doc).map_err(|e| write_err(std::io::Error::other(e)))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(write_err)?;
    }
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    std::fs::write(path, text + "\n").map_err(write_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_differ_only_in_punctuation_have_keys_of_their_own() {
        let keys: std::collections::HashSet<String> =
            ["/x/a-b", "/x/a/b", "/x/a b", "/x/a.b", "/x/日本", "/x/αβ"]
                .iter()
                .map(|p| project_key(Path::new(p)))
                .collect();
        assert_eq!(keys.len(), 6);
        assert!(project_key(Path::new("/x/a-b")).starts_with("-x-a-b-"));
        assert_eq!(
            project_key(Path::new("/x/a")),
            project_key(Path::new("/x/a"))
        );
    }

    #[test]
    fn the_known_keys_are_the_settings_fields_under_their_json_names() {
        let keys = known_keys();
        for key in [
            "permissions",
            "autoMode",
            "mcpServers",
            "envPassthrough",
            "bashEnvPassthrough",
        ] {
            assert!(keys.contains(&key), "{key} is not in {keys:?}");
        }
        // Every field, the ones skipped when empty included.
        let value = serde_json::to_value(Settings::default()).unwrap();
        for key in value.as_object().unwrap().keys() {
            assert!(keys.contains(&key.as_str()), "{key} is not in {keys:?}");
        }
        assert!(keys.len() > value.as_object().unwrap().len());
        assert!(!keys.contains(&"auto_mode"));
    }

    #[test]
    fn layers_merge_scalars_by_priority_and_join_lists() {
        let user: Settings = serde_json::from_str(
            r#"{"model":"a","permissions":{"allow":["Read"],"defaultMode":"plan"}}"#,
        )
        .unwrap();
        let local: Settings =
            serde_json::from_str(r#"{"model":"b","permissions":{"allow":["Bash(ls)"]}}"#).unwrap();
        let layered = LayeredSettings {
            layers: vec![(SettingsSource::User, user), (SettingsSource::Local, local)],
        };
        let m = layered.merged();
        assert_eq!(m.model.as_deref(), Some("b"));
        assert_eq!(m.permissions.default_mode.as_deref(), Some("plan"));
        assert_eq!(m.permissions.allow, vec!["Read", "Bash(ls)"]);
    }

    #[test]
    fn append_allow_rule_keeps_other_keys_and_does_not_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".ouro/settings.local.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            r#"{"model":"x","permissions":{"deny":["Bash(rm:*)"]}}"#,
        )
        .unwrap();
        append_allow_rule(&path, "Bash(ls:*)").unwrap();
        append_allow_rule(&path, "Bash(ls:*)").unwrap();
        let s = read_settings(&path).unwrap().unwrap();
        assert_eq!(s.model.as_deref(), Some("x"));
        assert_eq!(s.permissions.allow, vec!["Bash(ls:*)"]);
        assert_eq!(s.permissions.deny, vec!["Bash(rm:*)"]);
    }

    #[test]
    fn a_broken_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{not json").unwrap();
        let err = read_settings(&path).unwrap_err().to_string();
        assert!(err.contains("not valid settings JSON"), "{err}");
    }
}
