//! What each file looked like when the model last read it, so Edit and Write can refuse to
//! overwrite changes the model has not seen.

use std::collections::HashMap;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileState {
    pub hash: u64,
    pub mtime: Option<SystemTime>,
    pub len: u64,
}

impl FileState {
    /// The state of a file whose whole content hashed to `hash` and whose metadata is `meta`.
    pub fn new(hash: u64, meta: &Metadata) -> Self {
        FileState {
            hash,
            mtime: meta.modified().ok(),
            len: meta.len(),
        }
    }

    /// Whether the file on disk still holds what was recorded. Matching mtime and size are
    /// trusted without hashing; when either differs (a `touch`, a save of identical text) the
    /// content decides, so only a real change counts. `hash` is only called in that case.
    pub(crate) fn is_current<E>(
        &self,
        meta: &Metadata,
        hash: impl FnOnce() -> Result<u64, E>,
    ) -> Result<bool, E> {
        let mtime = meta.modified().ok();
        if mtime.is_some() && mtime == self.mtime && meta.len() == self.len {
            return Ok(true);
        }
        if meta.len() != self.len {
            return Ok(false);
        }
        Ok(hash()? == self.hash)
    }
}

/// FNV-1a (64 bit) over a byte stream. Chosen because it gives the same result however the
/// bytes are split into chunks, so Read can hash while streaming and Edit can hash a buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ContentHasher(u64);

impl Default for ContentHasher {
    fn default() -> Self {
        ContentHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl ContentHasher {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) fn content_hash(bytes: &[u8]) -> u64 {
    let mut hasher = ContentHasher::default();
    hasher.update(bytes);
    hasher.finish()
}

#[derive(Debug, Default)]
pub struct FileStates {
    seen: Mutex<HashMap<PathBuf, FileState>>,
}

/// `/a/./b` and `/a//b` name the same file; the model is not consistent about such spellings.
fn key(path: &Path) -> PathBuf {
    path.components().collect()
}

impl FileStates {
    pub fn record(&self, path: &Path, state: FileState) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(key(path), state);
        }
    }

    pub fn get(&self, path: &Path) -> Option<FileState> {
        self.seen
            .lock()
            .ok()
            .and_then(|seen| seen.get(&key(path)).copied())
    }

    /// Whether `path` (now described by `meta`) may be overwritten: it must have been read in
    /// this session and still hold what was read. `hash` hashes its current content and is only
    /// called when mtime or size changed.
    pub(crate) fn check_fresh<E>(
        &self,
        path: &Path,
        meta: &Metadata,
        hash: impl FnOnce() -> Result<u64, E>,
    ) -> Result<Result<(), Staleness>, E> {
        let Some(state) = self.get(path) else {
            return Ok(Err(Staleness::NotRead));
        };
        Ok(if state.is_current(meta, hash)? {
            Ok(())
        } else {
            Err(Staleness::Modified)
        })
    }
}

/// Why a file may not be overwritten yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Staleness {
    /// The model never read it in this session.
    NotRead,
    /// It changed on disk after the model read it.
    Modified,
}

impl Staleness {
    /// A sentence telling the model what to do before it may `verb` (edit, overwrite) `path`.
    pub(crate) fn message(self, path: &Path, verb: &str) -> String {
        match self {
            Staleness::NotRead => format!(
                "{} has not been read in this session. Read it first, then {verb} it.",
                path.display()
            ),
            Staleness::Modified => format!(
                "{} was modified since it was read (by the user, a formatter or another tool). \
                 Read it again to see its current content, then {verb} it.",
                path.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_independent_of_chunking() {
        let data = b"line one\r\nline two\nthree";
        let mut hasher = ContentHasher::default();
        for chunk in data.chunks(3) {
            hasher.update(chunk);
        }
        assert_eq!(hasher.finish(), content_hash(data));
        assert_ne!(content_hash(b"a"), content_hash(b"b"));
    }

    #[test]
    fn paths_are_keyed_by_their_components() {
        let states = FileStates::default();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        states.record(&dir.path().join("./f.txt"), FileState::new(1, &meta));
        assert_eq!(states.get(&file).map(|s| s.hash), Some(1));
    }

    #[test]
    fn touched_file_with_same_content_is_current() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "hello").unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        let mut state = FileState::new(content_hash(b"hello"), &meta);
        state.mtime = Some(SystemTime::UNIX_EPOCH);
        let current = state.is_current(&meta, || Ok::<_, ()>(content_hash(b"hello")));
        assert_eq!(current, Ok(true));
        let changed = state.is_current(&meta, || Ok::<_, ()>(content_hash(b"jello")));
        assert_eq!(changed, Ok(false));
    }
}
