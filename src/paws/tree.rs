//! A context bundle made into a tree of files: the starting tree of an agent's run (`ouro agent
//! run --context`, IPC's `initialContextArtifactPath`).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::parse::{Block, Reply};

#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("could not {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a context bundle ouro can use: {reason}", path.display())]
    Bundle { path: PathBuf, reason: String },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> TreeError + use<> {
    let path = path.to_path_buf();
    move |source| TreeError::Io { what, path, source }
}

/// Writes the files of the cats bundle at `bundle` into `tree` (made here, and empty: nothing
/// in it can be a link a file would be written through); the number of files.
pub fn materialise(bundle: &Path, tree: &Path) -> Result<usize, TreeError> {
    let bytes = std::fs::read(bundle).map_err(io("read", bundle))?;
    let bad = |reason: String| TreeError::Bundle {
        path: bundle.to_path_buf(),
        reason,
    };
    let blocks = match crate::paws::parse::parse(&bytes) {
        Ok(Reply::Changes { blocks, .. }) => blocks,
        Ok(Reply::RequestContext(_)) => {
            return Err(bad("it asks for context instead of holding files".into()));
        }
        Err(e) => return Err(bad(e.to_string())),
    };
    std::fs::create_dir_all(tree).map_err(io("create", tree))?;
    let mut written = 0;
    for block in blocks {
        // A context bundle carries whole files: an edit has no file to apply to here.
        let Block::Full { path, content, .. } = block else {
            return Err(bad(format!(
                "{} is an edit, not a whole file (a context bundle is made by `ouro cats`)",
                String::from_utf8_lossy(block.path())
            )));
        };
        let rel = relative(&path)
            .map_err(|why| bad(format!("{}: {why}", String::from_utf8_lossy(&path))))?;
        let file = tree.join(rel);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(io("create", parent))?;
        }
        std::fs::write(&file, content).map_err(io("write", &file))?;
        written += 1;
    }
    Ok(written)
}

/// A bundle's path as one beneath the tree: relative, plain names only.
fn relative(raw: &[u8]) -> Result<PathBuf, &'static str> {
    if raw.contains(&0) {
        return Err("the path holds a NUL byte");
    }
    let mut clean = PathBuf::new();
    for component in Path::new(OsStr::from_bytes(raw)).components() {
        match component {
            // A repository's own folder is never a project's content (cats leaves it out): a
            // `.git` written here would be a repository whose config (an fsmonitor, hooks)
            // runs programs at the next `git status`.
            Component::Normal(name) if name.eq_ignore_ascii_case(".git") => {
                return Err("a path in .git, which is a repository's own, not a project's file");
            }
            Component::Normal(name) => clean.push(name),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err("an absolute path; a bundle's paths are relative to its tree");
            }
            Component::ParentDir => return Err("the path leaves the tree (`..`)"),
        }
    }
    if clean.as_os_str().is_empty() {
        return Err("an empty path");
    }
    Ok(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cats_bundle_becomes_a_tree_and_a_path_out_of_it_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let entries = [
            crate::paws::format::Entry {
                path: b"src/a.rs".to_vec(),
                content: b"fn a() {}\n".to_vec(),
            },
            crate::paws::format::Entry {
                path: b"bare.txt".to_vec(),
                content: b"no newline".to_vec(),
            },
            crate::paws::format::Entry {
                path: b"img.bin".to_vec(),
                content: vec![0, 1, 2, 255],
            },
        ];
        let bundle = dir.path().join("context.md");
        std::fs::write(&bundle, crate::paws::format::bundle(&entries, true)).unwrap();
        let tree = dir.path().join("tree");
        assert_eq!(materialise(&bundle, &tree).unwrap(), 3);
        for entry in &entries {
            let path = tree.join(std::str::from_utf8(&entry.path).unwrap());
            assert_eq!(std::fs::read(path).unwrap(), entry.content);
        }

        let escaping = [crate::paws::format::Entry {
            path: b"../out.txt".to_vec(),
            content: b"x".to_vec(),
        }];
        std::fs::write(&bundle, crate::paws::format::bundle(&escaping, false)).unwrap();
        let err = materialise(&bundle, &dir.path().join("t2"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("../out.txt") && err.contains("leaves the tree"),
            "{err}"
        );
        assert!(!dir.path().join("out.txt").exists());
        assert_eq!(
            relative(b"/etc/passwd"),
            Err("an absolute path; a bundle's paths are relative to its tree")
        );
        assert_eq!(relative(b"./a/./b").unwrap(), PathBuf::from("a/b"));
        for planted in [
            &b".git/config"[..],
            b"sub/.git/hooks/pre-commit",
            b".GIT/HEAD",
        ] {
            assert!(relative(planted).is_err(), "{planted:?}");
        }
        assert!(relative(b".github/workflows/ci.yml").is_ok());

        std::fs::write(&bundle, "🐕 --- DOGS_START_FILE: a.txt ---\n@@ PAWS_CMD DELETE_FILE() @@\n🐕 --- DOGS_END_FILE: a.txt ---\n").unwrap();
        let err = materialise(&bundle, &dir.path().join("t3"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("a.txt is an edit"), "{err}");
    }
}
