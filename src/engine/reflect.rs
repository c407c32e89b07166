//! The engine's part of memory's reflect step: the last turn and the session's client for
//! the request (which may run while the next prompt is typed), then its cost in the session's
//! totals, its event and its transcript line.

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use super::Engine;
use crate::event::{Event, ReflectInfo};
use crate::knowledge::reflect::{self, Proposal, Turn};
use crate::knowledge::{Provenance, Store};

/// What one reflect request proposed about one turn.
#[derive(Debug, Clone)]
pub struct Reflected {
    pub proposal: Proposal,
    pub turn: Turn,
    pub provenance: Provenance,
    pub duration: Duration,
}

/// Memories shown to reflect so it links to them instead of adding copies.
const KNOWN: usize = 10;

impl Engine {
    /// The reflect request about the last turn, ready to await (it borrows nothing from the
    /// engine); `None` when there is no turn yet. `store` is where the memories it may link to
    /// are.
    pub fn reflect_request(
        &self,
        model: &str,
        store: &Path,
        commit: Option<String>,
    ) -> Option<impl Future<Output = Reflected> + Send + 'static> {
        let turn = Turn::last(self.history())?;
        let known = Store::open_existing(store)
            .ok()
            .flatten()
            .and_then(|s| s.search(&turn.prompt, KNOWN).ok())
            .unwrap_or_default();
        let provenance = Provenance {
            session: Some(self.session_id.clone()),
            turn: Some(turn.number),
            commit,
        };
        let (client, model) = (self.client.clone(), model.to_string());
        Some(async move {
            let started = Instant::now();
            let proposal = reflect::propose(&client, &model, &turn, &known).await;
            Reflected {
                proposal,
                turn,
                provenance,
                duration: started.elapsed(),
            }
        })
    }

    /// Counts a finished reflect in the session's cost, and reports it: an event and a
    /// transcript line. `stored` is how many operations were kept; `error` why none were.
    pub fn reflected(
        &mut self,
        done: &Reflected,
        mode: &str,
        stored: usize,
        error: Option<String>,
    ) -> ReflectInfo {
        let proposal = &done.proposal;
        let cost_usd = if proposal.usage == Default::default() {
            0.0
        } else {
            self.costs.record(&proposal.model, &proposal.usage)
        };
        let info = ReflectInfo {
            turn: done.turn.number,
            mode: mode.to_string(),
            proposed: proposal.operations.len(),
            stored,
            model: proposal.model.clone(),
            input_tokens: proposal.usage.input_tokens,
            output_tokens: proposal.usage.output_tokens,
            cost_usd,
            duration_ms: u64::try_from(done.duration.as_millis()).unwrap_or(u64::MAX),
            error: error.or_else(|| proposal.error.clone()),
        };
        self.persist(|t| t.append_reflect(&info));
        self.emit(Event::MemoryReflect(info.clone()));
        info
    }
}
