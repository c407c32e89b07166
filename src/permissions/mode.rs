//! Permission modes, spelled as Claude Code spells them.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PermissionMode {
    /// Read-only actions inside the project run; everything else asks.
    #[default]
    Default,
    /// File edits inside the project run without asking too.
    AcceptEdits,
    /// Nothing that changes anything runs.
    Plan,
    /// Whatever would ask is denied.
    DontAsk,
    /// Everything runs except what a deny rule refuses.
    BypassPermissions,
    /// Reads and edits inside the project run; a reviewer model judges what else would ask.
    Auto,
}

impl PermissionMode {
    pub const ALL: [PermissionMode; 6] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::DontAsk,
        PermissionMode::BypassPermissions,
        PermissionMode::Auto,
    ];

    pub(crate) fn index(self) -> u8 {
        match self {
            PermissionMode::Default => 0,
            PermissionMode::AcceptEdits => 1,
            PermissionMode::Plan => 2,
            PermissionMode::DontAsk => 3,
            PermissionMode::BypassPermissions => 4,
            PermissionMode::Auto => 5,
        }
    }

    pub(crate) fn from_index(index: u8) -> PermissionMode {
        Self::ALL
            .get(usize::from(index))
            .copied()
            .unwrap_or_default()
    }

    /// The next mode Shift+Tab moves to, as in Claude Code: default, acceptEdits, plan, auto,
    /// then bypassPermissions only when the session may use it.
    pub fn next(self, bypass_allowed: bool) -> PermissionMode {
        match self {
            PermissionMode::Default => PermissionMode::AcceptEdits,
            PermissionMode::AcceptEdits => PermissionMode::Plan,
            PermissionMode::Plan => PermissionMode::Auto,
            PermissionMode::Auto if bypass_allowed => PermissionMode::BypassPermissions,
            _ => PermissionMode::Default,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::Auto => "auto",
        }
    }

    /// One line saying what the mode lets through.
    pub fn summary(self) -> &'static str {
        match self {
            PermissionMode::Default => {
                "read-only actions inside the project run; everything else asks"
            }
            PermissionMode::AcceptEdits => {
                "file edits and read-only actions inside the project run; everything else asks"
            }
            PermissionMode::Plan => "read-only: nothing that changes anything runs",
            PermissionMode::DontAsk => {
                "read-only actions inside the project and allowed rules run; everything else is denied"
            }
            PermissionMode::BypassPermissions => {
                "WARNING: everything runs without asking, except what a deny rule refuses"
            }
            PermissionMode::Auto => {
                "reads and edits inside the project run; a reviewer model judges everything else \
                 (it blocks, or asks you when unsure)"
            }
        }
    }

    /// The valid spellings, for error messages.
    pub fn names() -> String {
        Self::ALL.map(PermissionMode::as_str).join(", ")
    }
}

/// A mode name that is not one of [`PermissionMode::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown permission mode `{given}`; use one of: {}",
    PermissionMode::names()
)]
pub struct UnknownMode {
    pub given: String,
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Claude Code 2.1.283 renamed `default` to `manual` and keeps both spellings.
        if s.trim() == "manual" {
            return Ok(PermissionMode::Default);
        }
        Self::ALL
            .into_iter()
            .find(|m| m.as_str() == s.trim())
            .ok_or_else(|| UnknownMode {
                given: s.to_string(),
            })
    }
}
