//! `--relay`: what the daemon's byte relay costs a talk. A private daemon runs a clone whose
//! "brain" is a shell loop in a PTY; the bench is the talk client, speaking the daemon's frames.
//! Keystroke round trip: one byte in, its echo (the PTY's own) back, through the daemon and
//! straight through a PTY of the bench's own, so the difference is the relay. Throughput: the
//! brain prints a large file. Memory: the daemon's RSS with 10 idle clones.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde::Serialize;

use super::BenchError;
use super::fixture::WorkDir;
use super::measure::{ms, percentile, status_mb};
use crate::daemon::client::Client;
use crate::daemon::frame::{Frame, Header};
use crate::daemon::{DaemonError, Paths};

const KEYSTROKES: usize = 300;
const DUMP_MB: usize = 16;
pub(crate) const IDLE_CLONES: usize = 10;
const END: &str = "END-OF-DUMP";

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

pub(crate) async fn measure() -> Result<RelayCost, BenchError> {
    let dir =
        WorkDir::new("relay").map_err(|e| BenchError::io("could not create a work dir", e))?;
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    for d in [&home, &project] {
        std::fs::create_dir_all(d).map_err(|e| BenchError::io("could not create a work dir", e))?;
    }
    let brain = dir.path().join("brain.sh");
    let dump = dir.path().join("dump.txt");
    write_fixtures(&brain, &dump)?;

    let exe = std::env::current_exe()
        .map_err(|e| BenchError::io("could not find the ouro executable", e))?;
    let mut daemon = tokio::process::Command::new(exe)
        .args(["daemon", "run"])
        .current_dir(&project)
        .env("OURO_HOME", &home)
        .env("OURO_CLAUDE_BIN", &brain)
        .env("RELAY_FILE", &dump)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("OURO_LOG")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| BenchError::io("could not start the daemon", e))?;
    let paths = Paths::for_home(home.clone(), None);
    let started = Instant::now();
    let mut admin = loop {
        match Client::connect(&paths, false).await {
            Ok(client) => break client,
            Err(_) if started.elapsed() < Duration::from_secs(15) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => return Err(failed("the daemon did not start")(e)),
        }
    };
    let slug = "claude@anthropic/claude/sonnet";
    admin
        .request(Header::CloneNew {
            name: "relay".into(),
            brain: slug.into(),
            dir: project.clone(),
            permission_mode: None,
            pass_env: Vec::new(),
            zone: None,
            env: Default::default(),
        })
        .await
        .map_err(failed("could not make the clone"))?;
    for i in 0..IDLE_CLONES {
        let mut client = Client::connect(&paths, false)
            .await
            .map_err(failed("could not reach the daemon"))?;
        client
            .request(Header::CloneNew {
                name: format!("idle-{i}"),
                brain: slug.into(),
                dir: project.clone(),
                permission_mode: None,
                pass_env: Vec::new(),
                zone: None,
                env: Default::default(),
            })
            .await
            .map_err(failed("could not make an idle clone"))?;
    }
    let daemon_rss_mb = daemon.id().map_or(0.0, |pid| status_mb(pid, "VmRSS"));

    let mut talk = Client::connect(&paths, false)
        .await
        .map_err(failed("could not reach the daemon"))?;
    talk.send(Header::Talk {
        name: "relay".into(),
        cols: 200,
        rows: 50,
    })
    .await
    .map_err(failed("could not start a talk"))?;
    loop {
        match talk
            .next()
            .await
            .map_err(failed("the talk did not start"))?
            .header
        {
            Header::TalkReady { .. } => break,
            Header::Error { message } => return Err(BenchError::Failed(message)),
            _ => {}
        }
    }
    let mut relay = Vec::with_capacity(KEYSTROKES);
    for i in 0..KEYSTROKES {
        let key = [b'a' + (i % 26) as u8];
        let sent = Instant::now();
        talk.send(Frame::with_payload(Header::Input, key.to_vec()))
            .await
            .map_err(failed("a keystroke was not sent"))?;
        wait_output(&mut talk, |seen| seen.contains(&key[0])).await?;
        relay.push(ms(sent.elapsed()));
    }
    talk.send(Frame::with_payload(Header::Input, b"\rdump\r".to_vec()))
        .await
        .map_err(failed("the dump was not asked for"))?;
    let dump_started = Instant::now();
    let bytes = wait_output(&mut talk, ends_with_end).await?;
    let relay_mb_per_sec = bytes as f64 / 1e6 / dump_started.elapsed().as_secs_f64();
    let _ = talk.send(Header::Detach).await;

    let (direct, direct_mb_per_sec) = tokio::task::spawn_blocking(move || direct(&brain, &dump))
        .await
        .map_err(|e| BenchError::Failed(format!("the direct PTY run failed: {e}")))??;
    if let Ok(mut client) = Client::connect(&paths, false).await {
        let _ = client.request(Header::Stop).await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), daemon.wait()).await;
    let _ = daemon.kill().await;

    let p = |v: &[f64], q| percentile(v, q).unwrap_or(0.0);
    Ok(RelayCost {
        keystrokes: KEYSTROKES,
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
    let line = "the quick brown fox jumps over the lazy dog 0123456789 ABCDEFGHIJKLMNOPQRSTUV\n";
    let text = line.repeat(DUMP_MB * 1_000_000 / line.len());
    std::fs::write(dump, text).map_err(io)
}

fn ends_with_end(seen: &[u8]) -> bool {
    let tail = &seen[seen.len().saturating_sub(64)..];
    String::from_utf8_lossy(tail).contains(&format!("{END}\r\n"))
}

/// Reads output frames until `done` holds for what arrived; how many bytes that took.
async fn wait_output(talk: &mut Client, done: impl Fn(&[u8]) -> bool) -> Result<usize, BenchError> {
    let mut seen = Vec::new();
    let mut total = 0;
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(60), talk.next())
            .await
            .map_err(|_| BenchError::Failed("the relayed brain stopped answering".into()))?
            .map_err(failed("the talk broke"))?;
        match frame.header {
            Header::Output | Header::Screen => {
                total += frame.payload.len();
                seen.extend_from_slice(&frame.payload);
                if done(&seen) {
                    return Ok(total);
                }
                if seen.len() > 4096 {
                    seen.drain(..seen.len() - 128);
                }
            }
            Header::TalkEnd { .. } => {
                return Err(BenchError::Failed("the relayed brain exited".into()));
            }
            _ => {}
        }
    }
}

/// The same brain in a PTY of the bench's own: keystroke round trips, then the dump's rate.
fn direct(brain: &Path, dump: &Path) -> Result<(Vec<f64>, f64), BenchError> {
    let pty = |e: anyhow::Error| BenchError::Failed(format!("a direct PTY failed: {e:#}"));
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 50,
            cols: 200,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(pty)?;
    let mut cmd = CommandBuilder::new(brain);
    cmd.env("RELAY_FILE", dump);
    let mut child = pair.slave.spawn_command(cmd).map_err(pty)?;
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().map_err(pty)?;
    let mut writer = pair.master.take_writer().map_err(pty)?;
    let io = |e| BenchError::io("the direct PTY failed", e);
    let mut buf = vec![0u8; 65536];
    let mut times = Vec::with_capacity(KEYSTROKES);
    for i in 0..KEYSTROKES {
        let key = b'a' + (i % 26) as u8;
        let sent = Instant::now();
        writer.write_all(&[key]).map_err(io)?;
        loop {
            let n = reader.read(&mut buf).map_err(io)?;
            if n == 0 || buf[..n].contains(&key) {
                break;
            }
        }
        times.push(ms(sent.elapsed()));
    }
    writer.write_all(b"\rdump\r").map_err(io)?;
    let started = Instant::now();
    let mut seen = Vec::new();
    let mut total = 0usize;
    loop {
        let n = reader.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        total += n;
        seen.extend_from_slice(&buf[..n]);
        if ends_with_end(&seen) {
            break;
        }
        if seen.len() > 4096 {
            seen.drain(..seen.len() - 128);
        }
    }
    let rate = total as f64 / 1e6 / started.elapsed().as_secs_f64();
    let _ = child.kill();
    Ok((times, rate))
}
