//! `sed` only reads unless it edits in place (`-i`) or its script writes (`w`, `s///w`) or
//! runs commands (`e`, `s///e`). The script is checked by a small parser of sed's grammar that
//! gives up (not read-only) on anything it does not recognise.

use super::args::path_arguments;
use super::{Effect, Word};

pub(super) fn classify(args: &[Word]) -> Effect {
    let mut scripts: Vec<&Word> = Vec::new();
    let mut operands: Vec<Word> = Vec::new();
    let mut sandbox = false;
    let mut i = 0;
    let mut options_done = false;
    while let Some(word) = args.get(i) {
        i += 1;
        let text = word.text.as_str();
        if options_done || !text.starts_with('-') || text == "-" {
            operands.push(word.clone());
            continue;
        }
        match text {
            "--" => options_done = true,
            "--sandbox" => sandbox = true,
            "-n" | "--quiet" | "--silent" | "-E" | "-r" | "--regexp-extended" | "-s"
            | "--separate" | "-z" | "--null-data" | "-u" | "--unbuffered" | "--posix"
            | "--debug" => {}
            "-e" | "--expression" => match args.get(i) {
                Some(script) => {
                    scripts.push(script);
                    i += 1;
                }
                None => return Effect::Unknown,
            },
            t if t.starts_with("--expression=") => scripts.push(word),
            t if t.starts_with("-i") || t.starts_with("--in-place") => {
                return Effect::Mutates("edits files in place".into());
            }
            t if t.starts_with("--line-length=") => {}
            t if t.starts_with("--") => return Effect::Unknown,
            cluster => match short_cluster(&cluster[1..]) {
                Cluster::Flags => {}
                Cluster::InPlace => return Effect::Mutates("edits files in place".into()),
                Cluster::ScriptNext => match args.get(i) {
                    Some(script) => {
                        scripts.push(script);
                        i += 1;
                    }
                    None => return Effect::Unknown,
                },
                Cluster::Unknown => return Effect::Unknown,
            },
        }
    }
    let mut owned_scripts = Vec::new();
    if scripts.is_empty() {
        if operands.is_empty() {
            return Effect::Unknown;
        }
        owned_scripts.push(operands.remove(0));
    } else {
        for script in scripts {
            let mut script = script.clone();
            if let Some(value) = script.text.strip_prefix("--expression=") {
                script.text = value.to_string();
            }
            owned_scripts.push(script);
        }
    }
    for script in &owned_scripts {
        if !script.literal {
            return Effect::Unknown;
        }
        if !sandbox && !script_is_safe(&script.text) {
            return Effect::Mutates("has a script that writes files or runs commands".into());
        }
    }
    Effect::ReadOnly {
        paths: path_arguments(&operands, false),
    }
}

enum Cluster {
    Flags,
    InPlace,
    ScriptNext,
    Unknown,
}

fn short_cluster(letters: &str) -> Cluster {
    for (at, c) in letters.char_indices() {
        match c {
            'n' | 'E' | 'r' | 's' | 'z' | 'u' => {}
            'i' => return Cluster::InPlace,
            // `-ne` takes the script from the next word; `-nes/a/b/` is not supported.
            'e' if at + 1 == letters.len() => return Cluster::ScriptNext,
            _ => return Cluster::Unknown,
        }
    }
    Cluster::Flags
}

/// Whether a sed script only prints: no `w`/`W`/`e`/`r`/`R` commands and no `w`/`e` flags.
fn script_is_safe(script: &str) -> bool {
    let mut p = Cursor {
        chars: script.chars().collect(),
        at: 0,
    };
    loop {
        p.skip(|c| c.is_whitespace() || c == ';');
        let Some(_) = p.peek() else {
            return true;
        };
        if !p.address() {
            return false;
        }
        p.skip(|c| c == ' ' || c == '\t');
        if p.eat(',') && !p.address() {
            return false;
        }
        p.skip(|c| c == ' ' || c == '\t');
        if p.eat('!') {
            p.skip(|c| c == ' ' || c == '\t');
        }
        let Some(command) = p.next() else {
            return false;
        };
        match command {
            '{' | '}' | 'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '='
            | 'z' | 'F' => {}
            'q' | 'Q' | 'l' | 'L' => p.skip(|c| c.is_ascii_digit() || c == ' '),
            '#' | ':' | 'b' | 't' | 'T' | 'v' => p.skip(|c| c != '\n' && c != ';'),
            'a' | 'i' | 'c' => p.skip_text(),
            's' => {
                let Some(delim) = p.next() else {
                    return false;
                };
                if delim == '\n' || delim == '\\' || !p.until(delim) || !p.until(delim) {
                    return false;
                }
                while let Some(flag) = p.peek() {
                    match flag {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' => p.at += 1,
                        c if c.is_ascii_digit() => p.at += 1,
                        ';' | '\n' | '}' | ' ' | '\t' => break,
                        _ => return false,
                    }
                }
            }
            'y' => {
                let Some(delim) = p.next() else {
                    return false;
                };
                if delim == '\n' || delim == '\\' || !p.until(delim) || !p.until(delim) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

struct Cursor {
    chars: Vec<char>,
    at: usize,
}

impl Cursor {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn skip(&mut self, keep_going: impl Fn(char) -> bool) {
        while self.peek().is_some_and(&keep_going) {
            self.at += 1;
        }
    }

    /// Moves past the next unescaped `delim`; false when there is none.
    fn until(&mut self, delim: char) -> bool {
        while let Some(c) = self.next() {
            if c == '\\' {
                self.at += 1;
            } else if c == delim {
                return true;
            }
        }
        false
    }

    /// Text of `a`, `i`, `c`: to the end of the line, continued by a trailing backslash.
    fn skip_text(&mut self) {
        while let Some(c) = self.next() {
            if c == '\\' {
                self.at += 1;
            } else if c == '\n' {
                return;
            }
        }
    }

    /// An optional address: a line number (`3`, `1~2`), `$`, `/re/`, `\cREc`, `+N`, `~N`.
    fn address(&mut self) -> bool {
        match self.peek() {
            Some(c) if c.is_ascii_digit() || c == '+' || c == '~' => {
                self.at += 1;
                self.skip(|c| c.is_ascii_digit() || c == '~');
                true
            }
            Some('$') => {
                self.at += 1;
                true
            }
            Some('/') => {
                self.at += 1;
                let closed = self.until('/');
                self.skip(|c| c == 'I' || c == 'M');
                closed
            }
            Some('\\') => {
                self.at += 1;
                match self.next() {
                    Some(delim) if delim != '\n' => {
                        let closed = self.until(delim);
                        self.skip(|c| c == 'I' || c == 'M');
                        closed
                    }
                    _ => false,
                }
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::script_is_safe;

    #[test]
    fn printing_scripts_are_safe() {
        for script in [
            "s/a/b/g",
            "1,5p",
            "/^#/d",
            "s|/usr|/opt|",
            "$!N; s/\\n/ /",
            "y/abc/xyz/",
            "/start/,/end/{ s/x/y/2; p }",
            "1~2d",
            "a hello; w not-a-command",
        ] {
            assert!(script_is_safe(script), "{script}");
        }
    }

    #[test]
    fn writing_or_running_scripts_are_not() {
        for script in [
            "w out.txt",
            "s/a/b/w out.txt",
            "s/a/b/e",
            "1e rm -rf x",
            "/x/W log",
            "r /etc/passwd",
            "s/a/b",
            "1,$ s/a/b/gw f",
            "k",
        ] {
            assert!(!script_is_safe(script), "{script}");
        }
    }
}
