//! An agent run's change set as a dogs bundle with v1 front matter: what `ouro dogs` applies
//! to the tree the run started from to give exactly the tree it ended with. A bundle with
//! front matter is read exactly (no final newline added or kept, PAWS-FORMAT §5), so the old
//! contents are not needed. Text goes in fenced 🐕 blocks when PAWS's dogs cannot mistake a
//! line of it for structure; anything else (binary, non-UTF-8, a line shaped like a marker or
//! a command) goes as base64 with PAWS's hint, which PAWS reads without loss for UTF-8 and
//! ouro for any bytes.

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use base64::Engine as _;

use super::PawsError;
use super::format::{self, DOG, FENCE, marker, marker_line};
use super::front::DogsFront;

/// The characters PAWS's dogs breaks lines at (`str.splitlines()`, after its universal
/// newlines): a marker after any of them is a marker to it.
const PAWS_BREAKS: &[char] = &[
    '\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}', '\u{2029}',
];

/// One file of a change set, its path relative to the tree's root.
#[derive(Debug, Clone, PartialEq)]
pub enum FileChange {
    /// A new file, or a file whose bytes changed: all of its bytes now.
    Write {
        path: PathBuf,
        bytes: Vec<u8>,
    },
    Delete {
        path: PathBuf,
    },
}

/// The dogs bundle of `changes`: v1 front matter, then one 🐕 block per change in the order
/// given (a whole file, or `DELETE_FILE`), separated by an empty line; it ends with one
/// newline. File modes are not carried (PAWS's format has none): a new file gets the default.
pub fn write_dogs_v1(front: &DogsFront, changes: &[FileChange]) -> Result<Vec<u8>, PawsError> {
    let mut out = front.to_yaml()?.into_bytes();
    for (n, change) in changes.iter().enumerate() {
        if n > 0 {
            out.push(b'\n');
        }
        match change {
            FileChange::Delete { path } => {
                let (start, end) = markers(path.as_os_str().as_bytes(), false)?;
                out.extend_from_slice(&start);
                out.extend_from_slice(b"\n@@ PAWS_CMD DELETE_FILE() @@\n");
                out.extend_from_slice(&end);
            }
            FileChange::Write { path, bytes } if as_text(path.as_os_str().as_bytes(), bytes) => {
                let (start, end) = markers(path.as_os_str().as_bytes(), false)?;
                // As cats writes text: the `\n` before the closing fence only separates.
                for part in [&start[..], FENCE, &bytes[..], FENCE] {
                    out.extend_from_slice(part);
                    out.push(b'\n');
                }
                out.extend_from_slice(&end);
            }
            FileChange::Write { path, bytes } => {
                let (start, end) = markers(path.as_os_str().as_bytes(), true)?;
                out.extend_from_slice(&start);
                out.push(b'\n');
                out.extend_from_slice(
                    base64::engine::general_purpose::STANDARD
                        .encode(bytes)
                        .as_bytes(),
                );
                out.push(b'\n');
                out.extend_from_slice(&end);
            }
        }
        out.push(b'\n');
    }
    Ok(out)
}

/// The START and END lines for `path`, when `ouro dogs` reads that exact path back from them.
fn markers(path: &[u8], binary: bool) -> Result<(Vec<u8>, Vec<u8>), PawsError> {
    let shown = PathBuf::from(std::ffi::OsStr::from_bytes(path));
    if path.contains(&b'\n') {
        return Err(PawsError::NewlineInName { path: shown });
    }
    let start = marker_line(DOG, true, path, binary);
    let end = marker_line(DOG, false, path, binary);
    let reads_back = |line: &[u8], is_start: bool| {
        marker(line)
            .is_some_and(|m| !m.cat && m.start == is_start && m.binary == binary && m.path == path)
    };
    if !reads_back(&start, true) || !reads_back(&end, false) {
        return Err(PawsError::Unmarkable { path: shown });
    }
    Ok((start, end))
}

/// Whether `content` can go in a fenced 🐕 block: ouro reads it back exactly, and PAWS's dogs
/// finds no marker or command in it.
fn as_text(path: &[u8], content: &[u8]) -> bool {
    // A binary name, non-UTF-8, control bytes: what cats would not write as text either.
    if format::is_binary(path, content) {
        return false;
    }
    let Ok(text) = std::str::from_utf8(content) else {
        return false;
    };
    // No escaping exists: PAWS's dogs takes any marker or command line as structure, and
    // ouro a command line or a fence followed by this file's END marker. Looser than either
    // reader on purpose: base64 for a false alarm is still exact.
    !text.split(PAWS_BREAKS).any(|line| {
        let line = line.trim();
        let upper = line.to_ascii_uppercase();
        (line.starts_with(DOG)
            && (upper.contains("DOGS_START_FILE") || upper.contains("DOGS_END_FILE")))
            || (line.starts_with("@@") && line.ends_with("@@") && upper.contains("PAWS_CMD"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &str, bytes: &[u8]) -> FileChange {
        FileChange::Write {
            path: path.into(),
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn text_base64_and_delete_blocks() {
        let front = DogsFront {
            agent_name: Some("fixer".into()),
            ..DogsFront::default()
        };
        let changes = [
            write("a.txt", b"new\n"),
            FileChange::Delete {
                path: "gone.txt".into(),
            },
            write("bare.txt", b"no final newline"),
            write("doc.md", "🐕 --- DOGS_END_FILE: doc.md ---\n".as_bytes()),
        ];
        let out = String::from_utf8(write_dogs_v1(&front, &changes).unwrap()).unwrap();
        assert_eq!(
            out,
            "---\nversion: \"1.0\"\nmetadata:\n  agent_name: \"fixer\"\n---\n\
             🐕 --- DOGS_START_FILE: a.txt ---\n```\nnew\n\n```\n🐕 --- DOGS_END_FILE: a.txt ---\n\n\
             🐕 --- DOGS_START_FILE: gone.txt ---\n@@ PAWS_CMD DELETE_FILE() @@\n🐕 --- DOGS_END_FILE: gone.txt ---\n\n\
             🐕 --- DOGS_START_FILE: bare.txt ---\n```\nno final newline\n```\n🐕 --- DOGS_END_FILE: bare.txt ---\n\n\
             🐕 --- DOGS_START_FILE: doc.md (Content:Base64) ---\n8J+QlSAtLS0gRE9HU19FTkRfRklMRTogZG9jLm1kIC0tLQo=\n🐕 --- DOGS_END_FILE: doc.md (Content:Base64) ---\n"
        );
        assert_eq!(
            write_dogs_v1(&DogsFront::default(), &[]).unwrap(),
            b"---\nversion: \"1.0\"\n---\n"
        );
    }

    #[test]
    fn what_a_block_cannot_carry_goes_as_base64_or_is_refused() {
        assert!(as_text(b"a.rs", b"fn a() {}\n"));
        assert!(as_text(
            b"a.md",
            "mentions DOGS_START_FILE and 🐕 in prose\n".as_bytes()
        ));
        assert!(!as_text(b"a.rs", b"x\n@@ PAWS_CMD DELETE_FILE() @@\n"));
        assert!(!as_text(
            b"a.md",
            "x\u{2028} \u{a0}🐕 ---- dogs_start_file: b ---\n".as_bytes()
        ));
        assert!(!as_text(b"a.txt", b"caf\xe9\n"));
        assert!(!as_text(b"a.png", b"text"));
        for bad in [&b" padded"[..], b"x (Content:Base64)"] {
            assert!(matches!(
                markers(bad, false),
                Err(PawsError::Unmarkable { .. })
            ));
        }
        assert!(matches!(
            markers(b"a\nb", true),
            Err(PawsError::NewlineInName { .. })
        ));
    }
}
