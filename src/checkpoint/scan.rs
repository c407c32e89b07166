//! The project's files as a git tree, kept up to date in process: a walk that honours the
//! project's ignore rules as git does, a stat cache (size, times, inode) so that a file is read
//! and hashed only when it changed, and trees rebuilt from memory. The cache is saved beside the
//! shadow repository, so a new session's first snapshot of a known project reads only what
//! changed since the last one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::objects::{
    self, Kind, MODE_EXEC, MODE_FILE, MODE_LINK, MODE_TREE, Oid, Store, TreeEntry,
};
use super::pack::{self, PackWriter};
use super::writer::{Batch, Writer};

/// A project with more files than this (not ignored) gets no checkpoints: each would cost too
/// much.
pub const MAX_FILES: usize = 100_000;

/// The project has more than [`MAX_FILES`] files: no place for snapshots.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TooManyFiles(String);

/// Past this many new objects (or bytes) in one snapshot, they are streamed into a pack here
/// rather than held in memory for the background writer: a first snapshot reads the whole
/// project.
const PENDING_OBJECTS: usize = 256;
const PENDING_BYTES: usize = 8 << 20;

/// What a file looked like when it was last hashed; all zero means "hash it again".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Stat {
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
}

impl Stat {
    fn of(meta: &std::fs::Metadata) -> Stat {
        Stat {
            size: meta.len(),
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
            ctime_ns: meta.ctime().saturating_mul(1_000_000_000) + meta.ctime_nsec(),
            ino: meta.ino(),
        }
    }

    fn is_unknown(&self) -> bool {
        *self == Stat::default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    mode: u32,
    oid: Oid,
    stat: Stat,
}

/// A change too recent to trust the stat of: within this much of the snapshot (many clock
/// ticks of the file system's coarse timestamps), a second write in the same tick would keep
/// size and time, so the file is read again next time (git's "racily clean" rule).
const RACY_NS: i64 = 100_000_000;

pub struct Scan {
    root: PathBuf,
    store: Store,
    cache_file: PathBuf,
    exclude_file: PathBuf,
    entries: BTreeMap<Vec<u8>, Entry>,
    /// Objects known to be in the store (written or seen in this process).
    known: HashSet<Oid>,
    max_file_bytes: u64,
    loaded: bool,
    /// Whether the entries changed since the cache was saved.
    dirty: bool,
    /// When the cache was last saved: it is for the next session, so once a minute will do.
    saved: Option<std::time::Instant>,
    git_dir: PathBuf,
    /// The objects in the repository's packs, read when first needed.
    packed: Option<std::collections::HashMap<Oid, ()>>,
    /// This snapshot's new objects, held for the writer, or streamed into a pack when many.
    pending: Batch,
    pending_bytes: usize,
    pack: Option<PackWriter>,
    writer: std::sync::Arc<Writer>,
}

impl Scan {
    pub fn new(
        root: &Path,
        git_dir: &Path,
        max_file_bytes: u64,
        writer: std::sync::Arc<Writer>,
    ) -> Scan {
        Scan {
            root: root.to_path_buf(),
            store: Store::new(git_dir),
            cache_file: git_dir.join(CACHE_FILE),
            exclude_file: git_dir.join("info/exclude"),
            entries: BTreeMap::new(),
            known: HashSet::new(),
            max_file_bytes,
            loaded: false,
            dirty: true,
            saved: None,
            git_dir: git_dir.to_path_buf(),
            packed: None,
            pending: Batch::default(),
            pending_bytes: 0,
            pack: None,
            writer,
        }
    }

    /// Looks at every file of the project and returns the tree.
    pub fn everything(&mut self) -> std::io::Result<Oid> {
        if !self.loaded {
            self.loaded = true;
            self.entries = load(&self.cache_file);
        }
        let started = now_ns();
        let excludes = self.excludes();
        let root = self.root.clone();
        let walk = ignore::WalkBuilder::new(&root)
            .hidden(false)
            .parents(false)
            .ignore(false)
            .git_global(false)
            .git_ignore(true)
            .git_exclude(true)
            .require_git(false)
            .follow_links(false)
            .filter_entry(move |e| {
                if e.file_name() == ".git" {
                    return false;
                }
                let is_dir = e.file_type().is_some_and(|t| t.is_dir());
                // A nested repository is its own project: git records it as a link to its
                // commit, not its files.
                if is_dir && e.depth() > 0 && e.path().join(".git").exists() {
                    return false;
                }
                let rel = e.path().strip_prefix(&root).unwrap_or(e.path());
                !excludes.matched(rel, is_dir).is_ignore()
            })
            .build();
        let mut seen = BTreeMap::new();
        for entry in walk.filter_map(Result::ok) {
            if seen.len() >= MAX_FILES {
                self.finish(Vec::new())?;
                return Err(std::io::Error::other(TooManyFiles(format!(
                    "{} holds more than {MAX_FILES} files that git would not ignore",
                    self.root.display()
                ))));
            }
            let Some(file_type) = entry.file_type() else {
                continue;
            };
            if !(file_type.is_file() || file_type.is_symlink()) {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&self.root) else {
                continue;
            };
            let rel = rel.as_os_str().as_bytes().to_vec();
            let Ok(meta) = entry.metadata() else { continue };
            if let Some(e) = self.look(&rel, entry.path(), &meta, started)? {
                seen.insert(rel, e);
            }
        }
        if seen.len() != self.entries.len() {
            self.dirty = true;
        }
        self.entries = seen;
        let tree = self.write_trees()?;
        let stale = self
            .saved
            .is_none_or(|at| at.elapsed() > std::time::Duration::from_secs(60));
        if self.dirty && stale {
            self.save();
            self.dirty = false;
            self.saved = Some(std::time::Instant::now());
        }
        Ok(tree)
    }

    /// Looks only at `paths` (relative to the root), which Edit or Write said they changed.
    /// `None` when that is not enough: a path that is new to the snapshots (its ignore rules
    /// must be consulted) or no longer a file.
    pub fn only(&mut self, paths: &[String]) -> std::io::Result<Option<Oid>> {
        if self.entries.is_empty() {
            return Ok(None);
        }
        let started = now_ns();
        for path in paths {
            let rel = path.trim_start_matches("./").as_bytes().to_vec();
            if !self.entries.contains_key(&rel) {
                return Ok(None);
            }
            let full = self.root.join(path);
            match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_file() || meta.file_type().is_symlink() => {
                    // Declared as written: read again whatever the stat says.
                    if let Some(e) = self.entries.get_mut(&rel) {
                        e.stat = Stat::default();
                    }
                    match self.look(&rel, &full, &meta, started)? {
                        Some(e) => self.entries.insert(rel, e),
                        None => self.entries.remove(&rel),
                    };
                }
                Ok(_) => return Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.entries.remove(&rel);
                }
                Err(e) => return Err(e),
            }
        }
        self.write_trees().map(Some)
    }

    /// Adds a new object to this snapshot's writes and returns its id.
    pub fn put(&mut self, kind: Kind, data: &[u8]) -> std::io::Result<Oid> {
        let oid = objects::id(kind, data);
        if !self.known.insert(oid) {
            return Ok(oid);
        }
        if let Some(pack) = &mut self.pack {
            pack.add(kind, data)?;
            return Ok(oid);
        }
        self.pending.objects.push((kind, data.to_vec()));
        self.pending_bytes += data.len();
        if self.pending.objects.len() > PENDING_OBJECTS || self.pending_bytes > PENDING_BYTES {
            let mut pack = PackWriter::start(&self.git_dir)?;
            for (kind, data) in std::mem::take(&mut self.pending.objects) {
                pack.add(kind, &data)?;
            }
            self.pending_bytes = 0;
            self.pack = Some(pack);
        }
        Ok(oid)
    }

    /// Ends this snapshot's writes: its objects, then `files` (the checkpoint's ref), in
    /// order after every earlier snapshot's. A pack that was streamed is finished here; the
    /// rest goes to the background writer.
    pub fn finish(&mut self, files: Vec<(PathBuf, String)>) -> std::io::Result<()> {
        if let Some(pack) = self.pack.take() {
            pack.finish()?;
        }
        let mut batch = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        batch.files = files;
        if batch.objects.is_empty() && batch.files.is_empty() {
            return Ok(());
        }
        self.writer.send(batch, &self.git_dir)
    }

    /// Whether the repository holds `oid`, loose or packed.
    fn has(&mut self, oid: &Oid) -> bool {
        if self.known.contains(oid) || self.store.has(oid) {
            return true;
        }
        self.packed
            .get_or_insert_with(|| pack::packed_ids(&self.git_dir))
            .contains_key(oid)
    }

    /// The entry for one file: the cached one when its stat is unchanged, else read and stored.
    fn look(
        &mut self,
        rel: &[u8],
        full: &Path,
        meta: &std::fs::Metadata,
        started: i64,
    ) -> std::io::Result<Option<Entry>> {
        let link = meta.file_type().is_symlink();
        let mode = if link {
            MODE_LINK
        } else if meta.mode() & 0o100 != 0 {
            MODE_EXEC
        } else {
            MODE_FILE
        };
        let mut stat = Stat::of(meta);
        let previous = self.entries.get(rel).copied();
        if let Some(prev) = previous
            && prev.mode == mode
            && prev.stat == stat
            && !stat.is_unknown()
            && self.has(&prev.oid)
        {
            self.known.insert(prev.oid);
            return Ok(Some(prev));
        }
        // Large untracked files stay out; a file already in the snapshots is kept up to date.
        if !link && meta.len() > self.max_file_bytes && previous.is_none() {
            return Ok(None);
        }
        let data = if link {
            match std::fs::read_link(full) {
                Ok(target) => target.as_os_str().as_bytes().to_vec(),
                Err(_) => return Ok(None),
            }
        } else {
            match std::fs::read(full) {
                Ok(data) => data,
                // Unreadable or gone since the walk: left out, as `git add --ignore-errors` did.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                    ) =>
                {
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        };
        let oid = self.put(Kind::Blob, &data)?;
        self.dirty = true;
        if stat.mtime_ns >= started - RACY_NS || stat.ctime_ns >= started - RACY_NS {
            stat = Stat::default();
        }
        Ok(Some(Entry { mode, oid, stat }))
    }

    /// The tree objects of the entries, deepest folders first; returns the root's.
    fn write_trees(&mut self) -> std::io::Result<Oid> {
        let mut dirs: HashMap<Vec<u8>, Vec<Child>> = HashMap::new();
        dirs.insert(Vec::new(), Vec::new());
        for (path, entry) in &self.entries {
            let (dir, name) = split(path);
            dirs.entry(dir.to_vec())
                .or_default()
                .push((name.to_vec(), entry.mode, entry.oid));
            // Every ancestor exists, even one holding only folders.
            let mut ancestor = dir;
            while !ancestor.is_empty() {
                let (parent, _) = split(ancestor);
                dirs.entry(parent.to_vec()).or_default();
                ancestor = parent;
            }
        }
        let mut order: Vec<Vec<u8>> = dirs.keys().cloned().collect();
        order.sort_by_key(|d| {
            std::cmp::Reverse(d.iter().filter(|b| **b == b'/').count() + usize::from(!d.is_empty()))
        });
        let mut root = None;
        for dir in order {
            let children = dirs.remove(&dir).unwrap_or_default();
            let bytes = objects::tree(
                children
                    .iter()
                    .map(|(name, mode, oid)| TreeEntry {
                        mode: *mode,
                        name,
                        oid: *oid,
                    })
                    .collect(),
            );
            let oid = objects::id(Kind::Tree, &bytes);
            if !self.known.contains(&oid) {
                self.put(Kind::Tree, &bytes)?;
            }
            if dir.is_empty() {
                root = Some(oid);
            } else {
                let (parent, name) = split(&dir);
                dirs.entry(parent.to_vec())
                    .or_default()
                    .push((name.to_vec(), MODE_TREE, oid));
            }
        }
        root.ok_or_else(|| std::io::Error::other("no root tree"))
    }

    /// The shadow repository's own exclusions (ouro's home inside the project, large files
    /// kept out), anchored at the project root as git reads `info/exclude`.
    fn excludes(&self) -> Gitignore {
        let mut builder = GitignoreBuilder::new(&self.root);
        builder.add(&self.exclude_file);
        builder.build().unwrap_or_else(|_| Gitignore::empty())
    }

    /// Saves the stat cache for the next session, written aside and renamed.
    fn save(&self) {
        let mut out = Vec::with_capacity(self.entries.len() * 96);
        for (path, e) in &self.entries {
            out.extend_from_slice(
                format!(
                    "{:o} {} {} {} {} {} ",
                    e.mode,
                    objects::hex(&e.oid),
                    e.stat.size,
                    e.stat.mtime_ns,
                    e.stat.ctime_ns,
                    e.stat.ino
                )
                .as_bytes(),
            );
            out.extend_from_slice(path);
            out.push(0);
        }
        let aside = self
            .cache_file
            .with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
        if std::fs::write(&aside, &out).is_err()
            || std::fs::rename(&aside, &self.cache_file).is_err()
        {
            let _ = std::fs::remove_file(&aside);
        }
    }
}

/// One entry of a folder being made into a tree: name, mode, object.
type Child = (Vec<u8>, u32, Oid);

/// The stat cache's file in the shadow repository; pruning removes it with the objects it names.
pub const CACHE_FILE: &str = "ouro-stat-cache";

fn load(file: &Path) -> BTreeMap<Vec<u8>, Entry> {
    let Ok(bytes) = std::fs::read(file) else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for record in bytes.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let mut fields = record.splitn(7, |b| *b == b' ');
        let mut next = || {
            fields
                .next()
                .map(|f| String::from_utf8_lossy(f).into_owned())
        };
        let parsed = (|| {
            let mode = u32::from_str_radix(&next()?, 8).ok()?;
            let oid = objects::parse_hex(&next()?)?;
            let stat = Stat {
                size: next()?.parse().ok()?,
                mtime_ns: next()?.parse().ok()?,
                ctime_ns: next()?.parse().ok()?,
                ino: next()?.parse().ok()?,
            };
            Some(Entry { mode, oid, stat })
        })();
        let path = record.splitn(7, |b| *b == b' ').nth(6).map(<[u8]>::to_vec);
        if let (Some(entry), Some(path)) = (parsed, path) {
            out.insert(path, entry);
        }
    }
    out
}

/// `a/b/c` as (`a/b`, `c`); a top-level name has an empty folder.
fn split(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|b| *b == b'/') {
        Some(at) => (&path[..at], &path[at + 1..]),
        None => (&[], path),
    }
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(git_dir: &Path, tree: &Oid) -> String {
        let out = std::process::Command::new("git")
            .args(["ls-tree", "-r", &objects::hex(tree)])
            .env("GIT_DIR", git_dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split('\t').nth(1).unwrap().to_string() + "\n")
            .collect()
    }

    fn blob_of(git_dir: &Path, tree: &Oid, path: &str) -> Vec<u8> {
        let out = std::process::Command::new("git")
            .args([
                "cat-file",
                "blob",
                &format!("{}:{path}", objects::hex(tree)),
            ])
            .env("GIT_DIR", git_dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        out.stdout
    }

    #[test]
    fn snapshots_follow_git_rules_and_see_every_change() {
        let project = tempfile::tempdir().unwrap();
        let shadow = tempfile::tempdir().unwrap();
        let (root, git_dir) = (project.path(), shadow.path());
        objects::init(git_dir).unwrap();
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(".gitignore", "build/\n*.log\n");
        write("src/main.rs", "fn main() {}\n");
        write("build/out.bin", "ignored");
        write("run.log", "ignored");
        write("big.dat", &"x".repeat(2000));
        write("nested/.git/HEAD", "ref: refs/heads/main\n");
        write("nested/inner.txt", "a repository of its own");
        std::os::unix::fs::symlink("src/main.rs", root.join("link")).unwrap();
        let writer = std::sync::Arc::new(Writer::start(git_dir));
        let mut scan = Scan::new(root, git_dir, 1000, writer.clone());
        let settled = |scan: &mut Scan, tree: Oid| {
            scan.finish(Vec::new()).unwrap();
            writer.settle().unwrap();
            tree
        };
        let tree = scan.everything().unwrap();
        let first = settled(&mut scan, tree);
        assert_eq!(listing(git_dir, &first), ".gitignore\nlink\nsrc/main.rs\n");

        // Declared edits are read whatever the stat says; an unchanged tree keeps its id.
        write("src/main.rs", "fn main() { run() }\n");
        let tree = scan.only(&["src/main.rs".into()]).unwrap().unwrap();
        let edited = settled(&mut scan, tree);
        assert_ne!(edited, first);
        assert_eq!(
            blob_of(git_dir, &edited, "src/main.rs"),
            b"fn main() { run() }\n"
        );
        // A path new to the snapshots needs the ignore rules: the caller looks at everything.
        assert_eq!(scan.only(&["new.txt".into()]).unwrap(), None);

        // Changes ouro did not declare are found by the next full look, even one of the same
        // size moments after the last snapshot (its stat was too recent to trust).
        write("src/main.rs", "fn main() { ran() }\n");
        std::fs::remove_file(root.join("link")).unwrap();
        let tree = scan.everything().unwrap();
        let full = settled(&mut scan, tree);
        assert_eq!(listing(git_dir, &full), ".gitignore\nsrc/main.rs\n");
        assert_eq!(
            blob_of(git_dir, &full, "src/main.rs"),
            b"fn main() { ran() }\n"
        );

        // A new session starts from the saved cache and finds the same tree.
        let mut again = Scan::new(root, git_dir, 1000, writer.clone());
        assert_eq!(again.everything().unwrap(), full);
    }

    #[test]
    fn a_first_snapshot_of_many_files_goes_into_one_pack_git_can_read() {
        let project = tempfile::tempdir().unwrap();
        let shadow = tempfile::tempdir().unwrap();
        objects::init(shadow.path()).unwrap();
        for i in 0..300 {
            let dir = project.path().join(format!("d{}", i % 7));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
        }
        let writer = std::sync::Arc::new(Writer::start(shadow.path()));
        let mut scan = Scan::new(project.path(), shadow.path(), 1 << 20, writer.clone());
        let tree = scan.everything().unwrap();
        scan.finish(Vec::new()).unwrap();
        writer.settle().unwrap();
        assert_eq!(listing(shadow.path(), &tree).lines().count(), 300);
        assert_eq!(blob_of(shadow.path(), &tree, "d3/f10.txt"), b"file 10\n");
        let packs = std::fs::read_dir(shadow.path().join("objects/pack"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "idx")
            })
            .count();
        assert_eq!(packs, 1);
        let fsck = std::process::Command::new("git")
            .args(["fsck", "--strict", &objects::hex(&tree)])
            .env("GIT_DIR", shadow.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(
            fsck.status.success(),
            "{}",
            String::from_utf8_lossy(&fsck.stderr)
        );
    }
}
