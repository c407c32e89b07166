//! The ouro supplier: a brain backed by ouro's own engine, run as a child `ouro` process so
//! that it has a pid, can be killed and rebooted, and reports its exit like any other brain.
//!
//! Dispatch mode runs `ouro -p` in its stream-json mode, which speaks Claude Code's protocol,
//! so the shared machinery in [`super::child`] drives it unchanged; the series id is ouro's session
//! id, and `--resume` reloads its transcript. Interact mode runs the `ouro` REPL in a
//! pseudo-terminal on the same session.

mod args;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use super::child::args::interact_args;
pub use args::dispatch_args;

use super::BrainError;
use super::child::{ChildBrain, ChildProgram};
use super::slug::Binary;

/// Environment variable naming the `ouro` executable when the config does not.
pub(crate) const BIN_ENV: &str = "OURO_BIN";

/// A brain on ouro's own engine.
pub type OuroBrain = ChildBrain<Ouro>;

/// `ouro` itself as a [`ChildProgram`].
pub struct Ouro;

impl ChildProgram for Ouro {
    const BINARY: Binary = Binary::Ouro;
    const BIN_ENV: &'static str = BIN_ENV;
    const SPAWN_HINT: &'static str = "point OURO_BIN at the ouro executable";

    /// This very executable, which is `ouro` whenever the brain is used from the binary.
    fn default_program() -> Result<OsString, BrainError> {
        std::env::current_exe()
            .map(|p| p.into_os_string())
            .map_err(|source| BrainError::Spawn {
                program: "ouro".into(),
                source,
                hint: Self::SPAWN_HINT,
            })
    }

    fn dispatch_args(model_id: Option<&str>, tools: &[&str], resume: Option<&str>) -> Vec<String> {
        dispatch_args(model_id, tools, resume)
    }

    fn transcripts(cwd: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        let home = match env("OURO_HOME") {
            Some(home) => PathBuf::from(home),
            None => PathBuf::from(env("HOME")?).join(".ouro"),
        };
        Some(
            home.join("projects")
                .join(crate::settings::folder_name(cwd)),
        )
    }

    fn interact_args(model_id: Option<&str>, resume: Option<&str>) -> Vec<String> {
        interact_args(model_id, resume)
    }
}
