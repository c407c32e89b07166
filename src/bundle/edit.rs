//! Text edits on a file's bytes: PAWS's line commands, SEARCH/REPLACE and diff hunks. A file
//! is lines and their endings, so CRLF files stay CRLF and a missing final newline stays
//! missing; new lines take the file's own ending.

use super::parse::{Hunk, Line, LineCommand};

/// A file as lines. `crlf`: most of its lines end in `\r\n`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Text {
    lines: Vec<Line>,
    crlf: bool,
    final_newline: bool,
}

impl Text {
    pub(super) fn parse(bytes: &[u8]) -> Text {
        let final_newline = bytes.ends_with(b"\n");
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let mut lines: Vec<Line> = if bytes.is_empty() {
            Vec::new()
        } else {
            body.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect()
        };
        let with_cr = lines.iter().filter(|l| l.ends_with(b"\r")).count();
        let crlf = with_cr * 2 > lines.len();
        if crlf {
            for line in &mut lines {
                if line.ends_with(b"\r") {
                    line.pop();
                }
            }
        }
        Text {
            lines,
            crlf,
            final_newline,
        }
    }

    pub(super) fn to_bytes(&self) -> Vec<u8> {
        let eol: &[u8] = if self.crlf { b"\r\n" } else { b"\n" };
        let mut out = self.lines.join(eol);
        if self.final_newline && !self.lines.is_empty() {
            out.extend_from_slice(eol);
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum EditError {
    #[error("{0}")]
    Lines(String),
    #[error("the text to find is not in the file{0}")]
    Missing(String),
    #[error(
        "the text to find is in the file {count} times ({stage}); give more lines around it so it is found once"
    )]
    Ambiguous { count: usize, stage: &'static str },
}

/// PAWS's commands against the original numbering; they must ascend and not overlap.
pub(super) fn apply_lines(text: &mut Text, commands: &[LineCommand]) -> Result<(), EditError> {
    let n = text.lines.len();
    // Each command as (first line it touches, last line, its replacement), 1-based; an
    // insertion after line k touches nothing and sits between k and k + 1.
    let mut out: Vec<Line> = Vec::with_capacity(n);
    let mut next = 1usize;
    let mut last_end = 0usize;
    let mut last_insert: Option<usize> = None;
    for command in commands {
        match command {
            LineCommand::Replace { from, to, .. } | LineCommand::Delete { from, to } => {
                if from > to {
                    return Err(EditError::Lines(format!(
                        "lines {from}-{to} run backwards; give the first line, then the last"
                    )));
                }
                if *from == 0 || *to > n {
                    return Err(EditError::Lines(format!(
                        "lines {from}-{to} are not in the file, which has {n} lines"
                    )));
                }
                if *from <= last_end || last_insert.is_some_and(|k| k >= *from) {
                    return Err(EditError::Lines(format!(
                        "lines {from}-{to} overlap or come before an earlier command; commands must ascend"
                    )));
                }
                out.extend(text.lines[next - 1..from - 1].iter().cloned());
                if let LineCommand::Replace { content, .. } = command {
                    out.extend(content.iter().cloned());
                }
                next = to + 1;
                last_end = *to;
            }
            LineCommand::InsertAfter { line, content } => {
                if *line > n {
                    return Err(EditError::Lines(format!(
                        "line {line} is not in the file, which has {n} lines"
                    )));
                }
                if *line < last_end || last_insert.is_some_and(|k| k > *line) {
                    return Err(EditError::Lines(format!(
                        "an insertion after line {line} comes before an earlier command; commands must ascend"
                    )));
                }
                out.extend(text.lines[next - 1..*line].iter().cloned());
                out.extend(content.iter().cloned());
                next = line + 1;
                last_insert = Some(*line);
            }
        }
    }
    out.extend(text.lines[(next - 1).min(n)..].iter().cloned());
    text.lines = out;
    Ok(())
}

/// A way to compare lines: what of a line counts.
type Normalise = fn(&[u8]) -> &[u8];

/// How lines are compared, strictest first.
const STAGES: [(&str, Normalise); 3] = [
    ("exactly", |l| l),
    ("ignoring trailing whitespace", |l| l.trim_ascii_end()),
    ("ignoring indentation", |l| l.trim_ascii()),
];

/// Replaces the one place `search` matches with `replace`: exactly, else ignoring trailing
/// whitespace, else ignoring indentation; more than one match at the first stage that finds
/// any is an error, as is none at all. Line numbers settle nothing (a model's are often
/// wrong): only a unique match is trusted.
pub(super) fn replace_unique(
    text: &mut Text,
    search: &[Line],
    replace: &[Line],
) -> Result<(), EditError> {
    if search.is_empty() {
        return Err(EditError::Missing(
            " (the search text is empty; name lines to replace)".into(),
        ));
    }
    for (stage, norm) in STAGES {
        let hits: Vec<usize> = (0..=text.lines.len().saturating_sub(search.len()))
            .filter(|&at| {
                at + search.len() <= text.lines.len()
                    && search
                        .iter()
                        .zip(&text.lines[at..])
                        .all(|(s, l)| norm(s) == norm(l))
            })
            .collect();
        match hits.len() {
            0 => continue,
            1 => {
                let at = hits[0];
                text.lines
                    .splice(at..at + search.len(), replace.iter().cloned());
                return Ok(());
            }
            count => return Err(EditError::Ambiguous { count, stage }),
        }
    }
    Err(EditError::Missing(String::new()))
}

/// A diff hunk: its old lines replaced by its new ones where they match once; a hunk with no
/// old lines inserts after its header's line number, moved by what earlier hunks added or
/// removed (`shift`).
pub(super) fn apply_hunk(text: &mut Text, hunk: &Hunk, shift: isize) -> Result<(), EditError> {
    if hunk.old.is_empty() {
        let at = hunk.old_start.saturating_add_signed(shift);
        if at > text.lines.len() {
            return Err(EditError::Lines(format!(
                "an insertion after line {at}, but the file has {} lines",
                text.lines.len()
            )));
        }
        text.lines.splice(at..at, hunk.new.iter().cloned());
        return Ok(());
    }
    replace_unique(text, &hunk.old, &hunk.new)
}

/// Lines of new content as a file's bytes, each ended by a newline.
pub(super) fn lines_to_bytes(lines: &[Line]) -> Vec<u8> {
    let mut out = lines.join(&b'\n');
    if !lines.is_empty() {
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<Line> {
        text.lines().map(|l| l.as_bytes().to_vec()).collect()
    }

    fn ten() -> Text {
        Text::parse(b"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")
    }

    #[test]
    fn line_commands_mean_what_paws_documents() {
        // PAWS's own example (sys_d.md): content follows its command, numbers are the
        // original file's.
        let mut text = ten();
        apply_lines(
            &mut text,
            &[
                LineCommand::Replace {
                    from: 3,
                    to: 4,
                    content: lines("three\nfour"),
                },
                LineCommand::Delete { from: 5, to: 6 },
                LineCommand::InsertAfter {
                    line: 9,
                    content: lines("nine and a half"),
                },
            ],
        )
        .unwrap();
        assert_eq!(
            text.to_bytes(),
            b"1\n2\nthree\nfour\n7\n8\n9\nnine and a half\n10\n"
        );
        let mut text = ten();
        apply_lines(
            &mut text,
            &[LineCommand::InsertAfter {
                line: 0,
                content: lines("zero"),
            }],
        )
        .unwrap();
        assert!(text.to_bytes().starts_with(b"zero\n1\n"));
    }

    #[test]
    fn out_of_range_and_descending_commands_are_errors() {
        for commands in [
            vec![LineCommand::Delete { from: 9, to: 11 }],
            vec![LineCommand::Delete { from: 0, to: 1 }],
            vec![
                LineCommand::Delete { from: 5, to: 6 },
                LineCommand::Delete { from: 2, to: 3 },
            ],
            vec![
                LineCommand::Delete { from: 2, to: 5 },
                LineCommand::InsertAfter {
                    line: 3,
                    content: Vec::new(),
                },
            ],
        ] {
            assert!(apply_lines(&mut ten(), &commands).is_err(), "{commands:?}");
        }
    }

    #[test]
    fn crlf_and_a_missing_final_newline_survive_an_edit() {
        let mut text = Text::parse(b"a\r\nb\r\nc");
        replace_unique(&mut text, &lines("b"), &lines("B\nB2")).unwrap();
        assert_eq!(text.to_bytes(), b"a\r\nB\r\nB2\r\nc");
    }

    #[test]
    fn matching_goes_from_exact_to_loose_and_needs_one_match() {
        let mut text = Text::parse(b"fn a() {\n    x();  \n}\nfn b() {\n    x();\n}\n");
        // Exact: only fn b's line has no trailing spaces.
        replace_unique(&mut text, &lines("    x();"), &lines("    y();")).unwrap();
        assert_eq!(
            text.to_bytes(),
            b"fn a() {\n    x();  \n}\nfn b() {\n    y();\n}\n"
        );
        let mut text = Text::parse(b"  a\n  b\n");
        replace_unique(&mut text, &lines("b"), &lines("  c")).unwrap();
        assert_eq!(text.to_bytes(), b"  a\n  c\n");
        let mut text = Text::parse(b"x\ny\nx\n");
        assert!(matches!(
            replace_unique(&mut text, &lines("x"), &lines("z")),
            Err(EditError::Ambiguous { count: 2, .. })
        ));
        assert!(matches!(
            replace_unique(&mut text, &lines("w"), &lines("z")),
            Err(EditError::Missing(_))
        ));
    }
}
