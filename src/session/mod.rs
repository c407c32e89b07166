//! Sessions on disk: one append-only JSONL transcript per session under
//! `~/.ouro/projects/<cwd-derived>/<session-id>.jsonl`.

pub mod names;
pub mod transcript;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use transcript::{Loaded, Transcript, TranscriptError};

/// The folder holding this working directory's sessions.
pub fn project_dir(cwd: &Path) -> Option<PathBuf> {
    let derived = crate::settings::folder_name(cwd);
    crate::settings::ouro_home().map(|home| home.join("projects").join(derived))
}

pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub id: String,
    pub path: PathBuf,
    pub modified: SystemTime,
}

/// This directory's sessions, most recently used first.
pub fn list(cwd: &Path) -> Vec<SessionInfo> {
    let Some(dir) = project_dir(cwd) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<SessionInfo> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let path = e.path();
            if path.extension().and_then(|x| x.to_str()) != Some("jsonl") {
                return None;
            }
            let id = path.file_stem()?.to_string_lossy().into_owned();
            let modified = e.metadata().ok()?.modified().ok()?;
            Some(SessionInfo { id, path, modified })
        })
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.modified));
    out
}

/// The id of this directory's session that `id` names: the whole id, a session's name, or a
/// unique prefix of an id (as with git hashes; the picker shows eight characters). `Err` lists
/// the sessions a prefix fits when more than one does.
pub fn resolve(cwd: &Path, id: &str) -> Result<String, Vec<String>> {
    if id.is_empty() || locate(cwd, id).is_some() {
        return Ok(id.to_string());
    }
    // A name given with `--name` or `/rename`: its most recently used session.
    let sessions = list(cwd);
    if let Some(named) = names::Names::of(cwd)
        .and_then(|names| names.find(id, sessions.iter().map(|s| s.id.as_str())))
    {
        return Ok(named);
    }
    let mut matching: Vec<String> = sessions
        .into_iter()
        .map(|s| s.id)
        .filter(|s| s.starts_with(id))
        .collect();
    match matching.len() {
        0 => Ok(id.to_string()),
        1 => Ok(matching.remove(0)),
        _ => Err(matching),
    }
}

/// Where the transcript of `id` lives: a session id of this directory, or a path to a file.
pub fn locate(cwd: &Path, id: &str) -> Option<PathBuf> {
    let as_path = Path::new(id);
    if as_path.extension().is_some_and(|x| x == "jsonl") && as_path.is_file() {
        return Some(as_path.to_path_buf());
    }
    let path = project_dir(cwd)?.join(format!("{id}.jsonl"));
    path.is_file().then_some(path)
}
