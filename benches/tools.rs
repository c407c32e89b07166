//! Glob, Grep, Read and Edit calls on a generated 10,000-file tree, each a whole call as the
//! executor makes it: schema check, semantic checks, then the run.

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

use ouro::bench::fixture::{FileKind, Fixture, NEEDLE, WorkDir};
use ouro::tools::edit::EditTool;
use ouro::tools::glob::GlobTool;
use ouro::tools::grep::GrepTool;
use ouro::tools::read::ReadTool;
use ouro::tools::{DynTool, Progress, ToolContext, ToolOutput, erase};

const FILES: usize = 10_000;

async fn call(tool: &Arc<dyn DynTool>, input: &Value, ctx: &ToolContext) -> ToolOutput {
    tool.check_schema(input)
        .expect("bench input matches the schema");
    let prepared = tool
        .prepare(input, ctx)
        .expect("bench input passes the checks");
    let output = prepared
        .run(ctx, &Progress::none())
        .await
        .expect("bench call runs");
    assert!(!output.is_error, "{}: {}", tool.name(), output.content);
    output
}

fn tools(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let dir = WorkDir::new("criterion").expect("a scratch directory");
    let fixture = Fixture::generate(dir.path(), FILES, 42).expect("the fixture tree");
    let ctx = ToolContext::new(dir.path().to_path_buf());
    let path = |i: usize| {
        fixture
            .path(&fixture.files[i])
            .to_string_lossy()
            .into_owned()
    };

    let searches: Vec<(&str, Arc<dyn DynTool>, Value)> = vec![
        (
            "glob_all_md",
            erase(GlobTool),
            json!({"pattern": "**/*.md"}),
        ),
        (
            "glob_one_dir",
            erase(GlobTool),
            json!({"pattern": "*.rs", "path": fixture.dirs[7]}),
        ),
        (
            "grep_files_rare",
            erase(GrepTool),
            json!({"pattern": NEEDLE}),
        ),
        (
            "grep_content_regex",
            erase(GrepTool),
            json!({"pattern": r"fn compute_\d{4}7", "output_mode": "content"}),
        ),
        (
            "grep_count",
            erase(GrepTool),
            json!({"pattern": r"struct Item\d+", "output_mode": "count"}),
        ),
        (
            "read_file",
            erase(ReadTool),
            json!({"file_path": path(1234)}),
        ),
    ];
    let mut group = c.benchmark_group("tools_10k");
    for (name, tool, input) in &searches {
        group.bench_with_input(BenchmarkId::from_parameter(name), input, |b, input| {
            b.to_async(&runtime).iter(|| call(tool, input, &ctx))
        });
    }

    let target = fixture
        .files
        .iter()
        .find(|f| f.kind == FileKind::Rust)
        .expect("the tree has Rust files");
    let file_path = fixture.path(target).to_string_lossy().into_owned();
    let (before, after) = target.marker_edit(0);
    let (read, edit) = (erase(ReadTool), erase(EditTool));
    runtime.block_on(call(&read, &json!({"file_path": file_path}), &ctx));
    // Each iteration flips the marker line, so every Edit finds exactly one old_string.
    let flips = [
        json!({"file_path": file_path, "old_string": before, "new_string": after}),
        json!({"file_path": file_path, "old_string": after, "new_string": before}),
    ];
    let mut next = 0;
    group.bench_function("edit_file", |b| {
        b.to_async(&runtime).iter(|| {
            let input = &flips[next % 2];
            next += 1;
            call(&edit, input, &ctx)
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = tools
}
criterion_main!(benches);
