//! The YAML front matter of Markdown definition files (commands, agents, skills), as Claude
//! Code writes them: `key: value` pairs, quoted or plain, lists inline (`[a, b]`), as `- item`
//! lines or comma-separated, and `|` / `>` block scalars. Nested maps are not needed by any
//! of those files, so they are skipped rather than misread.

use std::collections::BTreeMap;

/// One value of the front matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    Text(String),
    List(Vec<String>),
}

impl Field {
    /// The value as a list: a list as is, text split on commas (`tools: Read, Grep`).
    pub fn items(&self) -> Vec<String> {
        match self {
            Field::List(items) => items.clone(),
            Field::Text(text) => text
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }

    pub fn text(&self) -> String {
        match self {
            Field::Text(text) => text.clone(),
            Field::List(items) => items.join(", "),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontMatter {
    pub fields: BTreeMap<String, Field>,
}

impl FrontMatter {
    pub fn text(&self, key: &str) -> Option<String> {
        self.fields
            .get(key)
            .map(Field::text)
            .filter(|t| !t.is_empty())
    }

    pub fn items(&self, key: &str) -> Option<Vec<String>> {
        self.fields.get(key).map(Field::items)
    }
}

/// Splits `text` into its front matter (empty when there is none) and the body after it.
pub fn split(text: &str) -> (FrontMatter, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (FrontMatter::default(), text);
    };
    let Some(end) = find_closing(rest) else {
        return (FrontMatter::default(), text);
    };
    let block = &rest[..end];
    let after = &rest[end..];
    let body = after.find('\n').map_or("", |i| &after[i + 1..]);
    (parse(block), body)
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

fn parse(block: &str) -> FrontMatter {
    let mut fields = BTreeMap::new();
    let lines: Vec<&str> = block.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.starts_with([' ', '\t']) || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim().to_string();
        let value = value.trim();
        // The indented lines that follow belong to this key.
        let start = i;
        while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
            i += 1;
        }
        let nested = &lines[start..i];
        let field = match value {
            "|" | "|-" | ">" | ">-" => {
                let joiner = if value.starts_with('|') { "\n" } else { " " };
                let text: Vec<&str> = nested.iter().map(|l| l.trim()).collect();
                Field::Text(text.join(joiner).trim().to_string())
            }
            "" => {
                let items: Vec<String> = nested
                    .iter()
                    .filter_map(|l| l.trim().strip_prefix("- "))
                    .map(|item| unquote(item.trim()))
                    .collect();
                if items.is_empty() {
                    continue;
                }
                Field::List(items)
            }
            inline if inline.starts_with('[') && inline.ends_with(']') => Field::List(
                inline[1..inline.len() - 1]
                    .split(',')
                    .map(|s| unquote(s.trim()))
                    .filter(|s| !s.is_empty())
                    .collect(),
            ),
            plain => Field::Text(unquote(plain)),
        };
        fields.insert(key, field);
    }
    FrontMatter { fields }
}

fn unquote(value: &str) -> String {
    for quote in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            return value[1..value.len() - 1].to_string();
        }
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_claude_code_style_front_matter() {
        let text = "---\nname: code-reviewer\ndescription: \"Reviews code: finds bugs\"\ntools: Read, Grep, Glob\nmodel: sonnet\ncolor: blue\n---\nYou review code.\n";
        let (fm, body) = split(text);
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
    fn lists_block_scalars_and_missing_front_matter() {
        let text = "---\ntools:\n  - Read\n  - 'Bash(git log:*)'\nallowed: [Read, Write]\ndescription: >\n  Two lines\n  folded.\nnested:\n  key: value\n---\nbody";
        let (fm, body) = split(text);
        assert_eq!(
            fm.items("tools"),
            Some(vec!["Read".into(), "Bash(git log:*)".into()])
        );
        assert_eq!(
            fm.items("allowed"),
            Some(vec!["Read".into(), "Write".into()])
        );
        assert_eq!(fm.text("description").as_deref(), Some("Two lines folded."));
        assert!(fm.text("nested").is_none());
        assert_eq!(body, "body");
        let (fm, body) = split("no front matter\n");
        assert!(fm.fields.is_empty());
        assert_eq!(body, "no front matter\n");
        let (fm, body) = split("---\nname: x\nnever closed");
        assert!(fm.fields.is_empty());
        assert_eq!(body, "---\nname: x\nnever closed");
    }
}
