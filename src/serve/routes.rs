//! The harness API's routes. Bodies are read here (not by axum's extractors) so that every
//! failure, a body over the limit included, is the API's own JSON error.

use std::collections::{BTreeSet, VecDeque};
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::ApiError;
use super::events::{FileCursor, Stored};
use super::state::{AppState, Live};
use super::store::{self, Mode, Session};
use super::turn::{self, TurnOpts};
use crate::agents::persona;
use crate::sys::sync::lock;
use crate::ui_event::UiEvent;

type Shared = State<Arc<AppState>>;

/// A comment line this often keeps proxies from closing a quiet stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The most files `GET /files` lists.
const MAX_FILES: usize = 20_000;

pub(super) fn parse<T: DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = body.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large()
        } else {
            ApiError::bad_request(r.body_text())
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(format!("the body is not the JSON this route takes: {e}"))
    })
}

pub(super) fn project_root(raw: &str) -> Result<PathBuf, ApiError> {
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(ApiError::bad_request(format!(
            "projectRoot must be an absolute path, not \"{raw}\""
        )));
    }
    let root = path.canonicalize().map_err(|e| {
        ApiError::bad_request(format!(
            "projectRoot {raw} is not a directory ouro can open: {e}"
        ))
    })?;
    if !root.is_dir() {
        return Err(ApiError::bad_request(format!(
            "projectRoot {raw} is not a directory"
        )));
    }
    Ok(root)
}

pub(super) fn session_of(state: &AppState, id: &str) -> Result<Arc<Live>, ApiError> {
    state
        .live(id)
        .ok_or_else(|| ApiError::not_found(format!("there is no session {id}")))
}

pub(super) async fn auth(
    state: Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    #[derive(Deserialize)]
    struct Body {
        token: String,
    }
    let body: Body = parse(body)?;
    if !super::auth::same(&body.token, &state.token) {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            format!(
                "that is not this server's token (it is in {})",
                state.token_file.display()
            ),
        ));
    }
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/",
        super::auth::COOKIE,
        state.token
    );
    Ok(([(header::SET_COOKIE, cookie)], Json(json!({"ok": true}))).into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    project_root: String,
    #[serde(default)]
    persona: Option<String>,
    mode: Mode,
    #[serde(default)]
    brain: Option<String>,
    #[serde(default)]
    permission_mode: Option<String>,
}

pub(super) async fn create(
    state: Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body: CreateBody = parse(body)?;
    let root = project_root(&body.project_root)?;
    if let Some(id) = &body.persona {
        persona::find(&root, id).map_err(ApiError::bad_request)?;
    }
    turn::check_permission_mode(body.permission_mode.as_deref(), "permissionMode")?;
    let brain = body
        .brain
        .unwrap_or_else(|| state.options.default_brain.clone());
    crate::brain::slug::parse(&brain).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let now = store::now();
    let session = Session {
        id: uuid::Uuid::new_v4().to_string(),
        created_at: now.clone(),
        updated_at: now,
        project_root: root,
        persona: body.persona,
        mode: body.mode,
        claude_session_id: None,
        brain,
        permission_mode: body.permission_mode,
        always_allow: Vec::new(),
        cost_usd: 0.0,
        turns: 0,
        history: Vec::new(),
    };
    let written = super::record::create(&state.home, &session)
        .map_err(|e| ApiError::internal(format!("could not save the session: {e}")))?;
    let live = state
        .make_live(session.clone(), written)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    lock(&state.sessions).insert(session.id.clone(), live.clone());
    turn::prepare(&state, &live);
    Ok((StatusCode::CREATED, Json(json!({"session": session}))).into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProjectQuery {
    project_root: Option<String>,
    session_id: Option<String>,
}

fn summary(live: &Live) -> Value {
    let session = live.snapshot();
    let mut value = serde_json::to_value(&session).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.remove("history");
        map.insert("running".into(), Value::from(live.running().is_some()));
        // The process kept warm for the next turn, if any.
        map.insert(
            "brainPid".into(),
            live.brain
                .instance()
                .map_or(Value::Null, |i| Value::from(i.pid)),
        );
        let pending: Vec<String> = live.pending.list().into_iter().map(|q| q.id).collect();
        map.insert("pendingPermissions".into(), Value::from(pending));
        map.insert(
            "lastMessage".into(),
            // A preview: a list of sessions must not carry whole pasted files.
            session.history.last().map_or(Value::Null, |t| {
                Value::from(crate::text::prefix_chars(&t.message, LAST_MESSAGE_CHARS).0)
            }),
        );
    }
    value
}

pub(super) async fn list(
    state: Shared,
    Query(q): Query<ProjectQuery>,
) -> Result<Json<Value>, ApiError> {
    let root = q.project_root.as_deref().map(project_root).transpose()?;
    let mut sessions: Vec<Arc<Live>> = lock(&state.sessions)
        .values()
        .filter(|l| {
            root.as_ref()
                .is_none_or(|r| lock(&l.session).project_root == *r)
        })
        .cloned()
        .collect();
    sessions.sort_by_key(|l| std::cmp::Reverse(lock(&l.session).updated_at.clone()));
    Ok(Json(Value::from(
        sessions.iter().map(|l| summary(l)).collect::<Vec<_>>(),
    )))
}

pub(super) async fn get(
    state: Shared,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    let live = session_of(&state, &id)?;
    Ok(Json(json!({"session": summary(&live)})))
}

pub(super) async fn delete(
    state: Shared,
    UrlPath(id): UrlPath<String>,
) -> Result<StatusCode, ApiError> {
    // Out of the map first, so no new turn can start while the running one is stopped.
    let live = lock(&state.sessions)
        .remove(&id)
        .ok_or_else(|| ApiError::not_found(format!("there is no session {id}")))?;
    stop_turn(&live).await;
    // Its followers end and its brain stops now: they would hold both until they hung up.
    live.log.close();
    if let Err(e) = live.brain.release().await {
        tracing::warn!(error = %e, "could not stop a deleted session's brain");
    }
    let session = live.snapshot();
    live.delete_with(|| {
        live.log.remove_file();
        super::record::remove(&state.home, &session);
        let _ = std::fs::remove_file(store::prompt_file(&state.home, &session));
        let _ = std::fs::remove_dir_all(store::brain_dir(&state.home, &session));
    });
    Ok(StatusCode::NO_CONTENT)
}

/// Interrupts the running turn, if any, and waits until it has ended and been saved.
pub(super) async fn stop_turn(live: &Live) {
    let Some(mut running) = live.running() else {
        return;
    };
    running.stop.cancel();
    if let Err(e) = live.brain.interrupt().await {
        tracing::warn!(error = %e, "could not interrupt a served turn");
    }
    let _ = running.done.wait_for(|done| *done).await;
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TurnBody {
    session_id: String,
    message: String,
    #[serde(default)]
    turn_id: Option<String>,
    #[serde(default)]
    opts: Option<TurnOpts>,
}

/// The largest message a turn takes, in estimated tokens: the largest context window a model
/// has, less room for the system prompt and an answer.
const MAX_MESSAGE_TOKENS: usize = 900_000;

/// How much of a session's last message its summary shows.
const LAST_MESSAGE_CHARS: usize = 500;

pub(super) async fn turn(
    state: Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body: TurnBody = parse(body)?;
    if body.message.trim().is_empty() {
        return Err(ApiError::bad_request(
            "message is empty: say what the agent should do",
        ));
    }
    // A message no model's window holds would be kept in the conversation and fail every
    // turn after it: refused before it is recorded (about four bytes a token).
    if body.message.len() / 4 > MAX_MESSAGE_TOKENS {
        return Err(ApiError::bad_request(format!(
            "the message is about {} tokens, more than a model's context window holds; send a shorter one (attach large files by path instead)",
            body.message.len() / 4
        )));
    }
    let live = session_of(&state, &body.session_id)?;
    let turn_id = body
        .turn_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let first = turn::start(
        &state,
        &live,
        body.message,
        turn_id.clone(),
        body.opts.unwrap_or_default(),
    )?;
    Ok(sse(follow(
        &state,
        live,
        first.saturating_sub(1),
        Some(turn_id),
    )))
}

pub(super) async fn interrupt(
    state: Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Body {
        session_id: String,
    }
    let body: Body = parse(body)?;
    let live = session_of(&state, &body.session_id)?;
    let Some(running) = live.running() else {
        return Err(ApiError::not_found("no turn is running in this session"));
    };
    // The turn's own stop: it holds however early the interrupt comes (its brain may not
    // have taken the turn yet) and reaches no later turn.
    running.stop.cancel();
    // A brain in the middle of the turn also gets its harder stop (a CLI that ignores the
    // interrupt is ended after a grace period).
    live.brain
        .interrupt()
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(Json(json!({"interrupted": true})))
}

/// The projects the server was started with (`--project`), for a GUI's project picker.
pub(super) async fn projects(state: Shared) -> Json<Value> {
    let roots: Vec<Value> = state
        .options
        .projects
        .iter()
        .map(|p| {
            let root = p.canonicalize().unwrap_or_else(|_| p.clone());
            json!({"projectRoot": root, "exists": root.is_dir()})
        })
        .collect();
    Json(Value::from(roots))
}

pub(super) async fn personas(Query(q): Query<ProjectQuery>) -> Result<Json<Value>, ApiError> {
    let raw = q
        .project_root
        .ok_or_else(|| ApiError::bad_request("projectRoot is required"))?;
    let root = project_root(&raw)?;
    let found = persona::load_all(&root)
        .into_iter()
        .map(|p| match p {
            Ok(p) => serde_json::to_value(p).unwrap_or(Value::Null),
            Err(error) => json!({"error": error}),
        })
        .collect::<Vec<_>>();
    Ok(Json(Value::from(found)))
}

#[derive(Deserialize)]
pub(super) struct EventsQuery {
    after: Option<u64>,
}

pub(super) async fn events(
    state: Shared,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let live = session_of(&state, &id)?;
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .or(q.after)
        .unwrap_or(0);
    Ok(sse(follow(&state, live, after, None)))
}

pub(super) async fn history(
    state: Shared,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    let live = session_of(&state, &id)?;
    let session = live.snapshot();
    let events = live.log.since(0);
    let mut turn_ids: Vec<String> = session.history.iter().map(|t| t.turn_id.clone()).collect();
    for e in &events {
        if !turn_ids.contains(&e.turn_id) {
            turn_ids.push(e.turn_id.clone());
        }
    }
    let turns = turn_ids
        .iter()
        .map(|turn_id| {
            let message = session
                .history
                .iter()
                .find(|t| &t.turn_id == turn_id)
                .map(|t| t.message.clone());
            let events: Vec<Value> = events
                .iter()
                .filter(|e| &e.turn_id == turn_id)
                .map(event_json)
                .collect();
            json!({"turnId": turn_id, "message": message, "events": events})
        })
        .collect::<Vec<_>>();
    Ok(Json(json!({"session": summary(&live), "turns": turns})))
}

fn event_json(stored: &Stored) -> Value {
    let mut value = serde_json::to_value(&stored.event).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.insert("id".into(), Value::from(stored.id));
    }
    value
}

pub(super) async fn files(
    state: Shared,
    Query(q): Query<ProjectQuery>,
) -> Result<Json<Value>, ApiError> {
    let raw = q
        .project_root
        .ok_or_else(|| ApiError::bad_request("projectRoot is required"))?;
    let root = project_root(&raw)?;
    let changed = changed_files(&state, &root, q.session_id.as_deref());
    let walk_root = root.clone();
    let (paths, truncated) = tokio::task::spawn_blocking(move || list_files(&walk_root))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let files = paths
        .into_iter()
        .map(|path| {
            let changed = changed.contains(&path);
            json!({"path": path, "changed": changed})
        })
        .collect::<Vec<_>>();
    Ok(Json(
        json!({"root": root, "files": files, "truncated": truncated}),
    ))
}

/// The project's files as git would see them (`.gitignore` honoured), relative, sorted.
fn list_files(root: &Path) -> (Vec<String>, bool) {
    let mut out = Vec::new();
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walk.filter_map(Result::ok) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if out.len() == MAX_FILES {
            out.sort();
            return (out, true);
        }
        if let Ok(rel) = entry.path().strip_prefix(root) {
            out.push(rel.to_string_lossy().into_owned());
        }
    }
    out.sort();
    (out, false)
}

/// Files the turns of `session` (or of every session of the project) wrote with Edit or
/// Write, relative to `root`.
fn changed_files(state: &AppState, root: &Path, session: Option<&str>) -> BTreeSet<String> {
    let lives: Vec<Arc<Live>> = lock(&state.sessions)
        .iter()
        .filter(|(id, l)| {
            session.is_none_or(|s| s == id.as_str()) && lock(&l.session).project_root == root
        })
        .map(|(_, l)| l.clone())
        .collect();
    let mut out = BTreeSet::new();
    for live in lives {
        for stored in live.log.since(0) {
            if let UiEvent::ToolStart { name, input, .. } = &stored.event
                && matches!(
                    name.as_str(),
                    "Edit" | "Write" | "MultiEdit" | "NotebookEdit"
                )
                && let Some(path) = input
                    .get("file_path")
                    .or_else(|| input.get("notebook_path"))
                    .and_then(Value::as_str)
            {
                let path = Path::new(path);
                let rel = path.strip_prefix(root).unwrap_or(path);
                out.insert(rel.to_string_lossy().into_owned());
            }
        }
    }
    out
}

pub(super) fn sse(
    stream: impl Stream<Item = Result<Event, Infallible>> + Send + 'static,
) -> Response {
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response()
}

/// The session's events after `after`, then live ones; with `turn`, only until that turn's
/// `process:exit`. Ends when the server closes.
fn follow(
    state: &AppState,
    live: Arc<Live>,
    after: u64,
    turn: Option<String>,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    struct Follow {
        live: Arc<Live>,
        watch: tokio::sync::watch::Receiver<u64>,
        closing: tokio::sync::watch::Receiver<bool>,
        after: u64,
        queue: VecDeque<Stored>,
        cursor: FileCursor,
        turn: Option<String>,
        finished: bool,
    }
    let start = Follow {
        watch: live.log.watch(),
        closing: state.closing.subscribe(),
        live,
        after,
        queue: VecDeque::new(),
        cursor: FileCursor::default(),
        turn,
        finished: false,
    };
    futures::stream::unfold(start, |mut f| async move {
        loop {
            if f.finished {
                return None;
            }
            if let Some(stored) = f.queue.pop_front() {
                f.after = stored.id;
                if let Some(turn) = &f.turn {
                    if &stored.turn_id != turn {
                        continue;
                    }
                    if matches!(stored.event, UiEvent::ProcessExit { .. }) {
                        f.finished = true;
                    }
                }
                let (kind, data) = stored.event.split();
                let event = Event::default()
                    .id(stored.id.to_string())
                    .event(kind)
                    .data(data.to_string());
                return Some((Ok(event), f));
            }
            let batch = f.live.log.batch(f.after, &mut f.cursor);
            if !batch.is_empty() {
                f.queue.extend(batch);
                continue;
            }
            if *f.closing.borrow() || f.live.log.is_closed() {
                return None;
            }
            tokio::select! {
                changed = f.watch.changed() => if changed.is_err() { return None },
                _ = f.closing.wait_for(|c| *c) => {}
            }
        }
    })
}
