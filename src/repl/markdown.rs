//! Answers as Markdown on the terminal: headings, lists, quotes, rules, inline code, emphasis,
//! links, and code blocks with syntax highlighting. Text streams in, so rendering goes line by
//! line: a line is drawn once it is complete and never redrawn, and the block structure that
//! spans lines (being inside a code fence) is the only state kept. Inline spans are parsed with
//! pulldown-cmark.
//!
//! Without colour (`NO_COLOR`, or output that is not a terminal) the text passes unchanged:
//! plain Markdown reads well as it is, and escapes would only get in the way.

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use super::highlight::{Code, Palette};
use super::style::Style;

/// A horizontal rule is drawn this wide.
const RULE_WIDTH: usize = 40;

const BOLD: (&str, &str) = ("\x1b[1m", "\x1b[22m");
const ITALIC: (&str, &str) = ("\x1b[3m", "\x1b[23m");
const UNDERLINE: (&str, &str) = ("\x1b[4m", "\x1b[24m");
const STRIKE: (&str, &str) = ("\x1b[9m", "\x1b[29m");
const CODE: (&str, &str) = ("\x1b[36m", "\x1b[39m");

struct Fence {
    /// The opening run (```` ``` ```` or `~~~`, maybe longer); a close is at least as long.
    marker: String,
    code: Code,
}

pub(super) struct Markdown {
    style: Style,
    palette: Palette,
    /// The unfinished last line.
    pending: String,
    fence: Option<Fence>,
}

impl Markdown {
    pub(super) fn new(style: Style, palette: Palette) -> Markdown {
        Markdown {
            style,
            palette,
            pending: String::new(),
            fence: None,
        }
    }

    fn rendering(&self) -> bool {
        self.style.is_colour()
    }

    /// Streamed text in; what can be drawn now out (whole rendered lines, or the text itself
    /// when nothing is rendered).
    pub(super) fn push(&mut self, text: &str) -> String {
        if !self.rendering() {
            return text.to_string();
        }
        self.pending.push_str(text);
        let Some(end) = self.pending.rfind('\n') else {
            return String::new();
        };
        let rest = self.pending.split_off(end + 1);
        let done = std::mem::replace(&mut self.pending, rest);
        let mut out = String::new();
        for line in done.lines() {
            if let Some(drawn) = self.line(line.trim_end_matches('\r')) {
                out.push_str(&drawn);
                out.push('\n');
            }
        }
        out
    }

    /// The unfinished line as it arrived, for a live preview until it is complete.
    pub(super) fn pending(&self) -> &str {
        &self.pending
    }

    /// The text block ended: its unfinished line is drawn as a line, and a code fence the
    /// model never closed is closed.
    pub(super) fn finish(&mut self) -> String {
        let last = std::mem::take(&mut self.pending);
        let out = match self.rendering() && !last.is_empty() {
            true => self.line(&last).map(|l| l + "\n").unwrap_or_default(),
            false => String::new(),
        };
        self.fence = None;
        out
    }

    /// One complete line; `None` for a line that draws nothing (a fence).
    fn line(&mut self, line: &str) -> Option<String> {
        let trimmed = line.trim_start();
        if let Some(fence) = self.fence.as_mut() {
            if is_close(trimmed, &fence.marker) {
                self.fence = None;
                return None;
            }
            return Some(fence.code.line(line));
        }
        if let Some((marker, lang)) = open_fence(trimmed) {
            self.fence = Some(Fence {
                marker,
                code: Code::new(lang, self.palette),
            });
            return None;
        }
        Some(block(self.style, line))
    }
}

/// A whole text at once (an answer shown again after `--resume`).
pub(super) fn render(style: Style, text: &str) -> String {
    let mut md = Markdown::new(style, Palette::detect());
    let mut out = md.push(text);
    out.push_str(&md.finish());
    out
}

/// ```` ```lang ```` or `~~~lang`: the marker and the language.
fn open_fence(trimmed: &str) -> Option<(String, &str)> {
    let first = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = trimmed.chars().take_while(|c| *c == first).count();
    if run < 3 {
        return None;
    }
    let info = trimmed[run..].trim();
    // A backtick fence's info string cannot hold a backtick: that line is inline code.
    if first == '`' && info.contains('`') {
        return None;
    }
    let lang = info.split_whitespace().next().unwrap_or("");
    Some((trimmed[..run].to_string(), lang))
}

fn is_close(trimmed: &str, marker: &str) -> bool {
    let Some(first) = marker.chars().next() else {
        return false;
    };
    let run = trimmed.chars().take_while(|c| *c == first).count();
    run >= marker.len() && trimmed[run..].trim().is_empty()
}

/// A line outside code: its block marker (heading, quote, list item, rule) drawn, then the
/// rest as inline Markdown.
fn block(style: Style, line: &str) -> String {
    let indent = &line[..line.len() - line.trim_start().len()];
    let body = line.trim_start();
    if let Some(text) = heading(body) {
        let (on, off) = BOLD;
        return format!("{indent}{on}{}{off}", inline(text));
    }
    if is_rule(body) {
        return style.dim(&"─".repeat(RULE_WIDTH));
    }
    if let Some(rest) = body.strip_prefix('>') {
        let rest = rest.strip_prefix(' ').unwrap_or(rest);
        return format!("{indent}{}{}", style.dim("│ "), block(style, rest));
    }
    if let Some(rest) = ["- ", "* ", "+ "].iter().find_map(|m| body.strip_prefix(m)) {
        let (mark, rest) = match rest {
            r if r.starts_with("[ ] ") => ("☐ ", &r[4..]),
            r if r.starts_with("[x] ") || r.starts_with("[X] ") => ("☑ ", &r[4..]),
            r => ("• ", r),
        };
        return format!("{indent}{mark}{}", inline(rest));
    }
    if let Some((number, rest)) = ordered_item(body) {
        return format!("{indent}{number} {}", inline(rest));
    }
    format!("{indent}{}", inline(body))
}

/// `# Title` … `###### Title`, with optional closing hashes.
fn heading(body: &str) -> Option<&str> {
    let hashes = body.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &body[hashes..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    Some(rest.trim().trim_end_matches('#').trim_end())
}

/// `---`, `***`, `___` (three or more, spaces allowed between).
fn is_rule(body: &str) -> bool {
    let marks: Vec<char> = body.chars().filter(|c| !c.is_whitespace()).collect();
    marks.len() >= 3 && matches!(marks[0], '-' | '*' | '_') && marks.iter().all(|c| *c == marks[0])
}

/// `12. rest` or `12) rest`: the number with its mark, and the rest.
fn ordered_item(body: &str) -> Option<(&str, &str)> {
    let digits = body.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let after = &body[digits..];
    let rest = after
        .strip_prefix(". ")
        .or_else(|| after.strip_prefix(") "))?;
    Some((&body[..=digits], rest))
}

/// Emphasis, strong, strikethrough, inline code and links within one line. Block structure
/// was taken off by the caller; should the rest still look like a block to the parser, its
/// text is kept all the same.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    // A link's target and where its text starts in `out`.
    let mut link: Option<(String, usize)> = None;
    let options = pulldown_cmark::Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(text, options) {
        match event {
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => out.push_str(&t),
            Event::Code(t) => {
                let (on, off) = CODE;
                out.push_str(&format!("{on}{t}{off}"));
            }
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::Start(Tag::Strong) => out.push_str(BOLD.0),
            Event::End(TagEnd::Strong) => out.push_str(BOLD.1),
            Event::Start(Tag::Emphasis) => out.push_str(ITALIC.0),
            Event::End(TagEnd::Emphasis) => out.push_str(ITALIC.1),
            Event::Start(Tag::Strikethrough) => out.push_str(STRIKE.0),
            Event::End(TagEnd::Strikethrough) => out.push_str(STRIKE.1),
            Event::Start(Tag::Link { dest_url, .. }) => {
                out.push_str(UNDERLINE.0);
                link = Some((dest_url.to_string(), out.len()));
            }
            Event::End(TagEnd::Link) => {
                let shown = link
                    .take()
                    .filter(|(url, start)| !out[*start..].contains(url.as_str()));
                out.push_str(UNDERLINE.1);
                if let Some((url, _)) = shown {
                    out.push_str(&format!(" \x1b[2m({url})\x1b[22m"));
                }
            }
            Event::TaskListMarker(done) => out.push_str(if done { "☑ " } else { "☐ " }),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn colour() -> Markdown {
        Markdown::new(Style::new(true), Palette::Xterm256)
    }

    /// The text without escapes, to check what is drawn apart from how.
    fn plain(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn lines_are_drawn_only_once_complete() {
        let mut md = colour();
        assert_eq!(md.push("Some **bo"), "");
        assert_eq!(md.pending(), "Some **bo");
        let out = md.push("ld** text\nnext");
        assert_eq!(out, "Some \x1b[1mbold\x1b[22m text\n");
        assert_eq!(md.pending(), "next");
        assert_eq!(plain(&md.finish()), "next\n");
        assert_eq!(md.finish(), "");
    }

    #[test]
    fn block_markers_are_drawn_and_inline_spans_styled() {
        let text = "# Title #\n- item with `code`\n  * [x] done\n3. third\n> quoted *word*\n---\nsee [docs](https://x.dev) and <https://y.dev>\nsnake_case_name stays\n";
        let out = render(Style::new(true), text);
        let lines: Vec<String> = out.lines().map(plain).collect();
        assert_eq!(
            lines,
            [
                "Title",
                "• item with code",
                "  ☑ done",
                "3. third",
                "│ quoted word",
                &"─".repeat(RULE_WIDTH),
                "see docs (https://x.dev) and https://y.dev",
                "snake_case_name stays",
            ]
        );
        assert!(out.contains("\x1b[1mTitle"), "{out:?}");
        assert!(out.contains("\x1b[36mcode\x1b[39m"), "{out:?}");
        assert!(out.contains("\x1b[3mword\x1b[23m"), "{out:?}");
    }

    #[test]
    fn code_blocks_lose_their_fences_and_are_highlighted_across_chunks() {
        let mut md = colour();
        let mut out = md.push("Here:\n```rust\nfn main() {\n    let s = \"a");
        out.push_str(&md.push("b\";\n}\n```\nAfter `x`.\n"));
        let lines: Vec<String> = out.lines().map(plain).collect();
        assert_eq!(
            lines,
            [
                "Here:",
                "fn main() {",
                "    let s = \"ab\";",
                "}",
                "After x."
            ]
        );
        let code_line = out.lines().nth(2).unwrap();
        assert!(code_line.contains("\x1b[38;5;"), "{code_line:?}");
        assert!(!out.contains("```"));
    }

    #[test]
    fn a_fence_closes_only_with_its_own_marker() {
        let out = render(
            Style::new(true),
            "````md\n```\ninner\n```\n````\n*after*\n~~~\n# not a heading\n",
        );
        let lines: Vec<String> = out.lines().map(plain).collect();
        assert_eq!(lines, ["```", "inner", "```", "after", "# not a heading"]);
    }

    #[test]
    fn without_colour_the_text_passes_unchanged() {
        let mut md = Markdown::new(Style::new(false), Palette::Xterm256);
        assert_eq!(md.push("# Title\n**b"), "# Title\n**b");
        assert_eq!(md.finish(), "");
        assert_eq!(render(Style::new(false), "- a\n"), "- a\n");
    }

    #[test]
    fn what_only_looks_like_markup_is_left_alone() {
        let out = render(
            Style::new(true),
            "#hashtag\n2024 was a year\n1.5 apples\n**\n",
        );
        let lines: Vec<String> = out.lines().map(plain).collect();
        assert_eq!(lines, ["#hashtag", "2024 was a year", "1.5 apples", "**"]);
    }
}
