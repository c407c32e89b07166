//! Agent instances in ouro's home: `agents/instances/<name>/` holds `config.json` (the
//! definition as it was when the instance was made), `system_prompt.md` (its body),
//! `artifacts/` (one dogs bundle per run), `runs.jsonl` (one record per finished run),
//! `state.json` (what it does now) and `log.jsonl` (its runs' events). The daemon runs
//! instances; `ouro agent` reads and writes these files.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::spec::{AgentSpec, CommandRules, PatternError, SpecError};

#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    #[error(
        "\"{0}\" is not a valid agent name: use letters, digits, - and _ (at most 64 characters)"
    )]
    BadName(String),
    #[error(
        "there is no agent instance \"{0}\"; `ouro agent list` shows them, `ouro agent create {0} --from FILE` makes it"
    )]
    Missing(String),
    #[error("an agent instance \"{0}\" exists already; `ouro agent rm {0}` removes it")]
    Exists(String),
    #[error("could not {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not an agent instance's config: {source}; remove the instance and create it again", path.display())]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Spec(#[from] SpecError),
}

/// Why an instance's command patterns cannot judge its commands.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("the agent's command patterns do not compile: {0}")]
    Pattern(#[from] PatternError),
    #[error(
        "the agent {agent} has command patterns and permissionMode {mode}, which runs commands without asking, so the patterns could not be enforced; use another mode (acceptEdits, default, dontAsk)"
    )]
    ModeSkipsThem { agent: String, mode: String },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> InstanceError + use<> {
    let path = path.to_path_buf();
    move |source| InstanceError::Io { what, path, source }
}

/// What an instance runs with, fixed when it is made (a later edit of the definition file
/// changes new instances, not this one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceConfig {
    pub name: String,
    /// The definition file it was made from.
    pub source: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub description: String,
    /// The tools offered (names); `None`: the brain's default set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Rules allowed without asking (`Bash(git diff:*)` entries, `auto_approve_tools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_rules: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disallowed_tools: Vec<String>,
    /// Regular expressions a whole Bash command must match to run unasked / to be refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_commands: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied_commands: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The brain's slug when the definition names one (`engine.brain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
    /// `worktree`: a run with no tree asked for gets a new git worktree of the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    pub created_at: String,
}

impl InstanceConfig {
    pub fn from_spec(spec: &AgentSpec, name: &str) -> InstanceConfig {
        let mut allowed_rules: Vec<String> = Vec::new();
        let mut allowed_commands = Vec::new();
        let mut denied_commands = Vec::new();
        let tools = spec.tools.as_ref().map(|entries| {
            let mut names: Vec<String> = Vec::new();
            for entry in entries {
                if let Some(rule) = &entry.rule {
                    allowed_rules.push(rule.clone());
                }
                allowed_commands.extend(entry.allowed_commands.iter().cloned());
                denied_commands.extend(entry.denied_commands.iter().cloned());
                if !names.contains(&entry.name) {
                    names.push(entry.name.clone());
                }
            }
            names
        });
        allowed_rules.extend(spec.auto_approve_tools.iter().cloned());
        InstanceConfig {
            name: name.to_string(),
            source: spec.source.clone(),
            version: spec.version.clone(),
            description: spec.description.clone(),
            tools,
            allowed_rules,
            disallowed_tools: spec.disallowed_tools.clone(),
            allowed_commands,
            denied_commands,
            model: spec.model.clone(),
            brain: spec.engine.brain.clone(),
            permission_mode: spec.permission_mode.clone(),
            max_turns: spec.max_turns,
            max_cost_usd: spec.engine.max_cost_usd,
            timeout_s: spec.engine.timeout_s,
            isolation: spec.isolation.clone(),
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        }
    }

    /// Its command patterns, compiled; refused in a permission mode that would never let them
    /// judge a command.
    pub fn command_rules(&self) -> Result<CommandRules, RulesError> {
        let rules = CommandRules::compile(&self.allowed_commands, &self.denied_commands)?;
        // Those modes decide Bash calls without asking, so no pattern would ever see them.
        if let Some(mode @ ("bypassPermissions" | "auto")) = self.permission_mode.as_deref()
            && !rules.is_empty()
        {
            return Err(RulesError::ModeSkipsThem {
                agent: self.name.clone(),
                mode: mode.to_string(),
            });
        }
        Ok(rules)
    }

    /// The rules that always ask, whatever the brain's own rules say: with command patterns,
    /// every Bash call, so that the patterns judge each one (none may pass unasked first).
    pub fn ask_rules(&self) -> Vec<String> {
        if self.allowed_commands.is_empty() && self.denied_commands.is_empty() {
            Vec::new()
        } else {
            vec!["Bash".into()]
        }
    }
}

/// What an instance is doing, as `ouro agent list` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    Idle,
    /// Waiting for a free place (`agents.maxConcurrent`).
    Queued,
    Running,
    /// A permission question is parked.
    Blocked,
    Done,
    Failed,
    Stopped,
}

impl AgentState {
    /// Whether a run holds it (waiting for a place, working, or waiting for an answer).
    pub fn is_active(self) -> bool {
        matches!(
            self,
            AgentState::Queued | AgentState::Running | AgentState::Blocked
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Idle => "idle",
            AgentState::Queued => "queued",
            AgentState::Running => "running",
            AgentState::Blocked => "blocked",
            AgentState::Done => "done",
            AgentState::Failed => "failed",
            AgentState::Stopped => "stopped",
        }
    }
}

/// `state.json`: the instance's state and its current (or last) run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateRecord {
    pub state: AgentState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The daemon that runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default)]
    pub cost_usd: f64,
}

impl Default for StateRecord {
    fn default() -> Self {
        StateRecord {
            state: AgentState::Idle,
            run_id: None,
            task: None,
            pid: None,
            cost_usd: 0.0,
        }
    }
}

/// One finished run: a line of `runs.jsonl`, and the `task:result` it reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub run_id: String,
    pub task: String,
    /// `success`, `failure` or `stopped`.
    pub status: String,
    pub summary: String,
    pub cost_usd: f64,
    pub duration_ms: u64,
    /// The tree it worked in.
    pub dir: PathBuf,
    /// Its dogs bundle, when it could be written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<PathBuf>,
    /// Files it changed.
    pub changed: usize,
    pub started_at: String,
    pub ended_at: String,
}

/// One instance's folder.
#[derive(Debug, Clone)]
pub struct Instance {
    pub name: String,
    pub dir: PathBuf,
}

impl Instance {
    pub fn config(&self) -> Result<InstanceConfig, InstanceError> {
        let path = self.dir.join("config.json");
        let text = std::fs::read_to_string(&path).map_err(io("read", &path))?;
        serde_json::from_str(&text).map_err(|source| InstanceError::Corrupt { path, source })
    }

    pub fn system_prompt(&self) -> Result<String, InstanceError> {
        let path = self.dir.join("system_prompt.md");
        std::fs::read_to_string(&path).map_err(io("read", &path))
    }

    pub fn artifacts(&self) -> PathBuf {
        self.dir.join("artifacts")
    }

    pub fn log(&self) -> PathBuf {
        self.dir.join("log.jsonl")
    }

    /// Where runs without a directory of their own (`--context`) get their tree.
    pub fn work(&self, run_id: &str) -> PathBuf {
        self.dir.join("work").join(run_id)
    }

    pub fn state(&self) -> StateRecord {
        std::fs::read_to_string(self.dir.join("state.json"))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    pub fn set_state(&self, state: &StateRecord) -> Result<(), InstanceError> {
        let path = self.dir.join("state.json");
        let text = serde_json::to_vec_pretty(state).unwrap_or_default();
        crate::sys::atomic::write(&path, &text).map_err(io("write", &path))
    }

    pub fn runs(&self) -> Vec<RunRecord> {
        std::fs::read_to_string(self.dir.join("runs.jsonl"))
            .map(|text| {
                text.lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn record_run(&self, run: &RunRecord) -> Result<(), InstanceError> {
        let path = self.dir.join("runs.jsonl");
        let mut line = serde_json::to_vec(run).unwrap_or_default();
        line.push(b'\n');
        crate::sys::atomic::append_whole(&path, &line).map_err(io("write", &path))
    }
}

/// The instances of one ouro home.
#[derive(Debug, Clone)]
pub struct Instances {
    root: PathBuf,
}

impl Instances {
    pub fn in_home(home: &Path) -> Instances {
        Instances {
            root: home.join("agents").join("instances"),
        }
    }

    fn folder(&self, name: &str) -> Result<PathBuf, InstanceError> {
        if !crate::text::is_plain_name(name) || name.len() > 64 {
            return Err(InstanceError::BadName(name.to_string()));
        }
        Ok(self.root.join(name))
    }

    /// Makes instance `name` from a definition.
    pub fn create(&self, name: &str, spec: &AgentSpec) -> Result<Instance, InstanceError> {
        let dir = self.folder(name)?;
        if dir.exists() {
            return Err(InstanceError::Exists(name.to_string()));
        }
        let artifacts = dir.join("artifacts");
        std::fs::create_dir_all(&artifacts).map_err(io("create", &artifacts))?;
        let config = InstanceConfig::from_spec(spec, name);
        let path = dir.join("config.json");
        let text = serde_json::to_vec_pretty(&config).unwrap_or_default();
        crate::sys::atomic::write(&path, &text).map_err(io("write", &path))?;
        let path = dir.join("system_prompt.md");
        crate::sys::atomic::write(&path, spec.prompt.as_bytes()).map_err(io("write", &path))?;
        Ok(Instance {
            name: name.to_string(),
            dir,
        })
    }

    pub fn get(&self, name: &str) -> Result<Instance, InstanceError> {
        let dir = self.folder(name)?;
        if !dir.join("config.json").is_file() {
            return Err(InstanceError::Missing(name.to_string()));
        }
        Ok(Instance {
            name: name.to_string(),
            dir,
        })
    }

    /// Every instance, by name.
    pub fn list(&self) -> Vec<Instance> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut out: Vec<Instance> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str().map(String::from))
            .filter_map(|name| self.get(&name).ok())
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    pub fn remove(&self, name: &str) -> Result<(), InstanceError> {
        let instance = self.get(name)?;
        std::fs::remove_dir_all(&instance.dir).map_err(io("remove", &instance.dir))
    }
}
