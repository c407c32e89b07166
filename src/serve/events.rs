//! Each session's events, numbered and kept (in memory and appended to a JSONL file), so that
//! a client that reconnects with `Last-Event-ID` gets exactly what it missed, even across a
//! server restart. Followers wait on a watch of the last id, so none misses an event appended
//! between its read and its wait.

use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::sys::sync::lock;
use crate::ui_event::UiEvent;

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
    events: Mutex<Vec<Stored>>,
    last: watch::Sender<u64>,
}

impl EventLog {
    /// The log kept in `file`, with what an earlier server wrote there.
    pub(super) fn open(file: PathBuf) -> EventLog {
        let events: Vec<Stored> = std::fs::read_to_string(&file)
            .map(|text| {
                text.lines()
                    .filter_map(|line| serde_json::from_str(line).ok())
                    .collect()
            })
            .unwrap_or_default();
        let last = events.last().map_or(0, |e: &Stored| e.id);
        let unfinished = events
            .last()
            .filter(|e| !matches!(e.event, UiEvent::ProcessExit { .. }))
            .cloned();
        let log = EventLog {
            file,
            events: Mutex::new(events),
            last: watch::channel(last).0,
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
        let mut events = lock(&self.events);
        let id = events.last().map_or(0, |e| e.id) + 1;
        let stored = Stored {
            id,
            turn_id: turn_id.to_string(),
            event,
        };
        if let Err(e) = crate::sys::atomic::append_json_line(&self.file, &stored) {
            tracing::warn!(file = %self.file.display(), error = %e, "could not keep a served event on disk");
        }
        events.push(stored);
        drop(events);
        self.last.send_replace(id);
        id
    }

    /// Every event after `after`, in order.
    pub(super) fn since(&self, after: u64) -> Vec<Stored> {
        let events = lock(&self.events);
        let start = events.partition_point(|e| e.id <= after);
        events[start..].to_vec()
    }

    /// The id the next event gets.
    pub(super) fn next_id(&self) -> u64 {
        *self.last.borrow() + 1
    }

    /// Watches the last id; take it before reading with [`EventLog::since`].
    pub(super) fn watch(&self) -> watch::Receiver<u64> {
        self.last.subscribe()
    }

    /// The first event id of turn `turn_id`, if it has one.
    pub(super) fn turn_start(&self, turn_id: &str) -> Option<u64> {
        lock(&self.events)
            .iter()
            .find(|e| e.turn_id == turn_id)
            .map(|e| e.id)
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
