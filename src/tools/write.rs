//! Write: creates a file or replaces one the model has read, atomically.

use std::fs;
use std::io;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use super::file_state::{FileState, content_hash};
use super::paths;
use super::{Progress, Tool, ToolContext, ToolError, ToolOutput};
use crate::permissions::Access;

pub struct WriteTool;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WriteInput {
    /// The absolute path of the file to write.
    pub file_path: String,
    /// The complete content of the file.
    pub content: String,
}

/// A checked write: where the bytes go and whether a file is being replaced.
struct Plan {
    path: PathBuf,
    target: PathBuf,
    exists: bool,
}

impl Tool for WriteTool {
    type Input = WriteInput;

    const NAME: &'static str = "Write";

    fn description(&self) -> &'static str {
        include_str!("../../tools/Write.md")
    }

    fn validate(&self, input: &WriteInput, ctx: &ToolContext) -> Result<(), String> {
        let path = paths::absolute(&input.file_path, ctx)?;
        if !paths::may_inspect(&path, ctx) {
            return Ok(());
        }
        plan(input, ctx).map(|_| ()).map_err(|e| e.to_string())
    }

    fn access(&self, input: &WriteInput, ctx: &ToolContext) -> Access {
        Access::Write(ctx.current_dir().join(&input.file_path))
    }

    fn summary(&self, input: &WriteInput) -> String {
        input.file_path.clone()
    }

    fn preview(&self, input: &WriteInput, ctx: &ToolContext) -> Option<String> {
        let path = paths::absolute(&input.file_path, ctx).ok()?;
        if !paths::may_inspect(&path, ctx) {
            return None;
        }
        let plan = plan(input, ctx).ok()?;
        let old = if plan.exists {
            fs::read_to_string(&plan.target).ok()?
        } else {
            String::new()
        };
        Some(super::diff::excerpt(&old, &input.content))
    }

    async fn call(
        &self,
        input: WriteInput,
        ctx: &ToolContext,
        _progress: &Progress,
    ) -> Result<ToolOutput, ToolError> {
        let ctx = ctx.clone();
        paths::blocking(move || {
            let plan = plan(&input, &ctx)?;
            apply(plan, &input.content, &ctx)
        })
        .await
    }
}

fn plan(input: &WriteInput, ctx: &ToolContext) -> Result<Plan, ToolError> {
    let path = paths::absolute(&input.file_path, ctx).map_err(ToolError::Invalid)?;
    let target = paths::resolve_symlinks(&path)
        .map_err(|e| ToolError::io(format!("cannot resolve {}", path.display()), e))?;
    let meta = match fs::metadata(&target) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Plan {
                path,
                target,
                exists: false,
            });
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
            "{} is a directory; give the path of a file inside it.",
            path.display()
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::Invalid(paths::special_file_message(&path)));
    }
    let fresh = ctx.files.check_fresh(&path, &meta, || {
        crate::sys::beneath::read_all(&ctx.project_root, &target)
            .map(|bytes| content_hash(&bytes))
            .map_err(|e| ToolError::io(format!("cannot read {}", path.display()), e))
    })?;
    fresh.map_err(|staleness| ToolError::Invalid(staleness.message(&path, "overwrite")))?;
    paths::ensure_writable(&path, &meta).map_err(ToolError::Invalid)?;
    Ok(Plan {
        path,
        target,
        exists: true,
    })
}

fn apply(plan: Plan, content: &str, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    // Missing folders are made for a new file, but not the project or the working directory
    // themselves: their being gone means they were deleted under the session, which the model
    // should know rather than silently undo.
    for (what, dir) in [
        ("project folder", ctx.project_root.clone()),
        ("working directory", ctx.current_dir()),
    ] {
        if !dir.exists() && plan.target.starts_with(&dir) {
            return Err(ToolError::Invalid(format!(
                "The {what} {} no longer exists (it was deleted or moved during the session), so {} was not written. Check with the user before creating it again.",
                dir.display(),
                plan.path.display()
            )));
        }
    }
    if let Some(parent) = plan.target.parent() {
        fs::create_dir_all(parent).map_err(|e| {
            ToolError::io(
                format!("cannot create the directory {}", parent.display()),
                e,
            )
        })?;
    }
    paths::write_atomically(&ctx.project_root, &plan.target, content.as_bytes())
        .map_err(|e| ToolError::io(format!("cannot write {}", plan.path.display()), e))?;
    let meta = fs::metadata(&plan.target)
        .map_err(|e| ToolError::io(format!("cannot inspect {}", plan.path.display()), e))?;
    ctx.files.record(
        &plan.path,
        FileState::new(content_hash(content.as_bytes()), &meta),
    );
    let lines = content.lines().count();
    let noun = if lines == 1 { "line" } else { "lines" };
    let shown = plan.path.display();
    Ok(ToolOutput::ok(if plan.exists {
        format!("The file {shown} has been updated ({lines} {noun}).")
    } else {
        format!("Created the file {shown} ({lines} {noun}).")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::erase;
    use crate::tools::read::{ReadInput, ReadTool};
    use serde_json::{Value, json};
    use std::path::Path;

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path().to_path_buf());
        (dir, ctx)
    }

    async fn run(ctx: &ToolContext, input: Value) -> Result<ToolOutput, String> {
        let tool = erase(WriteTool);
        tool.check_schema(&input)?;
        let call = tool.prepare(&input, ctx)?;
        call.run(ctx, &Progress::none())
            .await
            .map_err(|e| e.to_string())
    }

    async fn read(ctx: &ToolContext, path: &Path) {
        let input = ReadInput {
            file_path: path.display().to_string(),
            offset: None,
            limit: None,
        };
        ReadTool.call(input, ctx, &Progress::none()).await.unwrap();
    }

    #[tokio::test]
    async fn creates_files_and_parent_directories() {
        let (dir, ctx) = setup();
        let file = dir.path().join("a/b/new.txt");
        let out = run(&ctx, json!({"file_path": file, "content": "one\ntwo\n"}))
            .await
            .unwrap();
        assert_eq!(
            out.content,
            format!("Created the file {} (2 lines).", file.display())
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), "one\ntwo\n");
        // Writing recorded the state, so the file can be replaced again without a Read.
        let again = run(&ctx, json!({"file_path": file, "content": "x"}))
            .await
            .unwrap();
        assert!(
            again.content.contains("has been updated (1 line)"),
            "{}",
            again.content
        );
    }

    #[tokio::test]
    async fn a_deleted_working_directory_is_reported_not_recreated() {
        let (dir, mut ctx) = setup();
        let work = dir.path().join("work");
        fs::create_dir_all(&work).unwrap();
        ctx.start_in(work.clone());
        fs::remove_dir(&work).unwrap();
        let err = run(
            &ctx,
            json!({"file_path": work.join("x.txt"), "content": "x"}),
        )
        .await
        .unwrap_err();
        assert!(
            err.contains("working directory") && err.contains("no longer exists"),
            "{err}"
        );
        assert!(!work.exists(), "the deleted folder came back");
        // Elsewhere in the project, missing folders are still made.
        run(
            &ctx,
            json!({"file_path": dir.path().join("new/y.txt"), "content": "y"}),
        )
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn overwriting_needs_a_fresh_read() {
        let (dir, ctx) = setup();
        let file = dir.path().join("exists.txt");
        fs::write(&file, "original").unwrap();
        let unread = run(&ctx, json!({"file_path": file, "content": "new"}))
            .await
            .unwrap_err();
        assert!(unread.contains("has not been read"), "{unread}");
        assert_eq!(fs::read_to_string(&file).unwrap(), "original");

        read(&ctx, &file).await;
        fs::write(&file, "changed by someone else").unwrap();
        let stale = run(&ctx, json!({"file_path": file, "content": "new"}))
            .await
            .unwrap_err();
        assert!(stale.contains("modified since it was read"), "{stale}");

        read(&ctx, &file).await;
        run(&ctx, json!({"file_path": file, "content": "new"}))
            .await
            .unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn keeps_permissions_and_writes_through_symlinks() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, ctx) = setup();
        let target = dir.path().join("secret.env");
        fs::write(&target, "A=1\n").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.env");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        read(&ctx, &link).await;
        run(&ctx, json!({"file_path": link, "content": "A=2\n"}))
            .await
            .unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "A=2\n");
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn refuses_read_only_files() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, ctx) = setup();
        let file = dir.path().join("locked.txt");
        fs::write(&file, "keep").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o444)).unwrap();
        read(&ctx, &file).await;
        let err = run(&ctx, json!({"file_path": file, "content": "x"}))
            .await
            .unwrap_err();
        assert!(err.contains("read-only"), "{err}");
        assert_eq!(fs::read_to_string(&file).unwrap(), "keep");
    }

    #[tokio::test]
    async fn refuses_directories_relative_paths_and_bad_input() {
        let (dir, ctx) = setup();
        let on_dir = run(&ctx, json!({"file_path": dir.path(), "content": ""}))
            .await
            .unwrap_err();
        assert!(on_dir.contains("is a directory"), "{on_dir}");
        let relative = run(&ctx, json!({"file_path": "x.txt", "content": ""}))
            .await
            .unwrap_err();
        assert!(relative.contains("absolute"), "{relative}");
        let schema = erase(WriteTool)
            .check_schema(&json!({"file_path": ["a"]}))
            .unwrap_err();
        assert!(schema.contains("/file_path"), "{schema}");
        assert!(schema.contains("content"), "{schema}");
    }

    #[tokio::test]
    async fn typed_call_and_access() {
        let (dir, ctx) = setup();
        let file = dir.path().join("typed.txt");
        let input = WriteInput {
            file_path: file.display().to_string(),
            content: "hi".into(),
        };
        assert_eq!(WriteTool.access(&input, &ctx), Access::Write(file.clone()));
        assert!(!WriteTool.is_read_only(&input) && !WriteTool.is_concurrency_safe(&input));
        assert_eq!(WriteTool.summary(&input), file.display().to_string());
        WriteTool
            .call(input, &ctx, &Progress::none())
            .await
            .unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "hi");
    }
}
