//! Cutting text to a size without splitting a character: a prefix for one-line displays, a
//! byte-bounded prefix for prompts, and head + tail for long tool output (the model sees how a
//! command started and how it ended, and the middle no longer floods its context).

/// Bytes as lowercase hex, two digits each (hashes and object ids).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A name that is a plain word anywhere it goes (a tool name, a file name, a command-line
/// word): one or more ASCII letters, digits, `-` and `_`.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A plain name that also serves as an id a user types and a folder holds (a clone, a
/// worktree): at most 64 characters, and never read as a flag (no leading `-`).
pub fn is_id(name: &str) -> bool {
    is_plain_name(name) && name.len() <= 64 && !name.starts_with('-')
}

/// The first `max` characters of `s`, and whether anything was cut.
pub fn prefix_chars(s: &str, max: usize) -> (&str, bool) {
    match s.char_indices().nth(max) {
        Some((at, _)) => (&s[..at], true),
        None => (s, false),
    }
}

/// At most `max` characters of `s`, with `…` when something was cut.
pub fn truncate(s: &str, max: usize) -> String {
    match prefix_chars(s, max) {
        (head, true) => format!("{head}…"),
        (whole, false) => whole.to_string(),
    }
}

/// The longest prefix of `s` that is at most `max` bytes and ends on a character boundary.
pub fn prefix_bytes(s: &str, max: usize) -> &str {
    &s[..s.floor_char_boundary(max.min(s.len()))]
}

/// Keeps the first and last characters of a text that arrives in pieces, in memory bounded by
/// about twice the limit however long the text grows.
#[derive(Debug)]
pub struct HeadTail {
    head: String,
    head_chars: usize,
    head_cap: usize,
    tail: String,
    tail_chars: usize,
    tail_cap: usize,
    elided_bytes: u64,
    elided_lines: u64,
}

/// Room kept for the elision note, so that a capped text with its note still fits the limit
/// (a second cap, such as the pipeline's, then leaves it alone instead of eliding the note).
const NOTE_ROOM: usize = 80;

impl HeadTail {
    /// Keeps at most `max_chars` characters, the note about the middle included (half from
    /// the start, half from the end).
    pub fn new(max_chars: usize) -> Self {
        let keep = if max_chars > 2 * NOTE_ROOM {
            max_chars - NOTE_ROOM
        } else {
            max_chars
        };
        let head_cap = keep / 2;
        HeadTail {
            head: String::new(),
            head_chars: 0,
            head_cap,
            tail: String::new(),
            tail_chars: 0,
            tail_cap: keep - head_cap,
            elided_bytes: 0,
            elided_lines: 0,
        }
    }

    pub fn push(&mut self, text: &str) {
        let mut rest = text;
        if self.head_chars < self.head_cap {
            let room = self.head_cap - self.head_chars;
            let (taken, _) = prefix_chars(rest, room);
            let after = &rest[taken.len()..];
            self.head.push_str(taken);
            self.head_chars += taken.chars().count();
            rest = after;
        }
        if rest.is_empty() {
            return;
        }
        self.tail.push_str(rest);
        self.tail_chars += rest.chars().count();
        // Trimming only once the tail holds twice its share keeps pushes amortised O(length).
        if self.tail_chars > 2 * self.tail_cap.max(1) {
            self.trim_tail();
        }
    }

    pub fn finish(mut self) -> String {
        self.trim_tail();
        if self.elided_bytes == 0 {
            self.head + &self.tail
        } else {
            format!(
                "{}\n\n[... {} bytes ({} lines) elided ...]\n\n{}",
                self.head, self.elided_bytes, self.elided_lines, self.tail
            )
        }
    }

    fn trim_tail(&mut self) {
        if self.tail_chars <= self.tail_cap {
            return;
        }
        let drop = self.tail_chars - self.tail_cap;
        let cut = self
            .tail
            .char_indices()
            .nth(drop)
            .map_or(self.tail.len(), |(i, _)| i);
        self.elided_lines += self.tail.as_bytes()[..cut]
            .iter()
            .filter(|b| **b == b'\n')
            .count() as u64;
        self.elided_bytes += cut as u64;
        self.tail.drain(..cut);
        self.tail_chars = self.tail_cap;
    }
}

/// `text` unchanged if it has at most `max_chars` characters, otherwise its head and tail with
/// the number of elided characters in between.
pub fn elide_middle(text: &str, max_chars: usize) -> String {
    if text.len() <= max_chars || text.chars().count() <= max_chars {
        return text.to_string();
    }
    let mut kept = HeadTail::new(max_chars);
    kept.push(text);
    kept.finish()
}

/// Levenshtein distance in characters, for naming what a typo meant.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// An error and its causes as one line, each cause said once: many errors already quote their
/// cause in their own message, and repeating it reads as two failures.
pub fn error_chain<'a>(
    chain: impl Iterator<Item = &'a (dyn std::error::Error + 'static)>,
) -> String {
    let mut out = String::new();
    for error in chain {
        let text = error.to_string();
        let text = text.trim_end_matches('.');
        if out.contains(text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(text);
    }
    out
}

/// `text` as one word of a POSIX shell command line (single-quoted).
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("permisions", "permissions"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("héllo", "hello"), 1);
    }

    #[test]
    fn each_cause_is_said_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("could not read {path}: {source}")]
        struct Outer {
            path: &'static str,
            #[source]
            source: std::io::Error,
        }
        let e = anyhow::Error::new(Outer {
            path: "/x",
            source: std::io::Error::other("disk on fire"),
        })
        .context("loading settings");
        assert_eq!(
            error_chain(e.chain()),
            "loading settings: could not read /x: disk on fire"
        );
    }

    #[test]
    fn prefixes_never_split_a_character() {
        assert_eq!(prefix_chars("héllo", 2), ("hé", true));
        assert_eq!(prefix_chars("hé", 2), ("hé", false));
        assert_eq!(truncate("héllo", 3), "hél…");
        assert_eq!(truncate("hé", 3), "hé");
        assert_eq!(prefix_bytes("héllo", 2), "h");
        assert_eq!(prefix_bytes("héllo", 3), "hé");
        assert_eq!(prefix_bytes("hé", 10), "hé");
    }

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(elide_middle("hello", 5), "hello");
        assert_eq!(elide_middle("héllo", 5), "héllo");
    }

    #[test]
    fn long_text_keeps_head_and_tail_with_a_count() {
        let text: String = (0..1000).map(|i| format!("{i:04}")).collect();
        let out = elide_middle(&text, 100);
        assert!(out.starts_with(&text[..50]), "{out}");
        assert!(out.ends_with(&text[text.len() - 50..]), "{out}");
        assert!(
            out.contains("[... 3900 bytes (0 lines) elided ...]"),
            "{out}"
        );
        // With room for the note, the cap holds for the note too.
        let out = elide_middle(&text, 1000);
        assert!(out.chars().count() <= 1000, "{}", out.chars().count());
        assert!(
            out.contains("[... 3080 bytes (0 lines) elided ...]"),
            "{out}"
        );
        assert_eq!(
            elide_middle(&out, 1000),
            out,
            "a second cap changes nothing"
        );
    }

    #[test]
    fn the_note_counts_every_byte_and_line_dropped() {
        let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let mut kept = HeadTail::new(1000);
        for chunk in text.as_bytes().chunks(4096) {
            kept.push(std::str::from_utf8(chunk).unwrap());
        }
        let out = kept.finish();
        let (head, rest) = out.split_once("\n\n[... ").unwrap();
        let (note, tail) = rest.split_once(" ...]\n\n").unwrap();
        let (bytes, lines) = note.split_once(" bytes (").unwrap();
        let bytes: usize = bytes.parse().unwrap();
        let lines: usize = lines.trim_end_matches(" lines) elided").parse().unwrap();
        assert_eq!(head.len() + bytes + tail.len(), text.len());
        assert_eq!(
            head.matches('\n').count() + lines + tail.matches('\n').count(),
            10_000
        );
    }

    #[test]
    fn streamed_pieces_give_the_same_result_as_one_piece() {
        let text: String = (0..5000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let mut kept = HeadTail::new(300);
        for chunk in text.as_bytes().chunks(7) {
            kept.push(std::str::from_utf8(chunk).unwrap());
        }
        assert_eq!(kept.finish(), elide_middle(&text, 300));
    }

    #[test]
    fn multibyte_characters_are_never_split() {
        let text = "é".repeat(1000);
        let out = elide_middle(&text, 10);
        assert!(out.starts_with("ééééé\n"), "{out}");
        assert!(out.contains("1980 bytes (0 lines) elided"), "{out}");
    }
}
