//! Keystroke round trips and output rate, through a daemon's talk or in a PTY of the bench's
//! own: one byte in, its echo back; then the brain's dump, timed to its end marker. Both
//! sides stay open so their dumps can take turns: on a shared machine the load drifts, and a
//! rate measured minutes apart from the one it is compared with says more about the drift.

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use tokio::sync::oneshot;

use super::super::BenchError;
use super::super::measure::{median, ms};
use super::failed;
use crate::daemon::Paths;
use crate::daemon::client::Client;
use crate::daemon::frame::{Frame, Header};

/// Enough that p99 is not the third-worst of a few hundred (one stall on a 2-core machine).
pub(crate) const KEYSTROKES: usize = 2000;
/// Dumps per side, taking turns; the rate is their median.
pub(crate) const DUMPS: usize = 5;
const END: &str = "END-OF-DUMP";

fn key(i: usize) -> u8 {
    b'a' + (i % 26) as u8
}

fn ends_with_end(seen: &[u8]) -> bool {
    let tail = &seen[seen.len().saturating_sub(64)..];
    String::from_utf8_lossy(tail).contains(&format!("{END}\r\n"))
}

/// Round trips (ms) and the median output rate (MB/s) of two sides measured together.
pub(super) struct Compared {
    pub(super) near: (Vec<f64>, f64),
    pub(super) far: (Vec<f64>, f64),
}

/// Keystrokes through `talk`, then through `pty`; then their dumps in turns.
pub(super) async fn compare(mut talk: Talk, mut pty: Pty) -> Result<Compared, BenchError> {
    let talk_keys = talk.keys().await?;
    let pty_keys = pty.keys().await?;
    let (mut talk_rates, mut pty_rates) = (Vec::new(), Vec::new());
    for _ in 0..DUMPS {
        talk_rates.push(talk.dump().await?);
        pty_rates.push(pty.dump().await?);
    }
    talk.close().await;
    let rate = |rates: &[f64]| median(rates).unwrap_or(0.0);
    Ok(Compared {
        near: (talk_keys, rate(&talk_rates)),
        far: (pty_keys, rate(&pty_rates)),
    })
}

/// A talk with a clone of a daemon, as `ouro talk` holds one.
pub(super) struct Talk(Client);

impl Talk {
    pub(super) async fn open(paths: &Paths, name: &str) -> Result<Talk, BenchError> {
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
                Header::TalkReady { .. } => return Ok(Talk(talk)),
                Header::Error { message } => return Err(BenchError::Failed(message)),
                _ => {}
            }
        }
    }

    async fn keys(&mut self) -> Result<Vec<f64>, BenchError> {
        let mut times = Vec::with_capacity(KEYSTROKES);
        for i in 0..KEYSTROKES {
            let key = key(i);
            let sent = Instant::now();
            self.0
                .send(Frame::with_payload(Header::Input, vec![key]))
                .await
                .map_err(failed("a keystroke was not sent"))?;
            self.wait_output(|seen| seen.contains(&key)).await?;
            times.push(ms(sent.elapsed()));
        }
        Ok(times)
    }

    async fn dump(&mut self) -> Result<f64, BenchError> {
        self.0
            .send(Frame::with_payload(Header::Input, b"\rdump\r".to_vec()))
            .await
            .map_err(failed("the dump was not asked for"))?;
        let started = Instant::now();
        let bytes = self.wait_output(ends_with_end).await?;
        Ok(bytes as f64 / 1e6 / started.elapsed().as_secs_f64())
    }

    async fn close(self) {
        let _ = self.0.send(Header::Detach).await;
    }

    /// Reads output frames until `done` holds for what arrived; how many bytes that took.
    async fn wait_output(&mut self, done: impl Fn(&[u8]) -> bool) -> Result<usize, BenchError> {
        let mut seen = Vec::new();
        let mut total = 0;
        loop {
            let frame = tokio::time::timeout(STALL, self.0.next())
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
                    keep_tail(&mut seen);
                }
                Header::TalkEnd { .. } => {
                    return Err(BenchError::Failed("the relayed brain exited".into()));
                }
                _ => {}
            }
        }
    }
}

fn keep_tail(seen: &mut Vec<u8>) {
    if seen.len() > 4096 {
        seen.drain(..seen.len() - 128);
    }
}

/// How long a program may send nothing before it is given up on.
const STALL: Duration = Duration::from_secs(60);

/// What the PTY's thread is asked, with where its answer goes.
enum Ask {
    Keys(oneshot::Sender<Result<Vec<f64>, BenchError>>),
    Dump(oneshot::Sender<Result<f64, BenchError>>),
}

/// A program in a PTY of the bench's own, as a terminal runs it, served by a thread (PTY
/// reads block): keystrokes and dumps are asked of it.
pub(super) struct Pty {
    asks: std::sync::mpsc::Sender<Ask>,
}

impl Pty {
    /// Starts `cmd`; with `ready`, it is ready once that text arrived (a program that sets
    /// the terminal up first, as ssh does).
    pub(super) async fn open(
        cmd: CommandBuilder,
        ready: Option<&'static str>,
    ) -> Result<Pty, BenchError> {
        let (asks, asked) = std::sync::mpsc::channel();
        let (opened, open) = oneshot::channel();
        std::thread::spawn(move || serve_pty(cmd, ready, opened, asked));
        open.await
            .map_err(|_| BenchError::Failed("the PTY thread ended".into()))??;
        Ok(Pty { asks })
    }

    async fn ask<T>(
        &self,
        ask: impl FnOnce(oneshot::Sender<Result<T, BenchError>>) -> Ask,
    ) -> Result<T, BenchError> {
        let (tx, rx) = oneshot::channel();
        let gone = || BenchError::Failed("the program in the PTY is gone".into());
        self.asks.send(ask(tx)).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }

    async fn keys(&mut self) -> Result<Vec<f64>, BenchError> {
        self.ask(Ask::Keys).await
    }

    async fn dump(&mut self) -> Result<f64, BenchError> {
        self.ask(Ask::Dump).await
    }
}

/// The PTY's thread: opens it, answers asks until the [`Pty`] is dropped, then kills the
/// program. A program that stops answering (a stalled link) is killed, which ends the reads.
fn serve_pty(
    cmd: CommandBuilder,
    ready: Option<&str>,
    opened: oneshot::Sender<Result<(), BenchError>>,
    asked: std::sync::mpsc::Receiver<Ask>,
) {
    let pty = |e: anyhow::Error| BenchError::Failed(format!("a PTY failed: {e:#}"));
    let started = (|| {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 50,
                cols: 200,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(pty)?;
        let child = pair.slave.spawn_command(cmd).map_err(pty)?;
        drop(pair.slave);
        let reader = pair.master.try_clone_reader().map_err(pty)?;
        let writer = pair.master.take_writer().map_err(pty)?;
        Ok::<_, BenchError>((child, reader, writer, pair.master))
    })();
    let (mut child, reader, writer, _master) = match started {
        Ok(started) => started,
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
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
    let mut term = Term {
        reader,
        writer,
        buf: vec![0u8; 65536],
        progress: &progress,
    };
    let ready = match ready {
        Some(ready) => term
            .read_until(&|seen| String::from_utf8_lossy(seen).contains(ready))
            .map(drop),
        None => Ok(()),
    };
    let ok = ready.is_ok();
    let _ = opened.send(ready);
    if ok {
        while let Ok(ask) = asked.recv() {
            match ask {
                Ask::Keys(answer) => drop(answer.send(term.keys())),
                Ask::Dump(answer) => drop(answer.send(term.dump())),
            }
        }
    }
    drop(done_tx);
    let _ = watchdog.join();
    let _ = child.kill();
    let _ = child.wait();
}

struct Term<'a> {
    reader: Box<dyn Read + Send>,
    writer: Box<dyn Write + Send>,
    buf: Vec<u8>,
    progress: &'a AtomicBool,
}

impl Term<'_> {
    fn keys(&mut self) -> Result<Vec<f64>, BenchError> {
        let mut times = Vec::with_capacity(KEYSTROKES);
        for i in 0..KEYSTROKES {
            let key = key(i);
            let sent = Instant::now();
            self.writer.write_all(&[key]).map_err(io)?;
            self.read_until(&|seen| seen.contains(&key))?;
            times.push(ms(sent.elapsed()));
        }
        Ok(times)
    }

    fn dump(&mut self) -> Result<f64, BenchError> {
        self.writer.write_all(b"\rdump\r").map_err(io)?;
        let started = Instant::now();
        let total = self.read_until(&ends_with_end)?;
        Ok(total as f64 / 1e6 / started.elapsed().as_secs_f64())
    }

    /// Reads until `done` holds for what arrived; how many bytes that took.
    fn read_until(&mut self, done: &dyn Fn(&[u8]) -> bool) -> Result<usize, BenchError> {
        let mut seen = Vec::new();
        let mut total = 0usize;
        loop {
            let n = match self.reader.read(&mut self.buf) {
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
            self.progress.store(true, Ordering::Relaxed);
            total += n;
            seen.extend_from_slice(&self.buf[..n]);
            if done(&seen) {
                return Ok(total);
            }
            keep_tail(&mut seen);
        }
    }
}

fn io(e: std::io::Error) -> BenchError {
    BenchError::io("the PTY failed", e)
}
