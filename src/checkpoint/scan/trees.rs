//! Tree objects: every folder's tree from the entries after a walk, or, after calls that said
//! which files they wrote, only the folders above those files, from the trees the last
//! snapshot made (a 10,000-file project has hundreds of folders; an Edit changes one path).

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};

use super::{Scan, split};
use crate::checkpoint::objects::{self, Kind, MODE_TREE, Oid, TreeEntry};

/// One entry of a folder being made into a tree: name, mode, object.
type Child = (Vec<u8>, u32, Oid);

/// How deep a folder lies: the root is 0.
fn depth(dir: &[u8]) -> usize {
    dir.iter().filter(|b| **b == b'/').count() + usize::from(!dir.is_empty())
}

/// `dir`, then each folder above it, up to the root (the empty path).
fn folders(dir: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::successors(Some(dir), |d| (!d.is_empty()).then(|| split(d).0))
}

impl Scan {
    /// Every folder's tree, deepest first; returns the root's.
    pub(super) fn write_trees(&mut self) -> std::io::Result<Oid> {
        self.trees.clear();
        let mut dirs: HashMap<Vec<u8>, Vec<Child>> = HashMap::new();
        dirs.insert(Vec::new(), Vec::new());
        for (path, entry) in &self.entries {
            let (dir, name) = split(path);
            dirs.entry(dir.to_vec())
                .or_default()
                .push((name.to_vec(), entry.mode, entry.oid));
            // Every ancestor exists, even one holding only folders.
            for ancestor in folders(dir).skip(1) {
                dirs.entry(ancestor.to_vec()).or_default();
            }
        }
        let mut order: Vec<Vec<u8>> = dirs.keys().cloned().collect();
        order.sort_by_key(|d| Reverse(depth(d)));
        for dir in order {
            let children = dirs.remove(&dir).unwrap_or_default();
            let oid = self.store_tree(&children)?;
            if !dir.is_empty() {
                let (parent, name) = split(&dir);
                dirs.entry(parent.to_vec())
                    .or_default()
                    .push((name.to_vec(), MODE_TREE, oid));
            }
            self.trees.insert(dir, oid);
        }
        self.root_tree()
    }

    /// The trees of the folders above `changed` (paths whose entries may differ since the last
    /// trees were made), the others as they were; every tree when there are none to go on.
    pub(super) fn update_trees(&mut self, changed: &[Vec<u8>]) -> std::io::Result<Oid> {
        if !self.trees.contains_key(&[][..]) {
            return self.write_trees();
        }
        let dirs: BTreeSet<Vec<u8>> = changed
            .iter()
            .flat_map(|path| folders(split(path).0))
            .map(<[u8]>::to_vec)
            .collect();
        let mut order: Vec<Vec<u8>> = dirs.into_iter().collect();
        order.sort_by_key(|d| Reverse(depth(d)));
        for dir in order {
            let children = self.children(&dir);
            // A folder left with nothing in it is no tree: git keeps no empty folders.
            if children.is_empty() && !dir.is_empty() {
                self.trees.remove(&dir);
                continue;
            }
            let oid = self.store_tree(&children)?;
            self.trees.insert(dir, oid);
        }
        self.root_tree()
    }

    fn root_tree(&self) -> std::io::Result<Oid> {
        self.trees
            .get(&[][..])
            .copied()
            .ok_or_else(|| std::io::Error::other("no root tree"))
    }

    /// What `dir` holds now: its files from the entries, its folders from their trees.
    fn children(&self, dir: &[u8]) -> Vec<Child> {
        let prefix = if dir.is_empty() {
            Vec::new()
        } else {
            [dir, b"/"].concat()
        };
        let mut out = Vec::new();
        let mut last_folder: Option<&[u8]> = None;
        for (path, entry) in self.entries.range(prefix.clone()..) {
            let Some(rest) = path.strip_prefix(prefix.as_slice()) else {
                break;
            };
            match rest.iter().position(|b| *b == b'/') {
                None => out.push((rest.to_vec(), entry.mode, entry.oid)),
                // A folder's paths lie together in the sorted entries: it is seen once.
                Some(at) if last_folder != Some(&rest[..at]) => {
                    let name = &rest[..at];
                    last_folder = Some(name);
                    let folder = [prefix.as_slice(), name].concat();
                    if let Some(oid) = self.trees.get(&folder) {
                        out.push((name.to_vec(), MODE_TREE, *oid));
                    }
                }
                Some(_) => {}
            }
        }
        out
    }

    /// Stores the tree of `children`; when it cannot be, no tree made so far is kept (some
    /// may name it), and the next snapshot makes them all.
    fn store_tree(&mut self, children: &[Child]) -> std::io::Result<Oid> {
        let bytes = objects::tree(
            children
                .iter()
                .map(|(name, mode, oid)| TreeEntry {
                    mode: *mode,
                    name,
                    oid: *oid,
                })
                .collect(),
        );
        self.put(Kind::Tree, &bytes)
            .inspect_err(|_| self.trees.clear())
    }
}
