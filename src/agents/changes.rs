//! What an agent run changed in its tree: a snapshot of every file's digest before the run,
//! compared with the tree after it. Only digests are kept, not copies: the result (a dogs
//! bundle) carries new contents and deletions, never old contents.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ring::digest::{SHA256, digest};

pub use crate::paws::artifact::FileChange as Change;

/// The tree as it was: each file (relative path) with the SHA-256 of its bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    files: BTreeMap<PathBuf, Vec<u8>>,
}

impl Snapshot {
    /// The files of `root` as a run finds them.
    pub fn take(root: &Path) -> std::io::Result<Snapshot> {
        let mut files = BTreeMap::new();
        for (rel, path) in walk(root)? {
            let bytes = std::fs::read(&path)?;
            files.insert(rel, digest(&SHA256, &bytes).as_ref().to_vec());
        }
        Ok(Snapshot { files })
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// What differs in `root` now, in path order.
    pub fn changes(&self, root: &Path) -> std::io::Result<Vec<Change>> {
        let mut out = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for (rel, path) in walk(root)? {
            let bytes = std::fs::read(&path)?;
            let same = self
                .files
                .get(&rel)
                .is_some_and(|before| before.as_slice() == digest(&SHA256, &bytes).as_ref());
            if !same {
                out.push(Change::Write {
                    path: rel.clone(),
                    bytes,
                });
            }
            seen.insert(rel);
        }
        out.extend(
            self.files
                .keys()
                .filter(|rel| !seen.contains(*rel))
                .map(|rel| Change::Delete { path: rel.clone() }),
        );
        out.sort_by(|a, b| path_of(a).cmp(path_of(b)));
        Ok(out)
    }
}

fn path_of(change: &Change) -> &Path {
    match change {
        Change::Write { path, .. } | Change::Delete { path } => path,
    }
}

/// The regular files of `root` a bundle may carry: hidden ones too, but not `.git/` nor what
/// the tree's ignore files leave out (build output, dependencies); links are not followed.
fn walk(root: &Path) -> std::io::Result<Vec<(PathBuf, PathBuf)>> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker {
        let entry = entry.map_err(std::io::Error::other)?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.into_path();
        let rel = path
            .strip_prefix(root)
            .map_err(std::io::Error::other)?
            .to_path_buf();
        out.push((rel, path));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_new_changed_and_deleted_files_but_not_ignored_ones() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("keep.txt", "same\n");
        write("edit.txt", "old\n");
        write("gone.txt", "bye\n");
        write(".gitignore", "target/\n");
        write(".git/HEAD", "ref\n");
        let before = Snapshot::take(root).unwrap();
        assert_eq!(before.len(), 4, ".git is not part of the tree");

        write("edit.txt", "new\n");
        std::fs::remove_file(root.join("gone.txt")).unwrap();
        write("src/added.rs", "fn main() {}\n");
        write("target/out.bin", "built");
        write(".git/HEAD", "other\n");
        let changes = before.changes(root).unwrap();
        assert_eq!(
            changes,
            vec![
                Change::Write {
                    path: "edit.txt".into(),
                    bytes: b"new\n".to_vec()
                },
                Change::Delete {
                    path: "gone.txt".into()
                },
                Change::Write {
                    path: "src/added.rs".into(),
                    bytes: b"fn main() {}\n".to_vec()
                },
            ]
        );
        assert!(
            Snapshot::take(root)
                .unwrap()
                .changes(root)
                .unwrap()
                .is_empty()
        );
    }
}
