//! Print mode as a user runs it: the real `ouro -p` binary, timed from its spawn to the mock
//! having read its first request whole (the mock notes the moment: nothing polls for it, which
//! would take a CPU from the process measured), with its peak resident memory.
//!
//! Peak RSS needs a go-between. Linux copies the parent's memory high-water mark into a child's
//! `ru_maxrss` when the child execs, so `wait4` on a child of this (large) process reports at
//! least this process's own peak. So `ouro bench --probe -- <flags>` is spawned instead: a fresh
//! small process that spawns `ouro <flags>`, reaps it with `wait4` and prints what it saw. The
//! grandchild inherits only the probe's small high-water mark, reported as `floor_kb`: a peak
//! above it is the grandchild's own.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::BenchError;
use super::fixture::{Fixture, WorkDir};
use super::host::MockHost;
use super::run::{API_KEY, PROMPT, session_flags};
use super::scenario::{self, Plan};
use crate::sys::clock::monotonic_ns;

#[derive(Debug, Clone, Copy)]
pub struct StartSample {
    pub first_request: Duration,
    /// From the spawn to the exit: the whole session.
    pub wall: Duration,
    pub(crate) peak_rss_kb: u64,
    pub(crate) floor_kb: u64,
}

/// What the probe prints, one JSON line.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ProbeReport {
    /// CLOCK_MONOTONIC just before the spawn, comparable across processes.
    pub(crate) spawned_ns: u64,
    /// CLOCK_MONOTONIC just after the child was reaped.
    pub(crate) exited_ns: u64,
    pub(crate) max_rss_kb: u64,
    pub(crate) floor_kb: u64,
    /// The exit code, or minus the signal that ended it.
    pub exit_code: i32,
}

/// `ouro bench --probe -- <flags>` in `dir`, with a private `home`, against the API at `url`.
pub(crate) fn probe_command(
    dir: &Path,
    home: &Path,
    url: &str,
    flags: &[String],
) -> Result<Command, BenchError> {
    let exe = std::env::current_exe()
        .map_err(|e| BenchError::io("could not find the ouro executable", e))?;
    let mut command = Command::new(exe);
    command
        .args(["bench", "--probe", "--"])
        .args(flags)
        .current_dir(dir)
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("OURO_HOME", home)
        .env_remove("ANTHROPIC_MODEL")
        .env_remove("OURO_LOG")
        .env_remove("OURO_CHECKPOINTS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(command)
}

/// The probe's report from its output; an `ouro` that failed makes the measurement invalid.
pub(crate) fn probe_report(output: &std::process::Output) -> Result<ProbeReport, BenchError> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: ProbeReport = serde_json::from_slice(&output.stdout).map_err(|_| {
        BenchError::Failed(format!(
            "the print-mode probe did not report (exit status {}): {}",
            output.status,
            stderr.trim()
        ))
    })?;
    if report.exit_code != 0 {
        return Err(BenchError::Invalid(format!(
            "`ouro -p` exited with code {}: {}",
            report.exit_code,
            stderr.trim()
        )));
    }
    Ok(report)
}

/// Where a measured session runs: the first session in a new project, or one in a project
/// ouro has answered in before (its snapshots and stat cache are there, as for a user's second
/// question).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Project {
    New,
    Known,
}

/// Runs `ouro -p` once through the probe on the scenario of `plan`, with checkpoints on or
/// off, in a generated project; a known one has had a one-answer session (not timed) first.
pub(crate) async fn measure(
    host: &MockHost,
    plan: &Plan,
    files: usize,
    project: Project,
    checkpoints: bool,
) -> Result<StartSample, BenchError> {
    let place = Place::new(files, plan.seed)?;
    if project == Project::Known {
        measure_in(host, &plan.hello(), &place, checkpoints).await?;
    }
    measure_in(host, plan, &place, checkpoints).await
}

/// A generated project and a private OURO_HOME for it.
pub(crate) struct Place {
    dir: WorkDir,
    home: WorkDir,
    fixture: Fixture,
}

impl Place {
    pub(crate) fn new(files: usize, seed: u64) -> Result<Place, BenchError> {
        let dir = WorkDir::new("print")
            .map_err(|e| BenchError::io("could not create the fixture directory", e))?;
        let home = WorkDir::new("home")
            .map_err(|e| BenchError::io("could not create a private OURO_HOME", e))?;
        let fixture = Fixture::generate(dir.path(), files, seed)
            .map_err(|e| BenchError::io("could not write the fixture tree", e))?;
        // A user's files were not all written a moment ago: a snapshot does not trust the stat
        // of a file changed within the last 100 ms (it may change again within the same clock
        // tick) and reads it again the next time, which a project ouro knows would not need.
        std::thread::sleep(Duration::from_millis(150));
        Ok(Place { dir, home, fixture })
    }
}

/// [`measure`] in `place`, which earlier runs may have used (a project ouro knows: its
/// checkpoints and sessions are there already, as for a user's second question).
pub(crate) async fn measure_in(
    host: &MockHost,
    plan: &Plan,
    place: &Place,
    checkpoints: bool,
) -> Result<StartSample, BenchError> {
    let (dir, home, fixture) = (&place.dir, &place.home, &place.fixture);
    let server = host
        .serve(scenario::generate(plan, fixture).scenario)
        .await?;
    let mut flags = vec!["-p".to_string(), PROMPT.to_string()];
    flags.extend(session_flags());
    let mut command = probe_command(dir.path(), home.path(), &server.url(), &flags)?;
    if !checkpoints {
        command.env("OURO_CHECKPOINTS", "0");
    }
    let output = tokio::task::spawn_blocking(move || command.output()).await;
    let first_seen = server.first_request_ns();
    host.stop(server).await;
    let output = output
        .map_err(|e| BenchError::Failed(format!("waiting for the probe failed: {e}")))?
        .map_err(|e| BenchError::io("could not run `ouro bench --probe`", e))?;
    let report = probe_report(&output)?;
    let first_seen = first_seen.ok_or_else(|| {
        BenchError::Invalid("the mock API never received a request from `ouro -p`".into())
    })?;
    Ok(StartSample {
        first_request: Duration::from_nanos(first_seen.saturating_sub(report.spawned_ns)),
        wall: Duration::from_nanos(report.exited_ns.saturating_sub(report.spawned_ns)),
        peak_rss_kb: report.max_rss_kb,
        floor_kb: report.floor_kb,
    })
}

/// The probe's side (`ouro bench --probe -- <flags>`): run `ouro <flags>` and print a
/// [`ProbeReport`] line. Returns whether the child succeeded.
pub fn probe(flags: &[String]) -> Result<bool, BenchError> {
    let exe = std::env::current_exe()
        .map_err(|e| BenchError::io("could not find the ouro executable", e))?;
    let floor_kb = own_high_water_kb()?;
    let spawned_ns = monotonic_ns();
    let child = Command::new(exe)
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| BenchError::io("could not start `ouro -p`", e))?;
    let (exit_code, max_rss_kb) = reap(child.id())?;
    let report = ProbeReport {
        spawned_ns,
        exited_ns: monotonic_ns(),
        max_rss_kb,
        floor_kb,
        exit_code,
    };
    let line = serde_json::to_string(&report)
        .map_err(|e| BenchError::Failed(format!("could not encode the probe report: {e}")))?;
    println!("{line}");
    Ok(exit_code == 0)
}

/// Waits for `pid` with `wait4`, which also returns its resource usage (`std` cannot).
fn reap(pid: u32) -> Result<(i32, u64), BenchError> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| BenchError::Failed(format!("process id {pid} is out of range")))?;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; all-zero is a valid value that wait4 overwrites.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers are to live, writable locals of the right types.
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if reaped == pid {
            break;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(BenchError::io("waiting for `ouro -p` failed", error));
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    // Linux reports ru_maxrss in kilobytes.
    Ok((code, u64::try_from(usage.ru_maxrss).unwrap_or(0)))
}

/// This process's own resident high-water mark (`VmHWM`), which unlike `ru_maxrss` is not
/// inherited from the parent.
fn own_high_water_kb() -> Result<u64, BenchError> {
    let mut status = String::new();
    std::fs::File::open("/proc/self/status")
        .and_then(|mut f| f.read_to_string(&mut status))
        .map_err(|e| BenchError::io("could not read /proc/self/status", e))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| BenchError::Failed("/proc/self/status has no VmHWM line".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reap_reports_exit_codes_and_memory() {
        let pid = Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .unwrap()
            .id();
        let (code, rss) = reap(pid).unwrap();
        assert_eq!(code, 3);
        assert!(rss > 0);
    }

    #[test]
    fn high_water_mark_is_read() {
        assert!(own_high_water_kb().unwrap() > 100);
    }
}
