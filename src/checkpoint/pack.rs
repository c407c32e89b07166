//! A git pack file (version 2, with its version 2 index) written in one go: the first snapshot
//! of a project stores thousands of objects, and one file holding them all costs a fraction of
//! creating thousands of loose files. Git reads the pack as it reads any other.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::{Compress, Compression, FlushCompress, Status};
use sha1::{Digest, Sha1};

use super::objects::{self, Kind, Oid, OidSet};

/// What is written or read back at a time: a pack's bytes go to the file as they come.
const BUFFER: usize = 64 << 10;

/// A pack being written beside the repository's other packs.
pub(super) struct PackWriter {
    dir: PathBuf,
    temp: PathBuf,
    out: BufWriter<std::fs::File>,
    offset: u64,
    entries: Vec<(Oid, u64, u32)>,
    seen: OidSet,
    /// Made at the first object added whole (most come as records made on other threads).
    deflater: Option<Deflater>,
}

fn type_code(kind: Kind) -> u8 {
    match kind {
        Kind::Commit => 1,
        Kind::Tree => 2,
        Kind::Blob => 3,
    }
}

/// Makes pack records, one compressor for all of them: setting one up costs more than
/// compressing a small file.
pub(super) struct Deflater(Compress);

impl Deflater {
    pub(super) fn new() -> Deflater {
        Deflater(Compress::new(Compression::fast(), true))
    }

    /// An object's pack record: its type and size header, then its zlib-compressed bytes.
    pub(super) fn record(&mut self, kind: Kind, data: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut record = Vec::with_capacity(data.len() / 2 + 64);
        let mut size = data.len() as u64;
        let mut byte = (type_code(kind) << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            record.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        record.push(byte);
        self.0.reset();
        loop {
            if record.capacity() - record.len() < 64 {
                record.reserve(record.capacity());
            }
            let consumed = usize::try_from(self.0.total_in()).unwrap_or(usize::MAX);
            let rest = data.get(consumed..).unwrap_or_default();
            match self
                .0
                .compress_vec(rest, &mut record, FlushCompress::Finish)
                .map_err(std::io::Error::other)?
            {
                Status::StreamEnd => return Ok(record),
                Status::Ok | Status::BufError => {}
            }
        }
    }
}

impl PackWriter {
    /// Starts a pack in `git_dir/objects/pack`. The object count in the header is patched in
    /// at the end.
    pub(super) fn start(git_dir: &Path) -> std::io::Result<PackWriter> {
        let dir = git_dir.join("objects/pack");
        std::fs::create_dir_all(&dir)?;
        let temp = dir.join(format!(".tmp-{}.pack", uuid::Uuid::new_v4().simple()));
        // Read back at the end for the checksum.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&temp)?;
        let mut out = BufWriter::with_capacity(BUFFER, file);
        out.write_all(&[0u8; 12])?;
        Ok(PackWriter {
            dir,
            temp,
            out,
            offset: 12,
            entries: Vec::new(),
            seen: OidSet::default(),
            deflater: None,
        })
    }

    /// Adds an object (once, however often it is added) and returns its id.
    pub(super) fn add(&mut self, kind: Kind, data: &[u8]) -> std::io::Result<Oid> {
        let oid = objects::id(kind, data);
        if self.seen.contains(&oid) {
            return Ok(oid);
        }
        let record = self
            .deflater
            .get_or_insert_with(Deflater::new)
            .record(kind, data)?;
        self.add_record(oid, record)?;
        Ok(oid)
    }

    /// Adds an object already made into its record (by [`record`]) under its id `oid`.
    pub(super) fn add_record(&mut self, oid: Oid, record: Vec<u8>) -> std::io::Result<()> {
        if !self.seen.insert(oid) {
            return Ok(());
        }
        let mut crc = flate2::Crc::new();
        crc.update(&record);
        self.out.write_all(&record)?;
        self.entries.push((oid, self.offset, crc.sum()));
        self.offset += record.len() as u64;
        Ok(())
    }

    /// Writes the trailer and the index and moves both into place; an empty pack is dropped.
    pub(super) fn finish(self) -> std::io::Result<()> {
        let PackWriter {
            dir,
            temp,
            out,
            mut entries,
            ..
        } = self;
        let mut file = out.into_inner().map_err(|e| e.into_error())?;
        if entries.is_empty() {
            drop(file);
            return std::fs::remove_file(&temp);
        }
        let count = u32::try_from(entries.len()).map_err(std::io::Error::other)?;
        let mut header = Vec::with_capacity(12);
        header.extend_from_slice(b"PACK");
        header.extend_from_slice(&2u32.to_be_bytes());
        header.extend_from_slice(&count.to_be_bytes());
        // The count is known only now: the header is patched in, and the checksum (which
        // covers it) read back from the file.
        let mut full = Sha1::new();
        full.update(&header);
        use std::io::Seek;
        let body_digest = {
            use std::io::{Read, SeekFrom};
            file.seek(SeekFrom::Start(0))?;
            file.write_all(&header)?;
            file.seek(SeekFrom::Start(12))?;
            let mut buf = vec![0u8; BUFFER];
            loop {
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                full.update(&buf[..n]);
            }
            full.finalize()
        };
        let checksum = body_digest.to_vec();
        file.seek(std::io::SeekFrom::End(0))?;
        file.write_all(&checksum)?;
        drop(file);
        let name = objects::hex(checksum.as_slice().try_into().unwrap_or(&[0u8; 20]));
        entries.sort_by_key(|e| e.0);
        let idx = index(&entries, &checksum);
        let idx_temp = dir.join(format!(".tmp-{name}.idx"));
        std::fs::write(&idx_temp, idx)?;
        // The pack first: git finds a pack through its index.
        std::fs::rename(&temp, dir.join(format!("pack-{name}.pack")))?;
        std::fs::rename(&idx_temp, dir.join(format!("pack-{name}.idx")))?;
        Ok(())
    }
}

/// A version 2 pack index of `entries` (sorted by id).
fn index(entries: &[(Oid, u64, u32)], pack_checksum: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 1024 + entries.len() * 28 + 40);
    out.extend_from_slice(&[0xff, b't', b'O', b'c']);
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (oid, _, _) in entries {
        fanout[usize::from(oid[0])] += 1;
    }
    let mut total = 0u32;
    for count in fanout {
        total += count;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for (oid, _, _) in entries {
        out.extend_from_slice(oid);
    }
    for (_, _, crc) in entries {
        out.extend_from_slice(&crc.to_be_bytes());
    }
    let mut large = Vec::new();
    for (_, offset, _) in entries {
        match u32::try_from(*offset) {
            Ok(small) if small < 0x8000_0000 => out.extend_from_slice(&small.to_be_bytes()),
            _ => {
                let at = u32::try_from(large.len()).unwrap_or(u32::MAX) | 0x8000_0000;
                out.extend_from_slice(&at.to_be_bytes());
                large.push(*offset);
            }
        }
    }
    for offset in large {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(pack_checksum);
    let digest = Sha1::digest(&out);
    out.extend_from_slice(&digest);
    out
}

/// Whether `path` is a finished pack's file of `extension` (`pack-<id>.pack` or `.idx`), not
/// one still being written (or left by a writer that was killed).
pub(super) fn is_pack_file(path: &Path, extension: &str) -> bool {
    path.extension().is_some_and(|e| e == extension)
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("pack-"))
}

/// The ids of every object in the finished packs of `git_dir`, read from their indexes.
pub(super) fn packed_ids(git_dir: &Path) -> OidSet {
    let mut ids = OidSet::default();
    let Ok(dir) = std::fs::read_dir(git_dir.join("objects/pack")) else {
        return ids;
    };
    for entry in dir.filter_map(Result::ok) {
        let path = entry.path();
        if !is_pack_file(&path, "idx") || !path.with_extension("pack").exists() {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        if bytes.len() < 8 + 1024 || bytes[..4] != [0xff, b't', b'O', b'c'] {
            continue;
        }
        let count = u32::from_be_bytes([bytes[1028], bytes[1029], bytes[1030], bytes[1031]]);
        let start = 8 + 1024;
        for i in 0..count as usize {
            let Some(raw) = bytes.get(start + i * 20..start + (i + 1) * 20) else {
                break;
            };
            let mut oid = [0u8; 20];
            oid.copy_from_slice(raw);
            ids.insert(oid);
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_reads_a_pack_of_ours() {
        let dir = tempfile::tempdir().unwrap();
        objects::init(dir.path()).unwrap();
        let mut pack = PackWriter::start(dir.path()).unwrap();
        let big: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
        // Bytes that do not compress: the record outgrows the room first made for it.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let noise: Vec<u8> = (0..300_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let small = pack.add(Kind::Blob, b"small\n").unwrap();
        let large = pack.add(Kind::Blob, &big).unwrap();
        let random = pack.add(Kind::Blob, &noise).unwrap();
        // The same compressor, after a large record, makes a whole small one.
        let after = pack.add(Kind::Blob, b"after\n").unwrap();
        assert_eq!(pack.add(Kind::Blob, b"small\n").unwrap(), small);
        let tree = pack
            .add(
                Kind::Tree,
                &objects::tree(vec![
                    objects::TreeEntry {
                        mode: objects::MODE_FILE,
                        name: b"s",
                        oid: small,
                    },
                    objects::TreeEntry {
                        mode: objects::MODE_FILE,
                        name: b"l",
                        oid: large,
                    },
                ]),
            )
            .unwrap();
        pack.finish().unwrap();
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .env("GIT_DIR", dir.path())
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .unwrap()
        };
        let out = git(&["cat-file", "blob", &objects::hex(&large)]);
        assert!(out.status.success());
        assert_eq!(out.stdout, big);
        let out = git(&["cat-file", "blob", &objects::hex(&random)]);
        assert_eq!(out.stdout, noise);
        let out = git(&["cat-file", "blob", &objects::hex(&after)]);
        assert_eq!(out.stdout, b"after\n");
        let out = git(&["ls-tree", &objects::hex(&tree)]);
        assert!(String::from_utf8_lossy(&out.stdout).contains("\tl\n"));
        let packs: Vec<_> = std::fs::read_dir(dir.path().join("objects/pack"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "pack"))
            .collect();
        let verify = std::process::Command::new("git")
            .args(["verify-pack", "-v"])
            .arg(packs[0].with_extension("idx"))
            .output()
            .unwrap();
        assert!(
            verify.status.success(),
            "{}",
            String::from_utf8_lossy(&verify.stderr)
        );
        let ids = packed_ids(dir.path());
        assert!(ids.contains(&small) && ids.contains(&large) && ids.contains(&tree));
    }
}
