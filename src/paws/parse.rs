//! Reading a model's reply as it really arrives: prose around the bundle, markdown fences or
//! none, CRLF, a last file cut off. It holds any mix of 🐕 blocks (whole files, PAWS's delete
//! and line commands), 🐈 entries (a bundle made by cats; everything before its `# Cats Bundle`
//! header is skipped, since prepended instructions hold example blocks), SEARCH/REPLACE blocks
//! and unified diffs. Nothing here touches the disk.

use base64::Engine as _;

use super::format::{
    HEADER, MANIFEST, Marker, is_closing_fence, is_fence, is_known_hash, marker, trim,
};
use super::front;

/// One line of a text edit, without its line ending.
pub type Line = Vec<u8>;

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A whole file. `machine`: exact bytes (a 🐈 entry, or any block of a bundle with front
    /// matter: both are written by a program) rather than a model's 🐕 block.
    Full {
        path: Vec<u8>,
        content: Vec<u8>,
        binary: bool,
        machine: bool,
    },
    Delete {
        path: Vec<u8>,
    },
    /// PAWS's line commands, in the order written.
    Lines {
        path: Vec<u8>,
        commands: Vec<LineCommand>,
    },
    /// Replace the unique match of `search` with `replace` (an empty search on a missing file
    /// creates it).
    SearchReplace {
        path: Vec<u8>,
        search: Vec<Line>,
        replace: Vec<Line>,
    },
    /// One file's part of a unified diff; `old`/`new` is `None` for /dev/null.
    Diff {
        old: Option<Vec<u8>>,
        new: Option<Vec<u8>>,
        hunks: Vec<Hunk>,
    },
}

impl Block {
    /// The file the block changes.
    pub fn path(&self) -> &[u8] {
        match self {
            Block::Full { path, .. }
            | Block::Delete { path }
            | Block::Lines { path, .. }
            | Block::SearchReplace { path, .. } => path,
            Block::Diff { old, new, .. } => new.as_deref().or(old.as_deref()).unwrap_or_default(),
        }
    }
}

/// `REPLACE_LINES(a, b)`, `INSERT_AFTER_LINE(n)`, `DELETE_LINES(a, b)`: 1-based, inclusive,
/// numbers of the original file; the content follows its command.
#[derive(Debug, Clone, PartialEq)]
pub enum LineCommand {
    Replace {
        from: usize,
        to: usize,
        content: Vec<Line>,
    },
    InsertAfter {
        line: usize,
        content: Vec<Line>,
    },
    Delete {
        from: usize,
        to: usize,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hunk {
    /// The old file's first line number in the header (0 for an insertion at the top).
    pub(crate) old_start: usize,
    pub old: Vec<Line>,
    pub new: Vec<Line>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Changes {
        blocks: Vec<Block>,
        /// `# Manifest:` lines: each bundled file's path and SHA-256.
        manifest: Vec<(Vec<u8>, String)>,
        /// The bundle's front matter, when it starts with a versioned one.
        front: Option<front::Read>,
    },
    /// The model asked for more context instead of answering.
    RequestContext(String),
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

fn error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line: line + 1,
        message: message.into(),
    }
}

/// A `@@ PAWS_CMD NAME(args) @@` line: the command's name and its argument text.
fn paws_command(line: &[u8]) -> Option<(String, String)> {
    let line = std::str::from_utf8(trim(line)).ok()?;
    let inner = line.strip_prefix("@@")?.strip_suffix("@@")?.trim();
    let (word, rest) = inner.split_at(inner.find(char::is_whitespace).unwrap_or(inner.len()));
    if !word.eq_ignore_ascii_case("PAWS_CMD") {
        return None;
    }
    let call = rest.trim();
    // `DELETE_FILE` without its parentheses is still the command, never file content.
    let (name, args) = match call.find('(') {
        Some(open) => (
            &call[..open],
            call[open + 1..]
                .strip_suffix(')')
                .unwrap_or(&call[open + 1..]),
        ),
        None => (call, ""),
    };
    Some((name.trim().to_ascii_uppercase(), args.trim().to_string()))
}

fn numbers(args: &str, count: usize, at: usize) -> Result<Vec<usize>, ParseError> {
    let parsed: Result<Vec<usize>, _> = args.split(',').map(|a| a.trim().parse()).collect();
    match parsed {
        Ok(n) if n.len() == count => Ok(n),
        _ => Err(error(at, format!("`{args}` is not {count} line number(s)"))),
    }
}

/// `reply` split at each newline (a last empty piece after a final one included), found a
/// word at a time rather than a byte at a time: a large bundle has a million lines.
fn split_lines(reply: &[u8]) -> Vec<&[u8]> {
    // Room for lines of a typical length, not a pass over the reply to count them.
    let mut lines = Vec::with_capacity(reply.len() / 32 + 1);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', reply) {
        lines.push(&reply[start..end]);
        start = end + 1;
    }
    lines.push(&reply[start..]);
    lines
}

pub fn parse(reply: &[u8]) -> Result<Reply, ParseError> {
    let (front, at) = match front::read(reply) {
        Ok(found) => found.map_or((None, 0), |(front, at)| (Some(front), at)),
        Err(e) => return Err(error(e.line().saturating_sub(1), e.to_string())),
    };
    let mut lines = split_lines(reply);
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    // The front matter's lines keep their numbers and are never read as anything.
    let skipped = memchr::memchr_iter(b'\n', &reply[..at]).count();
    lines.iter_mut().take(skipped).for_each(|l| *l = b"");
    let plain = |l: &[u8]| -> Vec<u8> { l.strip_suffix(b"\r").unwrap_or(l).to_vec() };
    let first = bundle_start(&lines)?;
    let mut blocks = Vec::new();
    let mut manifest = Vec::new();
    let mut i = first;
    while i < lines.len() {
        let line = plain(lines[i]);
        if let Some(rest) = line.strip_prefix(MANIFEST.as_bytes())
            && let Some(space) = rest.iter().position(|b| *b == b' ')
            && let Ok(hash) = std::str::from_utf8(&rest[..space])
            && is_known_hash(hash)
        {
            manifest.push((rest[space + 1..].to_vec(), hash.to_string()));
            i += 1;
            continue;
        }
        if let Some((name, args)) = paws_command(&line)
            && name == "REQUEST_CONTEXT"
        {
            return Ok(Reply::RequestContext(args));
        }
        if let Some(m) = marker(lines[i]) {
            if !m.start {
                return Err(error(
                    i,
                    format!(
                        "an END marker for {} with no START before it",
                        String::from_utf8_lossy(&m.path)
                    ),
                ));
            }
            let (block, next) = file_block(reply, &lines, i, m)?;
            if let Some(block) = block {
                blocks.push(block);
            } else {
                return Ok(Reply::RequestContext(request_reason(&lines, i, next)));
            }
            i = next;
            continue;
        }
        if is_search(&line) {
            let (block, next) = search_replace(&lines, i)?;
            blocks.push(block);
            i = next;
            continue;
        }
        if line.starts_with(b"--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with(b"+++ ")) {
            let (block, next) = diff(&lines, i)?;
            blocks.push(block);
            i = next;
            continue;
        }
        i += 1;
    }
    // A program writes front matter (cats, an agent run's artifact), and its files' bytes
    // exactly: no model convention about a final newline applies.
    for block in blocks.iter_mut().filter(|_| front.is_some()) {
        if let Block::Full { machine, .. } = block {
            *machine = true;
        }
    }
    Ok(Reply::Changes {
        blocks,
        manifest,
        front,
    })
}

/// PAWS's line between prepended instructions and the bundle they introduce.
const END_OF_INSTRUCTIONS: &[u8] = b"--- END PREPENDED INSTRUCTIONS ---";

/// Where reading starts. A 🐈 bundle's prepended instructions hold example 🐕 blocks, so what
/// precedes its `# Cats Bundle` header is skipped: the header that counts is the last one
/// before the first 🐈 entry that no 🐕 block holds (a 🐕 block may carry a file that shows a
/// bundle, header and all). 🐕 blocks before that header are instructions only when PAWS's
/// line ends them; otherwise the reply is a change followed by a bundle, and which of the two
/// is meant cannot be told.
fn bundle_start(lines: &[&[u8]]) -> Result<usize, ParseError> {
    let plain = |l: &[u8]| l.strip_suffix(b"\r").unwrap_or(l).to_vec();
    let mut open: Option<Vec<u8>> = None;
    let mut last_dog: Option<usize> = None;
    // The header, and the last 🐕 block that began before it.
    let mut header: Option<(usize, Option<usize>)> = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(m) = marker(line) {
            match (&open, m.cat, m.start) {
                (None, true, true) => {
                    let Some((h, dog)) = header else { return Ok(0) };
                    let instructions = dog.is_none_or(|dog| {
                        lines[dog..h].iter().any(|l| trim(l) == END_OF_INSTRUCTIONS)
                    });
                    if !instructions {
                        return Err(error(
                            h,
                            "the reply has 🐕 blocks before a `# Cats Bundle` header and 🐈 \
                             entries after it, so which of them to apply cannot be told; give the \
                             🐕 blocks alone, or the bundle alone"
                                .to_string(),
                        ));
                    }
                    return Ok(h);
                }
                (None, false, true) => {
                    open = Some(m.path);
                    last_dog = Some(i);
                }
                (Some(path), false, false) if *path == m.path => open = None,
                _ => {}
            }
            continue;
        }
        if open.is_none() && plain(line) == HEADER.as_bytes() {
            header = Some((i, last_dog));
        }
    }
    Ok(0)
}

fn request_reason(lines: &[&[u8]], from: usize, to: usize) -> String {
    lines[from..to]
        .iter()
        .find_map(|l| paws_command(l).filter(|(n, _)| n == "REQUEST_CONTEXT"))
        .map(|(_, args)| args)
        .unwrap_or_default()
}

/// The block that starts at line `at`; `None` for a block holding `REQUEST_CONTEXT`. Also the
/// index of the line after its END marker.
fn file_block(
    reply: &[u8],
    lines: &[&[u8]],
    at: usize,
    start: Marker,
) -> Result<(Option<Block>, usize), ParseError> {
    let name = String::from_utf8_lossy(&start.path).into_owned();
    let crlf = lines[at].ends_with(b"\r");
    let fenced = lines.get(at + 1).is_some_and(|l| is_fence(l));
    // A block closes only at its own END (after the closing fence, in a fenced block): any
    // other marker before it is content (a file about bundles, an example in a README), and
    // only a block whose END never comes is an error.
    let mut end = None;
    let mut other = None;
    for j in at + 1..lines.len() {
        let Some(m) = marker(lines[j]) else { continue };
        if m.cat != start.cat {
            continue;
        }
        let closes = !m.start && m.path == start.path;
        if closes && (!fenced || (j > at + 2 && is_closing_fence(lines[j - 1]))) {
            end = Some(j);
            break;
        }
        other.get_or_insert((j, m));
    }
    let Some(end) = end else {
        let after = other.map_or_else(String::new, |(j, m)| {
            format!(
                "; {} {} at line {} comes first",
                if m.start { "a START for" } else { "an END for" },
                String::from_utf8_lossy(&m.path),
                j + 1
            )
        });
        return Err(error(
            at,
            format!(
                "the block for {name} is never closed: no END marker for it follows{after} (was the reply cut off, or its END left out?)"
            ),
        ));
    };
    // Slices of the reply, not copies: a 100 MB bundle has a million lines.
    let inner: Vec<&[u8]> = lines[at + 1..end]
        .iter()
        .map(|l| {
            if crlf {
                l.strip_suffix(b"\r").unwrap_or(l)
            } else {
                l
            }
        })
        .collect();
    let inner = match inner.as_slice() {
        [_, middle @ .., last] if fenced && is_closing_fence(last) => middle,
        all => all,
    };
    let path = start.path.clone();
    if start.binary {
        let text: Vec<u8> = inner
            .concat()
            .into_iter()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        let content = base64::engine::general_purpose::STANDARD
            .decode(&text)
            .map_err(|e| error(at, format!("the base64 of {name} does not decode: {e}")))?;
        let block = Block::Full {
            path,
            content,
            binary: true,
            machine: start.cat,
        };
        return Ok((Some(block), end + 1));
    }
    // A command block starts with its command; a `@@ PAWS_CMD … @@` line further down a file
    // is the file's text (a document about PAWS).
    let first = inner.iter().find(|l| !trim(l).is_empty());
    if !start.cat && first.is_some_and(|l| paws_command(l).is_some()) {
        return commands(inner, path, at).map(|b| (b, end + 1));
    }
    let block = Block::Full {
        path,
        content: joined(reply, inner),
        binary: false,
        machine: start.cat,
    };
    Ok((Some(block), end + 1))
}

/// `inner`'s lines joined by newlines: one copy of the reply's bytes when they lie there
/// side by side, as a file's lines do unless their `\r`s were taken off.
fn joined(reply: &[u8], inner: &[&[u8]]) -> Vec<u8> {
    let (Some(first), Some(last)) = (inner.first(), inner.last()) else {
        return Vec::new();
    };
    let base = reply.as_ptr() as usize;
    let from = (first.as_ptr() as usize).wrapping_sub(base);
    let to = (last.as_ptr() as usize)
        .wrapping_sub(base)
        .wrapping_add(last.len());
    let len: usize = inner.iter().map(|l| l.len() + 1).sum::<usize>() - 1;
    match reply.get(from..to) {
        Some(span) if span.len() == len => span.to_vec(),
        _ => inner.join(&b'\n'),
    }
}

/// A 🐕 block holding PAWS commands.
fn commands(inner: &[&[u8]], path: Vec<u8>, at: usize) -> Result<Option<Block>, ParseError> {
    let mut out: Vec<LineCommand> = Vec::new();
    let mut delete_file = false;
    for (k, line) in inner.iter().enumerate() {
        let Some((name, args)) = paws_command(line) else {
            match out.last_mut() {
                Some(
                    LineCommand::Replace { content, .. } | LineCommand::InsertAfter { content, .. },
                ) => {
                    content.push(line.to_vec());
                }
                _ if trim(line).is_empty() => {}
                _ => {
                    return Err(error(
                        at + 1 + k,
                        "content in a command block that follows no REPLACE_LINES or INSERT_AFTER_LINE",
                    ));
                }
            }
            continue;
        };
        match name.as_str() {
            "DELETE_FILE" => delete_file = true,
            "REQUEST_CONTEXT" => return Ok(None),
            "REPLACE_LINES" => {
                let n = numbers(&args, 2, at + 1 + k)?;
                out.push(LineCommand::Replace {
                    from: n[0],
                    to: n[1],
                    content: Vec::new(),
                });
            }
            "DELETE_LINES" => {
                let n = numbers(&args, 2, at + 1 + k)?;
                out.push(LineCommand::Delete {
                    from: n[0],
                    to: n[1],
                });
            }
            "INSERT_AFTER_LINE" => {
                let n = numbers(&args, 1, at + 1 + k)?;
                out.push(LineCommand::InsertAfter {
                    line: n[0],
                    content: Vec::new(),
                });
            }
            other => {
                return Err(error(at + 1 + k, format!("unknown PAWS command {other}")));
            }
        }
    }
    if delete_file {
        if !out.is_empty() {
            return Err(error(at, "DELETE_FILE shares its block with line commands"));
        }
        return Ok(Some(Block::Delete { path }));
    }
    // A model puts a blank line between a command's text and the next command; it is not text.
    // Text it fenced is unwrapped, as a fenced file is.
    for command in &mut out {
        if let LineCommand::Replace { content, .. } | LineCommand::InsertAfter { content, .. } =
            command
        {
            while content.last().is_some_and(|l| trim(l).is_empty()) {
                content.pop();
            }
            let fenced = content.len() >= 2
                && content.first().is_some_and(|l| is_fence(l))
                && content.last().is_some_and(|l| is_closing_fence(l));
            if fenced {
                content.pop();
                content.remove(0);
            }
        }
    }
    Ok(Some(Block::Lines {
        path,
        commands: out,
    }))
}

fn run_of(line: &[u8], ch: u8) -> bool {
    let n = line.iter().take_while(|b| **b == ch).count();
    (5..=9).contains(&n)
}

fn is_search(line: &[u8]) -> bool {
    run_of(line, b'<') && trim(line.trim_ascii_start().trim_start_matches(b'<')) == b"SEARCH"
}

trait TrimStart {
    fn trim_start_matches(&self, ch: u8) -> &[u8];
}

impl TrimStart for [u8] {
    fn trim_start_matches(&self, ch: u8) -> &[u8] {
        let n = self.iter().take_while(|b| **b == ch).count();
        &self[n..]
    }
}

fn is_divider(line: &[u8]) -> bool {
    run_of(line, b'=') && trim(line.trim_start_matches(b'=')).is_empty()
}

fn is_replace(line: &[u8]) -> bool {
    run_of(line, b'>') && trim(line.trim_start_matches(b'>')) == b"REPLACE"
}

/// A SEARCH/REPLACE block at `at`; its file is named on the nearest line above that is not a
/// fence or blank.
fn search_replace(lines: &[&[u8]], at: usize) -> Result<(Block, usize), ParseError> {
    let plain = |l: &[u8]| l.strip_suffix(b"\r").unwrap_or(l).to_vec();
    let path = lines[..at]
        .iter()
        .rev()
        .map(|l| plain(l))
        .find(|l| !trim(l).is_empty() && !is_fence(l))
        .and_then(|l| {
            // Markdown around a file name (`### src/a.rs`, `**a.rs**`, `File: a.rs`) is not
            // part of it; a line of prose (`Change this:`) names no file.
            let t = trim(&l);
            let t = trim(t.strip_prefix(b"File:").unwrap_or(t));
            let strip: &[u8] = b"#`*\"' ";
            let start = t.iter().take_while(|b| strip.contains(b)).count();
            let end = t.len() - t.iter().rev().take_while(|b| strip.contains(b)).count();
            let name = &t[start..end.max(start)];
            let plain_word = !name.is_empty()
                && !name.ends_with(b":")
                && !name.iter().any(u8::is_ascii_whitespace)
                && marker(name).is_none();
            plain_word.then(|| name.to_vec())
        })
        .ok_or_else(|| {
            error(
                at,
                "a SEARCH/REPLACE block names no file on the line above it",
            )
        })?;
    let mut search = Vec::new();
    let mut replace = Vec::new();
    let mut in_replace = false;
    for (k, raw) in lines.iter().enumerate().skip(at + 1) {
        let line = plain(raw);
        if !in_replace && is_divider(&line) {
            in_replace = true;
        } else if in_replace && is_divider(&line) {
            return Err(error(
                k,
                "a SEARCH/REPLACE block with two ======= lines; which one divides it is unclear",
            ));
        } else if in_replace && is_replace(&line) {
            return Ok((
                Block::SearchReplace {
                    path,
                    search,
                    replace,
                },
                k + 1,
            ));
        } else if in_replace {
            replace.push(line);
        } else {
            search.push(line);
        }
    }
    Err(error(
        at,
        format!(
            "the SEARCH/REPLACE block for {} is never closed (was the reply cut off?)",
            String::from_utf8_lossy(&path)
        ),
    ))
}

/// The path of a `---`/`+++` line: `a/`/`b/` prefixes and a trailing timestamp dropped;
/// `None` for /dev/null.
fn diff_path(line: &[u8]) -> Option<Vec<u8>> {
    let rest = &line[4..];
    let rest = rest.split(|b| *b == b'\t').next().unwrap_or(rest);
    let rest = trim(rest);
    if rest == b"/dev/null" {
        return None;
    }
    let rest = rest
        .strip_prefix(b"a/")
        .or_else(|| rest.strip_prefix(b"b/"))
        .unwrap_or(rest);
    Some(rest.to_vec())
}

/// `@@ -a,b +c,d @@`: the old start and the old and new line counts (a count left out is 1).
fn hunk_header(line: &[u8]) -> Option<(usize, usize, usize)> {
    let text = std::str::from_utf8(line).ok()?;
    let mut words = text.split_whitespace();
    (words.next()? == "@@").then_some(())?;
    let range = |word: &str, sign: char| -> Option<(usize, usize)> {
        let body = word.strip_prefix(sign)?;
        let mut parts = body.split(',');
        let start = parts.next()?.parse().ok()?;
        let count = parts.next().map_or(Some(1), |c| c.parse().ok())?;
        Some((start, count))
    };
    let (old_start, old_count) = range(words.next()?, '-')?;
    let (_, new_count) = range(words.next()?, '+')?;
    Some((old_start, old_count, new_count))
}

fn diff(lines: &[&[u8]], at: usize) -> Result<(Block, usize), ParseError> {
    let plain = |l: &[u8]| l.strip_suffix(b"\r").unwrap_or(l).to_vec();
    let old = diff_path(&plain(lines[at]));
    let new = diff_path(&plain(lines[at + 1]));
    let mut hunks = Vec::new();
    let mut i = at + 2;
    while i < lines.len() {
        let line = plain(lines[i]);
        if !line.starts_with(b"@@") {
            break;
        }
        // The counts say where the hunk ends: a removed line that reads `--- x` is content.
        let (old_start, old_count, new_count) = hunk_header(&line)
            .ok_or_else(|| error(i, "a hunk header without line numbers (`@@ -a,b +c,d @@`)"))?;
        let mut hunk = Hunk {
            old_start,
            old: Vec::new(),
            new: Vec::new(),
        };
        i += 1;
        while hunk.old.len() < old_count || hunk.new.len() < new_count {
            let Some(raw) = lines.get(i) else {
                return Err(error(
                    i,
                    "a diff hunk that stops before its counts (was the reply cut off?)",
                ));
            };
            let line = plain(raw);
            match line.first() {
                Some(b' ') => {
                    hunk.old.push(line[1..].to_vec());
                    hunk.new.push(line[1..].to_vec());
                }
                Some(b'-') => hunk.old.push(line[1..].to_vec()),
                Some(b'+') => hunk.new.push(line[1..].to_vec()),
                Some(b'\\') => {}
                // A blank context line whose space a model left out.
                None => {
                    hunk.old.push(Vec::new());
                    hunk.new.push(Vec::new());
                }
                _ => {
                    return Err(error(
                        i,
                        "a line in a diff hunk starts with none of ' ', '-', '+' (do the hunk's counts match its lines?)",
                    ));
                }
            }
            i += 1;
        }
        // More hunk-shaped lines right after the counts ran out: the counts are wrong, and
        // applying part of the hunk would be a silent half-change.
        let next_file = lines.get(i).is_some_and(|l| l.starts_with(b"--- "))
            && lines.get(i + 1).is_some_and(|l| l.starts_with(b"+++ "));
        let continues = lines
            .get(i)
            .is_some_and(|l| matches!(l.first(), Some(b' ' | b'-' | b'+')));
        if hunk.old.len() != old_count || hunk.new.len() != new_count || (continues && !next_file) {
            return Err(error(i, "a diff hunk whose lines do not match its counts"));
        }
        if lines.get(i).is_some_and(|l| l.starts_with(b"\\")) {
            i += 1;
        }
        hunks.push(hunk);
    }
    if hunks.is_empty() && old.is_some() && new.is_some() {
        return Err(error(at, "a diff header with no hunks"));
    }
    Ok((Block::Diff { old, new, hunks }, i))
}

#[cfg(test)]
mod tests;
