//! A clone at run time: a named brain the daemon owns, the queue its turns and talks wait in,
//! the screen of its terminal, its watchers and the permission questions open on it.

use std::num::NonZeroU16;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{OwnedMutexGuard, broadcast, mpsc};

use super::frame::{CloneInfo, Frame, Header};
use super::screen::Screen;
use super::store::CloneRecord;
use crate::brain::parked::ParkedQuestions;
use crate::brain::{BrainCli, Mode, PermissionAnswer, PermissionQuestion, TermSize};
use crate::sys::leftover::Leftover;
use crate::sys::sync::lock;
use serde::{Deserialize, Serialize};

/// What a watcher misses before it is told it fell behind.
const WATCH_BACKLOG: usize = 1024;

/// The largest terminal side the daemon accepts: a screen's cells are allocated up front.
const MAX_SIDE: u16 = 1000;

/// How long a client may keep the daemon waiting on one frame before it counts as gone.
const SEND_PATIENCE: Duration = Duration::from_secs(5);

/// A terminal size the screen and the PTY can hold: each side 1 to [`MAX_SIDE`].
pub(super) fn sane_size(size: TermSize) -> TermSize {
    TermSize {
        cols: size.cols.clamp(1, MAX_SIDE),
        rows: size.rows.clamp(1, MAX_SIDE),
    }
}

/// Queues `frame` for a client; `false` when it is gone or has not read for
/// [`SEND_PATIENCE`], so a stalled client never holds up a clone.
pub(super) async fn deliver(client: &mpsc::Sender<Frame>, frame: Frame) -> bool {
    matches!(
        tokio::time::timeout(SEND_PATIENCE, client.send(frame)).await,
        Ok(Ok(()))
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Activity {
    Idle,
    Turn,
    Talk,
}

/// Where the brain's output bytes go now.
enum Sink {
    Nowhere,
    /// A dispatch turn whose client wants the stream-json lines.
    Lines(mpsc::Sender<Frame>),
    /// A talk: the bytes feed the screen, the talking client (once attached) and the watchers.
    Talk {
        client: Option<mpsc::Sender<Frame>>,
        /// The client missed bytes (its queue was full): send it a whole screen first.
        resync: bool,
    },
}

/// A turn the daemon was running when it stopped.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct CutTurn {
    /// What was asked and when.
    pub what: String,
    /// The brain process it ran on, once started.
    pub brain: Option<Leftover>,
}

struct Live {
    screen: Screen,
    sink: Sink,
}

/// How many events a clone keeps for watchers that come back after a dropped link.
const EVENT_LOG: usize = 4096;

/// The clone's latest events, numbered: a zone's relay whose link dropped asks for those after
/// the last it saw, so its client misses nothing of the gap.
#[derive(Default)]
struct EventLog {
    next: u64,
    /// Where the current (or last) turn's events begin.
    turn_start: u64,
    frames: std::collections::VecDeque<(u64, Frame)>,
}

/// What a watcher coming back after a gap is sent before the live events.
pub(super) struct Missed {
    pub frames: Vec<Frame>,
    /// Events of the gap older than the log holds.
    pub lost: u64,
}

pub(super) struct CloneHandle {
    pub record: CloneRecord,
    pub brain: Box<dyn BrainCli>,
    /// Turns and talks, one at a time in arrival order (tokio's mutex is fair).
    queue: Arc<tokio::sync::Mutex<()>>,
    activity: Mutex<Activity>,
    live: Arc<Mutex<Live>>,
    watch: broadcast::Sender<Frame>,
    pending: ParkedQuestions,
    events: Mutex<EventLog>,
    /// There while a turn runs: a daemon killed mid-turn leaves it for the next one to see.
    turn_marker: std::path::PathBuf,
}

impl CloneHandle {
    /// `state`: the clone's folder in the store; `questions` is bumped when its parked
    /// questions change.
    pub(super) fn new(
        record: CloneRecord,
        brain: Box<dyn BrainCli>,
        state: &std::path::Path,
        questions: tokio::sync::watch::Sender<u64>,
    ) -> Arc<CloneHandle> {
        let (watch, _) = broadcast::channel(WATCH_BACKLOG);
        let live = Arc::new(Mutex::new(Live {
            screen: Screen::new(TermSize::default()),
            sink: Sink::Nowhere,
        }));
        let weak: Weak<Mutex<Live>> = Arc::downgrade(&live);
        let watchers = watch.clone();
        brain.on_data(Arc::new(move |bytes| {
            if let Some(live) = weak.upgrade() {
                route(&mut lock(&live), &watchers, bytes);
            }
        }));
        Arc::new(CloneHandle {
            record,
            brain,
            queue: Arc::new(tokio::sync::Mutex::new(())),
            activity: Mutex::new(Activity::Idle),
            live,
            watch,
            pending: ParkedQuestions::announcing(questions),
            events: Mutex::default(),
            turn_marker: state.join("turn-running"),
        })
    }

    /// The turn a daemon that stopped mid-way left unfinished, once: what was asked and when,
    /// and the brain process it ran on, if that may still run.
    pub(super) fn take_cut_turn(&self) -> Option<CutTurn> {
        let text = std::fs::read_to_string(&self.turn_marker).ok()?;
        let _ = std::fs::remove_file(&self.turn_marker);
        // A marker written by an older ouro is plain text.
        Some(serde_json::from_str(&text).unwrap_or(CutTurn {
            what: text,
            brain: None,
        }))
    }

    /// Records that a turn on `prompt` runs, until [`CloneHandle::unmark_turn`].
    pub(super) fn mark_turn(&self, prompt: &str) {
        let first = prompt.lines().next().unwrap_or_default();
        let what = format!(
            "\"{}\" (started {})",
            crate::text::truncate(first, 80),
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
        self.write_marker(&CutTurn { what, brain: None });
    }

    /// Adds the brain's process to the running turn's marker once it is known, so a daemon
    /// killed mid-turn can tell, after a restart, whether that process still runs.
    pub(super) fn mark_brain(&self) {
        let Some(pid) = self.brain.instance().map(|i| i.pid) else {
            return;
        };
        let Ok(text) = std::fs::read_to_string(&self.turn_marker) else {
            return;
        };
        let Ok(mut cut) = serde_json::from_str::<CutTurn>(&text) else {
            return;
        };
        if cut.brain.is_none_or(|b| b.pid != pid) {
            cut.brain = Leftover::of(pid);
            self.write_marker(&cut);
        }
    }

    fn write_marker(&self, cut: &CutTurn) {
        let text = serde_json::to_string(cut).unwrap_or_default();
        if let Err(e) = crate::sys::atomic::write(&self.turn_marker, text.as_bytes()) {
            tracing::warn!(clone = %self.name(), error = %e, "could not mark the running turn");
        }
    }

    pub(super) fn unmark_turn(&self) {
        let _ = std::fs::remove_file(&self.turn_marker);
    }

    pub(super) fn name(&self) -> &str {
        &self.record.name
    }

    pub(super) fn info(&self) -> CloneInfo {
        let instance = self.brain.instance();
        CloneInfo {
            name: self.record.name.clone(),
            brain: self.record.brain.clone(),
            mode: instance.map_or(Mode::Dispatch, |i| i.mode),
            pid: instance.map(|i| i.pid),
            series: self
                .brain
                .series()
                .map(|s| s.exid)
                .filter(|s| !s.is_empty()),
            dir: self.record.dir.clone(),
            busy: *lock(&self.activity) != Activity::Idle,
            zone: None,
            unreachable: None,
        }
    }

    /// The clone's place in the queue now, if no turn or talk holds it.
    pub(super) fn try_take_turn(&self) -> Option<OwnedMutexGuard<()>> {
        self.queue.clone().try_lock_owned().ok()
    }

    /// Waits for the clone's turn in the queue, telling `client` why it waits when it must.
    pub(super) async fn take_turn(&self, client: &mpsc::Sender<Frame>) -> OwnedMutexGuard<()> {
        if let Ok(guard) = self.queue.clone().try_lock_owned() {
            return guard;
        }
        let reason = match *lock(&self.activity) {
            Activity::Talk => format!(
                "{} is in a talk; this waits until the talk ends (or detaches)",
                self.name()
            ),
            _ => format!(
                "{} is busy with another turn; this waits for it",
                self.name()
            ),
        };
        deliver(client, Header::Queued { reason }.into()).await;
        let guard = self.queue.clone().lock_owned().await;
        // Said, so that a relay whose link drops from here on knows the question was asked.
        let starts = Header::Notice {
            message: format!("{}'s turn for this starts now", self.name()),
        };
        deliver(client, starts.into()).await;
        guard
    }

    /// Marks a dispatch turn as running; its stream-json lines go to `lines` when given.
    pub(super) fn begin_turn(&self, lines: Option<mpsc::Sender<Frame>>) {
        {
            let mut log = lock(&self.events);
            log.turn_start = log.next;
        }
        *lock(&self.activity) = Activity::Turn;
        lock(&self.live).sink = lines.map_or(Sink::Nowhere, Sink::Lines);
    }

    /// Marks a talk as running, on a fresh screen of `size`, with no client attached yet.
    pub(super) fn begin_talk(&self, size: TermSize) {
        let size = sane_size(size);
        *lock(&self.activity) = Activity::Talk;
        let mut live = lock(&self.live);
        live.screen.reset(size);
        live.sink = Sink::Talk {
            client: None,
            resync: false,
        };
    }

    /// Attaches the talking client: it gets the screen as it is now, then every byte after it
    /// (both under one lock, so nothing is lost or doubled).
    pub(super) fn attach(&self, client: mpsc::Sender<Frame>) {
        let mut live = lock(&self.live);
        let screen = live.screen.whole();
        let _ = client.try_send(Frame::with_payload(Header::Screen, screen));
        if let Sink::Talk { client: slot, .. } = &mut live.sink {
            *slot = Some(client);
        }
    }

    pub(super) fn resize_screen(&self, size: TermSize) {
        let size = sane_size(size);
        if let (Some(rows), Some(cols)) = (NonZeroU16::new(size.rows), NonZeroU16::new(size.cols)) {
            lock(&self.live).screen.set_size(rows, cols);
        }
    }

    pub(super) fn end_activity(&self) {
        *lock(&self.activity) = Activity::Idle;
        lock(&self.live).sink = Sink::Nowhere;
    }

    /// A new watcher: the screen first when a talk runs, then everything live.
    pub(super) fn watch(&self) -> (Option<Vec<u8>>, broadcast::Receiver<Frame>) {
        let live = lock(&self.live);
        let rx = self.watch.subscribe();
        let screen = matches!(live.sink, Sink::Talk { .. }).then(|| live.screen.whole());
        (screen, rx)
    }

    /// [`CloneHandle::watch`] for a watcher coming back: with `since` (the last event it saw)
    /// the logged events after it, else those of the current or last turn.
    pub(super) fn watch_after(
        &self,
        since: Option<u64>,
    ) -> (Option<Vec<u8>>, broadcast::Receiver<Frame>, Missed) {
        // Held while subscribing: no event falls between the log and the live ones.
        let log = lock(&self.events);
        let (screen, rx) = self.watch();
        let from = since.map_or(log.turn_start, |seen| seen.saturating_add(1));
        let oldest = log.frames.front().map_or(log.next, |(seq, _)| *seq);
        let missed = Missed {
            frames: log
                .frames
                .iter()
                .filter(|(seq, _)| *seq >= from)
                .map(|(_, frame)| frame.clone())
                .collect(),
            lost: oldest.saturating_sub(from),
        };
        (screen, rx, missed)
    }

    /// Tells every watcher of an event, numbered and logged; the frame, for the asking client.
    pub(super) fn broadcast_event(&self, event: crate::ui_event::UiEvent) -> Frame {
        self.broadcast_logged(|seq| Header::Event {
            event,
            seq: Some(seq),
        })
    }

    /// Tells every watcher of the frame `make` builds with its number, and logs it: an event,
    /// or a turn's end (so a client coming back after the turn ended still gets its answer).
    pub(super) fn broadcast_logged(&self, make: impl FnOnce(u64) -> Header) -> Frame {
        let mut log = lock(&self.events);
        let seq = log.next;
        log.next += 1;
        let frame = Frame::new(make(seq));
        if log.frames.len() == EVENT_LOG {
            log.frames.pop_front();
        }
        log.frames.push_back((seq, frame.clone()));
        let _ = self.watch.send(frame.clone());
        frame
    }

    /// Tells every watcher.
    pub(super) fn broadcast(&self, frame: Frame) {
        let _ = self.watch.send(frame);
    }

    /// Puts a permission question to `client` and every watcher; the first answer wins, and
    /// after `timeout` with none the call is denied with the reason.
    pub(super) async fn ask_permission(
        &self,
        question: PermissionQuestion,
        client: &mpsc::Sender<Frame>,
        timeout: Duration,
    ) -> PermissionAnswer {
        self.ask_permission_then(question, client, timeout, |_| {})
            .await
    }

    /// [`CloneHandle::ask_permission`], calling `parked` with the question as
    /// `ouro agent pending` shows it once it waits under its id.
    pub(super) async fn ask_permission_then(
        &self,
        question: PermissionQuestion,
        client: &mpsc::Sender<Frame>,
        timeout: Duration,
        parked: impl FnOnce(&super::frame::PendingQuestion),
    ) -> PermissionAnswer {
        let (tool_name, input, reason) = (
            question.tool_name.clone(),
            question.input.clone(),
            question.reason.clone(),
        );
        let waiting = self.pending.park(question, timeout);
        let request_id = waiting.id.clone();
        if let Some(shown) = self.pending().into_iter().find(|q| q.id == request_id) {
            parked(&shown);
        }
        let frame = Frame::new(Header::Permission {
            clone: self.name().to_string(),
            request_id: request_id.clone(),
            tool_name,
            input,
            reason,
        });
        self.broadcast(frame.clone());
        deliver(client, frame).await;
        let settled = waiting.settled().await;
        let done = Frame::new(Header::PermissionSettled {
            request_id,
            outcome: settled.outcome().to_string(),
        });
        self.broadcast(done.clone());
        deliver(client, done).await;
        settled.answer()
    }

    /// Answers an open permission question; `false` when none has that id (already answered).
    pub(super) fn answer(&self, request_id: &str, allow: bool, always: bool) -> bool {
        self.answer_with(request_id, allow, always, None)
    }

    /// [`CloneHandle::answer`], with what a denial tells the brain.
    pub(super) fn answer_with(
        &self,
        request_id: &str,
        allow: bool,
        always: bool,
        message: Option<String>,
    ) -> bool {
        let answer = if allow {
            PermissionAnswer::allow(always)
        } else {
            PermissionAnswer::Deny {
                message: message.unwrap_or_else(|| "The user denied this call.".into()),
            }
        };
        self.pending.answer(request_id, answer).is_ok()
    }

    /// Its parked questions, as `ouro agent pending` lists them.
    pub(super) fn pending(&self) -> Vec<super::frame::PendingQuestion> {
        self.pending
            .list()
            .into_iter()
            .map(|q| super::frame::PendingQuestion {
                id: q.id,
                agent: self.name().to_string(),
                tool: q.tool_name,
                input: q.input,
                rule: q.rule,
                reason: q.reason,
                expires_at: chrono::DateTime::<chrono::Utc>::from(q.expires_at)
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            })
            .collect()
    }

    /// Waits for the clone's turn in the queue, with nobody to tell (an agent run).
    pub(super) async fn wait_turn(&self) -> OwnedMutexGuard<()> {
        self.queue.clone().lock_owned().await
    }
}

fn route(live: &mut Live, watchers: &broadcast::Sender<Frame>, bytes: &[u8]) {
    let Live { screen, sink } = live;
    match sink {
        Sink::Nowhere => {}
        Sink::Lines(client) => {
            if is_conversation_line(bytes) {
                let _ = client.try_send(Frame::with_payload(Header::Line, bytes));
            }
        }
        Sink::Talk { client, resync } => {
            screen.process(bytes);
            if watchers.receiver_count() > 0 {
                let _ = watchers.send(Frame::with_payload(Header::Output, bytes));
            }
            let Some(tx) = client else { return };
            if *resync {
                let whole = screen.whole();
                *resync = tx
                    .try_send(Frame::with_payload(Header::Screen, whole))
                    .is_err();
            } else if tx
                .try_send(Frame::with_payload(Header::Output, bytes))
                .is_err()
            {
                *resync = true;
            }
        }
    }
}

/// The stream-json lines print mode shows (the control protocol between the daemon and the
/// brain stays between them).
fn is_conversation_line(line: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(borrow, rename = "type")]
        kind: &'a str,
    }
    serde_json::from_slice::<Kind>(line)
        .is_ok_and(|k| !k.kind.starts_with("control_") && k.kind != "keep_alive")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_conversation_lines_are_relayed() {
        assert!(is_conversation_line(
            br#"{"type":"assistant","message":{}}"#
        ));
        assert!(is_conversation_line(b"{\"type\":\"result\"}\n"));
        assert!(!is_conversation_line(br#"{"type":"control_request"}"#));
        assert!(!is_conversation_line(b"not json"));
    }

    #[test]
    fn a_talk_feeds_the_screen_the_client_and_resyncs_a_full_client() {
        let (watch, mut watcher) = broadcast::channel(8);
        let (tx, mut rx) = mpsc::channel(1);
        let mut live = Live {
            screen: Screen::new(TermSize { cols: 20, rows: 3 }),
            sink: Sink::Talk {
                client: Some(tx),
                resync: false,
            },
        };
        route(&mut live, &watch, b"hello");
        route(&mut live, &watch, b" world");
        assert!(live.screen.contents().contains("hello world"));
        assert_eq!(rx.try_recv().unwrap().payload, b"hello");
        // The second chunk did not fit: the next one brings the whole screen instead.
        route(&mut live, &watch, b"!");
        let frame = rx.try_recv().unwrap();
        assert_eq!(frame.header, Header::Screen);
        assert!(String::from_utf8_lossy(&frame.payload).contains("hello world!"));
        assert_eq!(watcher.try_recv().unwrap().payload, b"hello");
    }
}
