//! The claude-CLI supplier: a brain backed by the real `claude` binary (Claude Code), driven
//! through the shared stream-json CLI machinery in [`super::child`].

mod args;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use super::child::args::interact_args;
pub use args::dispatch_args;

use super::BrainError;
use super::child::{ChildBrain, ChildProgram};
use super::slug::Binary;

/// Environment variable naming the `claude` executable when the config does not.
pub(crate) const BIN_ENV: &str = "OURO_CLAUDE_BIN";

/// A brain on the `claude` CLI.
pub type ClaudeBrain = ChildBrain<Claude>;

/// The `claude` CLI as a [`ChildProgram`].
pub struct Claude;

impl ChildProgram for Claude {
    const BINARY: Binary = Binary::Claude;
    const BIN_ENV: &'static str = BIN_ENV;
    const SPAWN_HINT: &'static str = "install Claude Code (npm install -g \
         @anthropic-ai/claude-code) or point OURO_CLAUDE_BIN at it";

    fn default_program() -> Result<OsString, BrainError> {
        Ok("claude".into())
    }

    fn dispatch_args(model_id: Option<&str>, tools: &[&str], resume: Option<&str>) -> Vec<String> {
        dispatch_args(model_id, tools, resume)
    }

    /// `~/.claude/projects/<cwd with every other character than a letter or digit as ->`, or
    /// the same under `CLAUDE_CONFIG_DIR`.
    fn transcripts(cwd: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        let config = match env("CLAUDE_CONFIG_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => PathBuf::from(env("HOME")?).join(".claude"),
        };
        Some(
            config
                .join("projects")
                .join(crate::settings::folder_name(cwd)),
        )
    }

    fn interact_args(model_id: Option<&str>, resume: Option<&str>) -> Vec<String> {
        interact_args(model_id, resume)
    }
}
