//! Output styles, as Claude Code has them: `default`, the built-in `Explanatory` and
//! `Learning`, and Markdown files in `output-styles/` (the user's `~/.claude/` and
//! `~/.ouro/`, the project's `.claude/` and `.ouro/` once it is trusted) whose body joins the
//! system prompt. A style replaces ouro's coding instructions unless its front matter says
//! `keep-coding-instructions: true` (the built-in ones keep them). The `outputStyle` setting
//! picks one; `/output-style` lists them and sets it.

use std::path::Path;

use crate::engine::prompt::SYSTEM;

const EXPLANATORY: &str = include_str!("../../prompts/output-style-explanatory.md");
const LEARNING: &str = include_str!("../../prompts/output-style-learning.md");

/// The name of ouro's own behaviour: no style text at all.
pub const DEFAULT: &str = "default";

#[derive(Debug, Clone, PartialEq)]
pub struct OutputStyle {
    pub name: String,
    pub description: String,
    /// What joins the system prompt.
    pub prompt: String,
    pub keep_coding_instructions: bool,
    /// The file it came from; `None` for a built-in one.
    pub source: Option<std::path::PathBuf>,
}

/// Every style `root` sees: the built-in ones, then the files (a file named like a built-in
/// style, or like an earlier file, takes its place).
pub fn all(root: &Path, trusted: bool) -> Vec<OutputStyle> {
    let builtin = |name: &str, description: &str, prompt: &str| OutputStyle {
        name: name.into(),
        description: description.into(),
        prompt: prompt.into(),
        keep_coding_instructions: true,
        source: None,
    };
    let mut styles = vec![
        builtin(DEFAULT, "ouro's own: do the task, briefly", ""),
        builtin(
            "Explanatory",
            "Explains the choices it makes and the codebase's patterns",
            EXPLANATORY,
        ),
        builtin(
            "Learning",
            "Explains, and asks you to write small pieces yourself",
            LEARNING,
        ),
    ];
    let mut dirs = crate::settings::user_dirs("output-styles");
    if trusted {
        dirs.push(root.join(".claude/output-styles"));
        dirs.push(root.join(".ouro/output-styles"));
    }
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<_> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        files.sort();
        for file in files {
            let Some(style) = read(root, &file) else {
                continue;
            };
            styles.retain(|s| !s.name.eq_ignore_ascii_case(&style.name));
            styles.push(style);
        }
    }
    styles
}

fn read(root: &Path, file: &Path) -> Option<OutputStyle> {
    // A project's file is read beneath the project (a link leading out is skipped).
    let text = if file.starts_with(root) {
        crate::sys::beneath::read_context(root, file)?
    } else {
        std::fs::read_to_string(file).ok()?
    };
    let (front, body) = crate::frontmatter::split_or_warn(&text, file)?;
    let stem = file.file_stem()?.to_string_lossy().into_owned();
    Some(OutputStyle {
        name: front.text("name").unwrap_or(stem),
        description: front.text("description").unwrap_or_default(),
        prompt: body.trim().to_string(),
        keep_coding_instructions: front
            .value("keep-coding-instructions")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
        source: Some(file.to_path_buf()),
    })
}

/// The style named `name` (any case) among `styles`.
pub fn find<'s>(styles: &'s [OutputStyle], name: &str) -> Option<&'s OutputStyle> {
    styles.iter().find(|s| s.name.eq_ignore_ascii_case(name))
}

/// The style the `outputStyle` setting names, or the default (said when it names none).
pub fn in_force<'s>(styles: &'s [OutputStyle], name: Option<&str>) -> &'s OutputStyle {
    let default = || find(styles, DEFAULT);
    let named = name.and_then(|name| {
        let found = find(styles, name);
        if found.is_none() {
            let names: Vec<&str> = styles.iter().map(|s| s.name.as_str()).collect();
            eprintln!(
                "ouro: the output style {name:?} (outputStyle) is not known, so the default is used; the styles are: {}",
                names.join(", ")
            );
        }
        found
    });
    match named.or_else(default) {
        Some(style) => style,
        None => &styles[0],
    }
}

/// What `style` makes of the system prompt: ouro's own instructions to use in place of the
/// whole default (`None`: keep it), and the text to append.
pub fn prompt_parts(style: &OutputStyle) -> (Option<String>, Option<String>) {
    if style.name == DEFAULT || style.prompt.trim().is_empty() {
        return (None, None);
    }
    let replace = (!style.keep_coding_instructions).then(|| without_coding_sections(SYSTEM));
    let append = format!("# Output style: {}\n{}", style.name, style.prompt.trim());
    (replace, Some(append))
}

/// The system prompt's replacement and appended text for a session of `options` in `style`:
/// `--system-prompt` wins over what the style replaces, and `--append-system-prompt` follows
/// the style's text.
pub fn with_flags(
    style: &OutputStyle,
    options: &super::Options,
) -> (Option<String>, Option<String>) {
    let (replace, text) = prompt_parts(style);
    let append = match (text, options.append_system_prompt.clone()) {
        (Some(text), Some(given)) => Some(format!("{text}\n\n{given}")),
        (text, given) => text.or(given),
    };
    (options.system_prompt.clone().or(replace), append)
}

/// ouro's instructions less the sections about how to write code, which a style that does not
/// keep them stands in for.
fn without_coding_sections(system: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in system.lines() {
        if let Some(title) = line.strip_prefix("# ") {
            skipping = title.trim() == "How to work";
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_styles_and_files_the_project_brings_once_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let styles_dir = dir.path().join(".claude/output-styles");
        std::fs::create_dir_all(&styles_dir).unwrap();
        std::fs::write(
            styles_dir.join("terse.md"),
            "---\ndescription: Very short\n---\nAnswer in one line.\n",
        )
        .unwrap();
        let untrusted = all(dir.path(), false);
        assert!(find(&untrusted, "terse").is_none());
        assert!(find(&untrusted, "explanatory").is_some());
        let trusted = all(dir.path(), true);
        let terse = find(&trusted, "TERSE").unwrap();
        assert_eq!(terse.description, "Very short");
        assert!(!terse.keep_coding_instructions);
        let (replace, append) = prompt_parts(terse);
        let replace = replace.unwrap();
        assert!(!replace.contains("# How to work"), "{replace}");
        assert!(replace.contains("# Safety"), "{replace}");
        assert!(append.unwrap().contains("Answer in one line."));
        let learning = find(&trusted, "Learning").unwrap();
        assert_eq!(
            prompt_parts(learning).0,
            None,
            "built-in styles keep coding"
        );
        assert_eq!(
            prompt_parts(find(&trusted, "default").unwrap()),
            (None, None)
        );
    }
}
