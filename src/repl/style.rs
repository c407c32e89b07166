//! A few ANSI styles. Colour is on only when stdout is a terminal and `NO_COLOR` is unset, so
//! piped output and logs stay plain text.

use std::io::IsTerminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Style {
    colour: bool,
}

impl Style {
    /// Colour for an interactive terminal, following <https://no-color.org>: any non-empty
    /// `NO_COLOR` turns it off.
    pub(super) fn detect() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            colour: std::io::stdout().is_terminal() && !no_color,
        }
    }

    #[cfg(test)]
    pub(super) fn new(colour: bool) -> Style {
        Style { colour }
    }

    /// Whether escapes are written at all.
    pub(super) fn is_colour(self) -> bool {
        self.colour
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.colour && !text.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub(super) fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    pub(super) fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }

    pub(super) fn red(self, text: &str) -> String {
        self.paint("31", text)
    }

    pub(super) fn green(self, text: &str) -> String {
        self.paint("32", text)
    }

    pub(super) fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }

    pub(super) fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_style_adds_no_escape_codes() {
        let s = Style::new(false);
        assert_eq!(s.red("x"), "x");
        assert_eq!(s.dim("x"), "x");
    }

    #[test]
    fn colour_style_wraps_and_resets() {
        let s = Style::new(true);
        assert_eq!(s.green("+a"), "\x1b[32m+a\x1b[0m");
        assert_eq!(s.green(""), "");
    }
}
