//! The deny rules on files, for what does not pass the permission phase path by path: tools
//! that walk directories (Grep, Glob) check whatever a walk finds before anything about it,
//! even its name, is shown; and Bash gets the denied paths as masks the OS sandbox enforces
//! (see [`crate::sys::masks`]), whatever the command spelled.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Access;
use super::rules::{CompiledRule, RuleKind};
use crate::sys::masks::Masks;

/// A pattern that needs a walk to find its paths (`**/.env`) may look at this many entries;
/// past it the command is refused, since a rule the sandbox cannot back must not silently
/// stop holding.
const WALK_LIMIT: usize = 50_000;

#[derive(Clone, Default)]
pub struct FileDenials {
    read: Arc<Vec<CompiledRule>>,
    edit: Arc<Vec<CompiledRule>>,
}

/// A deny rule whose paths could not all be found: the command must not run.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FindError {
    #[error(
        "the deny rule `{rule}` matches too many files to look for before each command (more than {WALK_LIMIT} entries under {}); name directories instead, e.g. `Read(secrets/**)`",
        base.display()
    )]
    TooBroad { rule: String, base: PathBuf },
    #[error("could not look for the paths of the deny rule `{rule}` at {}: {error}", path.display())]
    Unreadable {
        rule: String,
        path: PathBuf,
        error: String,
    },
}

impl FileDenials {
    pub(crate) fn from_rules<'a>(rules: impl Iterator<Item = &'a CompiledRule> + Clone) -> Self {
        let of = |tool: &str, access: Access| -> Vec<CompiledRule> {
            rules
                .clone()
                .filter(|r| r.kind == RuleKind::Deny && r.covers_tool(tool, &access))
                .filter(|r| !r.is_whole_tool())
                .cloned()
                .collect()
        };
        FileDenials {
            read: Arc::new(of("Grep", Access::Read(PathBuf::new()))),
            edit: Arc::new(of("Write", Access::Write(PathBuf::new()))),
        }
    }

    /// Whether `path` (absolute), or the file it leads to, may not be read.
    pub fn denies(&self, path: &Path) -> bool {
        if self.read.is_empty() {
            return false;
        }
        let real = std::fs::canonicalize(path).ok();
        self.read.iter().any(|r| {
            r.catches_path(path) || real.as_deref().is_some_and(|real| r.catches_path(real))
        })
    }

    pub fn is_empty(&self) -> bool {
        self.read.is_empty() && self.edit.is_empty()
    }

    /// Every existing path a deny rule catches: a rule on a directory's whole tree gives that
    /// directory, a pattern is looked for beneath its literal directories (hidden and ignored
    /// files included, symlinks not followed, no deeper than the pattern reaches). Any error
    /// but "not there" is an error: a path that cannot be looked at cannot be masked.
    pub fn find(&self) -> Result<Masks, FindError> {
        let mut masks = Masks::default();
        for (rules, list) in [
            (&self.read, &mut masks.hide),
            (&self.edit, &mut masks.freeze),
        ] {
            for rule in rules.iter() {
                collect(rule, list)?;
            }
            list.sort();
            list.dedup();
        }
        Ok(masks)
    }
}

fn absent(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// Adds what `rule` catches to `out`.
fn collect(rule: &CompiledRule, out: &mut Vec<PathBuf>) -> Result<(), FindError> {
    let unreadable = |path: &Path, error: String| FindError::Unreadable {
        rule: rule.text.clone(),
        path: path.to_path_buf(),
        error,
    };
    for reach in rule.reach() {
        match std::fs::symlink_metadata(reach.base) {
            Ok(_) => {}
            Err(e) if absent(&e) => continue,
            Err(e) => return Err(unreadable(reach.base, e.to_string())),
        }
        if reach.whole {
            out.push(reach.base.to_path_buf());
            continue;
        }
        let mut walk = ignore::WalkBuilder::new(reach.base);
        walk.standard_filters(false)
            .follow_links(false)
            .max_depth(reach.depth);
        let mut budget = WALK_LIMIT;
        let mut caught: Option<PathBuf> = None;
        for entry in walk.build() {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => match e.io_error() {
                    Some(io) if absent(io) => continue,
                    _ => return Err(unreadable(reach.base, e.to_string())),
                },
            };
            let path = entry.path();
            // A caught directory is covered whole: what is beneath needs no cover.
            if caught.as_deref().is_some_and(|c| path.starts_with(c)) {
                continue;
            }
            budget = budget.checked_sub(1).ok_or_else(|| FindError::TooBroad {
                rule: rule.text.clone(),
                base: reach.base.to_path_buf(),
            })?;
            if rule.catches_path(path) {
                out.push(path.to_path_buf());
                caught = Some(path.to_path_buf());
            }
        }
    }
    Ok(())
}

impl std::fmt::Debug for FileDenials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FileDenials({} read rules, {} edit rules)",
            self.read.len(),
            self.edit.len()
        )
    }
}
