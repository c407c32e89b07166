//! What each file looked like when the model last read it, so Edit and Write can refuse to
//! overwrite changes the model has not seen.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileState {
    pub hash: u64,
    pub mtime: Option<SystemTime>,
    pub len: u64,
}

#[derive(Debug, Default)]
pub struct FileStates {
    seen: Mutex<HashMap<PathBuf, FileState>>,
}

impl FileStates {
    pub fn record(&self, path: &Path, state: FileState) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(path.to_path_buf(), state);
        }
    }

    pub fn get(&self, path: &Path) -> Option<FileState> {
        self.seen
            .lock()
            .ok()
            .and_then(|seen| seen.get(path).copied())
    }
}
