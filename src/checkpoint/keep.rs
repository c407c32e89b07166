//! What keeps the checkpoints' commits: one line per checkpoint, appended to the reflog of a
//! single ref (`refs/ouro/checkpoints`), which git counts as reachable like the ref itself, so
//! `git prune` leaves every commit named there. A ref file per checkpoint, as before, cost a
//! new file (and a folder per session) each time, about half a millisecond apiece on some
//! file systems; an appended line costs a write. Every session of the project shares the log:
//! appends and the ref update hold its lock, and pruning rewrites it under the same lock.
//!
//! A line is git's reflog format with the session and the commit's tree as its message:
//! `<old> <commit> ouro <ouro@localhost> <seconds> +0000\t<session> <tree>`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::objects::{self, Oid};

/// The ref whose reflog keeps the checkpoints (it names the newest).
pub(super) const REF: &str = "refs/ouro/checkpoints";

/// One checkpoint's line.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Kept {
    pub commit: Oid,
    pub tree: Oid,
    pub session: String,
    /// Seconds since the epoch.
    pub time: u64,
}

impl Kept {
    pub(super) fn now(commit: Oid, tree: Oid, session: &str) -> Kept {
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        // A line break or tab in a name (`--session-id` is the user's) would end the line.
        let session = session
            .chars()
            .map(|c| if c.is_control() { '_' } else { c })
            .collect();
        Kept {
            commit,
            tree,
            session,
            time,
        }
    }

    fn line(&self) -> String {
        format!(
            "{} {} ouro <ouro@localhost> {} +0000\t{} {}\n",
            "0".repeat(40),
            objects::hex(&self.commit),
            self.time,
            self.session,
            objects::hex(&self.tree)
        )
    }

    /// One line, or `None` when it is not one of ours whole (a line cut short by a full disk
    /// and run into the next is not taken for either).
    pub(super) fn parse(line: &str) -> Option<Kept> {
        let (head, message) = line.split_once('\t')?;
        let head: Vec<&str> = head.split(' ').collect();
        let [old, commit, _name, _email, time, _zone] = head.as_slice() else {
            return None;
        };
        objects::parse_hex(old)?;
        let commit = objects::parse_hex(commit)?;
        let time = time.parse().ok()?;
        let (session, tree) = message.trim_end().rsplit_once(' ')?;
        if session.contains('\t') {
            return None;
        }
        Some(Kept {
            commit,
            tree: objects::parse_hex(tree)?,
            session: session.to_string(),
            time,
        })
    }
}

fn log_path(git_dir: &Path) -> PathBuf {
    git_dir.join("logs").join(REF)
}

/// The log, opened for appending and locked: a pruning that replaced the file while this
/// waited for the lock is seen, and the new file opened instead.
fn locked(git_dir: &Path) -> std::io::Result<File> {
    let path = log_path(git_dir);
    let open = || {
        OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
    };
    loop {
        let file = match open() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                open()?
            }
            opened => opened?,
        };
        file.lock()?;
        let same = std::fs::metadata(&path)
            .is_ok_and(|now| now.ino() == file.metadata().map_or(0, |m| m.ino()));
        if same {
            return Ok(file);
        }
    }
}

/// Appends `kept` and points the ref at the last of them.
pub(super) fn append(git_dir: &Path, kept: &[Kept]) -> std::io::Result<()> {
    let Some(last) = kept.last() else {
        return Ok(());
    };
    let mut text: String = kept.iter().map(Kept::line).collect();
    let log = locked(git_dir)?;
    // The ref first: git reads a reflog only beside a ref that resolves.
    point_ref(git_dir, &last.commit)?;
    // A line an earlier append left cut short (a full disk) is ended, not run into this one.
    let len = log.metadata()?.len();
    let mut end = [0u8];
    if len > 0 && log.read_at(&mut end, len - 1).is_ok() && end[0] != b'\n' {
        text.insert(0, '\n');
    }
    (&log).write_all(text.as_bytes())
}

/// Points the ref at `commit`. Made whole the first time (written aside and renamed); after
/// that written in place: every id has the same length, so the file is never seen half-way
/// or empty, and no new file is made.
fn point_ref(git_dir: &Path, commit: &Oid) -> std::io::Result<()> {
    let path = git_dir.join(REF);
    let line = format!("{}\n", objects::hex(commit));
    match OpenOptions::new().write(true).open(&path) {
        Ok(file) => file.write_all_at(line.as_bytes(), 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::sys::atomic::write(&path, line.as_bytes())
        }
        Err(e) => Err(e),
    }
}

/// The newest line, read from the end of the log.
pub(super) fn newest(git_dir: &Path) -> Option<Kept> {
    /// Far longer than a line.
    const TAIL: u64 = 4096;
    let mut file = File::open(log_path(git_dir)).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
    let mut tail = String::new();
    file.read_to_string(&mut tail).ok()?;
    tail.lines().rev().find_map(Kept::parse)
}

/// Rewrites the log with the lines `keep` chooses among all of them (a line that cannot be
/// read is kept as it is); returns how many went.
pub(super) fn prune(
    git_dir: &Path,
    keep: impl FnOnce(&[Kept]) -> Vec<bool>,
) -> std::io::Result<usize> {
    let path = log_path(git_dir);
    if !path.exists() {
        return Ok(0);
    }
    let log = locked(git_dir)?;
    let mut text = String::new();
    (&log).read_to_string(&mut text)?;
    let lines: Vec<&str> = text.lines().collect();
    let parsed: Vec<(usize, Kept)> = lines
        .iter()
        .enumerate()
        .filter_map(|(at, line)| Some((at, Kept::parse(line)?)))
        .collect();
    let kept: Vec<Kept> = parsed.iter().map(|(_, k)| k.clone()).collect();
    let verdicts = keep(&kept);
    let mut gone = vec![false; lines.len()];
    for ((at, _), keep) in parsed.iter().zip(verdicts) {
        gone[*at] = !keep;
    }
    let removed = gone.iter().filter(|g| **g).count();
    if removed == 0 {
        return Ok(0);
    }
    let mut out = String::with_capacity(text.len());
    for (line, gone) in lines.iter().zip(&gone) {
        if !gone {
            out.push_str(line);
            out.push('\n');
        }
    }
    crate::sys::atomic::write(&path, out.as_bytes())?;
    drop(log);
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(n: u8) -> Oid {
        [n; 20]
    }

    #[test]
    fn lines_are_appended_read_back_and_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path();
        assert_eq!(newest(git_dir), None);
        append(git_dir, &[Kept::now(oid(1), oid(2), "a")]).unwrap();
        append(
            git_dir,
            &[
                Kept::now(oid(3), oid(4), "b"),
                Kept::now(oid(5), oid(6), "a"),
            ],
        )
        .unwrap();
        let last = newest(git_dir).unwrap();
        assert_eq!(
            (last.commit, last.tree, last.session.as_str()),
            (oid(5), oid(6), "a")
        );
        assert_eq!(
            std::fs::read_to_string(git_dir.join(REF)).unwrap(),
            format!("{}\n", objects::hex(&oid(5)))
        );
        let removed = prune(git_dir, |all| {
            all.iter().map(|k| k.session != "a").collect()
        })
        .unwrap();
        assert_eq!(removed, 2);
        let text = std::fs::read_to_string(log_path(git_dir)).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert_eq!(
            Kept::parse(text.lines().next().unwrap()).unwrap().session,
            "b"
        );
        assert_eq!(prune(git_dir, |all| vec![true; all.len()]).unwrap(), 0);
    }

    /// A line cut short (a disk that filled mid-write) is ended before the next is appended,
    /// and is read as nobody's: neither its commit nor the next line's is mistaken.
    #[test]
    fn a_cut_line_is_ended_and_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path();
        append(git_dir, &[Kept::now(oid(1), oid(2), "a")]).unwrap();
        let whole = Kept::now(oid(3), oid(4), "b").line();
        let mut log = OpenOptions::new()
            .append(true)
            .open(log_path(git_dir))
            .unwrap();
        log.write_all(&whole.as_bytes()[..50]).unwrap();
        append(git_dir, &[Kept::now(oid(5), oid(6), "c")]).unwrap();
        let text = std::fs::read_to_string(log_path(git_dir)).unwrap();
        let read: Vec<Option<u8>> = text
            .lines()
            .map(|l| Kept::parse(l).map(|k| k.commit[0]))
            .collect();
        assert_eq!(read, [Some(1), None, Some(5)]);
        assert_eq!(newest(git_dir).unwrap().tree, oid(6));
        let joined = format!("{}{}", &whole[..50], Kept::now(oid(7), oid(8), "d").line());
        assert_eq!(Kept::parse(&joined), None);
    }

    /// git itself reads the log: a commit named only there survives `git prune`.
    #[test]
    fn git_prune_keeps_what_the_log_names() {
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path();
        objects::init(git_dir).unwrap();
        let store = objects::Store::new(git_dir);
        let tree = store.write(objects::Kind::Tree, &[]).unwrap();
        let commit = |text: &str| {
            store
                .write(objects::Kind::Commit, &objects::commit(&tree, None, text))
                .unwrap()
        };
        let (logged, newest_one, loose) = (commit("logged"), commit("newest"), commit("loose"));
        append(
            git_dir,
            &[
                Kept::now(logged, tree, "s"),
                Kept::now(newest_one, tree, "s"),
            ],
        )
        .unwrap();
        let status = std::process::Command::new("git")
            .args(["prune", "--expire=now"])
            .env("GIT_DIR", git_dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(status.success());
        assert!(store.has(&logged) && store.has(&newest_one));
        assert!(
            !store.has(&loose),
            "git prune ran and removed what nothing keeps"
        );
    }
}
