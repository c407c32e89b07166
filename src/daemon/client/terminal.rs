//! The client's terminal: raw mode for a talk, restored on every way out — normal return,
//! error, panic (a hook) and SIGTERM / SIGHUP / SIGINT (the talk loop listens and returns).

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::brain::TermSize;

/// Whether raw mode is on now, for the panic hook.
static RAW: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

pub(super) struct RawMode(());

impl RawMode {
    pub(super) fn enter() -> std::io::Result<RawMode> {
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        crossterm::terminal::enable_raw_mode()?;
        RAW.store(true, Ordering::SeqCst);
        Ok(RawMode(()))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore();
    }
}

fn restore() {
    if RAW.swap(false, Ordering::SeqCst) {
        let _ = crossterm::terminal::disable_raw_mode();
        let mut stdout = std::io::stdout();
        let _ = std::io::Write::write_all(&mut stdout, RESET_MODES.as_bytes());
        let _ = std::io::Write::flush(&mut stdout);
    }
}

/// The terminal's size now (80×24 when it cannot be read).
pub(super) fn size() -> TermSize {
    match crossterm::terminal::size() {
        Ok((cols, rows)) if cols > 0 && rows > 0 => TermSize { cols, rows },
        _ => TermSize::default(),
    }
}

/// Leaves what a brain's UI may have switched on (alternate screen, hidden cursor, mouse and
/// paste modes, colours), so the shell gets its terminal back as it was.
pub(super) const RESET_MODES: &str =
    "\x1b[0m\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?1049l";
