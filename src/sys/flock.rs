//! Advisory whole-file locks (flock): held for as long as the descriptor is open, released by
//! the kernel when the holder dies, so a crash never leaves a stale lock behind.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

/// Takes the exclusive lock on `file` without waiting: `Ok(false)` when another open file
/// description holds it.
pub fn try_exclusive(file: &File) -> std::io::Result<bool> {
    // SAFETY: flock takes a descriptor we own and plain flags.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Ok(false);
    }
    Err(error)
}

/// Lets go of a lock taken with [`try_exclusive`], keeping the file open.
pub fn unlock(file: &File) -> std::io::Result<()> {
    // SAFETY: flock takes a descriptor we own and plain flags.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A lock file of a process that must run alone (one daemon, one server per home).
pub enum Held {
    /// Ours while the file stays open; it now says `says`.
    Ours(File),
    /// Another process holds it: what its file says, else its pid.
    Theirs(String),
}

/// Opens `path` (made, with its folder, if need be) and takes its lock without waiting; when
/// it is ours, the file is made to say `says` (who holds it, for the next one to name).
pub fn hold(path: &std::path::Path, says: &str) -> std::io::Result<Held> {
    use std::io::Write as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    if !try_exclusive(&file)? {
        let said = std::fs::read_to_string(path).unwrap_or_default();
        let holder = match said.trim() {
            "" => holder(&file)
                .map_or_else(|| "another process".to_string(), |pid| format!("pid {pid}")),
            said => said.to_string(),
        };
        return Ok(Held::Theirs(holder));
    }
    file.set_len(0)?;
    writeln!(file, "{says}")?;
    Ok(Held::Ours(file))
}

/// The pid holding a flock on `file`, from `/proc/locks`.
pub fn holder(file: &File) -> Option<u32> {
    let ino = file.metadata().ok()?.ino();
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // `1: FLOCK  ADVISORY  WRITE 1234 fd:00:5678 0 EOF`
        let at = fields.iter().position(|f| *f == "FLOCK")?;
        let pid = fields.get(at + 3)?.parse().ok()?;
        let inode: u64 = fields.get(at + 4)?.rsplit(':').next()?.parse().ok()?;
        (inode == ino).then_some(pid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_description_of_the_file_cannot_take_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let first = File::create(&path).unwrap();
        assert!(try_exclusive(&first).unwrap());
        let second = File::open(&path).unwrap();
        assert!(!try_exclusive(&second).unwrap());
        assert_eq!(holder(&second), Some(std::process::id()));
        drop(first);
        assert!(try_exclusive(&second).unwrap());
    }
}
