//! Writing a checked plan, and taking it back. Each file is written beside itself and renamed
//! over (never through a symbolic link: the kernel resolves every path beneath the target), so
//! a crash leaves the old file or the new one. The plan holds every touched file's bytes and
//! mode from before, so a failed write or verification restores exactly those files, and
//! nothing else in the tree (a `git stash` would take the user's other edits with it).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::BundleError;
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
}

/// Flushes the filesystem of `dir` to disk: one wait for the whole apply.
fn sync(dir: &Path) {
    if let Ok(folder) = std::fs::File::open(dir) {
        use std::os::fd::AsRawFd;
        // SAFETY: syncfs takes a descriptor we hold open.
        unsafe { libc::syncfs(folder.as_raw_fd()) };
    }
}

/// Writes every change; on the first failure takes back what was written and says what failed.
/// A file that changed since the plan was made (while the user read it) stops the apply.
pub(super) fn apply(dir: &Path, changes: &[Change]) -> Result<Applied, BundleError> {
    let mut applied = Applied::default();
    for change in changes {
        let result = unchanged_since_plan(dir, change)
            .and_then(|()| write_one(dir, change, &mut applied.made_dirs));
        if let Err(source) = result {
            let undone = restore(dir, &applied);
            return Err(BundleError::Apply {
                path: change.path.clone(),
                source,
                undone: undone.err().map(|e| e.to_string()).unwrap_or_default(),
            });
        }
        applied.changes.push(change.clone());
    }
    sync(dir);
    Ok(applied)
}

fn unchanged_since_plan(dir: &Path, change: &Change) -> std::io::Result<()> {
    let now = match crate::sys::beneath::read_all(dir, &dir.join(&change.path)) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if now.as_deref() == change.before.as_ref().map(|(b, _)| b.as_slice()) {
        Ok(())
    } else {
        Err(std::io::Error::other(
            "it changed on disk after the bundle was checked; run dogs again",
        ))
    }
}

/// A relative path's folder and its last name.
fn split(rel: &Path) -> (&Path, &Path) {
    let parent = rel.parent().unwrap_or(Path::new(""));
    let name = rel.file_name().map(Path::new).unwrap_or(Path::new(""));
    (parent, name)
}

/// Removes the file `rel` beneath `dir`.
fn remove(dir: &Path, rel: &Path) -> std::io::Result<()> {
    let (parent, name) = split(rel);
    let folder = crate::sys::beneath::folder(dir, &dir.join(parent))?;
    crate::sys::beneath::remove_in(&folder, name)
}

fn write_one(dir: &Path, change: &Change, made: &mut Vec<PathBuf>) -> std::io::Result<()> {
    match &change.after {
        None => remove(dir, &change.path),
        Some(bytes) => {
            make_dirs(dir, split(&change.path).0, made)?;
            put(
                dir,
                &change.path,
                bytes,
                change.before.as_ref().map(|(_, m)| *m),
            )
        }
    }
}

/// `bytes` as the file `rel` beneath `dir`, replacing it whole; `mode`: the mode to keep (a
/// new file gets the default, less the umask).
fn put(dir: &Path, rel: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    let (parent, name) = split(rel);
    let folder = crate::sys::beneath::folder(dir, &dir.join(parent))?;
    // Short, so a name near the length limit still has room beside it.
    let temp = PathBuf::from(format!(
        ".ouro-dogs-{}-{}",
        std::process::id(),
        TEMP.fetch_add(1, Ordering::Relaxed)
    ));
    let mut file = crate::sys::beneath::create_in(&folder, &temp, NEW_FILE_MODE)?;
    let mut written = file.write_all(bytes);
    if let Some(mode) = mode {
        written =
            written.and_then(|()| file.set_permissions(std::fs::Permissions::from_mode(mode)));
    }
    // No sync per file (10,000 files would wait on 10,000 flushes): the whole apply is
    // flushed once at its end, see `sync`.
    let done = written.and_then(|()| crate::sys::beneath::rename_in(&folder, &temp, name));
    if done.is_err() {
        let _ = crate::sys::beneath::remove_in(&folder, &temp);
    }
    done
}

/// Creates the missing folders of `rel` beneath `dir`, one at a time, recording each.
fn make_dirs(dir: &Path, rel: &Path, made: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut walked = PathBuf::new();
    for component in rel.components() {
        walked.push(component);
        let full = dir.join(&walked);
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is in the way of a folder",
                    walked.display()
                )));
            }
            Err(_) => {
                // Created through a descriptor of its parent, resolved beneath the target.
                let parent = walked.parent().unwrap_or(Path::new(""));
                let folder = crate::sys::beneath::folder(dir, &dir.join(parent))?;
                crate::sys::beneath::make_dir_in(&folder, Path::new(component.as_os_str()))?;
                made.push(walked.clone());
            }
        }
    }
    Ok(())
}

/// Puts every touched file back as it was (bytes and mode), removes the files and folders
/// that were created; the rest of the tree is never touched.
pub(super) fn restore(dir: &Path, applied: &Applied) -> Result<(), BundleError> {
    let mut failed = Vec::new();
    for change in applied.changes.iter().rev() {
        let result = match &change.before {
            Some((bytes, mode)) => {
                let mut none = Vec::new();
                make_dirs(dir, split(&change.path).0, &mut none)
                    .and_then(|()| put(dir, &change.path, bytes, Some(*mode)))
            }
            None => match remove(dir, &change.path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            },
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

/// The files an apply touched.
pub(super) fn touched(applied: &Applied) -> usize {
    applied.changes.len()
}
