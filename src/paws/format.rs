//! The PAWS bundle format, as PAWS's `cats` writes it and its `dogs` reads it
//! (`docs/paws-format.md` has the facts): a `# Cats Bundle` header, then one entry per
//! file between 🐈 START and END marker lines, text inside a fence of three backticks, binary
//! as one line of base64 with a hint. A model answers in the same shape with 🐕 markers.
//!
//! ouro adds manifest lines to the header (`# Manifest: sha256=<hex> <path>`), which PAWS's
//! dogs skips like any line outside a block: each bundled file's hash, so `ouro dogs` can tell
//! when a file changed on disk after it was bundled.

use base64::Engine as _;

pub(crate) const CAT: &str = "🐈";
pub(crate) const DOG: &str = "🐕";
pub const HEADER: &str = "# Cats Bundle";
pub(crate) const FENCE: &[u8] = b"```";
pub(crate) const BASE64_HINT: &str = " (Content:Base64)";
pub(crate) const MANIFEST: &str = "# Manifest: sha256=";

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
    let line = trim(line);
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
    let extension = path
        .rsplit(|b| *b == b'.')
        .next()
        .filter(|_| path.contains(&b'.'))
        .map(|e| String::from_utf8_lossy(e).to_ascii_lowercase());
    if extension.is_some_and(|e| BINARY_EXTENSIONS.contains(&e.as_str())) {
        return true;
    }
    let head = &content[..content.len().min(1024)];
    if head.contains(&0) {
        return true;
    }
    let control = head
        .iter()
        .filter(|b| **b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'))
        .count();
    if !head.is_empty() && control * 10 > head.len() * 3 {
        return true;
    }
    if std::str::from_utf8(content).is_err() {
        return true;
    }
    let hint = BASE64_HINT.as_bytes();
    let named_like_binary =
        path.len() >= hint.len() && path[path.len() - hint.len()..].eq_ignore_ascii_case(hint);
    // A line pair inside the content that the reader would take for the entry's end (a
    // closing fence, then this path's END marker in any shape it accepts); the opening fence
    // counts as the line before the first.
    let text = std::str::from_utf8(content).unwrap_or_default();
    let mut lines = std::iter::once("```").chain(text.split('\n')).peekable();
    let mut ends_early = false;
    while let Some(line) = lines.next() {
        if is_closing_fence(line.as_bytes())
            && lines.peek().is_some_and(|next| {
                marker(next.as_bytes()).is_some_and(|m| m.cat && !m.start && m.path == path)
            })
        {
            ends_early = true;
        }
    }
    named_like_binary || ends_early
}

/// One entry as cats writes it, followed by the empty line that separates entries.
pub(crate) fn write_entry(out: &mut Vec<u8>, entry: &Entry) {
    let binary = is_binary(&entry.path, &entry.content);
    out.extend_from_slice(&marker_line(CAT, true, &entry.path, binary));
    out.push(b'\n');
    if binary {
        out.extend_from_slice(
            base64::engine::general_purpose::STANDARD
                .encode(&entry.content)
                .as_bytes(),
        );
        out.push(b'\n');
    } else {
        out.extend_from_slice(FENCE);
        out.push(b'\n');
        out.extend_from_slice(&entry.content);
        out.push(b'\n');
        out.extend_from_slice(FENCE);
        out.push(b'\n');
    }
    out.extend_from_slice(&marker_line(CAT, false, &entry.path, binary));
    out.extend_from_slice(b"\n\n");
}

/// The SHA-256 of `content`, in hex.
pub fn digest(content: &[u8]) -> String {
    crate::text::hex(ring::digest::digest(&ring::digest::SHA256, content).as_ref())
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

/// A whole bundle: header, reply instructions (when `instructions`), manifest, entries; ends
/// right after the last END marker with one newline, as PAWS's does.
pub fn bundle(entries: &[Entry], instructions: bool) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(HEADER.as_bytes());
    out.extend_from_slice(b"\n# Format: FULL\n");
    if instructions {
        out.push(b'\n');
        out.extend_from_slice(REPLY_INSTRUCTIONS.as_bytes());
    }
    for entry in entries {
        out.extend_from_slice(MANIFEST.as_bytes());
        out.extend_from_slice(digest(&entry.content).as_bytes());
        out.push(b' ');
        out.extend_from_slice(&entry.path);
        out.push(b'\n');
    }
    out.push(b'\n');
    for entry in entries {
        write_entry(&mut out, entry);
    }
    // Entries end with an empty line; the bundle ends with the last marker's newline.
    if !entries.is_empty() {
        out.pop();
    }
    out
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
        );
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
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "🐈 --- CATS_START_FILE: img.png (Content:Base64) ---\niVBORw==\n🐈 --- CATS_END_FILE: img.png (Content:Base64) ---\n\n"
        );
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
