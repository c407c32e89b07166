//! Agent definitions: who a sub-agent is (its system prompt), what it may use (its tools) and
//! which model it runs on. Built-ins `general-purpose` and `explore`; Markdown files with
//! front matter in `~/.ouro/agents/`, `~/.claude/agents/`, `.ouro/agents/`, `.claude/agents/`,
//! the Chirality persona files `agents/AGENT_<NAME>.md`; and `--agents <json>`. Later sources
//! replace earlier ones of the same name; a project's files count only once it is trusted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Tools that only read: an agent limited to them may run beside others.
pub(crate) const READ_ONLY_TOOLS: &[&str] = &["Glob", "Grep", "Read"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDef {
    pub name: String,
    /// When the model should use it (shown in the Agent tool's description).
    pub description: String,
    /// Tool names it may use; `None`: every tool of the session except Agent.
    pub tools: Option<Vec<String>>,
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

    /// From a Markdown file: front matter `name`, `description`, `tools`, `model`; the body is
    /// the prompt. `fallback_name` is used when the front matter has no name.
    /// Front matter that is not YAML is reported, naming `source` and the line.
    pub(crate) fn from_markdown(
        text: &str,
        fallback_name: &str,
        source: String,
    ) -> Option<AgentDef> {
        let (front, body) = crate::frontmatter::split_or_warn(text, Path::new(&source))?;
        let name = front
            .text("name")
            .unwrap_or_else(|| fallback_name.to_string());
        if !valid_name(&name) || body.trim().is_empty() {
            return None;
        }
        let tools = front
            .items("tools")
            .or_else(|| front.items("allowed-tools"))
            .or_else(|| front.items("allowed_tools"))
            .map(|tools| tools.into_iter().map(|t| tool_name(&t)).collect());
        Some(AgentDef {
            description: front
                .text("description")
                .unwrap_or_else(|| format!("The {name} agent")),
            name,
            tools,
            model: front.text("model").filter(|m| m != "inherit"),
            prompt: body.trim().to_string(),
            source,
        })
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
            model: None,
            prompt: include_str!("../../prompts/agent-explore.md").trim().into(),
            source: "built-in".into(),
        },
    ]
}

/// `--agents`: `{"name": {"description", "prompt", "tools"?, "model"?}}`, as Claude Code.
#[derive(Debug, Deserialize)]
struct FlagAgent {
    description: String,
    prompt: String,
    #[serde(default)]
    tools: Option<Vec<String>>,
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
                model: a.model.filter(|m| m != "inherit"),
                prompt: a.prompt,
                source: "--agents".into(),
            })
        })
        .collect()
}

/// Every definition in force: built-ins, the user's (`user_dirs`), the project's (when
/// `trusted`), then `flag`'s. Files that cannot be read or have no body are skipped.
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
    let mut dirs = user_dirs.to_vec();
    if trusted {
        dirs.push(root.join(".claude/agents"));
        dirs.push(root.join(".ouro/agents"));
    }
    for dir in dirs {
        for def in read_dir(root, &dir, |_| true, |stem| stem.to_string()) {
            by_name.insert(def.name.clone(), def);
        }
    }
    if trusted {
        let personas = read_dir(
            root,
            &root.join("agents"),
            |stem| stem.starts_with("AGENT_"),
            |stem| {
                stem.trim_start_matches("AGENT_")
                    .to_ascii_lowercase()
                    .replace('_', "-")
            },
        );
        for def in personas {
            by_name.insert(def.name.clone(), def);
        }
    }
    for def in flag {
        by_name.insert(def.name.clone(), def);
    }
    by_name.into_values().collect()
}

/// The definitions in `dir`, each read beneath `root` (a link out of the project is skipped).
fn read_dir(
    root: &Path,
    dir: &Path,
    wanted: impl Fn(&str) -> bool,
    name_of: impl Fn(&str) -> String,
) -> Vec<AgentDef> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let stem = path.file_stem()?.to_str()?;
            if !wanted(stem) {
                return None;
            }
            let text = crate::sys::beneath::read_context(root, &path)?;
            AgentDef::from_markdown(&text, &name_of(stem), path.display().to_string())
        })
        .collect()
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
