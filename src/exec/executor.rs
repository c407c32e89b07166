//! The streaming executor: tool calls start while the assistant message is still streaming, as
//! soon as the concurrency rules allow.
//!
//! Rules: a call that is concurrency-safe (its `PreparedCall` says so) runs alongside other
//! safe calls; any other call waits until nothing runs and then runs alone. Calls start in
//! submission order, so a safe call queued behind a waiting unsafe one waits too.
//!
//! Cancellation: each batch runs under a child of `ToolContext::cancel`. `Batch::abort` cancels
//! only that child, so the session's token stays usable for the next turn. Cancelling the
//! session token itself (Ctrl-C in the engine) reaches every batch too: `finish` then returns
//! cancelled results, exactly like `abort`, but batches created afterwards start cancelled, so
//! an engine that wants to go on after Ctrl-C calls `abort` instead.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::Asker;
use super::hooks::Hooks;
use super::pipeline::{Admitted, Outcome, Pipeline, Slot};
use crate::api::types::{ContentBlock, ResultContent, Usage};
use crate::event::PhaseTimings;
use crate::event::{Denial, Event};
use crate::permissions::PermissionPolicy;
use crate::tools::{DynTool, ToolContext, ToolOutput, Toolbox};

/// Runs the tool calls of a session. Cheap to clone.
#[derive(Clone)]
pub struct Executor {
    pipeline: Arc<Pipeline>,
}

/// The tool calls of one assistant message.
pub struct Batch {
    pipeline: Arc<Pipeline>,
    /// The session context with this batch's cancellation token.
    ctx: Arc<ToolContext>,
    gate: Arc<Mutex<Gate>>,
    calls: Vec<Call>,
    /// The ids submitted so far: a message that repeats one (the API refuses such a message,
    /// a broken proxy or a resumed transcript may still bring one) must not run the call twice.
    ids: std::collections::HashSet<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchOutcome {
    /// One `tool_result` per submitted call, in submission order.
    pub results: Vec<ContentBlock>,
    pub denials: Vec<Denial>,
    /// What sub-agents spent on the API, per model.
    pub spent: Vec<(String, Usage)>,
}

impl Executor {
    pub fn new(
        tools: impl Into<Toolbox>,
        ctx: ToolContext,
        policy: Arc<dyn PermissionPolicy>,
        asker: Arc<dyn Asker>,
        hooks: Arc<Hooks>,
        events: UnboundedSender<Event>,
    ) -> Executor {
        Executor {
            pipeline: Arc::new(Pipeline::new(
                tools.into(),
                ctx,
                policy,
                asker,
                hooks,
                events,
            )),
        }
    }

    /// Every tool offered now (MCP servers add theirs as they connect).
    pub fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        self.pipeline.tools.all()
    }

    pub fn toolbox(&self) -> &Toolbox {
        &self.pipeline.tools
    }

    pub fn context(&self) -> &ToolContext {
        &self.pipeline.ctx
    }

    /// Gives auto mode its reviewer (once; later calls change nothing).
    pub fn set_reviewer(&self, reviewer: Arc<super::review::Reviewer>) {
        let _ = self.pipeline.reviewer.set(reviewer);
    }

    pub fn reviewer(&self) -> Option<&Arc<super::review::Reviewer>> {
        self.pipeline.reviewer.get()
    }

    pub fn policy(&self) -> &Arc<dyn PermissionPolicy> {
        &self.pipeline.policy
    }

    pub fn hooks(&self) -> &Arc<super::hooks::Hooks> {
        &self.pipeline.hooks
    }

    /// The one-line summary of a call (as `Event::ToolStarted` carries it), for calls shown
    /// again from the history; empty for an unknown tool or invalid input.
    pub fn summarize(&self, name: &str, input: &Value) -> String {
        self.pipeline
            .tools
            .find(name)
            .and_then(|t| t.summarize(input))
            .unwrap_or_default()
    }

    /// One batch per assistant message.
    pub fn batch(&self) -> Batch {
        let mut ctx = self.pipeline.ctx.clone();
        ctx.cancel = ctx.cancel.child_token();
        Batch {
            pipeline: self.pipeline.clone(),
            ctx: Arc::new(ctx),
            gate: Arc::new(Mutex::new(Gate::default())),
            calls: Vec::new(),
            ids: std::collections::HashSet::new(),
        }
    }
}

/// A finished call: its result block and, if permission was refused, the denial.
struct Record {
    result: ContentBlock,
    denial: Option<Denial>,
    spent: Vec<(String, Usage)>,
}

enum Call {
    Done(Record),
    Running {
        id: String,
        name: String,
        submitted: Instant,
        task: JoinHandle<Record>,
    },
}

impl Batch {
    /// What the run may still spend, for the calls of this batch (sub-agents).
    pub fn limit_budget(&mut self, left_usd: Option<f64>) {
        Arc::make_mut(&mut self.ctx).budget_left_usd = left_usd;
    }

    /// A tool_use block finished streaming: phases 1-2 run now; the call starts at once if the
    /// concurrency rules allow. `Event::ToolStarted` is sent when it gets its turn.
    pub fn submit(&mut self, id: String, name: String, input: Value) {
        let submitted = Instant::now();
        if !self.ids.insert(id.clone()) {
            let message = format!(
                "This tool_use repeats the id {id} of an earlier call in the same message, so it was not run; the earlier call's result stands. Give each call its own id."
            );
            let outcome = Outcome::ended(ToolOutput::error(message), PhaseTimings::default());
            self.record_now(id, name, outcome, submitted);
            return;
        }
        let call = match self.pipeline.admit(&name, input.clone(), &self.ctx) {
            Ok(call) => call,
            Err((message, timings)) => {
                let outcome = Outcome::ended(ToolOutput::error(message), timings);
                self.record_now(id, name, outcome, submitted);
                return;
            }
        };
        let (start_tx, start_rx) = oneshot::channel();
        {
            let mut gate = lock(&self.gate);
            gate.queue.push_back(Waiter {
                exclusive: !call.is_concurrency_safe(),
                start: start_tx,
            });
            gate.pump(&self.gate);
        }
        let task = tokio::spawn(run_call(
            self.pipeline.clone(),
            self.ctx.clone(),
            CallSpec {
                id: id.clone(),
                name: name.clone(),
                input,
                submitted,
            },
            call,
            start_rx,
        ));
        self.calls.push(Call::Running {
            id,
            name,
            submitted,
            task,
        });
    }

    /// A tool_use whose JSON input could not be parsed: its is_error result is recorded and
    /// nothing runs.
    pub fn submit_error(&mut self, id: String, name: String, message: String) {
        self.ids.insert(id.clone());
        let outcome = Outcome::ended(ToolOutput::error(message), PhaseTimings::default());
        self.record_now(id, name, outcome, Instant::now());
    }

    /// Waits for every call. Results are in submission order.
    pub async fn finish(mut self) -> BatchOutcome {
        let mut results = Vec::with_capacity(self.calls.len());
        let mut denials = Vec::new();
        let mut spent = Vec::new();
        for call in std::mem::take(&mut self.calls) {
            let record = match call {
                Call::Done(record) => record,
                Call::Running {
                    id,
                    name,
                    submitted,
                    task,
                } => match task.await {
                    Ok(record) => record,
                    Err(e) => {
                        let output =
                            ToolOutput::error(format!("The {name} tool stopped unexpectedly: {e}"));
                        let outcome = Outcome::ended(output, PhaseTimings::default());
                        finished(&self.pipeline, id, name, outcome, submitted)
                    }
                },
            };
            results.push(record.result);
            denials.extend(record.denial);
            spent.extend(record.spent);
        }
        BatchOutcome {
            results,
            denials,
            spent,
        }
    }

    /// Waits for every call, unless `cancel` fires first: then the batch is aborted as by
    /// `abort`. This is how a turn's Ctrl-C reaches tools that are still running.
    pub async fn finish_or_abort(
        self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> BatchOutcome {
        let batch_token = self.ctx.cancel.clone();
        let user = cancel.clone();
        let relay = tokio::spawn(async move {
            user.cancelled().await;
            batch_token.cancel();
        });
        let outcome = self.finish().await;
        relay.abort();
        outcome
    }

    /// Cancels the batch: queued calls never start, running calls are cancelled (Bash kills its
    /// process group), and every submitted call still gets a result so the history stays valid.
    pub async fn abort(self) -> BatchOutcome {
        self.ctx.cancel.cancel();
        self.finish().await
    }

    fn record_now(&mut self, id: String, name: String, outcome: Outcome, submitted: Instant) {
        let record = finished(&self.pipeline, id, name, outcome, submitted);
        self.calls.push(Call::Done(record));
    }
}

impl Drop for Batch {
    /// A batch dropped without `finish` or `abort` (its turn was abandoned) stops its calls.
    fn drop(&mut self) {
        self.ctx.cancel.cancel();
    }
}

struct CallSpec {
    id: String,
    name: String,
    input: Value,
    submitted: Instant,
}

async fn run_call(
    pipeline: Arc<Pipeline>,
    ctx: Arc<ToolContext>,
    spec: CallSpec,
    call: Admitted,
    start: oneshot::Receiver<Ticket>,
) -> Record {
    let ticket = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => None,
        ticket = start => ticket.ok(),
    };
    let outcome = match ticket {
        None => Outcome::cancelled(call.timings),
        Some(mut ticket) => {
            let _ = pipeline.events.send(Event::ToolStarted {
                id: spec.id.clone(),
                name: spec.name.clone(),
                input: spec.input,
                summary: call.summary(),
            });
            pipeline.complete(&spec.id, call, &ctx, &mut ticket).await
        }
    };
    finished(&pipeline, spec.id, spec.name, outcome, spec.submitted)
}

/// Builds the record of a finished call and announces it with `Event::ToolFinished`, whose
/// `elapsed` runs from submission (queue time included) to the result.
fn finished(
    pipeline: &Pipeline,
    id: String,
    name: String,
    outcome: Outcome,
    submitted: Instant,
) -> Record {
    let Outcome {
        output,
        status,
        denial,
        timings,
    } = outcome;
    let elapsed = submitted.elapsed();
    tracing::debug!(tool = %name, %id, ?status, ?elapsed, ?timings, "tool call finished");
    let content = ResultContent {
        text: output.content,
        images: output.images,
    };
    let result = ContentBlock::tool_result(id.clone(), content, output.is_error);
    let _ = pipeline.events.send(Event::ToolFinished {
        id,
        name,
        result: result.clone(),
        status,
        display: output.display,
        elapsed,
        timings,
    });
    Record {
        result,
        denial,
        spent: output.spent,
    }
}

/// Who runs now and who waits, in submission order.
#[derive(Default)]
struct Gate {
    queue: VecDeque<Waiter>,
    shared: usize,
    exclusive: bool,
}

struct Waiter {
    exclusive: bool,
    start: oneshot::Sender<Ticket>,
}

/// The right to run. Dropping it frees the slot and lets the next calls start.
struct Ticket {
    gate: Arc<Mutex<Gate>>,
    exclusive: bool,
    held: bool,
}

fn lock(gate: &Mutex<Gate>) -> MutexGuard<'_, Gate> {
    // Nothing panics while holding this lock, so even a poisoned one holds consistent counts.
    crate::sys::sync::lock(gate)
}

impl Gate {
    /// Starts calls from the front of the queue for as long as the rules allow.
    fn pump(&mut self, this: &Arc<Mutex<Gate>>) {
        while let Some(front) = self.queue.front() {
            let allowed = if front.exclusive {
                self.shared == 0 && !self.exclusive
            } else {
                !self.exclusive
            };
            if !allowed {
                break;
            }
            let Some(waiter) = self.queue.pop_front() else {
                break;
            };
            self.take(waiter.exclusive);
            let ticket = Ticket {
                gate: this.clone(),
                exclusive: waiter.exclusive,
                held: true,
            };
            // A waiter that was cancelled meanwhile is gone; its slot is handed back at once.
            if let Err(mut ticket) = waiter.start.send(ticket) {
                ticket.held = false;
                self.release(ticket.exclusive);
            }
        }
    }

    fn take(&mut self, exclusive: bool) {
        if exclusive {
            self.exclusive = true;
        } else {
            self.shared += 1;
        }
    }

    fn release(&mut self, exclusive: bool) {
        if exclusive {
            self.exclusive = false;
        } else {
            self.shared = self.shared.saturating_sub(1);
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.held {
            let mut gate = lock(&self.gate);
            gate.release(self.exclusive);
            gate.pump(&self.gate);
        }
    }
}

impl Slot for Ticket {
    /// Gives up the shared slot and queues at the very front for an exclusive one, so nothing
    /// queued behind this call can start before it.
    fn make_exclusive(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if self.exclusive || !self.held {
                return;
            }
            let (tx, rx) = oneshot::channel();
            {
                let gate_arc = self.gate.clone();
                let mut gate = lock(&gate_arc);
                gate.release(false);
                self.held = false;
                gate.queue.push_front(Waiter {
                    exclusive: true,
                    start: tx,
                });
                gate.pump(&gate_arc);
            }
            if let Ok(ticket) = rx.await {
                *self = ticket;
            }
        })
    }
}
