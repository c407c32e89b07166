//! ouro's process keeper: a small process of ouro's own binary (`ouro __keeper`) that starts
//! every tool process on ouro's behalf and is their child subreaper. It learns that ouro has
//! ended from its socket, not from a signal, so even a SIGKILL of ouro ends every process a
//! tool started, the ones that left its process group or session included.
//!
//! It is started on the first tool process and lives in a process group of its own, so a
//! Ctrl-C at the terminal does not reach it. When it cannot be started, processes are started
//! by ouro itself as before (they then end with an orderly exit of ouro, not with a SIGKILL).

mod serve;
mod wire;

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::oneshot;

use crate::sys::sync::lock;

pub use serve::run;
use wire::Reply;
pub use wire::Request;

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The sandbox the process needs could not be built; it was not started.
    #[error("{0}")]
    Sandbox(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The command that starts `request` in its own process group and its sandbox, on these ends
/// of its pipes (no stdin: `/dev/null`). The keeper starts it so, and ouro itself when there
/// is no keeper.
pub fn command(
    request: &Request,
    stdin: Option<OwnedFd>,
    stdout: OwnedFd,
    stderr: OwnedFd,
) -> Result<std::process::Command, SpawnError> {
    let mut command = std::process::Command::new(&request.program);
    command
        .args(&request.args)
        .current_dir(&request.cwd)
        .env_clear()
        .envs(request.env.iter().map(|(k, v)| (k, v)))
        .stdin(stdin.map_or_else(std::process::Stdio::null, std::process::Stdio::from))
        .stdout(stdout)
        .stderr(stderr);
    if request.terminal {
        // SAFETY: setsid and ioctl between fork and exec, on the child's own stdin.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    } else {
        command.process_group(0);
    }
    if let Some(policy) = &request.policy {
        match super::sandbox::Prepared::new(policy) {
            Ok(Some(prepared)) => prepared.apply(&mut command),
            Ok(None) => {}
            Err(e) => return Err(SpawnError::Sandbox(e.to_string())),
        }
    }
    Ok(command)
}

/// A path in the temp folder for a scratch file or folder of this ouro process (`kind`: what it
/// is for). Its name carries ouro's pid, so the keeper removes what is left of them when ouro
/// ends, however it ends.
pub fn scratch(kind: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "{}{}",
        scratch_prefix(kind, std::process::id()),
        uuid::Uuid::new_v4().simple()
    ))
}

/// The kinds of scratch path ouro makes, which the keeper sweeps.
const SCRATCH_KINDS: [&str; 3] = ["cwd", "tmp", "curate"];

fn scratch_prefix(kind: &str, pid: u32) -> String {
    format!("ouro-{kind}-{pid}-")
}

/// Removes what is left of the scratch paths of the ouro process `owner` (it has ended).
fn sweep_scratch(owner: u32) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let prefixes: Vec<String> = SCRATCH_KINDS
        .iter()
        .map(|kind| scratch_prefix(kind, owner))
        .collect();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !prefixes.iter().any(|p| name.starts_with(p.as_str())) {
            continue;
        }
        let path = entry.path();
        let _ = match entry.file_type() {
            Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
    }
}

/// The argument that makes the binary a keeper.
pub const ARG: &str = "__keeper";

/// The channel to a running keeper.
pub struct Keeper {
    socket: Mutex<UnixStream>,
    waiting: Mutex<HashMap<u64, Waiting>>,
    next_id: AtomicU64,
    gone: AtomicBool,
    /// The keeper's own process, waited for when it ends.
    _process: std::process::Child,
}

struct Waiting {
    started: Option<oneshot::Sender<Result<i32, SpawnError>>>,
    exited: Option<oneshot::Sender<i32>>,
    /// Known once started: whoever gives up on the process kills its group by it.
    pid: Option<i32>,
}

/// Kills a process group (the keeper's children lead their own).
fn kill_group(pid: i32) {
    if pid > 1 {
        // SAFETY: killpg only sends a signal.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
        }
    }
}

/// Armed while a start is awaited: a call cancelled then must not leave its process running.
struct Abandon<'a> {
    keeper: &'a Keeper,
    id: u64,
    armed: bool,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Gone from the table: a Started still to come kills the group (see `listen`).
        if let Some(pid) = lock(&self.keeper.waiting)
            .remove(&self.id)
            .and_then(|w| w.pid)
        {
            kill_group(pid);
        }
    }
}

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Lets this process start a keeper: only ouro's own binary can be one, so `main` says so
/// (a test binary starts its processes itself).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// The keeper, started on first use; `None` when it could not be started or has gone away.
pub fn get() -> Option<Arc<Keeper>> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    static KEEPER: OnceLock<Option<Arc<Keeper>>> = OnceLock::new();
    let keeper = KEEPER.get_or_init(|| match Keeper::launch() {
        Ok(keeper) => Some(keeper),
        Err(e) => {
            tracing::warn!(
                "could not start ouro's process keeper ({e}); tool processes that outlive \
                 their call will then outlive a killed ouro too"
            );
            None
        }
    });
    keeper.clone().filter(|k| !k.gone.load(Ordering::Relaxed))
}

impl Keeper {
    fn launch() -> std::io::Result<Arc<Keeper>> {
        if std::env::var_os("OURO_KEEPER").is_some_and(|v| v == "0") {
            return Err(std::io::Error::other("OURO_KEEPER=0"));
        }
        let (ours, theirs) = UnixStream::pair()?;
        let fd = theirs.as_raw_fd();
        // Named by its real path, so `ps` shows ouro rather than `exe` (a binary replaced
        // since start-up is still reachable through /proc).
        let program = std::env::current_exe()
            .ok()
            .filter(|p| p.is_file())
            .unwrap_or_else(|| "/proc/self/exe".into());
        let mut command = std::process::Command::new(program);
        // Nothing of ouro's environment (its credentials least of all): every request carries
        // its process's whole environment.
        command
            .arg(ARG)
            .env_clear()
            // Where this process's scratch files are, for the sweep once it has gone.
            .env("TMPDIR", std::env::temp_dir())
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0);
        // SAFETY: dup2 and fcntl between fork and exec, on descriptors this process owns.
        unsafe {
            command.pre_exec(move || {
                let result = if fd == serve::SOCKET_FD {
                    libc::fcntl(fd, libc::F_SETFD, 0)
                } else {
                    libc::dup2(fd, serve::SOCKET_FD)
                };
                if result < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let process = command.spawn()?;
        drop(theirs);
        crate::sys::shutdown::spare(process.id() as i32);
        let replies = ours.try_clone()?;
        let keeper = Arc::new(Keeper {
            socket: Mutex::new(ours),
            waiting: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            gone: AtomicBool::new(false),
            _process: process,
        });
        let listening = keeper.clone();
        std::thread::Builder::new()
            .name("ouro-keeper".into())
            .spawn(move || listening.listen(&replies))?;
        Ok(keeper)
    }

    /// Has the keeper start `request` (its id is set here) with these stdio descriptors; the
    /// pid and a receiver of its wait status.
    pub async fn start(
        &self,
        mut request: Request,
        fds: &[RawFd],
    ) -> Result<(i32, oneshot::Receiver<i32>), SpawnError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        request.id = id;
        let (started_tx, started) = oneshot::channel();
        let (exited_tx, exited) = oneshot::channel();
        lock(&self.waiting).insert(
            id,
            Waiting {
                started: Some(started_tx),
                exited: Some(exited_tx),
                pid: None,
            },
        );
        let mut abandon = Abandon {
            keeper: self,
            id,
            armed: true,
        };
        let sent = {
            let socket = lock(&self.socket);
            wire::send(&socket, &request, fds)
        };
        if let Err(e) = sent {
            // A request that could not be put into words sent nothing; any other failure
            // means the keeper is gone.
            if e.kind() != std::io::ErrorKind::InvalidData {
                self.gone.store(true, Ordering::Relaxed);
            }
            return Err(SpawnError::Io(e));
        }
        let pid = started.await.map_err(|_| {
            SpawnError::Io(std::io::Error::other(
                "ouro's process keeper ended before it started the process",
            ))
        })??;
        abandon.armed = false;
        Ok((pid, exited))
    }

    /// Hands each reply to whoever waits for it, until the keeper goes; then everyone still
    /// waiting hears so (their senders are dropped).
    fn listen(&self, socket: &UnixStream) {
        while let Ok(Some((reply, _))) = wire::recv::<Reply>(socket) {
            let mut waiting = lock(&self.waiting);
            match reply {
                Reply::Started { id, pid } => {
                    let started = waiting.get_mut(&id).and_then(|w| {
                        w.pid = Some(pid);
                        w.started.take()
                    });
                    if started.is_none_or(|s| s.send(Ok(pid)).is_err()) {
                        // Nobody holds it any more (the call was cancelled while it started).
                        waiting.remove(&id);
                        kill_group(pid);
                    }
                }
                Reply::Failed {
                    id,
                    sandbox,
                    message,
                } => {
                    if let Some(started) = waiting.remove(&id).and_then(|mut w| w.started.take()) {
                        let error = if sandbox {
                            SpawnError::Sandbox(message)
                        } else {
                            SpawnError::Io(std::io::Error::other(message))
                        };
                        let _ = started.send(Err(error));
                    }
                }
                Reply::Exited { id, status } => {
                    if let Some(exited) = waiting.remove(&id).and_then(|mut w| w.exited.take()) {
                        let _ = exited.send(status);
                    }
                }
            }
        }
        self.gone.store(true, Ordering::Relaxed);
        lock(&self.waiting).clear();
        tracing::warn!(
            "ouro's process keeper ended; tool processes are started by ouro itself from now on"
        );
    }
}
