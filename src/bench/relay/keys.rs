//! Keystroke round trips and output rate, through a daemon's talk or in a PTY of the bench's
//! own: one byte in, its echo back; then the brain's dump, timed to its end marker.

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use super::super::BenchError;
use super::super::measure::ms;
use super::failed;
use crate::daemon::Paths;
use crate::daemon::client::Client;
use crate::daemon::frame::{Frame, Header};

/// Enough that p99 is not the third-worst of a few hundred (one stall on a 2-core machine).
pub(crate) const KEYSTROKES: usize = 2000;
const END: &str = "END-OF-DUMP";

fn key(i: usize) -> u8 {
    b'a' + (i % 26) as u8
}

fn ends_with_end(seen: &[u8]) -> bool {
    let tail = &seen[seen.len().saturating_sub(64)..];
    String::from_utf8_lossy(tail).contains(&format!("{END}\r\n"))
}

/// A talk with the clone `name` of the daemon at `paths`: round trips (ms), then MB/s.
pub(super) async fn through_daemon(
    paths: &Paths,
    name: &str,
) -> Result<(Vec<f64>, f64), BenchError> {
    let mut talk = Client::connect(paths, false)
        .await
        .map_err(failed("could not reach the daemon"))?;
    talk.send(Header::Talk {
        name: name.into(),
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
    let mut times = Vec::with_capacity(KEYSTROKES);
    for i in 0..KEYSTROKES {
        let key = key(i);
        let sent = Instant::now();
        talk.send(Frame::with_payload(Header::Input, vec![key]))
            .await
            .map_err(failed("a keystroke was not sent"))?;
        wait_output(&mut talk, |seen| seen.contains(&key)).await?;
        times.push(ms(sent.elapsed()));
    }
    talk.send(Frame::with_payload(Header::Input, b"\rdump\r".to_vec()))
        .await
        .map_err(failed("the dump was not asked for"))?;
    let started = Instant::now();
    let bytes = wait_output(&mut talk, ends_with_end).await?;
    let rate = bytes as f64 / 1e6 / started.elapsed().as_secs_f64();
    let _ = talk.send(Header::Detach).await;
    Ok((times, rate))
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

/// `cmd` in a PTY of the bench's own, as a terminal runs it: round trips (ms), then MB/s.
/// With `ready`, keys are sent only once that text arrived (a program that sets the terminal
/// up first, as ssh does).
pub(super) async fn in_pty(
    cmd: CommandBuilder,
    ready: Option<&'static str>,
) -> Result<(Vec<f64>, f64), BenchError> {
    tokio::task::spawn_blocking(move || pty_blocking(cmd, ready))
        .await
        .map_err(|e| BenchError::Failed(format!("the PTY run failed: {e}")))?
}

fn pty_blocking(cmd: CommandBuilder, ready: Option<&str>) -> Result<(Vec<f64>, f64), BenchError> {
    let pty = |e: anyhow::Error| BenchError::Failed(format!("a PTY failed: {e:#}"));
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 50,
            cols: 200,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(pty)?;
    let mut child = pair.slave.spawn_command(cmd).map_err(pty)?;
    drop(pair.slave);
    // A program that stops answering (a stalled link) is killed, which ends the reads below.
    let progress = Arc::new(AtomicBool::new(true));
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = {
        let progress = progress.clone();
        let mut killer = child.clone_killer();
        std::thread::spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = done_rx.recv_timeout(STALL) {
                if !progress.swap(false, Ordering::Relaxed) {
                    let _ = killer.kill();
                    return;
                }
            }
        })
    };
    let measured = (|| {
        let reader = pair.master.try_clone_reader().map_err(pty)?;
        let writer = pair.master.take_writer().map_err(pty)?;
        exchange(reader, writer, ready, &progress)
    })();
    drop(done_tx);
    let _ = watchdog.join();
    let _ = child.kill();
    let _ = child.wait();
    measured
}

/// How long the program in a PTY may send nothing before it is given up on.
const STALL: Duration = Duration::from_secs(60);

fn exchange(
    mut reader: Box<dyn Read + Send>,
    mut writer: Box<dyn Write + Send>,
    ready: Option<&str>,
    progress: &AtomicBool,
) -> Result<(Vec<f64>, f64), BenchError> {
    let io = |e| BenchError::io("the PTY failed", e);
    let mut buf = vec![0u8; 65536];
    let mut read_until = |done: &dyn Fn(&[u8]) -> bool| -> Result<usize, BenchError> {
        let mut seen = Vec::new();
        let mut total = 0usize;
        loop {
            let n = match reader.read(&mut buf) {
                // Linux's PTY says EIO, not end of file, once the program is gone.
                Err(e) if e.raw_os_error() == Some(libc::EIO) => 0,
                read => read.map_err(io)?,
            };
            if n == 0 {
                return Err(BenchError::Failed(format!(
                    "the program in the PTY ended (or sent nothing for {} s): {}",
                    STALL.as_secs(),
                    String::from_utf8_lossy(&seen).trim()
                )));
            }
            progress.store(true, Ordering::Relaxed);
            total += n;
            seen.extend_from_slice(&buf[..n]);
            if done(&seen) {
                return Ok(total);
            }
            if seen.len() > 4096 {
                seen.drain(..seen.len() - 128);
            }
        }
    };
    if let Some(ready) = ready {
        read_until(&|seen| String::from_utf8_lossy(seen).contains(ready))?;
    }
    let mut times = Vec::with_capacity(KEYSTROKES);
    for i in 0..KEYSTROKES {
        let key = key(i);
        let sent = Instant::now();
        writer.write_all(&[key]).map_err(io)?;
        read_until(&|seen| seen.contains(&key))?;
        times.push(ms(sent.elapsed()));
    }
    writer.write_all(b"\rdump\r").map_err(io)?;
    let started = Instant::now();
    let total = read_until(&ends_with_end)?;
    Ok((times, total as f64 / 1e6 / started.elapsed().as_secs_f64()))
}
