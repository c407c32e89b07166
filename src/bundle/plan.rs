//! From a parsed reply to the exact bytes each file will have, checked whole before anything
//! is written: every path stays inside the target directory (no `..`, no absolute path, no
//! symbolic link on the way), every edit finds its text once, no file changed on disk since it
//! was bundled. Any failure rejects the bundle and names every problem.

use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;

use super::edit::{self, Text};
use super::format::matches_digest;
use super::parse::Block;

/// What one file becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Relative to the target directory.
    pub path: PathBuf,
    /// The file now: its bytes and mode; `None` if it does not exist.
    pub before: Option<(Vec<u8>, u32)>,
    /// `None`: deleted.
    pub after: Option<Vec<u8>>,
    /// Why writing this file needs an explicit yes (it runs or instructs things later).
    pub protected: Option<&'static str>,
}

impl Change {
    pub fn kind(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, Some(_)) => "create",
            (Some(_), None) => "delete",
            _ => "change",
        }
    }
}

/// A file's bytes and mode.
type Disk = (Vec<u8>, u32);

/// Per path: the file now, the state the blocks so far give it, whether a whole file was given.
type Planned = (Option<Disk>, Option<Vec<u8>>, bool);

/// Every change, or every reason the bundle is rejected.
pub(super) fn plan(
    dir: &Path,
    blocks: Vec<Block>,
    manifest: &[(Vec<u8>, String)],
    ignore_drift: bool,
) -> Result<Vec<Change>, Vec<String>> {
    // The target's own settings may protect more (`permissions.protectedPaths`); a file that
    // cannot be read protects nothing more, and says so.
    match crate::settings::LayeredSettings::load(dir) {
        Ok(settings) => {
            crate::permissions::protect_also(dir, &settings.merged().permissions.protected_paths);
        }
        Err(e) => eprintln!("ouro: warning: {e}"),
    }
    // Every path is checked and every file read on every core first: a large bundle waits on
    // the disk here, and only the steps below depend on each other.
    let paths: Vec<Result<PathBuf, String>> = blocks
        .par_iter()
        .map(|block| safe_path(dir, block.path()))
        .collect();
    let mut unique = HashSet::new();
    let firsts: Vec<&PathBuf> = paths
        .iter()
        .flatten()
        .filter(|path| unique.insert(*path))
        .collect();
    let mut now: HashMap<&PathBuf, Result<Option<Disk>, String>> = firsts
        .par_iter()
        .map(|path| (*path, current(dir, path)))
        .collect();
    let mut problems = Vec::new();
    let mut files: HashMap<PathBuf, Planned> = HashMap::new();
    let mut order: Vec<PathBuf> = Vec::new();
    for (block, path) in blocks.into_iter().zip(&paths) {
        let shown = || String::from_utf8_lossy(block.path()).into_owned();
        let path = match path {
            Ok(path) => path,
            Err(why) => {
                problems.push(format!("{}: {why}", shown()));
                continue;
            }
        };
        if let Some(read) = now.remove(path) {
            match read {
                Ok(now) => {
                    let after = now.as_ref().map(|(bytes, _)| bytes.clone());
                    files.insert(path.clone(), (now, after, false));
                    order.push(path.clone());
                }
                Err(why) => {
                    problems.push(format!("{}: {why}", shown()));
                    continue;
                }
            }
        }
        let Some((before, after, whole)) = files.get_mut(path) else {
            continue;
        };
        let shown = shown();
        if let Err(why) = step(block, before.as_ref(), after, whole) {
            problems.push(format!("{shown}: {why}"));
        }
    }
    let hashes: HashMap<&[u8], &str> = manifest
        .iter()
        .map(|(p, h)| (p.as_slice(), h.as_str()))
        .collect();
    let mut changes = Vec::new();
    for path in order {
        let Some((before, after, _)) = files.remove(&path) else {
            continue;
        };
        if before.as_ref().map(|(b, _)| b) == after.as_ref() {
            continue;
        }
        // A file that is gone is created again: only an edit over someone else's changes is
        // drift.
        if !ignore_drift
            && let Some(expected) = hashes.get(path.as_os_str().as_bytes())
            && let Some((now, _)) = &before
            && !matches_digest(expected, now)
        {
            problems.push(format!(
                "{}: changed on disk since it was bundled; bundle it again, or pass --force to overwrite it",
                path.display()
            ));
        }
        changes.push(Change {
            protected: None,
            path,
            before,
            after,
        });
    }
    // Judged inside the target: where the target itself lives does not count.
    changes
        .par_iter_mut()
        .for_each(|c| c.protected = crate::permissions::protection_in(dir, &c.path));
    // A path written as a file and used as a folder by another path of the same bundle.
    let written: HashSet<&Path> = changes
        .iter()
        .filter(|c| c.after.is_some())
        .map(|c| c.path.as_path())
        .collect();
    for change in changes.iter().filter(|c| c.after.is_some()) {
        if let Some(file) = change
            .path
            .ancestors()
            .skip(1)
            .find(|a| written.contains(a))
        {
            problems.push(format!(
                "{}: written as a file, but {} needs it to be a folder",
                file.display(),
                change.path.display()
            ));
        }
    }
    if problems.is_empty() {
        Ok(changes)
    } else {
        Err(problems)
    }
}

const TWICE: &str =
    "the reply gives this whole file, or deletes it, more than once; keep one of them";

/// One block applied to a file's planned state (a whole file's content moves into it).
fn step(
    block: Block,
    before: Option<&(Vec<u8>, u32)>,
    after: &mut Option<Vec<u8>>,
    whole: &mut bool,
) -> Result<(), String> {
    match block {
        Block::Full {
            content,
            binary,
            machine,
            ..
        } => {
            if *whole {
                return Err(TWICE.into());
            }
            *whole = true;
            *after = Some(if machine || binary {
                content
            } else {
                model_newline(content, before.map(|(b, _)| b.as_slice()))
            });
        }
        Block::Delete { .. } => {
            // A whole file and its deletion are two answers to one question.
            if *whole {
                return Err(TWICE.into());
            }
            *whole = true;
            if after.is_none() {
                return Err("deleting a file that does not exist".into());
            }
            *after = None;
        }
        Block::Lines { commands, .. } => {
            let text = after
                .as_mut()
                .ok_or("line commands on a file that does not exist")?;
            let mut t = Text::parse(text);
            edit::apply_lines(&mut t, &commands).map_err(|e| e.to_string())?;
            *text = t.to_bytes();
        }
        Block::SearchReplace {
            search, replace, ..
        } => match after {
            None if search.iter().all(|l| l.is_empty()) => {
                *after = Some(edit::lines_to_bytes(&replace));
            }
            None => return Err("SEARCH/REPLACE on a file that does not exist".into()),
            Some(text) => {
                let mut t = Text::parse(text);
                edit::replace_unique(&mut t, &search, &replace).map_err(|e| e.to_string())?;
                *text = t.to_bytes();
            }
        },
        Block::Diff { old, new, hunks } => match (old, new) {
            (None, Some(_)) => {
                if after.is_some() {
                    return Err("the diff creates a file that exists".into());
                }
                let lines: Vec<_> = hunks.iter().flat_map(|h| h.new.iter().cloned()).collect();
                *after = Some(edit::lines_to_bytes(&lines));
            }
            (Some(_), None) => {
                if after.is_none() {
                    return Err("the diff deletes a file that does not exist".into());
                }
                *after = None;
            }
            _ => {
                let text = after
                    .as_mut()
                    .ok_or("a diff of a file that does not exist")?;
                let mut t = Text::parse(text);
                let mut shift = 0isize;
                for (n, hunk) in hunks.iter().enumerate() {
                    edit::apply_hunk(&mut t, hunk, shift)
                        .map_err(|e| format!("hunk {}: {e}", n + 1))?;
                    shift += hunk.new.len() as isize - hunk.old.len() as isize;
                }
                *text = t.to_bytes();
            }
        },
    }
    Ok(())
}

/// PAWS-FORMAT §5: a model writes a file's last line right before the closing fence and
/// means it to end with a newline. A new file gets one (unless its block ended with a blank
/// line, which already is one); an existing file keeps whether it had one.
fn model_newline(mut out: Vec<u8>, before: Option<&[u8]>) -> Vec<u8> {
    let wants = before.is_none_or(|b| b.ends_with(b"\n") || b.is_empty());
    match (wants, out.ends_with(b"\n")) {
        (true, false) if !out.is_empty() => out.push(b'\n'),
        (false, true) if before.is_some() => {
            out.pop();
        }
        _ => {}
    }
    out
}

/// `raw` as a path inside `dir`: relative, plain names only, and no symbolic link on the way
/// (nor at the end: a write would go where it points).
fn safe_path(dir: &Path, raw: &[u8]) -> Result<PathBuf, String> {
    if raw.contains(&0) {
        return Err("the path holds a NUL byte".into());
    }
    let path = Path::new(std::ffi::OsStr::from_bytes(raw));
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            // dogs' own journal and staged files (`.ouro-dogs.journal`, `.ouro-dogs-…`).
            Component::Normal(name) if name.as_bytes().starts_with(b".ouro-dogs") => {
                return Err("a name dogs keeps for its own journal and staged files".into());
            }
            Component::Normal(name) => clean.push(name),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err("an absolute path; paths must be relative to the target".into());
            }
            Component::ParentDir => {
                return Err("the path leaves the target directory (`..`)".into());
            }
        }
    }
    if clean.as_os_str().is_empty() {
        return Err("an empty path".into());
    }
    let mut walked = dir.to_path_buf();
    for component in clean.components() {
        walked.push(component);
        match std::fs::symlink_metadata(&walked) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symbolic link; dogs never writes through one",
                    walked.strip_prefix(dir).unwrap_or(&walked).display()
                ));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(clean)
}

/// The file at `path` now: bytes and mode, or `None` when it does not exist.
fn current(dir: &Path, path: &Path) -> Result<Option<(Vec<u8>, u32)>, String> {
    let full = dir.join(path);
    match std::fs::symlink_metadata(&full) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot be read: {e}")),
        Ok(meta) if meta.is_dir() => Err("is a directory".into()),
        Ok(meta) if !meta.is_file() => {
            Err("is not a regular file (a device, socket or pipe)".into())
        }
        Ok(meta) => {
            let bytes = crate::sys::beneath::read_all(dir, &full)
                .map_err(|e| format!("cannot be read: {e}"))?;
            Ok(Some((bytes, meta.permissions().mode() & 0o7777)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_newline_convention_of_model_blocks() {
        assert_eq!(model_newline(b"a".to_vec(), None), b"a\n");
        assert_eq!(model_newline(b"a\n".to_vec(), None), b"a\n");
        assert_eq!(model_newline(b"a".to_vec(), Some(b"x\n")), b"a\n");
        assert_eq!(model_newline(b"a\n".to_vec(), Some(b"x")), b"a");
        assert_eq!(model_newline(Vec::new(), None), b"");
    }

    #[test]
    fn a_file_is_given_whole_or_deleted_once() {
        let full = || Block::Full {
            path: b"a".to_vec(),
            content: b"new\n".to_vec(),
            binary: false,
            machine: false,
        };
        let delete = || Block::Delete {
            path: b"a".to_vec(),
        };
        let before = (b"old\n".to_vec(), 0o644);
        for (first, second) in [(full(), delete()), (delete(), full()), (delete(), delete())] {
            let (mut after, mut whole) = (Some(before.0.clone()), false);
            step(first, Some(&before), &mut after, &mut whole).unwrap();
            let e = step(second, Some(&before), &mut after, &mut whole).unwrap_err();
            assert!(e.contains("more than once"), "{e}");
        }
    }

    #[test]
    fn paths_stay_inside_the_target() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/tmp", dir.path().join("out")).unwrap();
        for bad in [
            &b"../x"[..],
            b"/etc/x",
            b"a/../../x",
            b"out/x",
            b"",
            b"a\0b",
            b".ouro-dogs.journal",
            b"sub/.ouro-dogs-1-1.old",
        ] {
            assert!(safe_path(dir.path(), bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            safe_path(dir.path(), b"./a/b.txt").unwrap(),
            Path::new("a/b.txt")
        );
    }
}
