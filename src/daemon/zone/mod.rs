//! Zones: hosts reached with the user's own OpenSSH (`ssh` on `PATH`, their `~/.ssh/config`,
//! agent, known_hosts and jump hosts; no SSH code or keys of ouro's own). A zone is a name, an
//! ssh target, and where `ouro` is on that host. `ouro zone add|list|check|install|rm` keep
//! them in `zones.json` in ouro's home; every connection to a zone goes through one multiplexed
//! ssh connection (OpenSSH's ControlMaster), which forwards the far daemon's socket to one
//! here (or, where the host refuses that, runs `ouro daemon bridge` to carry the frames).

pub mod bridge;
mod forward;
mod registry;
pub(in crate::daemon) mod relay;
pub mod scratch;
mod ssh;

pub use registry::{Zone, Zones};
pub use ssh::Target;

use super::frame::PROTOCOL;
use super::{DaemonError, Paths};

/// What `ouro daemon probe` prints, one JSON line: how a zone check learns whether the ouro
/// on a host can talk to this one.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Probe {
    pub protocol: u32,
    pub version: String,
    pub os: String,
    pub arch: String,
}

impl Probe {
    pub fn here() -> Probe {
        Probe {
            protocol: PROTOCOL,
            version: env!("CARGO_PKG_VERSION").into(),
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
        }
    }
}

/// `ouro zone add`: checks the host answers (unless `no_check`), then records the zone.
pub async fn add(
    paths: &Paths,
    name: &str,
    target: &str,
    no_check: bool,
) -> Result<String, DaemonError> {
    super::store::check_name(name)?;
    let parsed = Target::parse(target).map_err(DaemonError::Client)?;
    let mut zones = Zones::load(&paths.home)?;
    if zones.get(name).is_some() {
        return Err(DaemonError::Client(format!(
            "a zone named `{name}` exists already; `ouro zone rm {name}` first, or pick another name"
        )));
    }
    let zone = Zone {
        name: name.to_string(),
        target: parsed.to_string(),
        ouro: None,
    };
    let mut message = format!("added the zone {name} ({})", zone.target);
    if !no_check {
        match ssh::probe(paths, &zone).await {
            Ok(probe) => message.push_str(&format!("; {}", compatible(name, &probe)?)),
            Err(ssh::ProbeError::Unreachable(reason)) => {
                return Err(DaemonError::Client(format!(
                    "{target} cannot be reached: {reason}. Fix the host (or your ~/.ssh/config), or add it anyway with --no-check"
                )));
            }
            Err(ssh::ProbeError::NoOuro(_)) => message.push_str(&format!(
                "; ouro is not installed there: `ouro zone install {name}` copies this one"
            )),
        }
    }
    zones.insert(zone);
    zones.save(&paths.home)?;
    Ok(message)
}

/// `ouro zone list`: one line per zone.
pub fn list(paths: &Paths) -> Result<String, DaemonError> {
    let zones = Zones::load(&paths.home)?;
    if zones.all().is_empty() {
        return Ok("no zones; `ouro zone add NAME ssh://[user@]host[:port]` adds one\n".into());
    }
    let mut out = String::from("ZONE\tTARGET\tOURO\n");
    for zone in zones.all() {
        out.push_str(&format!(
            "{}\t{}\t{}\n",
            zone.name,
            zone.target,
            zone.ouro.as_deref().unwrap_or("ouro (on the login's PATH)")
        ));
    }
    Ok(out)
}

/// `ouro zone check`: `Ok` only when the host answers and a compatible ouro is there.
pub async fn check(paths: &Paths, name: &str) -> Result<String, DaemonError> {
    let zone = Zones::load(&paths.home)?.named(name)?;
    match ssh::probe(paths, &zone).await {
        Ok(probe) => compatible(name, &probe),
        Err(ssh::ProbeError::Unreachable(reason)) => Err(DaemonError::Client(format!(
            "the zone {name} ({}) cannot be reached: {reason}",
            zone.target
        ))),
        Err(ssh::ProbeError::NoOuro(reason)) => Err(DaemonError::Client(format!(
            "the zone {name} answers, but has no ouro at {} ({reason}); `ouro zone install {name}` copies this one",
            zone.remote_ouro()
        ))),
    }
}

/// `ouro zone install`: copies this binary to the host when the platforms match, and the zone
/// remembers where.
pub async fn install(paths: &Paths, name: &str) -> Result<String, DaemonError> {
    let mut zones = Zones::load(&paths.home)?;
    let mut zone = zones.named(name)?;
    let here = Probe::here();
    let (os, arch) = ssh::platform(paths, &zone).await?;
    if os != here.os || arch != here.arch {
        return Err(DaemonError::Client(format!(
            "the zone {name} is {os}/{arch} and this ouro is built for {}/{}: install an ouro built for that host there, then `ouro zone check {name}`",
            here.os, here.arch
        )));
    }
    let exe = std::env::current_exe().map_err(|source| DaemonError::Io {
        action: "find",
        path: "this ouro executable".into(),
        source,
    })?;
    let installed = ssh::copy_binary(paths, &zone, &exe).await?;
    zone.ouro = Some(installed.clone());
    zones.insert(zone);
    zones.save(&paths.home)?;
    let checked = check(paths, name).await?;
    Ok(format!(
        "installed ouro at {installed} on {name}; {checked}"
    ))
}

/// `ouro zone rm`.
pub fn remove(paths: &Paths, name: &str) -> Result<String, DaemonError> {
    let mut zones = Zones::load(&paths.home)?;
    zones.named(name)?;
    zones.remove(name);
    zones.save(&paths.home)?;
    ssh::close_master(paths, name);
    Ok(format!("removed the zone {name}"))
}

/// Whether the ouro a probe describes can talk to this one, as a sentence; an error saying
/// which side to upgrade when not.
fn compatible(name: &str, probe: &Probe) -> Result<String, DaemonError> {
    if probe.protocol == PROTOCOL {
        return Ok(format!(
            "ouro {} answers there ({}/{}, daemon protocol {})",
            probe.version, probe.os, probe.arch, probe.protocol
        ));
    }
    Err(DaemonError::Client(mismatch(
        name,
        &probe.version,
        probe.protocol,
    )))
}

/// What to tell a user whose zone `name` speaks another daemon protocol: which side to upgrade.
pub(super) fn mismatch(name: &str, version: &str, protocol: u32) -> String {
    let upgrade = if protocol < PROTOCOL {
        format!("upgrade the zone's: `ouro zone install {name}`")
    } else {
        "upgrade this ouro".to_string()
    };
    format!(
        "the zone {name} runs ouro {version} (daemon protocol {protocol}) and this is ouro {} (protocol {PROTOCOL}): {upgrade}",
        env!("CARGO_PKG_VERSION")
    )
}
