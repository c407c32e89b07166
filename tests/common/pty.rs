//! The real `ouro` binary in a pseudo-terminal: type into it, wait for text on its screen.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, ExitStatus, MasterPty, PtySize, native_pty_system};

use crate::common::{API_KEY, Sandbox};

/// Generous, for a loaded 2-core machine; a passing test never waits this long.
pub(crate) const WAIT: Duration = Duration::from_secs(90);

pub(crate) struct Term {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    raw: Arc<Mutex<Vec<u8>>>,
    /// How much of the plain text `expect` has consumed.
    seen: usize,
    /// (cols, rows) now.
    size: std::cell::Cell<(u16, u16)>,
    master: Box<dyn MasterPty + Send>,
}

#[derive(Default)]
pub(crate) struct Options<'a> {
    pub args: &'a [&'a str],
    /// Leave colour on (the default for a terminal) instead of setting NO_COLOR.
    pub colour: bool,
    /// Extra environment.
    pub env: &'a [(&'a str, &'a str)],
}

impl Term {
    pub(crate) fn start(sb: &Sandbox, url: &str, options: Options<'_>) -> Term {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 60,
                cols: 220,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_ouro"));
        cmd.args(options.args);
        cmd.cwd(sb.root());
        for key in [
            "ANTHROPIC_MODEL",
            "OURO_LOG",
            "NO_COLOR",
            "OURO_ALLOW_ROOT_BYPASS",
        ] {
            cmd.env_remove(key);
        }
        cmd.env("ANTHROPIC_BASE_URL", url);
        cmd.env("ANTHROPIC_API_KEY", API_KEY);
        cmd.env("OURO_HOME", sb.home.path());
        cmd.env("HOME", sb.home.path());
        cmd.env("TERM", "xterm-256color");
        if !options.colour {
            cmd.env("NO_COLOR", "1");
        }
        for (key, value) in options.env {
            cmd.env(key, value);
        }
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let raw = Arc::new(Mutex::new(Vec::new()));
        let sink = raw.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Term {
            child,
            writer,
            raw,
            seen: 0,
            size: std::cell::Cell::new((220, 60)),
            master: pair.master,
        }
    }

    /// Bytes as typed (escape sequences included).
    pub(crate) fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Types a line and presses Enter.
    pub(crate) fn line(&mut self, text: &str) {
        self.send(&format!("{text}\r"));
    }

    /// Waits for the prompt, then types a line.
    pub(crate) fn submit(&mut self, text: &str) {
        self.expect("› ");
        self.line(text);
    }

    /// Waits until `needle` shows up after everything matched so far; returns the text up to
    /// and including it.
    pub(crate) fn expect(&mut self, needle: &str) -> String {
        let found = self.peek(needle);
        self.seen += found.len();
        found
    }

    /// As `expect`, but what is found stays unmatched: the next `expect` looks from the same
    /// place.
    pub(crate) fn peek(&self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let text = self.text();
            if let Some(at) = text[self.seen..].find(needle) {
                return text[self.seen..self.seen + at + needle.len()].to_string();
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {needle:?}\n--- screen after the last match ---\n{}\n--- whole screen ---\n{text}",
                    &text[self.seen..]
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// How much of [`Term::text`] the `expect` calls have matched.
    pub(crate) fn seen(&self) -> usize {
        self.seen
    }

    /// Everything printed so far, as plain text (escape sequences and carriage returns removed).
    pub(crate) fn text(&self) -> String {
        strip_escapes(&self.raw())
    }

    /// Everything printed so far, escape sequences included. A multi-byte character still
    /// arriving is left out, so earlier text never changes.
    pub(crate) fn raw(&self) -> String {
        let bytes = self.raw.lock().unwrap().clone();
        match std::str::from_utf8(&bytes) {
            Ok(s) => s.to_string(),
            Err(e) if e.error_len().is_none() => {
                String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into_owned()
            }
            Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    /// Waits until the screen as a terminal shows it (a full-screen program draws only what
    /// changed) holds `needle` on one row.
    pub(crate) fn wait_screen(&self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if screen.contains(needle) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {needle:?} on the screen\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The screen now: every byte so far through a terminal emulator of the current size.
    pub(crate) fn screen(&self) -> String {
        let (cols, rows) = self.size.get();
        let mut parser = vt100::Parser::new(
            std::num::NonZeroU16::new(rows).unwrap(),
            std::num::NonZeroU16::new(cols).unwrap(),
            0,
        );
        parser.process(&self.raw.lock().unwrap());
        parser.screen().contents()
    }

    /// Resizes the terminal (its process gets SIGWINCH).
    pub(crate) fn resize(&self, cols: u16, rows: u16) {
        self.size.set((cols, rows));
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
    }

    /// Whether the terminal is in raw mode now (no line editing, no echo).
    pub(crate) fn is_raw(&self) -> bool {
        let fd = self.master.as_raw_fd().unwrap();
        // SAFETY: tcgetattr fills a termios we own from a descriptor we hold open.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            assert_eq!(libc::tcgetattr(fd, &mut t), 0);
            t.c_lflag & (libc::ICANON | libc::ECHO) == 0
        }
    }

    pub(crate) fn pid(&self) -> i32 {
        self.child.process_id().unwrap() as i32
    }

    pub(crate) fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                panic!("ouro did not exit\n{}", self.text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Quits with /exit and checks that ouro ended cleanly.
    pub(crate) fn exit(&mut self) {
        self.submit("/exit");
        let status = self.wait_exit();
        assert!(status.success(), "exit status {status:?}\n{}", self.text());
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// Removes CSI and OSC sequences, other two-byte escapes, and carriage returns. An unfinished
/// sequence at the end is dropped whole, so the result only ever grows.
pub(crate) fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}
