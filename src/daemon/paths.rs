//! Where a daemon lives. One daemon per ouro home: its socket sits in the user's runtime
//! directory (`$XDG_RUNTIME_DIR/ouro/`, a tmpfs only the user can enter), named after the home
//! so two homes never meet, else in `run/` inside the home. What must outlive a reboot (the
//! clones, their series, the log) stays in the home.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::DaemonError;

/// A unix socket path longer than this does not fit `sockaddr_un`.
const MAX_SOCKET_PATH: usize = 107;

#[derive(Debug, Clone)]
pub struct Paths {
    /// The ouro home this daemon serves.
    pub home: PathBuf,
    /// `daemon/` in the home: the lock, the log, the clones.
    pub state: PathBuf,
    pub socket: PathBuf,
}

impl Paths {
    /// The paths for the ouro home of this process (`OURO_HOME`, else `~/.ouro`).
    pub fn current() -> Result<Paths, DaemonError> {
        let home = crate::settings::ouro_home().ok_or(DaemonError::NoHome)?;
        let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
        Ok(Paths::for_home(home, runtime.as_deref()))
    }

    pub fn for_home(home: PathBuf, runtime: Option<&Path>) -> Paths {
        let state = home.join("daemon");
        let in_runtime = runtime
            .filter(|dir| dir.is_absolute() && dir.is_dir())
            .map(|dir| dir.join("ouro").join(format!("{}.sock", key(&home))))
            .filter(|p| p.as_os_str().len() <= MAX_SOCKET_PATH);
        let socket = in_runtime.unwrap_or_else(|| home.join("run").join("daemon.sock"));
        Paths {
            home,
            state,
            socket,
        }
    }

    pub fn lock(&self) -> PathBuf {
        self.state.join("daemon.lock")
    }

    pub fn log(&self) -> PathBuf {
        self.state.join("daemon.log")
    }

    pub fn clones(&self) -> PathBuf {
        self.state.join("clones")
    }

    /// Where the running daemon wrote the path of its socket: a client whose environment
    /// differs (no or another `XDG_RUNTIME_DIR`: cron, `su`, a container) still finds it.
    fn socket_record(&self) -> PathBuf {
        self.state.join("socket")
    }

    pub(crate) fn record_socket(&self) {
        let path = self.socket_record();
        if let Err(e) = crate::sys::atomic::write(&path, self.socket.as_os_str().as_encoded_bytes())
        {
            tracing::warn!(error = %e, path = %path.display(), "could not record the socket's path");
        }
    }

    pub(crate) fn forget_socket(&self) {
        let _ = std::fs::remove_file(self.socket_record());
    }

    /// The sockets a client tries, in order: the one the running daemon recorded, then the
    /// one a daemon started from this environment would use.
    pub fn sockets(&self) -> Vec<PathBuf> {
        let recorded = std::fs::read(self.socket_record())
            .ok()
            .map(|bytes| {
                PathBuf::from(std::ffi::OsString::from(
                    String::from_utf8_lossy(&bytes).into_owned(),
                ))
            })
            .filter(|p| p.is_absolute() && *p != self.socket);
        recorded.into_iter().chain([self.socket.clone()]).collect()
    }

    /// Creates the socket's directory, private to this user (0700); refuses one that another
    /// user owns.
    pub(crate) fn prepare_socket_dir(&self) -> Result<(), DaemonError> {
        private_dir(self.socket.parent().unwrap_or(Path::new("/")), true)
    }

    /// The private folder for the zones' ssh control sockets, made if need be: `run/zones`
    /// in the home (never the runtime dir, which differs between a shell and the daemon it
    /// started: both must find one master), or, when that path is too long for a socket (a
    /// deep home), `/tmp/ouro-UID/` under the home's key.
    pub(crate) fn zone_sockets(&self) -> Result<PathBuf, DaemonError> {
        let beside = self.home.join("run").join("zones");
        // ssh's control socket is NAME.ssh in here, and a 17-byte suffix while it is made.
        if beside.as_os_str().len() + 34 <= MAX_SOCKET_PATH {
            private_dir(&beside, true)?;
            return Ok(beside);
        }
        // SAFETY: getuid has no preconditions and cannot fail.
        let me = unsafe { libc::getuid() };
        // In a folder anyone may write to: a symlink planted there is refused, not followed.
        let parent = PathBuf::from(format!("/tmp/ouro-{me}"));
        private_dir(&parent, false)?;
        let dir = parent.join(key(&self.home));
        private_dir(&dir, false)?;
        Ok(dir)
    }
}

/// Creates `dir` private to this user (0700); refuses one that another user owns, and, unless
/// `follow`, one that is a symlink.
fn private_dir(dir: &Path, follow: bool) -> Result<(), DaemonError> {
    let failed = |source| DaemonError::Io {
        action: "prepare the socket directory",
        path: dir.to_path_buf(),
        source,
    };
    crate::sys::atomic::make_private_dir(dir).map_err(failed)?;
    let meta = if follow {
        std::fs::metadata(dir)
    } else {
        std::fs::symlink_metadata(dir)
    }
    .map_err(failed)?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    if meta.uid() != me || !meta.is_dir() {
        return Err(DaemonError::ForeignSocketDir {
            dir: dir.to_path_buf(),
        });
    }
    if meta.permissions().mode() & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(failed)?;
    }
    Ok(())
}

/// A short, stable name for a home: the first 16 hex digits of the SHA-256 of its path.
fn key(home: &Path) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, home.as_os_str().as_encoded_bytes());
    crate::text::hex(&digest.as_ref()[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn homes_get_their_own_socket_in_the_runtime_dir() {
        let runtime = tempfile::tempdir().unwrap();
        let a = Paths::for_home("/h/a".into(), Some(runtime.path()));
        let b = Paths::for_home("/h/b".into(), Some(runtime.path()));
        assert_ne!(a.socket, b.socket);
        assert!(a.socket.starts_with(runtime.path().join("ouro")), "{a:?}");
        assert_eq!(a.state, Path::new("/h/a/daemon"));
    }

    #[test]
    fn without_a_usable_runtime_dir_the_socket_is_in_the_home() {
        let p = Paths::for_home("/h/a".into(), None);
        assert_eq!(p.socket, Path::new("/h/a/run/daemon.sock"));
        let p = Paths::for_home("/h/a".into(), Some(Path::new("/does/not/exist")));
        assert_eq!(p.socket, Path::new("/h/a/run/daemon.sock"));
        let p = Paths::for_home("/h/a".into(), Some(Path::new("relative")));
        assert_eq!(p.socket, Path::new("/h/a/run/daemon.sock"));
    }

    #[test]
    fn zone_sockets_fit_a_socket_path_however_deep_the_home() {
        let dir = tempfile::tempdir().unwrap();
        let shallow = Paths::for_home(dir.path().join("home"), None);
        let near = shallow.zone_sockets().unwrap();
        assert_eq!(near, dir.path().join("home/run/zones"));
        let deep = Paths::for_home(dir.path().join("d".repeat(90)), None);
        let far = deep.zone_sockets().unwrap();
        assert!(far.as_os_str().len() + 34 <= MAX_SOCKET_PATH, "{far:?}");
        assert_ne!(far, shallow.zone_sockets().unwrap());
        let mode = std::fs::metadata(&far).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::remove_dir(far).unwrap();
    }

    #[test]
    fn the_socket_dir_is_made_private() {
        let dir = tempfile::tempdir().unwrap();
        let p = Paths::for_home(dir.path().join("home"), None);
        std::fs::create_dir_all(p.socket.parent().unwrap()).unwrap();
        std::fs::set_permissions(
            p.socket.parent().unwrap(),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        p.prepare_socket_dir().unwrap();
        let mode = std::fs::metadata(p.socket.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
