//! The machinery shared by every brain whose process is a CLI speaking Claude Code's stream-json
//! protocol: the `claude` binary (Claude Code) and `ouro` itself.
//!
//! Every prompt is one turn on a headless process (`-p --input-format stream-json
//! --output-format stream-json`) kept alive across turns: `ask` / `act` and served turns read
//! it the same way ([`dispatch::DispatchProc::exchange`]). The tool set, permission mode and
//! system prompt are start-up flags, so a turn that needs other flags replaces the process by
//! one started with `--resume <exid>`; the caller sees only a new pid. Interact mode runs the program's own terminal UI in a pseudo-terminal.
//! What differs between programs (the executable, its flags, how it reports cost) is a
//! [`ChildProgram`].

pub mod args;
mod dispatch;
mod follow;
mod interact;
mod process;
mod served;

use std::ffi::OsString;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub use dispatch::user_message;
use dispatch::{DispatchProc, Launch, TurnEnd};
use follow::Follow;
use interact::PtyProc;
use served::Ended;

use super::error::verb_name;
use super::memory::SeriesCell;
use super::slug::{self, Binary, BrainSpec};
use super::terminal::Subscribers;
use super::{
    BrainCli, BrainConfig, BrainError, BrainFuture, BrainOutput, BrainTerminal, DataCallback,
    Episode, ExitCallback, Instance, Metrics, Mode, Series, SubscriptionId, TermSize, TurnOptions,
    TurnReport, TurnRequest, Verb,
};
use crate::sys::sync::lock;
use crate::ui_event::UiEvent;
use process::{OnExit, ProcessCore};

/// One kind of stream-json CLI: which slugs it serves and how it is started.
pub trait ChildProgram: Send + Sync + 'static {
    /// The slug binary (`claude@…`, `ouro@…`) this program runs.
    const BINARY: Binary;
    /// Environment variable naming the executable when the config does not.
    const BIN_ENV: &'static str;
    /// What to do when the executable cannot be started, appended to the error.
    const SPAWN_HINT: &'static str;

    /// The executable when neither the config nor [`Self::BIN_ENV`] names one.
    fn default_program() -> Result<OsString, BrainError>;

    /// Headless flags: stream-json in and out, the verb's tools allowed, resuming `resume`.
    fn dispatch_args(model_id: Option<&str>, tools: &[&str], resume: Option<&str>) -> Vec<String>;

    /// Flags of the terminal UI, resuming `resume`.
    fn interact_args(model_id: Option<&str>, resume: Option<&str>) -> Vec<String>;

    /// The folder where the program keeps the transcripts of sessions run in `cwd`; `env`
    /// reads the program's environment.
    fn transcripts(cwd: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf>;

    /// Flags of a served turn; both CLIs take the same ones.
    fn served_args(
        options: &TurnOptions,
        model_id: Option<&str>,
        resume: Option<&str>,
    ) -> Vec<String> {
        args::served_args(options, model_id, resume)
    }
}

/// A brain driven through the stream-json CLI `P`.
pub struct ChildBrain<P: ChildProgram> {
    spec: BrainSpec,
    config: BrainConfig,
    program: OsString,
    subscribers: Arc<Subscribers>,
    series: Arc<SeriesCell>,
    slot: Arc<Mutex<Slot>>,
    size: Mutex<TermSize>,
    /// The process of the served turn that runs, for `interrupt`.
    served: Mutex<Option<Arc<DispatchProc>>>,
    /// A served turn runs (with or without a process yet).
    serving: AtomicBool,
    /// An interrupt arrived while the served turn had no process: the next one is stopped.
    interrupt_pending: AtomicBool,
    /// One turn at a time: a process answers its prompts in order.
    turn: tokio::sync::Mutex<()>,
    /// One start or stop at a time; never held while waiting for an answer, so `kill` can
    /// always interrupt a turn.
    lifecycle: tokio::sync::Mutex<()>,
    program_kind: PhantomData<P>,
}

#[derive(Default)]
struct Slot {
    /// Bumped at each start, so a late exit report cannot clear a newer process.
    generation: u64,
    running: Option<Running>,
}

#[derive(Clone)]
enum Running {
    Dispatch(Arc<DispatchProc>),
    Interact(Arc<PtyProc>),
}

impl Running {
    fn core(&self) -> &ProcessCore {
        match self {
            Running::Dispatch(p) => &p.core,
            Running::Interact(p) => &p.core,
        }
    }

    fn instance(&self) -> Instance {
        let mode = match self {
            Running::Dispatch(_) => Mode::Dispatch,
            Running::Interact(_) => Mode::Interact,
        };
        Instance {
            pid: self.core().pid,
            mode,
        }
    }
}

impl<P: ChildProgram> ChildBrain<P> {
    /// A brain for a slug of `P`'s binary. Loads the series stored in `config.state_dir`, if
    /// any.
    pub fn new(slug: &str, config: BrainConfig) -> Result<Self, BrainError> {
        Self::from_spec(slug::parse(slug)?, config)
    }

    pub fn from_spec(spec: BrainSpec, config: BrainConfig) -> Result<Self, BrainError> {
        if spec.binary != P::BINARY {
            return Err(BrainError::WrongBinary {
                slug: spec.slug.clone(),
                binary: spec.binary.name(),
            });
        }
        let series = Arc::new(SeriesCell::load(&config.state_dir)?);
        // A terminal UI that was running when its owner died: the series still moves to what
        // it wrote.
        if let Some(follow) = Follow::load(&config.state_dir) {
            let env = |key: &str| env_var(&config, key);
            let transcripts = P::transcripts(&config.cwd, &env);
            follow.apply(transcripts.as_deref(), &series, &config.state_dir);
        }
        let program = match &config.program {
            Some(p) => p.clone().into_os_string(),
            None => match std::env::var_os(P::BIN_ENV) {
                Some(p) => p,
                None => P::default_program()?,
            },
        };
        Ok(Self {
            program,
            spec,
            config,
            subscribers: Arc::new(Subscribers::default()),
            series,
            slot: Arc::new(Mutex::new(Slot::default())),
            size: Mutex::new(TermSize::default()),
            served: Mutex::new(None),
            serving: AtomicBool::new(false),
            interrupt_pending: AtomicBool::new(false),
            turn: tokio::sync::Mutex::new(()),
            lifecycle: tokio::sync::Mutex::new(()),
            program_kind: PhantomData,
        })
    }

    pub fn spec(&self) -> &BrainSpec {
        &self.spec
    }

    /// How to start this brain's program with `args`.
    fn launch(&self, args: Vec<String>) -> Launch<'_> {
        Launch {
            program: &self.program,
            name: P::BINARY.name(),
            spawn_hint: P::SPAWN_HINT,
            args,
            cwd: &self.config.cwd,
            env: &self.config.env,
        }
    }

    /// The live process; one that has ended but not yet been cleared counts as gone.
    fn current(&self) -> Option<Running> {
        lock(&self.slot)
            .running
            .clone()
            .filter(|r| r.core().exited().is_none())
    }

    fn env_var(&self, key: &str) -> Option<OsString> {
        env_var(&self.config, key)
    }

    fn exid(&self) -> Option<String> {
        self.series.exid()
    }

    /// What runs when a process ends. After a terminal UI (`follow`: when it started), the
    /// series moves to the session it wrote last, before anyone hears of the exit: a resume may
    /// hand out a new session id, and what was typed must not be lost to the next dispatch.
    fn exit_hook(&self, generation: u64, follow: Option<Follow>) -> OnExit {
        let slot = Arc::downgrade(&self.slot);
        let subscribers = self.subscribers.clone();
        let series = self.series.clone();
        let state_dir = self.config.state_dir.clone();
        let transcripts = follow
            .as_ref()
            .and_then(|_| P::transcripts(&self.config.cwd, &|key| self.env_var(key)));
        Box::new(move |info| {
            if let Some(follow) = &follow {
                follow.apply(transcripts.as_deref(), &series, &state_dir);
            }
            if let Some(slot) = slot.upgrade() {
                let mut slot = lock(&slot);
                if slot.generation == generation {
                    slot.running = None;
                }
            }
            tracing::debug!(exit = %info, program = P::BINARY.name(), "a brain process ended");
            subscribers.exit(info);
        })
    }

    /// Stops whatever runs. Callers hold `lifecycle`.
    async fn stop(&self) -> Result<(), BrainError> {
        let running = lock(&self.slot).running.take();
        if let Some(running) = running {
            running.core().terminate(self.config.kill_grace).await?;
        }
        Ok(())
    }

    /// Stops whatever runs and opens the slot to a new process: its generation. Callers hold
    /// `lifecycle`.
    async fn clear_slot(&self) -> Result<u64, BrainError> {
        self.stop().await?;
        let mut slot = lock(&self.slot);
        slot.generation += 1;
        Ok(slot.generation)
    }

    /// Puts the process of `generation` in the slot, unless a newer start took it meanwhile.
    fn install(&self, generation: u64, running: &Running) {
        let mut slot = lock(&self.slot);
        if slot.generation == generation {
            slot.running = Some(running.clone());
        }
    }

    /// Replaces whatever runs with a headless process started with `key` (its flags without
    /// `--resume`), resuming `resume`. Callers hold `lifecycle`.
    async fn start_dispatch(
        &self,
        key: Vec<String>,
        args: Vec<String>,
        resume: Option<&str>,
    ) -> Result<Arc<DispatchProc>, BrainError> {
        let generation = self.clear_slot().await?;
        let on_exit = self.exit_hook(generation, None);
        let subs = self.subscribers.clone();
        let proc = Arc::new(dispatch::spawn(self.launch(args), key, resume, subs, on_exit).await?);
        self.install(generation, &Running::Dispatch(proc.clone()));
        Ok(proc)
    }

    /// Replaces whatever runs with a new process. Callers hold `lifecycle`.
    async fn start(&self, mode: Mode, verb: Verb) -> Result<Running, BrainError> {
        // First: a terminal UI that ends moves the series to the session it wrote last.
        self.stop().await?;
        let exid = self.exid();
        let model = Some(self.spec.model_id());
        if mode == Mode::Dispatch {
            let args = P::dispatch_args(model, self.spec.tools(verb), exid.as_deref());
            let proc = self
                .start_dispatch(self.dispatch_key(verb), args, exid.as_deref())
                .await?;
            return Ok(Running::Dispatch(proc));
        }
        let generation = self.clear_slot().await?;
        // A new conversation in the terminal UI gets an id chosen here, so the series can
        // follow it without guessing.
        let pinned = exid
            .as_deref()
            .is_none_or(str::is_empty)
            .then(crate::session::new_session_id);
        let follow = Follow::new(pinned.clone(), exid.clone().filter(|id| !id.is_empty()));
        follow.save(&self.config.state_dir);
        let on_exit = self.exit_hook(generation, Some(follow));
        let mut args = P::interact_args(model, exid.as_deref());
        if let Some(id) = &pinned {
            args.extend(["--session-id".to_string(), id.clone()]);
        }
        let size = *lock(&self.size);
        let subs = self.subscribers.clone();
        let running = Running::Interact(Arc::new(
            interact::spawn(self.launch(args), size, subs, on_exit).await?,
        ));
        self.install(generation, &running);
        Ok(running)
    }

    /// The dispatch process for `verb`, restarted with the right tool set if needed.
    async fn dispatch_proc(&self, verb: Verb) -> Result<Arc<DispatchProc>, BrainError> {
        let _life = self.lifecycle.lock().await;
        let name = verb_name(verb);
        match self.current() {
            None => Err(BrainError::NotRunning { verb: name }),
            Some(Running::Interact(_)) => Err(BrainError::InteractMode { verb: name }),
            Some(Running::Dispatch(p)) if p.key == self.dispatch_key(verb) => Ok(p),
            Some(Running::Dispatch(_)) => match self.start(Mode::Dispatch, verb).await? {
                Running::Dispatch(p) => Ok(p),
                Running::Interact(_) => Err(BrainError::InteractMode { verb: name }),
            },
        }
    }

    /// The length of the transcript the program keeps of `conversation`, if it keeps one.
    fn transcript_len(&self, conversation: &str) -> Option<u64> {
        let dir = P::transcripts(&self.config.cwd, &|key| self.env_var(key))?;
        let file = dir.join(format!("{conversation}.jsonl"));
        std::fs::metadata(file).ok().map(|m| m.len())
    }

    /// The flags of a dispatch process for `verb`, `--resume` left out.
    fn dispatch_key(&self, verb: Verb) -> Vec<String> {
        P::dispatch_args(Some(self.spec.model_id()), self.spec.tools(verb), None)
    }

    /// The process for a served turn that needs the flags `key`: the warm one when it was
    /// started with them and is on the conversation `resume`, else a new one resuming it.
    /// `true` with a new process started with `--resume`.
    async fn served_proc(
        &self,
        options: &TurnOptions,
        resume: Option<&str>,
    ) -> Result<(Arc<DispatchProc>, bool), BrainError> {
        let model = Some(self.spec.model_id());
        let key = P::served_args(options, model, None);
        let _life = self.lifecycle.lock().await;
        if let Some(Running::Dispatch(p)) = self.current()
            && p.key == key
            && p.reusable.load(Ordering::SeqCst)
            && p.conversation().as_deref() == resume
            && *lock(&p.transcript_len) == resume.and_then(|id| self.transcript_len(id))
        {
            return Ok((p, false));
        }
        let args = P::served_args(options, model, resume);
        let proc = self.start_dispatch(key, args, resume).await?;
        Ok((proc, resume.is_some()))
    }

    async fn run_turn(&self, verb: Verb, prompt: &str) -> Result<BrainOutput, BrainError> {
        let _turn = self.turn.lock().await;
        let started = Instant::now();
        let proc = self.dispatch_proc(verb).await?;
        let end = proc.exchange(prompt, &mut |_| {}).await?;
        let wall_time = started.elapsed();
        let outcome = match end {
            TurnEnd::Done(outcome) => outcome,
            TurnEnd::Died { exit, session_id } => {
                if let Some(exid) = session_id {
                    self.update_series(|s| s.exid = exid)?;
                }
                return Err(BrainError::DiedMidTurn { exit });
            }
        };
        let usage = outcome.usage;
        let metrics = Metrics {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_tokens: usage.cache_read_input_tokens,
            cache_write_tokens: usage.cache_creation_input_tokens,
            wall_time,
            cost_usd: proc.turn_cost(outcome.total_cost_usd, || self.spec.cost(&usage)),
        };
        let exid = outcome
            .session_id
            .clone()
            .or_else(|| self.exid())
            .unwrap_or_default();
        let episode = Episode {
            verb,
            prompt: prompt.to_string(),
            text: outcome.text.clone(),
            is_error: outcome.is_error,
            metrics,
            exid: exid.clone(),
            finished_at: chrono::Utc::now().to_rfc3339(),
        };
        let series = self.update_series(move |s| {
            s.exid = exid;
            s.episodes.push(episode);
        })?;
        if outcome.is_error {
            return Err(BrainError::TurnFailed {
                message: outcome.text,
                api_error_status: outcome.api_error_status,
            });
        }
        Ok(BrainOutput {
            text: outcome.text,
            metrics,
            tool_calls: outcome.tool_calls,
            series,
        })
    }

    /// A served turn on the brain's warm process, retried once without `--resume` when the
    /// brain's session could not be resumed.
    async fn served_turn(&self, request: TurnRequest) -> Result<TurnReport, BrainError> {
        let _turn = self.turn.lock().await;
        self.interrupt_pending.store(false, Ordering::SeqCst);
        self.serving.store(true, Ordering::SeqCst);
        let report = self.served_attempts(&request).await;
        self.serving.store(false, Ordering::SeqCst);
        *lock(&self.served) = None;
        report
    }

    /// The served turn's attempts: one, or a second on a new conversation when the first
    /// could not resume.
    async fn served_attempts(&self, request: &TurnRequest) -> Result<TurnReport, BrainError> {
        let mut resume = request.options.resume.clone();
        loop {
            let (proc, resumed) = self
                .served_proc(&request.options, resume.as_deref())
                .await?;
            proc.begin_turn();
            *lock(&self.served) = Some(proc.clone());
            if self.interrupt_pending.swap(false, Ordering::SeqCst) || request.stop.is_cancelled() {
                proc.interrupt().await?;
            }
            // The turn's own stop, whenever it comes (before this process took the turn too).
            let stopping = {
                let (proc, stop) = (proc.clone(), request.stop.clone());
                tokio::spawn(async move {
                    stop.cancelled().await;
                    if let Err(e) = proc.interrupt().await {
                        tracing::debug!(error = %e, "could not interrupt a stopped turn");
                    }
                })
            };
            let named = |id: &str| {
                if let Err(e) = self.keep_exid(id) {
                    tracing::warn!(error = %e, "could not keep the brain's session id");
                }
            };
            let ended = proc
                .served_turn(
                    request,
                    resumed,
                    self.config.kill_grace,
                    |usage| self.spec.cost(usage),
                    &named,
                )
                .await;
            stopping.abort();
            *lock(&self.served) = None;
            match ended? {
                Ended::Report(report) => {
                    if let Some(exid) = &report.session_id {
                        *lock(&proc.transcript_len) = self.transcript_len(exid);
                        self.keep_exid(exid)?;
                    }
                    return Ok(report);
                }
                Ended::ResumeFailed { why, exit } => {
                    let old = resume.take().unwrap_or_default();
                    if self.interrupt_pending.swap(false, Ordering::SeqCst) {
                        let _ = request.events.send(UiEvent::SessionError {
                            session_id: request.label.clone(),
                            error: "the turn was interrupted before the brain answered".into(),
                        });
                        let _ = request.events.send(UiEvent::ProcessExit {
                            session_id: request.label.clone(),
                            code: exit.code,
                            signal: exit.signal,
                        });
                        return Ok(TurnReport {
                            session_id: None,
                            exit,
                            is_error: true,
                            interrupted: true,
                            cost_usd: 0.0,
                            usage: Default::default(),
                            kind: None,
                            api_error_status: None,
                        });
                    }
                    let detail = if why.is_empty() {
                        String::new()
                    } else {
                        format!(" ({why})")
                    };
                    let _ = request.events.send(UiEvent::SessionError {
                        session_id: request.label.clone(),
                        error: format!(
                            "the brain could not resume its session {old}{detail}; a new session starts"
                        ),
                    });
                }
            }
        }
    }

    /// Stores `id` as the series' conversation, unless it already is (each store is a flushed
    /// write, and a served turn names its conversation at its start and again at its end).
    fn keep_exid(&self, id: &str) -> Result<(), BrainError> {
        if self.exid().as_deref() != Some(id) {
            self.update_series(|s| s.exid = id.to_string())?;
        }
        Ok(())
    }

    /// Changes the series (creating it on first use) and stores it.
    fn update_series(&self, change: impl FnOnce(&mut Series)) -> Result<Series, BrainError> {
        self.series.update(change)
    }
}

/// An environment variable as the brain's processes see it.
fn env_var(config: &BrainConfig, key: &str) -> Option<OsString> {
    config
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, value)| value.clone())
}

impl<P: ChildProgram> Drop for ChildBrain<P> {
    fn drop(&mut self) {
        if let Some(running) = lock(&self.slot).running.take() {
            running.core().kill_now();
        }
    }
}

impl<P: ChildProgram> BrainCli for ChildBrain<P> {
    fn slug(&self) -> &str {
        &self.spec.slug
    }

    fn ask<'a>(&'a self, prompt: &'a str) -> BrainFuture<'a, BrainOutput> {
        Box::pin(self.run_turn(Verb::Ask, prompt))
    }

    fn act<'a>(&'a self, prompt: &'a str) -> BrainFuture<'a, BrainOutput> {
        Box::pin(self.run_turn(Verb::Act, prompt))
    }

    fn turn(&self, request: TurnRequest) -> BrainFuture<'_, TurnReport> {
        Box::pin(self.served_turn(request))
    }

    fn prepare(&self, options: TurnOptions) -> BrainFuture<'_, ()> {
        Box::pin(async move {
            if options.resume.is_some() {
                return Ok(());
            }
            // Not the turn lock: a turn that comes meanwhile is a turn (it can be interrupted)
            // and waits here only for the process to be started, then takes it.
            let _life = self.lifecycle.lock().await;
            // Whatever runs already is left alone: it may be a turn's, mid-turn.
            if self.current().is_some() {
                return Ok(());
            }
            let key = P::served_args(&options, Some(self.spec.model_id()), None);
            let proc = self.start_dispatch(key.clone(), key, None).await?;
            // It has had no turn, so no conversation to be on: the first turn may take it.
            proc.reusable.store(true, Ordering::SeqCst);
            Ok(())
        })
    }

    fn interrupt(&self) -> BrainFuture<'_, bool> {
        Box::pin(async move {
            let Some(proc) = lock(&self.served).clone() else {
                // Between processes (starting, or retrying without `--resume`): the next one
                // is stopped as soon as it starts.
                let serving = self.serving.load(Ordering::SeqCst);
                if serving {
                    self.interrupt_pending.store(true, Ordering::SeqCst);
                }
                return Ok(serving);
            };
            let results = proc.results.load(Ordering::SeqCst);
            proc.interrupt().await?;
            // A CLI that does not end the turn at the request is stopped.
            let grace = self.config.kill_grace;
            tokio::spawn(async move {
                let ended = tokio::time::timeout(grace, proc.core.wait()).await.is_ok();
                if !ended
                    && proc.results.load(Ordering::SeqCst) == results
                    && let Err(e) = proc.core.terminate(grace).await
                {
                    tracing::warn!(error = %e, "could not stop an interrupted brain");
                }
            });
            Ok(true)
        })
    }

    fn series(&self) -> Option<Series> {
        self.series.get()
    }

    fn release(&self) -> BrainFuture<'_, bool> {
        Box::pin(async move {
            let Ok(_turn) = self.turn.try_lock() else {
                return Ok(false);
            };
            let _life = self.lifecycle.lock().await;
            let Some(Running::Dispatch(process)) = self.current() else {
                return Ok(false);
            };
            // A headless CLI whose turn is done ends at the end of its input in milliseconds;
            // a signal is for one that does not.
            process.close_stdin().await;
            let ended = tokio::time::timeout(self.config.kill_grace, process.core.wait()).await;
            if ended.is_err() {
                self.stop().await?;
            } else {
                lock(&self.slot).running.take();
            }
            Ok(true)
        })
    }

    fn kill(&self) -> BrainFuture<'_, ()> {
        Box::pin(async move {
            let _life = self.lifecycle.lock().await;
            self.stop().await
        })
    }
}

impl<P: ChildProgram> BrainTerminal for ChildBrain<P> {
    fn instance(&self) -> Option<Instance> {
        self.current().map(|r| r.instance())
    }

    fn boot(&self, mode: Mode) -> BrainFuture<'_, Instance> {
        Box::pin(async move {
            let _life = self.lifecycle.lock().await;
            Ok(self.start(mode, Verb::Ask).await?.instance())
        })
    }

    fn write<'a>(&'a self, data: &'a [u8]) -> BrainFuture<'a, ()> {
        Box::pin(async move {
            match self.current() {
                None => Err(BrainError::NotRunning { verb: "write" }),
                Some(Running::Dispatch(p)) => p.write(data).await,
                // A terminal whose reader is busy blocks the writer: never on a runtime thread.
                Some(Running::Interact(p)) => {
                    let data = data.to_vec();
                    tokio::task::spawn_blocking(move || p.write(&data))
                        .await
                        .map_err(|e| BrainError::Io {
                            action: "write to",
                            source: std::io::Error::other(e),
                        })?
                }
            }
        })
    }

    fn resize(&self, size: TermSize) -> Result<(), BrainError> {
        *lock(&self.size) = size;
        match self.current() {
            Some(Running::Interact(p)) => p.resize(size),
            _ => Ok(()),
        }
    }

    fn on_data(&self, callback: DataCallback) -> SubscriptionId {
        self.subscribers.on_data(callback)
    }

    fn on_exit(&self, callback: ExitCallback) -> SubscriptionId {
        self.subscribers.on_exit(callback)
    }

    fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.subscribers.unsubscribe(id)
    }
}
