//! The `ouro` binary: parse flags, pick a front end, run. anyhow lives only here.

use std::io::{IsTerminal, Read};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Parser;
use tokio_util::sync::CancellationToken;

use ouro::api::mock::{MockServer, Scenario};
use ouro::cli::print::{self, OutputFormat};
use ouro::cli::setup::{self, Endpoint};
use ouro::cli::{Args, Command, demo};
use ouro::exec::NeverAsk;
use ouro::permissions::{CliPermissions, PermissionEngine, PermissionMode};
use ouro::settings::LayeredSettings;

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_env("OURO_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ouro: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(Args::parse())) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ouro: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .context("cannot read the current directory")?;
    match &args.command {
        Some(Command::Demo) => return Ok(exit(demo::run().await?)),
        Some(Command::MockServer { scenario, port }) => {
            let scenario = Scenario::from_file(scenario)?;
            let server =
                MockServer::start_on(SocketAddr::from(([127, 0, 0, 1], *port)), scenario).await?;
            println!("{}", server.url());
            eprintln!(
                "mock Messages API listening; set ANTHROPIC_BASE_URL={} (Ctrl-C stops)",
                server.url()
            );
            tokio::signal::ctrl_c().await?;
            server.shutdown().await;
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Permissions) => {
            let cli = CliPermissions {
                allowed: args.allowed_tools.clone(),
                disallowed: args.disallowed_tools.clone(),
                mode: args
                    .permission_mode
                    .as_deref()
                    .map(str::parse::<PermissionMode>)
                    .transpose()
                    .map_err(|e| anyhow::anyhow!("{e}"))?,
            };
            let engine =
                PermissionEngine::from_settings(&cwd, &LayeredSettings::load(&cwd)?, &cli)?;
            print!("{}", engine.describe());
            return Ok(ExitCode::SUCCESS);
        }
        None => {}
    }
    if !args.print {
        bail!(
            "the interactive session is not available in this build; run a single prompt with `ouro -p \"...\"`"
        );
    }
    print_mode(args, &cwd).await
}

async fn print_mode(args: Args, cwd: &std::path::Path) -> anyhow::Result<ExitCode> {
    let prompt = match &args.prompt {
        Some(p) => p.clone(),
        None if !std::io::stdin().is_terminal() => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("could not read the prompt from stdin")?;
            text
        }
        None => String::new(),
    };
    if prompt.trim().is_empty() {
        bail!("no prompt given: pass it as an argument (ouro -p \"...\") or on stdin");
    }
    let session = setup::build(&args, cwd, Endpoint::from_env()?, Arc::new(NeverAsk), true)?;
    let mut engine = session.engine;
    let format: OutputFormat = args.output_format;
    let renderer = tokio::spawn(print::render(session.events, format, args.verbose));
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    let result = engine.run(&prompt, &cancel).await;
    drop(engine);
    let _ = renderer.await;
    Ok(exit(!result.kind.is_error()))
}

fn exit(success: bool) -> ExitCode {
    if success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
