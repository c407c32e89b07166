//! Memory in a session: the stores it reads (the project's only once the project is trusted,
//! the user's always), whether its turns are reflected on, and keeping what reflect proposes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{AppError, Options, offered};
use crate::engine::Engine;
use crate::engine::reflect::Reflected;
use crate::event::ReflectInfo;
use crate::knowledge::embed::Embedder;
use crate::knowledge::reflect::{DEFAULT_MODEL, Mode};
use crate::knowledge::{Operation, Store};
use crate::settings::MemorySettings;
use crate::tools::Toolbox;

/// How a session's turns are reflected on.
#[derive(Debug, Clone)]
pub struct Memory {
    pub mode: Mode,
    pub model: String,
    /// The project's store, where reflect's memories go.
    pub store: PathBuf,
    pub root: PathBuf,
    /// Gives what is kept its vectors (`memory.embeddings`).
    pub embedder: Option<Arc<Embedder>>,
}

/// The embedding model `memory.embeddings` names, if any (loaded on first use).
pub fn embedder(settings: &MemorySettings, root: &Path) -> Result<Option<Arc<Embedder>>, AppError> {
    settings
        .embeddings
        .as_ref()
        .map(|e| Embedder::from_settings(e, root))
        .transpose()
        .map_err(|e| AppError::InvalidSetting {
            key: "memory.embeddings",
            reason: e.to_string(),
        })
}

/// The embedding model the settings files name for `root` (the project's own only once it is
/// trusted; with `user_only`, the user's alone: what a run in another folder sees).
pub fn configured_embedder(
    root: &Path,
    user_only: bool,
) -> Result<Option<Arc<Embedder>>, AppError> {
    let mut layers = crate::settings::LayeredSettings::load(root)?;
    if user_only {
        layers.keep_sources(&["user".to_string()])?;
    }
    layers.drop_untrusted_widenings();
    embedder(&layers.merged().memory, root)
}

/// The reflect step this session runs: `None` when `memory.reflect` is off, or the project is
/// not trusted (nothing it brings, memory included, takes effect before that).
pub(super) fn plan(
    settings: &MemorySettings,
    root: &Path,
    trusted: bool,
    embedder: Option<Arc<Embedder>>,
) -> Result<Option<Memory>, AppError> {
    let mode = match settings.reflect.as_deref() {
        None => Mode::Off,
        Some(text) => Mode::parse(text).ok_or_else(|| AppError::InvalidSetting {
            key: "memory.reflect",
            reason: format!("{text:?} is not one of off, ask, auto"),
        })?,
    };
    if mode == Mode::Off || !trusted {
        return Ok(None);
    }
    let Some(store) = crate::knowledge::project_store(root) else {
        return Ok(None);
    };
    Ok(Some(Memory {
        mode,
        model: settings
            .model
            .clone()
            .unwrap_or_else(|| DEFAULT_MODEL.into()),
        store,
        root: root.to_path_buf(),
        embedder,
    }))
}

/// The session's tools plus Recall, when there is memory to read (or reflect will write some)
/// and neither `--tools` nor a rule leaves it out.
pub(super) fn with_recall(
    tools: Toolbox,
    options: &Options,
    denied: &[String],
    root: &Path,
    trusted: bool,
    reflecting: bool,
    embedder: Option<Arc<Embedder>>,
) -> Toolbox {
    if options.bare || !offered(options, denied, crate::tools::recall::NAME) {
        return tools;
    }
    let stores = crate::knowledge::stores(root, trusted);
    if !reflecting && !stores.iter().any(|(_, path)| path.exists()) {
        return tools;
    }
    tools.with_tool(crate::tools::erase(crate::tools::recall::RecallTool::new(
        stores, embedder,
    )))
}

/// Keeps `operations` of a reflect in the project's store, then gives the new memories their
/// vectors: (how many operations were applied, why none were or why the vectors are missing).
pub async fn keep(
    memory: &Memory,
    done: &Reflected,
    operations: &[Operation],
) -> (usize, Option<String>) {
    if operations.is_empty() {
        return (0, None);
    }
    // SQLite waits out another process's write for up to its busy timeout: on a blocking
    // thread, not the one a print-mode session runs on.
    let (path, operations) = (memory.store.clone(), operations.to_vec());
    let (origin, provenance) = (done.turn.origin(), done.provenance.clone());
    let written = tokio::task::spawn_blocking(move || {
        let mut store = Store::open(&path).map_err(|e| e.to_string())?;
        let applied = store
            .apply(&operations, origin, &provenance)
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((store, applied.total()))
    })
    .await
    .unwrap_or_else(|e| Err(format!("keeping the memories stopped unexpectedly: {e}")));
    let (mut store, applied) = match written {
        Ok(written) => written,
        Err(e) => return (0, Some(e)),
    };
    let Some(embedder) = &memory.embedder else {
        return (applied, None);
    };
    let vectors = crate::knowledge::embed::backfill(&mut store, embedder, Some(KEEP_VECTORS)).await;
    (applied, vectors.err().map(|e| e.to_string()))
}

/// Vectors made after one turn's reflect at most; the rest wait for the next write or
/// `ouro memory embed`.
const KEEP_VECTORS: usize = 256;

/// The project's commit now, for a memory's provenance.
pub fn head_commit(root: &Path) -> Option<String> {
    let out = crate::sys::git::in_work_tree("git", root)
        .args(["rev-parse", "--verify", "-q", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// Reflects on the engine's last turn and keeps every proposal (`auto`; print mode, where
/// nobody is there to ask, keeps them in `ask` too and says so in the mode).
pub async fn reflect_and_keep(engine: &mut Engine, memory: &Memory) -> Option<ReflectInfo> {
    let root = memory.root.clone();
    let commit = tokio::task::spawn_blocking(move || head_commit(&root))
        .await
        .ok()
        .flatten();
    let request = engine.reflect_request(&memory.model, &memory.store, commit)?;
    let done = request.await;
    let (stored, error) = keep(memory, &done, &done.proposal.operations).await;
    Some(engine.reflected(&done, "auto", stored, error))
}
