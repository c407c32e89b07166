//! Clones on disk: `daemon/clones/<name>/clone.json` in ouro's home, and beside it `brain/`,
//! the brain's state (its series). A daemon that crashed or was stopped finds every clone
//! again here, with the conversation it was in.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::DaemonError;

const RECORD: &str = "clone.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct CloneRecord {
    pub name: String,
    /// The brain's slug (`ouro@anthropic/claude/sonnet`, `claude@…`).
    pub brain: String,
    /// The project directory the brain works in.
    pub dir: PathBuf,
    /// The permission mode of its dispatch turns; `None`: the brain's own settings decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// Secret-looking variables its brain may see (`--pass-env`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
    /// The clone is an agent instance's (`ouro agent run` made it and may replace it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub agent: bool,
    /// The zone whose daemon runs it: this daemon only relays to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone)]
pub(super) struct CloneStore {
    root: PathBuf,
}

impl CloneStore {
    pub(super) fn new(root: PathBuf) -> Self {
        CloneStore { root }
    }

    /// The folder of clone `name` (checked with [`check_name`] first).
    pub(super) fn dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    pub(super) fn brain_dir(&self, name: &str) -> PathBuf {
        self.dir(name).join("brain")
    }

    /// Every stored clone. A folder whose record cannot be read is skipped with a warning, so
    /// one damaged clone never hides the others.
    pub(super) fn load_all(&self) -> Vec<CloneRecord> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut records: Vec<CloneRecord> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let path = entry.path().join(RECORD);
                let text = std::fs::read(&path).ok()?;
                match serde_json::from_slice::<CloneRecord>(&text) {
                    Ok(record) if check_name(&record.name).is_ok() => Some(record),
                    Ok(_) | Err(_) => {
                        tracing::warn!(path = %path.display(), "skipping an unreadable clone record");
                        None
                    }
                }
            })
            .collect();
        records.sort_by(|a, b| a.name.cmp(&b.name));
        records
    }

    pub(super) fn save(&self, record: &CloneRecord) -> Result<(), DaemonError> {
        let path = self.dir(&record.name).join(RECORD);
        crate::sys::atomic::write_json(&path, record).map_err(|source| DaemonError::Io {
            action: "save the clone",
            path,
            source,
        })
    }

    pub(super) fn remove(&self, name: &str) -> Result<(), DaemonError> {
        let dir = self.dir(name);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(DaemonError::Io {
                action: "remove the clone",
                path: dir,
                source,
            }),
        }
    }
}

/// A clone's name is a folder name and a word on the command line: 1 to 64 letters, digits,
/// `-` and `_`, not starting with `-`.
pub(super) fn check_name(name: &str) -> Result<(), DaemonError> {
    if crate::text::is_id(name) {
        Ok(())
    } else {
        Err(DaemonError::BadName {
            name: name.to_string(),
        })
    }
}

/// A permission mode a clone's turns may run in: ouro's modes, and Claude Code's `auto`.
pub(super) fn check_mode(mode: &str) -> Result<(), DaemonError> {
    if mode == "auto" || mode.parse::<crate::permissions::PermissionMode>().is_ok() {
        return Ok(());
    }
    Err(DaemonError::Client(format!(
        "unknown permission mode `{mode}`; use one of: {}, auto",
        crate::permissions::PermissionMode::names()
    )))
}

/// The directory a new clone works in: absolute, existing, a directory.
pub(super) fn check_dir(dir: &Path) -> Result<PathBuf, DaemonError> {
    let canonical = dir.canonicalize().map_err(|source| DaemonError::Io {
        action: "open the clone's directory",
        path: dir.to_path_buf(),
        source,
    })?;
    if !canonical.is_dir() {
        return Err(DaemonError::Io {
            action: "use the clone's directory",
            path: canonical,
            source: std::io::Error::other("not a directory"),
        });
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_words() {
        for good in ["a", "web-1", "Build_2"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "../x",
            "a/b",
            ".",
            "..",
            "-rf",
            "é",
            "a b",
            &"x".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn records_survive_a_new_store_and_a_damaged_one_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let store = CloneStore::new(dir.path().to_path_buf());
        let record = CloneRecord {
            name: "c1".into(),
            brain: "ouro@anthropic/claude/sonnet".into(),
            dir: "/p".into(),
            permission_mode: Some("acceptEdits".into()),
            pass_env: Vec::new(),
            agent: false,
            zone: None,
            created_at: "2026-11-26T00:00:00Z".into(),
        };
        store.save(&record).unwrap();
        std::fs::create_dir_all(dir.path().join("broken")).unwrap();
        std::fs::write(dir.path().join("broken").join(RECORD), "{").unwrap();
        let again = CloneStore::new(dir.path().to_path_buf());
        assert_eq!(again.load_all(), vec![record]);
        again.remove("c1").unwrap();
        assert!(again.load_all().is_empty());
    }
}
