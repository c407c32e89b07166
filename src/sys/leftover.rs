//! A process an earlier, killed run of ouro may have left behind (a daemon's brain, say),
//! named by its pid and start time so that a pid the system has since given to another
//! process is never waited for or signalled.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leftover {
    pub pid: u32,
    /// Clock ticks after boot at which it started (`/proc/PID/stat`, field 22).
    pub started: u64,
}

/// What became of a leftover process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// It was not running any more.
    Gone,
    /// It ended by itself while we waited.
    Finished,
    /// It was still running when the wait was up, and was ended (its process group with it).
    Ended,
}

impl Leftover {
    /// The running process `pid`, if it runs.
    pub fn of(pid: u32) -> Option<Leftover> {
        Some(Leftover {
            pid,
            started: start_ticks(pid)?,
        })
    }

    /// Whether this very process still runs.
    pub fn runs(&self) -> bool {
        start_ticks(self.pid) == Some(self.started)
    }

    /// Waits up to `wait` for it to end, then ends it: SIGTERM, and SIGKILL after a second.
    pub async fn settle(&self, wait: Duration) -> Fate {
        if !self.runs() {
            return Fate::Gone;
        }
        if self.ended_within(wait).await {
            return Fate::Finished;
        }
        for signal in [libc::SIGTERM, libc::SIGKILL] {
            self.signal(signal);
            if self.ended_within(Duration::from_secs(1)).await {
                break;
            }
        }
        Fate::Ended
    }

    async fn ended_within(&self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        while self.runs() {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        true
    }

    /// Signals the process, and its whole group when it leads one (as every process ouro
    /// starts does), so what it started ends with it.
    fn signal(&self, signal: i32) {
        let Ok(pid) = i32::try_from(self.pid) else {
            return;
        };
        if !self.runs() {
            return;
        }
        // SAFETY: getpgid and kill take plain integers; the start time was checked just above,
        // so the pid is still the process recorded.
        unsafe {
            let target = if libc::getpgid(pid) == pid { -pid } else { pid };
            libc::kill(target, signal);
        }
    }
}

/// Whether a process `pid` exists.
pub fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// The process's start time in clock ticks after boot; `None` when it does not run (a zombie
/// counts as ended).
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses; fields after it are plain.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    // Field 3 is the state; the start time is field 22, the 20th after the name.
    if fields.next()? == "Z" {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_for_or_ends_a_leftover_and_never_a_stranger() {
        let mut quick = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let left = Leftover::of(quick.id()).unwrap();
        assert!(left.runs());
        let reaper = std::thread::spawn(move || quick.wait());
        assert_eq!(left.settle(Duration::from_secs(5)).await, Fate::Finished);
        reaper.join().unwrap().unwrap();
        assert_eq!(left.settle(Duration::from_secs(5)).await, Fate::Gone);

        let mut slow = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let left = Leftover::of(slow.id()).unwrap();
        let reaper = std::thread::spawn(move || slow.wait());
        assert_eq!(left.settle(Duration::from_millis(100)).await, Fate::Ended);
        assert!(!reaper.join().unwrap().unwrap().success());

        // The same pid with another start time is someone else: left alone.
        let me = Leftover::of(std::process::id()).unwrap();
        let stranger = Leftover {
            started: me.started + 1,
            ..me
        };
        assert!(!stranger.runs());
        assert_eq!(stranger.settle(Duration::ZERO).await, Fate::Gone);
    }
}
