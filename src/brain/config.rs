//! Where and how a brain runs, whatever its supplier.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct BrainConfig {
    /// The working directory of every process the brain starts.
    pub cwd: PathBuf,
    /// Where the series is kept; a new brain on the same directory resumes it.
    pub state_dir: PathBuf,
    /// The executable; `None` means the supplier's default (its environment override, else
    /// `claude` on the PATH or this very `ouro`).
    pub program: Option<PathBuf>,
    /// Extra environment for the processes (on top of this process's own, unless
    /// `clear_env`).
    pub env: Vec<(OsString, OsString)>,
    /// The processes get only `env`, none of this process's environment.
    pub clear_env: bool,
    /// How long `kill` waits after SIGTERM before sending SIGKILL.
    pub kill_grace: Duration,
}

impl BrainConfig {
    pub fn new(cwd: impl Into<PathBuf>, state_dir: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            state_dir: state_dir.into(),
            program: None,
            env: Vec::new(),
            clear_env: false,
            kill_grace: Duration::from_secs(3),
        }
    }

    pub fn program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = Some(program.into());
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The processes get exactly `env` (a filtered copy of the caller's, say).
    pub fn only_env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.env = env;
        self.clear_env = true;
        self
    }

    pub fn kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace;
        self
    }
}
