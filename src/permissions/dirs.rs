//! The directories besides the project root a session may work in. `/add-dir` grows the list
//! while the session runs, so the permission engine and the sandbox share one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, RwLockReadGuard};

#[derive(Debug, Clone, Default)]
pub struct AddedDirs(Arc<RwLock<Vec<PathBuf>>>);

impl AddedDirs {
    /// Directories already resolved to absolute paths.
    pub fn new(dirs: Vec<PathBuf>) -> AddedDirs {
        AddedDirs(Arc::new(RwLock::new(dirs)))
    }

    pub fn list(&self) -> Vec<PathBuf> {
        self.read().clone()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Whether a resolved path is inside one of the directories.
    pub fn contain(&self, resolved: &Path) -> bool {
        self.read().iter().any(|d| resolved.starts_with(d))
    }

    /// Adds a resolved directory; `false` when it is already covered.
    pub fn add(&self, dir: PathBuf) -> bool {
        let mut dirs = match self.0.write() {
            Ok(d) => d,
            Err(poisoned) => poisoned.into_inner(),
        };
        if dirs.iter().any(|d| dir.starts_with(d)) {
            return false;
        }
        dirs.push(dir);
        true
    }

    fn read(&self) -> RwLockReadGuard<'_, Vec<PathBuf>> {
        match self.0.read() {
            Ok(d) => d,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

impl PartialEq for AddedDirs {
    fn eq(&self, other: &Self) -> bool {
        *self.read() == *other.read()
    }
}

impl Eq for AddedDirs {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_what_is_added() {
        let dirs = AddedDirs::default();
        let seen_by_sandbox = dirs.clone();
        assert!(dirs.add(PathBuf::from("/data/a")));
        assert!(!dirs.add(PathBuf::from("/data/a/b")), "already covered");
        assert!(seen_by_sandbox.contain(Path::new("/data/a/x.txt")));
        assert!(!seen_by_sandbox.contain(Path::new("/data/ab")));
        assert_eq!(seen_by_sandbox.list(), [PathBuf::from("/data/a")]);
    }
}
