//! Builds a ready engine from flags, settings files and the environment.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::Args;
use crate::api::client::{Client, DEFAULT_BASE_URL};
use crate::engine::prompt::ProjectContext;
use crate::engine::{Conversation, DEFAULT_MODEL, Engine, EngineConfig};
use crate::event::Event;
use crate::exec::hooks::Hooks;
use crate::exec::{Asker, Executor};
use crate::permissions::PermissionEngine;
use crate::session::{self, Transcript};
use crate::settings::LayeredSettings;
use crate::tools::{ToolContext, pool};

/// Where requests go and with which key.
#[derive(Clone)]
pub struct Endpoint {
    pub base_url: String,
    pub api_key: String,
}

impl Endpoint {
    pub fn from_env() -> anyhow::Result<Self> {
        let api_key = std::env::var("ANTHROPIC_API_KEY").unwrap_or_default();
        if api_key.trim().is_empty() {
            bail!(
                "ANTHROPIC_API_KEY is not set. Export your Anthropic API key (export ANTHROPIC_API_KEY=sk-ant-...), or run `ouro demo` to try ouro against its built-in mock API."
            );
        }
        let base_url = std::env::var("ANTHROPIC_BASE_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        Ok(Endpoint { base_url, api_key })
    }
}

pub struct Session {
    pub engine: Engine,
    pub events: UnboundedReceiver<Event>,
    /// Set when an earlier conversation was loaded (`--resume`, `--continue`).
    pub resumed: bool,
    /// The live permission engine (rules granted during the session included), for `/permissions`.
    pub permissions: Arc<PermissionEngine>,
}

/// Everything a session needs, resolved from flags (highest), settings files and defaults.
pub fn build(
    args: &Args,
    cwd: &Path,
    endpoint: Endpoint,
    asker: Arc<dyn Asker>,
    persist: bool,
) -> anyhow::Result<Session> {
    // The slow, independent parts of start-up, loading the system's CA certificates and running
    // git for the prompt's environment facts, run on their own threads meanwhile.
    let client_job = std::thread::spawn(move || Client::new(endpoint.base_url, endpoint.api_key));
    let context_dir = cwd.to_path_buf();
    let context_job = std::thread::spawn(move || ProjectContext::gather(&context_dir));
    let layered = LayeredSettings::load(cwd)?;
    let settings = layered.merged();
    let cli_permissions = args
        .permissions
        .cli_permissions()
        .map_err(anyhow::Error::msg)?;
    let permissions = Arc::new(PermissionEngine::from_settings(
        cwd,
        &layered,
        &cli_permissions,
    )?);
    let mode = permissions.mode();

    let denied_tools: Vec<String> = settings
        .permissions
        .deny
        .iter()
        .chain(args.permissions.disallowed_tools.iter())
        .flat_map(|r| crate::permissions::split_rule_list(r))
        .filter(|r| !r.contains('('))
        .collect();
    let tools = pool::select(
        pool::builtin_tools(),
        args.tool_names().as_deref(),
        &denied_tools,
    );

    let (loaded, session_id, path) = resolve_session(args, cwd)?;
    let model = args
        .model_choice()?
        .or(settings.model.clone())
        .or_else(|| {
            std::env::var("ANTHROPIC_MODEL")
                .ok()
                .filter(|m| !m.is_empty())
        })
        .or(loaded.as_ref().and_then(|l| l.model.clone()))
        .unwrap_or_else(|| DEFAULT_MODEL.to_string());
    let transcript = match (persist, path) {
        (true, Some(path)) => Some(Transcript::open(&path, &session_id, cwd, &model)?),
        _ => None,
    };

    let client = client_job
        .join()
        .map_err(|_| anyhow::anyhow!("building the HTTP client failed unexpectedly"))??;
    let mut ctx = ToolContext::new(cwd.to_path_buf());
    ctx.env_passthrough = Arc::new(settings.bash_env_passthrough.clone());
    let hooks = Arc::new(Hooks::new(&settings.hooks, session_id.clone()));
    let (tx, rx) = unbounded_channel();
    let executor = Executor::new(tools, ctx, permissions.clone(), asker, hooks, tx.clone());

    let mut config = EngineConfig::new(model, cwd.to_path_buf());
    config.max_turns = args.max_turns;
    config.max_budget_usd = args.max_budget_usd;
    config.max_output_tokens = args.max_output_tokens;
    config.permission_mode = mode.to_string();
    if let Some(share) = settings.auto_compact_threshold {
        config.auto_compact_threshold = share;
    }
    if let Some(n) = args.max_retries {
        config.retry.max_retries = n;
    }
    let resumed = loaded.is_some();
    let history = loaded.map(|l| l.messages).unwrap_or_default();
    let context = context_job
        .join()
        .map_err(|_| anyhow::anyhow!("reading the project's instructions failed unexpectedly"))?;
    let conversation = Conversation {
        session_id,
        history,
        transcript,
    };
    let engine = Engine::new(client, executor, config, context, conversation, tx);
    Ok(Session {
        engine,
        events: rx,
        resumed,
        permissions,
    })
}

type Resolved = (Option<session::Loaded>, String, Option<std::path::PathBuf>);

fn resolve_session(args: &Args, cwd: &Path) -> anyhow::Result<Resolved> {
    let existing = if let Some(id) = &args.resume {
        Some(session::locate(cwd, id).with_context(|| {
            format!("There is no session `{id}` for this directory. Run `ouro --continue` for the latest one, or check the id under ~/.ouro/projects/.")
        })?)
    } else if args.continue_last {
        Some(
            session::list(cwd)
                .into_iter()
                .next()
                .map(|s| s.path)
                .context("There is no earlier session in this directory to continue. Start one with `ouro -p \"...\"`.")?,
        )
    } else {
        None
    };
    match existing {
        Some(path) => {
            let loaded = session::transcript::load(&path)?;
            let id = loaded
                .session_id
                .clone()
                .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .unwrap_or_else(session::new_session_id);
            Ok((Some(loaded), id, Some(path)))
        }
        None => {
            let id = session::new_session_id();
            let path = session::project_dir(cwd).map(|d| d.join(format!("{id}.jsonl")));
            Ok((None, id, path))
        }
    }
}
