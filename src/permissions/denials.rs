//! The deny rules on reading, for tools that walk directories (Grep, Glob): whatever a walk
//! finds is checked against them before anything about it, even its name, is shown.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Access;
use super::rules::{CompiledRule, RuleKind};

#[derive(Clone, Default)]
pub struct ReadDenials {
    rules: Arc<Vec<CompiledRule>>,
}

impl ReadDenials {
    pub(crate) fn from_rules<'a>(rules: impl Iterator<Item = &'a CompiledRule>) -> Self {
        let probe = Access::Read(PathBuf::new());
        ReadDenials {
            rules: Arc::new(
                rules
                    .filter(|r| r.kind == RuleKind::Deny && r.covers_tool("Grep", &probe))
                    .filter(|r| !r.is_whole_tool())
                    .cloned()
                    .collect(),
            ),
        }
    }

    /// Whether `path` (absolute), or the file it leads to, may not be read.
    pub fn denies(&self, path: &Path) -> bool {
        if self.rules.is_empty() {
            return false;
        }
        let real = std::fs::canonicalize(path).ok();
        self.rules.iter().any(|r| {
            r.catches_path(path) || real.as_deref().is_some_and(|real| r.catches_path(real))
        })
    }
}

impl std::fmt::Debug for ReadDenials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReadDenials({} rules)", self.rules.len())
    }
}
