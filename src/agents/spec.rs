//! Agent definition files, read one way for everyone: the Agent tool's sub-agents, a served
//! session's persona and the foundry all load the same Markdown file with front matter, whose
//! body is the agent's system prompt. Claude Code's agent keys load unchanged and mean what they
//! mean there; ouro adds `version`, `author`, an `engine` block and `tools` entries that bound
//! the Bash commands an agent may run with regular expressions. A key it does not know is a
//! warning; a wrong type, or one setting given under two names, is an error naming the file.

mod commands;
mod fields;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::AgentDef;
use crate::api::reasoning::Effort;
use crate::frontmatter::FrontMatterError;
use crate::permissions::PermissionMode;
pub use commands::{CommandRules, CommandVerdict, PatternError};
use fields::Fields;

#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    pub name: String,
    pub description: String,
    pub version: Option<String>,
    pub author: Option<String>,
    /// The body of the file: the agent's system prompt.
    pub prompt: String,
    /// The file it came from.
    pub source: PathBuf,
    /// `None`: every tool of the session. Each entry a tool name, a rule such as
    /// `Bash(git diff:*)`, or an object.
    pub tools: Option<Vec<ToolEntry>>,
    pub disallowed_tools: Vec<String>,
    pub auto_approve_tools: Vec<String>,
    /// From `model` or `engine.model`; `inherit` is `None`, the session's model.
    pub model: Option<String>,
    /// `low`, `medium`, `high` or `max`.
    pub effort: Option<String>,
    /// A permission mode as Claude Code spells it (`manual` reads as `default`).
    pub permission_mode: Option<String>,
    /// A list of server names or inline definitions, or a map of definitions.
    pub mcp_servers: Option<Value>,
    /// A map from hook event to its hooks.
    pub hooks: Option<Value>,
    pub skills: Option<Vec<String>>,
    pub initial_prompt: Option<String>,
    /// `user`, `project` or `local`, or a map.
    pub memory: Option<Value>,
    pub background: bool,
    /// Only `worktree`.
    pub isolation: Option<String>,
    pub color: Option<String>,
    /// From `maxTurns`, `max_turns` or `engine.max_turns`.
    pub max_turns: Option<u32>,
    pub engine: Engine,
}

/// ouro's `engine` block, besides its `model` and `max_turns` (merged into [`AgentSpec`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Engine {
    pub temperature: Option<f64>,
    pub max_cost_usd: Option<f64>,
    pub timeout_s: Option<u64>,
    /// A brain slug: `ouro@…` or `claude@…`.
    pub brain: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolEntry {
    pub name: String,
    /// The whole string as written when it was a rule, e.g. `Bash(git diff:*)`.
    pub rule: Option<String>,
    /// Regular expressions a whole Bash command may match to run.
    pub allowed_commands: Vec<String>,
    /// Regular expressions a whole Bash command must not match.
    pub denied_commands: Vec<String>,
}

/// A definition read, with what in it was ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub spec: AgentSpec,
    /// Unknown keys, each named with the file.
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("could not read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    FrontMatter {
        path: PathBuf,
        source: FrontMatterError,
    },
    #[error("{}: {key} must be {expected}, not {found}", path.display())]
    Invalid {
        path: PathBuf,
        key: String,
        expected: String,
        found: String,
    },
    #[error(
        "{}: {first} and {second} are two names for one setting; give only one of them",
        path.display()
    )]
    TwoNames {
        path: PathBuf,
        first: &'static str,
        second: &'static str,
    },
    #[error(
        "{}: the agent name \"{name}\" may hold only letters, digits, - and _ (when the file \
         name is not such a name, set `name:` in the front matter)",
        path.display()
    )]
    BadName { path: PathBuf, name: String },
    #[error(
        "{} has no prompt: write the agent's system prompt below the front matter",
        path.display()
    )]
    NoPrompt { path: PathBuf },
    #[error(
        "{}: {key} holds Bash commands, so it belongs to a Bash entry, not to {tool}",
        path.display()
    )]
    NotBash {
        path: PathBuf,
        key: String,
        tool: String,
    },
    #[error(
        "{}: the {tool} pattern \"{pattern}\" is not a valid regular expression: {reason}",
        path.display()
    )]
    BadPattern {
        path: PathBuf,
        tool: String,
        pattern: String,
        reason: String,
    },
}

/// Every name for each setting, so that two of them at once can be refused.
const TOOLS: &[&str] = &["tools", "allowed_tools", "allowed-tools"];
const DISALLOWED_TOOLS: &[&str] = &["disallowedTools", "disallowed_tools"];
const MODEL: &[&str] = &["model", "engine.model"];
const MAX_TURNS: &[&str] = &["maxTurns", "max_turns", "engine.max_turns"];

impl AgentSpec {
    /// `fallback_name`: the name when the front matter has none (the file stem).
    pub fn parse(text: &str, fallback_name: &str, source: &Path) -> Result<Parsed, SpecError> {
        let (front, body) =
            crate::frontmatter::split(text).map_err(|source_error| SpecError::FrontMatter {
                path: source.to_path_buf(),
                source: source_error,
            })?;
        let mut f = Fields::new(source, front.fields)?;
        let name = f
            .text(&["name"])?
            .unwrap_or_else(|| fallback_name.to_string());
        if !crate::text::is_plain_name(&name) {
            return Err(SpecError::BadName {
                path: source.to_path_buf(),
                name,
            });
        }
        let prompt = body.trim();
        if prompt.is_empty() {
            return Err(SpecError::NoPrompt {
                path: source.to_path_buf(),
            });
        }
        let spec = AgentSpec {
            description: f
                .text(&["description"])?
                .unwrap_or_else(|| format!("The {name} agent")),
            version: f.text(&["version"])?,
            author: f.text(&["author"])?,
            tools: f.tools(TOOLS)?,
            disallowed_tools: f.list(DISALLOWED_TOOLS)?.unwrap_or_default(),
            auto_approve_tools: f.list(&["auto_approve_tools"])?.unwrap_or_default(),
            model: f.text(MODEL)?.filter(|m| m != "inherit"),
            effort: f
                .parsed::<Effort>("effort", "low, medium, high or max")?
                .map(|e| e.as_str().to_string()),
            permission_mode: f
                .parsed::<PermissionMode>(
                    "permissionMode",
                    &format!("one of {}", PermissionMode::names()),
                )?
                .map(|m| m.as_str().to_string()),
            mcp_servers: f.mcp_servers()?,
            hooks: f.map("hooks", "a map from hook event to hooks")?,
            skills: f.list(&["skills"])?,
            initial_prompt: f.text(&["initialPrompt"])?,
            memory: f.memory()?,
            background: f.flag("background")?.unwrap_or(false),
            isolation: f.isolation()?,
            color: f.text(&["color"])?,
            max_turns: f.whole(MAX_TURNS)?,
            engine: Engine {
                temperature: f.temperature()?,
                max_cost_usd: f.cost()?,
                timeout_s: f.whole(&["engine.timeout_s"])?,
                brain: f.brain()?,
            },
            name,
            prompt: prompt.to_string(),
            source: source.to_path_buf(),
        };
        // A pattern that does not compile is the file's error now, not a surprise at the first
        // Bash command.
        spec.command_rules()?;
        Ok(Parsed {
            spec,
            warnings: f.into_warnings(),
        })
    }

    /// For the Agent tool, which knows a name, a description, tools, a model and a prompt.
    pub fn to_def(&self) -> AgentDef {
        // A definition holds tool names only: a tool disallowed outright leaves the list, and
        // several rules for one tool (`Bash(git diff:*)`, `Bash(git log:*)`) name it once.
        let tools = self.tools.as_ref().map(|tools| {
            let mut names: Vec<String> = Vec::new();
            for tool in tools {
                if !self.disallowed_tools.contains(&tool.name) && !names.contains(&tool.name) {
                    names.push(tool.name.clone());
                }
            }
            names
        });
        AgentDef {
            name: self.name.clone(),
            description: self.description.clone(),
            tools,
            disallowed: whole_tools(&self.disallowed_tools),
            model: self.model.clone(),
            prompt: self.prompt.clone(),
            source: self.source.display().to_string(),
        }
    }
}

/// The entries of a `disallowedTools` list that name a whole tool (a rule such as
/// `Bash(rm:*)` is for the permission engine, not the tool list).
pub(crate) fn whole_tools(entries: &[String]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| !e.contains('('))
        .map(|e| e.trim().to_string())
        .collect()
}

/// Every definition file in force, in the order later-wins: user dirs, then (only when
/// `trusted`) the project's `.claude/agents/`, `.ouro/agents/`, `agents/AGENT_<ID>.md` (name:
/// ID lowercased, `_`→`-`), and `*.agent.md` files at the project root.
/// A file that fails to parse is an Err naming it; it does not stop the others.
pub fn load_all(
    user_dirs: &[PathBuf],
    root: &Path,
    trusted: bool,
) -> Vec<Result<Parsed, SpecError>> {
    let mut dirs = user_dirs.to_vec();
    if trusted {
        dirs.push(root.join(".claude/agents"));
        dirs.push(root.join(".ouro/agents"));
    }
    let mut found: Vec<_> = dirs
        .iter()
        .flat_map(|dir| read_dir(root, dir, |file| file.ends_with(".md").then(|| stem(file))))
        .collect();
    if trusted {
        found.extend(read_dir(root, &root.join("agents"), |file| {
            let id = file.strip_prefix("AGENT_")?.strip_suffix(".md")?;
            (!id.is_empty()).then(|| persona_name(id))
        }));
        found.extend(read_dir(root, root, |file| {
            let name = file.strip_suffix(".agent.md")?;
            (!name.is_empty()).then(|| name.to_string())
        }));
    }
    found
}

/// Reads one file given by path (`ouro agent create NAME --from FILE`): the name defaults to
/// the file stem without `.agent`/`.md`.
pub fn load_file(path: &Path) -> Result<Parsed, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let name = path
        .file_name()
        .map(|file| stem(&file.to_string_lossy()))
        .unwrap_or_default();
    AgentSpec::parse(&text, &name, path)
}

/// The agent name of persona `AGENT_<ID>.md`: `CODE_REVIEWER` is `code-reviewer`.
pub(crate) fn persona_name(id: &str) -> String {
    id.to_ascii_lowercase().replace('_', "-")
}

/// `x.agent.md`, `x.md` and `x` all name agent `x`.
fn stem(file: &str) -> String {
    let stem = Path::new(file)
        .file_stem()
        .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned());
    match stem.strip_suffix(".agent") {
        Some(name) => name.to_string(),
        None => stem,
    }
}

/// The files of `dir` that `name_of` names (from the file name), in file-name order, each read
/// beneath `root`: a link out of the project is skipped, and named on stderr.
fn read_dir(
    root: &Path,
    dir: &Path,
    name_of: impl Fn(&str) -> Option<String>,
) -> Vec<Result<Parsed, SpecError>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(PathBuf, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let path = entry.path();
            let name = name_of(path.file_name()?.to_str()?)?;
            Some((path, name))
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|(path, name)| {
            let text = crate::sys::beneath::read_context(root, &path)?;
            Some(AgentSpec::parse(&text, &name, &path))
        })
        .collect()
}
