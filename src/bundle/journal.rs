//! The apply journal: what makes `ouro dogs` all or nothing even under `kill -9`. Every new
//! file is staged beside its target and every file it replaces or deletes gets a second name
//! (a hard link, so no copy) before any target changes; the journal, one file at the top of the
//! target, records them. Only then are the staged files renamed over their targets. An apply
//! cut off anywhere leaves the journal behind: the next `ouro dogs` there refuses to apply
//! anything else until `ouro dogs --recover` finishes it (or, with `--rollback`, puts every old
//! file back by its second name), and either way removes every staged and kept file.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::sys::beneath;

/// The journal's name at the top of the target directory.
pub(super) const FILE: &str = ".ouro-dogs.journal";

/// Where the journal is written before it takes its name, so it never has a torn one.
const NEXT: &str = ".ouro-dogs.journal.new";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum State {
    /// Files are being staged: no target has changed yet.
    Staging,
    /// Every file is staged and kept: targets are being replaced.
    Committing,
    /// As committing, for an apply whose verification decides whether it stays (`--verify
    /// --revert-on-fail`): the old files keep their second names until the verification is
    /// over, and an apply cut off before then is rolled back.
    Verifying,
    /// Committing stopped and the apply is being undone: it is undone whatever `--recover` is
    /// asked, because a finish after part of an undo could not tell what it had put back.
    #[serde(rename = "rolling-back")]
    RollingBack,
}

/// One file of the apply; names are in the file's own folder.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Entry {
    #[serde(with = "crate::sys::os_serde::path")]
    pub path: PathBuf,
    /// The new content, staged under this name; `None`: the file is deleted.
    #[serde(with = "crate::sys::os_serde::optional_path", default)]
    pub staged: Option<PathBuf>,
    /// The old file under a second name; `None`: there was none.
    #[serde(with = "crate::sys::os_serde::optional_path", default)]
    pub kept: Option<PathBuf>,
    /// A new file's device and inode once staged: an undo removes the file at `path` only if
    /// it is this one, so never one somebody else made there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub made: Option<(u64, u64)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Journal {
    pub pid: u32,
    pub started: String,
    pub state: State,
    pub entries: Vec<Entry>,
    /// Folders made for new files, outermost first.
    #[serde(with = "crate::sys::os_serde::paths")]
    pub made_dirs: Vec<PathBuf>,
}

/// The journal of an apply that did not finish, if one is in `dir`. A journal cut off before
/// it took its name means the apply had not begun: it is removed.
pub(super) fn pending(dir: &Path) -> Result<Option<Journal>, String> {
    let path = dir.join(FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{} cannot be read ({e})", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let _ = std::fs::remove_file(dir.join(NEXT));
            Ok(None)
        }
        Err(e) => Err(format!("{} cannot be read ({e})", path.display())),
    }
}

/// Writes the journal under [`NEXT`], whole and flushed.
fn write_next(dir: &Path, journal: &Journal) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::io::Write;
    let folder = beneath::folder(dir, dir)?;
    match beneath::remove_in(&folder, Path::new(NEXT)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = beneath::create_in(&folder, Path::new(NEXT), 0o600)?;
    file.write_all(&serde_json::to_vec(journal).map_err(std::io::Error::other)?)?;
    file.sync_data()?;
    Ok(folder)
}

/// Claims `dir` for an apply: the journal takes its name only if no other apply's has it.
pub(super) fn begin(dir: &Path, journal: &Journal) -> std::io::Result<()> {
    let folder = write_next(dir, journal)?;
    let claimed = beneath::link_in(&folder, Path::new(NEXT), Path::new(FILE));
    let _ = beneath::remove_in(&folder, Path::new(NEXT));
    claimed
}

/// Records the journal's new state: written whole, renamed over the old one, and the folder
/// flushed, so that no target changes before the new state is on disk.
pub(super) fn record(dir: &Path, journal: &Journal) -> std::io::Result<()> {
    let folder = write_next(dir, journal)?;
    beneath::rename_in(&folder, Path::new(NEXT), Path::new(FILE))?;
    // `folder` is a path descriptor, which cannot be flushed.
    std::fs::File::open(dir)?.sync_all()
}

/// Removes the journal: the apply is over.
fn end(dir: &Path) -> std::io::Result<()> {
    let folder = beneath::folder(dir, dir)?;
    let _ = beneath::remove_in(&folder, Path::new(NEXT));
    beneath::remove_in(&folder, Path::new(FILE))
}

/// Flushes the filesystem of `dir` to disk.
pub(super) fn sync(dir: &Path) {
    if let Ok(folder) = std::fs::File::open(dir) {
        use std::os::fd::AsRawFd;
        // SAFETY: syncfs takes a descriptor we hold open.
        unsafe { libc::syncfs(folder.as_raw_fd()) };
    }
}

/// A relative path's folder and its last name.
pub(super) fn split(rel: &Path) -> (&Path, &Path) {
    let parent = rel.parent().unwrap_or(Path::new(""));
    let name = rel.file_name().map(Path::new).unwrap_or(Path::new(""));
    (parent, name)
}

/// Removes `name` in `rel`'s folder; one already gone (or its folder) is fine.
pub(super) fn remove_quietly(dir: &Path, rel: &Path, name: &Path) -> std::io::Result<()> {
    let folder = match beneath::folder(dir, &dir.join(split(rel).0)) {
        Ok(folder) => folder,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    gone_is_fine(beneath::remove_in(&folder, name))
}

/// Folders held open at once at most: past this many, a folder is opened when it is used, so
/// a bundle touching thousands of folders never runs out of descriptors.
const HELD: usize = 256;

/// The folders of an apply's files, opened once beneath the target (up to [`HELD`] of them):
/// a large apply works in few folders, and every name is then resolved in the folder that was
/// checked.
pub(super) struct Folders<'a> {
    dir: &'a Path,
    held: HashMap<&'a Path, std::io::Result<OwnedFd>>,
}

/// A folder, held by [`Folders`] or opened for one use.
pub(super) enum Folder<'f> {
    Held(&'f OwnedFd),
    Own(OwnedFd),
}

impl std::ops::Deref for Folder<'_> {
    type Target = OwnedFd;

    fn deref(&self) -> &OwnedFd {
        match self {
            Folder::Held(folder) => folder,
            Folder::Own(folder) => folder,
        }
    }
}

impl<'a> Folders<'a> {
    pub(super) fn open(dir: &'a Path, paths: impl IntoIterator<Item = &'a Path>) -> Folders<'a> {
        let mut held = HashMap::new();
        for path in paths {
            let parent = split(path).0;
            if held.len() < HELD || held.contains_key(parent) {
                held.entry(parent)
                    .or_insert_with(|| beneath::folder(dir, &dir.join(parent)));
            }
        }
        Folders { dir, held }
    }

    /// The folder of the file `path`, or why it could not be opened.
    pub(super) fn of(&self, path: &Path) -> std::io::Result<Folder<'_>> {
        let parent = split(path).0;
        match self.held.get(parent) {
            Some(Ok(folder)) => Ok(Folder::Held(folder)),
            Some(Err(e)) => Err(std::io::Error::new(e.kind(), e.to_string())),
            None => beneath::folder(self.dir, &self.dir.join(parent)).map(Folder::Own),
        }
    }
}

/// A name already gone is fine: an earlier settle of the same journal got that far.
fn gone_is_fine(done: std::io::Result<()>) -> std::io::Result<()> {
    match done {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        done => done,
    }
}

/// The first few failures, and how many more there were.
fn listed(failed: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = failed[..failed.len().min(SHOWN)].join("; ");
    if failed.len() > SHOWN {
        text.push_str(&format!("; and {} more", failed.len() - SHOWN));
    }
    text
}

/// Why [`settle`] did not end the apply; the journal stays for another try.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Unsettled {
    /// Some file could not be given its new (or old) content: the apply is half done.
    Files(String),
    /// Every file has its content; only second names or the journal could not be removed.
    Leftovers(String),
}

impl std::fmt::Display for Unsettled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsettled::Files(why) | Unsettled::Leftovers(why) => f.write_str(why),
        }
    }
}

/// How [`settle`] left the directory.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Settled {
    /// Every file of the apply has its new content.
    Finished(usize),
    /// Every file is as it was before the apply.
    RolledBack(usize),
}

/// Gives one entry its new content (`undo`: its old one); what failed, said.
fn settle_one(folders: &Folders, entry: &Entry, undo: bool) -> Result<(), String> {
    let folder = match folders.of(&entry.path) {
        Ok(folder) => folder,
        // Its folder is gone: a new file's folder never made, nothing to settle.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("open the folder of {}: {e}", entry.path.display())),
    };
    let name = split(&entry.path).1;
    let is_made = || -> std::io::Result<bool> {
        Ok(entry.made.is_some() && beneath::identity_in(&folder, name)? == entry.made)
    };
    // A second name already gone was renamed by an earlier settle of the same journal.
    let done = match (undo, &entry.kept, &entry.staged) {
        // Cut off while staging, the kept name is the target itself: the rename changes nothing.
        (true, Some(kept), _) => gone_is_fine(beneath::rename_in(&folder, kept, name)),
        (true, None, _) => match is_made() {
            Ok(true) => gone_is_fine(beneath::remove_in(&folder, name)),
            Ok(false) => Ok(()),
            Err(e) => Err(e),
        },
        // A file that appeared where a new one goes since the plan is never replaced.
        (false, None, Some(staged)) => match beneath::rename_new_in(&folder, staged, name) {
            // An earlier settle linked it there and stopped before the staged name went.
            Err(e)
                if e.kind() == std::io::ErrorKind::AlreadyExists && is_made().unwrap_or(false) =>
            {
                gone_is_fine(beneath::remove_in(&folder, staged))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(format!(
                    "finish {}: a file was created there after the bundle was checked; move it away first",
                    entry.path.display()
                ));
            }
            renamed => gone_is_fine(renamed),
        },
        (false, Some(_), Some(staged)) => gone_is_fine(beneath::rename_in(&folder, staged, name)),
        (false, _, None) => gone_is_fine(beneath::remove_in(&folder, name)),
    };
    done.map_err(|e| {
        let what = if undo { "put back" } else { "finish" };
        format!("{what} {}: {e}", entry.path.display())
    })
}

/// Finishes the journal's apply (`rollback`: undoes it), removes every staged and kept file
/// and the journal. An apply cut off while staging changed no target, and one cut off while
/// being undone is undone, whatever `rollback` says. What could not be done is named; the
/// journal then stays for another try.
pub(super) fn settle(dir: &Path, journal: &Journal, rollback: bool) -> Result<Settled, Unsettled> {
    let replacing = matches!(journal.state, State::Committing | State::Verifying);
    let undo = rollback || !replacing;
    if undo && replacing {
        let undoing = Journal {
            state: State::RollingBack,
            ..journal.clone()
        };
        record(dir, &undoing)
            .map_err(|e| Unsettled::Files(format!("record the undo in {FILE}: {e}")))?;
    }
    replace(dir, journal, undo)?;
    let count = journal.entries.len();
    let settled = if undo {
        Settled::RolledBack(count)
    } else {
        Settled::Finished(count)
    };
    remove_second_names(dir, journal, undo).map(|()| settled)
}

/// Gives every target its new content (`undo`: its old one), each entry on its own, so on
/// every core.
fn replace(dir: &Path, journal: &Journal, undo: bool) -> Result<(), Unsettled> {
    let folders = Folders::open(dir, journal.entries.iter().map(|e| e.path.as_path()));
    let failed: Vec<String> = journal
        .entries
        .par_iter()
        .filter_map(|entry| settle_one(&folders, entry, undo).err())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Unsettled::Files(listed(&failed)))
    }
}

/// Gives every target of a [`State::Verifying`] journal its new content and keeps the old
/// files under their second names: the journal stays, so an apply cut off during its
/// verification is rolled back by `--recover`, until [`release`] ends it.
pub(super) fn commit_held(dir: &Path, journal: &Journal) -> Result<(), Unsettled> {
    replace(dir, journal, false)
}

/// Ends a held apply as its files are now (verified, or put back by the caller): the second
/// names and the journal go, and no target is touched.
pub(super) fn release(dir: &Path, journal: &Journal) -> Result<(), Unsettled> {
    remove_second_names(dir, journal, false)
}

/// Removes the staged and kept names and, `undo`ne, the folders the apply made; then the
/// journal.
fn remove_second_names(dir: &Path, journal: &Journal, undo: bool) -> Result<(), Unsettled> {
    let folders = Folders::open(dir, journal.entries.iter().map(|e| e.path.as_path()));
    // Finished, every staged copy has taken its name. Undone, both second names go: renaming
    // a kept copy over another link of the same file (one staging never changed) leaves both.
    let failed: Vec<String> = journal
        .entries
        .par_iter()
        .flat_map_iter(|entry| {
            let staged = entry.staged.iter().filter(|_| undo);
            staged.chain(&entry.kept).filter_map(|name| {
                let removed = folders
                    .of(&entry.path)
                    .and_then(|folder| beneath::remove_in(&folder, name));
                gone_is_fine(removed).err().map(|e| {
                    format!(
                        "remove the staged or kept copy of {}: {e}",
                        entry.path.display()
                    )
                })
            })
        })
        .collect();
    if undo {
        for made in journal.made_dirs.iter().rev() {
            // Only if empty: a folder someone filled since stays.
            let _ = std::fs::remove_dir(dir.join(made));
        }
    }
    if !failed.is_empty() {
        return Err(Unsettled::Leftovers(listed(&failed)));
    }
    sync(dir);
    end(dir).map_err(|e| Unsettled::Leftovers(format!("remove {FILE}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(path: &Path) -> (u64, u64) {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(path).unwrap();
        (meta.dev(), meta.ino())
    }

    /// New files `names`, staged as a committing apply leaves them (the journal written).
    fn committing(root: &Path, names: &[&str]) -> Journal {
        let mut journal = Journal {
            pid: 1,
            started: String::new(),
            state: State::Committing,
            entries: Vec::new(),
            made_dirs: Vec::new(),
        };
        for name in names {
            let staged = PathBuf::from(format!(".staged-{name}"));
            std::fs::write(root.join(&staged), b"bundle\n").unwrap();
            journal.entries.push(Entry {
                path: PathBuf::from(name),
                made: Some(identity(&root.join(&staged))),
                staged: Some(staged),
                kept: None,
            });
        }
        record(root, &journal).unwrap();
        journal
    }

    fn names(root: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A committing apply meets a file created where a new one goes (after staging checked
    /// the place was free): finishing stops there, and undoing it, even twice (the first undo
    /// cut off before it removed the journal), removes only what the apply made.
    #[test]
    fn a_file_that_appears_during_the_commit_is_never_replaced_nor_removed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let journal = committing(&root, &["made.txt", "theirs.txt"]);
        std::fs::write(root.join("theirs.txt"), b"mine\n").unwrap();
        let failed = settle(&root, &journal, false).unwrap_err().to_string();
        assert!(
            failed.contains("theirs.txt: a file was created there"),
            "{failed}"
        );
        assert_eq!(std::fs::read(root.join("theirs.txt")).unwrap(), b"mine\n");
        assert_eq!(pending(&root).unwrap().unwrap().state, State::Committing);
        assert_eq!(settle(&root, &journal, true), Ok(Settled::RolledBack(2)));
        assert_eq!(names(&root), ["theirs.txt"]);
        // The same undo again, as a plain `--recover` finds it after a crash just before the
        // journal went: an undo that began is finished as an undo.
        let undoing = Journal {
            state: State::RollingBack,
            ..journal.clone()
        };
        record(&root, &undoing).unwrap();
        assert_eq!(settle(&root, &undoing, false), Ok(Settled::RolledBack(2)));
        assert_eq!(names(&root), ["theirs.txt"]);
        assert_eq!(std::fs::read(root.join("theirs.txt")).unwrap(), b"mine\n");
    }

    /// Finishing that gives every file its content but cannot remove a kept name says so as
    /// such: the apply is done, not half done, and must not be undone for it.
    #[test]
    fn a_finish_that_leaves_only_a_second_name_is_not_half_done() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), b"old\n").unwrap();
        std::fs::write(root.join(".staged-a.txt"), b"new\n").unwrap();
        // A folder where the kept name is: unlinking it fails.
        std::fs::create_dir(root.join(".kept-a.txt")).unwrap();
        let journal = Journal {
            pid: 1,
            started: String::new(),
            state: State::Committing,
            entries: vec![Entry {
                path: PathBuf::from("a.txt"),
                staged: Some(PathBuf::from(".staged-a.txt")),
                kept: Some(PathBuf::from(".kept-a.txt")),
                made: None,
            }],
            made_dirs: Vec::new(),
        };
        record(&root, &journal).unwrap();
        let failed = settle(&root, &journal, false).unwrap_err();
        assert!(matches!(failed, Unsettled::Leftovers(_)), "{failed:?}");
        assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"new\n");
        assert!(pending(&root).unwrap().is_some(), "the journal stays");
    }

    /// Where a file system has no RENAME_NOREPLACE a new file is linked, then its staged name
    /// removed: a settle cut off between the two finds both names on one file, and finishing
    /// or undoing it goes on from there.
    #[test]
    fn a_new_file_left_under_two_names_is_finished_or_undone() {
        for undo in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().canonicalize().unwrap();
            let journal = committing(&root, &["a.txt"]);
            std::fs::hard_link(root.join(".staged-a.txt"), root.join("a.txt")).unwrap();
            let settled = settle(&root, &journal, undo).unwrap();
            if undo {
                assert_eq!(settled, Settled::RolledBack(1));
                assert!(names(&root).is_empty(), "{:?}", names(&root));
            } else {
                assert_eq!(settled, Settled::Finished(1));
                assert_eq!(names(&root), ["a.txt"]);
                assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"bundle\n");
            }
        }
    }

    #[test]
    fn folders_past_the_held_ones_are_opened_when_used() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let paths: Vec<PathBuf> = (0..HELD + 20)
            .map(|i| PathBuf::from(format!("d{i}/f.txt")))
            .collect();
        for path in &paths {
            std::fs::create_dir_all(root.join(split(path).0)).unwrap();
        }
        let folders = Folders::open(&root, paths.iter().map(PathBuf::as_path));
        assert_eq!(folders.held.len(), HELD);
        assert!(matches!(folders.of(&paths[0]), Ok(Folder::Held(_))));
        let last = folders.of(&paths[HELD + 19]).unwrap();
        assert!(matches!(last, Folder::Own(_)));
        beneath::create_in(&last, Path::new("f.txt"), 0o644).unwrap();
        assert!(root.join(&paths[HELD + 19]).is_file());
        assert!(folders.of(Path::new("missing/f.txt")).is_err());
    }
}
