//! The series: a brain's durable conversation. It names the supplier's conversation id (`exid`,
//! what `--resume` takes) and records every dispatch as an episode. It is stored as JSON in the
//! brain's state directory, so a new handle on the same directory picks up where the last one
//! stopped.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{BrainError, Metrics, Verb};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The supplier's conversation id; the latest one wins when a resume hands out a new id.
    pub exid: String,
    pub episodes: Vec<Episode>,
}

/// One dispatch in the series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    pub verb: Verb,
    pub prompt: String,
    pub text: String,
    pub is_error: bool,
    pub metrics: Metrics,
    /// The conversation id the supplier reported for this dispatch.
    pub exid: String,
    /// RFC 3339 time the answer arrived.
    pub(crate) finished_at: String,
}

/// Reads and writes the series file of one state directory.
#[derive(Debug, Clone)]
pub(crate) struct SeriesStore {
    path: PathBuf,
}

impl SeriesStore {
    pub(crate) const FILE_NAME: &'static str = "series.json";

    pub(crate) fn new(state_dir: &Path) -> Self {
        Self {
            path: state_dir.join(Self::FILE_NAME),
        }
    }

    /// The stored series, or `None` when this directory has none yet.
    pub(crate) fn load(&self) -> Result<Option<Series>, BrainError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.error("read", e.to_string())),
        };
        serde_json::from_str(&text).map(Some).map_err(|e| {
            self.error(
                "read",
                format!("{e}; move the file away to start a new conversation"),
            )
        })
    }

    /// Replaces the stored series; a crash mid-write leaves the old file intact.
    pub(crate) fn save(&self, series: &Series) -> Result<(), BrainError> {
        crate::sys::atomic::write_json(&self.path, series)
            .map_err(|e| self.error("write", e.to_string()))
    }

    fn error(&self, action: &'static str, reason: String) -> BrainError {
        BrainError::State {
            action,
            path: self.path.clone(),
            reason,
        }
    }
}

/// The series a brain handle holds, shared with the watchers of its processes: each change is
/// stored before anyone sees it.
#[derive(Debug)]
pub(crate) struct SeriesCell {
    store: SeriesStore,
    current: std::sync::Mutex<Option<Series>>,
}

impl SeriesCell {
    /// The series stored in `state_dir`, if any.
    pub(crate) fn load(state_dir: &Path) -> Result<Self, BrainError> {
        let store = SeriesStore::new(state_dir);
        let current = std::sync::Mutex::new(store.load()?);
        Ok(SeriesCell { store, current })
    }

    pub(crate) fn get(&self) -> Option<Series> {
        crate::sys::sync::lock(&self.current).clone()
    }

    pub(crate) fn exid(&self) -> Option<String> {
        crate::sys::sync::lock(&self.current)
            .as_ref()
            .map(|s| s.exid.clone())
    }

    /// Changes the series (creating it on first use) and stores it.
    pub(crate) fn update(&self, change: impl FnOnce(&mut Series)) -> Result<Series, BrainError> {
        let mut guard = crate::sys::sync::lock(&self.current);
        let mut series = guard.clone().unwrap_or(Series {
            exid: String::new(),
            episodes: Vec::new(),
        });
        change(&mut series);
        self.store.save(&series)?;
        *guard = Some(series.clone());
        Ok(series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series() -> Series {
        Series {
            exid: "abc".into(),
            episodes: vec![Episode {
                verb: Verb::Act,
                prompt: "fix it".into(),
                text: "fixed".into(),
                is_error: false,
                metrics: Metrics {
                    input_tokens: 3,
                    output_tokens: 4,
                    cost_usd: 0.5,
                    ..Metrics::default()
                },
                exid: "abc".into(),
                finished_at: "2026-11-22T00:00:00Z".into(),
            }],
        }
    }

    #[test]
    fn a_saved_series_loads_back_from_a_new_store() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        assert_eq!(SeriesStore::new(&nested).load().unwrap(), None);
        SeriesStore::new(&nested).save(&series()).unwrap();
        assert_eq!(SeriesStore::new(&nested).load().unwrap(), Some(series()));
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeriesStore::new(dir.path());
        std::fs::write(&store.path, "{not json").unwrap();
        let msg = store.load().unwrap_err().to_string();
        assert!(msg.contains("series.json"), "{msg}");
        assert!(msg.contains("move the file away"), "{msg}");
    }
}
