//! Writing a checked plan, and taking it back. Every file is staged beside itself and renamed
//! over (never through a symbolic link: the kernel resolves every path beneath the target),
//! through a journal, so an apply cut off anywhere can be finished or undone whole
//! (`ouro dogs --recover`). The plan holds every touched file's bytes and mode from before, so
//! a failed verification restores exactly those files, and nothing else in the tree (a
//! `git stash` would take the user's other edits with it).

use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::BundleError;
use super::journal::{self, Entry, Folders, Journal, State, Unsettled, split};
use super::plan::Change;

use std::sync::atomic::{AtomicU32, Ordering};

/// Mode of a file dogs creates (the umask applies).
const NEW_FILE_MODE: u32 = 0o644;

/// Numbers the temporary files of this process.
static TEMP: AtomicU32 = AtomicU32::new(0);

/// What was done, for [`restore`]: the changes and the folders made for them.
#[derive(Debug, Default)]
pub(super) struct Applied {
    changes: Vec<Change>,
    made_dirs: Vec<PathBuf>,
    /// The journal of an apply held until its verification is over (see [`release`]).
    held: Option<Journal>,
}

/// A fresh name for a staged or kept file: short, so a name near the length limit still has
/// room beside it.
fn temp_name(suffix: &str) -> PathBuf {
    PathBuf::from(format!(
        ".ouro-dogs-{}-{}{suffix}",
        std::process::id(),
        TEMP.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Writes every change through the journal (see [`super::journal`]): stage them all, record,
/// then replace. `hold`: the journal stays, keeping the old files, until [`release`] (an apply
/// whose verification decides whether it stays; cut off before, it is rolled back). On a failure nothing stays changed, and what failed is said. A file that
/// changed since the plan was made (while the user read it) stops the apply.
pub(super) fn apply(dir: &Path, changes: Vec<Change>, hold: bool) -> Result<Applied, BundleError> {
    let mut applied = Applied::default();
    let failure =
        |path: &Path, source: std::io::Error, undone: Result<(), String>| BundleError::Apply {
            path: path.to_path_buf(),
            source,
            undone: undone.err().unwrap_or_default(),
        };
    let entries: Vec<Entry> = changes
        .iter()
        .map(|c| Entry {
            path: c.path.clone(),
            staged: c.after.as_ref().map(|_| temp_name("")),
            kept: c.before.as_ref().map(|_| temp_name(".old")),
            made: None,
        })
        .collect();
    let written = changes
        .iter()
        .filter(|c| c.after.is_some())
        .map(|c| c.path.as_path());
    let made_dirs = match missing_dirs(dir, written) {
        Ok(dirs) => dirs,
        Err((path, source)) => return Err(failure(&path, source, Ok(()))),
    };
    let mut journal = Journal {
        pid: std::process::id(),
        started: chrono::Utc::now().to_rfc3339(),
        state: State::Staging,
        entries,
        made_dirs,
    };
    if let Err(source) = journal::begin(dir, &journal) {
        return Err(failure(Path::new(journal::FILE), source, Ok(())));
    }
    let undo = |journal: &Journal| {
        journal::settle(dir, journal, true)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    for folder in &journal.made_dirs {
        if let Err(source) = make_dir(dir, folder) {
            return Err(failure(folder, source, undo(&journal)));
        }
    }
    applied.made_dirs.clone_from(&journal.made_dirs);
    // Files are staged on every core: nothing depends on another file's staging, and a large
    // apply waits on creating files more than on anything else.
    let folders = Folders::open(dir, changes.iter().map(|c| c.path.as_path()));
    let staged: Result<Vec<Option<(u64, u64)>>, _> = changes
        .par_iter()
        .zip(&journal.entries)
        .map(|(change, entry)| {
            folders
                .of(&change.path)
                .and_then(|folder| {
                    unchanged_since_plan(&folder, change)?;
                    stage(&folder, change, entry)
                })
                .map_err(|source| (change, source))
        })
        .collect();
    drop(folders);
    match staged {
        Ok(made) => {
            for (entry, made) in journal.entries.iter_mut().zip(made) {
                entry.made = made;
            }
        }
        Err((change, source)) => return Err(failure(&change.path, source, undo(&journal))),
    }
    // One flush for every staged file, before the first target changes.
    journal::sync(dir);
    journal.state = if hold {
        State::Verifying
    } else {
        State::Committing
    };
    if let Err(source) = journal::record(dir, &journal) {
        // No target has changed: the undo need not be recorded first (where recording just
        // failed).
        journal.state = State::Staging;
        return Err(failure(Path::new(journal::FILE), source, undo(&journal)));
    }
    let committed = if hold {
        journal::commit_held(dir, &journal).map(|()| applied.held = Some(journal.clone()))
    } else {
        journal::settle(dir, &journal, false).map(|_| ())
    };
    match committed {
        Ok(()) => {}
        // Every file has its new content: undoing now could only put back the ones whose
        // second name is still there.
        Err(Unsettled::Leftovers(why)) => return Err(BundleError::Leftovers { why }),
        Err(Unsettled::Files(why)) => {
            let undone = undo(&journal);
            return Err(failure(dir, std::io::Error::other(why), undone));
        }
    }
    applied.changes = changes;
    Ok(applied)
}

/// The folders the files `paths` need that do not exist yet, outermost first; a file where
/// one of them must go is an error naming the file that needs it.
fn missing_dirs<'a>(
    dir: &Path,
    paths: impl IntoIterator<Item = &'a Path>,
) -> Result<Vec<PathBuf>, (PathBuf, std::io::Error)> {
    let mut seen = std::collections::HashSet::new();
    let mut missing = Vec::new();
    for path in paths {
        let mut walked = PathBuf::new();
        for component in split(path).0.components() {
            walked.push(component);
            if !seen.insert(walked.clone()) {
                continue;
            }
            match std::fs::symlink_metadata(dir.join(&walked)) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    let why = format!("{} is in the way of a folder", walked.display());
                    return Err((path.to_path_buf(), std::io::Error::other(why)));
                }
                Err(_) => missing.push(walked.clone()),
            }
        }
    }
    Ok(missing)
}

/// Creates the folder `rel` beneath `dir`, through a descriptor of its parent.
fn make_dir(dir: &Path, rel: &Path) -> std::io::Result<()> {
    let (parent, name) = split(rel);
    let folder = crate::sys::beneath::folder(dir, &dir.join(parent))?;
    crate::sys::beneath::make_dir_in(&folder, name)
}

/// Stages one change beside its target in its `folder`: the new content under its staged name
/// (with the old file's mode), the old file under a second name. Returns a new file's device
/// and inode.
fn stage(folder: &OwnedFd, change: &Change, entry: &Entry) -> std::io::Result<Option<(u64, u64)>> {
    use std::os::unix::fs::MetadataExt;
    let name = split(&change.path).1;
    let mut made = None;
    if let (Some(bytes), Some(staged)) = (&change.after, &entry.staged) {
        let mut file = crate::sys::beneath::create_in(folder, staged, NEW_FILE_MODE)?;
        file.write_all(bytes)?;
        start_writeback(&file);
        match &change.before {
            Some((_, mode)) => file.set_permissions(std::fs::Permissions::from_mode(*mode))?,
            None => {
                let meta = file.metadata()?;
                made = Some((meta.dev(), meta.ino()));
            }
        }
    }
    if let Some(kept) = &entry.kept {
        crate::sys::beneath::link_in(folder, name, kept)?;
    }
    Ok(made)
}

/// Has the kernel start writing `file` to disk now, without waiting: the one flush before the
/// commit then finds the staged files mostly written (git's `core.fsyncMethod=batch` does the
/// same). A failure only loses the head start.
fn start_writeback(file: &std::fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: sync_file_range only reads the open descriptor it is given.
    unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
}

fn unchanged_since_plan(folder: &OwnedFd, change: &Change) -> std::io::Result<()> {
    let now = crate::sys::beneath::read_in(folder, split(&change.path).1)?;
    if now.as_deref() == change.before.as_ref().map(|(b, _)| b.as_slice()) {
        Ok(())
    } else {
        Err(std::io::Error::other(
            "it changed on disk after the bundle was checked; run dogs again",
        ))
    }
}

/// `bytes` as the file `rel` beneath `dir`, replacing it whole; `mode`: the mode to keep (a
/// new file gets the default, less the umask).
fn put(dir: &Path, rel: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    let (parent, name) = split(rel);
    let folder = crate::sys::beneath::folder(dir, &dir.join(parent))?;
    let temp = temp_name("");
    let mut file = crate::sys::beneath::create_in(&folder, &temp, NEW_FILE_MODE)?;
    let mut written = file.write_all(bytes);
    if let Some(mode) = mode {
        written =
            written.and_then(|()| file.set_permissions(std::fs::Permissions::from_mode(mode)));
    }
    // No sync per file: a restore is flushed once at its end.
    let done = written.and_then(|()| crate::sys::beneath::rename_in(&folder, &temp, name));
    if done.is_err() {
        let _ = crate::sys::beneath::remove_in(&folder, &temp);
    }
    done
}

/// Puts every touched file back as it was (bytes and mode), removes the files and folders
/// that were created; the rest of the tree is never touched.
pub(super) fn restore(dir: &Path, applied: &Applied) -> Result<(), BundleError> {
    let mut failed = Vec::new();
    for change in applied.changes.iter().rev() {
        let result = match &change.before {
            Some((bytes, mode)) => missing_dirs(dir, [change.path.as_path()])
                .map_err(|(_, e)| e)
                .and_then(|dirs| dirs.iter().try_for_each(|d| make_dir(dir, d)))
                .and_then(|()| put(dir, &change.path, bytes, Some(*mode))),
            None => journal::remove_quietly(dir, &change.path, split(&change.path).1),
        };
        if let Err(e) = result {
            failed.push(format!("{}: {e}", change.path.display()));
        }
    }
    for made in applied.made_dirs.iter().rev() {
        let _ = std::fs::remove_dir(dir.join(made));
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(BundleError::Restore {
            failed: failed.join("; "),
        })
    }
}

/// Ends a held apply as its files now are (verified, or restored): the old files' second
/// names and the journal go.
pub(super) fn release(dir: &Path, applied: &Applied) -> Result<(), BundleError> {
    match &applied.held {
        Some(journal) => journal::release(dir, journal)
            .map_err(|e| BundleError::Leftovers { why: e.to_string() }),
        None => Ok(()),
    }
}

/// The files an apply touched.
pub(super) fn touched(applied: &Applied) -> usize {
    applied.changes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, before: Option<&[u8]>, after: &[u8]) -> Change {
        Change {
            path: PathBuf::from(path),
            before: before.map(|b| (b.to_vec(), 0o644)),
            after: Some(after.to_vec()),
            protected: None,
        }
    }

    /// A file that appears where the bundle creates one, after the plan was made (while the
    /// user reviewed it), stops the apply; undoing it leaves that file and every other as it
    /// was, and no second name behind.
    #[test]
    fn a_file_made_after_the_plan_where_a_new_one_goes_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), b"old\n").unwrap();
        let changes = vec![
            change("a.txt", Some(b"old\n"), b"new\n"),
            change("sub/made.txt", None, b"bundle\n"),
            change("new.txt", None, b"bundle\n"),
        ];
        std::fs::write(root.join("new.txt"), b"mine\n").unwrap();
        let failed = apply(&root, changes, false).unwrap_err().to_string();
        assert!(failed.contains("new.txt"), "{failed}");
        assert_eq!(std::fs::read(root.join("new.txt")).unwrap(), b"mine\n");
        assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"old\n");
        let mut left: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        left.sort();
        assert_eq!(left, ["a.txt", "new.txt"]);
    }
}
