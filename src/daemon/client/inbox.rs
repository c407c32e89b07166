//! The daemon's parked questions for another front end's inbox (serve's Approvals), through
//! the [`Elsewhere`] it knows them by: listed, answered and followed over the daemon's socket,
//! and never starting a daemon (none running means no question waits there).

use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::watch;

use super::Client;
use crate::brain::PermissionAnswer;
use crate::brain::parked::{Elsewhere, PendingQuestion};
use crate::daemon::frame::Header;
use crate::daemon::{DaemonError, Paths};

/// How often a follower looks again for a daemon that is not running (or went away).
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// The questions parked in the daemon of one ouro home.
pub struct DaemonQuestions {
    paths: Paths,
}

impl DaemonQuestions {
    pub fn new(paths: Paths) -> DaemonQuestions {
        DaemonQuestions { paths }
    }
}

impl Elsewhere for DaemonQuestions {
    fn name(&self) -> &'static str {
        "daemon"
    }

    fn list(&self) -> BoxFuture<'_, Vec<PendingQuestion>> {
        Box::pin(async move {
            let Ok(mut client) = Client::connect(&self.paths, false).await else {
                return Vec::new();
            };
            match client
                .request(Header::AgentPending { here_only: false })
                .await
            {
                Ok(Header::Pending { questions }) => questions,
                _ => Vec::new(),
            }
        })
    }

    fn answer<'a>(
        &'a self,
        id: &'a str,
        answer: PermissionAnswer,
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let mut client = match Client::connect(&self.paths, false).await {
                Ok(client) => client,
                Err(DaemonError::NotRunning) => return Ok(false),
                Err(e) => return Err(e.to_string()),
            };
            let (allow, always, message) = match answer {
                PermissionAnswer::Allow { remember, .. } => (true, remember, None),
                PermissionAnswer::Deny { message } => (false, false, Some(message)),
            };
            let header = Header::AgentAnswer {
                request_id: id.to_string(),
                allow,
                always,
                message,
                here_only: false,
            };
            match client.request(header).await {
                Ok(Header::Ok { .. }) => Ok(true),
                // The daemon's one error for this request: no such question waits.
                Err(DaemonError::Remote(_)) => Ok(false),
                Ok(other) => Err(format!("the daemon answered {other:?}")),
                Err(e) => Err(e.to_string()),
            }
        })
    }

    /// Runs for as long as the future is polled: a server follows its daemon for its life.
    fn follow(&self, changes: watch::Sender<u64>) -> BoxFuture<'static, ()> {
        let paths = self.paths.clone();
        Box::pin(async move {
            loop {
                if let Ok(mut client) = Client::connect(&paths, false).await
                    && client.send(Header::AgentPendingFollow).await.is_ok()
                {
                    while let Ok(frame) = client.next().await {
                        if matches!(frame.header, Header::Pending { .. }) {
                            changes.send_modify(|n| *n = n.wrapping_add(1));
                        }
                    }
                    // Its questions went with it.
                    changes.send_modify(|n| *n = n.wrapping_add(1));
                }
                tokio::time::sleep(LOOK_AGAIN).await;
            }
        })
    }
}
