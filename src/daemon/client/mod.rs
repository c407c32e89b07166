//! The thin client: every `ouro daemon|clone|ask|act|watch|talk` command connects to the
//! home's daemon (starting it on demand), says hello, sends one request and renders what comes
//! back. It holds no brain and no state of its own.

pub mod agent;
mod inbox;
mod keys;
mod render;
mod talk;
mod terminal;

use crate::sys::leftover::alive;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::net::UnixStream;

pub use inbox::DaemonQuestions;
pub use keys::DetachKeys;
pub use render::{ask, watch};
pub use talk::talk;

use super::conn::Conn;
use super::frame::{self, CloneInfo, Frame, Header, PROTOCOL};
use super::{DaemonError, Paths};

/// How long a client waits for a daemon it started to listen.
const START_WAIT: Duration = Duration::from_secs(15);

/// How long a client waits for a running daemon to make its removed socket again.
const SOCKET_WAIT: Duration = Duration::from_secs(5);

/// The pid of the process holding the home's daemon lock, if one does.
fn lock_holder(paths: &Paths) -> Option<u32> {
    let file = std::fs::File::open(paths.lock()).ok()?;
    crate::sys::flock::holder(&file)
}

pub struct Client {
    conn: Conn,
    pub daemon_pid: u32,
    /// The socket the daemon answered on.
    pub socket: PathBuf,
}

impl Client {
    /// Connects to the daemon of `paths`; `autostart` starts one when none runs.
    pub async fn connect(paths: &Paths, autostart: bool) -> Result<Client, DaemonError> {
        for socket in paths.sockets() {
            match UnixStream::connect(&socket).await {
                Ok(stream) => {
                    ours(&stream, &socket)?;
                    return handshake(stream, socket).await;
                }
                Err(e) if is_absent(&e) => {}
                Err(source) => {
                    return Err(DaemonError::Io {
                        action: "connect to the daemon at",
                        path: socket,
                        source,
                    });
                }
            }
        }
        // A daemon holds the lock but answers on no socket (its folder was removed): it makes
        // the socket again within a second or two.
        if let Some(pid) = lock_holder(paths) {
            let waited = Instant::now();
            while waited.elapsed() < SOCKET_WAIT && alive(pid) {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if let Ok(stream) = UnixStream::connect(&paths.socket).await {
                    ours(&stream, &paths.socket)?;
                    return handshake(stream, paths.socket.clone()).await;
                }
            }
            if alive(pid) {
                return Err(DaemonError::Client(format!(
                    "the daemon (pid {pid}) runs but answers on no socket ({} is gone); `ouro daemon stop` stops it",
                    paths.socket.display()
                )));
            }
        }
        if autostart {
            start(paths).await
        } else {
            Err(DaemonError::NotRunning)
        }
    }

    pub async fn send(&self, frame: impl Into<Frame>) -> Result<(), DaemonError> {
        if self.conn.send(frame).await {
            Ok(())
        } else {
            Err(DaemonError::Lost)
        }
    }

    /// The next frame; `Lost` when the daemon went away.
    pub async fn next(&mut self) -> Result<Frame, DaemonError> {
        self.conn.next().await.ok_or(DaemonError::Lost)
    }

    /// Sends a request with one answer and returns it; an `error` frame is an error.
    pub async fn request(&mut self, header: Header) -> Result<Header, DaemonError> {
        self.send(header).await?;
        match self.next().await?.header {
            Header::Error { message } => Err(DaemonError::Remote(message)),
            other => Ok(other),
        }
    }
}

fn is_absent(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
    )
}

/// Whether the process behind `socket` is this user's: a socket another user planted (in a
/// runtime folder anyone may write) is sent nothing, not even the handshake.
pub(in crate::daemon) fn ours(
    stream: &UnixStream,
    socket: &std::path::Path,
) -> Result<(), DaemonError> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    match stream.peer_cred().map(|c| c.uid()) {
        Ok(uid) if uid == me => Ok(()),
        Ok(uid) => Err(DaemonError::Refused(format!(
            "the socket {} is served by another user (uid {uid}), so ouro sends it nothing; remove it, or set XDG_RUNTIME_DIR to a folder only you can write",
            socket.display()
        ))),
        Err(source) => Err(DaemonError::Io {
            action: "check who serves",
            path: socket.to_path_buf(),
            source,
        }),
    }
}

async fn handshake(mut stream: UnixStream, socket: PathBuf) -> Result<Client, DaemonError> {
    let hello = Header::Hello {
        protocol: PROTOCOL,
        version: env!("CARGO_PKG_VERSION").into(),
    };
    frame::write(&mut stream, &hello.into()).await?;
    let answer = match frame::read(&mut stream).await {
        Ok(Some(frame)) => frame.header,
        Ok(None) => return Err(DaemonError::Lost),
        Err(frame::FrameError::Malformed(_)) => {
            return Err(DaemonError::Refused(format!(
                "it answered in a form this ouro ({}) cannot read, so it is another version; stop it (`kill` the pid in the daemon's lock file) and run the command again",
                env!("CARGO_PKG_VERSION")
            )));
        }
        Err(e) => return Err(e.into()),
    };
    match answer {
        Header::Welcome { protocol, pid, .. } if protocol == PROTOCOL => Ok(Client {
            conn: Conn::new(stream),
            daemon_pid: pid,
            socket,
        }),
        Header::Welcome {
            protocol,
            version,
            pid,
        } => Err(DaemonError::Refused(format!(
            "the daemon (ouro {version}, pid {pid}) speaks protocol {protocol} and this ouro ({}) speaks {PROTOCOL}; stop it with `kill {pid}` and run the command again",
            env!("CARGO_PKG_VERSION")
        ))),
        Header::Refused { reason } => Err(DaemonError::Refused(reason)),
        _ => Err(DaemonError::Refused(
            "it did not answer the hello; is it an ouro daemon?".into(),
        )),
    }
}

/// Starts a daemon in the background (its own session, output to its log) and connects once
/// it listens. Two clients starting one at once is fine: the second daemon finds the lock
/// taken and exits, and both clients reach the first.
async fn start(paths: &Paths) -> Result<Client, DaemonError> {
    use std::os::unix::process::CommandExt;
    std::fs::create_dir_all(&paths.state).map_err(|source| DaemonError::Io {
        action: "create",
        path: paths.state.clone(),
        source,
    })?;
    let log_path = paths.log();
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|source| DaemonError::Io {
            action: "open the daemon's log",
            path: log_path.clone(),
            source,
        })?;
    let exe = std::env::current_exe().map_err(|source| DaemonError::Io {
        action: "find the ouro executable at",
        path: PathBuf::from("/proc/self/exe"),
        source,
    })?;
    let log_err = log.try_clone().map_err(|source| DaemonError::Io {
        action: "open the daemon's log",
        path: log_path.clone(),
        source,
    })?;
    let mut command = std::process::Command::new(exe);
    command
        .args(["daemon", "run"])
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(log_err);
    // SAFETY: setsid is async-signal-safe; the daemon leaves the client's session, so closing
    // the terminal does not hang it up.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let log_size = std::fs::metadata(&log_path).map_or(0, |m| m.len());
    command.spawn().map_err(|source| DaemonError::Io {
        action: "start the daemon with",
        path: PathBuf::from("ouro daemon run"),
        source,
    })?;
    let started = Instant::now();
    while started.elapsed() < START_WAIT {
        if let Ok(stream) = UnixStream::connect(&paths.socket).await {
            ours(&stream, &paths.socket)?;
            return handshake(stream, paths.socket.clone()).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let tail = std::fs::read(&log_path)
        .map(|bytes| {
            String::from_utf8_lossy(&bytes[(log_size as usize).min(bytes.len())..]).into_owned()
        })
        .unwrap_or_default();
    Err(DaemonError::StartFailed {
        secs: START_WAIT.as_secs(),
        log: match tail.trim() {
            "" => String::new(),
            text => format!(" ({})", crate::text::truncate(text, 400)),
        },
        path: log_path,
    })
}

/// `ouro daemon start`.
pub(crate) async fn daemon_start(paths: &Paths) -> Result<String, DaemonError> {
    match Client::connect(paths, false).await {
        Ok(client) => Ok(format!(
            "the daemon already runs (pid {})",
            client.daemon_pid
        )),
        Err(DaemonError::NotRunning) => {
            let client = start(paths).await?;
            Ok(format!(
                "started the daemon (pid {}), listening on {}",
                client.daemon_pid,
                paths.socket.display()
            ))
        }
        Err(e) => Err(e),
    }
}

/// `ouro daemon stop`: asks the daemon to stop its brains and exit, and waits until it has.
pub(crate) async fn daemon_stop(paths: &Paths) -> Result<String, DaemonError> {
    let pid = match Client::connect(paths, false).await {
        Ok(mut client) => {
            client.request(Header::Stop).await?;
            client.daemon_pid
        }
        Err(DaemonError::NotRunning) => return Ok("no daemon runs".into()),
        // Found by its lock, not its socket: asked to stop by signal.
        Err(e) => match lock_holder(paths).filter(|pid| alive(*pid)) {
            Some(pid) => {
                // SAFETY: kill only signals the process holding this home's daemon lock.
                unsafe { libc::kill(pid as i32, libc::SIGTERM) };
                pid
            }
            None => return Err(e),
        },
    };
    let started = Instant::now();
    while started.elapsed() < START_WAIT {
        if !alive(pid) {
            return Ok(format!("stopped the daemon (pid {pid})"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(DaemonError::Client(format!(
        "the daemon (pid {pid}) did not stop within {} seconds; `kill {pid}` stops it",
        START_WAIT.as_secs()
    )))
}

/// `ouro daemon status`: `None` when no daemon runs.
pub(crate) async fn daemon_status(paths: &Paths) -> Result<Option<String>, DaemonError> {
    let mut client = match Client::connect(paths, false).await {
        Ok(client) => client,
        Err(DaemonError::NotRunning) => return Ok(None),
        Err(e) => match lock_holder(paths).filter(|pid| alive(*pid)) {
            Some(pid) => {
                return Ok(Some(format!(
                    "the daemon runs: pid {pid}, but it answers on no socket ({e})\n"
                )));
            }
            None => return Err(e),
        },
    };
    match client.request(Header::Status).await? {
        Header::StatusReport {
            pid,
            version,
            socket,
            home,
            clones,
            uptime_secs,
        } => Ok(Some(format!(
            "the daemon runs: pid {pid}, ouro {version}, up {uptime_secs} s\nsocket: {}\nhome:   {}\nclones: {clones}\n",
            socket.display(),
            home.display()
        ))),
        other => Err(unexpected(&other)),
    }
}

/// Sends a request whose answer is one `ok` frame and returns its message.
pub async fn simple(paths: &Paths, header: Header) -> Result<String, DaemonError> {
    let mut client = Client::connect(paths, true).await?;
    match client.request(header).await? {
        Header::Ok { message } => Ok(message),
        other => Err(unexpected(&other)),
    }
}

/// `ouro clone list`, as a table.
pub(crate) async fn clone_list(paths: &Paths) -> Result<String, DaemonError> {
    let mut client = Client::connect(paths, true).await?;
    match client.request(Header::CloneList).await? {
        Header::Clones { clones } => Ok(clone_table(&clones)),
        other => Err(unexpected(&other)),
    }
}

fn clone_table(clones: &[CloneInfo]) -> String {
    if clones.is_empty() {
        return "no clones; `ouro clone new NAME` makes one\n".into();
    }
    let rows: Vec<[String; 8]> = clones
        .iter()
        .map(|c| {
            [
                c.name.clone(),
                c.brain.clone(),
                match c.mode {
                    crate::brain::Mode::Dispatch => "dispatch".into(),
                    crate::brain::Mode::Interact => "interact".into(),
                },
                c.pid.map_or("-".into(), |p| p.to_string()),
                c.series.clone().unwrap_or_else(|| "-".into()),
                c.dir.display().to_string(),
                match &c.unreachable {
                    Some(reason) => format!("unreachable: {reason}"),
                    None if c.busy => "busy".into(),
                    None => "idle".into(),
                },
                // Last, so the columns scripts read stay where they were.
                c.zone.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    table(
        [
            "NAME", "BRAIN", "MODE", "PID", "SERIES", "DIR", "STATE", "ZONE",
        ],
        &rows,
    )
}

/// Rows under a head, each column as wide as its widest cell.
fn table<const N: usize>(head: [&str; N], rows: &[[String; N]]) -> String {
    let head = head.map(String::from);
    let mut widths = head.clone().map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = Vec::new();
    for row in std::iter::once(&head).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn unexpected(header: &Header) -> DaemonError {
    DaemonError::Remote(format!("an unexpected answer: {header:?}"))
}
