//! A zone's daemon socket forwarded to a socket here through the zone's master connection
//! (OpenSSH's streamlocal forwarding, `ssh -O forward -L here.sock:there.sock`). A relayed
//! stream is then one channel of the master: no `ssh` process here and no `ouro daemon bridge`
//! there copy its bytes, two process hops fewer on every keystroke. A host that refuses
//! streamlocal forwarding (`AllowStreamLocalForwarding no`), or whose ouro cannot name its
//! socket, is reached through the bridge as before.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use tokio::net::UnixStream;

use super::super::{DaemonError, Paths};
use super::{Zone, ssh};

/// How each zone (its name, target and far ouro) was last reached.
static ROUTES: LazyLock<Mutex<HashMap<String, Route>>> = LazyLock::new(Mutex::default);

#[derive(Clone)]
enum Route {
    /// The far daemon's socket, forwarded to this one.
    Forwarded(PathBuf),
    /// Forwarding was set up and its stream still failed: the bridge it is.
    Bridge,
    /// Setting the forward up failed: the bridge until then (each attempt costs two ssh
    /// commands, and a reconnecting relay asks every few seconds).
    BridgeUntil(Instant),
}

/// How long a forward that could not be set up is not tried again.
const RETRY_SETUP: Duration = Duration::from_secs(60);

/// What [`stream`] found.
pub(super) enum Found {
    /// A stream to the far daemon; `fresh` when the forward was set up just now.
    Stream { stream: UnixStream, fresh: bool },
    /// No forward: go through the bridge.
    Bridge,
}

fn key(zone: &Zone) -> String {
    format!("{}\n{}\n{}", zone.name, zone.target, zone.remote_ouro())
}

/// A stream to the zone's daemon through a forwarded socket, setting the forward up when
/// there is none yet (which starts the far daemon if none runs).
pub(super) async fn stream(paths: &Paths, zone: &Zone) -> Found {
    let key = key(zone);
    let known = ROUTES.lock().ok().and_then(|r| r.get(&key).cloned());
    match known {
        Some(Route::Bridge) => return Found::Bridge,
        Some(Route::BridgeUntil(until)) if Instant::now() < until => return Found::Bridge,
        Some(Route::BridgeUntil(_)) => {}
        Some(Route::Forwarded(local)) => {
            if let Ok(stream) = UnixStream::connect(&local).await {
                return Found::Stream {
                    stream,
                    fresh: false,
                };
            }
        }
        None => {}
    }
    // None yet, or the master that carried it is gone (the link dropped): set it up anew.
    let Some(local) = set_up(paths, zone).await else {
        remember(&key, Route::BridgeUntil(Instant::now() + RETRY_SETUP));
        return Found::Bridge;
    };
    match UnixStream::connect(&local).await {
        Ok(stream) => {
            remember(&key, Route::Forwarded(local));
            Found::Stream {
                stream,
                fresh: true,
            }
        }
        Err(e) => {
            tracing::debug!(zone = %zone.name, error = %e, "the forwarded socket does not answer");
            remember(&key, Route::Bridge);
            Found::Bridge
        }
    }
}

/// Marks the zone's forward as not carrying streams (the far side closed a fresh one at once:
/// streamlocal forwarding refused there), so later streams go through the bridge.
pub(super) fn refused(zone: &Zone) {
    remember(&key(zone), Route::Bridge);
}

/// Forgets the zone's forward (its stream failed): the next stream sets it up again.
pub(super) fn forget(zone: &Zone) {
    if let Ok(mut routes) = ROUTES.lock() {
        routes.remove(&key(zone));
    }
}

fn remember(key: &str, route: Route) {
    if let Ok(mut routes) = ROUTES.lock() {
        routes.insert(key.to_string(), route);
    }
}

/// Asks the far ouro for its daemon's socket (starting the daemon), then forwards it; the
/// socket here, or `None` when either step failed (the bridge then says why, if the link is
/// down, or works where forwarding does not).
async fn set_up(paths: &Paths, zone: &Zone) -> Option<PathBuf> {
    let remote = match ssh::script(
        paths,
        zone,
        &format!("{} daemon socket", zone.remote_ouro()),
    )
    .await
    {
        Ok(out) => PathBuf::from(out.lines().last().unwrap_or("").trim()),
        Err(e) => {
            tracing::debug!(zone = %zone.name, error = %e, "the far ouro named no socket");
            return None;
        }
    };
    // `-L` splits its argument at ':'; such a path cannot be forwarded.
    if !remote.is_absolute() || remote.to_string_lossy().contains(':') {
        return None;
    }
    let local = local_socket(paths, zone, &remote).ok()?;
    // Left by a master that is gone (only this user can write the folder): nothing answers it.
    if local.exists() && std::os::unix::net::UnixStream::connect(&local).is_err() {
        let _ = std::fs::remove_file(&local);
    }
    match ssh::forward(paths, zone, &local, &remote).await {
        Ok(()) => Some(local),
        Err(e) => {
            tracing::debug!(zone = %zone.name, error = %e, "ssh did not forward the socket");
            None
        }
    }
}

/// The forwarded socket here: beside the zone's control socket, named by the zone and by a
/// digest of the rest of its key and of the far socket (a bench's scratch daemon, or a far
/// daemon started from another runtime folder, is another far socket).
fn local_socket(paths: &Paths, zone: &Zone, remote: &Path) -> Result<PathBuf, DaemonError> {
    let dir = paths.zone_sockets()?;
    let what = format!("{}\n{}", key(zone), remote.display());
    Ok(dir.join(format!(
        "{}.{}.fwd",
        ssh::short_digest(&zone.name),
        ssh::short_digest(&what)
    )))
}
