//! The local daemon's side of a zone: one stream to the zone's daemon (ssh running `ouro daemon
//! bridge` over the zone's master connection, the handshake done here), and the relay that
//! carries a client's request and every frame after it both ways, unchanged — so `ask`, `act`,
//! `watch`, `talk` and their permission questions work as they do on one machine.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use super::super::conn::Conn;
use super::super::frame::{Frame, Header, PROTOCOL};
use super::super::{DaemonError, Paths};
use super::{Zone, ssh};

/// How long the far daemon may take to answer the hello (an ssh login, and a daemon started
/// on demand, included).
const HANDSHAKE: Duration = Duration::from_secs(45);

/// A stream to a zone's daemon.
pub(in crate::daemon) struct Remote {
    pub conn: Conn,
    ssh: tokio::process::Child,
    /// ssh's last words on stderr, for a sentence when the link drops.
    reason: tokio::sync::watch::Receiver<String>,
}

impl Remote {
    /// Why the link ended, as ssh put it (or a plain sentence when it said nothing).
    pub(in crate::daemon) fn reason(&self) -> String {
        let said = self.reason.borrow().clone();
        if said.is_empty() {
            "the ssh connection closed".into()
        } else {
            said
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        let _ = self.ssh.start_kill();
    }
}

/// Connects to the daemon of `zone` and says hello.
pub(in crate::daemon) async fn connect(paths: &Paths, zone: &Zone) -> Result<Remote, DaemonError> {
    let mut cmd = ssh::command(
        paths,
        zone,
        &format!("{} daemon bridge", zone.remote_ouro()),
    )?;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| {
        DaemonError::Client(format!(
            "could not run ssh for the zone {} ({e}); zones use your own OpenSSH client",
            zone.name
        ))
    })?;
    let (Some(stdout), Some(stdin), Some(stderr)) =
        (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(DaemonError::Client("ssh gave no pipes".into()));
    };
    let (said, reason) = tokio::sync::watch::channel(String::new());
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let line = line.trim().to_string();
            if !line.is_empty() {
                let _ = said.send(line);
            }
        }
    });
    let mut remote = Remote {
        conn: Conn::over(stdout, stdin),
        ssh: child,
        reason,
    };
    let hello = Header::Hello {
        protocol: PROTOCOL,
        version: env!("CARGO_PKG_VERSION").into(),
    };
    let unreachable = |remote: &Remote| {
        DaemonError::Client(format!(
            "the zone {} cannot be reached: {}",
            zone.name,
            remote.reason()
        ))
    };
    if !remote.conn.send(hello).await {
        return Err(unreachable(&remote));
    }
    match tokio::time::timeout(HANDSHAKE, remote.conn.next()).await {
        Ok(Some(Frame {
            header: Header::Welcome { protocol, .. },
            ..
        })) if protocol == PROTOCOL => Ok(remote),
        Ok(Some(Frame {
            header: Header::Welcome {
                protocol, version, ..
            },
            ..
        })) => Err(DaemonError::Refused(format!(
            "the zone {} runs ouro {version} (daemon protocol {protocol}) and this is ouro {} (protocol {PROTOCOL}): {}",
            zone.name,
            env!("CARGO_PKG_VERSION"),
            if protocol < PROTOCOL {
                format!("upgrade the zone's with `ouro zone install {}`", zone.name)
            } else {
                "upgrade this ouro".into()
            }
        ))),
        Ok(Some(Frame {
            header: Header::Refused { reason },
            ..
        })) => Err(DaemonError::Refused(reason)),
        Ok(_) => {
            // The bridge's stderr may still be on its way.
            tokio::time::sleep(Duration::from_millis(100)).await;
            Err(unreachable(&remote))
        }
        Err(_) => Err(DaemonError::Client(format!(
            "the zone {} did not answer within {} s",
            zone.name,
            HANDSHAKE.as_secs()
        ))),
    }
}

/// Sends `request` to the zone and one answer back (`Error` frames become errors).
pub(in crate::daemon) async fn request(
    remote: &mut Remote,
    request: Header,
) -> Result<Header, DaemonError> {
    if !remote.conn.send(request).await {
        return Err(DaemonError::Client(remote.reason()));
    }
    match remote.conn.next().await {
        Some(Frame {
            header: Header::Error { message },
            ..
        }) => Err(DaemonError::Remote(message)),
        Some(frame) => Ok(frame.header),
        None => Err(DaemonError::Client(format!(
            "the link to the zone dropped: {}",
            remote.reason()
        ))),
    }
}

/// Carries `request` to the zone and every frame after it both ways until either side ends;
/// the last frame the zone sent, if any. A link that drops before the zone's answer is told to
/// the client as an error saying so (the far brain goes on with its turn).
pub(in crate::daemon) async fn relay(
    mut remote: Remote,
    zone: &str,
    request: Frame,
    client: &mut Conn,
) -> Option<Header> {
    let mut last: Option<Header> = None;
    if !remote.conn.send(request).await {
        client
            .send(Header::Error {
                message: format!("the link to the zone {zone} dropped: {}", remote.reason()),
            })
            .await;
        return None;
    }
    loop {
        tokio::select! {
            from_client = client.next() => match from_client {
                Some(frame) => {
                    if !remote.conn.send(frame).await {
                        break;
                    }
                }
                // The client left (a detach, a closed terminal): so does this stream.
                None => break,
            },
            from_zone = remote.conn.next() => match from_zone {
                Some(frame) => {
                    last = Some(frame.header.clone());
                    if !client.send(frame).await {
                        break;
                    }
                }
                None => {
                    if !last.as_ref().is_some_and(is_final) {
                        client
                            .send(Header::Error {
                                message: format!(
                                    "the link to the zone {zone} dropped: {}; the clone goes on there, and `ouro watch` or the next `ouro ask` picks it up",
                                    remote.reason()
                                ),
                            })
                            .await;
                    }
                    break;
                }
            },
        }
    }
    last
}

/// A frame after which a request is over.
fn is_final(header: &Header) -> bool {
    matches!(
        header,
        Header::TurnEnd { .. }
            | Header::TalkEnd { .. }
            | Header::Ok { .. }
            | Header::Error { .. }
            | Header::Clones { .. }
            | Header::AgentResult { .. }
    )
}
