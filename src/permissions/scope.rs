//! What a decision is judged against besides the rules: the permission mode and where the
//! session may act (the project root and added directories; the home directory for `~`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use super::dirs::AddedDirs;
use super::mode::PermissionMode;
use super::rules::Anchor;

pub(crate) struct Scope {
    pub root: PathBuf,
    pub home: Option<PathBuf>,
    /// An index into [`PermissionMode::ALL`]; Shift+Tab and the SDK change it mid-session.
    mode: AtomicU8,
    pub additional_dirs: AddedDirs,
}

impl Scope {
    pub(super) fn new(
        root: PathBuf,
        home: Option<PathBuf>,
        mode: PermissionMode,
        additional_dirs: AddedDirs,
    ) -> Scope {
        Scope {
            root,
            home,
            mode: AtomicU8::new(mode.index()),
            additional_dirs,
        }
    }

    pub(super) fn mode(&self) -> PermissionMode {
        PermissionMode::from_index(self.mode.load(Ordering::Relaxed))
    }

    pub(super) fn set_mode(&self, mode: PermissionMode) {
        self.mode.store(mode.index(), Ordering::Relaxed);
    }

    /// Whether a resolved path is inside the project root or an added directory.
    pub(super) fn is_inside(&self, resolved: &Path) -> bool {
        resolved.starts_with(&self.root) || self.additional_dirs.contain(resolved)
    }

    /// A path for messages: relative to the project root when inside it.
    pub(super) fn display_path(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
            _ => path.display().to_string(),
        }
    }

    /// What rule paths are anchored to.
    pub(super) fn anchor(&self) -> Anchor<'_> {
        Anchor {
            root: &self.root,
            home: self.home.as_deref(),
        }
    }
}
