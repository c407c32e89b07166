//! Edit: exact string replacement in a file the model has read, written atomically.

use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

use super::file_state::{FileState, content_hash};
use super::paths;
use super::{Progress, Tool, ToolContext, ToolError, ToolOutput};
use crate::event::ToolDisplay;
use crate::permissions::Access;

/// Diff lines shown after an edit; the model knows what it changed, this is a confirmation.
/// Line numbers listed when old_string is ambiguous.
const MAX_LISTED_OCCURRENCES: usize = 10;

pub struct EditTool;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct EditInput {
    /// The absolute path of the file to change.
    pub file_path: String,
    /// The exact text to replace, including indentation. Empty only to create a new file.
    pub old_string: String,
    /// The text to put in its place; must differ from old_string.
    pub new_string: String,
    /// Replace every occurrence of old_string instead of requiring it to be unique.
    #[serde(default)]
    pub(crate) replace_all: bool,
}

/// A checked edit, ready to be written.
struct Plan {
    /// The path as the model gave it; FileState is recorded under it.
    path: PathBuf,
    /// Where the bytes go: the final target of any symlink.
    target: PathBuf,
    /// `None` when the edit creates the file.
    old: Option<String>,
    new: String,
    replaced: usize,
}

impl Tool for EditTool {
    type Input = EditInput;

    const NAME: &'static str = "Edit";

    fn description(&self) -> &'static str {
        include_str!("../../tools/Edit.md")
    }

    fn validate(&self, input: &EditInput, ctx: &ToolContext) -> Result<(), String> {
        let path = paths::absolute(&input.file_path, ctx)?;
        if !paths::may_inspect(&path, ctx) {
            return Ok(());
        }
        plan(input, ctx).map(|_| ()).map_err(|e| e.to_string())
    }

    fn access(&self, input: &EditInput, ctx: &ToolContext) -> Access {
        Access::Write(ctx.current_dir().join(&input.file_path))
    }

    fn summary(&self, input: &EditInput) -> String {
        input.file_path.clone()
    }

    fn preview(&self, input: &EditInput, ctx: &ToolContext) -> Option<String> {
        let path = paths::absolute(&input.file_path, ctx).ok()?;
        if !paths::may_inspect(&path, ctx) {
            return None;
        }
        let plan = plan(input, ctx).ok()?;
        Some(super::diff::excerpt(
            plan.old.as_deref().unwrap_or(""),
            &plan.new,
        ))
    }

    async fn call(
        &self,
        input: EditInput,
        ctx: &ToolContext,
        _progress: &Progress,
    ) -> Result<ToolOutput, ToolError> {
        let ctx = ctx.clone();
        paths::blocking(move || {
            let plan = plan(&input, &ctx)?;
            apply(plan, &ctx)
        })
        .await
    }
}

fn plan(input: &EditInput, ctx: &ToolContext) -> Result<Plan, ToolError> {
    let path = paths::absolute(&input.file_path, ctx).map_err(ToolError::Invalid)?;
    if input.old_string == input.new_string {
        return Err(ToolError::Invalid(
            "old_string and new_string are identical, so there is nothing to change. Give the \
             new text in new_string."
                .into(),
        ));
    }
    let target = paths::resolve_symlinks(&path)
        .map_err(|e| ToolError::io(format!("cannot resolve {}", path.display()), e))?;
    let meta = match fs::metadata(&target) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return plan_creation(input, path, target);
        }
        Err(e) => {
            return Err(ToolError::io(
                format!("cannot access {}", path.display()),
                e,
            ));
        }
    };
    if meta.is_dir() {
        return Err(ToolError::Invalid(format!(
            "{} is a directory; Edit changes files.",
            path.display()
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::Invalid(paths::special_file_message(&path)));
    }
    let bytes = crate::sys::beneath::read_all(&ctx.project_root, &target)
        .map_err(|e| ToolError::io(format!("cannot read {}", path.display()), e))?;
    check_fresh(ctx, &path, &meta, &bytes)?;
    paths::ensure_writable(&path, &meta).map_err(ToolError::Invalid)?;
    let content = String::from_utf8(bytes).map_err(|_| {
        ToolError::Invalid(format!(
            "{} is not valid UTF-8 text, so Edit cannot change it safely. Use Bash if it must \
             be changed.",
            path.display()
        ))
    })?;
    let (new, replaced) = if input.old_string.is_empty() {
        if !content.is_empty() {
            return Err(ToolError::Invalid(format!(
                "old_string is empty, which only creates a new file or fills an empty one, but \
                 {} already has content. Put the text to replace in old_string, or use Write to \
                 replace the whole file.",
                path.display()
            )));
        }
        (input.new_string.clone(), 1)
    } else {
        replace(&content, input, &path)?
    };
    Ok(Plan {
        path,
        target,
        old: Some(content),
        new,
        replaced,
    })
}

fn plan_creation(input: &EditInput, path: PathBuf, target: PathBuf) -> Result<Plan, ToolError> {
    if !input.old_string.is_empty() {
        return Err(ToolError::Invalid(format!(
            "{} To create a new file, use Write or an Edit with an empty old_string.",
            paths::missing_file_message(&path)
        )));
    }
    Ok(Plan {
        path,
        target,
        old: None,
        new: input.new_string.clone(),
        replaced: 1,
    })
}

fn check_fresh(
    ctx: &ToolContext,
    path: &Path,
    meta: &Metadata,
    bytes: &[u8],
) -> Result<(), ToolError> {
    let fresh = ctx
        .files
        .check_fresh(path, meta, || Ok::<_, ToolError>(content_hash(bytes)))?;
    fresh.map_err(|staleness| ToolError::Invalid(staleness.message(path, "edit")))
}

/// Applies the replacement; in a CRLF file the model's `\n` stands for `\r\n`.
fn replace(content: &str, input: &EditInput, path: &Path) -> Result<(String, usize), ToolError> {
    let crlf = uses_crlf(content);
    let mut candidates = vec![(input.old_string.clone(), input.new_string.clone())];
    if crlf {
        let new = to_crlf(&input.new_string);
        let old = to_crlf(&input.old_string);
        // A file with mixed endings may hold the model's text with bare `\n`; try that second.
        candidates = if old == input.old_string {
            vec![(old, new)]
        } else {
            vec![(old, new.clone()), (input.old_string.clone(), new)]
        };
    }
    for (old, new) in &candidates {
        let count = content.matches(old.as_str()).count();
        match count {
            0 => continue,
            1 => return Ok((content.replacen(old.as_str(), new, 1), 1)),
            n if input.replace_all => return Ok((content.replace(old.as_str(), new), n)),
            n => {
                return Err(ToolError::Invalid(format!(
                    "old_string occurs {n} times in {} (at lines {}). Include more surrounding \
                     lines to make it unique, or set replace_all to true to change every \
                     occurrence.",
                    path.display(),
                    occurrence_lines(content, old)
                )));
            }
        }
    }
    Err(ToolError::Invalid(not_found_message(
        content,
        &input.old_string,
        path,
    )))
}

/// A file is CRLF when its first line ending is; that is what editors detect too.
fn uses_crlf(content: &str) -> bool {
    content
        .find('\n')
        .is_some_and(|i| i > 0 && content.as_bytes()[i - 1] == b'\r')
}

fn to_crlf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\n', "\r\n")
}

fn occurrence_lines(content: &str, needle: &str) -> String {
    let mut lines = Vec::new();
    let mut line = 1;
    let mut scanned = 0;
    for (at, _) in content.match_indices(needle).take(MAX_LISTED_OCCURRENCES) {
        line += content[scanned..at].matches('\n').count();
        scanned = at;
        lines.push(line.to_string());
    }
    lines.join(", ")
}

fn not_found_message(content: &str, old: &str, path: &Path) -> String {
    let mut message = format!("old_string was not found in {}.", path.display());
    if old.lines().all(has_line_number_prefix) {
        message.push_str(
            " It looks like it includes the line-number prefixes of Read's output (`12\\t`); \
             pass only the text after the tab.",
        );
    } else if let Some(line) = whitespace_insensitive_match(content, old) {
        message.push_str(&format!(
            " It matches the text at line {line} when whitespace is ignored, so the \
             indentation or spacing differs (tabs versus spaces?). Copy the exact text from \
             Read's output."
        ));
    } else {
        message.push_str(" Read the file again to get its exact current text.");
    }
    message
}

fn has_line_number_prefix(line: &str) -> bool {
    let trimmed = line.trim_start();
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && trimmed.as_bytes().get(digits) == Some(&b'\t')
}

fn normalize(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The 1-based line where `old` starts if it matches line by line with whitespace collapsed.
fn whitespace_insensitive_match(content: &str, old: &str) -> Option<usize> {
    let wanted: Vec<String> = old.lines().map(normalize).collect();
    let wanted: &[String] = match wanted.iter().position(|l| !l.is_empty()) {
        Some(start) => &wanted[start..],
        None => return None,
    };
    let haystack: Vec<String> = content.lines().map(normalize).collect();
    haystack
        .windows(wanted.len())
        .position(|window| {
            window
                .iter()
                .zip(wanted)
                .enumerate()
                .all(|(i, (have, want))| {
                    let last = i + 1 == wanted.len();
                    // The first and last lines may be fragments of the file's lines.
                    match (i, last) {
                        (0, true) => have.contains(want.as_str()),
                        (0, false) => have.ends_with(want.as_str()),
                        (_, true) => have.starts_with(want.as_str()),
                        _ => have == want,
                    }
                })
        })
        .map(|i| i + 1)
}

fn apply(plan: Plan, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    if plan.old.is_none()
        && let Some(parent) = plan.target.parent()
    {
        fs::create_dir_all(parent).map_err(|e| {
            ToolError::io(
                format!("cannot create the directory {}", parent.display()),
                e,
            )
        })?;
    }
    paths::write_atomically(&ctx.project_root, &plan.target, plan.new.as_bytes())
        .map_err(|e| ToolError::io(format!("cannot write {}", plan.path.display()), e))?;
    let meta = fs::metadata(&plan.target)
        .map_err(|e| ToolError::io(format!("cannot inspect {}", plan.path.display()), e))?;
    ctx.files.record(
        &plan.path,
        FileState::new(content_hash(plan.new.as_bytes()), &meta),
    );
    let shown = plan.path.display();
    let Some(old) = plan.old else {
        return Ok(ToolOutput::ok(format!(
            "Created the file {shown} ({} lines).",
            plan.new.lines().count()
        )));
    };
    let what = if plan.replaced > 1 {
        format!(
            "The file {shown} has been updated ({} occurrences replaced).",
            plan.replaced
        )
    } else {
        format!("The file {shown} has been updated.")
    };
    let diff = super::diff::excerpt(&old, &plan.new);
    Ok(ToolOutput::ok(format!("{what}\n\n{diff}")).with_display(ToolDisplay::Diff(diff)))
}

#[cfg(test)]
mod tests;
