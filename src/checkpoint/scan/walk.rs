//! The walk of the project a snapshot starts with: every file git would not ignore, with its
//! stat. It runs before each prompt and after each Bash call, so it is the floor of what a
//! checkpoint costs on a project ouro knows. It reads each folder once and stats each entry
//! through the folder's descriptor (one name to resolve, not the whole path), on one thread:
//! on a thousand files that is a third of what the `ignore` crate's general parallel walker
//! took, thread start-up included. The ignore rules are git's: each folder's `.gitignore`
//! relative to it, deeper files first, `info/exclude` of the project's repository last.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Folders deeper than this are left out: each level of the walk takes stack, and a cloned
/// repository could nest thousands to crash whatever walks it recursively.
pub(super) const MAX_DEPTH: usize = 256;

/// Why a walk gave up.
pub(super) enum Stop {
    /// It found more than its limit of files.
    TooMany,
    /// The disk said something other than "not there" or "not yours": a snapshot that went on
    /// would take the folder for empty (and a rewind to it would delete its files).
    Failed(std::io::Error),
}

/// What a folder or a file that cannot be looked at means: git leaves out what is gone or
/// may not be read; anything else stops the walk.
fn skipped(error: std::io::Error) -> Result<(), Stop> {
    use std::io::ErrorKind::{NotADirectory, NotFound, PermissionDenied};
    match error.kind() {
        NotFound | PermissionDenied | NotADirectory => Ok(()),
        // A path longer than the system takes: git cannot add it either.
        _ if error.raw_os_error() == Some(libc::ENAMETOOLONG) => Ok(()),
        _ => Err(Stop::Failed(error)),
    }
}

/// A file (or link) the walk found: its path relative to the root, and its stat.
pub(super) type Found = (Vec<u8>, std::fs::Metadata);

/// Every file and link under `root` that git would not ignore, leaving out what `excludes`
/// (anchored at the root) matches whatever the project's own rules say, `.git`, and nested
/// repositories (git records those as a link to a commit, not as files).
pub(super) fn walk(root: &Path, excludes: &Gitignore, limit: usize) -> Result<Vec<Found>, Stop> {
    let mut walker = Walker {
        excludes,
        repo_excludes: repo_excludes(root),
        rules: Vec::new(),
        depth: 0,
        found: Vec::new(),
        limit,
    };
    walker.folder(&mut root.to_path_buf(), &mut Vec::new())?;
    Ok(walker.found)
}

struct Walker<'a> {
    excludes: &'a Gitignore,
    /// `info/exclude` of the project's git repository, if it is one.
    repo_excludes: Gitignore,
    /// The `.gitignore` of each folder on the way down that has one: where it is (the length
    /// of its relative path) and its rules.
    rules: Vec<(usize, Gitignore)>,
    /// How many folders down the walk is.
    depth: usize,
    found: Vec<Found>,
    limit: usize,
}

impl Walker<'_> {
    /// Walks the folder at `full` (`rel` from the root; empty for the root itself).
    fn folder(&mut self, full: &mut PathBuf, rel: &mut Vec<u8>) -> Result<(), Stop> {
        let entries = match std::fs::read_dir(&*full) {
            Ok(entries) => entries,
            // The project itself must be read, or the snapshot would hold nothing.
            Err(e) if rel.is_empty() => return Err(Stop::Failed(e)),
            Err(e) => return skipped(e),
        };
        let entries = entries
            .collect::<Result<Vec<std::fs::DirEntry>, _>>()
            .map_err(Stop::Failed)?;
        if !rel.is_empty() && entries.iter().any(|e| e.file_name() == ".git") {
            return Ok(());
        }
        // git reads no `.gitignore` through a link.
        let rules = entries
            .iter()
            .any(|e| e.file_name() == ".gitignore" && e.file_type().is_ok_and(|t| t.is_file()));
        if rules {
            let mut builder = GitignoreBuilder::new(&*full);
            builder.add(full.join(".gitignore"));
            let matcher = builder.build().unwrap_or_else(|_| Gitignore::empty());
            self.rules.push((rel.len(), matcher));
        }
        let walked = self.entries(&entries, full, rel);
        if rules {
            self.rules.pop();
        }
        walked
    }

    fn entries(
        &mut self,
        entries: &[std::fs::DirEntry],
        full: &mut PathBuf,
        rel: &mut Vec<u8>,
    ) -> Result<(), Stop> {
        let base = rel.len();
        for entry in entries {
            let name = entry.file_name();
            if name == ".git" {
                continue;
            }
            let kind = match entry.file_type() {
                Ok(kind) => kind,
                Err(e) => {
                    skipped(e)?;
                    continue;
                }
            };
            let is_dir = kind.is_dir();
            if !is_dir && !kind.is_file() && !kind.is_symlink() {
                continue;
            }
            rel.truncate(base);
            if base > 0 {
                rel.push(b'/');
            }
            rel.extend_from_slice(name.as_bytes());
            if self.ignored(rel, is_dir) {
                continue;
            }
            if is_dir {
                if self.depth >= MAX_DEPTH {
                    continue;
                }
                full.push(&name);
                self.depth += 1;
                let walked = self.folder(full, rel);
                self.depth -= 1;
                full.pop();
                walked?;
                continue;
            }
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                Err(e) => {
                    skipped(e)?;
                    continue;
                }
            };
            if self.found.len() >= self.limit {
                return Err(Stop::TooMany);
            }
            self.found.push((rel.clone(), meta));
        }
        rel.truncate(base);
        Ok(())
    }

    /// Whether `rel` is left out: by ouro's own exclusions, else by the nearest rule of the
    /// folders' `.gitignore` files that matches it, else by the repository's `info/exclude`.
    fn ignored(&self, rel: &[u8], is_dir: bool) -> bool {
        if self.excludes.matched(path(rel), is_dir).is_ignore() {
            return true;
        }
        for (at, rules) in self.rules.iter().rev() {
            let below = if *at == 0 { rel } else { &rel[at + 1..] };
            match rules.matched(path(below), is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        self.repo_excludes.matched(path(rel), is_dir).is_ignore()
    }
}

fn path(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

/// The `info/exclude` rules of the repository the project at `root` is (its `.git` folder, or
/// the folder a `.git` file names, as a worktree has).
fn repo_excludes(root: &Path) -> Gitignore {
    let Some(git_dir) = crate::sys::git::own_git_dir(root) else {
        return Gitignore::empty();
    };
    let mut builder = GitignoreBuilder::new(root);
    builder.add(crate::sys::git::common_dir(&git_dir).join("info/exclude"));
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}
