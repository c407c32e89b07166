//! What can go wrong while setting up or changing the permission engine.

use super::mode::{PermissionMode, UnknownMode};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionError {
    #[error(transparent)]
    UnknownMode(#[from] UnknownMode),
    #[error(
        "the permission mode `{given}` in {source_label} is not valid; use one of: {}",
        PermissionMode::names()
    )]
    UnknownSettingsMode { given: String, source_label: String },
    #[error("invalid permission rule `{rule}`: {reason}")]
    InvalidRule { rule: String, reason: String },
    #[error(
        "bypassPermissions is refused when running as root: every command the model chose would \
         run with full control of this machine. Run ouro as a normal user, or set \
         OURO_ALLOW_ROOT_BYPASS=1 if you really mean it (for example inside a throwaway container)"
    )]
    RootBypass,
    #[error("{} is not a directory; give the path of an existing directory", .0.display())]
    NotADirectory(std::path::PathBuf),
}
