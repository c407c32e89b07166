//! Sessions on disk, under ouro's home rather than in the project (where an approved command
//! could rewrite a session's permission mode): `serve/projects/<project>/sessions/{id}.json`
//! and the journal of its saves since (`record.rs`), beside the session's events and
//! its last system prompt.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How a session works, as Chirality names its modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Mode {
    /// The user and the agent work together, turn by turn.
    Workbench,
    /// The agent runs a task through to a result without asking along the way.
    Pipeline,
    /// Plain chat with the brain: no persona or mode instructions beyond the identity.
    Direct,
}

impl Mode {
    /// The mode's instructions in the appended system prompt.
    pub(super) fn instructions(self) -> &'static str {
        match self {
            Mode::Workbench => {
                "Mode: workbench. You work with the user turn by turn: make focused changes, say what you changed and why, and ask when a decision is theirs."
            }
            Mode::Pipeline => {
                "Mode: pipeline. Carry the task through to a finished, verified result without asking questions along the way; end with a short report of what was done and how it was checked."
            }
            Mode::Direct => "Mode: direct. Answer the user directly.",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Session {
    pub id: String,
    pub created_at: String,
    pub(crate) updated_at: String,
    pub project_root: PathBuf,
    pub persona: Option<String>,
    pub mode: Mode,
    /// The brain's own session id, resumed by the next turn.
    pub claude_session_id: Option<String>,
    pub brain: String,
    pub permission_mode: Option<String>,
    /// Rules the user allowed "always" from a permission request.
    #[serde(default)]
    pub(crate) always_allow: Vec<String>,
    #[serde(default)]
    pub cost_usd: f64,
    #[serde(default)]
    pub turns: u64,
    /// The user's message of each turn, for the history view.
    #[serde(default)]
    pub history: Vec<TurnRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TurnRecord {
    pub(crate) turn_id: String,
    pub message: String,
}

/// Where one project's served sessions live.
pub(super) fn project_dir(home: &Path, project_root: &Path) -> PathBuf {
    home.join("serve/projects")
        .join(crate::settings::folder_name(project_root))
}

pub(super) fn session_file(home: &Path, session: &Session) -> PathBuf {
    project_dir(home, &session.project_root)
        .join("sessions")
        .join(format!("{}.json", session.id))
}

pub(super) fn events_file(home: &Path, session: &Session) -> PathBuf {
    project_dir(home, &session.project_root)
        .join("events")
        .join(format!("{}.jsonl", session.id))
}

pub(super) fn prompt_file(home: &Path, session: &Session) -> PathBuf {
    project_dir(home, &session.project_root)
        .join("prompts")
        .join(format!("{}-system.txt", session.id))
}

/// Where the session's brain keeps its series.
pub(super) fn brain_dir(home: &Path, session: &Session) -> PathBuf {
    project_dir(home, &session.project_root)
        .join("brains")
        .join(&session.id)
}

pub(super) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A new workbench session, for tests.
#[cfg(test)]
pub(super) fn sample() -> Session {
    Session {
        id: "0b7e".into(),
        created_at: now(),
        updated_at: now(),
        project_root: "/tmp/p".into(),
        persona: None,
        mode: Mode::Workbench,
        claude_session_id: None,
        brain: "ouro@anthropic/claude/sonnet".into(),
        permission_mode: None,
        always_allow: Vec::new(),
        cost_usd: 0.0,
        turns: 0,
        history: Vec::new(),
    }
}
