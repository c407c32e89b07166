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

/// Mode of a file dogs creates (before the umask).
const NEW_FILE_MODE: u32 = 0o644;

/// What was done, for [`restore`]: the changes and the folders made for them.
#[derive(Debug, Default)]
pub struct Applied {
    changes: Vec<Change>,
    made_dirs: Vec<PathBuf>,
}

/// Writes every change; on the first failure takes back what was written and says what failed.
pub fn apply(dir: &Path, changes: &[Change]) -> Result<Applied, BundleError> {
    let mut applied = Applied::default();
    for change in changes {
        let result = write_one(dir, change, &mut applied.made_dirs);
        applied.changes.push(change.clone());
        if let Err(source) = result {
            let _ = restore(dir, &applied);
            return Err(BundleError::Io {
                action: "write",
                path: change.path.clone(),
                source,
            });
        }
    }
    Ok(applied)
}

fn write_one(dir: &Path, change: &Change, made: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let parent = change.path.parent().unwrap_or(Path::new(""));
    let name = change
        .path
        .file_name()
        .map(Path::new)
        .unwrap_or(Path::new(""));
    match &change.after {
        None => {
            let folder = crate::sys::beneath::folder(dir, &dir.join(parent))?;
            crate::sys::beneath::remove_in(&folder, name)
        }
        Some(bytes) => {
            make_dirs(dir, parent, made)?;
            let mode = change.before.as_ref().map_or(NEW_FILE_MODE, |(_, m)| *m);
            put(dir, &change.path, bytes, mode)
        }
    }
}

/// `bytes` as the file `rel` beneath `dir`, with `mode`, replacing it whole.
fn put(dir: &Path, rel: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let parent = rel.parent().unwrap_or(Path::new(""));
    let name = rel.file_name().map(Path::new).unwrap_or(Path::new(""));
    let folder = crate::sys::beneath::folder(dir, &dir.join(parent))?;
    let temp = PathBuf::from(format!(
        ".{}.ouro-dogs-{}",
        name.display(),
        std::process::id()
    ));
    let mut file = crate::sys::beneath::create_in(&folder, &temp, NEW_FILE_MODE)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.set_permissions(std::fs::Permissions::from_mode(mode)))
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = crate::sys::beneath::remove_in(&folder, &temp);
        return Err(e);
    }
    crate::sys::beneath::rename_in(&folder, &temp, name)
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
pub fn restore(dir: &Path, applied: &Applied) -> Result<(), BundleError> {
    let mut failed = Vec::new();
    for change in applied.changes.iter().rev() {
        let result = match &change.before {
            Some((bytes, mode)) => {
                let parent = change.path.parent().unwrap_or(Path::new(""));
                let mut none = Vec::new();
                make_dirs(dir, parent, &mut none)
                    .and_then(|()| put(dir, &change.path, bytes, *mode))
            }
            None => {
                let parent = change.path.parent().unwrap_or(Path::new(""));
                let name = change
                    .path
                    .file_name()
                    .map(Path::new)
                    .unwrap_or(Path::new(""));
                match crate::sys::beneath::folder(dir, &dir.join(parent))
                    .and_then(|f| crate::sys::beneath::remove_in(&f, name))
                {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    other => other,
                }
            }
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
pub fn touched(applied: &Applied) -> usize {
    applied.changes.len()
}
