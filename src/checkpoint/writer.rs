//! Writing a snapshot's new objects, and the line that keeps its commit, off the caller's
//! path. Creating a file costs far more than reading, hashing and compressing a changed source
//! file (about half a millisecond each on some file systems), so a snapshot before a tool call
//! only captures the changed bytes in memory and hands them here; one thread writes them in
//! order: a pack when there are several objects, loose objects when there are one or two, then
//! the commit's line in the log that keeps it ([`keep`]). Snapshots that follow each other
//! closely (one per Edit in a busy turn) are written together, as one pack: the writes wait
//! until no snapshot came for [`IDLE`], at most [`HOLD`] after the first. With a model
//! answering in a second or more, that is one pack per batch of tool calls, written while the
//! model thinks; with a fast one, one pack every [`HOLD`] rather than one per call (a new file
//! costs more the more files were deleted lately, as a busy build does). Whoever reads the
//! repository with git first waits with [`Writer::settle`]; the end of each turn and dropping
//! the writer do too, so only a kill in the middle of a turn can lose snapshots, those of its
//! last [`HOLD`] at most.

use std::path::{Path, PathBuf};
use std::sync::{OnceLock, mpsc};
use std::time::{Duration, Instant};

use super::keep::{self, Kept};
use super::objects::{Kind, Store};
use super::pack::PackWriter;

/// One snapshot's writes.
#[derive(Default)]
pub(super) struct Batch {
    pub objects: Vec<(Kind, Vec<u8>)>,
    /// The lines that keep the commits, written after the objects.
    pub kept: Vec<Kept>,
}

enum Job {
    Write(Batch),
    Settle(mpsc::Sender<std::io::Result<()>>),
}

/// The thread starts with the first batch: most sessions' first snapshot finds the project as
/// the last one left it and writes nothing, and a session's first request would wait for
/// the thread's start.
pub(super) struct Writer {
    git_dir: PathBuf,
    /// `None` inside: the thread could not be started, so batches are written by the caller.
    started: OnceLock<Option<Started>>,
}

struct Started {
    jobs: mpsc::Sender<Job>,
    thread: std::thread::JoinHandle<()>,
}

/// At most this many objects go in loose; more make a pack (two files however many).
const LOOSE_MAX: usize = 2;
/// Writes wait this long for the next snapshot's, to share its pack...
const IDLE: Duration = Duration::from_millis(100);
/// ...but no longer than this after the first of them came...
const HOLD: Duration = Duration::from_secs(1);
/// ...nor past this many bytes held.
const HELD_BYTES: usize = 16 << 20;

impl Writer {
    pub(super) fn start(git_dir: &Path) -> Writer {
        Writer {
            git_dir: git_dir.to_path_buf(),
            started: OnceLock::new(),
        }
    }

    fn thread(&self) -> Option<&Started> {
        self.started
            .get_or_init(|| {
                let (jobs, rx) = mpsc::channel();
                let git_dir = self.git_dir.clone();
                std::thread::Builder::new()
                    .name("ouro-checkpoints".into())
                    .spawn(move || run(&git_dir, &rx))
                    .ok()
                    .map(|thread| Started { jobs, thread })
            })
            .as_ref()
    }

    /// Queues `batch`; written in the background, in order. Without a thread (it could not be
    /// started) the batch is written now.
    pub(super) fn send(&self, batch: Batch) -> std::io::Result<()> {
        match self.thread() {
            Some(started) => started
                .jobs
                .send(Job::Write(batch))
                .map_err(|_| std::io::Error::other("the checkpoint writer stopped")),
            None => write(&self.git_dir, batch),
        }
    }

    /// Waits until everything queued so far is on disk; the first write that failed since
    /// the last call is the error.
    pub(super) fn settle(&self) -> std::io::Result<()> {
        let Some(Some(started)) = self.started.get() else {
            return Ok(());
        };
        let (tx, rx) = mpsc::channel();
        if started.jobs.send(Job::Settle(tx)).is_err() {
            return Ok(());
        }
        rx.recv().unwrap_or(Ok(()))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Some(Some(Started { jobs, thread })) = self.started.take() {
            drop(jobs);
            let _ = thread.join();
        }
    }
}

fn run(git_dir: &Path, jobs: &mpsc::Receiver<Job>) {
    let mut failure: Option<std::io::Error> = None;
    let mut gathered = Batch::default();
    let mut held = 0;
    // When the first batch held came, and when the last did.
    let mut since: Option<(Instant, Instant)> = None;
    loop {
        let job = match since {
            None => jobs.recv().ok(),
            Some((first, last)) => {
                let due = (last + IDLE).min(first + HOLD);
                match jobs.recv_timeout(due.saturating_duration_since(Instant::now())) {
                    Ok(job) => Some(job),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        flush(git_dir, &mut gathered, &mut failure);
                        (since, held) = (None, 0);
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => None,
                }
            }
        };
        match job {
            Some(Job::Write(batch)) => {
                held += batch
                    .objects
                    .iter()
                    .map(|(_, data)| data.len())
                    .sum::<usize>();
                gathered.objects.extend(batch.objects);
                gathered.kept.extend(batch.kept);
                let now = Instant::now();
                since = Some((since.map_or(now, |(first, _)| first), now));
                if held > HELD_BYTES {
                    flush(git_dir, &mut gathered, &mut failure);
                    (since, held) = (None, 0);
                }
            }
            Some(Job::Settle(reply)) => {
                flush(git_dir, &mut gathered, &mut failure);
                (since, held) = (None, 0);
                let _ = reply.send(failure.take().map_or(Ok(()), Err));
            }
            None => {
                flush(git_dir, &mut gathered, &mut failure);
                return;
            }
        }
    }
}

/// Writes what was gathered; the first failure is kept for the next settle.
fn flush(git_dir: &Path, gathered: &mut Batch, failure: &mut Option<std::io::Error>) {
    let batch = std::mem::take(gathered);
    if batch.objects.is_empty() && batch.kept.is_empty() {
        return;
    }
    if let Err(e) = write(git_dir, batch) {
        tracing::warn!(error = %e, "a checkpoint could not be written");
        failure.get_or_insert(e);
    }
}

fn write(git_dir: &Path, batch: Batch) -> std::io::Result<()> {
    if batch.objects.len() > LOOSE_MAX {
        let mut pack = PackWriter::start(git_dir)?;
        for (kind, data) in &batch.objects {
            pack.add(*kind, data)?;
        }
        pack.finish()?;
    } else {
        let store = Store::new(git_dir);
        for (kind, data) in &batch.objects {
            store.write(*kind, data)?;
        }
    }
    keep::append(git_dir, &batch.kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packs(git_dir: &Path) -> usize {
        std::fs::read_dir(git_dir.join("objects/pack"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().unwrap() == "pack")
            .count()
    }

    fn batch(n: usize) -> Batch {
        Batch {
            objects: (0..3)
                .map(|i| {
                    (
                        Kind::Blob,
                        format!("snapshot {n} object {i}\n").into_bytes(),
                    )
                })
                .collect(),
            kept: Vec::new(),
        }
    }

    /// A session whose snapshots write nothing never starts the thread.
    #[test]
    fn the_thread_starts_with_the_first_batch() {
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path();
        super::super::objects::init(git_dir).unwrap();
        let writer = Writer::start(git_dir);
        writer.settle().unwrap();
        assert!(writer.started.get().is_none());
        writer.send(batch(0)).unwrap();
        assert!(matches!(writer.started.get(), Some(Some(_))));
        writer.settle().unwrap();
        assert_eq!(packs(git_dir), 1);
    }

    /// Snapshots that follow each other closely share one pack, written once none came for a
    /// while, without anyone settling; a settle writes what is held at once.
    #[test]
    fn close_snapshots_share_a_pack_written_when_they_stop() {
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path();
        super::super::objects::init(git_dir).unwrap();
        let writer = Writer::start(git_dir);
        for n in 0..3 {
            writer.send(batch(n)).unwrap();
        }
        let waited = Instant::now();
        while packs(git_dir) == 0 && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(packs(git_dir), 1);
        writer.send(batch(3)).unwrap();
        writer.settle().unwrap();
        assert_eq!(packs(git_dir), 2);
    }
}
