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
    let Some(crate::event::ToolDisplay::Diff(diff)) = &out.display else {
        panic!("no diff for displays: {:?}", out.display)
    };
    assert!(diff.starts_with("@@"), "{diff}");
    assert!(out.content.ends_with(diff.as_str()), "{}", out.content);
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
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
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
