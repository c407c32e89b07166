//! The engine's side of checkpoints: a snapshot before each prompt is answered and at the end
//! of its turn, their records in the transcript (after the tool calls' own, in order), and
//! cutting the conversation back to a prompt.

use super::Engine;
use crate::api::types::{ContentBlock, Role};
use crate::checkpoint::record::Detail;
use crate::checkpoint::{Kind, Record};
use crate::event::Event;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RewindError {
    #[error(
        "the conversation no longer holds that prompt (it was compacted or rewound since); only the code can go back to it"
    )]
    NotInConversation,
}

impl Engine {
    /// Snapshots the project as `kind` (a sub-agent leaves prompts and turns to its parent).
    pub(super) async fn checkpoint(&mut self, kind: Kind, detail: Detail) {
        if self.config.subagent {
            return;
        }
        if let Some(checkpoints) = self.executor.context().checkpoints.clone() {
            checkpoints.take(kind, detail).await;
        }
        self.save_checkpoints();
    }

    /// The prompt's snapshot, taken once the turn's first request is on its way: the model's
    /// answer need not wait for it (nothing of ouro's touches a file before it is done), and
    /// walking the project must not compete with sending the request. Until the turn's first
    /// request is sent, or the turn ends without one, a later checkpoint waits.
    pub(super) async fn prompt_checkpoint(&mut self, detail: Detail) {
        if self.config.subagent {
            return;
        }
        let Some(checkpoints) = self.executor.context().checkpoints.clone() else {
            return;
        };
        let (sent, when_sent) = crate::api::body::when_sent();
        self.request_sent = Some(sent);
        let after = async move {
            // Sent, or given up on: either way the snapshot goes ahead.
            let _ = when_sent.await;
        };
        checkpoints.take_soon(Kind::Prompt, detail, after).await;
        self.save_checkpoints();
    }

    /// Writes the checkpoints taken since the last call to the transcript.
    pub fn save_checkpoints(&mut self) {
        if self.config.subagent {
            return;
        }
        let Some(checkpoints) = self.executor.context().checkpoints.clone() else {
            return;
        };
        for record in checkpoints.drain() {
            self.persist(|t| t.append_checkpoint(&record));
        }
        if let Some(failure) = checkpoints.take_disk_failure() {
            self.lost_write.get_or_insert(failure);
        }
        if let Some(notice) = checkpoints.take_notice() {
            self.emit(Event::Notice(notice));
        }
    }

    /// The user typed `text` for the next prompt, which carries more than that.
    pub fn user_typed(&mut self, text: &str) {
        self.typed = Some(text.to_string());
    }

    /// The next prompt's message is these blocks, in this order (an Agent SDK's message with
    /// images or documents), rather than the prompt's text alone.
    pub fn prompt_content(&mut self, blocks: Vec<ContentBlock>) {
        self.prompt_blocks = Some(blocks);
    }

    /// The next prompt's message goes by `id`, and is echoed on the event stream with it (the
    /// Agent SDK's `--replay-user-messages`), so `rewind_files` can name its checkpoint. The
    /// echo follows the turn's `system/init`, which gives it its session.
    pub fn replay_prompt(&mut self, text: &str, id: String) {
        self.replay = Some(Event::PromptReplay {
            text: text.to_string(),
            uuid: id.clone(),
        });
        self.prompt_id = Some(id);
    }

    /// Cuts the conversation back to just before the prompt `record` was taken for, in memory
    /// and in the transcript (a later `--resume` sees the cut). Returns the prompt's text.
    pub fn rewind_conversation(&mut self, record: &Record) -> Result<String, RewindError> {
        let at = at_prompt(self.history(), record).ok_or(RewindError::NotInConversation)?;
        let kept = self.history()[..at].to_vec();
        self.persist(|t| t.append_compaction(&kept));
        self.history.replace(kept);
        self.cache_mark = None;
        Ok(record.detail.prompt.clone().unwrap_or_default())
    }
}

/// Where the prompt of `record` starts in `history`, if it is still there.
pub fn at_prompt(history: &[crate::api::types::Message], record: &Record) -> Option<usize> {
    let at = record.detail.messages?;
    let prompt = record.detail.prompt.as_deref()?;
    let message = history.get(at)?;
    (message.role == Role::User && message.text().starts_with(prompt)).then_some(at)
}
