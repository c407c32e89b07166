//! `--relay`: what the daemon's byte relay costs a talk. A private daemon runs a clone whose
//! "brain" is a shell loop in a PTY; the bench is the talk client, speaking the daemon's frames.
//! Keystroke round trip: one byte in, its echo (the PTY's own) back, through the daemon and
//! straight through a PTY of the bench's own, so the difference is the relay. Throughput: the
//! brain prints a large file, [`keys::DUMPS`] times on each side in turns. Memory: the daemon's
//! RSS with 10 idle clones. `--zone` (zone.rs) does the same through a zone, against a plain
//! `ssh -t`.

mod keys;
mod zone;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use portable_pty::CommandBuilder;
use serde::Serialize;

use super::BenchError;
use super::fixture::WorkDir;
use super::measure::{percentile, status_mb};
use crate::daemon::client::Client;
use crate::daemon::frame::Header;
use crate::daemon::{DaemonError, Paths};

pub(crate) use zone::{
    OVERHEAD_P99_LIMIT_MS as ZONE_OVERHEAD_P99_LIMIT_MS, ZoneRelayCost, measure as measure_zone,
};

pub(crate) const IDLE_CLONES: usize = 10;
const DUMP_MB: usize = 16;
const LINE: &str = "the quick brown fox jumps over the lazy dog 0123456789 ABCDEFGHIJKLMNOPQRSTUV";
const SLUG: &str = "claude@anthropic/claude/sonnet";

/// Echoes what is typed (the terminal does) and prints the file on `dump`.
const BRAIN: &str = "#!/bin/sh\nwhile IFS= read -r line; do\n  case \"$line\" in\n    dump) cat \"$RELAY_FILE\"; echo END-OF-DUMP ;;\n  esac\ndone\n";

#[derive(Debug, Clone, Serialize)]
pub struct RelayCost {
    pub(crate) keystrokes: usize,
    pub(crate) relay_p50_ms: f64,
    pub(crate) relay_p99_ms: f64,
    pub(crate) direct_p50_ms: f64,
    pub(crate) direct_p99_ms: f64,
    /// Relay p99 minus direct p99.
    pub(crate) overhead_p99_ms: f64,
    pub(crate) relay_mb_per_sec: f64,
    pub(crate) direct_mb_per_sec: f64,
    pub(crate) daemon_rss_mb: f64,
}

fn failed(what: &str) -> impl Fn(DaemonError) -> BenchError + '_ {
    move |e| BenchError::Failed(format!("{what}: {e}"))
}

fn p(values: &[f64], q: f64) -> f64 {
    percentile(values, q).unwrap_or(0.0)
}

pub(crate) async fn measure() -> Result<RelayCost, BenchError> {
    let dir =
        WorkDir::new("relay").map_err(|e| BenchError::io("could not create a work dir", e))?;
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project)
        .map_err(|e| BenchError::io("could not create a work dir", e))?;
    let brain = dir.path().join("brain.sh");
    let dump = dir.path().join("dump.txt");
    write_fixtures(&brain, &dump)?;

    let daemon = Daemon::start(
        dir.path(),
        &[("OURO_CLAUDE_BIN", &brain), ("RELAY_FILE", &dump)],
    )
    .await?;
    daemon.new_clone("relay", &project, None).await?;
    for i in 0..IDLE_CLONES {
        daemon
            .new_clone(&format!("idle-{i}"), &project, None)
            .await?;
    }
    let daemon_rss_mb = daemon.child.id().map_or(0.0, |pid| status_mb(pid, "VmRSS"));
    let mut cmd = CommandBuilder::new(&brain);
    cmd.env("RELAY_FILE", &dump);
    let compared = async {
        let talk = keys::Talk::open(&daemon.paths, "relay").await?;
        keys::compare(talk, keys::Pty::open(cmd, None).await?).await
    }
    .await;
    daemon.stop().await;
    let keys::Compared {
        near: (relay, relay_mb_per_sec),
        far: (direct, direct_mb_per_sec),
    } = compared?;
    Ok(RelayCost {
        keystrokes: keys::KEYSTROKES,
        relay_p50_ms: p(&relay, 50.0),
        relay_p99_ms: p(&relay, 99.0),
        direct_p50_ms: p(&direct, 50.0),
        direct_p99_ms: p(&direct, 99.0),
        overhead_p99_ms: p(&relay, 99.0) - p(&direct, 99.0),
        relay_mb_per_sec,
        direct_mb_per_sec,
        daemon_rss_mb,
    })
}

fn write_fixtures(brain: &Path, dump: &Path) -> Result<(), BenchError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |e| BenchError::io("could not write the relay fixtures", e);
    std::fs::write(brain, BRAIN).map_err(io)?;
    std::fs::set_permissions(brain, std::fs::Permissions::from_mode(0o755)).map_err(io)?;
    let line = format!("{LINE}\n");
    let text = line.repeat(DUMP_MB * 1_000_000 / line.len());
    std::fs::write(dump, text).map_err(io)
}

/// A private daemon with its home in `dir`, its environment plus `env`.
struct Daemon {
    paths: Paths,
    child: tokio::process::Child,
}

impl Daemon {
    async fn start(dir: &Path, env: &[(&str, &Path)]) -> Result<Daemon, BenchError> {
        let home = dir.join("home");
        std::fs::create_dir_all(&home)
            .map_err(|e| BenchError::io("could not create a work dir", e))?;
        let exe = std::env::current_exe()
            .map_err(|e| BenchError::io("could not find the ouro executable", e))?;
        let mut cmd = tokio::process::Command::new(exe);
        cmd.args(["daemon", "run"])
            .current_dir(dir)
            .env("OURO_HOME", &home)
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("OURO_LOG")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        for (key, value) in env {
            cmd.env(key, value);
        }
        let child = cmd
            .spawn()
            .map_err(|e| BenchError::io("could not start the daemon", e))?;
        let paths = Paths::for_home(home, None);
        let started = Instant::now();
        loop {
            match Client::connect(&paths, false).await {
                Ok(_) => return Ok(Daemon { paths, child }),
                Err(_) if started.elapsed() < Duration::from_secs(15) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => return Err(failed("the daemon did not start")(e)),
            }
        }
    }

    async fn new_clone(
        &self,
        name: &str,
        dir: &Path,
        zone: Option<&str>,
    ) -> Result<(), BenchError> {
        let mut client = Client::connect(&self.paths, false)
            .await
            .map_err(failed("could not reach the daemon"))?;
        client
            .request(Header::CloneNew {
                name: name.into(),
                brain: SLUG.into(),
                dir: PathBuf::from(dir),
                permission_mode: None,
                pass_env: Vec::new(),
                zone: zone.map(str::to_string),
                env: Default::default(),
            })
            .await
            .map_err(failed("could not make a clone"))?;
        Ok(())
    }

    async fn stop(mut self) {
        if let Ok(mut client) = Client::connect(&self.paths, false).await {
            let _ = client.request(Header::Stop).await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        let _ = self.child.kill().await;
    }
}
