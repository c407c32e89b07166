//! The PAWS bundle format, as PAWS's `cats` writes it and its `dogs` reads it
//! (`docs/paws-format.md` has the facts): a `# Cats Bundle` header, then one entry per
//! file between 🐈 START and END marker lines, text inside a fence of three backticks, binary
//! as one line of base64 with a hint. A model answers in the same shape with 🐕 markers.
//!
//! ouro adds manifest lines to the header (`# Manifest: blake3=<hex> <path>`), which PAWS's
//! dogs skips like any line outside a block: each bundled file's hash, so `ouro dogs` can tell
//! when a file changed on disk after it was bundled. Bundles of earlier ouro versions carry
//! `sha256=` hashes; those are still read and checked.

use std::io::Write;

use base64::Engine as _;

pub(crate) const CAT: &str = "🐈";
pub(crate) const DOG: &str = "🐕";
pub const HEADER: &str = "# Cats Bundle";
pub(crate) const FENCE: &[u8] = b"```";
pub(crate) const BASE64_HINT: &str = " (Content:Base64)";
pub(crate) const MANIFEST: &str = "# Manifest: ";

/// Extensions PAWS always treats as binary.
const BINARY_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "pdf", "zip", "tar", "gz", "exe", "dll", "so", "dylib", "bin",
    "dat", "pyc",
];

/// One file as a bundle holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The path as written in the markers: relative, `/`-separated, any bytes but newline.
    pub path: Vec<u8>,
    pub content: Vec<u8>,
}

/// A marker line without its newline: `🐈 --- CATS_START_FILE: path (Content:Base64) ---`.
pub(crate) fn marker_line(animal: &str, start: bool, path: &[u8], binary: bool) -> Vec<u8> {
    let keyword = match (animal == CAT, start) {
        (true, true) => "CATS_START_FILE",
        (true, false) => "CATS_END_FILE",
        (false, true) => "DOGS_START_FILE",
        (false, false) => "DOGS_END_FILE",
    };
    let mut line = format!("{animal} --- {keyword}: ").into_bytes();
    line.extend_from_slice(path);
    if binary {
        line.extend_from_slice(BASE64_HINT.as_bytes());
    }
    line.extend_from_slice(b" ---");
    line
}

/// A marker line, read as leniently as PAWS's regex (any case, any run of three or more
/// dashes, spaces around the colon).
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub cat: bool,
    pub start: bool,
    pub path: Vec<u8>,
    pub binary: bool,
}

pub fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s
        && first.is_ascii_whitespace()
    {
        s = rest;
    }
    while let [rest @ .., last] = s
        && last.is_ascii_whitespace()
    {
        s = rest;
    }
    s
}

fn strip_dashes(s: &[u8]) -> Option<&[u8]> {
    let n = s.iter().take_while(|b| **b == b'-').count();
    (n >= 3).then(|| &s[n..])
}

/// A marker line, read as leniently as PAWS reads it; the emoji may be left out (chat models
/// often drop it), and then the keyword tells a cat from a dog.
pub fn marker(line: &[u8]) -> Option<Marker> {
    // Every marker ends in its closing dashes (blanks may follow): a bundle's million other
    // lines are turned away by their last byte, before anything else is looked at.
    if !line
        .last()
        .is_some_and(|b| *b == b'-' || b.is_ascii_whitespace())
    {
        return None;
    }
    let line = trim(line);
    if !line.ends_with(b"---") {
        return None;
    }
    let (animal, rest) = if let Some(rest) = line.strip_prefix(CAT.as_bytes()) {
        (Some(true), rest)
    } else if let Some(rest) = line.strip_prefix(DOG.as_bytes()) {
        (Some(false), rest)
    } else {
        (None, line)
    };
    let rest = trim(strip_dashes(trim(rest))?);
    let keywords: &[(&[u8], bool, bool)] = match animal {
        Some(true) => &[
            (b"CATS_START_FILE", true, true),
            (b"CATS_END_FILE", false, true),
        ],
        Some(false) => &[
            (b"DOGS_START_FILE", true, false),
            (b"DOGS_END_FILE", false, false),
        ],
        None => &[
            (b"CATS_START_FILE", true, true),
            (b"CATS_END_FILE", false, true),
            (b"DOGS_START_FILE", true, false),
            (b"DOGS_END_FILE", false, false),
        ],
    };
    let (start, cat, rest) = keywords.iter().find_map(|(k, start, cat)| {
        (rest.len() >= k.len() && rest[..k.len()].eq_ignore_ascii_case(k))
            .then(|| (*start, *cat, &rest[k.len()..]))
    })?;
    let rest = trim(rest).strip_prefix(b":")?;
    // The path runs to the closing dashes: `path ---` or `path (Content:Base64) ---`.
    let end = rest.len() - rest.iter().rev().take_while(|b| **b == b'-').count();
    if rest.len() - end < 3 {
        return None;
    }
    let mut path = &rest[..end];
    // ouro's cats writes exactly one space on each side; a path may itself start or end with
    // spaces, so only those are taken off when the line has that exact shape.
    path = path.strip_prefix(b" ").unwrap_or(path);
    path = path.strip_suffix(b" ").unwrap_or(path);
    let hint = BASE64_HINT.as_bytes();
    let binary =
        path.len() >= hint.len() && path[path.len() - hint.len()..].eq_ignore_ascii_case(hint);
    if binary {
        path = &path[..path.len() - hint.len()];
    }
    if !cat {
        path = trim(path);
    }
    (!path.is_empty()).then(|| Marker {
        cat,
        start,
        path: path.to_vec(),
        binary,
    })
}

pub(crate) fn is_fence(line: &[u8]) -> bool {
    let line = trim(line);
    line.starts_with(b"```")
        && line[3..]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'+' | b'.'))
}

pub(crate) fn is_closing_fence(line: &[u8]) -> bool {
    trim(line) == b"```"
}

/// Whether `content` goes into a bundle as base64: PAWS's rule (a binary extension, a NUL or
/// more than 30% control bytes in the first 1024), and, since ouro keeps every byte, any
/// content that is not UTF-8 or that holds the exact line sequence that would end its entry.
pub(crate) fn is_binary(path: &[u8], content: &[u8]) -> bool {
    as_text(path, content).is_none()
}

/// `content` as the text a bundle holds it as, or `None` when it goes in as base64
/// ([`is_binary`]); the content is checked for UTF-8 once.
pub(crate) fn as_text<'a>(path: &[u8], content: &'a [u8]) -> Option<&'a str> {
    let extension = path
        .rsplit(|b| *b == b'.')
        .next()
        .filter(|_| path.contains(&b'.'))
        .map(|e| String::from_utf8_lossy(e).to_ascii_lowercase());
    if extension.is_some_and(|e| BINARY_EXTENSIONS.contains(&e.as_str())) {
        return None;
    }
    let head = &content[..content.len().min(1024)];
    if head.contains(&0) {
        return None;
    }
    let control = head
        .iter()
        .filter(|b| **b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'))
        .count();
    if !head.is_empty() && control * 10 > head.len() * 3 {
        return None;
    }
    let text = std::str::from_utf8(content).ok()?;
    let hint = BASE64_HINT.as_bytes();
    let named_like_binary =
        path.len() >= hint.len() && path[path.len() - hint.len()..].eq_ignore_ascii_case(hint);
    (!named_like_binary && !ends_early(path, text)).then_some(text)
}

/// Whether `text` holds a line pair the reader would take for the end of `path`'s entry: a
/// closing fence, then that path's END marker in any shape it accepts. The opening fence counts
/// as the line before the first.
fn ends_early(path: &[u8], text: &str) -> bool {
    let ends =
        |line: &str| marker(line.as_bytes()).is_some_and(|m| m.cat && !m.start && m.path == path);
    if text.split('\n').next().is_some_and(ends) {
        return true;
    }
    // Most files hold no fence at all: they need no walk line by line.
    if memchr::memmem::find(text.as_bytes(), FENCE).is_none() {
        return false;
    }
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        if is_closing_fence(line.as_bytes()) && lines.peek().is_some_and(|next| ends(next)) {
            return true;
        }
    }
    false
}

/// One entry as cats writes it (`binary`: what [`is_binary`] says of it), followed by the
/// empty line that separates entries unless it is the `last`: a bundle ends with its last
/// marker's newline, as PAWS's does.
pub(crate) fn write_entry(
    out: &mut impl Write,
    entry: &Entry,
    binary: bool,
    last: bool,
) -> std::io::Result<()> {
    out.write_all(&marker_line(CAT, true, &entry.path, binary))?;
    out.write_all(b"\n")?;
    if binary {
        let encoded = base64::engine::general_purpose::STANDARD.encode(&entry.content);
        out.write_all(encoded.as_bytes())?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(FENCE)?;
        out.write_all(b"\n")?;
        out.write_all(&entry.content)?;
        out.write_all(b"\n")?;
        out.write_all(FENCE)?;
        out.write_all(b"\n")?;
    }
    out.write_all(&marker_line(CAT, false, &entry.path, binary))?;
    out.write_all(if last { b"\n" } else { b"\n\n" })
}

/// The bytes a bundle spends on an entry besides its content (its markers, fences and
/// manifest line), and those it spends whatever its entries (header, `instructions`): what a
/// token budget must count beside the files.
pub fn overhead(path: &[u8], binary: bool) -> usize {
    let entry = Entry {
        path: path.to_vec(),
        content: Vec::new(),
    };
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = write_entry(&mut out, &entry, binary, false);
    // The manifest line: its prefix, a blake3 digest (71 bytes), a blank, the path, a newline.
    out.len() + MANIFEST.len() + 71 + 1 + path.len() + 1
}

/// The bytes a bundle spends whatever its entries: the header and, with `instructions`, the
/// reply instructions.
pub fn fixed_overhead(instructions: bool) -> usize {
    let mut out = Vec::new();
    let _ = write_bundle::<Entry>(&mut out, &[], instructions);
    out.len()
}

/// The hash a manifest line gives `content`: `blake3=<hex>`.
pub fn digest(content: &[u8]) -> String {
    format!("blake3={}", blake3::hash(content).to_hex())
}

/// Whether a manifest hash is of an algorithm this version checks (`blake3=…`, or an earlier
/// version's `sha256=…`); a line with another is prose. A malformed hash of a known algorithm
/// is kept: it matches no content, so the file counts as changed.
pub(crate) fn is_known_hash(hash: &str) -> bool {
    hash.starts_with("blake3=") || hash.starts_with("sha256=")
}

/// Whether `content` is what the manifest hash `hash` (see [`is_known_hash`]) was made of.
pub fn matches_digest(hash: &str, content: &[u8]) -> bool {
    match hash.strip_prefix("sha256=") {
        Some(hex) => {
            crate::text::hex(ring::digest::digest(&ring::digest::SHA256, content).as_ref())
                .eq_ignore_ascii_case(hex)
        }
        None => digest(content).eq_ignore_ascii_case(hash),
    }
}

/// How a chat model should answer a bundle, put before its files (as PAWS's cats prepends its
/// system prompt). The markers are shown inside sentences, so no line of it is a marker.
pub const REPLY_INSTRUCTIONS: &str = "\
How to answer: give every file you change or create in full, each between a line \
`🐕 --- DOGS_START_FILE: path/of/the/file ---` and a line \
`🐕 --- DOGS_END_FILE: path/of/the/file ---` (the same path, relative as in this bundle). \
Leave out the files you do not change. To delete a file, put the single line \
`@@ PAWS_CMD DELETE_FILE() @@` between its markers. If you need more files first, answer \
only `@@ PAWS_CMD REQUEST_CONTEXT(the files you need) @@`. Text outside the markers is read \
as your explanation; `ouro dogs` applies the answer.\n\n";

/// What a bundle writes of an entry besides its content: its manifest hash and whether it
/// goes in as base64.
pub struct Judged {
    pub digest: String,
    pub binary: bool,
}

impl Judged {
    pub fn of(entry: &Entry) -> Judged {
        Judged {
            digest: digest(&entry.content),
            binary: is_binary(&entry.path, &entry.content),
        }
    }
}

/// A whole bundle: header, reply instructions (when `instructions`), manifest, entries; ends
/// right after the last END marker with one newline, as PAWS's does.
pub fn bundle(entries: &[Entry], instructions: bool) -> Vec<u8> {
    use rayon::prelude::*;
    // Hashing is most of a large bundle's cost: spread over every core.
    let judged: Vec<(&Entry, Judged)> = entries.par_iter().map(|e| (e, Judged::of(e))).collect();
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = write_bundle(&mut out, &judged, instructions);
    out
}

/// [`bundle`] of entries already judged, written to `out` as it is made (give it a buffered
/// writer: the pieces are small).
pub fn write_bundle<E: std::borrow::Borrow<Entry>>(
    out: &mut impl Write,
    entries: &[(E, Judged)],
    instructions: bool,
) -> std::io::Result<()> {
    out.write_all(HEADER.as_bytes())?;
    out.write_all(b"\n# Format: FULL\n")?;
    if instructions {
        out.write_all(b"\n")?;
        out.write_all(REPLY_INSTRUCTIONS.as_bytes())?;
    }
    for (entry, judged) in entries {
        out.write_all(MANIFEST.as_bytes())?;
        out.write_all(judged.digest.as_bytes())?;
        out.write_all(b" ")?;
        out.write_all(&entry.borrow().path)?;
        out.write_all(b"\n")?;
    }
    out.write_all(b"\n")?;
    for (i, (entry, judged)) in entries.iter().enumerate() {
        write_entry(out, entry.borrow(), judged.binary, i + 1 == entries.len())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_look_as_paws_writes_them() {
        let mut out = Vec::new();
        write_entry(
            &mut out,
            &Entry {
                path: b"src/a.py".to_vec(),
                content: b"x = 1\n".to_vec(),
            },
            false,
            false,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "🐈 --- CATS_START_FILE: src/a.py ---\n```\nx = 1\n\n```\n🐈 --- CATS_END_FILE: src/a.py ---\n\n"
        );
        let mut out = Vec::new();
        write_entry(
            &mut out,
            &Entry {
                path: b"img.png".to_vec(),
                content: vec![0x89, b'P', b'N', b'G'],
            },
            true,
            false,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "🐈 --- CATS_START_FILE: img.png (Content:Base64) ---\niVBORw==\n🐈 --- CATS_END_FILE: img.png (Content:Base64) ---\n\n"
        );
    }

    #[test]
    fn manifests_of_this_version_and_earlier_ones_are_checked() {
        let hash = digest(b"abc");
        assert!(hash.starts_with("blake3=") && is_known_hash(&hash));
        assert!(matches_digest(&hash, b"abc") && !matches_digest(&hash, b"abd"));
        // What an earlier ouro wrote: SHA-256.
        let sha = "sha256=ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert!(is_known_hash(sha));
        assert!(matches_digest(sha, b"abc") && !matches_digest(sha, b"abd"));
        assert!(!is_known_hash("md5=900150983cd24fb0d6963f7d28e17f72"));
        // A malformed hash is still a manifest entry, and nothing matches it.
        assert!(is_known_hash("blake3=xyz") && !matches_digest("blake3=xyz", b"abc"));
        assert!(!matches_digest("sha256=xyz", b"abc"));
    }

    #[test]
    fn a_bundle_written_as_it_is_made_equals_the_one_in_memory() {
        let entries = vec![
            Entry {
                path: b"a.txt".to_vec(),
                content: b"```\nx\n".to_vec(),
            },
            Entry {
                path: b"b.bin".to_vec(),
                content: vec![0, 1, 2],
            },
        ];
        let whole = bundle(&entries, true);
        let judged: Vec<(&Entry, Judged)> = entries.iter().map(|e| (e, Judged::of(e))).collect();
        let mut streamed = Vec::new();
        write_bundle(&mut streamed, &judged, true).unwrap();
        assert_eq!(whole, streamed);
        assert!(whole.ends_with(b"CATS_END_FILE: b.bin (Content:Base64) ---\n"));
        let text = String::from_utf8_lossy(&whole);
        assert!(text.contains(&format!("# Manifest: {} a.txt\n", digest(b"```\nx\n"))));
    }

    #[test]
    fn what_text_cannot_carry_exactly_is_base64() {
        assert!(!is_binary(b"a.txt", b"plain\r\ntext"));
        assert!(is_binary(b"a.txt", b"caf\xe9"));
        assert!(is_binary(b"a.txt", b"a\0b"));
        assert!(is_binary(b"x.PNG", b"text"));
        assert!(is_binary(
            b"a.md",
            "x\n```\n🐈 --- CATS_END_FILE: a.md ---\ny".as_bytes()
        ));
        assert!(!is_binary(
            b"a.md",
            "x\n```\n🐈 --- CATS_END_FILE: b.md ---\ny".as_bytes()
        ));
        assert!(is_binary(
            b"a.md",
            "```\n🐈 --- CATS_END_FILE: a.md ---\ny".as_bytes()
        ));
        assert!(is_binary(
            b"a.md",
            "x\n``` \r\n🐈 ----- cats_end_file: a.md ---\ny".as_bytes()
        ));
        assert!(is_binary(b"x (content:base64)", b"text"));
    }
}
