//! Permission questions parked until someone answers them: the one registry serve, the daemon
//! (and the agent foundry's supervisor) share. Each question gets a single-use id that is the
//! same wherever it is shown; the first answer from any client wins; a question nobody answers
//! expires and is denied, and the brain is told why.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{oneshot, watch};

use super::{PermissionAnswer, PermissionQuestion};
use crate::sys::sync::lock;

/// The parked questions of one owner (a served session, a clone).
#[derive(Clone, Default)]
pub struct ParkedQuestions {
    waiting: Arc<Mutex<HashMap<String, Parked>>>,
    /// Bumped once a question is parked and once one has left, for lists that follow them.
    changes: Option<watch::Sender<u64>>,
}

struct Parked {
    question: PermissionQuestion,
    expires_at: SystemTime,
    answer: oneshot::Sender<PermissionAnswer>,
}

/// A parked question as a client is shown it.
#[derive(Debug, Clone, PartialEq)]
pub struct ParkedInfo {
    pub id: String,
    pub tool_name: String,
    pub input: Value,
    pub reason: Option<String>,
    /// The allow rule "always" would add.
    pub rule: Option<String>,
    pub(crate) expires_at: SystemTime,
}

/// How a parked question ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    Answered(PermissionAnswer),
    /// Nobody answered in time: denied, with the reason the brain is told.
    Expired(PermissionAnswer),
    /// Its owner went away (the turn ended, the session was deleted) before an answer came.
    Abandoned(PermissionAnswer),
}

impl Settled {
    /// What the brain gets.
    pub fn answer(self) -> PermissionAnswer {
        match self {
            Settled::Answered(a) | Settled::Expired(a) | Settled::Abandoned(a) => a,
        }
    }

    /// One word for logs and watchers: `allowed`, `denied` or `timed out`.
    pub fn outcome(&self) -> &'static str {
        match self {
            Settled::Answered(PermissionAnswer::Allow { .. }) => "allowed",
            Settled::Answered(PermissionAnswer::Deny { .. }) | Settled::Abandoned(_) => "denied",
            Settled::Expired(_) => "timed out",
        }
    }
}

/// The asking side of one parked question.
pub struct Waiting {
    pub id: String,
    tool_name: String,
    timeout: Duration,
    answer: oneshot::Receiver<PermissionAnswer>,
    registry: ParkedQuestions,
}

impl Waiting {
    /// Waits for the first answer, or denies the call once the question expires.
    pub async fn settled(mut self) -> Settled {
        let abandoned = || {
            Settled::Abandoned(PermissionAnswer::Deny {
                message: "the turn ended before anyone answered".into(),
            })
        };
        match tokio::time::timeout(self.timeout, &mut self.answer).await {
            Ok(Ok(answer)) => Settled::Answered(answer),
            Ok(Err(_)) => abandoned(),
            Err(_) => {
                // Under the registry's lock, where answers are given: one given just now
                // counts; after this none can be.
                let _waiting = lock(&self.registry.waiting);
                match self.answer.try_recv() {
                    Ok(answer) => Settled::Answered(answer),
                    Err(_) => Settled::Expired(PermissionAnswer::Deny {
                        message: format!(
                            "Nobody answered the permission request for {} within {} seconds, so it was denied.",
                            self.tool_name,
                            self.timeout.as_secs()
                        ),
                    }),
                }
            }
        }
    }
}

impl Drop for Waiting {
    /// However the asking side ends (settled, or its future dropped), its id is spent.
    fn drop(&mut self) {
        let removed = lock(&self.registry.waiting).remove(&self.id).is_some();
        if removed {
            self.registry.changed();
        }
    }
}

/// No question waits under an id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no permission request {0} is waiting (it was answered, timed out, or its turn ended)")]
pub struct NotWaiting(pub String);

impl ParkedQuestions {
    /// A registry that bumps `changes` whenever its list changes; owners that share one
    /// sender (a server's sessions, a daemon's clones) tell one inbox.
    pub fn announcing(changes: watch::Sender<u64>) -> ParkedQuestions {
        ParkedQuestions {
            waiting: Arc::default(),
            changes: Some(changes),
        }
    }

    fn changed(&self) {
        if let Some(changes) = &self.changes {
            changes.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Parks `question` under a new id for at most `timeout`.
    pub fn park(&self, question: PermissionQuestion, timeout: Duration) -> Waiting {
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        let tool_name = question.tool_name.clone();
        lock(&self.waiting).insert(
            id.clone(),
            Parked {
                question,
                expires_at: SystemTime::now() + timeout,
                answer: tx,
            },
        );
        self.changed();
        Waiting {
            id,
            tool_name,
            timeout,
            answer: rx,
            registry: self.clone(),
        }
    }

    /// Answers the question `id` (once: the id is spent); the question it answered.
    pub fn answer(
        &self,
        id: &str,
        answer: PermissionAnswer,
    ) -> Result<PermissionQuestion, NotWaiting> {
        // Sent under the lock an expiring question takes to look a last time: an answer that
        // is accepted here is the one the brain gets.
        let mut waiting = lock(&self.waiting);
        let parked = waiting
            .remove(id)
            .ok_or_else(|| NotWaiting(id.to_string()))?;
        let sent = parked.answer.send(answer);
        drop(waiting);
        self.changed();
        sent.map_err(|_| NotWaiting(id.to_string()))?;
        Ok(parked.question)
    }

    /// Every question waiting, the oldest first.
    pub fn list(&self) -> Vec<ParkedInfo> {
        let mut out: Vec<ParkedInfo> = lock(&self.waiting)
            .iter()
            .map(|(id, parked)| ParkedInfo {
                id: id.clone(),
                tool_name: parked.question.tool_name.clone(),
                input: parked.question.input.clone(),
                reason: parked.question.reason.clone(),
                rule: parked.question.always_rules.first().cloned(),
                expires_at: parked.expires_at,
            })
            .collect();
        out.sort_by_key(|info| info.expires_at);
        out
    }

    /// Drops every question: their callers are denied as abandoned.
    pub fn clear(&self) {
        lock(&self.waiting).clear();
        self.changed();
    }
}

/// One parked question as it travels between processes: `ouro agent pending --json` prints
/// it, the daemon sends it, serve's inbox shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingQuestion {
    pub id: String,
    /// The agent (or clone) whose call waits.
    pub agent: String,
    pub tool: String,
    pub input: Value,
    /// The allow rule "always" would add.
    pub rule: Option<String>,
    pub reason: Option<String>,
    /// RFC 3339.
    pub expires_at: String,
}

/// Questions parked in another process that this one can show and answer: serve's inbox
/// reaches the daemon's agents through one, without knowing how the daemon is spoken to.
pub trait Elsewhere: Send + Sync {
    /// Where they wait, as the inbox names it (`daemon`).
    fn name(&self) -> &'static str;

    /// Its questions waiting now; none when it cannot be reached.
    fn list(&self) -> BoxFuture<'_, Vec<PendingQuestion>>;

    /// Answers question `id`: `Ok(false)` when none waits under it there; `Err` says why it
    /// could not be asked.
    fn answer<'a>(
        &'a self,
        id: &'a str,
        answer: PermissionAnswer,
    ) -> BoxFuture<'a, Result<bool, String>>;

    /// Bumps `changes` each time its list may have changed, for as long as the future runs,
    /// whether or not the other process runs yet (it is looked for again now and then).
    fn follow(&self, changes: watch::Sender<u64>) -> BoxFuture<'static, ()>;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn question(tool: &str) -> PermissionQuestion {
        PermissionQuestion {
            tool_name: tool.into(),
            input: json!({"command": "ls"}),
            reason: Some("why".into()),
            always_rules: vec!["Bash(ls)".into()],
        }
    }

    #[tokio::test]
    async fn the_first_answer_wins_and_the_id_is_spent() {
        let parked = ParkedQuestions::default();
        let waiting = parked.park(question("Bash"), Duration::from_secs(60));
        let id = waiting.id.clone();
        assert_eq!(parked.list()[0].id, id);
        let asked = parked.answer(&id, PermissionAnswer::allow(true)).unwrap();
        assert_eq!(asked.always_rules, ["Bash(ls)"]);
        assert_eq!(
            parked.answer(&id, PermissionAnswer::allow(false)),
            Err(NotWaiting(id.clone()))
        );
        let settled = waiting.settled().await;
        assert_eq!(settled.outcome(), "allowed");
        assert_eq!(settled.answer(), PermissionAnswer::allow(true));
        assert!(parked.list().is_empty());
    }

    #[tokio::test]
    async fn an_unanswered_question_expires_denied_and_leaves_the_registry() {
        let parked = ParkedQuestions::default();
        let waiting = parked.park(question("Write"), Duration::from_millis(50));
        let id = waiting.id.clone();
        let settled = waiting.settled().await;
        assert_eq!(settled.outcome(), "timed out");
        let PermissionAnswer::Deny { message } = settled.answer() else {
            panic!("an expired question is denied");
        };
        assert!(
            message.contains("Write") && message.contains("denied"),
            "{message}"
        );
        assert!(parked.list().is_empty());
        assert!(parked.answer(&id, PermissionAnswer::allow(false)).is_err());
    }

    #[tokio::test]
    async fn a_question_whose_asker_gave_up_leaves_the_registry() {
        let parked = ParkedQuestions::default();
        let waiting = parked.park(question("Bash"), Duration::from_secs(60));
        assert_eq!(parked.list().len(), 1);
        drop(waiting);
        assert!(parked.list().is_empty());
    }

    #[tokio::test]
    async fn an_announcing_registry_bumps_its_sender_when_a_question_comes_and_goes() {
        let (tx, mut rx) = watch::channel(0);
        let parked = ParkedQuestions::announcing(tx);
        let waiting = parked.park(question("Bash"), Duration::from_secs(60));
        assert!(rx.has_changed().unwrap());
        rx.mark_unchanged();
        parked
            .answer(&waiting.id.clone(), PermissionAnswer::allow(false))
            .unwrap();
        assert!(rx.has_changed().unwrap());
        rx.mark_unchanged();
        let second = parked.park(question("Edit"), Duration::from_secs(60));
        rx.mark_unchanged();
        drop(second);
        assert!(
            rx.has_changed().unwrap(),
            "a question whose asker gave up left"
        );
        rx.mark_unchanged();
        drop(waiting);
        assert!(!rx.has_changed().unwrap(), "an answered question left once");
    }

    #[tokio::test]
    async fn a_cleared_question_is_abandoned_and_denied() {
        let parked = ParkedQuestions::default();
        let waiting = parked.park(question("Edit"), Duration::from_secs(60));
        parked.clear();
        let settled = waiting.settled().await;
        assert!(matches!(
            settled,
            Settled::Abandoned(PermissionAnswer::Deny { .. })
        ));
    }
}
