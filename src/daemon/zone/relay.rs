//! The local daemon's side of a zone: one stream to the zone's daemon (its socket forwarded
//! over the zone's master connection, or ssh running `ouro daemon bridge` where that cannot
//! be; the handshake done here), and the relay that
//! carries a client's request and every frame after it both ways, unchanged — so `ask`, `act`,
//! `watch`, `talk` and their permission questions work as they do on one machine.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use super::super::conn::Conn;
use super::super::frame::{Frame, Header, PROTOCOL};
use super::super::{DaemonError, Paths};
use super::{Zone, forward, ssh};

/// How long the far daemon may take to answer the hello (an ssh login, and a daemon started
/// on demand, included).
const HANDSHAKE: Duration = Duration::from_secs(45);
/// The same through a forwarded socket, where the login is done and the daemon runs: a
/// silence this long means the stream is not getting through.
const FORWARDED_HANDSHAKE: Duration = Duration::from_secs(10);

/// A stream to a zone's daemon.
pub(in crate::daemon) struct Remote {
    pub conn: Conn,
    /// The `ssh` carrying a bridged stream (none for a forwarded socket).
    ssh: Option<tokio::process::Child>,
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
        if let Some(ssh) = &mut self.ssh {
            let _ = ssh.start_kill();
        }
    }
}

/// Connects to the daemon of `zone` and says hello: through its forwarded socket where the
/// host allows that, else through `ouro daemon bridge`.
pub(in crate::daemon) async fn connect(paths: &Paths, zone: &Zone) -> Result<Remote, DaemonError> {
    if let forward::Found::Stream { stream, fresh } = forward::stream(paths, zone).await {
        let (read, write) = stream.into_split();
        let remote = Remote {
            conn: Conn::over(read, write),
            ssh: None,
            reason: tokio::sync::watch::channel(String::new()).1,
        };
        match hello(remote, zone, FORWARDED_HANDSHAKE).await {
            Ok(remote) => return Ok(remote),
            // A far ouro of another protocol says so the same through either way.
            Err(refused @ DaemonError::Refused(_)) => return Err(refused),
            Err(e) => {
                tracing::debug!(zone = %zone.name, error = %e, "the forwarded stream failed");
                if fresh {
                    forward::refused(zone);
                } else {
                    forward::forget(zone);
                }
            }
        }
    }
    bridged(paths, zone).await
}

/// A stream through ssh running `ouro daemon bridge` on the host.
async fn bridged(paths: &Paths, zone: &Zone) -> Result<Remote, DaemonError> {
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
    let remote = Remote {
        conn: Conn::over(stdout, stdin),
        ssh: Some(child),
        reason,
    };
    hello(remote, zone, HANDSHAKE).await
}

/// The handshake: hello, and the far daemon's welcome (of this protocol) within `limit`.
async fn hello(mut remote: Remote, zone: &Zone, limit: Duration) -> Result<Remote, DaemonError> {
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
    match tokio::time::timeout(limit, remote.conn.next()).await {
        Ok(Some(Frame {
            header: Header::Welcome { protocol, .. },
            ..
        })) if protocol == PROTOCOL => Ok(remote),
        Ok(Some(Frame {
            header: Header::Welcome {
                protocol, version, ..
            },
            ..
        })) => Err(DaemonError::Refused(super::mismatch(
            &zone.name, &version, protocol,
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
            limit.as_secs()
        ))),
    }
}

/// Sends `request` to the zone's daemon over a stream of its own and one answer back (`Error`
/// frames become errors).
pub(in crate::daemon) async fn request(
    paths: &Paths,
    zone: &Zone,
    request: Header,
) -> Result<Header, DaemonError> {
    let mut remote = connect(paths, zone).await?;
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

/// How long a relay whose link dropped keeps trying to reach the zone again.
const REATTACH_FOR: Duration = Duration::from_secs(120);
/// How often a reattached `ask` checks the far turn still runs (it may have ended unseen).
const STILL_BUSY: Duration = Duration::from_secs(2);

/// Carries `request` to the zone and every frame after it both ways until either side ends;
/// the last frame the zone sent, if any. When the link drops before the zone's answer, an
/// `ask`/`act` or `watch` reconnects with backoff and follows the clone again (the far brain
/// went on meanwhile) to the turn's end; any other request is told the link dropped.
pub(in crate::daemon) async fn relay(
    paths: &Paths,
    mut remote: Remote,
    zone: &Zone,
    request: Frame,
    client: &mut Conn,
) -> Option<Header> {
    let mut last: Option<Header> = None;
    let mut seen = Seen::default();
    let follow = match &request.header {
        Header::Dispatch { name, .. } => Some((name.clone(), false)),
        Header::Watch { name, .. } => Some((name.clone(), true)),
        _ => None,
    };
    if !remote.conn.send(request).await {
        client
            .send(Header::Error {
                message: format!(
                    "the link to the zone {} dropped: {}",
                    zone.name,
                    remote.reason()
                ),
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
                    seen.note(&frame.header);
                    last = Some(frame.header.clone());
                    if !client.send(frame).await {
                        break;
                    }
                }
                None => {
                    if last.as_ref().is_some_and(is_final) {
                        break;
                    }
                    let reason = remote.reason();
                    if let Some((name, watching)) = &follow {
                        let gap = Gap { name, watching: *watching, reason: &reason, seen };
                        return reattach(paths, zone, gap, client).await;
                    }
                    client
                        .send(Header::Error {
                            message: format!(
                                "the link to the zone {} dropped: {reason}; the clone goes on there, and `ouro watch` or the next `ouro ask` picks it up",
                                zone.name
                            ),
                        })
                        .await;
                    break;
                }
            },
        }
    }
    last
}

/// What a relay passed on: the last event, by its number in the far clone's log, and whether
/// its question is still waiting behind another turn.
#[derive(Default, Clone, Copy)]
struct Seen {
    last: Option<u64>,
    queued: bool,
}

impl Seen {
    fn note(&mut self, header: &Header) {
        match header {
            Header::Event { seq: Some(seq), .. } => {
                self.last = Some(*seq);
                self.queued = false;
            }
            // Logged right after the turn's last event, under the next number.
            Header::TurnEnd { .. } => self.last = self.last.map(|seq| seq + 1),
            Header::Queued { .. } => self.queued = true,
            Header::Notice { .. } => self.queued = false,
            _ => {}
        }
    }
}

/// A dropped link's relay: which clone it follows, as an `ask` or a `watch`, why the link
/// dropped, and the last event its client got.
struct Gap<'a> {
    name: &'a str,
    watching: bool,
    reason: &'a str,
    seen: Seen,
}

/// After a dropped link: reconnects with backoff and follows clone `name` as a watcher until
/// its turn ends (for an `ask`, whose client then gets the turn's end as usual), or for as
/// long as the client stays (a `watch`). The events of the gap come first, so the client
/// misses none.
async fn reattach(paths: &Paths, zone: &Zone, gap: Gap<'_>, client: &mut Conn) -> Option<Header> {
    let Gap {
        name,
        watching,
        reason,
        mut seen,
    } = gap;
    let gave_up = |why: String| Header::Error {
        message: format!(
            "the link to the zone {} dropped ({reason}) and could not be made again: {why}; the clone goes on there, and the next `ouro ask {name}` picks it up",
            zone.name
        ),
    };
    // The far daemon lets go of a question still waiting for its turn when its asker goes:
    // following the clone would pass another turn's answer off as this one's.
    if !watching && seen.queued {
        let error = Header::Error {
            message: format!(
                "the link to the zone {} dropped ({reason}) while your question waited behind another turn of {name}; the zone lets go of a waiting question when its asker leaves, so it was most likely not asked: `ouro watch {name}` shows what the clone does, then ask again",
                zone.name
            ),
        };
        client.send(error.clone()).await;
        return Some(error);
    }
    let deadline = tokio::time::Instant::now() + REATTACH_FOR;
    let mut delay = Duration::from_millis(250);
    loop {
        let notice = Header::Notice {
            message: format!(
                "the link to the zone {} dropped ({reason}); reconnecting…",
                zone.name
            ),
        };
        if !client.send(notice).await {
            return None;
        }
        let mut remote = loop {
            tokio::time::sleep(delay).await;
            match connect(paths, zone).await {
                Ok(remote) => break remote,
                Err(e) if tokio::time::Instant::now() < deadline => {
                    delay = (delay * 2).min(Duration::from_secs(4));
                    tracing::debug!(zone = %zone.name, error = %e, "reconnecting");
                }
                Err(e) => {
                    let error = gave_up(e.to_string());
                    client.send(error.clone()).await;
                    return Some(error);
                }
            }
        };
        if !remote
            .conn
            .send(Header::Watch {
                name: name.to_string(),
                replay: true,
                since: seen.last,
            })
            .await
        {
            continue;
        }
        let mut check = tokio::time::interval(STILL_BUSY);
        check.tick().await;
        let mut idle = false;
        loop {
            tokio::select! {
                from_zone = remote.conn.next() => match from_zone {
                    // The watcher's greeting and screen are for terminals, not an `ask`: it is
                    // told it follows its turn again.
                    Some(Frame { header: Header::Ok { .. }, .. }) if !watching => {
                        let back = Header::Notice {
                            message: format!("reconnected to the zone {}; following the turn of {name}", zone.name),
                        };
                        if !client.send(back).await {
                            return None;
                        }
                    }
                    Some(Frame { header: Header::Screen, .. }) if !watching => {}
                    Some(frame) => {
                        seen.note(&frame.header);
                        let header = frame.header.clone();
                        if !client.send(frame).await {
                            return None;
                        }
                        if !watching && matches!(header, Header::TurnEnd { .. } | Header::Error { .. }) {
                            return Some(header);
                        }
                    }
                    // Dropped again: back to reconnecting.
                    None => break,
                },
                from_client = client.next() => match from_client {
                    Some(frame) => {
                        remote.conn.send(frame).await;
                    }
                    None => return None,
                },
                // Idle at two checks in a row: the turn's end is not coming (a far daemon
                // that restarted keeps no log). One idle check alone may be the moment between
                // the turn's end and its frame.
                _ = check.tick(), if !watching => {
                    if busy(paths, zone, name).await {
                        idle = false;
                    } else if std::mem::replace(&mut idle, true) {
                        return Some(ended_unseen(zone, name, client).await);
                    }
                }
            }
        }
    }
}

/// Whether clone `name` is in a turn on the zone (`true` when that cannot be told).
async fn busy(paths: &Paths, zone: &Zone, name: &str) -> bool {
    match request(paths, zone, Header::CloneList).await {
        Ok(Header::Clones { clones }) => clones.iter().any(|c| c.name == name && c.busy),
        _ => true,
    }
}

/// Tells an `ask` its turn ended while the link was down (its answer is in the conversation).
async fn ended_unseen(zone: &Zone, name: &str, client: &mut Conn) -> Header {
    let end = Header::Error {
        message: format!(
            "the link to the zone {} dropped and the turn ended before it came back; its answer is in {name}'s conversation, and the next `ouro ask {name}` continues it",
            zone.name
        ),
    };
    client.send(end.clone()).await;
    end
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
