//! Ending a session on a signal without leaving processes behind. SIGINT, SIGTERM and SIGHUP
//! interrupt the running turn like Ctrl-C (the turn ends, the transcript is written, the tool's
//! process group is killed); the process then exits with 128 + the signal's number. ouro is a
//! child subreaper, so what a command put in the background (`cmd &`, `nohup`, `setsid`, a
//! double fork) becomes ouro's child when its parent exits, and [`end_descendants`] ends them
//! all. A SIGKILL of ouro itself cannot be caught: those processes are then left to init.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Once};

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Which signal asked the session to end (0: none yet).
#[derive(Clone, Default)]
pub struct Received(Arc<AtomicI32>);

impl Received {
    pub fn signal(&self) -> Option<i32> {
        Some(self.0.load(Ordering::Relaxed)).filter(|s| *s != 0)
    }

    /// The exit code a process ended by this signal reports, as shells do.
    pub fn exit_code(&self) -> Option<i32> {
        self.signal().map(|s| 128 + s)
    }
}

/// Makes orphaned descendants this process's children (Linux 3.4 and later).
pub fn become_subreaper() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes plain integers.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// SIGINTs the signal handler has seen, and those the runtime has handled.
static SIGINTS_SEEN: AtomicU32 = AtomicU32::new(0);
static SIGINTS_HANDLED: AtomicU32 = AtomicU32::new(0);

/// Cancels `turn` on the first SIGINT, SIGTERM or SIGHUP and records which; a second SIGINT
/// exits at once with 130 (the user insists). The runtime handles signals when its thread is
/// free; should a second SIGINT come while the first still waits for it (print mode's one
/// thread blocked in a write to a reader that stopped reading, say), the signal handler itself
/// exits.
pub fn watch(turn: CancellationToken) -> Received {
    static INSISTED: Once = Once::new();
    INSISTED.call_once(|| {
        // SAFETY: the action only touches atomics and calls _exit, both async-signal-safe.
        let registered = unsafe {
            signal_hook_registry::register(libc::SIGINT, || {
                let seen = SIGINTS_SEEN.fetch_add(1, Ordering::SeqCst) + 1;
                if seen >= 2 && SIGINTS_HANDLED.load(Ordering::SeqCst) == 0 {
                    libc::_exit(130);
                }
            })
        };
        if let Err(e) = registered {
            tracing::warn!(error = %e, "a second Ctrl-C may wait for ouro's thread to be free");
        }
    });
    let received = Received::default();
    let kinds = [
        (SignalKind::interrupt(), libc::SIGINT),
        (SignalKind::terminate(), libc::SIGTERM),
        (SignalKind::hangup(), libc::SIGHUP),
    ];
    on_signals(&kinds, &received, move |number, first| {
        if number == libc::SIGINT {
            SIGINTS_HANDLED.fetch_add(1, Ordering::SeqCst);
        }
        if !first && number == libc::SIGINT {
            end_descendants();
            std::process::exit(130);
        }
        turn.cancel();
        std::future::ready(())
    });
    received
}

/// SIGTERM or SIGHUP for a front end that keeps Ctrl-C for itself (the REPL): `token` is
/// cancelled on the first, and which one it was is recorded. Should the front end not have
/// exited `grace` later (busy somewhere that does not watch the token), `last_words` runs
/// (to put the terminal back) and the process exits with 128 + the signal.
pub struct Ending {
    pub token: CancellationToken,
    pub received: Received,
}

pub fn watch_ending(grace: std::time::Duration, last_words: fn()) -> Ending {
    let ending = Ending {
        token: CancellationToken::new(),
        received: Received::default(),
    };
    let kinds = [
        (SignalKind::terminate(), libc::SIGTERM),
        (SignalKind::hangup(), libc::SIGHUP),
    ];
    let token = ending.token.clone();
    on_signals(&kinds, &ending.received, move |number, first| {
        let token = token.clone();
        async move {
            if first {
                token.cancel();
                tokio::time::sleep(grace).await;
                last_words();
                end_descendants();
                std::process::exit(128 + number);
            }
        }
    });
    ending
}

/// Runs `handle(signal, first)` on each of `kinds` as it arrives, `first` when it is the
/// first signal `received` records.
fn on_signals<F, Fut>(kinds: &[(SignalKind, i32)], received: &Received, handle: F)
where
    F: Fn(i32, bool) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    for &(kind, number) in kinds {
        let Ok(mut stream) = signal(kind) else {
            continue;
        };
        let (record, handle) = (received.clone(), handle.clone());
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                let first = record
                    .0
                    .compare_exchange(0, number, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok();
                handle(number, first).await;
            }
        });
    }
}

/// A descendant [`end_descendants`] leaves alone (ouro's process keeper, which ends its own
/// descendants once ouro is gone, and must outlive them to do it); 0 for none.
static SPARED: AtomicI32 = AtomicI32::new(0);

pub fn spare(pid: i32) {
    SPARED.store(pid, Ordering::Relaxed);
}

/// Ends every process descended from this one (SIGTERM, then SIGKILL to what is left), and
/// reaps them.
pub fn end_descendants() {
    for signal in [libc::SIGTERM, libc::SIGKILL] {
        let pids = descendants();
        if pids.is_empty() {
            return;
        }
        for pid in &pids {
            // SAFETY: kill takes plain integers; these are our own descendants.
            unsafe {
                libc::kill(*pid, signal);
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
        while std::time::Instant::now() < deadline && !descendants().is_empty() {
            reap();
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    reap();
}

fn reap() {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only to `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
    }
}

/// Every live process whose chain of parents leads to this one, from `/proc`.
fn descendants() -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut parents: Vec<(i32, i32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let mut fields = after.split_whitespace();
        let state = fields.next().unwrap_or("");
        let Some(ppid) = fields.next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if state != "Z" {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![me];
    let mut grew = true;
    while grew {
        grew = false;
        for (pid, ppid) in &parents {
            if found.contains(ppid) && !found.contains(pid) {
                found.push(*pid);
                grew = true;
            }
        }
    }
    let spared = SPARED.load(Ordering::Relaxed);
    found.retain(|p| *p != me && *p != spared);
    found
}
