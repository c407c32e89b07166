//! `ouro agent ipc`: the Ouroboros IPC v1, for supervisors that are not ouro. The supervisor
//! writes newline-delimited JSON messages to the agent's stdin and reads the agent's from its
//! stdout (`messages` has every one). The agent runs one task, as a thin mapping onto a brain's
//! served turn: the turn's UI events go out as `log` messages, the permission questions its
//! rules leave open as `permission:request`s answered by `permission:response`, and
//! `task:terminate` (or stdin closing) interrupts it. The task ends with a `task:result`
//! naming a dogs bundle of what the agent changed; the process then exits 0 on success, 1 on
//! failure, and 2 at once when a message of another major version arrives.

pub mod messages;
mod setup;
mod task;
mod wire;

use std::path::PathBuf;

use tokio::io::AsyncWrite;
use tokio::sync::{mpsc, watch};

use messages::{Level, Status, TaskResult, ToAgent, ToSupervisor};
use wire::{Outbox, Questions};

/// The exit code after a task that failed or was terminated.
pub const EXIT_FAILURE: i32 = 1;
/// The exit code when the supervisor speaks another major version.
pub const EXIT_VERSION: i32 = 2;

#[derive(Debug, thiserror::Error)]
pub enum IpcError {
    #[error("ouro has no home folder for the run (set OURO_HOME)")]
    NoHome,
    #[error("could not {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Spec(#[from] crate::agents::spec::SpecError),
    #[error("{} is not an agent instance's config.json: {source}", path.display())]
    Config {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Rules(#[from] crate::agents::instance::RulesError),
    #[error(
        "the agent {agent}'s model {model} is not one ouro knows; name a brain with engine.brain (`ouro brains` lists them)"
    )]
    UnknownModel { agent: String, model: String },
    #[error(transparent)]
    Tree(#[from] crate::paws::tree::TreeError),
    #[error(transparent)]
    Brain(#[from] crate::brain::BrainError),
    #[error("the run's changes cannot be written as a bundle: {0}")]
    Paws(#[from] crate::paws::PawsError),
    #[error("a background step of the run failed: {0}")]
    Join(String),
}

/// Speaks the protocol on this process's stdin and stdout; the exit code.
pub async fn run_stdio() -> i32 {
    serve(
        wire::stdin_lines(),
        tokio::io::stdout(),
        crate::settings::ouro_home(),
    )
    .await
}

/// Speaks the protocol: `input` is the supervisor's lines (it ends when they do), `output`
/// gets the agent's messages, a run's files go under `home`. Returns the exit code.
pub async fn serve(
    mut input: mpsc::Receiver<String>,
    output: impl AsyncWrite + Send + 'static,
    home: Option<PathBuf>,
) -> i32 {
    let outbox = Outbox::new(output);
    let questions = Questions::default();
    let (stop, stopped) = watch::channel(None::<String>);
    let (done, mut finished) = mpsc::channel::<TaskResult>(1);
    let mut started = false;
    let mut reading = true;
    loop {
        let line = tokio::select! {
            // The supervisor's lines first: what it sent before the task ended is answered.
            biased;
            line = input.recv(), if reading => line,
            Some(result) = finished.recv() => return report(&outbox, result).await,
        };
        let Some(line) = line else {
            reading = false;
            let why = "terminated: the supervisor closed stdin";
            if !started {
                return report(&outbox, not_begun(why)).await;
            }
            questions.clear();
            stop.send_replace(Some(why.into()));
            continue;
        };
        let message = match messages::read(&line) {
            Ok(message) => message,
            Err(e) => {
                outbox.log(Level::Error, e.to_string()).await;
                if e.is_fatal() {
                    // The task's brain is stopped before the process ends; its result cannot
                    // be told in a protocol the supervisor does not speak.
                    if started {
                        questions.clear();
                        stop.send_replace(Some(e.to_string()));
                        finished.recv().await;
                    }
                    return EXIT_VERSION;
                }
                continue;
            }
        };
        match message.body {
            ToAgent::Initialize(_) if started => {
                let message =
                    "a task:initialize arrived while a task runs; an agent process runs one task";
                outbox.log(Level::Error, message).await;
            }
            ToAgent::Initialize(init) => {
                started = true;
                let cx = task::Context {
                    outbox: outbox.clone(),
                    questions: questions.clone(),
                    stop: stopped.clone(),
                    home: home.clone(),
                };
                let done = done.clone();
                tokio::spawn(async move {
                    let _ = done.send(task::run(init, cx).await).await;
                });
            }
            ToAgent::PermissionResponse(response) => {
                if let Err(response) = questions.answer(response) {
                    let message = format!(
                        "no permission:request {} waits for an answer (answered already, or never asked)",
                        response.request_id
                    );
                    outbox.log(Level::Error, message).await;
                }
            }
            ToAgent::Terminate(terminate) => {
                let why = match terminate.reason {
                    Some(reason) => format!("terminated by the supervisor: {reason}"),
                    None => "terminated by the supervisor (task:terminate)".to_string(),
                };
                if !started {
                    return report(&outbox, not_begun(&why)).await;
                }
                questions.clear();
                stop.send_replace(Some(why));
            }
        }
    }
}

/// The result of a task that never began.
fn not_begun(why: &str) -> TaskResult {
    TaskResult {
        status: Status::Failure,
        output_artifact_path: None,
        summary: format!("{why}, before any task:initialize"),
        run_id: None,
        changed: 0,
        cost_usd: 0.0,
        duration_ms: 0,
    }
}

/// Sends the task's result; the exit code that goes with it.
async fn report(outbox: &Outbox, result: TaskResult) -> i32 {
    let code = match result.status {
        Status::Success => 0,
        Status::Failure => EXIT_FAILURE,
    };
    outbox.send(ToSupervisor::TaskResult(result)).await;
    code
}

#[cfg(test)]
mod tests;
