//! Chirality personas: `agents/AGENT_<ID>.md` in a project, the same agent files the Agent
//! tool loads (one format, one loader), read strictly for a served session. Besides an agent
//! definition's keys a persona says what its sessions may never do (`disallowed_tools`), what
//! runs without asking (`auto_approve_tools`) and how long a turn may go (`max_turns`).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::spec::{self, AgentSpec, Parsed};
use crate::frontmatter;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Persona {
    /// `<ID>` of `AGENT_<ID>.md`.
    pub id: String,
    pub name: String,
    pub description: String,
    pub model: Option<String>,
    /// The tools offered; `None`: the brain's default set.
    pub tools: Option<Vec<String>>,
    pub disallowed_tools: Vec<String>,
    pub auto_approve_tools: Vec<String>,
    pub max_turns: Option<u32>,
    /// The front matter as written, for the GUI.
    pub(crate) front_matter: serde_json::Map<String, Value>,
    /// Keys this reader does not know, named with the file.
    pub(crate) warnings: Vec<String>,
    #[serde(skip)]
    pub prompt: String,
    #[serde(skip)]
    pub path: PathBuf,
}

/// The personas of `root` (sorted by id); a file that does not parse is an error naming it.
pub fn load_all(root: &Path) -> Vec<Result<Persona, String>> {
    let Ok(entries) = std::fs::read_dir(root.join("agents")) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| id_of(p).is_some())
        .collect();
    paths.sort();
    paths.iter().map(|p| load(root, p)).collect()
}

/// The persona `id` of `root` (`CODE_REVIEWER`, or its agent name `code-reviewer`).
pub fn find(root: &Path, id: &str) -> Result<Persona, String> {
    let wanted = id
        .trim_start_matches("AGENT_")
        .to_ascii_uppercase()
        .replace('-', "_");
    // An id names a file in `agents/`, never a path out of it.
    if wanted.is_empty()
        || !wanted
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(format!(
            "\"{id}\" is not a persona id: use the <ID> of agents/AGENT_<ID>.md (letters, digits, - and _)"
        ));
    }
    let path = root.join("agents").join(format!("AGENT_{wanted}.md"));
    if !path.is_file() {
        return Err(format!(
            "there is no persona \"{id}\": {} does not exist",
            path.display()
        ));
    }
    load(root, &path)
}

fn id_of(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let id = stem.strip_prefix("AGENT_")?;
    (path.extension()? == "md" && !id.is_empty()).then(|| id.to_string())
}

/// The persona in `path`, read beneath the project `root` (a link out of it is refused).
pub fn load(root: &Path, path: &Path) -> Result<Persona, String> {
    let shown = path.display();
    let text = crate::sys::beneath::read_text(root, path)
        .map_err(|e| format!("could not read {shown}: {e}"))?;
    let id = id_of(path).ok_or_else(|| format!("{shown} is not named AGENT_<ID>.md"))?;
    let Parsed { spec, warnings } =
        AgentSpec::parse(&text, &spec::persona_name(&id), path).map_err(|e| e.to_string())?;
    // The GUI shows the front matter as written; the parse above split it, so this does too.
    let front_matter = frontmatter::split(&text)
        .map(|(front, _)| front.fields.into_iter().collect())
        .unwrap_or_default();
    Ok(Persona {
        id,
        name: spec.name,
        description: spec.description,
        model: spec.model,
        tools: spec
            .tools
            .map(|tools| tools.into_iter().map(|t| t.name).collect()),
        disallowed_tools: spec.disallowed_tools,
        auto_approve_tools: spec.auto_approve_tools,
        max_turns: spec.max_turns,
        front_matter,
        warnings,
        prompt: spec.prompt,
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        std::fs::create_dir_all(dir.join("agents")).unwrap();
        let path = dir.join("agents").join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_persona_reads_its_rules_and_warns_of_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "AGENT_CODE_REVIEWER.md",
            "---\nname: reviewer\ndescription: Reviews\ntools: Read, Grep, Bash\ndisallowed_tools: [Write]\nauto_approve_tools:\n  - Bash(ls:*)\nmax_turns: 7\ncolor: blue\nmood: grumpy\n---\nYou review code.\n",
        );
        let p = find(dir.path(), "code-reviewer").unwrap();
        assert_eq!(p.id, "CODE_REVIEWER");
        assert_eq!(p.name, "reviewer");
        assert_eq!(
            p.tools.as_deref(),
            Some(&["Read".to_string(), "Grep".into(), "Bash".into()][..])
        );
        assert_eq!(p.disallowed_tools, ["Write"]);
        assert_eq!(p.auto_approve_tools, ["Bash(ls:*)"]);
        assert_eq!(p.max_turns, Some(7));
        assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
        assert!(p.warnings[0].contains("mood") && p.warnings[0].contains("AGENT_CODE_REVIEWER.md"));
        assert_eq!(p.prompt, "You review code.");
    }

    #[test]
    fn a_wrong_type_is_an_error_naming_the_file_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "AGENT_X.md",
            "---\nmax_turns: lots\n---\nbody\n",
        );
        let err = find(dir.path(), "X").unwrap_err();
        assert!(
            err.contains("AGENT_X.md") && err.contains("max_turns"),
            "{err}"
        );
        write(dir.path(), "AGENT_Y.md", "---\nmodel: [a, b]\n---\nbody\n");
        let err = find(dir.path(), "Y").unwrap_err();
        assert!(err.contains("model"), "{err}");
        assert!(
            find(dir.path(), "nobody")
                .unwrap_err()
                .contains("no persona")
        );
        assert_eq!(load_all(dir.path()).len(), 2);
        // An id is never a path: not through a folder named like a persona, not out of agents/.
        std::fs::create_dir_all(dir.path().join("agents/AGENT_X")).unwrap();
        std::fs::write(dir.path().join("ESCAPE.md"), "---\nname: e\n---\nbody\n").unwrap();
        for bad in ["X/../../ESCAPE", "../ESCAPE", "", "a.b"] {
            let err = find(dir.path(), bad).unwrap_err();
            assert!(err.contains("not a persona id"), "{bad}: {err}");
        }
    }
}
