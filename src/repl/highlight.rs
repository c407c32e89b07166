//! Syntax highlighting of code blocks in answers, one line at a time as they stream in
//! (syntect, with its bundled grammars and a dark theme). Loaded on the first code block only.

use std::sync::OnceLock;

use syntect::easy::HighlightLines;
use syntect::highlighting::{Color, Theme, ThemeSet};
use syntect::parsing::{SyntaxReference, SyntaxSet};

const THEME: &str = "base16-ocean.dark";

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn theme() -> Option<&'static Theme> {
    static THEMES: OnceLock<ThemeSet> = OnceLock::new();
    THEMES
        .get_or_init(ThemeSet::load_defaults)
        .themes
        .get(THEME)
}

/// The grammar for a fence's info string; the names models use that syntect spells otherwise
/// are mapped first. Unknown languages are plain text (still coloured as code).
fn syntax_for(lang: &str) -> &'static SyntaxReference {
    let set = syntaxes();
    let lang = lang.to_ascii_lowercase();
    let token = match lang.as_str() {
        "ts" | "typescript" | "tsx" | "jsx" | "mjs" | "cjs" => "js",
        "sh" | "shell" | "zsh" | "console" | "shellsession" => "bash",
        "jsonc" | "json5" => "json",
        "yml" => "yaml",
        "py" | "python3" => "python",
        "rs" => "rust",
        other => other,
    };
    set.find_syntax_by_token(token)
        .unwrap_or_else(|| set.find_syntax_plain_text())
}

/// How colours are written: 24-bit where the terminal says it can (`COLORTERM`), else the
/// nearest of the 256-colour palette, which every colour terminal has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Palette {
    TrueColour,
    Xterm256,
}

impl Palette {
    pub(super) fn detect() -> Palette {
        match std::env::var("COLORTERM").as_deref() {
            Ok("truecolor") | Ok("24bit") => Palette::TrueColour,
            _ => Palette::Xterm256,
        }
    }

    fn foreground(self, c: Color) -> String {
        match self {
            Palette::TrueColour => format!("\x1b[38;2;{};{};{}m", c.r, c.g, c.b),
            Palette::Xterm256 => format!("\x1b[38;5;{}m", xterm_index(c)),
        }
    }
}

/// The nearest colour of the 6×6×6 cube of the 256-colour palette.
fn xterm_index(c: Color) -> u8 {
    let level = |v: u8| ((u16::from(v) * 5 + 127) / 255) as u8;
    16 + 36 * level(c.r) + 6 * level(c.g) + level(c.b)
}

/// One code block being highlighted; grammars keep state across lines (strings, comments).
pub(super) struct Code {
    lines: Option<HighlightLines<'static>>,
    palette: Palette,
}

impl Code {
    pub(super) fn new(lang: &str, palette: Palette) -> Code {
        Code {
            lines: theme().map(|theme| HighlightLines::new(syntax_for(lang), theme)),
            palette,
        }
    }

    /// One line of the block (without its newline), coloured, ending with a reset.
    pub(super) fn line(&mut self, line: &str) -> String {
        let with_newline = format!("{line}\n");
        let ranges = self
            .lines
            .as_mut()
            .and_then(|h| h.highlight_line(&with_newline, syntaxes()).ok());
        let Some(ranges) = ranges else {
            return format!("\x1b[36m{line}\x1b[0m");
        };
        let mut out = String::with_capacity(line.len() * 2);
        for (style, piece) in ranges {
            let piece = piece.trim_end_matches('\n');
            if piece.is_empty() {
                continue;
            }
            out.push_str(&self.palette.foreground(style.foreground));
            out.push_str(piece);
        }
        out.push_str("\x1b[0m");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_and_strings_get_different_colours() {
        let mut code = Code::new("rust", Palette::TrueColour);
        let line = code.line("let s = \"hi\";");
        assert!(line.contains("let"), "{line:?}");
        let colours: std::collections::HashSet<&str> = line
            .split("\x1b[")
            .filter(|p| p.starts_with("38;2;"))
            .map(|p| p.split('m').next().unwrap())
            .collect();
        assert!(colours.len() >= 3, "{line:?}");
        assert!(line.ends_with("\x1b[0m"));
    }

    #[test]
    fn state_carries_across_lines_and_unknown_languages_stay_readable() {
        let mut code = Code::new("py", Palette::Xterm256);
        let first = code.line("x = \"\"\"open");
        let inside = code.line("still a string");
        assert!(first.contains("\x1b[38;5;"));
        let string_colour = inside.split('m').next().unwrap().to_string();
        assert!(first.contains(&string_colour), "{first:?} / {inside:?}");
        let mut plain = Code::new("no-such-language", Palette::Xterm256);
        assert!(plain.line("text").contains("text"));
    }

    #[test]
    fn the_256_colour_cube_is_used_for_the_nearest_colour() {
        assert_eq!(
            xterm_index(Color {
                r: 0,
                g: 0,
                b: 0,
                a: 255
            }),
            16
        );
        assert_eq!(
            xterm_index(Color {
                r: 255,
                g: 255,
                b: 255,
                a: 255
            }),
            231
        );
        assert_eq!(
            xterm_index(Color {
                r: 255,
                g: 0,
                b: 0,
                a: 255
            }),
            196
        );
    }
}
