//! What the server holds: its options, its token, and each session with its event log, its
//! brain, the turn that runs and the permission questions waiting for an answer.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::events::EventLog;
use super::log::HarnessLog;
use super::prompt::FileCache;
use super::record::{self, Written};
use super::store::{self, Session};
use crate::brain::parked::{Elsewhere, ParkedQuestions};
use crate::brain::warm::{WarmPolicy, Warmth};
use crate::brain::{BrainCli, BrainConfig};
use crate::sys::sync::lock;

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub host: String,
    pub port: u16,
    /// Projects named at start (listed first; any directory may be used by a client).
    pub projects: Vec<PathBuf>,
    pub token_file: Option<PathBuf>,
    pub allow_origin: Option<String>,
    /// How long a permission request waits before it is denied.
    pub permission_timeout: Duration,
    /// Environment variables passed to turns even though their names look secret.
    pub pass_env: Vec<String>,
    /// The brain of a session that names none.
    pub default_brain: String,
}

pub(super) struct AppState {
    pub options: ServeOptions,
    pub home: PathBuf,
    pub token: String,
    pub token_file: PathBuf,
    /// `host:port` as bound.
    pub address: String,
    pub sessions: Mutex<HashMap<String, Arc<Live>>>,
    pub prompts: FileCache,
    pub log: HarnessLog,
    /// Set when the server stops: followers end their streams.
    pub closing: watch::Sender<bool>,
    /// Bumped when a question is parked in any session or settled, or the list of a source
    /// elsewhere may have changed: the Approvals inbox's followers show the list again.
    pub approvals: watch::Sender<u64>,
    /// Other processes whose parked questions the inbox shows too (the daemon's agents).
    pub elsewhere: Vec<Arc<dyn Elsewhere>>,
    /// How long sessions' brains stay warm between turns.
    pub warm: WarmPolicy,
    /// New sessions' brains being started ahead of their first turn.
    pub preparing: std::sync::atomic::AtomicUsize,
}

/// A session the server knows.
pub(super) struct Live {
    pub session: Mutex<Session>,
    pub log: EventLog,
    pub brain: Box<dyn BrainCli>,
    pub running: Mutex<Option<Running>>,
    /// Permission questions waiting, by request id, with the rules "allow always" would add.
    pub pending: ParkedQuestions,
    /// When its last turn ended (or it was loaded).
    pub used: Mutex<Instant>,
    /// Held while the session is written: see [`Live::save`].
    saving: Mutex<Saving>,
}

struct Saving {
    /// What the session's files hold.
    written: Written,
    /// Set once the session is deleted: a save still queued then writes nothing.
    deleted: bool,
}

#[derive(Clone)]
pub(super) struct Running {
    pub(crate) turn_id: String,
    /// `true` once the turn has ended and its session is saved.
    pub done: watch::Receiver<bool>,
    /// Cancelled by `POST /interrupt`: the turn stops whenever its brain takes it, however
    /// soon after it was accepted the interrupt came.
    pub stop: tokio_util::sync::CancellationToken,
}

impl AppState {
    pub(super) fn live(&self, id: &str) -> Option<Arc<Live>> {
        lock(&self.sessions).get(id).cloned()
    }

    /// A session's live state, with its brain (which starts nothing until a turn).
    pub(super) fn make_live(
        &self,
        session: Session,
        written: Written,
    ) -> Result<Arc<Live>, crate::brain::BrainError> {
        let config = BrainConfig::new(
            session.project_root.clone(),
            store::brain_dir(&self.home, &session),
        )
        .pass_env(&self.options.pass_env);
        let brain = crate::brain::open(&session.brain, config)?;
        Ok(Arc::new(Live {
            log: EventLog::open(store::events_file(&self.home, &session)),
            session: Mutex::new(session),
            brain,
            running: Mutex::new(None),
            pending: ParkedQuestions::announcing(self.approvals.clone()),
            used: Mutex::new(Instant::now()),
            saving: Mutex::new(Saving {
                written,
                deleted: false,
            }),
        }))
    }

    /// Ends the warm brain processes the policy says should end: idle too long, or too many.
    pub(super) async fn cool_down(&self) {
        let lives: Vec<(String, Arc<Live>)> = lock(&self.sessions)
            .iter()
            .map(|(id, live)| (id.clone(), live.clone()))
            .collect();
        let brains: Vec<Warmth<usize>> = lives
            .iter()
            .enumerate()
            .map(|(i, (_, live))| Warmth {
                key: i,
                used: *lock(&live.used),
                warm: live.brain.instance().is_some(),
                busy: live.running().is_some(),
            })
            .collect();
        crate::sys::heap::give_back();
        for i in self.warm.to_end(&brains, Instant::now()) {
            let (id, live) = &lives[i];
            match live.brain.release().await {
                Ok(true) => tracing::debug!(session = %id, "ended an idle brain process"),
                Ok(false) => {}
                Err(e) => tracing::warn!(session = %id, error = %e, "could not end an idle brain"),
            }
        }
    }

    /// Takes every session's journal into its record: a stopped server leaves each session
    /// whole in one file.
    pub(super) fn fold_all(&self) {
        let lives: Vec<_> = lock(&self.sessions).values().cloned().collect();
        for live in lives {
            if let Err(e) = live.fold(&self.home) {
                tracing::warn!(session = %live.snapshot().id, error = %e, "could not fold a served session's journal");
            }
        }
    }
}

/// Checks the warm brains now and then until the server closes.
pub(super) async fn keep_cool(state: Arc<AppState>) {
    let mut closing = state.closing.subscribe();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(state.warm.tick()) => state.cool_down().await,
            _ = closing.changed() => return,
        }
    }
}

impl Live {
    pub(super) fn snapshot(&self) -> Session {
        lock(&self.session).clone()
    }

    /// Writes the session as it is when the write starts, one write at a time: whichever
    /// runs last wrote the latest state, so a save may run in the background.
    pub(super) fn save(&self, home: &std::path::Path) -> std::io::Result<()> {
        let mut saving = lock(&self.saving);
        if saving.deleted {
            return Ok(());
        }
        record::save(home, self.snapshot(), &mut saving.written)
    }

    /// Takes the session's journal into its record, if it has one.
    pub(super) fn fold(&self, home: &std::path::Path) -> std::io::Result<()> {
        let mut saving = lock(&self.saving);
        if saving.deleted || !saving.written.journaled() {
            return Ok(());
        }
        record::fold(home, &self.snapshot(), &mut saving.written)
    }

    /// Marks the session deleted, after any save under way: `remove` then deletes its files,
    /// and no save started before it (a turn's, in the background) writes them back.
    pub(super) fn delete_with(&self, remove: impl FnOnce()) {
        let mut saving = lock(&self.saving);
        saving.deleted = true;
        remove();
    }

    pub(super) fn running(&self) -> Option<Running> {
        lock(&self.running).clone()
    }
}
