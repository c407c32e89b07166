//! Where and how a brain runs, whatever its supplier.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::sys::secrets;

#[derive(Debug, Clone)]
pub struct BrainConfig {
    /// The working directory of every process the brain starts.
    pub cwd: PathBuf,
    /// Where the series is kept; a new brain on the same directory resumes it.
    pub(crate) state_dir: PathBuf,
    /// The executable; `None` means the supplier's default (its environment override, else
    /// `claude` on the PATH or this very `ouro`).
    pub program: Option<PathBuf>,
    /// The whole environment of the processes: by default this process's own without its
    /// secrets (the API credentials stay), as [`crate::sys::secrets::brain_env`] makes it.
    pub env: Vec<(OsString, OsString)>,
    /// How long `kill` waits after SIGTERM before sending SIGKILL.
    pub kill_grace: Duration,
}

impl BrainConfig {
    pub fn new(cwd: impl Into<PathBuf>, state_dir: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            state_dir: state_dir.into(),
            program: None,
            env: secrets::brain_env(std::env::vars_os(), &[]),
            kill_grace: Duration::from_secs(3),
        }
    }

    pub fn program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = Some(program.into());
        self
    }

    /// Sets one variable on top of the environment.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        let key = key.into();
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.into()));
        self
    }

    /// Keeps these secret-looking variables for the brain and its tools (`--pass-env`,
    /// settings `envPassthrough`): each is added with this process's value, and their names
    /// travel in [`secrets::PASS_ENV`]. What [`BrainConfig::env`] set stays.
    pub fn pass_env(mut self, keep: &[String]) -> Self {
        for name in keep {
            if let Some(value) = std::env::var_os(name) {
                self = self.env(name, value);
            }
        }
        if !keep.is_empty() {
            self = self.env(secrets::PASS_ENV, keep.join(","));
        }
        self
    }

    pub fn kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace;
        self
    }
}
