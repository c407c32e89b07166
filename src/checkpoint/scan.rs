//! The project's files as a git tree, kept up to date in process: a walk that honours the
//! project's ignore rules as git does, a stat cache (size, times, inode) so that a file is read
//! and hashed only when it changed, and trees rebuilt from memory. The cache is saved beside the
//! shadow repository, so a new session's first snapshot of a known project reads only what
//! changed since the last one.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::keep::Kept;
use super::objects::{self, Kind, Oid, OidSet, Store};
use super::pack::{self, PackWriter};
use super::read;
use super::writer::{Batch, Writer};

mod cache;
mod trees;
mod walk;

/// A project with more files than this (not ignored) gets no checkpoints: each would cost too
/// much.
pub(super) const MAX_FILES: usize = 100_000;

/// The project has more than [`MAX_FILES`] files: no place for snapshots.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct TooManyFiles(String);

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

/// What files were before a call that is writing them started, kept for a snapshot already
/// under way when the call came (see `Checkpoints::take_before_write`): (content, mode), or
/// `None` for a file that did not exist. A snapshot applies them after it has looked at the
/// disk, so whatever it read there, the file goes into its tree as it was before the call.
pub(super) type Preimages = std::sync::Mutex<BTreeMap<Vec<u8>, Preimage>>;
pub(super) type Preimage = Option<(Vec<u8>, u32)>;

pub(super) struct Scan {
    root: PathBuf,
    preimages: std::sync::Arc<Preimages>,
    /// The files the last snapshot took from [`Preimages`]: the disk holds something newer,
    /// which the next snapshot must read.
    pub(crate) overridden: Vec<String>,
    store: Store,
    cache_file: PathBuf,
    exclude_file: PathBuf,
    entries: BTreeMap<Vec<u8>, Entry>,
    /// The tree of each folder as the last snapshot made it, so that the next one remakes only
    /// the folders above what changed; empty when it must make them all.
    trees: HashMap<Vec<u8>, Oid>,
    /// Objects known to be in the store (written or seen in this process).
    known: OidSet,
    max_file_bytes: u64,
    loaded: bool,
    /// Whether the entries changed since the cache was saved.
    dirty: bool,
    /// When the cache was last saved: it is for the next session, so once a minute will do.
    saved: Option<std::time::Instant>,
    git_dir: PathBuf,
    /// The objects in the repository's packs, read when first needed.
    packed: Option<OidSet>,
    /// This snapshot's new objects, held for the writer, or streamed into a pack when many.
    pending: Batch,
    pending_bytes: usize,
    pack: Option<PackWriter>,
    writer: std::sync::Arc<Writer>,
}

impl Scan {
    pub(super) fn new(
        root: &Path,
        git_dir: &Path,
        max_file_bytes: u64,
        writer: std::sync::Arc<Writer>,
        preimages: std::sync::Arc<Preimages>,
    ) -> Scan {
        Scan {
            root: root.to_path_buf(),
            preimages,
            overridden: Vec::new(),
            store: Store::new(git_dir),
            cache_file: git_dir.join(CACHE_FILE),
            exclude_file: git_dir.join("info/exclude"),
            entries: BTreeMap::new(),
            trees: HashMap::new(),
            known: OidSet::default(),
            max_file_bytes,
            loaded: false,
            dirty: false,
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
    pub(super) fn everything(&mut self) -> std::io::Result<Oid> {
        // Taken back only when this ends well: a walk that stops half-way leaves the next
        // snapshot to remake every tree.
        let trees = std::mem::take(&mut self.trees);
        if !self.loaded {
            self.loaded = true;
            self.entries = cache::load(&self.cache_file);
        }
        let started = now_ns();
        let mut found = match walk::walk(&self.root, &self.excludes(), MAX_FILES) {
            Ok(found) => found,
            Err(walk::Stop::TooMany) => {
                self.finish(Vec::new())?;
                return Err(std::io::Error::other(TooManyFiles(format!(
                    "{} holds more than {MAX_FILES} files that git would not ignore",
                    self.root.display()
                ))));
            }
            Err(walk::Stop::Failed(e)) => return Err(e),
        };
        // In order, the entries are built in one pass rather than inserted one by one.
        found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut seen = Vec::with_capacity(found.len());
        let mut misses = Vec::new();
        for (rel, meta) in found {
            if let Some(e) = self.cached(&rel, &meta) {
                seen.push((rel, e));
            } else if !self.too_large(&rel, &meta) {
                let full = self.root.join(OsStr::from_bytes(&rel));
                misses.push((rel, full, meta));
            }
        }
        if misses.len() >= read::PARALLEL_FROM {
            self.read_many(misses, &mut seen, started)?;
        } else {
            for (rel, full, meta) in misses {
                if let Some(e) = self.look(&rel, &full, &meta, started)? {
                    seen.push((rel, e));
                }
            }
        }
        let seen: BTreeMap<Vec<u8>, Entry> = seen.into_iter().collect();
        let mut changed = changed(&self.entries, &seen);
        if !changed.is_empty() {
            self.dirty = true;
        }
        self.entries = seen;
        changed.extend(self.apply_preimages()?);
        self.trees = trees;
        let tree = self.update_trees(&changed)?;
        let stale = self
            .saved
            .is_none_or(|at| at.elapsed() > std::time::Duration::from_secs(60));
        if self.dirty && stale {
            cache::save(&self.cache_file, &self.entries);
            self.dirty = false;
            self.saved = Some(std::time::Instant::now());
        }
        Ok(tree)
    }

    /// Looks only at `paths` (relative to the root), which Edit or Write said they changed.
    /// `None` when that is not enough: a path that is new to the snapshots (its ignore rules
    /// must be consulted) or no longer a file.
    pub(super) fn only(&mut self, paths: &[String]) -> std::io::Result<Option<Oid>> {
        if self.entries.is_empty() {
            return Ok(None);
        }
        let started = now_ns();
        // Taken back only when this ends well: entries changed by a call that stops half-way
        // leave the next snapshot to remake every tree.
        let trees = std::mem::take(&mut self.trees);
        let mut changed = Vec::with_capacity(paths.len());
        for path in paths {
            let rel = path.trim_start_matches("./").as_bytes().to_vec();
            if !self.entries.contains_key(&rel) {
                return Ok(None);
            }
            changed.push(rel.clone());
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
        changed.extend(self.apply_preimages()?);
        self.trees = trees;
        self.update_trees(&changed).map(Some)
    }

    /// Puts each held preimage in place of what was read from the disk; returns the paths of
    /// those held.
    fn apply_preimages(&mut self) -> std::io::Result<Vec<Vec<u8>>> {
        self.overridden.clear();
        let held: Vec<(Vec<u8>, Preimage)> = crate::sys::sync::lock(&self.preimages)
            .iter()
            .map(|(rel, pre)| (rel.clone(), pre.clone()))
            .collect();
        let rels = held.iter().map(|(rel, _)| rel.clone()).collect();
        for (rel, pre) in held {
            match pre {
                // Only where the disk has the file too: one the snapshots ignore stays out.
                Some((data, mode)) if self.entries.contains_key(&rel) => {
                    let oid = self.put(Kind::Blob, &data)?;
                    let stat = Stat::default();
                    self.entries.insert(rel.clone(), Entry { mode, oid, stat });
                }
                Some(_) => continue,
                None => {
                    if self.entries.remove(&rel).is_none() {
                        continue;
                    }
                }
            }
            self.dirty = true;
            self.overridden
                .push(String::from_utf8_lossy(&rel).into_owned());
        }
        Ok(rels)
    }

    /// Forgets which objects were taken to be stored, after a write failed: each is looked for
    /// in the repository again, and written again if it is not there.
    pub(super) fn forget_stored(&mut self) {
        self.known.clear();
        self.trees.clear();
        self.packed = None;
    }

    /// Adds an object to this snapshot's writes, unless the repository has it, and returns
    /// its id (a file whose stat changed but not its bytes is not stored twice).
    pub(super) fn put(&mut self, kind: Kind, data: &[u8]) -> std::io::Result<Oid> {
        let oid = objects::id(kind, data);
        if self.claim(&oid) {
            return Ok(oid);
        }
        self.known.insert(oid);
        if let Some(pack) = &mut self.pack {
            pack.add(kind, data)?;
            return Ok(oid);
        }
        self.pending.objects.push((kind, data.to_vec()));
        self.pending_bytes += data.len();
        if self.pending.objects.len() > PENDING_OBJECTS || self.pending_bytes > PENDING_BYTES {
            self.pack_for_many()?;
        }
        Ok(oid)
    }

    /// Ends this snapshot's writes: its objects, then the lines that keep its commit, in
    /// order after every earlier snapshot's. A pack that was streamed is finished here; the
    /// rest goes to the background writer.
    pub(super) fn finish(&mut self, kept: Vec<Kept>) -> std::io::Result<()> {
        if let Some(pack) = self.pack.take() {
            pack.finish()?;
        }
        let mut batch = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        batch.kept = kept;
        if batch.objects.is_empty() && batch.kept.is_empty() {
            return Ok(());
        }
        self.writer.send(batch)
    }

    /// Whether the repository holds `oid`, packed or loose. The packs' index is read once and
    /// asked first: most objects are in a pack, and a miss on a loose path costs a lookup on
    /// disk for every file of a fresh session's first snapshot.
    fn has(&mut self, oid: &Oid) -> bool {
        self.known.contains(oid) || self.in_packs(oid) || self.store.has(oid)
    }

    /// Whether the repository holds `oid`, which this snapshot is about to name: a loose
    /// object is made new (see [`Store::freshen`]) and taken as known from then on.
    pub(super) fn claim(&mut self, oid: &Oid) -> bool {
        let held = self.known.contains(oid) || self.in_packs(oid) || self.store.freshen(oid);
        if held {
            self.known.insert(*oid);
        }
        held
    }

    fn in_packs(&mut self, oid: &Oid) -> bool {
        self.packed
            .get_or_insert_with(|| pack::packed_ids(&self.git_dir))
            .contains(oid)
    }

    /// The cached entry for a file whose stat and mode are unchanged and whose blob is stored.
    fn cached(&mut self, rel: &[u8], meta: &std::fs::Metadata) -> Option<Entry> {
        let stat = Stat::of(meta);
        let prev = self.entries.get(rel).copied()?;
        if prev.mode == read::mode_of(meta)
            && prev.stat == stat
            && !stat.is_unknown()
            && self.has(&prev.oid)
        {
            self.known.insert(prev.oid);
            return Some(prev);
        }
        None
    }

    /// Whether a file not yet cached is left out: a large one that is new to the snapshots (a
    /// file already in them is kept up to date).
    fn too_large(&self, rel: &[u8], meta: &std::fs::Metadata) -> bool {
        !meta.file_type().is_symlink()
            && meta.len() > self.max_file_bytes
            && !self.entries.contains_key(rel)
    }

    /// The entry for one file: the cached one when its stat is unchanged, else read and stored.
    fn look(
        &mut self,
        rel: &[u8],
        full: &Path,
        meta: &std::fs::Metadata,
        started: i64,
    ) -> std::io::Result<Option<Entry>> {
        if let Some(entry) = self.cached(rel, meta) {
            return Ok(Some(entry));
        }
        if self.too_large(rel, meta) {
            return Ok(None);
        }
        let Some(data) = read::content(full, meta)? else {
            return Ok(None);
        };
        let oid = self.put(Kind::Blob, &data)?;
        Ok(Some(self.fresh(meta, oid, started)))
    }

    /// The entry of a file just read as `oid`; a stat too recent to trust is not kept.
    fn fresh(&mut self, meta: &std::fs::Metadata, oid: Oid, started: i64) -> Entry {
        self.dirty = true;
        let mut stat = Stat::of(meta);
        if stat.mtime_ns >= started - RACY_NS || stat.ctime_ns >= started - RACY_NS {
            stat = Stat::default();
        }
        Entry {
            mode: read::mode_of(meta),
            oid,
            stat,
        }
    }

    /// Reads `misses` on every core straight into this snapshot's pack.
    fn read_many(
        &mut self,
        misses: Vec<(Vec<u8>, std::path::PathBuf, std::fs::Metadata)>,
        seen: &mut Vec<(Vec<u8>, Entry)>,
        started: i64,
    ) -> std::io::Result<()> {
        let (rels, files): (Vec<_>, Vec<_>) = misses
            .into_iter()
            .map(|(rel, full, meta)| (rel, (full, meta)))
            .unzip();
        read::many(&files, |index, result| {
            let Some(read::Packed { oid, record }) = result? else {
                return Ok(());
            };
            // An object in a pack already (the files were read again because the stat cache
            // was lost, or their times changed) is not packed twice.
            if self.known.insert(oid) && !self.in_packs(&oid) {
                self.pack_for_many()?.add_record(oid, record)?;
            }
            let entry = self.fresh(&files[index].1, oid, started);
            seen.push((rels[index].clone(), entry));
            Ok(())
        })
    }

    /// The pack this snapshot streams into, started (with what was pending) if need be: a
    /// snapshot with many new objects writes one pack rather than loose objects.
    fn pack_for_many(&mut self) -> std::io::Result<&mut PackWriter> {
        if self.pack.is_none() {
            let mut pack = PackWriter::start(&self.git_dir)?;
            for (kind, data) in std::mem::take(&mut self.pending.objects) {
                pack.add(kind, &data)?;
            }
            self.pending_bytes = 0;
            self.pack = Some(pack);
        }
        self.pack
            .as_mut()
            .ok_or_else(|| std::io::Error::other("no pack to write to"))
    }

    /// The shadow repository's own exclusions (ouro's home inside the project, large files
    /// kept out), anchored at the project root as git reads `info/exclude`.
    fn excludes(&self) -> Gitignore {
        let mut builder = GitignoreBuilder::new(&self.root);
        builder.add(&self.exclude_file);
        builder.build().unwrap_or_else(|_| Gitignore::empty())
    }
}

/// The stat cache's file in the shadow repository; pruning removes it with the objects it names.
pub(super) const CACHE_FILE: &str = "ouro-stat-cache";

/// The paths whose entry is not the same in `old` and `new` (added, removed, or another
/// object or mode): the trees above them are the ones to remake.
fn changed(old: &BTreeMap<Vec<u8>, Entry>, new: &BTreeMap<Vec<u8>, Entry>) -> Vec<Vec<u8>> {
    use std::cmp::Ordering;
    let mut out = Vec::new();
    let (mut old, mut new) = (old.iter().peekable(), new.iter().peekable());
    loop {
        let order = match (old.peek(), new.peek()) {
            (None, None) => return out,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((a, _)), Some((b, _))) => a.cmp(b),
        };
        match order {
            Ordering::Less => out.extend(old.next().map(|(path, _)| path.clone())),
            Ordering::Greater => out.extend(new.next().map(|(path, _)| path.clone())),
            Ordering::Equal => {
                if let (Some((path, a)), Some((_, b))) = (old.next(), new.next())
                    && (a.mode, a.oid) != (b.mode, b.oid)
                {
                    out.push(path.clone());
                }
            }
        }
    }
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
mod tests;
