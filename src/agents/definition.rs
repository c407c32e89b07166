//! Agent definitions: who a sub-agent is (its system prompt), what it may use (its tools) and
//! which model it runs on. Built-ins `general-purpose` and `explore`; Markdown files with
//! front matter in `~/.ouro/agents/`, `~/.claude/agents/`, `.ouro/agents/`, `.claude/agents/`,
//! the Chirality persona files `agents/AGENT_<NAME>.md`, `*.agent.md` at the project root (all
//! read by [`spec`]); and `--agents <json>`. Later sources replace earlier ones of the same
//! name; a project's files count only once it is trusted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::spec::{self, AgentSpec, Parsed, SpecError};

/// Tools that only read: an agent limited to them may run beside others.
pub(crate) const READ_ONLY_TOOLS: &[&str] = &["Glob", "Grep", "Read"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDef {
    pub name: String,
    /// When the model should use it (shown in the Agent tool's description).
    pub description: String,
    /// Tool names it may use; `None`: every tool of the session except Agent.
    pub tools: Option<Vec<String>>,
    /// Tool names it may not use, whatever `tools` says (`disallowedTools`).
    pub disallowed: Vec<String>,
    /// A model or alias; `None` or `inherit`: the session's model.
    pub model: Option<String>,
    /// Its system prompt.
    pub prompt: String,
    /// Where it was defined, for `/agents`.
    pub source: String,
}

impl AgentDef {
    /// Whether every tool it may use only reads, so several can run at once.
    pub fn is_read_only(&self) -> bool {
        self.tools
            .as_ref()
            .is_some_and(|tools| tools.iter().all(|t| READ_ONLY_TOOLS.contains(&t.as_str())))
    }

    /// From the text of an agent file (see [`AgentSpec`]); `fallback_name` is used when the
    /// front matter has no name. A file that is not a usable definition is `None`, with the
    /// reason on stderr and in the log.
    pub fn from_markdown(text: &str, fallback_name: &str, source: String) -> Option<AgentDef> {
        usable(AgentSpec::parse(text, fallback_name, Path::new(&source)))
    }
}

/// The definition in a file read, or `None` with why it is skipped: a broken file in a folder
/// of agents must not take the others down with it.
fn usable(parsed: Result<Parsed, SpecError>) -> Option<AgentDef> {
    match parsed {
        Ok(Parsed { spec, warnings }) => {
            for warning in warnings {
                tracing::warn!("{warning}");
            }
            Some(spec.to_def())
        }
        Err(e) => {
            eprintln!("ouro: {e}; the agent is skipped");
            tracing::warn!(error = %e, "an agent file is skipped");
            None
        }
    }
}

/// `Bash(git log:*)` in a tool list names the Bash tool; the rule part is for permissions.
fn tool_name(entry: &str) -> String {
    entry
        .split_once('(')
        .map_or(entry, |(name, _)| name)
        .trim()
        .to_string()
}

fn valid_name(name: &str) -> bool {
    crate::text::is_plain_name(name)
}

pub(crate) fn builtins() -> Vec<AgentDef> {
    vec![
        AgentDef {
            name: "general-purpose".into(),
            description: "A general-purpose agent for researching complex questions, searching \
                          for code and running multi-step tasks with every tool of the session. \
                          Use it when a search may take several tries."
                .into(),
            tools: None,
            disallowed: Vec::new(),
            model: None,
            prompt: include_str!("../../prompts/agent-general.md").trim().into(),
            source: "built-in".into(),
        },
        AgentDef {
            name: "explore".into(),
            description: "A fast, read-only agent for exploring a codebase: finding files by \
                          pattern, searching code for keywords, answering questions about how \
                          it works. Several can run at once."
                .into(),
            tools: Some(READ_ONLY_TOOLS.iter().map(|t| t.to_string()).collect()),
            disallowed: Vec::new(),
            model: None,
            prompt: include_str!("../../prompts/agent-explore.md").trim().into(),
            source: "built-in".into(),
        },
    ]
}

/// `--agents`: `{"name": {"description", "prompt", "tools"?, "disallowedTools"?, "model"?}}`,
/// as Claude Code.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FlagAgent {
    description: String,
    prompt: String,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    disallowed_tools: Vec<String>,
    #[serde(default)]
    model: Option<String>,
}

pub fn from_flag(json: &str) -> Result<Vec<AgentDef>, String> {
    let parsed: BTreeMap<String, FlagAgent> = serde_json::from_str(json).map_err(|e| {
        format!(
            "--agents takes JSON like {{\"name\": {{\"description\": \"…\", \"prompt\": \"…\"}}}}: {e}"
        )
    })?;
    parsed
        .into_iter()
        .map(|(name, a)| {
            if !valid_name(&name) {
                return Err(format!(
                    "--agents: \"{name}\" is not a valid agent name (letters, digits, - and _)"
                ));
            }
            Ok(AgentDef {
                name,
                description: a.description,
                tools: a
                    .tools
                    .map(|tools| tools.iter().map(|t| tool_name(t)).collect()),
                disallowed: spec::whole_tools(&a.disallowed_tools),
                model: a.model.filter(|m| m != "inherit"),
                prompt: a.prompt,
                source: "--agents".into(),
            })
        })
        .collect()
}

/// Every definition in force: built-ins, the files of [`spec::load_all`] (the user's
/// `user_dirs`, the project's when `trusted`), then `flag`'s. A file that does not load is
/// skipped and named on stderr.
pub fn load(
    user_dirs: &[PathBuf],
    root: &Path,
    trusted: bool,
    flag: Vec<AgentDef>,
) -> Vec<AgentDef> {
    let mut by_name: BTreeMap<String, AgentDef> = builtins()
        .into_iter()
        .map(|a| (a.name.clone(), a))
        .collect();
    for def in spec::load_all(user_dirs, root, trusted)
        .into_iter()
        .filter_map(usable)
    {
        by_name.insert(def.name.clone(), def);
    }
    for def in flag {
        by_name.insert(def.name.clone(), def);
    }
    by_name.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_definitions_and_read_only_agents() {
        let def = AgentDef::from_markdown(
            "---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Grep, Bash(git diff:*)\nmodel: haiku\n---\nYou review.\n",
            "file",
            "x".into(),
        )
        .unwrap();
        assert_eq!(def.name, "reviewer");
        assert_eq!(
            def.tools,
            Some(vec!["Read".into(), "Grep".into(), "Bash".into()])
        );
        assert_eq!(def.model.as_deref(), Some("haiku"));
        assert_eq!(def.prompt, "You review.");
        assert!(!def.is_read_only());
        let explore = builtins()
            .into_iter()
            .find(|a| a.name == "explore")
            .unwrap();
        assert!(explore.is_read_only());
        let general = builtins().remove(0);
        assert!(!general.is_read_only(), "all tools: not read-only");
        assert!(AgentDef::from_markdown("---\nname: x\n---\n", "x", "x".into()).is_none());
        assert!(AgentDef::from_markdown("body", "bad name", "x".into()).is_none());
    }

    #[test]
    fn sources_layer_and_the_project_needs_trust() {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let write = |dir: &Path, file: &str, text: &str| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(file), text).unwrap();
        };
        write(&home.path().join(".ouro/agents"), "mine.md", "Mine.");
        write(
            &root.path().join(".claude/agents"),
            "proj.md",
            "---\ndescription: project\n---\nProject.",
        );
        write(
            &root.path().join("agents"),
            "AGENT_CODE_REVIEWER.md",
            "---\ntools: [Read]\nmodel: opus\n---\nPersona.",
        );
        let names = |defs: &[AgentDef]| defs.iter().map(|d| d.name.clone()).collect::<Vec<_>>();
        let untrusted = load(
            &[home.path().join(".ouro/agents")],
            root.path(),
            false,
            Vec::new(),
        );
        assert_eq!(names(&untrusted), ["explore", "general-purpose", "mine"]);
        let flag = from_flag(r#"{"mine": {"description": "flag", "prompt": "Flag."}}"#).unwrap();
        let trusted = load(&[home.path().join(".ouro/agents")], root.path(), true, flag);
        assert_eq!(
            names(&trusted),
            [
                "code-reviewer",
                "explore",
                "general-purpose",
                "mine",
                "proj"
            ]
        );
        let persona = trusted.iter().find(|d| d.name == "code-reviewer").unwrap();
        assert_eq!(persona.tools, Some(vec!["Read".to_string()]));
        assert!(persona.is_read_only());
        let mine = trusted.iter().find(|d| d.name == "mine").unwrap();
        assert_eq!(
            (mine.prompt.as_str(), mine.source.as_str()),
            ("Flag.", "--agents")
        );
        assert!(
            from_flag("[1]")
                .unwrap_err()
                .contains("--agents takes JSON")
        );
    }
}
