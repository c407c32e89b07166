//! Reading files into blobs: one at a time, or many at once on every core for a first
//! snapshot, where each file is read, hashed and compressed into its pack record off the
//! scanning thread.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::objects::{self, Kind, MODE_EXEC, MODE_FILE, MODE_LINK, Oid};
use super::pack;

/// Below this many files, threads cost more than they save.
pub(super) const PARALLEL_FROM: usize = 64;
/// Batches read but not yet written, at most.
const IN_FLIGHT: usize = 4;
/// Files are handed over in batches of this many (or this many compressed bytes): one
/// hand-over per file costs a wake-up of the writing thread each.
const BATCH_FILES: usize = 16;
const BATCH_BYTES: usize = 1 << 20;

type Outcome = std::io::Result<Option<Packed>>;

/// The git mode of a file from its metadata.
pub(super) fn mode_of(meta: &std::fs::Metadata) -> u32 {
    if meta.file_type().is_symlink() {
        MODE_LINK
    } else if meta.mode() & 0o100 != 0 {
        MODE_EXEC
    } else {
        MODE_FILE
    }
}

/// A file's blob content (a link's target), or `None` when it vanished or cannot be read:
/// left out, as `git add --ignore-errors` did.
pub(super) fn content(full: &Path, meta: &std::fs::Metadata) -> std::io::Result<Option<Vec<u8>>> {
    let read = if meta.file_type().is_symlink() {
        std::fs::read_link(full).map(|t| t.as_os_str().as_bytes().to_vec())
    } else {
        read_sized(full, meta.len())
    };
    match read {
        Ok(data) => Ok(Some(data)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// A file's bytes, read in one `read` when it still has the size its stat gave (a first
/// snapshot reads every file: `std::fs::read` would stat it again and read once more to find
/// its end). Any other outcome reads on to the end.
fn read_sized(full: &Path, len: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(full)?;
    let want = usize::try_from(len).unwrap_or(usize::MAX).saturating_add(1);
    let mut data = Vec::new();
    if want <= ONE_READ_MAX {
        data.resize(want, 0);
        let n = loop {
            match file.read(&mut data) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        data.truncate(n);
        // One byte short of what was asked: exactly the size seen, so this is the end.
        if n + 1 == want {
            return Ok(data);
        }
    }
    file.read_to_end(&mut data)?;
    Ok(data)
}

/// Larger files are read as `std::fs::read` reads them, in growing pieces.
const ONE_READ_MAX: usize = 64 << 20;

/// One file read for a pack: its blob id and compressed pack record.
pub(super) struct Packed {
    pub(crate) oid: Oid,
    pub record: Vec<u8>,
}

/// Reads, hashes and compresses `files` on up to as many threads as there are cores, handing
/// each result to `take` (on the calling thread, in no particular order) as it is ready: a few
/// records are in memory at a time, never the whole project. The first error from `take`
/// stops the reading and is returned.
pub(super) fn many(
    files: &[(PathBuf, std::fs::Metadata)],
    mut take: impl FnMut(usize, std::io::Result<Option<Packed>>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let one = |(full, meta): &(PathBuf, std::fs::Metadata),
               deflater: &mut pack::Deflater|
     -> std::io::Result<Option<Packed>> {
        let Some(data) = content(full, meta)? else {
            return Ok(None);
        };
        Ok(Some(Packed {
            oid: objects::id(Kind::Blob, &data),
            record: deflater.record(Kind::Blob, &data)?,
        }))
    };
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(usize, Outcome)>>(IN_FLIGHT);
        for _ in 0..threads {
            let (tx, next, stop, one) = (tx.clone(), &next, &stop, &one);
            scope.spawn(move || {
                let mut deflater = pack::Deflater::new();
                let mut batch = Vec::new();
                let mut bytes = 0;
                while !stop.load(Ordering::Relaxed) {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(index) else { break };
                    let read = one(file, &mut deflater);
                    bytes += read
                        .as_ref()
                        .map_or(0, |r| r.as_ref().map_or(0, |p| p.record.len()));
                    batch.push((index, read));
                    if batch.len() >= BATCH_FILES || bytes >= BATCH_BYTES {
                        bytes = 0;
                        if tx.send(std::mem::take(&mut batch)).is_err() {
                            return;
                        }
                    }
                }
                if !batch.is_empty() {
                    let _ = tx.send(batch);
                }
            });
        }
        drop(tx);
        let mut outcome = Ok(());
        for (index, result) in rx.into_iter().flatten() {
            if outcome.is_ok() {
                outcome = take(index, result);
                if outcome.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
        outcome
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that changed size since its stat is read whole all the same.
    #[test]
    fn a_file_is_read_whole_whatever_its_stat_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        for (before, now) in [
            (&b"abc"[..], &b"abcdef"[..]),
            (b"abcdef", b"ab"),
            (b"", b"x"),
            (b"same", b"same"),
        ] {
            std::fs::write(&path, before).unwrap();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            std::fs::write(&path, now).unwrap();
            assert_eq!(content(&path, &meta).unwrap().unwrap(), now);
        }
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &big).unwrap();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(content(&path, &meta).unwrap().unwrap(), big);
    }
}
