//! Each session's events, numbered and kept (appended to a JSONL file, the recent ones also in
//! memory), so that a client that reconnects with `Last-Event-ID` gets exactly what it missed,
//! even across a server restart. Followers wait on a watch of the last id, so none misses an
//! event appended between its read and its wait.
//!
//! Memory holds at most the last [`KEEP_EVENTS`] events or [`KEEP_BYTES`] of them, whichever
//! is less (older ones are read back from the file when a client asks for them), plus any
//! event the disk had no room for: the file only ever gets whole lines, and what could not be
//! written is written, in order, once there is room again.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::sys::sync::lock;
use crate::ui_event::UiEvent;

/// Events a session keeps in memory at most. Enough for live followers a little behind; one
/// further behind reads the file (from the page cache, along its cursor).
const KEEP_EVENTS: usize = 512;
/// Bytes of events (as JSON) a session keeps in memory at most: 200 sessions hold 50 MiB at
/// worst.
const KEEP_BYTES: usize = 256 << 10;

/// Events one read hands a follower at most.
const BATCH_EVENTS: usize = 256;
/// Bytes of events (as JSON) one read hands a follower at most, unless one event is larger.
const BATCH_BYTES: usize = 256 << 10;

/// Where a follower is in the events file: just after the line of event `id`.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct FileCursor {
    offset: u64,
    id: u64,
}

/// One kept event: its id within the session and the turn it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Stored {
    pub id: u64,
    pub(crate) turn_id: String,
    pub event: UiEvent,
}

pub(super) struct EventLog {
    file: PathBuf,
    kept: Mutex<Kept>,
    last: watch::Sender<u64>,
    /// The session is deleted: its followers end once they have had what was kept.
    closed: std::sync::atomic::AtomicBool,
}

struct Line {
    id: u64,
    turn_id: String,
    json: Vec<u8>,
}

#[derive(Default)]
struct Kept {
    /// The recent events as their JSON lines (parsed again when read: a parsed event takes
    /// several times the memory of its line).
    events: VecDeque<Line>,
    bytes: usize,
    /// The last id whose line is in the file.
    on_disk: u64,
    /// The last id of all.
    last: u64,
    /// The file, open from a turn's first event to its last: not opened and closed per event.
    out: Option<std::fs::File>,
}

impl Kept {
    /// Writes every event not yet on disk, as whole lines or not at all.
    fn flush(&mut self, file: &std::path::Path) -> std::io::Result<()> {
        let on_disk = self.on_disk;
        let lines: Vec<u8> = self
            .events
            .iter()
            .filter(|l| l.id > on_disk)
            .flat_map(|l| l.json.iter().copied())
            .collect();
        if lines.is_empty() {
            return Ok(());
        }
        let out = match &mut self.out {
            Some(out) => out,
            None => self.out.insert(crate::sys::atomic::open_to_append(file)?),
        };
        if let Err(e) = crate::sys::atomic::append_whole_to(out, &lines) {
            // Opened afresh for the next try: the file may have been moved or replaced.
            self.out = None;
            return Err(e);
        }
        self.on_disk = self.last;
        Ok(())
    }

    /// Lets go of the oldest events past the limits (never one the file lacks).
    fn trim(&mut self) {
        while self.events.len() > 1
            && (self.events.len() > KEEP_EVENTS || self.bytes > KEEP_BYTES)
            && self.events.front().is_some_and(|l| l.id <= self.on_disk)
        {
            if let Some(line) = self.events.pop_front() {
                self.bytes -= line.json.len();
            }
        }
    }

    fn keep(&mut self, stored: Stored) {
        let mut json = serde_json::to_vec(&stored).unwrap_or_default();
        json.push(b'\n');
        self.bytes += json.len();
        self.last = stored.id;
        self.events.push_back(Line {
            id: stored.id,
            turn_id: stored.turn_id,
            json,
        });
    }

    fn first_kept(&self) -> u64 {
        self.events.front().map_or(self.last + 1, |l| l.id)
    }
}

/// The events of `file`, read whole; a torn last line (a crash mid-write) is skipped.
fn read_file(file: &std::path::Path) -> Vec<Stored> {
    std::fs::read_to_string(file)
        .map(|text| {
            text.lines()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect()
        })
        .unwrap_or_default()
}

impl EventLog {
    /// The log kept in `file`, with what an earlier server wrote there. A new session's file
    /// is made now, before its first turn.
    pub(super) fn open(file: PathBuf) -> EventLog {
        let events = read_file(&file);
        if events.is_empty()
            && let Err(e) = crate::sys::atomic::append_whole(&file, b"")
        {
            tracing::warn!(file = %file.display(), error = %e, "could not make a session's event log yet");
        }
        let unfinished = events
            .last()
            .filter(|e| !matches!(e.event, UiEvent::ProcessExit { .. }))
            .cloned();
        let mut kept = Kept::default();
        for stored in events {
            kept.keep(stored);
        }
        kept.on_disk = kept.last;
        kept.trim();
        let log = EventLog {
            file,
            last: watch::channel(kept.last).0,
            closed: std::sync::atomic::AtomicBool::new(false),
            kept: Mutex::new(kept),
        };
        // A server that stopped mid-turn left the turn without its end: close it, so that a
        // client attaching to it is not left waiting.
        if let Some(last) = unfinished {
            let session_id = last
                .event
                .split()
                .1
                .get("sessionId")
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string();
            log.push(
                &last.turn_id,
                UiEvent::SessionError {
                    session_id: session_id.clone(),
                    error: "the server stopped during this turn, and its brain with it".into(),
                },
            );
            log.push(
                &last.turn_id,
                UiEvent::ProcessExit {
                    session_id,
                    code: None,
                    signal: None,
                },
            );
        }
        log
    }

    /// Numbers and keeps `event`; returns its id.
    pub(super) fn push(&self, turn_id: &str, event: UiEvent) -> u64 {
        let ends_turn = matches!(event, UiEvent::ProcessExit { .. });
        let mut kept = lock(&self.kept);
        let id = kept.last + 1;
        kept.keep(Stored {
            id,
            turn_id: turn_id.to_string(),
            event,
        });
        // A full disk: the events stay in memory (live clients get them) and are written with
        // the next one that finds room.
        if let Err(e) = kept.flush(&self.file) {
            tracing::warn!(file = %self.file.display(), error = %e, "could not keep a served event on disk yet");
        }
        // A turn's last event lets the file go: idle sessions hold no descriptor.
        if ends_turn {
            kept.out = None;
        }
        kept.trim();
        drop(kept);
        self.last.send_replace(id);
        id
    }

    /// Every event after `after`, in order: older ones from the file.
    pub(super) fn since(&self, after: u64) -> Vec<Stored> {
        let mut cursor = FileCursor::default();
        let mut out: Vec<Stored> = Vec::new();
        loop {
            let last = out.last().map_or(after, |e| e.id);
            let batch = self.batch(last, &mut cursor);
            if batch.is_empty() {
                return out;
            }
            out.extend(batch);
        }
    }

    /// The next events after `after`, in order, at most [`BATCH_EVENTS`] or about
    /// [`BATCH_BYTES`]: all a follower holds at a time, so a client that reads slowly, or not
    /// at all, pins no more than that. `cursor` keeps the follower's place in the file, which
    /// is then read once however far behind it is.
    pub(super) fn batch(&self, after: u64, cursor: &mut FileCursor) -> Vec<Stored> {
        let first = lock(&self.kept).first_kept();
        if after + 1 < first {
            // Read without the lock: the file only grows by whole lines, and appends wait for
            // nobody.
            let older = self.older_batch(after, first, cursor);
            if !older.is_empty() {
                return older;
            }
        }
        let kept = lock(&self.kept);
        let mut bytes = 0;
        kept.events
            .iter()
            .filter(|l| l.id > after)
            .take(BATCH_EVENTS)
            .take_while(|l| {
                let first = bytes == 0;
                bytes += l.json.len();
                first || bytes <= BATCH_BYTES
            })
            .filter_map(|l| serde_json::from_slice(&l.json).ok())
            .collect()
    }

    fn older_batch(&self, after: u64, first: u64, cursor: &mut FileCursor) -> Vec<Stored> {
        use std::io::{BufRead, Seek};
        let Ok(file) = std::fs::File::open(&self.file) else {
            return Vec::new();
        };
        let mut reader = std::io::BufReader::new(file);
        if cursor.id > after
            || reader
                .seek(std::io::SeekFrom::Start(cursor.offset))
                .is_err()
        {
            *cursor = FileCursor::default();
        }
        let mut out = Vec::new();
        let (mut line, mut bytes) = (Vec::new(), 0);
        while out.len() < BATCH_EVENTS && bytes < BATCH_BYTES {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(n) if n > 0 && line.ends_with(b"\n") => {}
                _ => break,
            }
            let Ok(stored) = serde_json::from_slice::<Stored>(&line) else {
                // A line torn by a crash: skipped, as on open.
                cursor.offset += line.len() as u64;
                continue;
            };
            if stored.id >= first {
                break;
            }
            cursor.offset += line.len() as u64;
            cursor.id = stored.id;
            if stored.id > after {
                bytes += line.len();
                out.push(stored);
            }
        }
        out
    }

    /// The id the next event gets.
    pub(super) fn next_id(&self) -> u64 {
        *self.last.borrow() + 1
    }

    /// Watches the last id; take it before reading with [`EventLog::since`].
    pub(super) fn watch(&self) -> watch::Receiver<u64> {
        self.last.subscribe()
    }

    /// No event will come: every follower is woken to end.
    pub(super) fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.last.send_modify(|_| {});
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The first event id of turn `turn_id`, if it has one.
    pub(super) fn turn_start(&self, turn_id: &str) -> Option<u64> {
        let (found, first) = {
            let kept = lock(&self.kept);
            let found = kept
                .events
                .iter()
                .find(|l| l.turn_id == turn_id)
                .map(|l| l.id);
            (found, kept.first_kept())
        };
        match found {
            // It may have begun before what memory holds: only the file knows then.
            Some(id) if id > first || first == 1 => Some(id),
            None if first == 1 => None,
            _ => read_file(&self.file)
                .into_iter()
                .find(|e| e.turn_id == turn_id)
                .map(|e| e.id)
                .or(found),
        }
    }

    pub(super) fn remove_file(&self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(text: &str) -> UiEvent {
        UiEvent::ChatDelta {
            session_id: "s".into(),
            text: text.into(),
        }
    }

    #[test]
    fn ids_increase_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("e.jsonl");
        let log = EventLog::open(file.clone());
        assert_eq!(log.push("t1", delta("a")), 1);
        assert_eq!(log.push("t1", delta("b")), 2);
        assert_eq!(log.push("t2", delta("c")), 3);
        let exit = UiEvent::ProcessExit {
            session_id: "s".into(),
            code: Some(0),
            signal: None,
        };
        assert_eq!(log.push("t2", exit), 4);
        assert_eq!(log.since(1).len(), 3);
        assert_eq!(log.turn_start("t2"), Some(3));
        let again = EventLog::open(file);
        assert_eq!(again.since(0), log.since(0));
        assert_eq!(again.next_id(), 5);
    }

    #[test]
    fn a_turn_a_stopped_server_left_open_is_closed_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("e.jsonl");
        let log = EventLog::open(file.clone());
        log.push("t1", delta("half"));
        let again = EventLog::open(file);
        let kinds: Vec<String> = again.since(0).iter().map(|e| e.event.kind()).collect();
        assert_eq!(kinds, ["chat:delta", "session:error", "process:exit"]);
        assert!(again.since(0).iter().all(|e| e.turn_id == "t1"));
    }

    #[test]
    fn memory_keeps_the_recent_events_and_older_ones_come_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path().join("e.jsonl"));
        let total = KEEP_EVENTS as u64 + 500;
        for i in 0..total {
            log.push(if i < 10 { "t1" } else { "t2" }, delta(&i.to_string()));
        }
        assert!(lock(&log.kept).events.len() <= KEEP_EVENTS);
        let all = log.since(0);
        assert_eq!(all.len() as u64, total);
        assert!(all.windows(2).all(|w| w[0].id + 1 == w[1].id));
        assert_eq!(log.since(total - 3).len(), 3);
        // A follower far behind gets bounded batches, the file read once along its cursor.
        let mut cursor = FileCursor::default();
        let mut after = 0;
        loop {
            let batch = log.batch(after, &mut cursor);
            assert!(batch.len() <= BATCH_EVENTS);
            let Some(last) = batch.last() else { break };
            assert_eq!(batch[0].id, after + 1);
            after = last.id;
        }
        assert_eq!(after, total);
        assert_eq!(log.turn_start("t1"), Some(1));
        assert_eq!(log.turn_start("t2"), Some(11));
        assert_eq!(log.turn_start("t3"), None);
    }

    #[test]
    fn a_full_disk_tears_no_line_and_what_waited_is_written_once_there_is_room() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("e.jsonl");
        let log = EventLog::open(file.clone());
        log.push("t1", delta("a"));
        assert!(lock(&log.kept).out.is_some(), "open while the turn runs");
        let exit = UiEvent::ProcessExit {
            session_id: "s".into(),
            code: Some(0),
            signal: None,
        };
        log.push("t1", exit);
        assert!(lock(&log.kept).out.is_none(), "let go at the turn's end");
        // No room: the file cannot be opened for writing (a folder in its place stands in
        // for a full disk here; tests/serve.rs fills a real small tmpfs).
        std::fs::rename(&file, dir.path().join("aside")).unwrap();
        std::fs::create_dir(&file).unwrap();
        log.push("t2", delta("b"));
        log.push("t2", delta("c"));
        assert_eq!(log.since(0).len(), 4, "live clients still get every event");
        std::fs::remove_dir(&file).unwrap();
        std::fs::rename(dir.path().join("aside"), &file).unwrap();
        log.push("t2", delta("d"));
        let again = EventLog::open(file);
        let ids: Vec<u64> = again.since(0).iter().map(|e| e.id).collect();
        assert_eq!(&ids[..5], &[1, 2, 3, 4, 5]);
    }

    #[tokio::test]
    async fn a_follower_wakes_for_an_event_pushed_after_it_looked() {
        let dir = tempfile::tempdir().unwrap();
        let log = std::sync::Arc::new(EventLog::open(dir.path().join("e.jsonl")));
        let mut watch = log.watch();
        assert!(log.since(0).is_empty());
        let writer = log.clone();
        tokio::spawn(async move { writer.push("t", delta("x")) });
        watch.changed().await.unwrap();
        assert_eq!(log.since(0).len(), 1);
    }
}
