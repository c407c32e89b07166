//! One model call: send, retry what is retryable, stream the reply, and hand each finished
//! block on at once (tool calls start while the rest of the message still streams).

use std::time::Instant;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::Engine;
use super::run::{CallError, CallOutcome, Request, RunState};
use crate::api::client::ApiError;
use crate::api::retry::Wait;
use crate::api::stream::{Assembled, Assembler, bad_input_message};
use crate::api::types::ContentBlock;
use crate::event::{Event, RetryInfo};
use crate::exec::Batch;

enum Attempt {
    Done(CallOutcome),
    /// Failed before any block finished: the request may be sent again.
    Retryable(ApiError),
    Fatal(CallError),
}

/// Consecutive 529 answers after which a call moves to the fallback model.
const FALLBACK_AFTER_OVERLOADED: u32 = 3;

impl Engine {
    /// `batch` is `Some` for a conversation turn (blocks are emitted, persisted and tool calls
    /// submitted) and `None` for internal calls such as compaction.
    pub(super) async fn call_model(
        &mut self,
        request: &Request,
        run: &mut RunState,
        cancel: &CancellationToken,
        mut batch: Option<&mut Batch>,
    ) -> Result<CallOutcome, CallError> {
        let mut attempt = 0u32;
        let mut overloaded = 0u32;
        loop {
            let started = Instant::now();
            let result = self
                .attempt(request, run, cancel, batch.as_deref_mut())
                .await;
            run.api_time += started.elapsed();
            let error = match result {
                Attempt::Done(outcome) => return Ok(outcome),
                Attempt::Fatal(e) => return Err(e),
                Attempt::Retryable(e) => e,
            };
            overloaded = if error.status() == Some(529) {
                overloaded + 1
            } else {
                0
            };
            if overloaded >= FALLBACK_AFTER_OVERLOADED
                && self
                    .config
                    .fallback_model
                    .as_ref()
                    .is_some_and(|m| *m != self.config.model)
            {
                return Err(CallError::Overloaded(error));
            }
            if !error.is_retryable() || attempt >= self.config.retry.max_retries {
                return Err(CallError::Api(error));
            }
            attempt += 1;
            let delay = match self.config.retry.delay(attempt, &error) {
                Wait::Retry(delay) => delay,
                Wait::TooLong(wait) => return Err(CallError::WaitTooLong { error, wait }),
            };
            tracing::warn!(attempt, error = %error, "retrying the API request");
            self.emit(Event::ApiRetry(RetryInfo {
                message: error.to_string(),
                attempt,
                max_retries: self.config.retry.max_retries,
                retry_delay_ms: delay.as_millis() as u64,
                error_status: error.status(),
                error: error.label(),
            }));
            tokio::select! {
                _ = cancel.cancelled() => return Err(CallError::Aborted { outcome: CallOutcome::default() }),
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    async fn attempt(
        &mut self,
        request: &Request,
        run: &mut RunState,
        cancel: &CancellationToken,
        mut batch: Option<&mut Batch>,
    ) -> Attempt {
        let opened = tokio::select! {
            _ = cancel.cancelled() => return Attempt::Fatal(CallError::Aborted { outcome: CallOutcome::default() }),
            r = self.client.stream(&request.body, &request.betas, self.request_sent.take()) => r,
        };
        let mut stream = match opened {
            Ok(s) => Box::pin(s),
            Err(e) => return Attempt::Retryable(e),
        };
        let mut asm = Assembler::new();
        let failure = loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => None,
                n = stream.next() => Some(n),
            };
            let item = match next {
                None => {
                    if batch.is_some() {
                        for block in asm.keep_partial_text() {
                            self.announce(&asm, &block);
                        }
                    }
                    self.account(run, &asm, batch.is_some());
                    return Attempt::Fatal(CallError::Aborted {
                        outcome: outcome(asm),
                    });
                }
                Some(None) if asm.complete => break None,
                Some(None) => {
                    break Some(ApiError::Stream(
                        "the connection closed before the message was complete".into(),
                    ));
                }
                Some(Some(Err(e))) => break Some(e),
                Some(Some(Ok(ev))) => ev,
            };
            if self.config.partial_messages && batch.is_some() {
                self.emit(Event::StreamEvent(item.clone()));
            }
            match asm.push(item) {
                Ok(pieces) => {
                    for piece in pieces {
                        self.dispatch(piece, &asm, batch.as_deref_mut());
                    }
                }
                Err(e) => break Some(e),
            }
            if asm.complete {
                break None;
            }
        };
        match failure {
            // The retry sends the same request and reports its own usage; counting the failed
            // attempt's message_start too would bill the input twice. A finished thinking block
            // alone is not worth keeping: the retry thinks again.
            Some(e) if !asm.blocks.iter().any(is_answer) => Attempt::Retryable(e),
            Some(e) => {
                tracing::debug!(error = %e, blocks = asm.blocks.len(), "the stream broke after finished blocks");
                self.account(run, &asm, batch.is_some());
                Attempt::Fatal(CallError::Cut {
                    outcome: outcome(asm),
                    error: e,
                })
            }
            None => {
                self.account(run, &asm, batch.is_some());
                if batch.is_some() {
                    self.emit(Event::MessageDone {
                        message_id: asm.message_id.clone(),
                        stop_reason: asm.stop_reason,
                        usage: asm.usage,
                    });
                }
                Attempt::Done(outcome(asm))
            }
        }
    }

    fn dispatch(&mut self, piece: Assembled, asm: &Assembler, batch: Option<&mut Batch>) {
        let Some(batch) = batch else { return };
        match piece {
            Assembled::TextDelta(text) => self.emit(Event::TextDelta { text }),
            Assembled::ThinkingDelta(text) => self.emit(Event::ThinkingDelta { text }),
            Assembled::Block => {
                let Some(block) = asm.blocks.last() else {
                    return;
                };
                self.announce(asm, block);
                if let ContentBlock::ToolUse { id, name, input } = block {
                    batch.submit(id.clone(), name.clone(), input.clone());
                }
            }
            Assembled::BadToolInput {
                id,
                name,
                raw,
                error,
            } => {
                if let Some(block) = asm.blocks.last() {
                    self.announce(asm, block);
                }
                batch.submit_error(id, name.clone(), bad_input_message(&name, &raw, &error));
            }
            Assembled::MessageStarted { .. }
            | Assembled::Stopped(_)
            | Assembled::Complete
            | Assembled::ServerError(_) => {}
        }
    }

    fn announce(&mut self, asm: &Assembler, block: &ContentBlock) {
        let id = asm.message_id.clone();
        self.persist(|t| t.append_assistant_block(&id, block));
        self.emit(Event::AssistantBlock {
            message_id: asm.message_id.clone(),
            model: asm.model.clone(),
            block: std::sync::Arc::new(block.clone()),
            usage: asm.usage,
        });
    }

    /// Count what a response used, whether or not it completed. A `conversation` response
    /// (not a summary) also measures how much the history weighs.
    fn account(&mut self, run: &mut RunState, asm: &Assembler, conversation: bool) {
        if asm.message_id.is_empty() {
            return;
        }
        let model = if asm.model.is_empty() {
            self.config.model.clone()
        } else {
            asm.model.clone()
        };
        let cost = self.costs.record(&model, &asm.usage);
        run.cost_usd += cost;
        run.usage.add(&asm.usage);
        if conversation {
            self.history.measured(asm.usage.context_tokens());
        }
    }
}

/// Text and tool calls are what a continuation can build on.
fn is_answer(block: &ContentBlock) -> bool {
    matches!(
        block,
        ContentBlock::Text { .. } | ContentBlock::ToolUse { .. }
    )
}

fn outcome(asm: Assembler) -> CallOutcome {
    CallOutcome {
        blocks: asm.blocks,
        stop_reason: asm.stop_reason,
    }
}
