//! A clone's terminal screen, kept by a thread of its own: the relay hands each chunk of the
//! brain's output over and goes on, so a talk's throughput is the PTY's, not the terminal
//! emulator's. Whoever needs the screen itself (a watcher joining, a client that fell behind)
//! waits until every chunk handed over has been drawn, so what it gets and the bytes relayed
//! after it fit together exactly.

use std::num::NonZeroU16;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::brain::TermSize;

/// Lines kept above the screen: none, the brain's UI redraws what it needs.
const SCROLLBACK: usize = 0;

/// Chunks of output waiting to be drawn at most: past this the relay waits for the drawing,
/// so a brain printing faster than the emulator draws cannot fill memory.
const MAX_BEHIND: usize = 1024;

enum Change {
    Output(Vec<u8>),
    Resize(NonZeroU16, NonZeroU16),
    Fresh(TermSize),
}

/// The emulator, and how many changes handed over it has yet to draw.
struct Drawn {
    parser: Mutex<vt100::Parser>,
    behind: Mutex<usize>,
    caught_up: Condvar,
}

pub(super) struct Screen {
    drawn: Arc<Drawn>,
    changes: mpsc::Sender<Change>,
}

fn parser(size: TermSize) -> vt100::Parser {
    let rows = NonZeroU16::new(size.rows).unwrap_or(NonZeroU16::MIN);
    let cols = NonZeroU16::new(size.cols).unwrap_or(NonZeroU16::MIN);
    vt100::Parser::new(rows, cols, SCROLLBACK)
}

impl Screen {
    pub(super) fn new(size: TermSize) -> Screen {
        let drawn = Arc::new(Drawn {
            parser: Mutex::new(parser(size)),
            behind: Mutex::new(0),
            caught_up: Condvar::new(),
        });
        let (changes, rx) = mpsc::channel::<Change>();
        let drawer = drawn.clone();
        // Ends when the screen is dropped (its sender with it).
        let started = std::thread::Builder::new()
            .name("ouro-screen".into())
            .spawn(move || {
                for change in rx {
                    {
                        let mut parser =
                            drawer.parser.lock().unwrap_or_else(PoisonError::into_inner);
                        match change {
                            Change::Output(bytes) => parser.process(&bytes),
                            Change::Resize(rows, cols) => parser.set_size(rows, cols),
                            Change::Fresh(size) => *parser = self::parser(size),
                        }
                    }
                    let mut behind = drawer.behind.lock().unwrap_or_else(PoisonError::into_inner);
                    *behind = behind.saturating_sub(1);
                    if *behind == 0 || *behind == MAX_BEHIND - 1 {
                        drawer.caught_up.notify_all();
                    }
                }
            });
        if let Err(e) = started {
            tracing::warn!(error = %e, "no thread for a clone's screen; it stays blank");
        }
        Screen { drawn, changes }
    }

    /// The count of changes not drawn yet, once `ready` says it may be used.
    fn behind_when(&self, ready: impl Fn(usize) -> bool) -> MutexGuard<'_, usize> {
        let mut behind = self
            .drawn
            .behind
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while !ready(*behind) {
            behind = self
                .drawn
                .caught_up
                .wait(behind)
                .unwrap_or_else(PoisonError::into_inner);
        }
        behind
    }

    fn hand_over(&self, change: Change) {
        *self.behind_when(|behind| behind < MAX_BEHIND) += 1;
        if self.changes.send(change).is_err() {
            // No drawing thread: nothing will catch up, so nobody may wait for it.
            *self
                .drawn
                .behind
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = 0;
        }
    }

    /// Hands output over to be drawn; returns at once.
    pub(super) fn process(&self, bytes: &[u8]) {
        self.hand_over(Change::Output(bytes.to_vec()));
    }

    pub(super) fn set_size(&self, rows: NonZeroU16, cols: NonZeroU16) {
        self.hand_over(Change::Resize(rows, cols));
    }

    /// Starts again from a blank screen of `size`.
    pub(super) fn reset(&self, size: TermSize) {
        self.hand_over(Change::Fresh(size));
    }

    /// The screen with everything handed over drawn.
    fn settled(&self) -> MutexGuard<'_, vt100::Parser> {
        drop(self.behind_when(|behind| behind == 0));
        self.drawn
            .parser
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Escape codes that draw the screen from scratch on a client's terminal, in the
    /// alternate screen when the brain's UI uses it (vt100 leaves that mode out of its state).
    pub(super) fn whole(&self) -> Vec<u8> {
        let parser = self.settled();
        let screen = parser.screen();
        let mut out = Vec::new();
        if screen.alternate_screen() {
            out.extend_from_slice(b"\x1b[?1049h");
        }
        out.extend_from_slice(screen.state_formatted().as_bytes());
        out
    }

    #[cfg(test)]
    pub(super) fn contents(&self) -> String {
        self.settled().screen().contents()
    }
}
