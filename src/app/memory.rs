//! Memory in a session: the stores it reads (the project's only once the project is trusted,
//! the user's always), whether its turns are reflected on, and keeping what reflect proposes.

use std::path::{Path, PathBuf};

use super::{AppError, Options, offered};
use crate::engine::Engine;
use crate::engine::reflect::Reflected;
use crate::event::ReflectInfo;
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
}

/// The reflect step this session runs: `None` when `memory.reflect` is off, or the project is
/// not trusted (nothing it brings, memory included, takes effect before that).
pub(super) fn plan(
    settings: &MemorySettings,
    root: &Path,
    trusted: bool,
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
) -> Toolbox {
    if !offered(options, denied, crate::tools::recall::NAME) {
        return tools;
    }
    let stores = crate::knowledge::stores(root, trusted);
    if !reflecting && !stores.iter().any(|(_, path)| path.exists()) {
        return tools;
    }
    tools.with_tool(crate::tools::erase(crate::tools::recall::RecallTool::new(
        stores,
    )))
}

/// Keeps `operations` of a reflect in the project's store: (how many were applied, why none
/// were).
pub fn keep(
    memory: &Memory,
    done: &Reflected,
    operations: &[Operation],
) -> (usize, Option<String>) {
    if operations.is_empty() {
        return (0, None);
    }
    match Store::open(&memory.store)
        .and_then(|mut s| s.apply(operations, done.turn.origin(), &done.provenance))
    {
        Ok(applied) => (applied.total(), None),
        Err(e) => (0, Some(e.to_string())),
    }
}

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
    let commit = head_commit(&memory.root);
    let request = engine.reflect_request(&memory.model, &memory.store, commit)?;
    let done = request.await;
    let (stored, error) = keep(memory, &done, &done.proposal.operations);
    Some(engine.reflected(&done, "auto", stored, error))
}
