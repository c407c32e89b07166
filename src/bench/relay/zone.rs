//! `--relay --zone NAME`: the same keystrokes through a zone (this machine's daemon, the
//! zone's ssh stream, the daemon there, its PTY) beside a plain `ssh -t` to the same host
//! running the same brain, both over the zone's one master connection. The far side is a
//! scratch daemon in the host's temp dir, removed afterwards.

use portable_pty::CommandBuilder;
use serde::Serialize;

use super::super::BenchError;
use super::super::fixture::WorkDir;
use super::{BRAIN, DUMP_MB, Daemon, LINE, failed, keys, p};
use crate::daemon::Paths;
use crate::daemon::zone::scratch::Scratch;
use crate::text::shell_quote;

/// The goal: what a zone adds to a keystroke over plain ssh, at p99.
pub(crate) const OVERHEAD_P99_LIMIT_MS: f64 = 1.0;
const READY: &str = "OURO-BENCH-READY";

#[derive(Debug, Clone, Serialize)]
pub struct ZoneRelayCost {
    pub(crate) zone: String,
    pub(crate) keystrokes: usize,
    pub(crate) zone_p50_ms: f64,
    pub(crate) zone_p99_ms: f64,
    pub(crate) ssh_p50_ms: f64,
    pub(crate) ssh_p99_ms: f64,
    /// Zone p99 minus plain ssh p99.
    pub(crate) overhead_p99_ms: f64,
    pub(crate) zone_mb_per_sec: f64,
    pub(crate) ssh_mb_per_sec: f64,
}

pub(crate) async fn measure(name: &str) -> Result<ZoneRelayCost, BenchError> {
    let user = Paths::current().map_err(failed("no ouro home"))?;
    // A short folder name: the zone's ssh control socket lives in the daemon's home.
    let dir = WorkDir::new("zr").map_err(|e| BenchError::io("could not create a work dir", e))?;
    let paths = Paths::for_home(dir.path().join("home"), None);
    let bytes = DUMP_MB * 1_000_000;
    let scratch = Scratch::make(
        &user,
        &paths,
        name,
        &[("brain.sh", BRAIN)],
        &format!("yes {} | head -c {bytes} > dump.txt", shell_quote(LINE)),
        &[
            ("OURO_CLAUDE_BIN", "$d/brain.sh"),
            ("RELAY_FILE", "$d/dump.txt"),
        ],
    )
    .await
    .map_err(failed(&format!("could not prepare the zone {name}")))?;
    let measured = both(name, &scratch, dir.path()).await;
    scratch.remove().await;
    let keys::Compared {
        near: (zone, zone_mb_per_sec),
        far: (ssh, ssh_mb_per_sec),
    } = measured?;
    Ok(ZoneRelayCost {
        zone: name.to_string(),
        keystrokes: keys::KEYSTROKES,
        zone_p50_ms: p(&zone, 50.0),
        zone_p99_ms: p(&zone, 99.0),
        ssh_p50_ms: p(&ssh, 50.0),
        ssh_p99_ms: p(&ssh, 99.0),
        overhead_p99_ms: p(&zone, 99.0) - p(&ssh, 99.0),
        zone_mb_per_sec,
        ssh_mb_per_sec,
    })
}

async fn both(
    name: &str,
    scratch: &Scratch,
    dir: &std::path::Path,
) -> Result<keys::Compared, BenchError> {
    let daemon = Daemon::start(dir, &[]).await?;
    let project = std::path::PathBuf::from(format!("{}/project", scratch.dir));
    let compared = async {
        daemon.new_clone("relay", &project, Some(name)).await?;
        let talk = keys::Talk::open(&daemon.paths, "relay").await?;
        let pty = keys::Pty::open(plain_ssh(scratch)?, Some(READY)).await?;
        keys::compare(talk, pty).await
    }
    .await;
    daemon.stop().await;
    compared
}

/// `ssh -t` to the zone's host, over its master connection, running the same brain.
fn plain_ssh(scratch: &Scratch) -> Result<CommandBuilder, BenchError> {
    let d = shell_quote(&scratch.dir);
    let remote = format!("cd {d} && echo {READY} && RELAY_FILE=dump.txt exec ./brain.sh");
    let (program, args) = scratch
        .tty_argv(&remote)
        .map_err(failed("could not build the ssh command"))?;
    let mut cmd = CommandBuilder::new(program);
    cmd.args(args);
    if let Ok(cwd) = std::env::current_dir() {
        cmd.cwd(cwd);
    }
    Ok(cmd)
}
