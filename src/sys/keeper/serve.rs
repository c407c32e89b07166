//! The keeper process: it starts every tool process for one ouro process, as their parent and
//! child subreaper, so whatever they leave running (`cmd &`, `nohup`, `setsid`, a double fork)
//! stays its descendant. When ouro goes, however it goes (SIGKILL included), the keeper's
//! socket reads end-of-file and it ends all of them before it exits.

use std::collections::HashMap;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex};

use super::SpawnError;
use super::wire::{self, Reply, Request};
use crate::sys::sync::lock;

/// The descriptor ouro hands the keeper its end of the socket on.
pub(super) const SOCKET_FD: i32 = 3;

/// Processes started and not yet reported ended, and the socket replies go out on. One lock
/// holds both: a reply is whole on the socket before the next one starts, and a process's end
/// is never reported before its start.
struct Running {
    state: Mutex<State>,
    started: Condvar,
}

struct State {
    /// pid to request id.
    ids: HashMap<i32, u64>,
    replies: UnixStream,
}

/// Runs the keeper on [`SOCKET_FD`] until ouro closes it; never returns.
pub fn run() -> ! {
    // SAFETY: fcntl on a descriptor number; a bad one yields EBADF, reported below.
    let valid = unsafe { libc::fcntl(SOCKET_FD, libc::F_SETFD, libc::FD_CLOEXEC) } == 0;
    if !valid {
        eprintln!("ouro: `ouro __keeper` is started by ouro itself, not by hand.");
        std::process::exit(2);
    }
    // SAFETY: the descriptor was handed to this process for this purpose alone, and is owned
    // from here on.
    let socket = UnixStream::from(unsafe { OwnedFd::from_raw_fd(SOCKET_FD) });
    // SAFETY: getppid has no preconditions; ouro started this process.
    let owner = unsafe { libc::getppid() } as u32;
    crate::sys::shutdown::become_subreaper();
    // Requests carry environments (a hook's has ouro's credentials): no other process of the
    // user may read this one's memory. And only the socket's end ends the keeper: a signal
    // meant for the session (a terminal's SIGHUP, a SIGTERM to every descendant) must not
    // take it before it has ended what it started. Handlers, not SIG_IGN: a handler is reset
    // by exec, so the processes it starts get the default actions.
    extern "C" fn ignore(_: libc::c_int) {}
    // SAFETY: prctl and signal with plain integers and a function that does nothing.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
            libc::signal(signal, ignore as *const () as libc::sighandler_t);
        }
    }
    if let Ok(replies) = socket.try_clone() {
        let running = Arc::new(Running {
            state: Mutex::new(State {
                ids: HashMap::new(),
                replies,
            }),
            started: Condvar::new(),
        });
        let reaping = running.clone();
        std::thread::spawn(move || reap(&reaping));
        while let Ok(Some((request, fds))) = wire::recv::<Request>(&socket) {
            if start(&running, request, fds).is_err() {
                break;
            }
        }
    }
    crate::sys::shutdown::end_descendants();
    super::sweep_scratch(owner);
    std::process::exit(0);
}

/// Starts one process and replies; an error only when the reply could not be sent.
fn start(running: &Running, request: Request, fds: Vec<OwnedFd>) -> std::io::Result<()> {
    let id = request.id;
    let failed = |sandbox: bool, message: String| {
        let state = lock(&running.state);
        wire::send(
            &state.replies,
            &Reply::Failed {
                id,
                sandbox,
                message,
            },
            &[],
        )
    };
    let mut fds = fds.into_iter();
    let stdin = if request.stdin { fds.next() } else { None };
    // Exactly stdout and stderr after it.
    let (Some(stdout), Some(stderr), None) = (fds.next(), fds.next(), fds.next()) else {
        return failed(false, "the keeper got the wrong descriptors".into());
    };
    let mut command = match super::command(&request, stdin, stdout, stderr) {
        Ok(command) => command,
        Err(SpawnError::Sandbox(why)) => return failed(true, why),
        Err(e) => return failed(false, e.to_string()),
    };
    // Held across the spawn and the reply: the reaper must not look up a pid before it is
    // recorded, nor report its end before its start.
    let mut state = lock(&running.state);
    match command.spawn() {
        Ok(child) => {
            let pid = child.id() as i32;
            state.ids.insert(pid, id);
            running.started.notify_one();
            // The reaper waits for it; the handle would only duplicate that.
            drop(child);
            wire::send(&state.replies, &Reply::Started { id, pid }, &[])
        }
        Err(e) => {
            drop(state);
            failed(false, e.to_string())
        }
    }
}

/// Waits for every child, the adopted ones included (else they would stay zombies), and tells
/// ouro when one it asked for has ended. A child is only looked at here, then reaped under
/// the lock the spawning holds: std reaps a child itself when its exec fails, and must find it.
fn reap(running: &Running) {
    loop {
        // SAFETY: siginfo_t is plain data that waitid fills.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid writes only to `info`; WNOWAIT leaves the child to be reaped below.
        let found =
            unsafe { libc::waitid(libc::P_ALL, 0, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if found < 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                _ => {
                    // No children at all: sleep until one is started (its pid is recorded
                    // under the same lock, so the wake-up cannot be missed).
                    let state = lock(&running.state);
                    drop(running.started.wait_while(state, |s| s.ids.is_empty()));
                    continue;
                }
            }
        }
        // SAFETY: waitid succeeded for an exited child, so si_pid is set.
        let pid = unsafe { info.si_pid() };
        let mut state = lock(&running.state);
        let mut status = 0;
        // SAFETY: waitpid writes only to `status`. The child may be gone already (std reaped
        // one whose exec failed, while this thread waited for the lock).
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } != pid {
            continue;
        }
        if let Some(id) = state.ids.remove(&pid)
            && wire::send(&state.replies, &Reply::Exited { id, status }, &[]).is_err()
        {
            return;
        }
    }
}
