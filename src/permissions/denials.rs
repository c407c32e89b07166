//! The deny rules on files, for what does not pass the permission phase path by path: tools
//! that walk directories (Grep, Glob) check whatever a walk finds before anything about it,
//! even its name, is shown; and Bash gets the denied paths as masks the OS sandbox enforces
//! (see [`crate::sys::masks`]), whatever the command spelled.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Access;
use super::rules::{CompiledRule, RuleKind};
use crate::sys::masks::Masks;

/// A pattern that needs a walk to find its paths (`**/.env`) stops after this many entries;
/// the rule is then enforced by the permission checks alone, and the user is told.
const WALK_LIMIT: usize = 20_000;

#[derive(Clone, Default)]
pub struct FileDenials {
    read: Arc<Vec<CompiledRule>>,
    edit: Arc<Vec<CompiledRule>>,
}

/// The paths of the deny rules as they are on disk now, for one command.
#[derive(Debug, Default)]
pub struct Found {
    pub masks: Masks,
    /// Rules whose paths could not all be found within the walk limit.
    pub too_broad: Vec<String>,
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
    /// files included, symlinks not followed).
    pub fn find(&self) -> Found {
        let mut found = Found::default();
        let mut budget = WALK_LIMIT;
        for (rules, into_hide) in [(&self.read, true), (&self.edit, false)] {
            for rule in rules.iter() {
                let mut paths = Vec::new();
                let complete = collect(rule, &mut paths, &mut budget);
                if !complete {
                    found.too_broad.push(rule.text.clone());
                }
                let list = if into_hide {
                    &mut found.masks.hide
                } else {
                    &mut found.masks.freeze
                };
                list.extend(paths);
            }
        }
        for list in [&mut found.masks.hide, &mut found.masks.freeze] {
            list.sort();
            list.dedup();
        }
        found
    }
}

/// Adds what `rule` catches to `out`; `false` when the walk budget ran out first.
fn collect(rule: &CompiledRule, out: &mut Vec<PathBuf>, budget: &mut usize) -> bool {
    for (base, whole) in rule.reach() {
        if std::fs::symlink_metadata(base).is_err() {
            continue;
        }
        if whole {
            out.push(base.to_path_buf());
            continue;
        }
        let walk = ignore::WalkBuilder::new(base)
            .standard_filters(false)
            .follow_links(false)
            .build();
        let mut skip_below: Option<PathBuf> = None;
        for entry in walk.flatten() {
            let path = entry.path();
            if skip_below.as_deref().is_some_and(|s| path.starts_with(s)) {
                continue;
            }
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            if rule.catches_path(path) {
                out.push(path.to_path_buf());
                // A caught directory is covered whole: what is beneath needs no cover.
                skip_below = Some(path.to_path_buf());
            }
        }
    }
    true
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
