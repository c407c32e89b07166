//! What can go wrong with a brain, each said so the caller knows what to do next.

use std::path::PathBuf;

use super::{ExitInfo, Verb};

#[derive(Debug, thiserror::Error)]
pub enum BrainError {
    #[error(transparent)]
    Slug(#[from] super::SlugError),

    #[error("the slug '{slug}' runs on the {binary} binary, which this supplier does not run")]
    WrongBinary { slug: String, binary: &'static str },

    #[error(
        "the brain '{slug}' runs the claude CLI, which ouro drives from print mode only; add -p, \
         or pick an ouro@ slug (see `ouro brains`)"
    )]
    PrintOnly { slug: String },

    #[error(
        "the brain '{slug}' takes its prompt as text; drop --input-format stream-json, or pick \
         an ouro@ slug"
    )]
    StreamJsonInput { slug: String },

    #[error("cannot {verb}: no brain process is running; boot it in dispatch mode first")]
    NotRunning { verb: &'static str },

    #[error("cannot {verb} while the brain runs in interact mode; boot it in dispatch mode first")]
    InteractMode { verb: &'static str },

    #[error("could not start '{program}': {source}; {hint}")]
    Spawn {
        program: String,
        source: std::io::Error,
        /// What to do about it, which depends on the program.
        hint: &'static str,
    },

    #[error("could not open a terminal for '{program}': {reason}")]
    Pty { program: String, reason: String },

    #[error(
        "the brain process ended ({exit}) before finishing the turn; the series is kept, so \
         boot again to resume the conversation"
    )]
    DiedMidTurn { exit: ExitInfo },

    #[error("the brain answered with an error{}: {message}", status_suffix(*api_error_status))]
    TurnFailed {
        message: String,
        api_error_status: Option<u16>,
    },

    #[error("could not {action} the brain process: {source}")]
    Io {
        action: &'static str,
        source: std::io::Error,
    },

    #[error("process {pid} did not exit after SIGKILL; check it with `ps -p {pid}`")]
    KillTimeout { pid: u32 },

    #[error("could not {action} the brain's series file {}: {reason}", path.display())]
    State {
        action: &'static str,
        path: PathBuf,
        reason: String,
    },
}

fn status_suffix(status: Option<u16>) -> String {
    status
        .map(|s| format!(" (API status {s})"))
        .unwrap_or_default()
}

pub(crate) fn verb_name(verb: Verb) -> &'static str {
    match verb {
        Verb::Ask => "ask",
        Verb::Act => "act",
    }
}
