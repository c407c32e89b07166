//! The query loop of one run (one user prompt): budget gates before every call, tool rounds,
//! max_tokens continuation, and compaction when the prompt grows too long.

use crate::checkpoint::Kind;
use crate::checkpoint::record::Detail;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::compact::CompactError;
use super::hooks::PromptVerdict;
use super::run::{CallError, CallOutcome, Request, RunState};
use super::{Engine, MAX_CONTINUATIONS, history, prompt, structured};
use crate::api::client::ApiError;
use crate::api::client::MAX_REQUEST_BYTES;
use crate::api::pricing;
use crate::api::types::{
    ContentBlock, Message, Messages, MessagesRequest, Role, StopReason, text_of,
};
use crate::api::{models, reasoning};
use crate::event::{CompactTrigger, Event, InitInfo, ResultKind, RunResult};
use crate::exec::BatchOutcome;
use crate::session::Transcript;

/// Compact before a request reaches this share of the API's size limit.
const REQUEST_BYTES_MARGIN: f64 = 0.9;

/// How a run ends, before it is turned into a `RunResult`.
struct Ending {
    kind: ResultKind,
    text: String,
    stop_reason: Option<StopReason>,
    api_error_status: Option<u16>,
}

impl Ending {
    fn error(kind: ResultKind, text: impl Into<String>) -> Self {
        Ending {
            kind,
            text: text.into(),
            stop_reason: None,
            api_error_status: None,
        }
    }
}

impl Engine {
    /// Answer one user prompt: loop until the model stops asking for tools, a gate closes, or
    /// `cancel` fires. Always ends with an `Event::Result`, which is also returned.
    pub async fn run(&mut self, prompt_text: &str, cancel: &CancellationToken) -> RunResult {
        let started = Instant::now();
        // A disk that was full may have room again: this run tries.
        self.lost_write = None;
        let mut run = RunState::default();
        // Taken whatever happens to this prompt: a refused one leaves nothing for the next.
        let given = self.prompt_blocks.take();
        let first = !self.tools_settled;
        if !self.tools_settled {
            // MCP servers get a short moment to connect before the first request; those that
            // take longer join from a later request on.
            self.tools_settled = true;
            let toolbox = self.executor.toolbox().clone();
            tokio::select! {
                () = toolbox.settle() => {}
                () = cancel.cancelled() => {}
            }
        }
        self.refresh_tools(false);
        self.emit(Event::Init(InitInfo {
            session_id: self.session_id.clone(),
            cwd: self.config.cwd.to_string_lossy().into_owned(),
            model: self.config.model.clone(),
            tools: self.tools.names().to_vec(),
            permission_mode: self.executor.policy().mode().to_string(),
            mcp_servers: self.executor.toolbox().servers(),
            meta: self.config.init_meta.clone(),
        }));
        if let Some(replay) = self.replay.take() {
            self.emit(replay);
        }
        // A process that waited between turns takes its conversation back first.
        let taken_back = match self.transcript.as_mut().map(Transcript::take_back) {
            Some(Err(e)) => Err(e.to_string()),
            _ => Ok(()),
        };
        let verdict = match taken_back {
            Ok(()) => self.prompt_hooks(prompt_text, first).await,
            Err(why) => PromptVerdict::Refused(why),
        };
        let mut ending = match verdict {
            PromptVerdict::Send(context) => {
                let mut before = Detail::prompt(prompt_text, self.history.len());
                before.message_id = self.prompt_id.take();
                self.prompt_checkpoint(before).await;
                // A sub-agent's prompt is the agent's words, not the user's.
                let typed = self.typed.take();
                if let Some(reviewer) = self.executor.reviewer()
                    && !self.config.subagent
                {
                    reviewer.note_user_message(typed.as_deref().unwrap_or(prompt_text));
                }
                let mut user = match given {
                    Some(blocks) => Message {
                        role: Role::User,
                        content: blocks,
                    },
                    None => Message::user_text(prompt_text),
                };
                user.content
                    .extend(context.into_iter().map(ContentBlock::text));
                self.persist(|t| t.append_user(&user));
                self.history.push(user);
                let ending = self.query_loop(&mut run, cancel).await;
                // A turn that sent nothing lets its prompt's snapshot go ahead (the turn's own
                // waits for it).
                self.request_sent = None;
                self.checkpoint(Kind::End, Detail::default()).await;
                // The last writes of the turn may have failed after the last gate.
                match &self.lost_write {
                    Some(failure) if ending.kind == ResultKind::Success => {
                        self.lost_write_ending(failure)
                    }
                    _ => ending,
                }
            }
            // Nothing is sent or kept, as in Claude Code.
            PromptVerdict::Blocked(reason) => Ending::error(
                ResultKind::ErrorDuringExecution,
                format!("A UserPromptSubmit hook blocked the prompt: {reason}"),
            ),
            PromptVerdict::Refused(why) => Ending::error(ResultKind::ErrorDuringExecution, why),
        };
        let mut structured_output = self
            .config
            .structured
            .as_ref()
            .and_then(|slot| crate::sys::sync::lock(slot).value.take());
        if let Some(schema) = self.config.json_schema.clone()
            && ending.kind == ResultKind::Success
            && structured_output.is_none()
        {
            let mut checked = structured::check(&schema, &ending.text);
            if let Err(problem) = &checked {
                // One more try, with what was wrong, before giving up.
                self.nudge(&structured::retry_prompt(problem));
                ending = self.query_loop(&mut run, cancel).await;
                if ending.kind == ResultKind::Success {
                    checked = structured::check(&schema, &ending.text);
                }
            }
            match checked {
                Ok(value) => structured_output = Some(value),
                Err(problem) if ending.kind == ResultKind::Success => {
                    ending = Ending::error(
                        ResultKind::ErrorMaxStructuredOutputRetries,
                        format!(
                            "The final answer did not match --json-schema after a retry: {problem}."
                        ),
                    );
                }
                Err(_) => {}
            }
        }
        let costs_unknown = pricing::pricing(&self.config.model).is_none();
        let result = RunResult {
            kind: ending.kind,
            text: std::sync::Arc::new(ending.text),
            session_id: self.session_id.clone(),
            num_turns: run.turns,
            duration: started.elapsed(),
            api_duration: run.api_time,
            stop_reason: ending.stop_reason,
            usage: run.usage,
            cost_usd: run.cost_usd,
            total_cost_usd: self.costs.total_usd(),
            model_usage: self.costs.by_model.clone(),
            cost_unknown: costs_unknown,
            api_error_status: ending.api_error_status,
            permission_denials: run.denials,
            structured_output,
        };
        if result.kind == ResultKind::ErrorAborted {
            // As Claude Code says it in the stream, after the partial answer.
            self.emit(Event::SyntheticUser {
                text: INTERRUPTED.into(),
            });
        }
        self.emit(Event::Result(result.clone()));
        result
    }

    async fn query_loop(&mut self, run: &mut RunState, cancel: &CancellationToken) -> Ending {
        let mut continuations = 0u32;
        let mut answer = String::new();
        let mut compacted_for_this_call = false;
        loop {
            if let Some(ending) = self.gate(run, cancel) {
                return ending;
            }
            if !compacted_for_this_call
                && self.needs_compaction()
                && let Err(e) = self.compact(CompactTrigger::Auto, None, run, cancel).await
            {
                if matches!(e, CompactError::Aborted) {
                    return aborted();
                }
                // A request known not to fit is never sent: it would only fail, after moving
                // the whole history over the network.
                if let Some(size) = self.known_too_long() {
                    return Ending::error(
                        ResultKind::ErrorDuringExecution,
                        format!(
                            "Compacting the conversation failed ({e}), and without it the conversation ({size}) is too long to send. Try again later with `ouro --resume {}` (it compacts first), or start a new session.",
                            self.session_id
                        ),
                    );
                }
                tracing::warn!(error = %e, "proactive compaction failed; sending the full history");
                self.emit(Event::Notice(format!(
                    "compacting the conversation failed ({e}); the full history is sent this time"
                )));
            }
            self.refresh_tools(true);
            let request = self.build_request();
            run.turns += 1;
            self.emit(Event::RequestStarted { turn: run.turns });
            let mut batch = self.executor.batch();
            batch.limit_budget(
                self.config
                    .max_budget_usd
                    .map(|max| (max - run.cost_usd).max(0.0)),
            );
            let called = self
                .call_model(&request, run, cancel, Some(&mut batch))
                .await;
            let outcome = match called {
                Ok(outcome) => outcome,
                Err(CallError::Api(e)) if e.is_too_large() => {
                    if compacted_for_this_call {
                        return prompt_too_long(&e);
                    }
                    match self.compact(CompactTrigger::Auto, None, run, cancel).await {
                        Ok(_) => {
                            compacted_for_this_call = true;
                            run.turns -= 1;
                            continue;
                        }
                        // Ctrl-C during the summary request is an interruption, not a
                        // failure to compact.
                        Err(CompactError::Aborted) => return aborted(),
                        Err(reason) => {
                            return Ending {
                                api_error_status: Some(400),
                                ..Ending::error(
                                    ResultKind::ErrorPromptTooLong,
                                    format!(
                                        "The prompt is too long for the model and could not be compacted ({reason}). Start a new session or remove large content from the conversation."
                                    ),
                                )
                            };
                        }
                    }
                }
                Err(CallError::Overloaded(e)) => {
                    let Some(fallback) = self.config.fallback_model.take() else {
                        return api_failure(&e);
                    };
                    let from = self.config.model.clone();
                    self.set_model(fallback.clone());
                    self.emit(Event::ModelFallback {
                        from,
                        to: fallback,
                        reason: e.label(),
                    });
                    run.turns -= 1;
                    continue;
                }
                Err(CallError::Api(e)) => return api_failure(&e),
                Err(CallError::WaitTooLong { error, wait }) => {
                    return wait_too_long(&error, wait, self.config.retry.max_retry_after);
                }
                Err(CallError::Aborted { outcome }) => {
                    let results = batch.abort().await;
                    self.record_round(outcome, results, run);
                    return aborted();
                }
                Err(CallError::Cut { outcome, error }) => {
                    // Tools started before the cut may run long; Ctrl-C must still reach them.
                    let results = batch.finish_or_abort(cancel).await;
                    let kept_blocks = outcome.blocks.len();
                    let called_tools = !results.results.is_empty();
                    let text = text_of(&outcome.blocks);
                    self.record_round(outcome, results, run);
                    if cancel.is_cancelled() {
                        return aborted();
                    }
                    if !error.is_retryable() || continuations >= MAX_CONTINUATIONS {
                        return cut_off(&error);
                    }
                    continuations += 1;
                    self.emit(Event::StreamCut {
                        error: error.to_string(),
                        kept_blocks,
                        continuation: continuations,
                    });
                    // Tool results already give the model the next user message to go on from.
                    if called_tools {
                        answer.clear();
                    } else {
                        answer.push_str(&text);
                        self.nudge(prompt::STREAM_CUT_CONTINUE);
                    }
                    continue;
                }
            };
            compacted_for_this_call = false;
            let stop_reason = outcome.stop_reason;
            let has_tools = outcome
                .blocks
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolUse { .. }));
            if has_tools {
                let text: String = text_of(&outcome.blocks);
                let results = batch.finish_or_abort(cancel).await;
                self.record_round(outcome, results, run);
                answer.clear();
                continuations = 0;
                if cancel.is_cancelled() {
                    return aborted();
                }
                if let Some(ending) = self.structured_ending(&text, stop_reason) {
                    return ending;
                }
                continue;
            }
            // Straight from the blocks: a long answer is held by the history and the answer,
            // not a third time.
            for block in &outcome.blocks {
                if let ContentBlock::Text { text } = block {
                    answer.push_str(text);
                }
            }
            self.record_round(outcome, BatchOutcome::default(), run);
            if stop_reason == Some(StopReason::MaxTokens) && continuations < MAX_CONTINUATIONS {
                continuations += 1;
                self.nudge(prompt::MAX_TOKENS_CONTINUE);
                continue;
            }
            if stop_reason == Some(StopReason::PauseTurn) {
                continue;
            }
            if let Some(reason) = self.stop_hooks(run).await {
                self.nudge(&reason);
                answer.clear();
                continue;
            }
            return Ending {
                kind: ResultKind::Success,
                text: answer,
                stop_reason,
                api_error_status: None,
            };
        }
    }

    /// The end of the run once the StructuredOutput tool accepted an answer, or refused too
    /// many.
    fn structured_ending(&self, text: &str, stop_reason: Option<StopReason>) -> Option<Ending> {
        let slot = self.config.structured.as_ref()?;
        let outcome = crate::sys::sync::lock(slot);
        if outcome.value.is_some() {
            return Some(Ending {
                kind: ResultKind::Success,
                text: text.to_string(),
                stop_reason,
                api_error_status: None,
            });
        }
        (outcome.refused >= structured::MAX_REFUSALS).then(|| {
            Ending::error(
                ResultKind::ErrorMaxStructuredOutputRetries,
                format!(
                    "The StructuredOutput tool refused {} answers that did not match --json-schema.",
                    outcome.refused
                ),
            )
        })
    }

    /// Ask the model to go on from where its reply stopped.
    fn nudge(&mut self, text: &str) {
        let nudge = Message::user_text(text.trim());
        self.emit(Event::SyntheticUser { text: nudge.text() });
        self.persist(|t| t.append_user(&nudge));
        self.history.push(nudge);
    }

    /// The end of a run whose transcript or checkpoints the disk refused: what to free, and how
    /// to go on. The failure stays, so every later run of this engine stops the same way.
    fn lost_write_ending(&self, failure: &str) -> Ending {
        let home = crate::settings::ouro_home()
            .map(|h| h.display().to_string())
            .unwrap_or_else(|| "ouro's home".into());
        Ending::error(
            ResultKind::ErrorDuringExecution,
            format!(
                "ouro stopped because it could not save this session: {failure}. Free space on the disk that holds {home} (or set OURO_HOME to another disk), then go on with `ouro --resume {}`; everything saved before this point is intact.",
                self.session_id
            ),
        )
    }

    /// Budget gates, checked before every API call.
    fn gate(&self, run: &RunState, cancel: &CancellationToken) -> Option<Ending> {
        if cancel.is_cancelled() {
            return Some(aborted());
        }
        if let Some(failure) = &self.lost_write {
            return Some(self.lost_write_ending(failure));
        }
        if let Some(max) = self.config.max_turns
            && run.turns >= max
        {
            return Some(Ending::error(
                ResultKind::ErrorMaxTurns,
                format!(
                    "Reached the maximum number of turns ({max}). Raise --max-turns to let the agent go further."
                ),
            ));
        }
        if let Some(max) = self.config.max_budget_usd
            && run.cost_usd >= max
        {
            return Some(Ending::error(
                ResultKind::ErrorMaxBudgetUsd,
                format!(
                    "Reached the budget of ${max:.4} (spent ${:.4}). Raise --max-budget-usd to continue.",
                    run.cost_usd
                ),
            ));
        }
        if let Some(max) = self.config.max_output_tokens
            && run.usage.output_tokens >= max
        {
            return Some(Ending::error(
                ResultKind::ErrorMaxOutputTokens,
                format!(
                    "Reached the output token budget ({max} tokens, used {}).",
                    run.usage.output_tokens
                ),
            ));
        }
        None
    }

    /// Cache breakpoints for the next request: on the newest message, so the next turn reads
    /// this one's prefix from cache, and on the message that was newest last time, so this
    /// turn reads the prefix written then however many blocks were added since. With the
    /// tools' and the system prompt's, that is the API's limit of four.
    fn cache_marks(&mut self) -> Vec<usize> {
        let Some(last) = self.history.len().checked_sub(1) else {
            return Vec::new();
        };
        if !self.config.prompt_caching {
            return Vec::new();
        }
        let mut marks: Vec<usize> = self.cache_mark.filter(|&m| m < last).into_iter().collect();
        marks.push(last);
        self.cache_mark = Some(last);
        marks
    }

    /// Whether the next request would pass the compaction threshold of the model's window, or
    /// the API's limit on request size. Known before sending: a resumed session compacts
    /// before its first request instead of after a refusal.
    fn needs_compaction(&self) -> bool {
        let window = models::context_window(&self.config.model) as f64;
        let tokens = self.estimated_context_tokens() as f64;
        let bytes = self.history.json_bytes() + self.prompt_bytes;
        tokens > window * self.config.auto_compact_threshold
            || bytes as f64 > MAX_REQUEST_BYTES as f64 * REQUEST_BYTES_MARGIN
    }

    /// How big the next request is, when it is certain not to fit: more tokens than the
    /// model's window, or more bytes than the API takes.
    fn known_too_long(&self) -> Option<String> {
        let window = models::context_window(&self.config.model);
        let tokens = self.estimated_context_tokens();
        let bytes = self.history.json_bytes() + self.prompt_bytes;
        (tokens > window || bytes > MAX_REQUEST_BYTES).then(|| {
            format!(
                "about {tokens} tokens for a {window}-token window, {:.1} MB",
                bytes as f64 / 1e6
            )
        })
    }

    /// The tokens the next request will make the model read, as far as known before sending.
    pub(super) fn estimated_context_tokens(&self) -> u64 {
        self.history
            .estimated_tokens(history::estimate_tokens(self.prompt_bytes as usize))
    }

    /// The next request, after repairing the history.
    pub(super) fn build_request(&mut self) -> Request {
        self.history.repair();
        let marks = self.cache_marks();
        let reasoning = reasoning::reasoning(
            &self.config.model,
            self.config.thinking,
            self.config.effort,
            self.config.max_tokens,
        );
        let mut betas: Vec<String> = reasoning.betas.iter().map(|b| b.to_string()).collect();
        betas.extend(models::context_beta(&self.config.model).map(String::from));
        let context_management = self.config.context_editing.then(|| {
            betas.push(reasoning::CONTEXT_MANAGEMENT_BETA.to_string());
            reasoning::context_management(reasoning.thinking.is_some())
        });
        super::run::add_betas(&mut betas, &self.config.betas);
        let pieces = self.history.encode(&marks);
        let body = MessagesRequest {
            model: models::api_model(&self.config.model),
            max_tokens: self.config.max_tokens,
            messages: Messages::Encoded(&pieces),
            system: &self.system,
            tools: self.tools.json(),
            thinking: reasoning.thinking.as_ref(),
            output_config: reasoning.output_config.as_ref(),
            context_management: context_management.as_ref(),
            stream: true,
        }
        .to_body();
        Request { body, betas }
    }

    /// Put an assistant message and its tool results into the history and transcript.
    fn record_round(&mut self, outcome: CallOutcome, batch: BatchOutcome, run: &mut RunState) {
        let BatchOutcome {
            results,
            denials,
            spent,
        } = batch;
        run.denials.extend(denials);
        // What sub-agents spent is the session's spending: it counts toward the budget, the
        // totals and modelUsage like the session's own requests.
        for (model, usage) in &spent {
            run.cost_usd += self.costs.record(model, usage);
            run.usage.add(usage);
        }
        if !outcome.blocks.is_empty() {
            self.history.push(Message::assistant(outcome.blocks));
        }
        // The checkpoints taken so far and the reviews of this batch's calls come before their
        // results (a call's checkpoint taken in the background follows, before the turn's end).
        self.save_checkpoints();
        if let Some(reviewer) = self.executor.reviewer().cloned() {
            for review in reviewer.take_unsaved() {
                self.persist(|t| t.append_review(&review));
            }
        }
        if !results.is_empty() {
            let message = Message {
                role: Role::User,
                content: results,
            };
            self.persist(|t| t.append_user(&message));
            self.history.push(message);
        }
    }
}

/// The user message Claude Code adds when a turn is interrupted.
const INTERRUPTED: &str = "[Request interrupted by user]";

fn aborted() -> Ending {
    Ending::error(
        ResultKind::ErrorAborted,
        "The turn was interrupted by the user.",
    )
}

fn prompt_too_long(e: &ApiError) -> Ending {
    Ending {
        api_error_status: Some(400),
        ..Ending::error(
            ResultKind::ErrorPromptTooLong,
            format!(
                "The prompt is too long even after compaction ({e}). Start a new session or remove large content from the conversation."
            ),
        )
    }
}

fn wait_too_long(error: &ApiError, wait: Duration, limit: Duration) -> Ending {
    let at = chrono::Duration::from_std(wait)
        .ok()
        .and_then(|d| chrono::Local::now().checked_add_signed(d))
        .map_or_else(
            || "a long while".to_string(),
            |t| t.format("%H:%M:%S").to_string(),
        );
    Ending {
        api_error_status: error.status(),
        ..Ending::error(
            ResultKind::ErrorDuringExecution,
            format!(
                "API error: {}. The API asked to wait {} s before the next request, longer than ouro waits ({} s); try again after {}.",
                error.to_string().trim_end_matches('.'),
                wait.as_secs(),
                limit.as_secs(),
                at
            ),
        )
    }
}

fn cut_off(error: &ApiError) -> Ending {
    Ending {
        api_error_status: error.status(),
        ..Ending::error(
            ResultKind::ErrorDuringExecution,
            format!(
                "API error: the response was cut off mid-stream ({error}). What arrived before the cut is kept in the conversation; send a new message to continue."
            ),
        )
    }
}

fn api_failure(e: &ApiError) -> Ending {
    let hint = match e.status() {
        Some(401) => " Check that ANTHROPIC_API_KEY is a valid key.",
        Some(403) => " The key is not allowed to use this model or endpoint.",
        Some(404) => " Check the model name (--model) and ANTHROPIC_BASE_URL.",
        Some(429) | Some(529) | Some(500..=599) => {
            " The service is busy or failing; try again in a moment."
        }
        _ => "",
    };
    Ending {
        api_error_status: e.status(),
        ..Ending::error(
            ResultKind::ErrorApi,
            format!("API error: {}.{hint}", e.to_string().trim_end_matches('.')),
        )
    }
}
