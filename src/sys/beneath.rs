//! Opening files beneath the project root without following a symbolic link out of it. The
//! permission check and the open are moments apart: a link inside the project swapped in
//! between to point elsewhere must not carry a file tool outside. `openat2` with
//! `RESOLVE_BENEATH` makes the kernel refuse such a path as it resolves it; on a kernel
//! without it (before 5.6), what was opened is checked afterwards.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The sentence for a path that leads out of the project.
fn escapes(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} leads outside the project through a symbolic link, which file tools do not follow; use the real path of the file instead",
            path.display()
        ),
    )
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let c = c_path(path)?;
    // SAFETY: a valid C string and plain flags; the result is checked before use.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The kernel's `struct open_how` (libc's cannot be built outside the crate).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `rel` opened beneath `dir` with `flags`; `Ok(None)` when the kernel has no `openat2`.
fn openat2(dir: &OwnedFd, rel: &Path, flags: i32, mode: u32) -> io::Result<Option<OwnedFd>> {
    let c = c_path(rel)?;
    let how = OpenHow {
        flags: u64::try_from(flags).unwrap_or_default(),
        mode: u64::from(mode),
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: the descriptor is live, the path a valid C string and `how` a live struct of the
    // size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        let error = io::Error::last_os_error();
        return match error.raw_os_error() {
            Some(libc::ENOSYS) => Ok(None),
            _ => Err(error),
        };
    }
    let fd = i32::try_from(fd).map_err(|_| io::Error::other("a descriptor out of range"))?;
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Where an open descriptor really is.
fn real_path(fd: &impl AsRawFd) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Opens `path` beneath `root` with `flags` (`O_CLOEXEC` is added); a path outside `root` is
/// opened as it is (its own permission check named it). `mode` is for a created file.
fn open(root: &Path, path: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let flags = flags | libc::O_CLOEXEC;
    let Ok(rel) = path.strip_prefix(root) else {
        let c = c_path(path)?;
        // SAFETY: a valid C string and plain flags; the result is checked before use.
        let fd = unsafe { libc::open(c.as_ptr(), flags, mode) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor the kernel just returned, owned by nobody else.
        return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
    };
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let dir = open_dir(root)?;
    match openat2(&dir, rel, flags, mode) {
        Ok(Some(fd)) => Ok(fd),
        // No openat2, or an absolute link on the way (which RESOLVE_BENEATH refuses wherever
        // it points): open, then look at what was opened. Only reads and folders come here,
        // never a creation.
        Ok(None) | Err(_) if flags & libc::O_CREAT == 0 => {
            let c = c_path(path)?;
            // Non-blocking, so that a FIFO swapped in cannot hang the open.
            // SAFETY: a valid C string and plain flags; the result is checked before use.
            let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_NONBLOCK, mode) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a descriptor the kernel just returned, owned by nobody else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let root = root.canonicalize()?;
            if real_path(&fd)?.starts_with(&root) {
                Ok(fd)
            } else {
                Err(escapes(path))
            }
        }
        Ok(None) => Err(io::Error::other("openat2 is missing")),
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => Err(escapes(path)),
        Err(e) => Err(e),
    }
}

/// A file to read, beneath `root` if `path` is inside it.
pub fn read(root: &Path, path: &Path) -> io::Result<File> {
    open(root, path, libc::O_RDONLY, 0).map(File::from)
}

/// The whole content of a file, read beneath `root` if `path` is inside it.
pub fn read_all(root: &Path, path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    read(root, path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A context file the project brings (instructions, a README, a command, a skill, an agent),
/// as text: beneath `root` when `path` is inside it, so a link that leads out of the project
/// is an error naming it, never the file it points to; only a regular file (a FIFO would
/// block the reader). A path outside `root` (the user's own files) is read as it is.
pub fn read_text(root: &Path, path: &Path) -> io::Result<String> {
    use std::io::Read as _;
    let mut file = File::from(open(root, path, libc::O_RDONLY | libc::O_NONBLOCK, 0)?);
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// [`read_text`] for a loader: `None` when the file is missing; a file it may not read (a
/// link out of the project, not a regular file) is named on stderr and skipped.
pub fn read_context(root: &Path, path: &Path) -> Option<String> {
    match read_text(root, path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            eprintln!(
                "ouro: {} leads outside the project through a symbolic link; it is not read",
                path.display()
            );
            tracing::warn!(path = %path.display(), error = %e, "a context file is skipped");
            None
        }
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
            eprintln!("ouro: {e}; it is not read");
            None
        }
        Err(_) => None,
    }
}

/// The folder `dir`, beneath `root` if inside it, as a descriptor to create and rename in.
pub fn folder(root: &Path, dir: &Path) -> io::Result<OwnedFd> {
    open(root, dir, libc::O_PATH | libc::O_DIRECTORY, 0)
}

/// A new file `name` in the folder `dir` (never through a link of that name).
pub fn create_in(dir: &OwnedFd, name: &Path, mode: u32) -> io::Result<File> {
    let c = c_path(name)?;
    // SAFETY: the descriptor is live and the path a valid C string.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Renames `from` to `to`, both names in the folder `dir` (the entry `to` is replaced, not
/// whatever it may link to).
pub fn rename_in(dir: &OwnedFd, from: &Path, to: &Path) -> io::Result<()> {
    let (from, to) = (c_path(from)?, c_path(to)?);
    // SAFETY: the descriptor is live and both paths valid C strings.
    let done =
        unsafe { libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr()) };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Renames `from` to `to` in the folder `dir` only where `to` does not exist (`AlreadyExists`
/// otherwise): a file that appeared there since is never replaced.
pub fn rename_new_in(dir: &OwnedFd, from: &Path, to: &Path) -> io::Result<()> {
    let (from_c, to_c) = (c_path(from)?, c_path(to)?);
    // SAFETY: the descriptor is live and both paths valid C strings.
    let done = unsafe {
        libc::renameat2(
            dir.as_raw_fd(),
            from_c.as_ptr(),
            dir.as_raw_fd(),
            to_c.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if done == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    if !matches!(error.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
        return Err(error);
    }
    // A file system without RENAME_NOREPLACE: a second name, which is made only where there is
    // none, then the first one goes.
    match link_in(dir, from, to) {
        Ok(()) => remove_in(dir, from),
        // Nor hard links (a FUSE mount of object storage, say): look, then rename. Something
        // made in between is replaced, as a plain rename would.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EPERM | libc::EOPNOTSUPP | libc::ENOSYS)
            ) =>
        {
            if identity_in(dir, to)?.is_some() {
                return Err(io::Error::from(io::ErrorKind::AlreadyExists));
            }
            rename_in(dir, from, to)
        }
        Err(e) => Err(e),
    }
}

/// The device and inode of the entry `name` in the folder `dir` (a link itself, never followed);
/// `None` when there is none.
pub fn identity_in(dir: &OwnedFd, name: &Path) -> io::Result<Option<(u64, u64)>> {
    let c = c_path(name)?;
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: the descriptor is live, the path a valid C string and `stat` writable.
    let done = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            stat.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if done != 0 {
        let error = io::Error::last_os_error();
        return match error.kind() {
            io::ErrorKind::NotFound => Ok(None),
            _ => Err(error),
        };
    }
    // SAFETY: fstatat succeeded, so it filled `stat`.
    let stat = unsafe { stat.assume_init() };
    // The same numbers as std's `MetadataExt::dev` and `ino`, whose types are narrower on some
    // targets.
    #[allow(clippy::unnecessary_cast)]
    Ok(Some((stat.st_dev as u64, stat.st_ino as u64)))
}

/// A second name `to` for the file `from`, both in the folder `dir` (a link itself is linked,
/// never followed).
pub fn link_in(dir: &OwnedFd, from: &Path, to: &Path) -> io::Result<()> {
    let (from, to) = (c_path(from)?, c_path(to)?);
    // SAFETY: the descriptor is live and both paths valid C strings.
    let done = unsafe {
        libc::linkat(
            dir.as_raw_fd(),
            from.as_ptr(),
            dir.as_raw_fd(),
            to.as_ptr(),
            0,
        )
    };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A new folder `name` in the folder `dir`.
pub fn make_dir_in(dir: &OwnedFd, name: &Path) -> io::Result<()> {
    let c = c_path(name)?;
    // SAFETY: the descriptor is live and the path a valid C string.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o755) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The content of the file `name` in the folder `dir` (never through a link of that name);
/// `None` when there is none.
pub fn read_in(dir: &OwnedFd, name: &Path) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    let c = c_path(name)?;
    // SAFETY: the descriptor is live and the path a valid C string.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let error = io::Error::last_os_error();
        return match error.kind() {
            io::ErrorKind::NotFound => Ok(None),
            _ => Err(error),
        };
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    let mut file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Removes the entry `name` of the folder `dir`.
pub fn remove_in(dir: &OwnedFd, name: &Path) -> io::Result<()> {
    let c = c_path(name)?;
    // SAFETY: the descriptor is live and the path a valid C string.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    #[test]
    fn a_link_out_of_the_project_is_not_followed_and_one_inside_is() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = project.path().canonicalize().unwrap();
        std::fs::write(outside.path().join("secret"), "outside").unwrap();
        std::fs::write(root.join("real.txt"), "inside").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("real.txt"), root.join("alias.txt")).unwrap();

        let refused = read(&root, &root.join("out/secret")).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied, "{refused}");
        assert!(refused.to_string().contains("outside the project"));
        let mut text = String::new();
        read(&root, &root.join("alias.txt"))
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "inside");
        // A path the caller named outside the project is its own business.
        assert!(read(&root, &outside.path().join("secret")).is_ok());

        // Writing through a linked folder that leads out is refused before anything exists.
        assert!(folder(&root, &root.join("out")).is_err());
        let dir = folder(&root, &root).unwrap();
        let mut file = create_in(&dir, Path::new(".tmp"), 0o600).unwrap();
        file.write_all(b"new").unwrap();
        rename_in(&dir, Path::new(".tmp"), Path::new("real.txt")).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("real.txt")).unwrap(),
            "new"
        );
        // A link in the name's place is replaced, not written through.
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("trap")).unwrap();
        assert!(create_in(&dir, Path::new("trap"), 0o600).is_err());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "outside"
        );
    }
}
