//! The generated project a benchmark runs in: a tree of Rust-like source files (plus some
//! Markdown and text) made from a fixed seed, so every run sees the same bytes.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// Marker lines per source file that an Edit may change, each at most once per run.
pub(crate) const EDITS_PER_FILE: usize = 3;
/// Files per directory; a tree of N files has N / FILES_PER_DIR directories under `src/`.
const FILES_PER_DIR: usize = 50;
/// The rare word Grep looks for (about one file in twenty has it).
pub const NEEDLE: &str = "needle";

const WORDS: &[&str] = &[
    "alpha", "beta", "gamma", "delta", "lambda", "buffer", "cache", "index", "parse", "render",
    "vector", "stream", "token", "thread", "socket", "schema", "commit", "branch", "tree",
    "cursor", "frame", "layout", "signal", "budget", "packet", "ledger", "anchor", "bridge",
    "filter", "window", "shadow", "quorum",
];

/// A small deterministic generator (SplitMix64): the same seed gives the same tree and the
/// same scenario on every machine and every version of every crate.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Rust,
    Markdown,
    Text,
}

#[derive(Debug, Clone)]
pub struct FixtureFile {
    pub id: usize,
    /// Relative to the fixture root, with `/` separators.
    pub rel: String,
    pub kind: FileKind,
    /// The values of the marker lines (Rust files only).
    pub markers: [u32; EDITS_PER_FILE],
    pub(crate) has_needle: bool,
}

impl FixtureFile {
    /// The text of marker `k` before and after its one Edit.
    pub fn marker_edit(&self, k: usize) -> (String, String) {
        let line = |v: u32| format!("let marker_{:05}_{k} = {v};", self.id);
        (line(self.markers[k]), line(self.markers[k] + 1))
    }
}

#[derive(Debug, Clone)]
pub struct Fixture {
    pub root: PathBuf,
    pub files: Vec<FixtureFile>,
    /// Directories holding files, relative to the root.
    pub dirs: Vec<String>,
}

impl Fixture {
    /// Writes `count` files under `root` (which must exist and be empty).
    pub fn generate(root: &Path, count: usize, seed: u64) -> io::Result<Fixture> {
        let mut rng = Rng::new(seed ^ 0x6669_7874_7572_6573);
        let mut files = Vec::with_capacity(count);
        let mut dirs = Vec::new();
        for id in 0..count {
            let dir = format!("src/pkg_{:03}", id / FILES_PER_DIR);
            if id % FILES_PER_DIR == 0 {
                std::fs::create_dir_all(root.join(&dir))?;
                dirs.push(dir.clone());
            }
            let kind = match rng.below(10) {
                0 => FileKind::Markdown,
                1 => FileKind::Text,
                _ => FileKind::Rust,
            };
            let ext = match kind {
                FileKind::Rust => "rs",
                FileKind::Markdown => "md",
                FileKind::Text => "txt",
            };
            let file = FixtureFile {
                id,
                rel: format!("{dir}/file_{id:05}.{ext}"),
                kind,
                markers: [0; EDITS_PER_FILE].map(|_| rng.below(1000) as u32),
                has_needle: rng.below(20) == 0,
            };
            std::fs::write(root.join(&file.rel), content(&file, &mut rng))?;
            files.push(file);
        }
        Ok(Fixture {
            root: root.to_path_buf(),
            files,
            dirs,
        })
    }

    pub fn path(&self, file: &FixtureFile) -> PathBuf {
        self.root.join(&file.rel)
    }
}

fn words(rng: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| *rng.pick(WORDS))
        .collect::<Vec<_>>()
        .join(" ")
}

fn content(file: &FixtureFile, rng: &mut Rng) -> String {
    let id = file.id;
    let body_lines = 20 + rng.below(80);
    let needle_at = file.has_needle.then(|| rng.below(body_lines));
    let mut out = String::new();
    match file.kind {
        FileKind::Rust => {
            let _ = writeln!(out, "//! Fixture module {id}: {}.\n", words(rng, 6));
            out.push_str("use std::collections::HashMap;\n\n");
            let _ = writeln!(
                out,
                "/// {}.\npub struct Item{id:05} {{\n    pub name: String,\n    pub weight: u64,\n}}\n",
                words(rng, 5)
            );
            let _ = writeln!(out, "pub fn compute_{id:05}(input: u64) -> u64 {{");
            for k in 0..EDITS_PER_FILE {
                let _ = writeln!(out, "    {}", file.marker_edit(k).0);
            }
            let sum: Vec<String> = (0..EDITS_PER_FILE)
                .map(|k| format!("marker_{id:05}_{k}"))
                .collect();
            let _ = writeln!(out, "    let mut total = input + {};", sum.join(" + "));
            for line in 0..body_lines {
                if needle_at == Some(line) {
                    let _ = writeln!(out, "    // {NEEDLE}: {}", words(rng, 3));
                }
                if rng.below(4) == 0 {
                    let n = 4 + rng.below(6);
                    let _ = writeln!(out, "    // {}", words(rng, n));
                } else {
                    let _ = writeln!(
                        out,
                        "    total = total.wrapping_mul({}) ^ {};",
                        rng.below(97) + 3,
                        rng.below(1 << 16)
                    );
                }
            }
            out.push_str("    let _unused: HashMap<u64, u64> = HashMap::new();\n    total\n}\n");
        }
        FileKind::Markdown | FileKind::Text => {
            if file.kind == FileKind::Markdown {
                let _ = writeln!(out, "# Notes {id}\n");
            }
            for line in 0..body_lines {
                if needle_at == Some(line) {
                    let _ = writeln!(out, "The {NEEDLE} is here: {}.", words(rng, 3));
                }
                let n = 6 + rng.below(8);
                let _ = writeln!(out, "{}.", words(rng, n));
            }
        }
    }
    out
}

/// A scratch directory under the system temp dir, removed when dropped.
#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    pub fn new(label: &str) -> io::Result<WorkDir> {
        let path =
            std::env::temp_dir().join(format!("ouro-bench-{label}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&path)?;
        // Canonical, so the paths in scenarios are the ones the tools and rules see.
        let path = path.canonicalize()?;
        Ok(WorkDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(seed: u64) -> (WorkDir, Fixture) {
        let dir = WorkDir::new("test").unwrap();
        let fixture = Fixture::generate(dir.path(), 120, seed).unwrap();
        (dir, fixture)
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes() {
        let (a_dir, a) = tree(7);
        let (b_dir, b) = tree(7);
        let (_c_dir, c) = tree(8);
        assert_eq!(a.files.len(), 120);
        assert_eq!(a.dirs, ["src/pkg_000", "src/pkg_001", "src/pkg_002"]);
        let read = |dir: &WorkDir, f: &FixtureFile| std::fs::read(dir.path().join(&f.rel)).unwrap();
        for (fa, fb) in a.files.iter().zip(&b.files) {
            assert_eq!(read(&a_dir, fa), read(&b_dir, fb));
        }
        assert!(
            a.files
                .iter()
                .zip(&c.files)
                .any(|(fa, fc)| fa.rel != fc.rel || fa.markers != fc.markers)
        );
    }

    #[test]
    fn marker_lines_are_unique_in_their_file() {
        let (dir, fixture) = tree(3);
        let rust: Vec<&FixtureFile> = fixture
            .files
            .iter()
            .filter(|f| f.kind == FileKind::Rust)
            .collect();
        assert!(!rust.is_empty());
        for file in rust {
            let text = std::fs::read_to_string(dir.path().join(&file.rel)).unwrap();
            for k in 0..EDITS_PER_FILE {
                let (old, new) = file.marker_edit(k);
                assert_eq!(text.matches(&old).count(), 1, "{old} in {}", file.rel);
                assert!(!text.contains(&new) || new == old);
            }
        }
    }

    #[test]
    fn needle_files_contain_the_needle() {
        let (dir, fixture) = tree(11);
        for file in &fixture.files {
            let text = std::fs::read_to_string(dir.path().join(&file.rel)).unwrap();
            assert_eq!(text.contains(NEEDLE), file.has_needle, "{}", file.rel);
        }
    }

    #[test]
    fn workdir_is_removed_on_drop() {
        let dir = WorkDir::new("drop").unwrap();
        let path = dir.path().to_path_buf();
        std::fs::write(path.join("x"), "y").unwrap();
        drop(dir);
        assert!(!path.exists());
    }
}
