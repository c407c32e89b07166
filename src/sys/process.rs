//! Tool processes: each leads its own process group, so stopping one stops everything it
//! started (a `sleep` in a pipeline, a dev server launched by a script), and each is started
//! by ouro's keeper (see [`super::keeper`]), so nothing it leaves running outlives ouro.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::net::unix::pipe;
use tokio::sync::oneshot;

pub use super::keeper::SpawnError;
use super::keeper::{self, Keeper, Request};
use super::sandbox::Policy;

/// A process to start: the program, its arguments, directory, whole environment, and sandbox.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    /// A pipe to its stdin (else `/dev/null`).
    pub stdin: bool,
    pub policy: Option<Policy>,
}

/// A started process with the parent's ends of its pipes.
pub struct Spawned {
    pub stdin: Option<pipe::Sender>,
    pub stdout: pipe::Receiver,
    pub stderr: pipe::Receiver,
    pub process: GroupChild,
}

impl Launch {
    pub fn new(program: impl Into<OsString>, cwd: impl Into<PathBuf>) -> Launch {
        Launch {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            stdin: false,
            policy: None,
        }
    }

    pub fn arg(&mut self, arg: impl Into<OsString>) -> &mut Launch {
        self.args.push(arg.into());
        self
    }

    /// Sets one variable, replacing an earlier value.
    pub fn env(&mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> &mut Launch {
        let key = key.into();
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.into()));
        self
    }

    /// What the keeper is asked to start (it sets the id).
    fn request(&self) -> Request {
        Request {
            id: 0,
            program: self.program.clone(),
            args: self.args.clone(),
            cwd: self.cwd.clone().into_os_string(),
            env: self.env.clone(),
            stdin: self.stdin,
            policy: self.policy.clone(),
            terminal: false,
        }
    }

    /// Starts it on `terminal` (the slave side of a pseudo-terminal) as its stdin, stdout,
    /// stderr and controlling terminal, in a session of its own; through the keeper when there
    /// is one, like [`Launch::spawn`].
    pub async fn spawn_on_terminal(&self, terminal: OwnedFd) -> Result<GroupChild, SpawnError> {
        let mut request = self.request();
        request.stdin = true;
        request.terminal = true;
        match keeper::get() {
            Some(keeper) => {
                let fd = terminal.as_raw_fd();
                let (pid, exit) = keeper.start(request, &[fd, fd, fd]).await?;
                Ok(GroupChild {
                    pgid: Some(pid),
                    exit: Exit::Kept(Some(exit)),
                    reaped: false,
                })
            }
            None => {
                let stdin = terminal.try_clone()?;
                let stdout = terminal.try_clone()?;
                let command = keeper::command(&request, Some(stdin), stdout, terminal)?;
                let child = tokio::process::Command::from(command).spawn()?;
                Ok(GroupChild {
                    pgid: child.id().and_then(|id| i32::try_from(id).ok()),
                    exit: Exit::Here(child),
                    reaped: false,
                })
            }
        }
    }

    /// Starts it through the keeper, or directly when there is no keeper (the process then
    /// ends with ouro only when ouro ends in an orderly way).
    pub async fn spawn(&self) -> Result<Spawned, SpawnError> {
        let (stdin_ours, stdin_theirs) = if self.stdin {
            let (theirs, ours) = pipe_pair()?;
            (Some(pipe::Sender::from_owned_fd(ours)?), Some(theirs))
        } else {
            (None, None)
        };
        let (stdout, stdout_theirs) = pipe_pair()?;
        let (stderr, stderr_theirs) = pipe_pair()?;
        let theirs = Theirs {
            stdin: stdin_theirs,
            stdout: stdout_theirs,
            stderr: stderr_theirs,
        };
        let process = match keeper::get() {
            Some(keeper) => self.spawn_kept(&keeper, &theirs).await?,
            None => self.spawn_here(theirs)?,
        };
        Ok(Spawned {
            stdin: stdin_ours,
            stdout: pipe::Receiver::from_owned_fd(stdout)?,
            stderr: pipe::Receiver::from_owned_fd(stderr)?,
            process,
        })
    }

    async fn spawn_kept(&self, keeper: &Keeper, theirs: &Theirs) -> Result<GroupChild, SpawnError> {
        let mut fds = Vec::new();
        if let Some(stdin) = &theirs.stdin {
            fds.push(stdin.as_raw_fd());
        }
        fds.extend([theirs.stdout.as_raw_fd(), theirs.stderr.as_raw_fd()]);
        let (pid, exit) = keeper.start(self.request(), &fds).await?;
        Ok(GroupChild {
            pgid: Some(pid),
            exit: Exit::Kept(Some(exit)),
            reaped: false,
        })
    }

    fn spawn_here(&self, theirs: Theirs) -> Result<GroupChild, SpawnError> {
        let command = keeper::command(&self.request(), theirs.stdin, theirs.stdout, theirs.stderr)?;
        let child = tokio::process::Command::from(command).spawn()?;
        Ok(GroupChild {
            pgid: child.id().and_then(|id| i32::try_from(id).ok()),
            exit: Exit::Here(child),
            reaped: false,
        })
    }
}

/// The child's ends of its pipes, closed in ouro once it has started.
struct Theirs {
    stdin: Option<OwnedFd>,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

/// (read end, write end), both close-on-exec.
fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let (reader, writer) = io::pipe()?;
    Ok((reader.into(), writer.into()))
}

enum Exit {
    Here(tokio::process::Child),
    /// The keeper's report of the wait status.
    Kept(Option<oneshot::Receiver<i32>>),
}

/// A running process that leads its own process group. Dropping it before it was waited for
/// kills the whole group, so an abandoned call leaves nothing behind.
pub struct GroupChild {
    pgid: Option<i32>,
    exit: Exit,
    reaped: bool,
}

impl GroupChild {
    /// The process's pid (also its group's id).
    pub fn pid(&self) -> Option<u32> {
        self.pgid.and_then(|p| u32::try_from(p).ok())
    }

    /// Waits for the group leader. Other members may still run (a command's `cmd &`); they are
    /// left alone because starting them may have been the point.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = match &mut self.exit {
            Exit::Here(child) => child.wait().await?,
            Exit::Kept(receiver) => {
                let Some(rx) = receiver.as_mut() else {
                    return Err(io::Error::other("the process was already waited for"));
                };
                let status = rx.await.map_err(|_| {
                    io::Error::other("ouro's process keeper ended before the process did")
                });
                *receiver = None;
                ExitStatus::from_raw(status?)
            }
        };
        self.reaped = true;
        Ok(status)
    }

    /// SIGTERM to the whole group, then SIGKILL to whatever is left once the leader exited or
    /// `grace` passed; the leader is reaped.
    pub async fn terminate(&mut self, grace: Duration) {
        self.signal(libc::SIGTERM);
        let early = tokio::time::timeout(grace, self.wait()).await;
        self.signal(libc::SIGKILL);
        if !matches!(early, Ok(Ok(_))) {
            let _ = self.wait().await;
        }
        self.reaped = true;
    }

    fn signal(&self, signal: libc::c_int) {
        // pgid 0 or 1 would address our own group or init; a spawned child never has those ids.
        if let Some(pgid) = self.pgid.filter(|&p| p > 1) {
            // SAFETY: killpg only sends a signal; a group that is already gone yields ESRCH.
            unsafe {
                libc::killpg(pgid, signal);
            }
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if !self.reaped {
            self.signal(libc::SIGKILL);
        }
    }
}

/// Median times to start `true` as a Bash call starts its command (through the keeper when
/// there is one), unconfined and confined by `policy` (its ruleset built anew each time), over
/// `runs` alternating spawns; `None` when the kernel enforces nothing.
pub async fn spawn_cost(
    policy: &Policy,
    runs: usize,
) -> Result<Option<(Duration, Duration)>, SpawnError> {
    if !matches!(
        super::sandbox::Support::detect(),
        super::sandbox::Support::Landlock(_)
    ) {
        return Ok(None);
    }
    let mut plain = Vec::with_capacity(runs);
    let mut confined = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        plain.push(spawn_true(None).await?);
        confined.push(spawn_true(Some(policy)).await?);
    }
    plain.sort();
    confined.sort();
    Ok(Some((plain[plain.len() / 2], confined[confined.len() / 2])))
}

async fn spawn_true(policy: Option<&Policy>) -> Result<Duration, SpawnError> {
    let started = std::time::Instant::now();
    let mut launch = Launch::new("true", std::env::temp_dir());
    if let Some(path) = std::env::var_os("PATH") {
        launch.env("PATH", path);
    }
    launch.policy = policy.cloned();
    let status = launch.spawn().await?.process.wait().await?;
    if !status.success() {
        return Err(SpawnError::Io(io::Error::other(format!(
            "`true` exited with {status}"
        ))));
    }
    Ok(started.elapsed())
}
