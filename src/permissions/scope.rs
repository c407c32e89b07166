//! What a decision is judged against besides the rules: the permission mode and where the
//! session may act (the project root and added directories; the home directory for `~`).

use std::path::{Path, PathBuf};

use super::mode::PermissionMode;
use super::rules::Anchor;

pub(crate) struct Scope {
    pub root: PathBuf,
    pub home: Option<PathBuf>,
    pub mode: PermissionMode,
    pub additional_dirs: Vec<PathBuf>,
}

impl Scope {
    /// Whether a resolved path is inside the project root or an added directory.
    pub fn is_inside(&self, resolved: &Path) -> bool {
        resolved.starts_with(&self.root)
            || self.additional_dirs.iter().any(|d| resolved.starts_with(d))
    }

    /// A path for messages: relative to the project root when inside it.
    pub fn display_path(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
            _ => path.display().to_string(),
        }
    }

    /// What rule paths are anchored to.
    pub fn anchor(&self) -> Anchor<'_> {
        Anchor {
            root: &self.root,
            home: self.home.as_deref(),
        }
    }
}
