//! The daemon's side of `ouro ask` / `ouro act`: one served turn of the clone's brain, queued
//! behind the clone's other turns and talks, its events sent to the asking client and to every
//! watcher, its permission questions put to all of them.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::clone::{CloneHandle, CutTurn, deliver};
use super::conn::Conn;
use super::frame::{Frame, Header};
use crate::brain::table::tools_for;
use crate::brain::{Asker, TurnOptions, TurnRequest, Verb};
use crate::sys::leftover::Fate;
use crate::ui_event::UiEvent;

/// How long a turn waits for a brain process a killed daemon left running.
const LEFTOVER_WAIT: Duration = Duration::from_secs(3);

pub(super) async fn run(
    clone: Arc<CloneHandle>,
    conn: &mut Conn,
    verb: Verb,
    prompt: String,
    lines: bool,
    permission_timeout: Duration,
) {
    let client = conn.outgoing.clone();
    // A client that gives up while queued takes its turn with it.
    let turn = tokio::select! {
        guard = clone.take_turn(&client) => guard,
        _ = conn.next() => return,
    };
    if let Some(cut) = clone.take_cut_turn() {
        let notice: Frame = Header::Notice {
            message: cut_notice(&clone, cut).await,
        }
        .into();
        clone.broadcast(notice.clone());
        deliver(&client, notice).await;
    }
    clone.mark_turn(&prompt);
    clone.begin_turn(lines.then(|| client.clone()));
    let verb_name = match verb {
        Verb::Ask => "ask",
        Verb::Act => "act",
    };
    clone.broadcast(
        Header::Notice {
            message: format!("{verb_name}: {}", first_line(&prompt)),
        }
        .into(),
    );

    let (events, mut events_rx) = mpsc::unbounded_channel();
    let asker: Asker = {
        let clone = clone.clone();
        let client = client.clone();
        let timeout = permission_timeout;
        Arc::new(move |question| {
            let clone = clone.clone();
            let client = client.clone();
            Box::pin(async move { clone.ask_permission(question, &client, timeout).await })
        })
    };
    let options = TurnOptions {
        permission_mode: clone.record.permission_mode.clone(),
        tools: (verb == Verb::Ask)
            .then(|| tools_for(Verb::Ask).iter().map(|t| t.to_string()).collect()),
        resume: clone
            .brain
            .series()
            .map(|s| s.exid)
            .filter(|s| !s.is_empty()),
        ..TurnOptions::default()
    };
    let request = TurnRequest {
        prompt,
        options,
        label: clone.name().to_string(),
        events,
        ask: asker,
        stop: tokio_util::sync::CancellationToken::new(),
    };
    let mut text = String::new();
    let mut client_here = true;
    let running = clone.brain.turn(request);
    tokio::pin!(running);
    let report = loop {
        tokio::select! {
            report = &mut running => break report,
            Some(event) = events_rx.recv() => {
                if matches!(event, UiEvent::SessionInit { .. }) {
                    clone.mark_brain();
                }
                client_here &= relay(&clone, &client, event, lines || !client_here, &mut text).await;
            }
            frame = conn.next(), if client_here => match frame {
                Some(Frame { header: Header::PermissionAnswer { request_id, allow, always }, .. }) => {
                    clone.answer(&request_id, allow, always);
                }
                Some(_) => {}
                // The turn runs to its end without the client: the answer stays in the series.
                None => client_here = false,
            },
        }
    };
    while let Ok(event) = events_rx.try_recv() {
        client_here &= relay(&clone, &client, event, lines || !client_here, &mut text).await;
    }
    // A clone's process lives for its turn: between turns the clone holds no process, and a
    // talk or the claude CLI may take its conversation.
    if let Err(e) = clone.brain.release().await {
        tracing::warn!(clone = %clone.name(), error = %e, "could not end a clone's brain process");
    }
    clone.unmark_turn();
    clone.end_activity();
    drop(turn);
    let end = match report {
        Ok(report) => Header::TurnEnd {
            is_error: report.is_error,
            text,
            session_id: report.session_id,
            cost_usd: report.cost_usd,
        },
        Err(e) => Header::Error {
            message: format!("the brain of {} failed: {e}", clone.name()),
        },
    };
    let end = clone.broadcast_logged(|_| end);
    deliver(&client, end).await;
}

/// What the next turn says of one the daemon's end cut off. Its brain process should have
/// ended with the daemon; one that still runs (it was not started by this daemon's keeper,
/// or is just finishing) is waited for a little, then ended, before this turn takes the
/// conversation.
async fn cut_notice(clone: &CloneHandle, cut: CutTurn) -> String {
    let leftover = match cut.brain {
        Some(brain) => match brain.settle(LEFTOVER_WAIT).await {
            Fate::Gone => String::new(),
            Fate::Finished => format!(
                " (its brain, pid {}, was still finishing; this waited for it to end)",
                brain.pid
            ),
            Fate::Ended => format!(
                " (its brain, pid {}, was still running after {} s; this ended it)",
                brain.pid,
                LEFTOVER_WAIT.as_secs()
            ),
        },
        None => String::new(),
    };
    format!(
        "the last turn of {}, {}, was cut off when the daemon stopped{leftover}; this turn continues the same conversation",
        clone.name(),
        cut.what
    )
}

/// Sends one event to the watchers and to the client (unless it reads stream-json lines or is
/// gone), and keeps the last answer text for the turn's end; `false` once the client is gone.
async fn relay(
    clone: &CloneHandle,
    client: &mpsc::Sender<Frame>,
    event: UiEvent,
    skip_client: bool,
    text: &mut String,
) -> bool {
    match &event {
        UiEvent::ChatComplete { text: t, .. } if !t.is_empty() => t.clone_into(text),
        UiEvent::SessionError { error, .. } if text.is_empty() => error.clone_into(text),
        _ => {}
    }
    let frame = clone.broadcast_event(event);
    skip_client || deliver(client, frame).await
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    crate::text::truncate(line, 120)
}
