//! The YAML front matter of Markdown definition files (commands, agents, skills, personas), read
//! by a YAML parser (`serde-saphyr`, maintained and written in Rust): nested blocks (an agent's
//! engine settings, hooks, MCP servers) come through as they are. Front matter that is not YAML
//! is an error naming its line in the file.

use std::collections::BTreeMap;

use serde_json::Value;

/// Front matter that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} of the front matter is not valid YAML: {message}")]
pub struct FrontMatterError {
    /// The line in the whole file (the opening `---` is line 1).
    pub line: u64,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct FrontMatter {
    pub fields: BTreeMap<String, Value>,
}

impl FrontMatter {
    /// A scalar as text (a list joined with `, `); `None` when absent, empty or a map.
    pub fn text(&self, key: &str) -> Option<String> {
        self.fields
            .get(key)
            .and_then(text_of)
            .filter(|t| !t.is_empty())
    }

    /// A list as its items' texts; text is split on commas (`tools: Read, Grep`).
    pub fn items(&self, key: &str) -> Option<Vec<String>> {
        match self.fields.get(key)? {
            Value::Array(items) => Some(items.iter().filter_map(text_of).collect()),
            Value::String(text) => Some(
                text.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect(),
            ),
            Value::Null | Value::Object(_) => None,
            scalar => text_of(scalar).map(|t| vec![t]),
        }
    }

    /// The value as the YAML gave it (nested blocks included).
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(text_of)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Value::Null | Value::Object(_) => None,
    }
}

/// Splits `text` into its front matter (empty when there is none) and the body after it.
pub fn split(text: &str) -> Result<(FrontMatter, &str), FrontMatterError> {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((FrontMatter::default(), text));
    };
    let Some(end) = find_closing(rest) else {
        return Ok((FrontMatter::default(), text));
    };
    let block = &rest[..end];
    let after = &rest[end..];
    let body = after.find('\n').map_or("", |i| &after[i + 1..]);
    Ok((parse(block)?, body))
}

/// [`split`] for a loader of many files: front matter that is not YAML is reported on stderr,
/// naming the file and line, and the file is skipped (`None`).
pub fn split_or_warn<'t>(text: &'t str, path: &std::path::Path) -> Option<(FrontMatter, &'t str)> {
    match split(text) {
        Ok(split) => Some(split),
        Err(e) => {
            eprintln!("ouro: {}: {e}; the file is skipped", path.display());
            None
        }
    }
}

/// Where the closing `---` line starts.
fn find_closing(rest: &str) -> Option<usize> {
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some(at);
        }
        at += line.len();
    }
    None
}

fn parse(block: &str) -> Result<FrontMatter, FrontMatterError> {
    if block.trim().is_empty() {
        return Ok(FrontMatter::default());
    }
    let value: Value = serde_saphyr::from_str(block).map_err(|e| FrontMatterError {
        // The block starts on the file's second line.
        line: e.location().map_or(1, |at| at.line()) + 1,
        message: first_line(&e.to_string()),
    })?;
    match value {
        Value::Object(map) => Ok(FrontMatter {
            fields: map.into_iter().collect(),
        }),
        Value::Null => Ok(FrontMatter::default()),
        _ => Err(FrontMatterError {
            line: 2,
            message: "it is not a map of keys and values".into(),
        }),
    }
}

/// The parser's message without the source excerpt it may append.
fn first_line(message: &str) -> String {
    message
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_claude_code_style_front_matter() {
        let text = "---\nname: code-reviewer\ndescription: \"Reviews code: finds bugs\"\ntools: Read, Grep, Glob\nmodel: sonnet\ncolor: blue\n---\nYou review code.\n";
        let (fm, body) = split(text).unwrap();
        assert_eq!(fm.text("name").as_deref(), Some("code-reviewer"));
        assert_eq!(
            fm.text("description").as_deref(),
            Some("Reviews code: finds bugs")
        );
        assert_eq!(
            fm.items("tools"),
            Some(vec!["Read".into(), "Grep".into(), "Glob".into()])
        );
        assert_eq!(body, "You review code.\n");
    }

    #[test]
    fn lists_block_scalars_nested_blocks_and_missing_front_matter() {
        let text = "---\ntools:\n  - Read\n  - 'Bash(git log:*)'\nallowed: [Read, Write]\ndescription: >\n  Two lines\n  folded.\nmaxTurns: 5\nengine:\n  model: haiku\n  max_cost_usd: 0.5\n---\nbody";
        let (fm, body) = split(text).unwrap();
        assert_eq!(
            fm.items("tools"),
            Some(vec!["Read".into(), "Bash(git log:*)".into()])
        );
        assert_eq!(
            fm.items("allowed"),
            Some(vec!["Read".into(), "Write".into()])
        );
        assert_eq!(
            fm.text("description").as_deref(),
            Some("Two lines folded.\n")
        );
        assert_eq!(fm.text("maxTurns").as_deref(), Some("5"));
        assert!(fm.text("engine").is_none());
        assert_eq!(
            fm.value("engine"),
            Some(&json!({"model": "haiku", "max_cost_usd": 0.5}))
        );
        assert_eq!(body, "body");
        let (fm, body) = split("no front matter\n").unwrap();
        assert!(fm.fields.is_empty());
        assert_eq!(body, "no front matter\n");
        let (fm, body) = split("---\nname: x\nnever closed").unwrap();
        assert!(fm.fields.is_empty());
        assert_eq!(body, "---\nname: x\nnever closed");
        let (fm, body) = split("---\n---\nonly a body").unwrap();
        assert!(fm.fields.is_empty());
        assert_eq!(body, "only a body");
    }

    #[test]
    fn front_matter_that_is_not_yaml_names_its_line_in_the_file() {
        let err = split("---\nname: x\ntools: [Read, Grep\nmodel: haiku\n---\nbody").unwrap_err();
        assert!((3..=5).contains(&err.line), "{err}");
        let err = split("---\nname: x\n  bad: indent: here\n---\n").unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        assert!(err.to_string().starts_with("line 3 of the front matter"));
        let err = split("---\n- a list\n---\n").unwrap_err();
        assert!(err.message.contains("not a map"), "{err}");
    }
}
