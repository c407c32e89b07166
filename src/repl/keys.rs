//! Keys typed while a turn runs. For the turn the terminal stops echoing and stops waiting for
//! Enter, so Esc interrupts at once, as in Claude Code, and is never left in the input buffer,
//! where the next line editor would read it as the start of an escape sequence (Esc then
//! `/cost` arrived as the message "cost"). Other typing is kept for the next prompt, Enter
//! included: a line typed and entered during a turn is submitted after it, on its own (two
//! lines never run together as one message).

use std::os::fd::AsRawFd;

const ESC: u8 = 0x1b;

/// The terminal as the session found it, for [`restore_terminal`].
static FOUND: std::sync::OnceLock<libc::termios> = std::sync::OnceLock::new();

/// Notes the terminal's state at the start of the session (when stdin is a terminal).
pub(super) fn remember_terminal() {
    // SAFETY: termios is plain old data; tcgetattr fills it or fails.
    let mut found: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: stdin's descriptor and a live, writable termios.
    if unsafe { libc::tcgetattr(std::io::stdin().as_raw_fd(), &mut found) } == 0 {
        let _ = FOUND.set(found);
    }
}

/// Puts the terminal back as the session found it, whoever changed it since (the line editor
/// in the middle of a read, a turn's key reader).
pub(super) fn restore_terminal() {
    if let Some(found) = FOUND.get() {
        // SAFETY: found came from tcgetattr on the same descriptor.
        unsafe { libc::tcsetattr(std::io::stdin().as_raw_fd(), libc::TCSANOW, found) };
        // The line editor's bracketed paste, which it would have switched off itself.
        use std::io::Write as _;
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\x1b[?2004l");
        let _ = out.flush();
    }
}

/// The terminal's state for one turn; dropping it puts the terminal back.
pub(super) struct TurnKeys {
    saved: Option<libc::termios>,
    typed: Vec<u8>,
}

impl TurnKeys {
    /// Takes the keyboard for a turn (when stdin is a terminal; otherwise nothing happens).
    pub(super) fn start() -> TurnKeys {
        let fd = std::io::stdin().as_raw_fd();
        // SAFETY: termios is plain old data; tcgetattr fills it or fails.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: fd is stdin's, and saved is a live, writable termios.
        if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return TurnKeys {
                saved: None,
                typed: Vec::new(),
            };
        }
        let mut quiet = saved;
        quiet.c_lflag &= !(libc::ICANON | libc::ECHO);
        // Reads return at once with whatever is there, possibly nothing.
        quiet.c_cc[libc::VMIN] = 0;
        quiet.c_cc[libc::VTIME] = 0;
        // SAFETY: as above; a failure leaves the terminal as it was.
        let applied = unsafe { libc::tcsetattr(fd, libc::TCSANOW, &quiet) } == 0;
        TurnKeys {
            saved: applied.then_some(saved),
            typed: Vec::new(),
        }
    }

    /// Reads what was typed since the last call.
    pub(super) fn poll(&mut self) -> Pressed {
        let mut pressed = Pressed::default();
        if self.saved.is_none() {
            return pressed;
        }
        let mut buf = [0u8; 256];
        loop {
            // SAFETY: buf is a live, writable buffer of the given length.
            let n = unsafe {
                libc::read(
                    std::io::stdin().as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            };
            let Ok(n) = usize::try_from(n) else { break };
            if n == 0 {
                break;
            }
            let more = absorb(&buf[..n], &mut self.typed);
            pressed.escape |= more.escape;
            pressed.shift_tabs += more.shift_tabs;
        }
        pressed
    }

    /// Gives the keyboard back; returns the text typed during the turn, for the next prompt.
    pub(super) fn finish(mut self) -> String {
        self.poll();
        self.restore();
        String::from_utf8_lossy(&std::mem::take(&mut self.typed)).into_owned()
    }

    fn restore(&mut self) {
        if let Some(saved) = self.saved.take() {
            // SAFETY: saved came from tcgetattr on the same descriptor.
            unsafe { libc::tcsetattr(std::io::stdin().as_raw_fd(), libc::TCSANOW, &saved) };
        }
    }
}

impl Drop for TurnKeys {
    fn drop(&mut self) {
        self.restore();
    }
}

/// The keys of one poll that act at once.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pressed {
    /// A lone Esc: interrupt.
    pub escape: bool,
    /// Shift+Tab: switch the permission mode, once per press.
    pub(crate) shift_tabs: usize,
}

/// Sorts one read of keys: a lone Esc, Shift+Tab (`ESC [ Z`), other escape sequences such as
/// arrows and Alt+key (dropped), backspace (removes the last character), Enter (kept as a
/// newline: it ends a line to submit), and text (kept in `typed`).
fn absorb(bytes: &[u8], typed: &mut Vec<u8>) -> Pressed {
    let mut pressed = Pressed::default();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            ESC => match bytes.get(i + 1) {
                None => {
                    pressed.escape = true;
                    i += 1;
                }
                Some(b'[') if bytes.get(i + 2) == Some(&b'Z') => {
                    pressed.shift_tabs += 1;
                    i += 3;
                }
                Some(b'[') | Some(b'O') => {
                    // CSI / SS3: parameters, then one final byte in @..~.
                    i += 2;
                    while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                        i += 1;
                    }
                    i += 1;
                }
                Some(&ESC) => {
                    pressed.escape = true;
                    i += 1;
                }
                Some(_) => i += 2,
            },
            0x7f | 0x08 => {
                pop_char(typed);
                i += 1;
            }
            b'\r' | b'\n' => {
                typed.push(b'\n');
                // A terminal may send CR LF for one Enter.
                i += if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
            }
            b if b < 0x20 => i += 1,
            b => {
                typed.push(b);
                i += 1;
            }
        }
    }
    pressed
}

/// Removes the last UTF-8 character.
fn pop_char(typed: &mut Vec<u8>) {
    while let Some(b) = typed.pop() {
        if b & 0xC0 != 0x80 {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sort(bytes: &[u8]) -> (bool, String) {
        let mut typed = Vec::new();
        let pressed = absorb(bytes, &mut typed);
        (pressed.escape, String::from_utf8(typed).unwrap())
    }

    #[test]
    fn shift_tab_is_counted_and_not_typed() {
        let mut typed = Vec::new();
        let pressed = absorb(b"a\x1b[Zb\x1b[Z", &mut typed);
        assert_eq!(pressed.shift_tabs, 2);
        assert!(!pressed.escape);
        assert_eq!(typed, b"ab");
    }

    #[test]
    fn a_lone_escape_interrupts_and_sequences_do_not() {
        assert_eq!(sort(b"\x1b"), (true, String::new()));
        assert_eq!(sort(b"\x1b[A\x1b[1;5C\x1bOP"), (false, String::new()));
        assert_eq!(sort(b"\x1bx"), (false, String::new()));
        assert_eq!(sort(b"\x1b\x1b"), (true, String::new()));
    }

    #[test]
    fn typing_during_a_turn_is_kept_for_the_next_prompt() {
        assert_eq!(sort(b"/cos\x7ft\r"), (false, "/cot\n".into()));
        assert_eq!(sort(b"/cost\r/exit\r\n"), (false, "/cost\n/exit\n".into()));
        assert_eq!(sort("héllo\x7f\x7f".as_bytes()), (false, "hél".into()));
        assert_eq!(sort(b"next\x1b"), (true, "next".into()));
    }
}
