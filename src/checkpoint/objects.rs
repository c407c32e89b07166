//! Git's object store, written in process: loose blobs, trees and commits in the shadow
//! repository, byte for byte what `git hash-object -w`, `write-tree` and `commit-tree` would
//! write, so that git itself reads them back for diffs and restores. Taking a snapshot spawns no
//! process; only a rewind (rare, and asked for) runs git.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::ZlibEncoder;

/// A SHA-1 object id.
pub(crate) type Oid = [u8; 20];

/// A set of object ids hashed by their first bytes: they are SHA-1 already, so hashing them
/// again (SipHash, the standard default) only costs time on the walk of every snapshot.
pub(crate) type OidSet = std::collections::HashSet<Oid, std::hash::BuildHasherDefault<OidHasher>>;

#[derive(Default)]
pub(crate) struct OidHasher(u64);

impl std::hash::Hasher for OidHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut first = [0u8; 8];
        let n = bytes.len().min(8);
        first[..n].copy_from_slice(&bytes[..n]);
        self.0 ^= u64::from_ne_bytes(first);
    }

    /// The length an array's hash starts with says nothing: every id is 20 bytes.
    fn write_usize(&mut self, _: usize) {}

    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Blob,
    Tree,
    Commit,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Blob => "blob",
            Kind::Tree => "tree",
            Kind::Commit => "commit",
        }
    }
}

pub fn hex(oid: &Oid) -> String {
    crate::text::hex(oid)
}

pub(crate) fn parse_hex(text: &str) -> Option<Oid> {
    let text = text.trim();
    if text.len() != 40 {
        return None;
    }
    let mut oid = [0u8; 20];
    for (i, byte) in oid.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(oid)
}

/// The id git gives `data` as an object of `kind`.
pub fn id(kind: Kind, data: &[u8]) -> Oid {
    use sha1::Digest;
    let mut ctx = sha1::Sha1::new();
    ctx.update(format!("{} {}\0", kind.name(), data.len()).as_bytes());
    ctx.update(data);
    ctx.finalize().into()
}

/// The loose objects of one repository.
pub(crate) struct Store {
    objects: PathBuf,
}

impl Store {
    pub(crate) fn new(git_dir: &Path) -> Store {
        Store {
            objects: git_dir.join("objects"),
        }
    }

    fn path(&self, oid: &Oid) -> PathBuf {
        let hex = hex(oid);
        self.objects.join(&hex[..2]).join(&hex[2..])
    }

    /// Whether the object is there as a loose object.
    pub(crate) fn has(&self, oid: &Oid) -> bool {
        std::fs::symlink_metadata(self.path(oid)).is_ok()
    }

    /// Whether the object is there as a loose object, made new if so (its time set to now), as
    /// git does before it counts on an object it did not write: `git prune` spares objects
    /// younger than two hours, so one that nothing kept yet is not removed before the commit
    /// that names it is kept.
    pub(crate) fn freshen(&self, oid: &Oid) -> bool {
        std::fs::File::options()
            .write(true)
            .open(self.path(oid))
            .and_then(|file| file.set_modified(std::time::SystemTime::now()))
            .is_ok()
    }

    /// Writes `data` as an object of `kind` unless it is there already, and returns its id.
    /// The file is written aside and renamed into place, so a reader (or a second session)
    /// never sees half an object.
    pub(crate) fn write(&self, kind: Kind, data: &[u8]) -> std::io::Result<Oid> {
        let oid = id(kind, data);
        let path = self.path(&oid);
        if std::fs::symlink_metadata(&path).is_ok() {
            return Ok(oid);
        }
        let dir = path.parent().unwrap_or(&self.objects);
        let mut encoder =
            ZlibEncoder::new(Vec::with_capacity(data.len() / 2 + 64), Compression::fast());
        encoder.write_all(format!("{} {}\0", kind.name(), data.len()).as_bytes())?;
        encoder.write_all(data)?;
        let compressed = encoder.finish()?;
        let aside = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
        let written = std::fs::write(&aside, &compressed).or_else(|e| {
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(e);
            }
            std::fs::create_dir_all(dir)?;
            std::fs::write(&aside, &compressed)
        });
        written
            .and_then(|()| std::fs::rename(&aside, &path))
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&aside);
            })?;
        Ok(oid)
    }
}

/// One entry of a tree object.
pub struct TreeEntry<'a> {
    pub mode: u32,
    pub name: &'a [u8],
    pub(crate) oid: Oid,
}

/// A tree object's bytes. Entries are sorted as git sorts them: by name, a folder's name
/// compared as if it ended in `/`.
pub fn tree(mut entries: Vec<TreeEntry<'_>>) -> Vec<u8> {
    let key = |e: &TreeEntry<'_>| {
        let mut k = e.name.to_vec();
        if e.mode == MODE_TREE {
            k.push(b'/');
        }
        k
    };
    entries.sort_by_cached_key(key);
    let mut out = Vec::with_capacity(entries.len() * 48);
    for e in entries {
        out.extend_from_slice(format!("{:o} ", e.mode).as_bytes());
        out.extend_from_slice(e.name);
        out.push(0);
        out.extend_from_slice(&e.oid);
    }
    out
}

pub(crate) const MODE_TREE: u32 = 0o40000;
pub(crate) const MODE_FILE: u32 = 0o100644;
pub(crate) const MODE_EXEC: u32 = 0o100755;
pub(crate) const MODE_LINK: u32 = 0o120000;

/// A commit object's bytes, authored by ouro now.
pub fn commit(tree: &Oid, parent: Option<&Oid>, message: &str) -> Vec<u8> {
    let when = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut out = format!("tree {}\n", hex(tree));
    if let Some(parent) = parent {
        out.push_str(&format!("parent {}\n", hex(parent)));
    }
    out.push_str(&format!(
        "author ouro <ouro@localhost> {when} +0000\ncommitter ouro <ouro@localhost> {when} +0000\n\n{message}\n"
    ));
    out.into_bytes()
}

/// Lays out a new (bare) shadow repository in `dir`, as `git init --bare` and the settings
/// checkpoints need would, without running git.
pub fn init(dir: &Path) -> std::io::Result<()> {
    for sub in [
        "objects/info",
        "objects/pack",
        "refs/heads",
        "refs/tags",
        "info",
    ] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n")?;
    std::fs::write(
        dir.join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = false\n\tautocrlf = false\n\tsymlinks = true\n[gc]\n\tauto = 0\n\treflogExpire = never\n\treflogExpireUnreachable = never\n",
    )?;
    // Files are kept byte for byte: no line-ending, encoding or filter conversions that a
    // project's .gitattributes would ask of a real repository (git reads this for restores).
    std::fs::write(
        dir.join("info/attributes"),
        "* -text -eol -ident -filter -working-tree-encoding\n",
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freshen_makes_a_loose_object_new_and_finds_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let oid = store.write(Kind::Blob, b"kept\n").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3 * 3600);
        let file = std::fs::File::options()
            .write(true)
            .open(store.path(&oid))
            .unwrap();
        file.set_modified(old).unwrap();
        assert!(store.freshen(&oid));
        let age = std::fs::metadata(store.path(&oid))
            .unwrap()
            .modified()
            .unwrap()
            .elapsed();
        assert!(age.unwrap() < std::time::Duration::from_secs(60));
        assert!(!store.freshen(&id(Kind::Blob, b"never written\n")));
    }

    fn git(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
        use std::process::{Command, Stdio};
        let mut child = Command::new("git")
            .args(args)
            .env("GIT_DIR", dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.unwrap_or_default()).unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        out.stdout
    }

    #[test]
    fn objects_are_what_git_writes_and_reads() {
        let dir = tempfile::tempdir().unwrap();
        init(dir.path()).unwrap();
        let store = Store::new(dir.path());
        let data = b"hello\r\nno final newline";
        let blob = store.write(Kind::Blob, data).unwrap();
        let by_git = git(dir.path(), &["hash-object", "--stdin"], Some(data));
        assert_eq!(hex(&blob), String::from_utf8_lossy(&by_git).trim());
        assert_eq!(
            git(dir.path(), &["cat-file", "blob", &hex(&blob)], None),
            data
        );

        let sub = tree(vec![TreeEntry {
            mode: MODE_EXEC,
            name: b"run.sh",
            oid: blob,
        }]);
        let sub = store.write(Kind::Tree, &sub).unwrap();
        // "a.b" sorts before the folder "a" (compared as "a/") in git's order.
        let top = tree(vec![
            TreeEntry {
                mode: MODE_TREE,
                name: b"a",
                oid: sub,
            },
            TreeEntry {
                mode: MODE_FILE,
                name: b"a.b",
                oid: blob,
            },
            TreeEntry {
                mode: MODE_LINK,
                name: b"link",
                oid: blob,
            },
        ]);
        let top = store.write(Kind::Tree, &top).unwrap();
        let listing = git(dir.path(), &["ls-tree", "-r", &hex(&top)], None);
        let listing = String::from_utf8_lossy(&listing);
        assert_eq!(
            listing,
            format!(
                "100644 blob {b}\ta.b\n100755 blob {b}\ta/run.sh\n120000 blob {b}\tlink\n",
                b = hex(&blob)
            )
        );
        git(dir.path(), &["fsck", "--strict", &hex(&top)], None);
        let commit = store
            .write(Kind::Commit, &commit(&top, None, "prompt 1"))
            .unwrap();
        let tree_of = git(
            dir.path(),
            &["rev-parse", &format!("{}^{{tree}}", hex(&commit))],
            None,
        );
        assert_eq!(String::from_utf8_lossy(&tree_of).trim(), hex(&top));
        assert_eq!(parse_hex(&hex(&commit)), Some(commit));
        assert!(store.has(&commit) && !store.has(&[0; 20]));
    }
}
