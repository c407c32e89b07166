//! Running a served turn: the session's persona, mode and options become the brain's turn
//! options, the brain's events go into the session's log (in order, permission requests
//! included), and the session is saved when the turn ends, whatever way it ends.

use std::sync::Arc;
use std::time::Instant;

use serde::Deserialize;
use serde_json::json;
use tokio::sync::{mpsc, watch};

use super::error::ApiError;
use super::prompt::{self, Parts};
use super::state::{AppState, Live, Running};
use super::store::{self, Mode};
use crate::agents::persona::{self, Persona};
use crate::brain::{PermissionAnswer, PermissionQuestion, TurnOptions, TurnRequest};
use crate::permissions::PermissionMode;
use crate::session::transcript;
use crate::sys::sync::lock;
use crate::ui_event::UiEvent;

/// The design's `TurnOpts`; fields this server does not know are ignored, so a newer GUI
/// still works.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TurnOpts {
    pub permission_mode: Option<String>,
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub disallowed_tools: Vec<String>,
    #[serde(default)]
    pub auto_approve_tools: Vec<String>,
    pub max_turns: Option<u32>,
    pub(crate) system_prompt_append: Option<String>,
}

const DEFAULT_MAX_TURNS: u32 = 25;

/// Claude Code's classifier mode: only the claude brain has it so far.
const CLAUDE_AUTO_MODE: &str = "auto";

/// A permission mode a session or a turn names (`field` says where) must be one a brain knows.
pub(super) fn check_permission_mode(mode: Option<&str>, field: &str) -> Result<(), ApiError> {
    match mode {
        Some(mode) if mode != CLAUDE_AUTO_MODE && mode.parse::<PermissionMode>().is_err() => {
            Err(ApiError::bad_request(format!(
                "{field} \"{mode}\" is not one of {}, {CLAUDE_AUTO_MODE}",
                PermissionMode::names()
            )))
        }
        _ => Ok(()),
    }
}

/// Starts `message` as turn `turn_id` of `live`, or finds that turn if it already ran or
/// runs; returns the id of the turn's first event.
pub(super) fn start(
    state: &Arc<AppState>,
    live: &Arc<Live>,
    message: String,
    turn_id: String,
    opts: TurnOpts,
) -> Result<u64, ApiError> {
    let mut running = lock(&live.running);
    if let Some(now) = running.as_ref() {
        if now.turn_id == turn_id {
            return Ok(live
                .log
                .turn_start(&turn_id)
                .unwrap_or_else(|| live.log.next_id()));
        }
        return Err(ApiError::conflict(format!(
            "a turn ({}) is already running in this session; wait for its process:exit or interrupt it",
            now.turn_id
        )));
    }
    if let Some(first) = live.log.turn_start(&turn_id) {
        return Ok(first);
    }
    let session = live.snapshot();
    check_conversation_free(&session, live.brain.instance().map(|i| i.pid))?;
    let options = options(state, &session, &opts)?;
    // Known before the turn runs, so a page reloaded mid-turn (or a server restarted) shows
    // what was asked.
    lock(&live.session).history.push(store::TurnRecord {
        turn_id: turn_id.clone(),
        message: message.clone(),
    });
    let first = live.log.next_id();
    let (done_tx, done_rx) = watch::channel(false);
    let stop = tokio_util::sync::CancellationToken::new();
    *running = Some(Running {
        turn_id: turn_id.clone(),
        done: done_rx,
        stop: stop.clone(),
    });
    drop(running);
    save(state, live);
    state.log.record(
        "turn_start",
        &session.id,
        json!({"turnId": turn_id, "brain": session.brain, "message": message, "resume": options.resume}),
    );
    tokio::spawn(run(
        state.clone(),
        live.clone(),
        message,
        turn_id,
        options,
        (done_tx, stop),
    ));
    Ok(first)
}

/// Starts a new session's brain ahead of its first turn when a warm place is free, so that
/// turn finds it running as every later one does. A brain only waits for its input, and ends
/// as any idle one does.
pub(super) fn prepare(state: &Arc<AppState>, live: &Arc<Live>) {
    use std::sync::atomic::Ordering;
    let warm = lock(&state.sessions)
        .values()
        .filter(|l| l.brain.instance().is_some())
        .count();
    // Brains still starting count too: a burst of new sessions would otherwise all see room.
    let starting = state.preparing.fetch_add(1, Ordering::SeqCst);
    let reserved = Starting(state.clone());
    if warm + starting >= state.warm.max_warm {
        return;
    }
    let Ok(options) = options(state, &live.snapshot(), &TurnOpts::default()) else {
        return;
    };
    let live = live.clone();
    tokio::spawn(async move {
        if let Err(e) = live.brain.prepare(options).await {
            tracing::debug!(error = %e, "could not start a new session's brain ahead of its turn");
        }
        drop(reserved);
    });
}

/// A brain counted as starting ([`AppState::preparing`]) until this is dropped.
struct Starting(Arc<AppState>);

impl Drop for Starting {
    fn drop(&mut self) {
        self.0
            .preparing
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A CLI (or another server) writing the brain's conversation now means 409, not two writers;
/// the session's own warm brain (`warm`) holding it is the one writer.
fn check_conversation_free(session: &store::Session, warm: Option<u32>) -> Result<(), ApiError> {
    let Some(id) = &session.claude_session_id else {
        return Ok(());
    };
    let Some(dir) = crate::session::project_dir(&session.project_root) else {
        return Ok(());
    };
    match transcript::check_free(&dir.join(format!("{id}.jsonl"))) {
        Err(transcript::TranscriptError::Busy { pid, .. }) if pid.is_some() && pid == warm => {
            Ok(())
        }
        Err(e @ transcript::TranscriptError::Busy { .. }) => Err(ApiError::conflict(e.to_string())),
        _ => Ok(()),
    }
}

fn options(
    state: &AppState,
    session: &store::Session,
    opts: &TurnOpts,
) -> Result<TurnOptions, ApiError> {
    check_permission_mode(opts.permission_mode.as_deref(), "opts.permissionMode")?;
    let root = &session.project_root;
    let persona: Option<Persona> = match &session.persona {
        Some(id) => Some(persona::find(root, id).map_err(ApiError::bad_request)?),
        None => None,
    };
    // What a cloned repository's persona may widen counts only once the user trusts it.
    let trusted = crate::settings::LayeredSettings::load(root)
        .map(|s| s.trusts(root))
        .unwrap_or(false);
    let mut allowed = opts.auto_approve_tools.clone();
    allowed.extend(session.always_allow.iter().cloned());
    let mut disallowed = opts.disallowed_tools.clone();
    let mut tools = opts.tools.clone();
    let mut max_turns = opts.max_turns;
    let mut persona_file = None;
    if let Some(p) = &persona {
        disallowed.extend(p.disallowed_tools.iter().cloned());
        tools = tools.or_else(|| p.tools.clone());
        max_turns = max_turns.or(p.max_turns);
        if trusted {
            allowed.extend(p.auto_approve_tools.iter().cloned());
            persona_file = Some(p.path.as_path());
        }
    }
    let mut append = prompt::build(
        &Parts {
            project_root: root,
            mode: session.mode,
            persona: persona_file,
            trusted,
        },
        &state.prompts,
        prompt::BUDGET_CHARS,
    );
    if let Some(extra) = opts.system_prompt_append.as_ref().filter(|t| !t.is_empty()) {
        append.push_str("\n\n");
        append.push_str(extra);
    }
    // Kept for whoever wants to see what the brain is told; written (durably) only when it
    // changed, not on every turn's way to the brain.
    let kept = store::prompt_file(&state.home, session);
    if std::fs::read(&kept).ok().as_deref() != Some(append.as_bytes())
        && let Err(e) = crate::sys::atomic::write(&kept, append.as_bytes())
    {
        tracing::warn!(error = %e, "could not keep a served turn's system prompt");
    }
    let permission_mode = opts
        .permission_mode
        .clone()
        .or_else(|| session.permission_mode.clone());
    let permission_mode = match (session.mode, permission_mode) {
        (_, Some(mode)) => Some(mode),
        (Mode::Pipeline, None) => Some("acceptEdits".into()),
        (_, None) => None,
    };
    Ok(TurnOptions {
        permission_mode,
        tools,
        disallowed_tools: disallowed,
        allowed_tools: allowed,
        ask_rules: Vec::new(),
        max_turns: Some(max_turns.unwrap_or(DEFAULT_MAX_TURNS)),
        max_budget_usd: None,
        append_system_prompt: Some(append),
        resume: session.claude_session_id.clone(),
        settings: None,
    })
}

async fn run(
    state: Arc<AppState>,
    live: Arc<Live>,
    message: String,
    turn_id: String,
    options: TurnOptions,
    (done, stop): (watch::Sender<bool>, tokio_util::sync::CancellationToken),
) {
    let started = Instant::now();
    let session_id = live.snapshot().id;
    let (tx, mut rx) = mpsc::unbounded_channel::<UiEvent>();
    // The turn's `process:exit` is held back until the session is saved and the next turn
    // may start: a client that sends its next message on seeing it must not get 409.
    let forward = {
        let (live, state, turn_id) = (live.clone(), state.clone(), turn_id.clone());
        tokio::spawn(async move {
            let mut exit = None;
            while let Some(event) = rx.recv().await {
                log_event(&state, &event);
                // Kept as soon as the brain names its conversation: a server killed during
                // the first turn resumes it rather than starting a new one.
                if let UiEvent::SessionInit {
                    claude_session_id, ..
                } = &event
                {
                    remember_conversation(&state, &live, claude_session_id);
                }
                if matches!(event, UiEvent::ProcessExit { .. }) {
                    exit = Some(event);
                } else {
                    live.log.push(&turn_id, event);
                }
            }
            exit
        })
    };
    let request = TurnRequest {
        prompt: message.clone(),
        options,
        label: session_id.clone(),
        events: tx.clone(),
        ask: asker(&state, &live, tx.clone()),
        stop,
    };
    let outcome = live.brain.turn(request).await;
    // Questions still open belong to a turn that is over; dropping them lets their askers
    // (which hold the event channel) end.
    live.pending.clear();
    if let Err(e) = &outcome {
        let _ = tx.send(UiEvent::SessionError {
            session_id: session_id.clone(),
            error: e.to_string(),
        });
        let _ = tx.send(UiEvent::ProcessExit {
            session_id: session_id.clone(),
            code: None,
            signal: None,
        });
    }
    drop(tx);
    let exit = forward
        .await
        .ok()
        .flatten()
        .unwrap_or(UiEvent::ProcessExit {
            session_id: session_id.clone(),
            code: None,
            signal: None,
        });
    let (cost, claude_id) = match &outcome {
        Ok(report) => (report.cost_usd, report.session_id.clone()),
        Err(_) => (0.0, None),
    };
    {
        let mut session = lock(&live.session);
        if claude_id.is_some() {
            session.claude_session_id = claude_id;
        }
        session.updated_at = store::now();
        session.cost_usd += cost;
        session.turns += 1;
    }
    save(&state, &live);
    state.log.record(
        "turn_completed",
        &session_id,
        json!({"turnId": turn_id, "costUsd": cost, "durationMs": started.elapsed().as_millis() as u64}),
    );
    *lock(&live.used) = Instant::now();
    {
        let mut running = lock(&live.running);
        live.log.push(&turn_id, exit);
        *running = None;
    }
    done.send_replace(true);
    // Too many warm brains: the least recently used ends now, not at the next check, and
    // beside this turn's end rather than in its way.
    tokio::spawn(async move { state.cool_down().await });
}

/// Saves the brain's conversation id with the session when it is new.
fn remember_conversation(state: &AppState, live: &Live, claude_session_id: &str) {
    if claude_session_id.is_empty() {
        return;
    }
    {
        let mut session = lock(&live.session);
        if session.claude_session_id.as_deref() == Some(claude_session_id) {
            return;
        }
        session.claude_session_id = Some(claude_session_id.to_string());
    }
    save(state, live);
}

/// Saves the session, saying when it could not (a session deleted meanwhile stays deleted:
/// [`Live::save`] writes nothing for it).
fn save(state: &AppState, live: &Live) {
    if let Err(e) = live.save(&state.home) {
        tracing::warn!(error = %e, session = %live.snapshot().id, "could not save a served session");
    }
}

/// Puts a permission question to whoever watches the session: a `permission:request` event,
/// answered by `POST /api/harness/permission` or the Approvals inbox, denied when nobody
/// answers in time.
fn asker(
    state: &Arc<AppState>,
    live: &Arc<Live>,
    events: mpsc::UnboundedSender<UiEvent>,
) -> crate::brain::Asker {
    let live = Arc::downgrade(live);
    let timeout = state.options.permission_timeout;
    Arc::new(move |question: PermissionQuestion| {
        let live = live.clone();
        let events = events.clone();
        Box::pin(async move {
            let Some(session) = live.upgrade() else {
                return PermissionAnswer::Deny {
                    message: "the session was deleted".into(),
                };
            };
            let (tool_name, input) = (question.tool_name.clone(), question.input.clone());
            // The session's registry tells the inbox it is parked, and again once it has left.
            let waiting = session.pending.park(question, timeout);
            let session_id = session.snapshot().id;
            drop(session);
            let _ = events.send(UiEvent::PermissionRequest {
                session_id,
                request_id: waiting.id.clone(),
                tool_name,
                input,
            });
            waiting.settled().await.answer()
        })
    })
}

fn log_event(state: &AppState, event: &UiEvent) {
    let (kind, data) = event.split();
    let session_id = data.get("sessionId").and_then(|v| v.as_str()).unwrap_or("");
    let fields = match event {
        UiEvent::ChatDelta { .. } | UiEvent::ChatComplete { .. } => return,
        UiEvent::SessionInit {
            claude_session_id,
            model,
            ..
        } => json!({"claudeSessionId": claude_session_id, "model": model}),
        UiEvent::ToolStart {
            name, tool_use_id, ..
        } => json!({"tool": name, "toolUseId": tool_use_id}),
        UiEvent::ToolResult {
            tool_use_id,
            is_error,
            content,
            ..
        } => json!({"toolUseId": tool_use_id, "isError": is_error, "message": content}),
        UiEvent::PermissionRequest {
            tool_name,
            request_id,
            ..
        } => json!({"tool": tool_name, "requestId": request_id}),
        UiEvent::SessionComplete { cost_usd, .. } => json!({"costUsd": cost_usd}),
        UiEvent::SessionError { error, .. } => json!({"message": error}),
        UiEvent::ProcessExit { code, signal, .. } => json!({"code": code, "signal": signal}),
    };
    state.log.record(&kind, session_id, fields);
}
