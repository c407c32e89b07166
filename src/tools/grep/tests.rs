use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::*;
use crate::tools::erase;

fn setup() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path().to_path_buf());
    (dir, ctx)
}

/// Writes `content` to `root/rel` with an mtime `age_secs` in the past.
fn file(root: &Path, rel: &str, content: &str, age_secs: u64) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, content).unwrap();
    let mtime = SystemTime::now() - Duration::from_secs(age_secs);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
}

async fn grep(ctx: &ToolContext, input: Value) -> Result<String, String> {
    let tool = erase(GrepTool);
    tool.check_schema(&input)?;
    let call = tool.prepare(&input, ctx)?;
    let out = call
        .run(ctx, &Progress::none())
        .await
        .map_err(|e| e.to_string())?;
    assert!(!out.is_error);
    Ok(out.content)
}

fn p(root: &Path, rel: &str) -> String {
    root.join(rel).display().to_string()
}

/// A small project: two Rust files of different ages, a Python file, ignored and hidden
/// files, and a binary file that contains the word too.
fn project() -> (tempfile::TempDir, ToolContext) {
    let (dir, ctx) = setup();
    let root = dir.path();
    file(root, ".gitignore", "target/\n", 500);
    file(root, "src/old.rs", "fn a() {\n    todo!()\n}\n", 300);
    file(
        root,
        "src/new.rs",
        "// TODO: one\nfn b() {}\n// todo: two\n",
        10,
    );
    file(root, "tools/script.py", "# TODO python\n", 100);
    file(root, "target/gen.rs", "// TODO generated\n", 1);
    file(root, ".hidden/h.rs", "// TODO hidden\n", 1);
    fs::write(root.join("blob.bin"), b"TODO\0\x01\x02binary").unwrap();
    (dir, ctx)
}

#[tokio::test]
async fn files_mode_lists_newest_first_skipping_ignored_hidden_and_binary() {
    let (dir, ctx) = project();
    let root = dir.path();
    let out = grep(&ctx, json!({"pattern": "TODO"})).await.unwrap();
    let expected = format!(
        "Found 2 files\n{}\n{}",
        p(root, "src/new.rs"),
        p(root, "tools/script.py")
    );
    assert_eq!(out, expected);

    let insensitive = grep(&ctx, json!({"pattern": "todo", "-i": true}))
        .await
        .unwrap();
    assert!(insensitive.starts_with("Found 3 files\n"), "{insensitive}");
    assert!(
        insensitive.ends_with(&p(root, "src/old.rs")),
        "{insensitive}"
    );

    let none = grep(&ctx, json!({"pattern": "nothing-matches-this"}))
        .await
        .unwrap();
    assert_eq!(none, "No files found");
}

#[tokio::test]
async fn content_mode_shows_numbered_lines() {
    let (dir, ctx) = project();
    let root = dir.path();
    let out = grep(
        &ctx,
        json!({"pattern": "todo", "-i": true, "output_mode": "content", "type": "rust"}),
    )
    .await
    .unwrap();
    let new = p(root, "src/new.rs");
    let old = p(root, "src/old.rs");
    assert_eq!(
        out,
        format!("{new}:1:// TODO: one\n{new}:3:// todo: two\n{old}:2:    todo!()")
    );
    let plain = grep(
        &ctx,
        json!({"pattern": "TODO", "output_mode": "content", "-n": false, "glob": "*.py"}),
    )
    .await
    .unwrap();
    assert_eq!(
        plain,
        format!("{}:# TODO python", p(root, "tools/script.py"))
    );
    let none = grep(&ctx, json!({"pattern": "zzz", "output_mode": "content"}))
        .await
        .unwrap();
    assert_eq!(none, "No matches found");
}

#[tokio::test]
async fn context_lines_use_dashes_and_group_breaks() {
    let (dir, ctx) = setup();
    let text: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    file(dir.path(), "f.txt", &text, 1);
    let f = p(dir.path(), "f.txt");
    let around = grep(
        &ctx,
        json!({"pattern": "^line (3|10)$", "output_mode": "content", "-C": 1}),
    )
    .await
    .unwrap();
    assert_eq!(
        around,
        format!(
            "{f}-2-line 2\n{f}:3:line 3\n{f}-4-line 4\n--\n{f}-9-line 9\n{f}:10:line 10\n{f}-11-line 11"
        )
    );
    let after = grep(
        &ctx,
        json!({"pattern": "line 5$", "output_mode": "content", "-A": 1, "-B": 0, "-C": 3}),
    )
    .await
    .unwrap();
    assert_eq!(after, format!("{f}:5:line 5\n{f}-6-line 6"));
    let before = grep(
        &ctx,
        json!({"pattern": "line 5$", "output_mode": "content", "-B": 2}),
    )
    .await
    .unwrap();
    assert_eq!(before, format!("{f}-3-line 3\n{f}-4-line 4\n{f}:5:line 5"));
}

#[tokio::test]
async fn count_mode_counts_matching_lines_per_file() {
    let (dir, ctx) = project();
    let root = dir.path();
    let out = grep(&ctx, json!({"pattern": "(?i)todo", "output_mode": "count"}))
        .await
        .unwrap();
    assert_eq!(
        out,
        format!(
            "{}:2\n{}:1\n{}:1\n\nFound 4 matches across 3 files.",
            p(root, "src/new.rs"),
            p(root, "tools/script.py"),
            p(root, "src/old.rs")
        )
    );
}

#[tokio::test]
async fn head_limit_and_offset_page_through_results() {
    let (dir, ctx) = setup();
    let text: String = (1..=10).map(|i| format!("hit {i}\n")).collect();
    file(dir.path(), "many.txt", &text, 1);
    let f = p(dir.path(), "many.txt");
    let first = grep(
        &ctx,
        json!({"pattern": "hit", "output_mode": "content", "head_limit": 3}),
    )
    .await
    .unwrap();
    assert!(first.starts_with(&format!("{f}:1:hit 1\n{f}:2:hit 2\n{f}:3:hit 3\n\n")));
    assert!(first.contains("offset=3"), "{first}");
    let next = grep(
        &ctx,
        json!({"pattern": "hit", "output_mode": "content", "head_limit": 3, "offset": 8}),
    )
    .await
    .unwrap();
    assert_eq!(next, format!("{f}:9:hit 9\n{f}:10:hit 10"));

    for i in 0..5 {
        file(dir.path(), &format!("f{i}.txt"), "hit\n", 100 + i);
    }
    let files = grep(&ctx, json!({"pattern": "hit", "head_limit": 2}))
        .await
        .unwrap();
    let lines: Vec<&str> = files.lines().collect();
    assert_eq!(lines[0], "Found 6 files");
    assert_eq!(lines[1], f);
    assert_eq!(lines[2], p(dir.path(), "f0.txt"));
    assert!(files.contains("limited to 2 files"), "{files}");
}

#[tokio::test]
async fn multiline_patterns_span_lines_only_when_asked() {
    let (dir, ctx) = project();
    let old = p(dir.path(), "src/old.rs");
    let out = grep(
        &ctx,
        json!({"pattern": "fn a\\(\\) \\{\\n\\s+todo", "multiline": true, "output_mode": "content"}),
    )
    .await
    .unwrap();
    assert_eq!(out, format!("{old}:1:fn a() {{\n{old}:2:    todo!()"));
    let refused = grep(&ctx, json!({"pattern": "a\\(\\) \\{\\n"}))
        .await
        .unwrap_err();
    assert!(refused.contains("multiline"), "{refused}");
}

#[tokio::test]
async fn a_single_file_path_omits_the_path_prefix() {
    let (dir, ctx) = project();
    let out = grep(
        &ctx,
        json!({"pattern": "TODO", "path": "src/new.rs", "output_mode": "content"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "1:// TODO: one");
    let count = grep(
        &ctx,
        json!({"pattern": "TODO", "path": p(dir.path(), "src/new.rs"), "output_mode": "count"}),
    )
    .await
    .unwrap();
    assert!(
        count.starts_with("1\n\nFound 1 match across 1 file."),
        "{count}"
    );
}

#[tokio::test]
async fn bad_patterns_types_paths_and_schemas_are_explained() {
    let (_dir, ctx) = project();
    let regex = grep(&ctx, json!({"pattern": "foo("})).await.unwrap_err();
    assert!(regex.contains("not a valid regular expression"), "{regex}");
    let kind = grep(&ctx, json!({"pattern": "x", "type": "nosuchtype"}))
        .await
        .unwrap_err();
    assert!(kind.contains("Unknown file type `nosuchtype`"), "{kind}");
    let path = grep(&ctx, json!({"pattern": "x", "path": "missing"}))
        .await
        .unwrap_err();
    assert!(path.contains("does not exist"), "{path}");
    let mode = grep(&ctx, json!({"pattern": "x", "output_mode": "lines"}))
        .await
        .unwrap_err();
    assert!(mode.contains("/output_mode"), "{mode}");
    let schema = erase(GrepTool)
        .check_schema(&json!({"-i": "yes", "-C": -1}))
        .unwrap_err();
    assert!(schema.contains("pattern"), "{schema}");
    assert!(schema.contains("/-i"), "{schema}");
    assert!(schema.contains("/-C"), "{schema}");
}

#[tokio::test]
async fn long_lines_are_cut() {
    let (dir, ctx) = setup();
    file(
        dir.path(),
        "min.js",
        &format!("x{}\n", "y".repeat(2_000)),
        1,
    );
    let out = grep(
        &ctx,
        json!({"pattern": "^x", "output_mode": "content", "-n": false}),
    )
    .await
    .unwrap();
    assert!(out.ends_with("[... line truncated]"), "{out}");
    assert!(out.len() < 700, "{}", out.len());
}

#[tokio::test]
async fn typed_call_access_and_flags() {
    let (dir, ctx) = project();
    let input: GrepInput =
        serde_json::from_value(json!({"pattern": "TODO", "path": "src"})).unwrap();
    assert_eq!(
        GrepTool.access(&input, &ctx),
        Access::Read(dir.path().join("src"))
    );
    assert!(GrepTool.is_read_only(&input) && GrepTool.is_concurrency_safe(&input));
    assert_eq!(GrepTool.summary(&input), "TODO in src");
    let out = GrepTool.call(input, &ctx, &Progress::none()).await.unwrap();
    assert_eq!(
        out.content,
        format!("Found 1 file\n{}", p(dir.path(), "src/new.rs"))
    );
}

#[tokio::test]
async fn a_cancelled_search_reports_cancellation() {
    let (_dir, ctx) = project();
    ctx.cancel.cancel();
    let err = grep(&ctx, json!({"pattern": "TODO"})).await.unwrap_err();
    assert_eq!(err, ToolError::Cancelled.to_string());
}

#[tokio::test]
async fn huge_results_stop_the_search_with_a_note() {
    let (dir, ctx) = setup();
    let text = "match this line\n".repeat(30_000);
    file(dir.path(), "a/big.txt", &text, 1);
    file(dir.path(), "b/big.txt", &text, 1);
    let out = grep(&ctx, json!({"pattern": "match", "output_mode": "content"}))
        .await
        .unwrap();
    assert!(
        out.ends_with("more specific pattern.)"),
        "{}",
        &out[out.len() - 200..]
    );
    assert!(out.lines().count() < 60_000);
}
