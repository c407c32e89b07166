//! A clone's terminal screen, kept by a thread of its own: the relay appends each chunk of the
//! brain's output to a backlog and goes on, so a talk's throughput is the PTY's, not the
//! terminal emulator's. The backlog is drawn when the output pauses, when someone needs the
//! screen, or when a flood has piled up [`SKIP_ABOVE`] bytes, of which only the last are drawn:
//! a flood costs the emulator a fraction of its bytes, not a core. Whoever needs the screen
//! itself (a watcher joining, a client that fell behind) waits until the backlog is drawn, so
//! what it gets and the bytes relayed after it fit together.

use std::num::NonZeroU16;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::brain::TermSize;

/// Lines kept above the screen: none, the brain's UI redraws what it needs.
const SCROLLBACK: usize = 0;

/// Output waiting to be drawn at which the drawing runs and skips ahead to the last [`KEEP`]
/// bytes: only a flood (far more than any UI redraws at once) gets there, and what scrolled by
/// in it is gone from a screen without scrollback anyway.
const SKIP_ABOVE: usize = 4 << 20;

/// What a skip keeps: several whole redraws of the largest screen a UI draws.
const KEEP: usize = 256 << 10;

/// How long the output must pause before what came is drawn unasked.
const QUIET: Duration = Duration::from_millis(20);

/// Cancels an escape sequence the skipped bytes may have cut in two.
const CANCEL: u8 = 0x18;

enum Change {
    Output(Vec<u8>),
    Resize(NonZeroU16, NonZeroU16),
    Fresh(TermSize),
}

/// Changes handed over and not drawn yet.
#[derive(Default)]
struct Backlog {
    changes: Vec<Change>,
    /// Output bytes among them.
    bytes: usize,
    /// Changes handed over so far: the drawing thread tells a pause by it.
    handed: u64,
    /// Someone waits for the screen: draw now.
    wanted: usize,
    /// The drawing thread works on a batch it took.
    drawing: bool,
    /// No drawing thread (it could not start, or the screen is dropped).
    closed: bool,
}

impl Backlog {
    fn due(&self) -> bool {
        self.wanted > 0 || self.bytes >= SKIP_ABOVE
    }
}

struct Drawn {
    parser: Mutex<vt100::Parser>,
    backlog: Mutex<Backlog>,
    /// Wakes the drawing thread.
    handed: Condvar,
    /// Wakes those waiting for the backlog to be drawn.
    caught_up: Condvar,
}

impl Drawn {
    fn backlog(&self) -> MutexGuard<'_, Backlog> {
        self.backlog.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn parser(&self) -> MutexGuard<'_, vt100::Parser> {
        self.parser.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next batch to draw, once it is due or the output paused; `None` once the screen
    /// is gone.
    fn take(&self) -> Option<Vec<Change>> {
        let mut backlog = self.backlog();
        loop {
            if backlog.closed {
                return None;
            }
            if backlog.changes.is_empty() {
                backlog = self
                    .handed
                    .wait(backlog)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            if !backlog.due() {
                let seen = backlog.handed;
                let (waited, _) = self
                    .handed
                    .wait_timeout(backlog, QUIET)
                    .unwrap_or_else(PoisonError::into_inner);
                backlog = waited;
                if backlog.handed != seen && !backlog.due() {
                    continue;
                }
            }
            backlog.drawing = true;
            backlog.bytes = 0;
            return Some(std::mem::take(&mut backlog.changes));
        }
    }

    fn draw(&self) {
        while let Some(batch) = self.take() {
            {
                let mut parser = self.parser();
                for change in skip_ahead(batch) {
                    match change {
                        Change::Output(bytes) => parser.process(&bytes),
                        Change::Resize(rows, cols) => parser.set_size(rows, cols),
                        Change::Fresh(size) => *parser = self::parser(size),
                    }
                }
            }
            let mut backlog = self.backlog();
            backlog.drawing = false;
            if backlog.changes.is_empty() {
                self.caught_up.notify_all();
            }
        }
    }
}

/// `batch` as it is drawn: from its last fresh start on, and when its output is more than
/// [`SKIP_ABOVE`], only the last [`KEEP`] bytes of it, from a line's start (sizes all kept).
fn skip_ahead(mut batch: Vec<Change>) -> Vec<Change> {
    if let Some(fresh) = batch.iter().rposition(|c| matches!(c, Change::Fresh(_))) {
        batch.drain(..fresh);
    }
    let output: usize = batch
        .iter()
        .map(|c| match c {
            Change::Output(bytes) => bytes.len(),
            _ => 0,
        })
        .sum();
    if output <= SKIP_ABOVE {
        return batch;
    }
    tracing::debug!(
        bytes = output - KEEP,
        "a clone's screen skipped a flood's output"
    );
    let mut skip = output - KEEP;
    let mut kept = Vec::with_capacity(batch.len());
    for change in batch {
        match change {
            Change::Output(bytes) if skip > 0 => {
                if bytes.len() <= skip {
                    skip -= bytes.len();
                    continue;
                }
                let rest = &bytes[skip..];
                let from = memchr::memchr(b'\n', rest).map_or(0, |i| i + 1);
                skip = 0;
                let mut resumed = Vec::with_capacity(rest.len() - from + 1);
                resumed.push(CANCEL);
                resumed.extend_from_slice(&rest[from..]);
                kept.push(Change::Output(resumed));
            }
            other => kept.push(other),
        }
    }
    kept
}

pub(super) struct Screen {
    drawn: Arc<Drawn>,
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
            backlog: Mutex::default(),
            handed: Condvar::new(),
            caught_up: Condvar::new(),
        });
        let drawer = drawn.clone();
        let started = std::thread::Builder::new()
            .name("ouro-screen".into())
            .spawn(move || drawer.draw());
        if let Err(e) = started {
            tracing::warn!(error = %e, "no thread for a clone's screen; it stays blank");
            drawn.backlog().closed = true;
        }
        Screen { drawn }
    }

    fn hand_over(&self, change: Change) {
        let mut backlog = self.drawn.backlog();
        if backlog.closed {
            return;
        }
        let was_due = backlog.due();
        let idle = backlog.changes.is_empty();
        backlog.handed += 1;
        match (backlog.changes.last_mut(), change) {
            (Some(Change::Output(last)), Change::Output(bytes)) => {
                last.extend_from_slice(&bytes);
                backlog.bytes += bytes.len();
            }
            (_, change) => {
                if let Change::Output(bytes) = &change {
                    backlog.bytes += bytes.len();
                }
                backlog.changes.push(change);
            }
        }
        // The drawing thread waits for a first change, then for a pause or a flood: a
        // wake-up for each of those, not one per chunk.
        if idle || (!was_due && backlog.due()) {
            self.drawn.handed.notify_one();
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
        let mut backlog = self.drawn.backlog();
        backlog.wanted += 1;
        self.drawn.handed.notify_one();
        while !backlog.closed && (backlog.drawing || !backlog.changes.is_empty()) {
            backlog = self
                .drawn
                .caught_up
                .wait(backlog)
                .unwrap_or_else(PoisonError::into_inner);
        }
        backlog.wanted -= 1;
        drop(backlog);
        self.drawn.parser()
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

impl Drop for Screen {
    fn drop(&mut self) {
        self.drawn.backlog().closed = true;
        self.drawn.handed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(n: u16) -> NonZeroU16 {
        NonZeroU16::new(n).unwrap()
    }

    #[test]
    fn a_flood_is_drawn_from_a_line_of_its_last_bytes_and_keeps_every_size_change() {
        let lines: Vec<u8> = (0..700_000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let batch = vec![
            Change::Output(lines[..1000].to_vec()),
            Change::Resize(side(5), side(30)),
            Change::Output(lines[1000..].to_vec()),
        ];
        let drawn = skip_ahead(batch);
        assert!(matches!(drawn[0], Change::Resize(..)));
        let Change::Output(kept) = &drawn[1] else {
            panic!("the output is gone")
        };
        assert!(kept.len() <= KEEP + 1);
        assert_eq!(kept[0], CANCEL);
        assert!(kept[1..].starts_with(b"line "));
        assert!(kept.ends_with(b"line 699999\n"));
    }

    #[test]
    fn small_batches_are_drawn_whole_from_their_last_fresh_start() {
        let batch = vec![
            Change::Output(b"old".to_vec()),
            Change::Fresh(TermSize { cols: 10, rows: 2 }),
            Change::Output(b"new".to_vec()),
        ];
        let drawn = skip_ahead(batch);
        assert_eq!(drawn.len(), 2);
        assert!(matches!(&drawn[1], Change::Output(b) if b == b"new"));
    }

    #[test]
    fn the_screen_shows_a_flood_s_end_without_holding_up_who_hands_it_over() {
        let screen = Screen::new(TermSize { cols: 40, rows: 4 });
        screen.process(b"old");
        screen.reset(TermSize { cols: 30, rows: 3 });
        // Handed over while the drawing thread cannot draw: the relay never waits for it.
        let held = screen.drawn.parser();
        for i in 0..700_000 {
            screen.process(format!("line {i}\r\n").as_bytes());
        }
        screen.process(b"last");
        drop(held);
        assert_eq!(screen.contents(), "line 699998\nline 699999\nlast");
        screen.set_size(side(2), side(30));
        assert_eq!(screen.settled().screen().size(), (side(2), side(30)));
    }
}
