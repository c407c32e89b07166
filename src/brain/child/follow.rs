//! Which session a terminal UI wrote. A brain's UI (Claude Code's TUI, ouro's REPL) keeps its
//! own transcripts; when it ends, the brain's series moves to the session it wrote, so the
//! next dispatch continues what was typed. A new conversation gets an id chosen at boot
//! (`--session-id`); a resume may hand out a new id. The record of a running UI is kept in the
//! brain's state directory, so a handle made after its owner died (a daemon crash) still
//! moves the series.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::brain::memory::SeriesCell;

const FILE: &str = "interact.json";

/// What a terminal UI's process started with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Follow {
    since: SystemTime,
    /// The id given to a new conversation.
    pinned: Option<String>,
    /// The id it was asked to resume.
    resumed: Option<String>,
}

impl Follow {
    pub(super) fn new(pinned: Option<String>, resumed: Option<String>) -> Follow {
        Follow {
            since: SystemTime::now(),
            pinned,
            resumed,
        }
    }

    /// Records the running UI in `state_dir` (best effort: without it only a crash loses the
    /// move).
    pub(super) fn save(&self, state_dir: &Path) {
        if let Err(e) = crate::sys::atomic::write_json(&state_dir.join(FILE), self) {
            tracing::warn!(error = %e, "could not record the running terminal UI");
        }
    }

    /// The record a UI left when its owner died, if any.
    pub(super) fn load(state_dir: &Path) -> Option<Follow> {
        crate::sys::atomic::read_json(&state_dir.join(FILE))
            .ok()
            .flatten()
    }

    /// Moves `series` to the session the UI wrote in `transcripts`, and drops the record.
    pub(super) fn apply(&self, transcripts: Option<&Path>, series: &SeriesCell, state_dir: &Path) {
        if let Some(exid) = transcripts.and_then(|dir| self.session(dir))
            && series.exid().as_deref() != Some(exid.as_str())
            && let Err(e) = series.update(|s| s.exid = exid)
        {
            tracing::warn!(error = %e, "could not record the session the terminal UI used");
        }
        let _ = std::fs::remove_file(state_dir.join(FILE));
    }

    /// The session the UI wrote: the pinned one if it exists; else the resumed one if it was
    /// written since the start, else (a resume that handed out a new id) the newest transcript
    /// begun since then.
    pub(super) fn session(&self, dir: &Path) -> Option<String> {
        // File times are coarse on some filesystems: a write in the same tick as the start
        // counts.
        let since = self
            .since
            .checked_sub(Duration::from_secs(1))
            .unwrap_or(self.since);
        let meta = |id: &str| std::fs::metadata(dir.join(format!("{id}.jsonl"))).ok();
        if let Some(id) = &self.pinned {
            // A UI that never wrote its session typed nothing worth following.
            return meta(id).is_some().then(|| id.clone());
        }
        if let Some(id) = &self.resumed
            && meta(id)
                .and_then(|m| m.modified().ok())
                .is_some_and(|t| t >= since)
        {
            return Some(id.clone());
        }
        std::fs::read_dir(dir)
            .ok()?
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let path = entry.path();
                if path.extension()? != "jsonl" {
                    return None;
                }
                let meta = entry.metadata().ok()?;
                let begun = meta.created().or_else(|_| meta.modified()).ok()?;
                let id = path.file_stem()?.to_string_lossy().into_owned();
                (begun >= since).then_some((begun, id))
            })
            .max()
            .map(|(_, id)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, id: &str) {
        std::fs::write(dir.join(format!("{id}.jsonl")), "{}\n").unwrap();
    }

    #[test]
    fn the_pinned_then_the_resumed_then_a_new_transcript_wins() {
        let dir = tempfile::tempdir().unwrap();
        let old = Follow {
            since: SystemTime::now() - Duration::from_secs(60),
            pinned: None,
            resumed: None,
        };
        touch(dir.path(), "other");
        let pinned = Follow::new(Some("p".into()), None);
        assert_eq!(
            pinned.session(dir.path()),
            None,
            "a new conversation never written"
        );
        touch(dir.path(), "p");
        assert_eq!(pinned.session(dir.path()).as_deref(), Some("p"));

        let resumed = Follow::new(None, Some("r".into()));
        touch(dir.path(), "r");
        assert_eq!(resumed.session(dir.path()).as_deref(), Some("r"));
        assert!(old.session(dir.path()).is_some());
    }

    #[test]
    fn a_record_left_by_a_crash_moves_the_series_once() {
        let dir = tempfile::tempdir().unwrap();
        let transcripts = dir.path().join("t");
        std::fs::create_dir_all(&transcripts).unwrap();
        let series = SeriesCell::load(dir.path()).unwrap();
        Follow::new(Some("typed".into()), None).save(dir.path());
        touch(&transcripts, "typed");
        let follow = Follow::load(dir.path()).unwrap();
        follow.apply(Some(&transcripts), &series, dir.path());
        assert_eq!(series.exid().as_deref(), Some("typed"));
        assert_eq!(Follow::load(dir.path()), None);
    }
}
