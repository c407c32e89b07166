//! Filesystem helpers shared by the file tools: where a path points, what to suggest when it
//! points nowhere, and how to replace a file without ever leaving it half-written.

use std::fs::{self, File, Metadata};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::{ToolContext, ToolError};
use crate::sys::beneath;

/// Symlink chains longer than this are treated as loops (the kernel's own limit is 40).
const MAX_SYMLINK_HOPS: usize = 40;
/// Directory entries inspected when suggesting a name for a missing file.
const MAX_SUGGESTION_SCAN: usize = 2_000;

/// `raw` as an absolute path, or a sentence telling the model to pass one.
pub fn absolute(raw: &str, ctx: &ToolContext) -> Result<PathBuf, String> {
    let path = Path::new(raw);
    if raw.is_empty() {
        return Err("file_path is empty; pass the absolute path of a file.".to_string());
    }
    if path.is_absolute() {
        Ok(as_on_disk(path.to_path_buf()))
    } else {
        Err(format!(
            "file_path must be an absolute path, but `{raw}` is relative. Pass the absolute \
             path instead, e.g. `{}`.",
            ctx.current_dir().join(path).display()
        ))
    }
}

/// A path the model gave as a search root: absolute as is, relative to the working directory
/// otherwise, and the working directory when omitted.
pub(crate) fn search_root(raw: Option<&str>, ctx: &ToolContext) -> PathBuf {
    match raw.filter(|r| !r.is_empty()) {
        Some(r) => as_on_disk(ctx.current_dir().join(r)),
        None => ctx.current_dir(),
    }
}

/// The file a path names when its names are shown as they read (a name that is not UTF-8 is
/// shown, and so given back by the model, with U+FFFD for each bad byte): each component
/// that does not exist as written is matched, if exactly one entry of its folder reads the
/// same. From the first component that matches nothing the rest is taken as written, so a
/// new file in a folder with such a name lands in that folder.
fn real_name(path: &Path) -> PathBuf {
    let mut real = PathBuf::new();
    let mut components = path.components();
    for component in components.by_ref() {
        let candidate = real.join(component);
        if candidate.symlink_metadata().is_ok() {
            real = candidate;
            continue;
        }
        let wanted = component.as_os_str().to_string_lossy();
        let matches: Vec<PathBuf> = std::fs::read_dir(&real)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy() == wanted)
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        match <[PathBuf; 1]>::try_from(matches) {
            Ok([one]) => real = one,
            Err(_) => {
                real = candidate;
                break;
            }
        }
    }
    real.extend(components);
    real
}

/// `path` with any name shown as it reads (U+FFFD for bad bytes) matched to the real entry.
fn as_on_disk(path: PathBuf) -> PathBuf {
    match path.to_str() {
        Some(text) if text.contains('\u{FFFD}') => real_name(&path),
        _ => path,
    }
}

/// A search's starting folder, checked as it is walked: one inside the project must really
/// lead inside it. A link in the project that leads out (swapped in after the permission
/// check, say) is not walked; the walker follows no link below its start.
pub(crate) fn check_search_root(root: &Path, ctx: &ToolContext) -> Result<(), super::ToolError> {
    let project = &ctx.project_root;
    if !root.starts_with(project) {
        // Outside the project the permission engine judged the path as given.
        return Ok(());
    }
    let (Ok(real), Ok(real_project)) = (root.canonicalize(), project.canonicalize()) else {
        return Ok(());
    };
    if real.starts_with(&real_project) {
        return Ok(());
    }
    Err(super::ToolError::Invalid(format!(
        "{} leads outside the project through a symbolic link, which searches do not follow; search its real path ({}) instead",
        root.display(),
        real.display()
    )))
}

/// Whether validation (phase 2, before the permission check) may look at `path` on disk: only
/// where it really leads inside the project or an added directory. Elsewhere the checks wait
/// for phase 5, so a call that is then refused learns nothing about files outside (not even
/// whether they exist, or their neighbours' names).
pub(crate) fn may_inspect(path: &Path, ctx: &ToolContext) -> bool {
    let Ok(resolved) = resolve_symlinks(path) else {
        return false;
    };
    // The deepest existing ancestor, with every symlinked directory resolved.
    let mut existing = resolved.as_path();
    let mut rest = Vec::new();
    let real = loop {
        if let Ok(real) = fs::canonicalize(existing) {
            break real;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return false,
        }
    };
    let full = rest.iter().rev().fold(real, |p, name| p.join(name));
    if full
        .components()
        .any(|c| c == std::path::Component::ParentDir)
    {
        return false;
    }
    full.starts_with(&ctx.project_root) || ctx.sandbox.additional_dirs.contain(&full)
}

/// Check that a search root exists; the `Err` is a sentence for the model.
pub(crate) fn require_existing(root: &Path) -> Result<Metadata, String> {
    fs::metadata(root).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => format!("Path does not exist: {}", root.display()),
        _ => format!("Cannot access {}: {e}", root.display()),
    })
}

/// Follows symlinks to the file they finally point at, even when that file does not exist
/// yet, so writes go through a link instead of replacing it.
pub(crate) fn resolve_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_SYMLINK_HOPS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "{} is part of a symlink loop",
        path.display()
    )))
}

/// The message for a file that does not exist, naming look-alikes in the same directory.
pub(crate) fn missing_file_message(path: &Path) -> String {
    let mut message = format!("File does not exist: {}.", path.display());
    let Some(parent) = path.parent() else {
        return message;
    };
    let Some(wanted) = path.file_name().map(|n| n.to_string_lossy().to_lowercase()) else {
        return message;
    };
    let Ok(entries) = fs::read_dir(parent) else {
        message.push_str(&format!(
            " Its directory {} does not exist either.",
            parent.display()
        ));
        return message;
    };
    let mut scored: Vec<(usize, String)> = entries
        .take(MAX_SUGGESTION_SCAN)
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            similarity(&wanted, &name.to_lowercase()).map(|score| (score, name))
        })
        .collect();
    scored.sort();
    let names: Vec<String> = scored
        .into_iter()
        .take(3)
        .map(|(_, name)| parent.join(name).display().to_string())
        .collect();
    if !names.is_empty() {
        message.push_str(&format!(" Did you mean {}?", names.join(" or ")));
    }
    message
}

/// Lower is more similar; `None` when the names are unrelated.
fn similarity(wanted: &str, candidate: &str) -> Option<usize> {
    if wanted == candidate {
        return Some(0);
    }
    let stem = |s: &str| s.rsplit_once('.').map_or(s, |(stem, _)| stem).to_string();
    if !stem(wanted).is_empty() && stem(wanted) == stem(candidate) {
        return Some(1);
    }
    let distance = crate::text::edit_distance(wanted, candidate);
    let allowed = (wanted.chars().count() / 4).clamp(1, 3);
    (distance <= allowed).then_some(distance + 1)
}

/// For sockets, FIFOs and devices: reading them could block forever or never end.
pub(crate) fn special_file_message(path: &Path) -> String {
    format!(
        "{} is not a regular file (it is a device, socket or pipe), so the file tools cannot \
         use it.",
        path.display()
    )
}

/// Refuses files without any write permission: replacing them by rename would silently
/// bypass a protection the user set on purpose.
pub(crate) fn ensure_writable(path: &Path, meta: &Metadata) -> Result<(), String> {
    if meta.permissions().readonly() {
        Err(format!(
            "{} is read-only. Ask the user to make it writable if it should be changed.",
            path.display()
        ))
    } else {
        Ok(())
    }
}

/// Replaces `target` (a resolved, non-symlink path) with `bytes`: the data goes to a temporary
/// file in the same directory, which then takes the old file's permissions and is renamed
/// over it, so readers see either the old or the new content, never a mix. The directory is
/// opened beneath `root` (when inside it) and the file made and renamed in it by name, so a
/// link swapped in on the way cannot carry the write out of the project.
pub(crate) fn write_atomically(root: &Path, target: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir_path = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = beneath::folder(root, dir_path)?;
    let existing = fs::metadata(target).ok();
    let (temp, mut file) = create_temp(&dir, &name, existing.is_some())?;
    let result = fill_temp(&mut file, bytes, existing.as_ref())
        .and_then(|()| beneath::rename_in(&dir, Path::new(&temp), Path::new(&name)));
    if result.is_err() {
        let _ = beneath::remove_in(&dir, Path::new(&temp));
    }
    result
}

fn create_temp(
    dir: &std::os::fd::OwnedFd,
    name: &str,
    private: bool,
) -> io::Result<(String, File)> {
    // Until the old file's mode is copied over, nobody else may read the new content.
    let mode = if private { 0o600 } else { 0o666 };
    let mut last_error = None;
    for _ in 0..8 {
        let temp = format!(
            ".{name}.ouro-{}-{:08x}.tmp",
            std::process::id(),
            rand::random::<u32>()
        );
        match beneath::create_in(dir, Path::new(&temp), mode) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_error = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("could not create a temporary file")))
}

fn fill_temp(file: &mut File, bytes: &[u8], existing: Option<&Metadata>) -> io::Result<()> {
    file.write_all(bytes)?;
    file.sync_data()?;
    if let Some(meta) = existing {
        file.set_permissions(meta.permissions())?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // Keeps the owner when running with the rights to do so; otherwise the file
            // belongs to us, as it would after any editor's save.
            let _ = std::os::unix::fs::fchown(&*file, Some(meta.uid()), Some(meta.gid()));
        }
    }
    Ok(())
}

/// Runs blocking filesystem work off the async runtime's worker threads.
pub async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        ToolError::io(
            "the file operation stopped unexpectedly",
            io::Error::other(e),
        )
    })?
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_name_that_is_not_utf8_is_found_as_it_reads() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let odd = std::ffi::OsStr::from_bytes(b"caf\xe9");
        let real = dir.path().join(odd).join(odd);
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "x").unwrap();
        let shown = PathBuf::from(real.to_string_lossy().into_owned());
        assert!(!shown.exists());
        assert_eq!(real_name(&shown), real);
        // A new file inside such a folder keeps the folder's real name.
        let new = PathBuf::from(
            real.parent()
                .unwrap()
                .join("new.txt")
                .to_string_lossy()
                .into_owned(),
        );
        assert_eq!(real_name(&new), real.parent().unwrap().join("new.txt"));
        // Two names that read the same: nothing is guessed.
        std::fs::write(
            dir.path().join(std::ffi::OsStr::from_bytes(b"caf\xe8")),
            "y",
        )
        .unwrap();
        let two = PathBuf::from(
            dir.path()
                .join("caf\u{FFFD}")
                .to_string_lossy()
                .into_owned(),
        );
        assert_eq!(real_name(&two), two);
    }

    use super::*;

    #[test]
    fn relative_paths_are_refused_with_a_suggestion() {
        let ctx = ToolContext::new(PathBuf::from("/project"));
        let err = absolute("src/main.rs", &ctx).unwrap_err();
        assert!(err.contains("/project/src/main.rs"), "{err}");
        assert_eq!(absolute("/a/b", &ctx).unwrap(), PathBuf::from("/a/b"));
    }

    #[test]
    fn missing_file_suggests_look_alikes() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("config.toml"), "").unwrap();
        fs::write(dir.path().join("unrelated.md"), "").unwrap();
        let message = missing_file_message(&dir.path().join("confg.toml"));
        assert!(message.contains("config.toml"), "{message}");
        assert!(!message.contains("unrelated"), "{message}");
        let other_ext = missing_file_message(&dir.path().join("config.json"));
        assert!(other_ext.contains("config.toml"), "{other_ext}");
    }

    #[test]
    fn atomic_write_replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "old").unwrap();
        write_atomically(dir.path(), &file, b"new").unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn symlink_chains_resolve_to_the_final_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        std::os::unix::fs::symlink("target.txt", dir.path().join("one")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("one"), dir.path().join("two")).unwrap();
        assert_eq!(resolve_symlinks(&dir.path().join("two")).unwrap(), target);
        std::os::unix::fs::symlink("loop", dir.path().join("loop")).unwrap();
        assert!(resolve_symlinks(&dir.path().join("loop")).is_err());
    }
}
