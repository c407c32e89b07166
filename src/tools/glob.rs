//! Glob: finds files by name pattern, newest first, honouring .gitignore.

use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;

use super::memo::Memo;
use super::paths;
use super::{Progress, Tool, ToolContext, ToolError, ToolOutput};
use crate::permissions::Access;

/// Paths listed at most; the model narrows the pattern to see others.
pub(crate) const MAX_RESULTS: usize = 100;

pub struct GlobTool;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct GlobInput {
    /// The glob pattern to match file paths against, e.g. `**/*.rs` or `src/**/*.{ts,tsx}`.
    pub pattern: String,
    /// The directory to search in. Defaults to the current working directory.
    pub path: Option<String>,
    #[serde(skip)]
    #[schemars(skip)]
    search: Memo<Search>,
}

/// What to walk and how to match, worked out from the input.
struct Search {
    root: PathBuf,
    matcher: GlobMatcher,
    /// Absolute patterns match whole paths; relative ones match paths below `root`.
    absolute: bool,
    hidden: bool,
}

impl Tool for GlobTool {
    type Input = GlobInput;

    const NAME: &'static str = "Glob";

    fn description(&self) -> &'static str {
        include_str!("../../tools/Glob.md")
    }

    fn validate(&self, input: &GlobInput, ctx: &ToolContext) -> Result<(), String> {
        let search = planned(input, ctx)?;
        if !paths::may_inspect(&search.root, ctx) {
            return Ok(());
        }
        check_root(&search.root)
    }

    fn access(&self, input: &GlobInput, ctx: &ToolContext) -> Access {
        let root = match planned(input, ctx) {
            Ok(search) => search.root.clone(),
            Err(_) => paths::search_root(input.path.as_deref(), ctx),
        };
        Access::Read(root)
    }

    fn is_read_only(&self, _input: &GlobInput) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &GlobInput) -> bool {
        true
    }

    fn summary(&self, input: &GlobInput) -> String {
        match &input.path {
            Some(path) => format!("{} in {path}", input.pattern),
            None => input.pattern.clone(),
        }
    }

    async fn call(
        &self,
        input: GlobInput,
        ctx: &ToolContext,
        _progress: &Progress,
    ) -> Result<ToolOutput, ToolError> {
        let search = planned(&input, ctx).map_err(ToolError::Invalid)?;
        check_root(&search.root).map_err(ToolError::Invalid)?;
        let ctx = ctx.clone();
        paths::blocking(move || run(&search, &ctx)).await
    }
}

fn check_root(root: &Path) -> Result<(), String> {
    if paths::require_existing(root)?.is_dir() {
        Ok(())
    } else {
        Err(format!(
            "{} is not a directory; Glob searches directories. Use Read to open a file.",
            root.display()
        ))
    }
}

fn planned(input: &GlobInput, ctx: &ToolContext) -> Result<std::sync::Arc<Search>, String> {
    input.search.get_or_try(|| plan(input, ctx))
}

fn plan(input: &GlobInput, ctx: &ToolContext) -> Result<Search, String> {
    let pattern = input.pattern.trim();
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    if pattern.is_empty() {
        return Err("pattern is empty; give a glob such as `**/*.rs`.".into());
    }
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("The glob pattern `{pattern}` is invalid: {e}"))?
        .compile_matcher();
    let absolute = Path::new(pattern).is_absolute();
    let root = match (&input.path, absolute) {
        (None, true) => literal_prefix(Path::new(pattern)),
        _ => paths::search_root(input.path.as_deref(), ctx),
    };
    // Hidden files are skipped unless the pattern names one, as in `.github/**/*.yml`.
    let hidden = Path::new(pattern).components().any(|c| match c {
        Component::Normal(name) => name.to_string_lossy().starts_with('.'),
        _ => false,
    });
    Ok(Search {
        root,
        matcher,
        absolute,
        hidden,
    })
}

/// The directory part of an absolute pattern before its first wildcard: the place to walk.
fn literal_prefix(pattern: &Path) -> PathBuf {
    let mut prefix = PathBuf::new();
    let mut components = pattern.components().peekable();
    while let Some(component) = components.next() {
        let text = component.as_os_str().to_string_lossy();
        if text.contains(['*', '?', '[', '{']) || components.peek().is_none() {
            break;
        }
        prefix.push(component);
    }
    prefix
}

fn run(search: &Search, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    super::paths::check_search_root(&search.root, ctx)?;
    let found: Mutex<Vec<(Option<SystemTime>, PathBuf)>> = Mutex::new(Vec::new());
    WalkBuilder::new(&search.root)
        .hidden(!search.hidden)
        .require_git(false)
        .build_parallel()
        .run(|| {
            let found = &found;
            Box::new(move |entry| {
                if ctx.cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if ctx.file_denials.denies(entry.path()) {
                    return WalkState::Skip;
                }
                if !is_file(&entry) {
                    return WalkState::Continue;
                }
                let path = entry.path();
                let candidate = if search.absolute {
                    path
                } else {
                    path.strip_prefix(&search.root).unwrap_or(path)
                };
                if search.matcher.is_match(candidate) {
                    let mtime = entry.metadata().ok().and_then(|m| m.modified().ok());
                    if let Ok(mut found) = found.lock() {
                        found.push((mtime, entry.into_path()));
                    }
                }
                WalkState::Continue
            })
        });
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    if found.is_empty() {
        return Ok(ToolOutput::ok("No files found"));
    }
    // Newest first; the path breaks ties so equal mtimes list in a stable order.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let mut text: String = found
        .iter()
        .take(MAX_RESULTS)
        .map(|(_, path)| path.to_string_lossy())
        .collect::<Vec<_>>()
        .join("\n");
    if total > MAX_RESULTS {
        text.push_str(&format!(
            "\n(Results are truncated: showing the {MAX_RESULTS} most recently modified of \
             {total} matching files. Use a more specific pattern or path to narrow the search.)"
        ));
    }
    Ok(ToolOutput::ok(text))
}

/// Regular files, and symlinks to them; directories are never results.
fn is_file(entry: &ignore::DirEntry) -> bool {
    match entry.file_type() {
        Some(t) if t.is_file() => true,
        Some(t) if t.is_symlink() => std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::erase;
    use serde_json::{Value, json};
    use std::fs;
    use std::time::Duration;

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path().to_path_buf());
        (dir, ctx)
    }

    fn touch(path: &Path, age_secs: u64) {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(path, "x").unwrap();
        let mtime = SystemTime::now() - Duration::from_secs(age_secs);
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    }

    async fn run_tool(ctx: &ToolContext, input: Value) -> Result<ToolOutput, String> {
        let tool = erase(GlobTool);
        tool.check_schema(&input)?;
        let call = tool.prepare(&input, ctx)?;
        call.run(ctx, &Progress::none())
            .await
            .map_err(|e| e.to_string())
    }

    fn lines(out: &ToolOutput) -> Vec<&str> {
        out.content.lines().collect()
    }

    #[tokio::test]
    async fn lists_absolute_paths_newest_first() {
        let (dir, ctx) = setup();
        let root = dir.path();
        touch(&root.join("old.rs"), 300);
        touch(&root.join("src/new.rs"), 10);
        touch(&root.join("src/mid.rs"), 100);
        touch(&root.join("src/notes.md"), 1);
        let out = run_tool(&ctx, json!({"pattern": "**/*.rs"})).await.unwrap();
        let expected: Vec<String> = ["src/new.rs", "src/mid.rs", "old.rs"]
            .iter()
            .map(|p| root.join(p).display().to_string())
            .collect();
        assert_eq!(lines(&out), expected);

        // `*` does not cross directories; `path` sets where matching starts.
        let top = run_tool(&ctx, json!({"pattern": "*.rs"})).await.unwrap();
        assert_eq!(lines(&top), vec![root.join("old.rs").display().to_string()]);
        let in_src = run_tool(&ctx, json!({"pattern": "*.rs", "path": "src"}))
            .await
            .unwrap();
        assert_eq!(lines(&in_src).len(), 2);
    }

    #[tokio::test]
    async fn a_link_in_the_project_that_leads_out_is_not_searched() {
        let (dir, ctx) = setup();
        let outside = tempfile::tempdir().unwrap();
        touch(&outside.path().join("secret.rs"), 1);
        std::os::unix::fs::symlink(outside.path(), dir.path().join("door")).unwrap();
        for tool in ["glob", "grep"] {
            let input = if tool == "glob" {
                json!({"pattern": "*.rs", "path": "door"})
            } else {
                json!({"pattern": "x", "path": "door"})
            };
            let out = if tool == "glob" {
                run_tool(&ctx, input).await
            } else {
                let grep = erase(crate::tools::grep::GrepTool);
                let call = grep.prepare(&input, &ctx).unwrap();
                call.run(&ctx, &Progress::none())
                    .await
                    .map_err(|e| e.to_string())
            };
            let err = out.unwrap_err();
            assert!(err.contains("leads outside the project"), "{tool}: {err}");
        }
    }

    #[tokio::test]
    async fn respects_gitignore_and_skips_hidden_files() {
        let (dir, ctx) = setup();
        let root = dir.path();
        fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        touch(&root.join("target/debug/out.txt"), 1);
        touch(&root.join("keep.txt"), 1);
        touch(&root.join("noise.log"), 1);
        touch(&root.join(".hidden/secret.txt"), 1);
        let out = run_tool(&ctx, json!({"pattern": "**/*"})).await.unwrap();
        assert_eq!(
            lines(&out),
            vec![root.join("keep.txt").display().to_string()]
        );

        let hidden = run_tool(&ctx, json!({"pattern": ".hidden/*.txt"}))
            .await
            .unwrap();
        assert_eq!(lines(&hidden).len(), 1, "{}", hidden.content);
    }

    #[tokio::test]
    async fn truncates_to_the_newest_hundred() {
        let (dir, ctx) = setup();
        for i in 0..150u64 {
            touch(&dir.path().join(format!("f{i:03}.txt")), 1_000 - i);
        }
        let out = run_tool(&ctx, json!({"pattern": "*.txt"})).await.unwrap();
        let listed = lines(&out);
        assert_eq!(listed.len(), MAX_RESULTS + 1);
        assert!(listed[0].ends_with("f149.txt"));
        assert!(listed[MAX_RESULTS - 1].ends_with("f050.txt"));
        assert!(listed[MAX_RESULTS].contains("truncated"));
        assert!(listed[MAX_RESULTS].contains("of 150"));
    }

    #[tokio::test]
    async fn absolute_patterns_and_empty_results() {
        let (dir, ctx) = setup();
        touch(&dir.path().join("a/b/c.toml"), 1);
        let pattern = format!("{}/a/**/*.toml", dir.path().display());
        let out = run_tool(&ctx, json!({"pattern": pattern})).await.unwrap();
        assert_eq!(
            lines(&out),
            vec![dir.path().join("a/b/c.toml").display().to_string()]
        );
        let none = run_tool(&ctx, json!({"pattern": "*.zig"})).await.unwrap();
        assert_eq!(none.content, "No files found");
    }

    #[tokio::test]
    async fn invalid_input_is_explained() {
        let (dir, ctx) = setup();
        let bad = run_tool(&ctx, json!({"pattern": "src/[a"}))
            .await
            .unwrap_err();
        assert!(bad.contains("invalid"), "{bad}");
        let missing = run_tool(&ctx, json!({"pattern": "*", "path": "nowhere"}))
            .await
            .unwrap_err();
        assert!(missing.contains("does not exist"), "{missing}");
        touch(&dir.path().join("file.txt"), 1);
        let not_dir = run_tool(&ctx, json!({"pattern": "*", "path": "file.txt"}))
            .await
            .unwrap_err();
        assert!(not_dir.contains("not a directory"), "{not_dir}");
        let schema = erase(GlobTool)
            .check_schema(&json!({"path": 3}))
            .unwrap_err();
        assert!(schema.contains("/path"), "{schema}");
        assert!(schema.contains("pattern"), "{schema}");
    }

    #[tokio::test]
    async fn a_cancelled_search_reports_cancellation() {
        let (dir, ctx) = setup();
        touch(&dir.path().join("x.md"), 1);
        ctx.cancel.cancel();
        let err = run_tool(&ctx, json!({"pattern": "*.md"}))
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::Cancelled.to_string());
    }

    #[tokio::test]
    async fn typed_call_access_and_flags() {
        let (dir, ctx) = setup();
        touch(&dir.path().join("x.md"), 1);
        let input: GlobInput =
            serde_json::from_value(serde_json::json!({"pattern": "*.md"})).unwrap();
        assert_eq!(
            GlobTool.access(&input, &ctx),
            Access::Read(dir.path().to_path_buf())
        );
        assert!(GlobTool.is_read_only(&input) && GlobTool.is_concurrency_safe(&input));
        let out = GlobTool.call(input, &ctx, &Progress::none()).await.unwrap();
        assert!(out.content.ends_with("x.md"));
    }
}
