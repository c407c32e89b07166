//! The UI events a graphical front end renders (Chirality's harness events): `ouro serve`
//! streams them as SSE (`event:` is [`UiEvent::kind`], `data:` the rest as camelCase JSON),
//! and the daemon's watchers and the REPL can render the same stream. They sit below every
//! front end so that none has to import another to share them.
//!
//! Every brain, ouro's own included, is a process speaking Claude Code's stream-json: the one
//! translation into these events reads that stream (`brain::child::served`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::types::Usage;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum UiEvent {
    /// A brain session is ready; `claude_session_id` is the brain's own session id (the
    /// design's name, whichever brain runs).
    #[serde(rename = "session:init")]
    SessionInit {
        session_id: String,
        claude_session_id: String,
        model: String,
        tools: Vec<String>,
    },
    /// Answer text as it streams.
    #[serde(rename = "chat:delta")]
    ChatDelta { session_id: String, text: String },
    /// One assistant message's whole text.
    #[serde(rename = "chat:complete")]
    ChatComplete { session_id: String, text: String },
    #[serde(rename = "tool:start")]
    ToolStart {
        session_id: String,
        tool_use_id: String,
        name: String,
        input: Value,
    },
    #[serde(rename = "tool:result")]
    ToolResult {
        session_id: String,
        tool_use_id: String,
        content: String,
        is_error: bool,
    },
    /// A call waits for the user's answer (`POST /api/harness/permission`).
    #[serde(rename = "permission:request")]
    PermissionRequest {
        session_id: String,
        request_id: String,
        tool_name: String,
        input: Value,
    },
    #[serde(rename = "session:complete")]
    SessionComplete {
        session_id: String,
        cost_usd: f64,
        usage: Usage,
    },
    #[serde(rename = "session:error")]
    SessionError { session_id: String, error: String },
    /// Always a turn's last event.
    #[serde(rename = "process:exit")]
    ProcessExit {
        session_id: String,
        code: Option<i32>,
        signal: Option<i32>,
    },
}

impl UiEvent {
    /// What a run's one-line summary takes from this event: the turn's whole answer, or why
    /// it failed (a spent budget, a brain that died); the last one given wins.
    pub fn summary_text(&self) -> Option<&str> {
        match self {
            UiEvent::ChatComplete { text, .. } | UiEvent::SessionError { error: text, .. }
                if !text.is_empty() =>
            {
                Some(text)
            }
            _ => None,
        }
    }

    /// The event's name (`chat:delta`, …): SSE's `event:` field.
    pub fn kind(&self) -> String {
        self.split().0
    }

    /// The name and the payload without it, as SSE sends them.
    pub fn split(&self) -> (String, Value) {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        let kind = value
            .as_object_mut()
            .and_then(|o| o.remove("type"))
            .and_then(|t| t.as_str().map(String::from))
            .unwrap_or_default();
        (kind, value)
    }

    /// Reads back what [`UiEvent::split`] gave (an SSE client's side).
    pub fn join(kind: &str, mut payload: Value) -> Result<UiEvent, serde_json::Error> {
        if let Some(object) = payload.as_object_mut() {
            object.insert("type".into(), Value::from(kind));
        }
        serde_json::from_value(payload)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_event_splits_into_its_sse_name_and_camel_case_data_and_joins_back() {
        let events = [
            UiEvent::SessionInit {
                session_id: "s".into(),
                claude_session_id: "c".into(),
                model: "m".into(),
                tools: vec!["Read".into()],
            },
            UiEvent::ChatDelta {
                session_id: "s".into(),
                text: "He".into(),
            },
            UiEvent::ChatComplete {
                session_id: "s".into(),
                text: "Hello".into(),
            },
            UiEvent::ToolStart {
                session_id: "s".into(),
                tool_use_id: "t".into(),
                name: "Bash".into(),
                input: json!({"command": "ls"}),
            },
            UiEvent::ToolResult {
                session_id: "s".into(),
                tool_use_id: "t".into(),
                content: "a\nb".into(),
                is_error: true,
            },
            UiEvent::PermissionRequest {
                session_id: "s".into(),
                request_id: "r".into(),
                tool_name: "Write".into(),
                input: json!({}),
            },
            UiEvent::SessionComplete {
                session_id: "s".into(),
                cost_usd: 0.5,
                usage: Usage::default(),
            },
            UiEvent::SessionError {
                session_id: "s".into(),
                error: "boom".into(),
            },
            UiEvent::ProcessExit {
                session_id: "s".into(),
                code: Some(0),
                signal: None,
            },
        ];
        let mut names = Vec::new();
        for event in events {
            let (kind, data) = event.split();
            assert!(data.get("type").is_none());
            assert_eq!(data["sessionId"], "s", "{kind}: {data}");
            assert_eq!(UiEvent::join(&kind, data).unwrap(), event);
            names.push(kind);
        }
        assert_eq!(
            names,
            [
                "session:init",
                "chat:delta",
                "chat:complete",
                "tool:start",
                "tool:result",
                "permission:request",
                "session:complete",
                "session:error",
                "process:exit"
            ]
        );
        let (_, data) = UiEvent::ToolResult {
            session_id: "s".into(),
            tool_use_id: "t".into(),
            content: String::new(),
            is_error: false,
        }
        .split();
        assert!(data.get("toolUseId").is_some() && data.get("isError").is_some());
    }
}
