//! The Approvals inbox: every permission question parked anywhere this server can reach, each
//! under its one single-use id, answered by that id alone, and a stream that shows the list
//! again whenever a question is parked or settled.
//!
//! The questions come from this server's sessions and from every [`Elsewhere`] it was given
//! (the daemon's agents, asked over its socket by code that lives with the daemon).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::SystemTime;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path as UrlPath, State};
use axum::response::Response;
use axum::response::sse::Event;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::error::ApiError;
use super::routes::{parse, session_of, sse};
use super::state::{AppState, Live};
use crate::brain::PermissionAnswer;
use crate::brain::parked::{Elsewhere, NotWaiting};
use crate::sys::sync::lock;

type Shared = State<Arc<AppState>>;

/// The most characters of a session's last message that stand for it in the inbox.
const TITLE_CHARS: usize = 80;

/// One parked question as the inbox shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Approval {
    id: String,
    /// Where it waits: `serve` for this server's sessions, `daemon` for its agents.
    source: &'static str,
    /// The session asking (a question of this server's).
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    /// The first line of the message of the session's latest turn (the one asking).
    #[serde(skip_serializing_if = "Option::is_none")]
    session_title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    project_root: Option<std::path::PathBuf>,
    /// The agent (or clone) asking (a question from elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    tool: String,
    input: Value,
    reason: Option<String>,
    /// The allow rule "always" would add.
    rule: Option<String>,
    /// RFC 3339, in whole seconds; the question is denied then.
    expires_at: String,
    /// The same instant to the nanosecond, to put questions parked within a second in order.
    #[serde(skip)]
    expires: SystemTime,
}

/// An answer, as both the inbox's route and the per-session one take it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Reply {
    decision: Decision,
    #[serde(default)]
    remember: bool,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Decision {
    Allow,
    Deny,
}

impl Reply {
    fn answer(&self) -> PermissionAnswer {
        match self.decision {
            Decision::Allow => PermissionAnswer::allow(self.remember),
            Decision::Deny => PermissionAnswer::Deny {
                message: self
                    .message
                    .clone()
                    .unwrap_or_else(|| "the user denied this call".into()),
            },
        }
    }
}

/// Where parked questions wait.
pub(super) trait Source: Send + Sync {
    /// Its questions waiting now, in any order; none from a source that cannot be reached
    /// (the inbox still shows the others').
    fn list<'a>(&'a self, state: &'a AppState) -> BoxFuture<'a, Vec<Approval>>;

    /// Answers question `id` if it waits here: `Ok(false)` when this source holds no such
    /// question (another may).
    fn answer<'a>(
        &'a self,
        state: &'a AppState,
        id: &'a str,
        reply: &'a Reply,
    ) -> BoxFuture<'a, Result<bool, ApiError>>;
}

/// Every source the inbox gathers, asked in this order.
fn sources(state: &AppState) -> impl Iterator<Item = &dyn Source> {
    std::iter::once(&Sessions as &dyn Source)
        .chain(state.elsewhere.iter().map(|e| e as &dyn Source))
}

/// This server's own sessions.
struct Sessions;

impl Source for Sessions {
    fn list<'a>(&'a self, state: &'a AppState) -> BoxFuture<'a, Vec<Approval>> {
        Box::pin(async move { session_rows(state) })
    }

    fn answer<'a>(
        &'a self,
        state: &'a AppState,
        id: &'a str,
        reply: &'a Reply,
    ) -> BoxFuture<'a, Result<bool, ApiError>> {
        Box::pin(async move {
            let lives: Vec<Arc<Live>> = lock(&state.sessions).values().cloned().collect();
            // Ids are unique across sessions: the one that parked it takes it, the rest say no.
            Ok(lives
                .iter()
                .any(|live| settle(state, live, id, reply).is_ok()))
        })
    }
}

fn session_rows(state: &AppState) -> Vec<Approval> {
    let lives: Vec<Arc<Live>> = lock(&state.sessions).values().cloned().collect();
    let mut rows = Vec::new();
    for live in lives {
        let parked = live.pending.list();
        if parked.is_empty() {
            continue;
        }
        let (session_id, project_root, session_title) = {
            let session = lock(&live.session);
            (
                session.id.clone(),
                session.project_root.clone(),
                session.history.last().map(|t| title(&t.message)),
            )
        };
        rows.extend(parked.into_iter().map(|q| {
            Approval {
                id: q.id,
                source: "serve",
                session_id: Some(session_id.clone()),
                session_title: session_title.clone(),
                project_root: Some(project_root.clone()),
                agent: None,
                tool: q.tool_name,
                input: q.input,
                reason: q.reason,
                rule: q.rule,
                expires_at: chrono::DateTime::<chrono::Utc>::from(q.expires_at)
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                expires: q.expires_at,
            }
        }));
    }
    rows
}

/// A message's first line, at most [`TITLE_CHARS`] characters.
fn title(message: &str) -> String {
    let line = message.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// Another process's questions.
impl Source for Arc<dyn Elsewhere> {
    fn list<'a>(&'a self, _: &'a AppState) -> BoxFuture<'a, Vec<Approval>> {
        Box::pin(async move {
            let name = self.name();
            Elsewhere::list(self.as_ref())
                .await
                .into_iter()
                .map(|q| {
                    let expires = chrono::DateTime::parse_from_rfc3339(&q.expires_at)
                        .map_or(SystemTime::UNIX_EPOCH, SystemTime::from);
                    Approval {
                        id: q.id,
                        source: name,
                        session_id: None,
                        session_title: None,
                        project_root: None,
                        agent: Some(q.agent),
                        tool: q.tool,
                        input: q.input,
                        reason: q.reason,
                        rule: q.rule,
                        expires_at: q.expires_at,
                        expires,
                    }
                })
                .collect()
        })
    }

    fn answer<'a>(
        &'a self,
        _: &'a AppState,
        id: &'a str,
        reply: &'a Reply,
    ) -> BoxFuture<'a, Result<bool, ApiError>> {
        Box::pin(async move {
            Elsewhere::answer(self.as_ref(), id, reply.answer())
                .await
                .map_err(ApiError::unavailable)
        })
    }
}

/// Every question of every source, the oldest first.
async fn gather(state: &AppState) -> Vec<Approval> {
    let mut rows = Vec::new();
    for source in sources(state) {
        rows.extend(source.list(state).await);
    }
    rows.sort_by_key(|row| row.expires);
    rows
}

/// Answers question `id` of `live`; with "allow always", its rules (the brain's suggestion,
/// else the call's narrowest rule) become the session's for later turns.
fn settle(state: &AppState, live: &Live, id: &str, reply: &Reply) -> Result<(), NotWaiting> {
    let question = live.pending.answer(id, reply.answer())?;
    if reply.decision == Decision::Allow && reply.remember {
        remember(state, live, &question.always_rules);
    }
    Ok(())
}

fn remember(state: &AppState, live: &Live, rules: &[String]) {
    let mut changed = false;
    {
        let mut session = lock(&live.session);
        for rule in rules {
            if !session.always_allow.contains(rule) {
                session.always_allow.push(rule.clone());
                changed = true;
            }
        }
    }
    if changed && let Err(e) = live.save(&state.home) {
        tracing::warn!(error = %e, "could not save a remembered rule");
    }
}

/// `POST /api/harness/permission {sessionId, requestId, decision, remember?, message?}`.
pub(super) async fn permission(
    state: Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Body {
        session_id: String,
        request_id: String,
        #[serde(flatten)]
        reply: Reply,
    }
    let body: Body = parse(body)?;
    let live = session_of(&state, &body.session_id)?;
    settle(&state, &live, &body.request_id, &body.reply)
        .map_err(|e| ApiError::not_found(format!("{e} in this session")))?;
    Ok(Json(json!({"ok": true})))
}

/// `GET /api/harness/approvals`.
pub(super) async fn list(state: Shared) -> Json<Vec<Approval>> {
    Json(gather(&state).await)
}

/// `POST /api/harness/approvals/{id} {decision, remember?, message?}`, wherever it waits.
pub(super) async fn answer(
    state: Shared,
    UrlPath(id): UrlPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let reply: Reply = parse(body)?;
    for source in sources(&state) {
        if source.answer(&state, &id, &reply).await? {
            return Ok(Json(json!({"ok": true})));
        }
    }
    Err(ApiError::not_found(NotWaiting(id).to_string()))
}

/// `GET /api/harness/approvals/events`: an `approvals` event with the whole list now, and again
/// after every change (changes close together come as one). Ends when the server closes.
pub(super) async fn events(state: Shared) -> Response {
    struct Follow {
        state: Arc<AppState>,
        changes: watch::Receiver<u64>,
        closing: watch::Receiver<bool>,
        first: bool,
    }
    let start = Follow {
        changes: state.approvals.subscribe(),
        closing: state.closing.subscribe(),
        state: state.0,
        first: true,
    };
    sse(futures::stream::unfold(start, |mut f| async move {
        if !f.first {
            tokio::select! {
                changed = f.changes.changed() => changed.ok()?,
                _ = f.closing.wait_for(|c| *c) => return None,
            }
        }
        f.first = false;
        // Marked seen before the list is read: a change while it is read wakes this again.
        f.changes.mark_unchanged();
        let rows = gather(&f.state).await;
        // Strings and JSON values only: serializing them cannot fail.
        let data = serde_json::to_string(&rows).unwrap_or_default();
        let event = Event::default().event("approvals").data(data);
        Some((Ok::<_, Infallible>(event), f))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_the_first_line_cut_on_a_character() {
        assert_eq!(title("fix it\nplease"), "fix it");
        let long = "é".repeat(TITLE_CHARS + 5);
        let cut = title(&long);
        assert_eq!(cut.chars().count(), TITLE_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn an_inbox_reply_and_a_session_reply_read_the_same() {
        let reply: Reply =
            serde_json::from_value(json!({"decision": "allow", "remember": true})).unwrap();
        assert_eq!(reply.answer(), PermissionAnswer::allow(true));
        let reply: Reply = serde_json::from_value(json!({"decision": "deny"})).unwrap();
        assert!(matches!(reply.answer(), PermissionAnswer::Deny { .. }));
        assert!(serde_json::from_value::<Reply>(json!({"decision": "maybe"})).is_err());
    }
}
