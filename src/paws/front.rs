//! The YAML front matter a cats or dogs bundle may start with (artifact schema v1): what a
//! bundle was made for (cats: the task, how its files were chosen) or by (dogs: the agent, its
//! turn, its confidence). It is read through `crate::frontmatter`, the crate's one YAML path;
//! only a block that names a `version` is a bundle's front matter, so a reply that opens with
//! a Markdown rule is read as before. PAWS's own tools read the block as prose: every line is
//! written as `key: value` with values double-quoted and escaped onto one line, so no line of
//! it can look like a file marker or a command to them.

use crate::frontmatter::{self, FrontMatterError};

/// The version ouro writes; it reads every `1.x`.
pub const VERSION: &str = "1.0";

/// How the files of a cats bundle were chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CurationMethod {
    /// Named on the command line.
    Manual,
    /// Ranked by a brain (`--ai-curate`).
    AiCurated,
}

impl CurationMethod {
    fn as_str(self) -> &'static str {
        match self {
            CurationMethod::Manual => "manual",
            CurationMethod::AiCurated => "ai_curated",
        }
    }
}

/// A cats bundle's front matter; the last three fields go under `metadata:`.
#[derive(Debug, Clone, PartialEq)]
pub struct CatsFront {
    pub task_description: String,
    pub source_session: Option<String>,
    pub curation_method: CurationMethod,
    /// The curator's own confidence (0 to 1) that its choice is what the task needs; `None`
    /// when it gave none.
    pub ai_curation_confidence: Option<f64>,
}

/// A dogs bundle's front matter (an agent run's change set); `agent_name` and
/// `confidence_score` go under `metadata:`. Absent fields are left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DogsFront {
    pub source_turn: Option<String>,
    pub agent_name: Option<String>,
    /// 0 to 1.
    pub confidence_score: Option<f64>,
}

/// Front matter as `ouro dogs` read it: the version it accepted, and what an agent's change
/// set says about itself (all `None` for a cats bundle's).
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub version: String,
    pub dogs: DogsFront,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrontError {
    #[error("the front matter is not valid YAML: {}", .0.message)]
    Yaml(FrontMatterError),
    #[error(
        "the bundle's front matter says version `{0}`, and this ouro reads version 1 bundles (1.x) only; update ouro, or ask for a version 1 bundle"
    )]
    Version(String),
    #[error("{field} is {value}; a confidence is a number from 0 to 1")]
    Confidence { field: &'static str, value: f64 },
}

impl FrontError {
    /// The line of the bundle the problem is on.
    pub fn line(&self) -> usize {
        match self {
            FrontError::Yaml(e) => usize::try_from(e.line).unwrap_or(usize::MAX),
            FrontError::Version(_) | FrontError::Confidence { .. } => 1,
        }
    }
}

impl CatsFront {
    /// The front matter block, `---` to `---`, each line ending in `\n`.
    pub fn to_yaml(&self) -> Result<String, FrontError> {
        let mut out = format!(
            "---\nversion: {}\ntask_description: {}\nmetadata:\n",
            quoted(VERSION),
            quoted(&self.task_description)
        );
        if let Some(session) = &self.source_session {
            out.push_str(&format!("  source_session: {}\n", quoted(session)));
        }
        out.push_str(&format!(
            "  curation_method: {}\n",
            self.curation_method.as_str()
        ));
        if let Some(c) = self.ai_curation_confidence {
            out.push_str(&format!(
                "  ai_curation_confidence: {}\n",
                confidence("ai_curation_confidence", c)?
            ));
        }
        out.push_str("---\n");
        Ok(out)
    }
}

impl DogsFront {
    /// The front matter block, `---` to `---`, each line ending in `\n`.
    pub fn to_yaml(&self) -> Result<String, FrontError> {
        let mut out = format!("---\nversion: {}\n", quoted(VERSION));
        if let Some(turn) = &self.source_turn {
            out.push_str(&format!("source_turn: {}\n", quoted(turn)));
        }
        if self.agent_name.is_some() || self.confidence_score.is_some() {
            out.push_str("metadata:\n");
        }
        if let Some(agent) = &self.agent_name {
            out.push_str(&format!("  agent_name: {}\n", quoted(agent)));
        }
        if let Some(c) = self.confidence_score {
            out.push_str(&format!(
                "  confidence_score: {}\n",
                confidence("confidence_score", c)?
            ));
        }
        out.push_str("---\n");
        Ok(out)
    }
}

/// `value` as YAML reads it back exactly; `Display` of a finite f64 never uses an exponent.
fn confidence(field: &'static str, value: f64) -> Result<String, FrontError> {
    if !(0.0..=1.0).contains(&value) {
        return Err(FrontError::Confidence { field, value });
    }
    Ok(value.to_string())
}

/// `text` as a YAML double-quoted scalar on one line: every character PAWS's `splitlines()`
/// breaks at, every control and every character YAML does not print is escaped.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control()
                || matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
                ) =>
            {
                out.push_str(&format!("\\u{:04X}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The front matter `bundle` starts with, and the byte where the rest starts; `None` when it
/// has none (no `---` block at the very start, or one that names no version: a Markdown rule
/// and prose). A block that names a version but is not YAML is an error, as is a version whose
/// major is not 1.
pub fn read(bundle: &[u8]) -> Result<Option<(Read, usize)>, FrontError> {
    if !bundle.starts_with(b"---\n") && !bundle.starts_with(b"---\r\n") {
        return Ok(None);
    }
    // The front matter is text even when a file further on is not: read the longest UTF-8
    // prefix.
    let text = match std::str::from_utf8(bundle) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&bundle[..e.valid_up_to()]).unwrap_or_default(),
    };
    let (fm, body) = match frontmatter::split(text) {
        Ok(split) => split,
        Err(e) if names_version(text) => return Err(FrontError::Yaml(e)),
        Err(_) => return Ok(None),
    };
    let Some(version) = fm.value("version") else {
        return Ok(None);
    };
    let version = scalar(version).unwrap_or_else(|| version.to_string());
    let major = version
        .split('.')
        .next()
        .and_then(|m| m.trim().parse::<u64>().ok());
    if major != Some(1) {
        return Err(FrontError::Version(version));
    }
    let metadata = fm.value("metadata");
    let field = |key: &str| metadata.and_then(|m| m.get(key));
    let dogs = DogsFront {
        source_turn: fm.text("source_turn"),
        agent_name: field("agent_name").and_then(scalar),
        confidence_score: field("confidence_score").and_then(serde_json::Value::as_f64),
    };
    Ok(Some((Read { version, dogs }, text.len() - body.len())))
}

/// A string or number as text.
fn scalar(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Whether the `---` block at the start has a `version:` line: one meant as a bundle's front
/// matter, whose YAML must then be right.
fn names_version(text: &str) -> bool {
    text.lines()
        .skip(1)
        .take_while(|l| l.trim_end() != "---")
        .any(|l| l.starts_with("version:"))
}

impl Read {
    /// One line for the user: the version and who made the change set.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(agent) = &self.dogs.agent_name {
            parts.push(format!("from agent {agent}"));
        }
        if let Some(turn) = &self.dogs.source_turn {
            parts.push(format!("turn {turn}"));
        }
        if let Some(c) = self.dogs.confidence_score {
            parts.push(format!("confidence {c}"));
        }
        let about = if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        };
        format!("a version {} bundle{about}", self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_and_no_line_of_it_is_structure() {
        let tricky = "fix \"it\"\\now\n🐕 --- DOGS_START_FILE: x ---\r\n@@ PAWS_CMD DELETE_FILE() @@\u{2028}🐕 --- DOGS_END_FILE: x ---\u{85}\u{b}\u{c}\u{1c}\u{7f}\u{feff}\t# Cats Bundle\n---";
        let front = DogsFront {
            source_turn: Some(tricky.into()),
            agent_name: Some("rev: iewer".into()),
            confidence_score: Some(0.25),
        };
        let yaml = front.to_yaml().unwrap();
        let bundle = format!("{yaml}rest");
        let (read, at) = read(bundle.as_bytes()).unwrap().unwrap();
        assert_eq!(read.version, "1.0");
        assert_eq!(read.dogs, front);
        assert_eq!(&bundle[at..], "rest");
        // PAWS reads the block as prose, line by line at every break `splitlines()` knows.
        let breaks = [
            '\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}',
        ];
        for line in yaml.split(|c| breaks.contains(&c) || c == '\u{2028}' || c == '\u{2029}') {
            assert!(
                line.is_empty() || line == "---" || line.contains(": ") || line == "metadata:",
                "{line:?}"
            );
            assert!(!line.trim_start().starts_with('🐕') && !line.trim_start().starts_with("@@"));
        }
        let cats = CatsFront {
            task_description: "a\nb".into(),
            source_session: None,
            curation_method: CurationMethod::AiCurated,
            ai_curation_confidence: Some(1.0),
        };
        assert_eq!(
            cats.to_yaml().unwrap(),
            "---\nversion: \"1.0\"\ntask_description: \"a\\nb\"\nmetadata:\n  curation_method: ai_curated\n  ai_curation_confidence: 1\n---\n"
        );
        let fm = frontmatter::split(&cats.to_yaml().unwrap()).unwrap().0;
        assert_eq!(fm.text("task_description").as_deref(), Some("a\nb"));
        let bad = DogsFront {
            confidence_score: Some(f64::NAN),
            ..DogsFront::default()
        };
        assert!(bad.to_yaml().is_err());
        assert_eq!(
            DogsFront::default().to_yaml().unwrap(),
            "---\nversion: \"1.0\"\n---\n"
        );
    }

    #[test]
    fn only_a_versioned_block_is_front_matter_and_only_version_1_is_read() {
        assert_eq!(read(b"no front matter").unwrap(), None);
        assert_eq!(read(b"---\nHere is the fix\n---\nbody").unwrap(), None);
        assert_eq!(read(b"---\ntitle: notes\n---\nbody").unwrap(), None);
        assert_eq!(read(b"---\nversion: 1.0\nnever closed").unwrap(), None);
        let (read_1, at) = read(b"---\r\nversion: 1.3\r\n---\r\nbody\xff")
            .unwrap()
            .unwrap();
        assert_eq!((read_1.version.as_str(), at), ("1.3", 24));
        assert!(read(b"---\nversion: 1\n---\n").unwrap().is_some());
        for bad in ["2.0", "\"0.9\"", "one", "\"\""] {
            let text = format!("---\nversion: {bad}\n---\n");
            let err = read(text.as_bytes()).unwrap_err();
            assert!(matches!(err, FrontError::Version(_)), "{bad}: {err}");
            assert!(err.to_string().contains("reads version 1 bundles"), "{err}");
        }
        let err = read(b"---\nversion: 1.0\nmetadata: [x\n---\n").unwrap_err();
        assert!(matches!(err, FrontError::Yaml(_)), "{err}");
    }
}
