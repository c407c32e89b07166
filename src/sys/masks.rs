//! File deny rules as part of the wall. Landlock cannot take a path back beneath a root it
//! allows, so a command that may read the project could read `secrets/` in it whatever it
//! spelled. A command that has deny rules to enforce therefore runs in a mount namespace of
//! its own (inside an unprivileged user namespace), where each path denied for reading is
//! covered (a directory by an empty read-only tmpfs, a file by `/dev/null`) and each path
//! denied for editing is a read-only bind mount of itself. Landlock, applied after, forbids
//! the command to unmount any of it.
//!
//! Everything is prepared in the parent; the child only makes system calls between fork and
//! exec (no allocation), as for the Landlock ruleset.

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What a command may not see or change, as absolute paths.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Masks {
    /// Denied for reading: hidden (and so not writable through this path either).
    #[serde(with = "super::os_serde::paths")]
    pub hide: Vec<PathBuf>,
    /// Denied for editing: readable, not writable, not removable.
    #[serde(with = "super::os_serde::paths")]
    pub freeze: Vec<PathBuf>,
    /// When set, every other mount is read-only: what Landlock does not cover (a file's
    /// mode, owner, times and extended attributes) cannot change outside these paths either.
    #[serde(with = "super::os_serde::optional_paths")]
    pub writable_only: Option<Vec<PathBuf>>,
    /// Never covered, nor anything holding them (the project root): a pattern that catches a
    /// link to `/` must not take the ground from under the command.
    #[serde(with = "super::os_serde::paths")]
    pub keep_visible: Vec<PathBuf>,
}

impl Masks {
    pub fn is_empty(&self) -> bool {
        self.hide.is_empty() && self.freeze.is_empty() && self.writable_only.is_none()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("could not look at {}, which a deny rule names: {error}", path.display())]
pub struct MaskError {
    path: PathBuf,
    error: std::io::Error,
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_uint = 0x8000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cover {
    /// An empty, read-only tmpfs over a directory.
    EmptyDir,
    /// `/dev/null` over a file: it reads as empty.
    NullFile,
    /// A read-only bind mount of the path onto itself; `flags` are the mount flags the kernel
    /// keeps locked for a mount made in a user namespace (nosuid, nodev, noexec, atime).
    ReadOnly { flags: libc::c_ulong },
    /// A bind mount of a directory holding a covered path onto itself: a mount point cannot
    /// be renamed, so the covered path cannot be moved out from under its cover.
    Pin,
}

/// [`Masks`] made ready for a child process.
pub struct Prepared {
    /// `Some` (the paths to keep writable, with their locked flags) when the rest of the file
    /// system is made read-only.
    writable: Option<Vec<(CString, libc::c_ulong)>>,
    /// Each path with its cover and the (device, inode) it was found as.
    covers: Vec<(CString, Cover, (u64, u64))>,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Prepared {
    /// Paths that do not exist are left out, as are paths beneath a hidden directory (there
    /// is nothing left to cover); a path that cannot be looked at is an error. Links are
    /// covered where they lead. The directories holding each cover are pinned first, outer
    /// ones before inner ones.
    pub fn new(masks: &Masks) -> Result<Prepared, MaskError> {
        let mut all: Vec<(PathBuf, bool)> = Vec::new();
        for (paths, hide) in [(&masks.hide, true), (&masks.freeze, false)] {
            for path in paths {
                let real = match std::fs::canonicalize(path) {
                    Ok(real) => real,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(error) => {
                        return Err(MaskError {
                            path: path.clone(),
                            error,
                        });
                    }
                };
                let holds_kept = real == Path::new("/")
                    || masks.keep_visible.iter().any(|k| k.starts_with(&real));
                if !holds_kept {
                    all.push((real, hide));
                }
            }
        }
        all.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut covers = Vec::new();
        let mut pins: std::collections::BTreeSet<PathBuf> = std::collections::BTreeSet::new();
        let mut hidden: Vec<PathBuf> = Vec::new();
        for (path, hide) in all {
            if hidden.iter().any(|h| path.starts_with(h)) {
                continue;
            }
            let meta = std::fs::metadata(&path).map_err(|error| MaskError {
                path: path.clone(),
                error,
            })?;
            let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
                continue;
            };
            let cover = match (hide, meta.is_dir()) {
                (true, true) => Cover::EmptyDir,
                (true, false) => Cover::NullFile,
                (false, _) => Cover::ReadOnly {
                    flags: locked_flags(&c_path),
                },
            };
            pins.extend(
                path.ancestors()
                    .skip(1)
                    .filter(|a| a.parent().is_some())
                    .map(Path::to_path_buf),
            );
            if hide {
                hidden.push(path);
            }
            covers.push((c_path, cover, (meta.dev(), meta.ino())));
        }
        // Outer directories first (a BTreeSet sorts a parent before its children).
        let mut pinned = Vec::new();
        for pin in &pins {
            let meta = std::fs::metadata(pin).map_err(|error| MaskError {
                path: pin.clone(),
                error,
            })?;
            if let Ok(c) = CString::new(pin.as_os_str().as_bytes()) {
                pinned.push((c, Cover::Pin, (meta.dev(), meta.ino())));
            }
        }
        let covers: Vec<_> = pinned.into_iter().chain(covers).collect();
        let writable = masks.writable_only.as_ref().map(|paths| {
            paths
                .iter()
                .filter(|p| p.exists())
                .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
                .map(|c| {
                    let flags = locked_flags(&c);
                    (c, flags)
                })
                .collect()
        });
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Ok(Prepared {
            writable,
            covers,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.covers.is_empty() && self.writable.is_none()
    }

    /// In the forked child, before Landlock: a user and mount namespace of its own, the same
    /// uid and gid inside, and the covers. A path that vanished since is skipped.
    ///
    /// # Safety
    /// Call only between fork and exec: it changes the calling process's namespaces.
    pub(crate) unsafe fn apply_in_child(&self) -> std::io::Result<()> {
        // SAFETY: plain system calls on memory owned by `self`, which outlives them.
        unsafe {
            enter_namespaces(&self.uid_map, &self.gid_map)?;
            if let Some(writable) = &self.writable {
                read_only_except(writable)?;
            }
            for (path, cover, found_as) in &self.covers {
                // Mounted through a descriptor of exactly what was found: a path swapped since
                // (a link, a renamed folder) fails the call instead of being covered wrongly.
                let pinned = Pinned::open(path, *found_as)?;
                let at = pinned.path();
                let done = match cover {
                    Cover::EmptyDir => mount(
                        c"tmpfs",
                        at,
                        c"tmpfs",
                        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
                        c"mode=000,size=4k",
                    ),
                    Cover::NullFile => mount_bind(c"/dev/null", at),
                    Cover::ReadOnly { flags } => {
                        mount_bind(at, at).and_then(|()| set_read_only(path, true, *flags))
                    }
                    Cover::Pin => mount_bind(at, at),
                };
                // The path was there when the command was planned: its going away now is a
                // race this call loses, not a path to leave uncovered.
                done?;
            }
            reenter_cwd()
        }
    }
}

/// An `O_PATH` descriptor of a path checked to be the (device, inode) it was found as, and
/// its `/proc/self/fd/N` name, built without allocating.
struct Pinned {
    fd: libc::c_int,
    name: [u8; 32],
}

impl Pinned {
    unsafe fn open(path: &CStr, found_as: (u64, u64)) -> std::io::Result<Pinned> {
        // SAFETY: open and fstat on a NUL-terminated path and a stat buffer we own.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut stat: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut stat) != 0 || (stat.st_dev, stat.st_ino) != found_as {
                libc::close(fd);
                return Err(std::io::Error::from_raw_os_error(libc::ESTALE));
            }
            let mut name = [0u8; 32];
            let prefix = b"/proc/self/fd/";
            name[..prefix.len()].copy_from_slice(prefix);
            let mut digits = [0u8; 10];
            let mut n = fd.unsigned_abs();
            let mut len = 0;
            loop {
                digits[len] = b'0' + (n % 10) as u8;
                len += 1;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            for (i, d) in digits[..len].iter().rev().enumerate() {
                name[prefix.len() + i] = *d;
            }
            Ok(Pinned { fd, name })
        }
    }

    fn path(&self) -> &CStr {
        CStr::from_bytes_until_nul(&self.name).unwrap_or(c"/nonexistent")
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this value opened.
        unsafe {
            libc::close(self.fd);
        }
    }
}

/// The working directory was entered before the mounts, so it is still the directory beneath
/// them; entering it again by its path goes through them (relative paths are masked too).
unsafe fn reenter_cwd() -> std::io::Result<()> {
    let mut buf = [0u8; libc::PATH_MAX as usize];
    // SAFETY: getcwd writes at most `buf.len()` bytes, NUL included, into a buffer we own;
    // chdir reads that NUL-terminated path.
    unsafe {
        if libc::getcwd(buf.as_mut_ptr().cast(), buf.len()).is_null()
            || libc::chdir(buf.as_ptr().cast()) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Makes every mount read-only, then binds each of `writable` back writable. A kernel
/// without `mount_setattr` (before 5.12) keeps the mounts as they were.
unsafe fn read_only_except(writable: &[(CString, libc::c_ulong)]) -> std::io::Result<()> {
    // SAFETY: a NUL-terminated constant path.
    match unsafe { mount_setattr_read_only(c"/", true) } {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => return Ok(()),
        other => other?,
    }
    for (path, flags) in writable {
        // SAFETY: NUL-terminated paths owned by the caller.
        let bound =
            unsafe { mount_bind(path, path).and_then(|()| set_read_only(path, false, *flags)) };
        match bound {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            other => other?,
        }
    }
    Ok(())
}

/// Makes the mount at `path` (and every mount beneath it) read-only, or writable again. With
/// `mount_setattr` the kernel keeps the other flags; before Linux 5.12 a remount must repeat
/// the `locked` ones, and mounts beneath keep theirs.
unsafe fn set_read_only(
    path: &CStr,
    read_only: bool,
    locked: libc::c_ulong,
) -> std::io::Result<()> {
    // SAFETY: forwarded; `path` is NUL-terminated.
    match unsafe { mount_setattr_read_only(path, read_only) } {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {}
        other => return other,
    }
    let rdonly = if read_only { libc::MS_RDONLY } else { 0 };
    // SAFETY: a remount of a NUL-terminated path.
    unsafe {
        mount_raw(
            None,
            path,
            None,
            libc::MS_BIND | libc::MS_REMOUNT | rdonly | locked,
            None,
        )
    }
}

/// `mount_setattr(path, AT_RECURSIVE)` setting or clearing read-only, nothing else.
unsafe fn mount_setattr_read_only(path: &CStr, read_only: bool) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if read_only { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr reads `attr` (of the size given) and a NUL-terminated path.
    let done = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether this kernel lets an unprivileged process mask paths, asked once per process (a
/// forked child tries it). `Err` says why not.
pub fn support() -> Result<(), String> {
    static SUPPORT: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    SUPPORT.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    let prepared = Prepared::new(&Masks::default()).map_err(|e| e.to_string())?;
    // SAFETY: the child only makes system calls and leaves with _exit; the parent waits for it.
    let code = unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return Err(format!(
                "could not fork to test it: {}",
                std::io::Error::last_os_error()
            ));
        }
        if pid == 0 {
            let result = enter_namespaces(&prepared.uid_map, &prepared.gid_map)
                .and_then(|()| mount(c"tmpfs", c"/", c"tmpfs", libc::MS_RDONLY, c"size=4k"));
            libc::_exit(match result {
                Ok(()) => 0,
                Err(e) => e.raw_os_error().unwrap_or(255).clamp(1, 255),
            });
        }
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) < 0 {
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return Err("could not wait for the test process".into());
            }
        }
        if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            255
        }
    };
    match code {
        0 => Ok(()),
        errno => Err(format!(
            "this kernel does not let an unprivileged process make a mount namespace ({}); \
             unprivileged user namespaces may be switched off (sysctl \
             kernel.unprivileged_userns_clone, user.max_user_namespaces, or AppArmor's \
             kernel.apparmor_restrict_unprivileged_userns)",
            std::io::Error::from_raw_os_error(errno)
        )),
    }
}

/// The flags of the mount `path` is on that a bind remount must keep (the kernel refuses to
/// drop them in a user namespace).
fn locked_flags(path: &CStr) -> libc::c_ulong {
    // SAFETY: statvfs fills a struct we own from a NUL-terminated path.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    let flags = pairs
        .iter()
        .filter(|(st, _)| stat.f_flag & st != 0)
        .fold(0, |flags, (_, ms)| flags | ms);
    // Neither noatime nor relatime: strictatime, which a remount must also say.
    if flags & (libc::MS_NOATIME | libc::MS_RELATIME) == 0 {
        flags | libc::MS_STRICTATIME
    } else {
        flags
    }
}

/// A new user namespace mapping only our own uid and gid, and a mount namespace in it whose
/// mounts do not propagate anywhere.
unsafe fn enter_namespaces(uid_map: &[u8], gid_map: &[u8]) -> std::io::Result<()> {
    // SAFETY: system calls on NUL-terminated constants and buffers owned by the caller.
    unsafe {
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        match write_file(c"/proc/self/setgroups", b"deny") {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            other => other?,
        }
        write_file(c"/proc/self/uid_map", uid_map)?;
        write_file(c"/proc/self/gid_map", gid_map)?;
        mount_raw(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)
    }
}

unsafe fn write_file(path: &CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY: open, write and close on a descriptor this function owns.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let error = std::io::Error::last_os_error();
        libc::close(fd);
        if usize::try_from(written).ok() != Some(data.len()) {
            return Err(error);
        }
    }
    Ok(())
}

unsafe fn mount(
    source: &CStr,
    target: &CStr,
    fstype: &CStr,
    flags: libc::c_ulong,
    data: &CStr,
) -> std::io::Result<()> {
    // SAFETY: forwarded; every pointer is a NUL-terminated string.
    unsafe { mount_raw(Some(source), target, Some(fstype), flags, Some(data)) }
}

unsafe fn mount_bind(source: &CStr, target: &CStr) -> std::io::Result<()> {
    // SAFETY: forwarded; every pointer is a NUL-terminated string.
    unsafe {
        mount_raw(
            Some(source),
            target,
            None,
            libc::MS_BIND | libc::MS_REC,
            None,
        )
    }
}

unsafe fn mount_raw(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> std::io::Result<()> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: each pointer is null or a NUL-terminated string that outlives the call.
    let result = unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            ptr(data).cast(),
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cover_goes_only_where_the_path_still_is_what_was_found() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        std::fs::write(&file, "s").unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        let c_path = CString::new(file.as_os_str().as_bytes()).unwrap();
        // SAFETY: opens and closes a descriptor of a file this test made.
        let pinned = unsafe { Pinned::open(&c_path, (meta.dev(), meta.ino())) }.unwrap();
        let named = std::fs::read_link(pinned.path().to_str().unwrap()).unwrap();
        assert_eq!(named, file);
        drop(pinned);
        // Swapped for a link to another file since it was found (the secret moved aside):
        // refused.
        std::fs::write(dir.path().join("decoy"), "d").unwrap();
        std::fs::rename(&file, dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("decoy"), &file).unwrap();
        // SAFETY: as above.
        let swapped = unsafe { Pinned::open(&c_path, (meta.dev(), meta.ino())) };
        assert_eq!(
            swapped.err().and_then(|e| e.raw_os_error()),
            Some(libc::ESTALE)
        );
    }
}
