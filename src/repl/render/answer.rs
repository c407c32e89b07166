//! The answer text as it streams: complete lines are drawn as Markdown, and on a live terminal
//! the unfinished line is shown as it arrives, then replaced by its rendered form once its
//! newline comes. Only that one line is ever redrawn, so scrolled-off text never changes.

use std::os::fd::AsRawFd;

use unicode_width::UnicodeWidthStr;

use crate::repl::highlight::Palette;
use crate::repl::markdown::Markdown;
use crate::repl::style::Style;

pub(super) struct Answer {
    md: Markdown,
    /// Whether the unfinished line may be shown and erased again.
    live: bool,
    /// The unfinished line as it is on screen.
    preview: String,
}

impl Answer {
    pub(super) fn new(style: Style, live: bool) -> Answer {
        Answer {
            md: Markdown::new(style, Palette::detect()),
            live: live && style.is_colour(),
            preview: String::new(),
        }
    }

    /// What to write for a piece of streamed text.
    pub(super) fn push(&mut self, text: &str) -> String {
        let drawn = self.md.push(text);
        if !self.live {
            return drawn;
        }
        if drawn.is_empty() {
            let new = self
                .md
                .pending()
                .get(self.preview.len()..)
                .unwrap_or_default()
                .to_string();
            self.preview.push_str(&new);
            return shown(&new);
        }
        let mut out = self.erase();
        out.push_str(&drawn);
        self.preview = self.md.pending().to_string();
        out.push_str(&shown(&self.preview));
        out
    }

    /// The text block ended: the last line drawn for good. Writing the result leaves the
    /// cursor at the start of a line whenever anything was rendered.
    pub(super) fn finish(&mut self) -> String {
        let mut out = self.erase();
        out.push_str(&self.md.finish());
        out
    }

    /// Moves back over the preview and clears it.
    fn erase(&mut self) -> String {
        let preview = std::mem::take(&mut self.preview);
        if preview.is_empty() {
            return String::new();
        }
        let rows = shown(&preview).width().div_ceil(columns()).max(1);
        let up = if rows > 1 {
            format!("\x1b[{}A", rows - 1)
        } else {
            String::new()
        };
        format!("\r{up}\x1b[J")
    }
}

/// Preview text as drawn: tabs as four spaces (so its width is known), no control codes.
fn shown(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c {
            '\t' => Some("    ".to_string()),
            c if c.is_control() => None,
            c => Some(c.to_string()),
        })
        .collect()
}

/// The terminal's width, 80 when it cannot be asked.
fn columns() -> usize {
    // SAFETY: winsize is plain old data; the ioctl fills it or fails.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: stdout's descriptor and a live, writable winsize.
    let asked = unsafe { libc::ioctl(std::io::stdout().as_raw_fd(), libc::TIOCGWINSZ, &mut size) };
    if asked == 0 && size.ws_col > 0 {
        usize::from(size.ws_col)
    } else {
        80
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unfinished_line_is_previewed_then_replaced_by_its_rendering() {
        let mut answer = Answer::new(Style::new(true), true);
        assert_eq!(answer.push("A **b"), "A **b");
        assert_eq!(answer.push("old**"), "old**");
        let out = answer.push(" end\nnext\t1");
        assert_eq!(out, "\r\x1b[JA \x1b[1mbold\x1b[22m end\nnext    1");
        assert_eq!(answer.finish(), "\r\x1b[Jnext\t1\n");
        assert_eq!(answer.finish(), "");
    }

    #[test]
    fn a_wrapped_preview_is_erased_row_by_row() {
        let mut answer = Answer::new(Style::new(true), true);
        let long = "x".repeat(columns() * 2 + 1);
        answer.push(&long);
        assert!(answer.push("\n").starts_with("\r\x1b[2A\x1b[J"));
    }

    #[test]
    fn without_a_live_terminal_only_whole_lines_are_drawn() {
        let mut answer = Answer::new(Style::new(true), false);
        assert_eq!(answer.push("# Head"), "");
        assert_eq!(answer.push("ing\nrest"), "\x1b[1mHeading\x1b[22m\n");
        assert_eq!(answer.finish(), "rest\n");
        let mut plain = Answer::new(Style::new(false), true);
        assert_eq!(plain.push("# raw"), "# raw");
        assert_eq!(plain.finish(), "");
    }
}
