//! `ouro demo`: a real run of the engine and tools against the built-in mock API, on a small
//! generated project, so anyone can see ouro work without an API key.

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;

use super::Args;
use super::print::{self, OutputFormat};
use crate::app::{self, Endpoint};
use crate::exec::NeverAsk;
use crate::mock::{MockServer, Scenario};

const SCENARIO: &str = include_str!("../../examples/demo.json");
const PROMPT: &str = "The add function gives wrong results. Find and fix it.";

pub async fn run() -> anyhow::Result<bool> {
    let project = tempfile_dir()?;
    let root = project.as_path();
    std::fs::create_dir_all(root.join("src"))?;
    std::fs::write(
        root.join("src/lib.rs"),
        "/// Adds two numbers.\npub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    )?;
    std::fs::write(
        root.join("README.md"),
        "# calc\nA tiny arithmetic library.\n",
    )?;
    let quoted = serde_json::to_string(&root.to_string_lossy())?;
    let inside_string = &quoted[1..quoted.len() - 1];
    let scenario = Scenario::from_json(&SCENARIO.replace("{root}", inside_string))
        .context("the bundled demo scenario is invalid")?;
    let server = MockServer::start(scenario)
        .await
        .context("could not start the mock API on loopback")?;
    eprintln!(
        "ouro demo: mock Messages API at {}, project in {}",
        server.url(),
        root.display()
    );
    eprintln!("> {PROMPT}\n");
    let args = Args::parse_from([
        "ouro",
        "-p",
        "--permission-mode",
        "acceptEdits",
        "--verbose",
        PROMPT,
    ]);
    let endpoint = Endpoint::with_key(server.url(), "demo-key");
    let mut options = args.options()?;
    options.persist = false;
    let session = app::build(&options, root, endpoint, Arc::new(NeverAsk))?;
    let mut engine = session.engine;
    let renderer = tokio::spawn(print::render(session.events, OutputFormat::Text, true));
    let cancel = tokio_util::sync::CancellationToken::new();
    let result = engine.run(PROMPT, &cancel).await;
    drop(engine);
    let _ = renderer.await;
    eprintln!(
        "\n{} API calls, {} tokens in ({} read from cache) / {} out, {} ms. The file now reads:\n{}",
        result.num_turns,
        result.usage.context_tokens(),
        result.usage.cache_read_input_tokens,
        result.usage.output_tokens,
        result.duration.as_millis(),
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap_or_default()
    );
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(root);
    Ok(!result.kind.is_error())
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("ouro-demo-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir.canonicalize()?)
}
