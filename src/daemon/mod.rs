//! `ouro daemon`: one process per ouro home that owns every clone's brain, so a closed
//! terminal or a crashed client never kills a brain. A clone is a named brain (any slug) in a
//! directory, with a durable series. Clients are thin: `ask` / `act` run a dispatch turn and
//! print its answer, `watch` shows what a clone does, `talk` relays raw terminal bytes to the
//! brain's own interactive UI in a PTY the daemon owns.
//!
//! The daemon reaches brains only through [`crate::brain::BrainCli`] (`turn` for dispatch,
//! `boot(Interact)` / `write` / `resize` / `on_data` / `on_exit` for talks) and speaks to its
//! clients in the frames of [`frame`].

mod agent;
pub mod client;
mod clone;
pub mod command;
mod conn;
mod dispatch;
pub mod frame;
pub mod paths;
mod screen;
mod server;
mod store;
mod talk;
mod webhook;
pub mod zone;

use std::path::PathBuf;

pub use paths::Paths;
pub use server::run;

use crate::brain::BrainError;

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("ouro has no home folder for the daemon (set OURO_HOME or HOME)")]
    NoHome,
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the socket directory {dir} belongs to another user (or is not a directory); remove it, or set XDG_RUNTIME_DIR to a directory of your own"
    )]
    ForeignSocketDir { dir: PathBuf },
    #[error(
        "`{name}` is not a clone name: use 1 to 64 letters, digits, - and _ (not starting with -)"
    )]
    BadName { name: String },
    #[error("a daemon already runs for this ouro home ({holder}); `ouro daemon stop` stops it")]
    AlreadyRunning { holder: String },
    #[error("there is no clone named `{name}`; `ouro clone list` shows them")]
    NoClone { name: String },
    #[error("a clone named `{name}` exists already; pick another name or `ouro clone rm {name}`")]
    CloneExists { name: String },
    #[error("the clone `{name}` is busy ({what}); try again when it is idle")]
    Busy { name: String, what: &'static str },
    #[error("the brain of `{name}` failed: {source}")]
    Brain {
        name: String,
        #[source]
        source: BrainError,
    },
    #[error("no daemon runs for this ouro home; `ouro daemon start` starts one")]
    NotRunning,
    #[error("the daemon refused the connection: {0}")]
    Refused(String),
    #[error("the daemon could not be reached: {0}")]
    Protocol(#[from] frame::FrameError),
    #[error(
        "the daemon did not start within {secs} seconds{log}; see the log {path} and run `ouro daemon start` again"
    )]
    StartFailed {
        secs: u64,
        log: String,
        path: PathBuf,
    },
    #[error("the daemon said: {0}")]
    Remote(String),
    /// A sentence of the client's own.
    #[error("{0}")]
    Client(String),
    #[error(
        "the connection to the daemon was lost; run the command again (the next one restarts the daemon, which recovers its clones)"
    )]
    Lost,
}
