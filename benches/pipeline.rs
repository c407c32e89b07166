//! Per-call costs of the tool pipeline: JSON Schema validation (phase 1), the executor's own
//! overhead with many no-op concurrency-safe calls, and the bash analyser per command.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use ouro::exec::hooks::Hooks;
use ouro::exec::{Executor, NeverAsk};
use ouro::permissions::{Access, CliPermissions, PermissionEngine, bash};
use ouro::settings::{HookSettings, LayeredSettings};
use ouro::tools::{Progress, Tool, ToolContext, ToolError, ToolOutput, erase, pool};

/// A typical valid input for each built-in tool, and one invalid input.
fn inputs() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "Bash",
            "valid",
            json!({"command": "cargo test --lib", "timeout": 60000}),
        ),
        (
            "Edit",
            "valid",
            json!({"file_path": "/p/src/main.rs", "old_string": "a - b",
                                  "new_string": "a + b"}),
        ),
        (
            "Glob",
            "valid",
            json!({"pattern": "src/**/*.rs", "path": "/p"}),
        ),
        (
            "Grep",
            "valid",
            json!({"pattern": "fn \\w+", "output_mode": "content", "-n": true,
                                  "-C": 2, "glob": "*.rs", "head_limit": 50}),
        ),
        (
            "Read",
            "valid",
            json!({"file_path": "/p/src/main.rs", "offset": 10, "limit": 200}),
        ),
        (
            "Read",
            "invalid",
            json!({"file_path": 7, "limit": 0, "extra": true}),
        ),
        (
            "Write",
            "valid",
            json!({"file_path": "/p/notes.md", "content": "x".repeat(4096)}),
        ),
    ]
}

fn schema(c: &mut Criterion) {
    let tools = pool::builtin_tools();
    let mut group = c.benchmark_group("check_schema");
    for (name, kind, input) in inputs() {
        let tool = tools
            .iter()
            .find(|t| t.name() == name)
            .unwrap_or_else(|| panic!("no built-in tool {name}"));
        assert_eq!(
            tool.check_schema(&input).is_ok(),
            kind == "valid",
            "{name} {input}"
        );
        group.bench_with_input(BenchmarkId::new(name, kind), &input, |b, input| {
            b.iter(|| tool.check_schema(black_box(input)))
        });
    }
    group.finish();
}

/// Does nothing, in parallel with anything: what remains is the executor's own cost.
struct Noop;

#[derive(Deserialize, JsonSchema)]
struct NoopInput {
    n: u32,
}

impl Tool for Noop {
    type Input = NoopInput;

    const NAME: &'static str = "Noop";

    fn description(&self) -> &'static str {
        "Does nothing."
    }

    fn access(&self, _input: &NoopInput, _ctx: &ToolContext) -> Access {
        Access::None
    }

    fn is_read_only(&self, _input: &NoopInput) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &NoopInput) -> bool {
        true
    }

    fn summary(&self, input: &NoopInput) -> String {
        format!("no-op {}", input.n)
    }

    async fn call(
        &self,
        _input: NoopInput,
        _ctx: &ToolContext,
        _progress: &Progress,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::ok("ok"))
    }
}

fn executor(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let root = std::env::temp_dir();
    let policy = PermissionEngine::from_settings(
        &root,
        &LayeredSettings::default(),
        &CliPermissions::default(),
    )
    .expect("default permissions");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let executor = Executor::new(
        vec![erase(Noop)],
        ToolContext::new(root),
        Arc::new(policy),
        Arc::new(NeverAsk),
        Arc::new(Hooks::new(&HookSettings::default(), "bench")),
        tx,
    );
    let mut group = c.benchmark_group("executor_noop_batch");
    for calls in [1u64, 10, 100] {
        group.throughput(Throughput::Elements(calls));
        group.bench_with_input(BenchmarkId::from_parameter(calls), &calls, |b, &calls| {
            b.to_async(&runtime).iter(|| {
                let executor = executor.clone();
                async move {
                    let mut batch = executor.batch();
                    for n in 0..calls {
                        batch.submit(format!("toolu_{n}"), "Noop".into(), json!({ "n": n }));
                    }
                    let outcome = batch.finish().await;
                    assert_eq!(outcome.results.len(), calls as usize);
                    outcome
                }
            });
            while rx.try_recv().is_ok() {}
        });
    }
    group.finish();
}

fn bash_analyser(c: &mut Criterion) {
    let commands = [
        ("simple", "ls -la src"),
        ("and_list", "git status && git diff --stat HEAD~1"),
        (
            "pipeline",
            "cat Cargo.toml | grep -n version | head -5 | wc -l",
        ),
        (
            "substitution",
            "for f in $(ls src); do echo \"$f\" >> /tmp/list; done",
        ),
        (
            "sed",
            "sed -i 's/foo/bar/g' src/main.rs && cargo fmt -- --check",
        ),
        ("find_exec", "find . -name '*.rs' -exec grep -l TODO {} +"),
        (
            "long",
            "npm ci && npm run build && npm test -- --coverage 2>&1 | tee build.log",
        ),
    ];
    let mut group = c.benchmark_group("bash_analyse");
    for (name, command) in commands {
        group.bench_with_input(BenchmarkId::from_parameter(name), command, |b, command| {
            b.iter(|| bash::analyse(black_box(command)))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = schema, executor, bash_analyser
}
criterion_main!(benches);
