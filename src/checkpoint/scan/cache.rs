//! The stat cache on disk: what each file looked like when it was last hashed, saved beside
//! the shadow repository so that a new session's first snapshot of a known project reads only
//! what changed. It is read at the start of every session, so it is binary, fixed-width but
//! for the path: a ten-thousand-file project's cache loads in a copy, not a parse.
//!
//! `ouro-stat-cache 2\n`, then per file, little-endian: mode u32, object id (20 bytes), size
//! u64, mtime and ctime (ns) i64, inode u64, path length u32, path.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Entry, Stat};

const MAGIC: &[u8] = b"ouro-stat-cache 2\n";

/// The cache in `file`; empty when there is none, or it is of another version or damaged
/// (every file is then hashed once more).
pub(super) fn load(file: &Path) -> BTreeMap<Vec<u8>, Entry> {
    let Ok(bytes) = std::fs::read(file) else {
        return BTreeMap::new();
    };
    let Some(mut rest) = bytes.strip_prefix(MAGIC) else {
        return BTreeMap::new();
    };
    let mut entries = Vec::new();
    while !rest.is_empty() {
        let Some((path, entry, after)) = record(rest) else {
            return BTreeMap::new();
        };
        entries.push((path.to_vec(), entry));
        rest = after;
    }
    entries.into_iter().collect()
}

fn record(bytes: &[u8]) -> Option<(&[u8], Entry, &[u8])> {
    let (head, rest) = bytes.split_at_checked(60)?;
    let word = |at: usize| -> Option<[u8; 8]> { head.get(at..at + 8)?.try_into().ok() };
    let mode = u32::from_le_bytes(head.get(0..4)?.try_into().ok()?);
    let oid = head.get(4..24)?.try_into().ok()?;
    let stat = Stat {
        size: u64::from_le_bytes(word(24)?),
        mtime_ns: i64::from_le_bytes(word(32)?),
        ctime_ns: i64::from_le_bytes(word(40)?),
        ino: u64::from_le_bytes(word(48)?),
    };
    let len = u32::from_le_bytes(head.get(56..60)?.try_into().ok()?) as usize;
    let (path, rest) = rest.split_at_checked(len)?;
    Some((path, Entry { mode, oid, stat }, rest))
}

/// Saves `entries` to `file`, written aside and renamed (a reader sees the old or the new).
pub(super) fn save(file: &Path, entries: &BTreeMap<Vec<u8>, Entry>) {
    let mut out = Vec::with_capacity(MAGIC.len() + entries.len() * 100);
    out.extend_from_slice(MAGIC);
    for (path, e) in entries {
        let Ok(len) = u32::try_from(path.len()) else {
            continue;
        };
        out.extend_from_slice(&e.mode.to_le_bytes());
        out.extend_from_slice(&e.oid);
        out.extend_from_slice(&e.stat.size.to_le_bytes());
        out.extend_from_slice(&e.stat.mtime_ns.to_le_bytes());
        out.extend_from_slice(&e.stat.ctime_ns.to_le_bytes());
        out.extend_from_slice(&e.stat.ino.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(path);
    }
    let aside = file.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
    if std::fs::write(&aside, &out).is_err() || std::fs::rename(&aside, file).is_err() {
        let _ = std::fs::remove_file(&aside);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_comes_back_as_saved_and_a_damaged_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cache");
        let entry = |n: u8| Entry {
            mode: 0o100644 + u32::from(n),
            oid: [n; 20],
            stat: Stat {
                size: u64::from(n) << 40,
                mtime_ns: -i64::from(n),
                ctime_ns: i64::MAX - i64::from(n),
                ino: u64::MAX - u64::from(n),
            },
        };
        let entries: BTreeMap<Vec<u8>, Entry> = [
            (b"a.rs".to_vec(), entry(1)),
            ("dir/é \n name".as_bytes().to_vec(), entry(2)),
            (vec![b'x'; 5000], entry(3)),
        ]
        .into_iter()
        .collect();
        save(&file, &entries);
        assert_eq!(load(&file), entries);
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() - 1]).unwrap();
        assert!(load(&file).is_empty(), "a cut record");
        std::fs::write(&file, b"100644 abc 1 2 3 4 a.rs\0").unwrap();
        assert!(load(&file).is_empty(), "the old text format");
        assert!(load(&dir.path().join("none")).is_empty());
    }
}
