//! Edit: exact string replacement in a file the model has read, written atomically.

use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use similar::TextDiff;

use super::file_state::{FileState, content_hash};
use super::paths;
use super::{Progress, Tool, ToolContext, ToolError, ToolOutput};
use crate::permissions::Access;

/// Diff lines shown after an edit; the model knows what it changed, this is a confirmation.
const MAX_DIFF_LINES: usize = 60;
const MAX_DIFF_LINE_CHARS: usize = 300;
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
    pub replace_all: bool,
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

    fn name(&self) -> &'static str {
        "Edit"
    }

    fn description(&self) -> &'static str {
        include_str!("../../tools/Edit.md")
    }

    fn validate(&self, input: &EditInput, ctx: &ToolContext) -> Result<(), String> {
        plan(input, ctx).map(|_| ()).map_err(|e| e.to_string())
    }

    fn access(&self, input: &EditInput, ctx: &ToolContext) -> Access {
        Access::Write(ctx.current_dir().join(&input.file_path))
    }

    fn summary(&self, input: &EditInput) -> String {
        input.file_path.clone()
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
    let bytes = fs::read(&target)
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
    paths::write_atomically(&plan.target, plan.new.as_bytes())
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
    Ok(ToolOutput::ok(format!(
        "{what}\n\n{}",
        diff_excerpt(&old, &plan.new)
    )))
}

/// A unified diff with 3 lines of context, cut to a few dozen lines.
fn diff_excerpt(old: &str, new: &str) -> String {
    let (old, new) = (old.replace("\r\n", "\n"), new.replace("\r\n", "\n"));
    let diff = TextDiff::configure()
        .timeout(Duration::from_millis(500))
        .diff_lines(&old, &new);
    let text = diff.unified_diff().context_radius(3).to_string();
    let total = text.lines().count();
    let mut out: Vec<String> = text
        .lines()
        .take(MAX_DIFF_LINES)
        .map(|line| match line.char_indices().nth(MAX_DIFF_LINE_CHARS) {
            Some((at, _)) => format!("{}…", &line[..at]),
            None => line.to_string(),
        })
        .collect();
    if total > MAX_DIFF_LINES {
        out.push(format!(
            "… ({} more diff lines not shown)",
            total - MAX_DIFF_LINES
        ));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::erase;
    use crate::tools::read::ReadTool;
    use serde_json::{Value, json};

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path().to_path_buf());
        (dir, ctx)
    }

    async fn run(ctx: &ToolContext, input: Value) -> Result<ToolOutput, String> {
        let tool = erase(EditTool);
        tool.check_schema(&input)?;
        let call = tool.prepare(&input, ctx)?;
        call.run(ctx, &Progress::none())
            .await
            .map_err(|e| e.to_string())
    }

    async fn read(ctx: &ToolContext, path: &Path) {
        let input = crate::tools::read::ReadInput {
            file_path: path.display().to_string(),
            offset: None,
            limit: None,
        };
        ReadTool.call(input, ctx, &Progress::none()).await.unwrap();
    }

    fn edit(path: &Path, old: &str, new: &str) -> Value {
        json!({"file_path": path, "old_string": old, "new_string": new})
    }

    #[tokio::test]
    async fn replaces_a_unique_string_and_shows_a_diff() {
        let (dir, ctx) = setup();
        let file = dir.path().join("notes.txt");
        fs::write(&file, "line one\nthe quick brwon fox\nline three\n").unwrap();
        read(&ctx, &file).await;
        let out = run(&ctx, edit(&file, "brwon", "brown")).await.unwrap();
        assert!(
            out.content
                .starts_with(&format!("The file {} has been updated.", file.display()))
        );
        assert!(
            out.content
                .contains("-the quick brwon fox\n+the quick brown fox")
        );
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "line one\nthe quick brown fox\nline three\n"
        );
        // The recorded state follows the write, so a second edit needs no new Read.
        run(&ctx, edit(&file, "line one", "line 1")).await.unwrap();
        assert!(fs::read_to_string(&file).unwrap().starts_with("line 1\n"));
    }

    #[tokio::test]
    async fn refuses_unread_and_modified_files() {
        let (dir, ctx) = setup();
        let file = dir.path().join("a.txt");
        fs::write(&file, "alpha\n").unwrap();
        let unread = run(&ctx, edit(&file, "alpha", "beta")).await.unwrap_err();
        assert!(unread.contains("has not been read"), "{unread}");

        read(&ctx, &file).await;
        fs::write(&file, "alpha changed elsewhere\n").unwrap();
        let stale = run(&ctx, edit(&file, "alpha", "beta")).await.unwrap_err();
        assert!(stale.contains("modified since it was read"), "{stale}");
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "alpha changed elsewhere\n"
        );
    }

    #[tokio::test]
    async fn rewriting_identical_content_does_not_count_as_a_change() {
        let (dir, ctx) = setup();
        let file = dir.path().join("a.txt");
        fs::write(&file, "alpha\n").unwrap();
        read(&ctx, &file).await;
        let old = std::time::SystemTime::now() - Duration::from_secs(3600);
        fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(old)
            .unwrap();
        run(&ctx, edit(&file, "alpha", "beta")).await.unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "beta\n");
    }

    #[tokio::test]
    async fn ambiguous_identical_and_missing_old_strings_are_explained() {
        let (dir, ctx) = setup();
        let file = dir.path().join("code.rs");
        fs::write(&file, "fn a() {\n    x();\n}\nfn b() {\n    x();\n}\n").unwrap();
        read(&ctx, &file).await;
        let many = run(&ctx, edit(&file, "x();", "y();")).await.unwrap_err();
        assert!(many.contains("occurs 2 times"), "{many}");
        assert!(many.contains("lines 2, 5"), "{many}");
        assert!(many.contains("replace_all"), "{many}");

        let same = run(&ctx, edit(&file, "x();", "x();")).await.unwrap_err();
        assert!(same.contains("identical"), "{same}");

        let absent = run(&ctx, edit(&file, "z();", "y();")).await.unwrap_err();
        assert!(absent.contains("was not found"), "{absent}");

        let indented = run(&ctx, edit(&file, "fn b() {\n  x();", "fn c() {\n  x();"))
            .await
            .unwrap_err();
        assert!(
            indented.contains("line 4 when whitespace is ignored"),
            "{indented}"
        );

        let prefixed = run(&ctx, edit(&file, "2\t    x();", "2\t    y();"))
            .await
            .unwrap_err();
        assert!(prefixed.contains("line-number prefixes"), "{prefixed}");
    }

    #[tokio::test]
    async fn replace_all_changes_every_occurrence() {
        let (dir, ctx) = setup();
        let file = dir.path().join("code.rs");
        fs::write(&file, "x(); x();\nx();\n").unwrap();
        read(&ctx, &file).await;
        let out = run(
            &ctx,
            json!({"file_path": file, "old_string": "x()", "new_string": "y()", "replace_all": true}),
        )
        .await
        .unwrap();
        assert!(out.content.contains("3 occurrences"), "{}", out.content);
        assert_eq!(fs::read_to_string(&file).unwrap(), "y(); y();\ny();\n");
    }

    #[tokio::test]
    async fn crlf_files_match_lf_input_and_stay_crlf() {
        let (dir, ctx) = setup();
        let file = dir.path().join("win.txt");
        fs::write(&file, "one\r\ntwo\r\nthree\r\n").unwrap();
        read(&ctx, &file).await;
        run(&ctx, edit(&file, "one\ntwo", "uno\ndos\nmas"))
            .await
            .unwrap();
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "uno\r\ndos\r\nmas\r\nthree\r\n"
        );
        run(&ctx, edit(&file, "three", "tres\ncuatro"))
            .await
            .unwrap();
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "uno\r\ndos\r\nmas\r\ntres\r\ncuatro\r\n"
        );
    }

    #[tokio::test]
    async fn empty_old_string_creates_a_missing_file() {
        let (dir, ctx) = setup();
        let file = dir.path().join("new/dir/created.txt");
        let out = run(&ctx, edit(&file, "", "hello\nworld\n")).await.unwrap();
        assert!(out.content.contains("Created"), "{}", out.content);
        assert_eq!(fs::read_to_string(&file).unwrap(), "hello\nworld\n");
        run(&ctx, edit(&file, "world", "there")).await.unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "hello\nthere\n");

        let existing = run(&ctx, edit(&file, "", "again")).await.unwrap_err();
        assert!(existing.contains("already has content"), "{existing}");
        let missing = run(&ctx, edit(&dir.path().join("nope.txt"), "a", "b"))
            .await
            .unwrap_err();
        assert!(missing.contains("does not exist"), "{missing}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn keeps_permissions_and_writes_through_symlinks() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, ctx) = setup();
        let target = dir.path().join("script.sh");
        fs::write(&target, "echo hi\n").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o751)).unwrap();
        let link = dir.path().join("link.sh");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        read(&ctx, &link).await;
        run(&ctx, edit(&link, "hi", "bye")).await.unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "echo bye\n");
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o751);
    }

    #[tokio::test]
    async fn refuses_directories_and_relative_paths() {
        let (dir, ctx) = setup();
        let on_dir = run(&ctx, edit(dir.path(), "a", "b")).await.unwrap_err();
        assert!(on_dir.contains("is a directory"), "{on_dir}");
        let relative = run(&ctx, edit(Path::new("a.txt"), "a", "b"))
            .await
            .unwrap_err();
        assert!(relative.contains("absolute"), "{relative}");
    }

    #[tokio::test]
    async fn typed_call_reports_access_and_schema_errors_name_paths() {
        let (dir, ctx) = setup();
        let input = EditInput {
            file_path: dir.path().join("x.txt").display().to_string(),
            old_string: "a".into(),
            new_string: "b".into(),
            replace_all: false,
        };
        assert_eq!(
            EditTool.access(&input, &ctx),
            Access::Write(dir.path().join("x.txt"))
        );
        assert!(!EditTool.is_read_only(&input) && !EditTool.is_concurrency_safe(&input));
        assert!(!EditTool.is_destructive(&input));
        let err = EditTool
            .call(input, &ctx, &Progress::none())
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Invalid(_)));

        let tool = erase(EditTool);
        let schema = tool
            .check_schema(&json!({"file_path": "/a", "old_string": 1, "replace_all": "yes"}))
            .unwrap_err();
        assert!(schema.contains("/old_string"), "{schema}");
        assert!(schema.contains("/replace_all"), "{schema}");
        assert!(schema.contains("new_string"), "{schema}");
    }
}
