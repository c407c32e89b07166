//! ouro's record files: replacing a small file whole (the new content goes to a temporary file
//! beside it, synced, then renamed over it, so a crash or a full disk leaves the old file or the
//! new one, never a torn mix), JSON records kept that way (sessions, clones, series, worktree
//! manifests), and whole lines appended to a log.

use std::io::Write as _;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Keeps `value` in `path` as pretty JSON, replaced whole.
pub fn write_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    write(path, &bytes)
}

/// The record kept in `path`: `None` when there is none; a record that does not parse is an
/// [`std::io::ErrorKind::InvalidData`] error saying why.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> std::io::Result<Option<T>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// `file` opened to append, made (readable by the user alone) with its folder if need be. The
/// folder is made only when the file cannot be opened: a log appended to per event does not
/// pay a `mkdir` each time.
pub fn open_to_append(file: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(file)
    };
    match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir)?;
            }
            open()
        }
        opened => opened,
    }
}

/// Appends `bytes` to `file` whole or not at all: a write the disk had no room for is cut
/// back off, so the file never holds a torn line for the next append to glue onto.
pub fn append_whole(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    append_whole_to(&mut open_to_append(file)?, bytes)
}

/// [`append_whole`] to a file kept open (by [`open_to_append`]) for many appends.
pub fn append_whole_to(out: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
    let mut written = 0;
    while written < bytes.len() {
        let failed = match out.write(&bytes[written..]) {
            Ok(0) => std::io::Error::from(std::io::ErrorKind::WriteZero),
            Ok(n) => {
                written += n;
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => e,
        };
        // Shrinking needs no room; the size is asked only now, not before every append.
        if written > 0
            && let Ok(meta) = out.metadata()
        {
            let _ = out.set_len(meta.len().saturating_sub(written as u64));
        }
        return Err(failed);
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically, making its folder if need be.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_mode(path, bytes, 0o666)
}

/// [`write`], readable and writable by the user only (a file that may name hosts or hold
/// what the user said).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_mode(path, bytes, 0o600)
}

/// Makes `dir` (and its parents) with only the user allowed in the last one.
pub fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn write_mode(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("a file path without a folder"))?;
    std::fs::create_dir_all(dir)?;
    let aside = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&aside)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&aside, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&aside);
    }
    written
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_append_that_finds_no_room_leaves_the_file_as_it_was() {
        // /dev/full answers every write with ENOSPC, as a full disk does.
        let full = std::path::Path::new("/dev/full");
        if full.exists() {
            assert!(super::append_whole(full, b"a line\n").is_err());
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        super::append_whole(&path, b"one\n").unwrap();
        super::append_whole(&path, b"two\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one\ntwo\n");
    }

    #[test]
    fn the_file_is_replaced_whole_and_no_temporary_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b.json");
        super::write(&path, b"one").unwrap();
        super::write(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path().join("a")).unwrap().count(), 1);
    }

    #[test]
    fn records_round_trip_and_a_damaged_one_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        assert_eq!(super::read_json::<Vec<u8>>(&path).unwrap(), None);
        super::write_json(&path, &vec![1u8, 2]).unwrap();
        assert_eq!(
            super::read_json::<Vec<u8>>(&path).unwrap(),
            Some(vec![1, 2])
        );
        std::fs::write(&path, "[1,").unwrap();
        let err = super::read_json::<Vec<u8>>(&path).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        // A log's folder is made with its first line.
        let log = dir.path().join("logs/a.jsonl");
        super::append_whole(&log, b"one\n").unwrap();
        super::append_whole(&log, b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");
    }
}
