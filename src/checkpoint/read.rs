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
pub const PARALLEL_FROM: usize = 64;
/// Records read but not yet written, at most.
const IN_FLIGHT: usize = 32;

/// The git mode of a file from its metadata.
pub fn mode_of(meta: &std::fs::Metadata) -> u32 {
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
pub fn content(full: &Path, meta: &std::fs::Metadata) -> std::io::Result<Option<Vec<u8>>> {
    let read = if meta.file_type().is_symlink() {
        std::fs::read_link(full).map(|t| t.as_os_str().as_bytes().to_vec())
    } else {
        std::fs::read(full)
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

/// One file read for a pack: its blob id and compressed pack record.
pub struct Packed {
    pub oid: Oid,
    pub record: Vec<u8>,
}

/// Reads, hashes and compresses `files` on up to as many threads as there are cores, handing
/// each result to `take` (on the calling thread, in no particular order) as it is ready: a few
/// records are in memory at a time, never the whole project. The first error from `take`
/// stops the reading and is returned.
pub fn many(
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
        let (tx, rx) = std::sync::mpsc::sync_channel(IN_FLIGHT);
        for _ in 0..threads {
            let (tx, next, stop, one) = (tx.clone(), &next, &stop, &one);
            scope.spawn(move || {
                let mut deflater = pack::Deflater::new();
                while !stop.load(Ordering::Relaxed) {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(index) else { break };
                    if tx.send((index, one(file, &mut deflater))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut outcome = Ok(());
        for (index, result) in rx {
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
