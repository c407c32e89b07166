//! The permission engine: what the model may do on the user's machine. Phase 4 of the pipeline.

use std::path::{Path, PathBuf};

/// What a tool call would touch, as the permission engine sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Touches nothing outside ouro's own state.
    None,
    /// Reads this absolute path (file or directory).
    Read(PathBuf),
    /// Creates or changes this absolute path.
    Write(PathBuf),
    /// Runs this shell command.
    Execute(String),
    /// Reaches a service outside ouro (an MCP server's tool): it asks unless a rule allows
    /// it. A server's own word that a tool only reads does not let it run unasked.
    External,
}

/// How much an allowed shell command may do; the OS sandbox enforces it whatever the analyser
/// thought of the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Confinement {
    /// Allowed only because it was judged read-only: no writes, no network, reads limited to
    /// the project, added directories and system paths.
    #[default]
    ReadOnly,
    /// Allowed by a rule, a hook or the user: writes in the project, added directories and a
    /// private temp dir; network unless the settings refuse it.
    Approved,
    /// Allowed by auto mode's reviewer, which a prompt injection can talk round: as
    /// [`Confinement::Approved`], but the project's protected paths (its git config and hooks,
    /// `.envrc`, agent settings and instructions, …) stay read-only, and one the call creates
    /// is removed after it.
    Reviewed,
    /// bypassPermissions: no sandbox at all.
    Unconfined,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused; the reason goes to the model in the tool_result.
    Deny(String),
    /// The user must be asked; the reason is shown in the prompt.
    Ask(String),
}

/// One call as the permission engine judges it.
#[derive(Debug, Clone)]
pub struct PermissionRequest<'a> {
    pub tool: &'a str,
    pub access: &'a Access,
    pub read_only: bool,
    /// Where a shell command runs, when that is not the project root (Bash keeps the
    /// directory a `cd` left it in): its relative paths are judged from there.
    pub cwd: Option<&'a Path>,
}

/// Anything that can decide a permission request: the rule engine, or a test double.
pub trait PermissionPolicy: Send + Sync {
    fn decide(&self, request: &PermissionRequest<'_>) -> Decision;

    /// The allow rule that would let this request through next time, e.g. `Bash(npm test:*)`
    /// or `Edit(src/main.rs)`; offered as "yes, and don't ask again".
    fn suggest_rule(&self, request: &PermissionRequest<'_>) -> String;

    /// Remember an allow rule the user granted for the rest of this session.
    fn grant(&self, rule: &str);

    /// How confined a request that `decide` allowed runs: `ReadOnly` when it would be allowed
    /// without any allow rule, `Approved` when a rule (or the mode) let it through.
    fn confinement(&self, request: &PermissionRequest<'_>) -> Confinement;

    /// In auto mode: whether a request `decide` said to ask about may be answered by the
    /// reviewer model instead of the user.
    fn reviewable(&self, _request: &PermissionRequest<'_>) -> bool {
        false
    }

    /// The mode requests are judged under now (Shift+Tab and `set_permission_mode` change it).
    fn mode(&self) -> PermissionMode {
        PermissionMode::Default
    }
}
pub mod bash;
mod denials;
mod dirs;
mod engine;
mod error;
mod file_access;
mod mode;
pub mod paths;
mod rules;
mod scope;
mod shell_access;
mod suggest;

pub use denials::FileDenials;
pub use dirs::AddedDirs;
pub use engine::{CommandGuard, PermissionEngine, ROOT_BYPASS_ENV, check_bypass_allowed};
pub use error::PermissionError;
pub use file_access::{protect_also, protected_in_project, protection, protection_in};
pub use mode::{PermissionMode, UnknownMode};
pub use rules::{CliPermissions, RuleKind, SourcedRule, canonical_tool, split_rule_list};
