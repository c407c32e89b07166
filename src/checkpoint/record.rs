//! A checkpoint as the transcript records it (`{"type":"checkpoint",…}` lines), and reading
//! them back: only lines that start like one are parsed, so listing the checkpoints of a long
//! session stays a fast scan.

use std::io::BufRead;
use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Before a prompt is answered.
    Prompt,
    /// Before a tool call that may write.
    Tool,
    /// At the end of a turn: what the agent left.
    End,
    /// Just before a rewind restored files, so the rewind itself can be undone.
    Rewind,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Prompt => "before prompt",
            Kind::Tool => "before tool",
            Kind::End => "end of turn",
            Kind::Rewind => "before rewind",
        }
    }
}

/// What a checkpoint was taken for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Detail {
    /// The prompt about to be answered (`Kind::Prompt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Messages in the conversation before that prompt: where a conversation rewind cuts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<usize>,
    /// The id an Agent SDK gave the prompt's message (`rewind_files` names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

impl Detail {
    pub fn prompt(prompt: &str, messages: usize) -> Detail {
        Detail {
            prompt: Some(prompt.to_string()),
            messages: Some(messages),
            ..Detail::default()
        }
    }

    pub fn tool(tool: &str, tool_use_id: &str) -> Detail {
        Detail {
            tool: Some(tool.to_string()),
            tool_use_id: Some(tool_use_id.to_string()),
            ..Detail::default()
        }
    }

    pub fn describe(&self) -> String {
        match (&self.prompt, &self.tool, &self.tool_use_id) {
            (Some(prompt), _, _) => {
                crate::text::truncate(prompt.lines().next().unwrap_or_default(), 72)
            }
            (None, Some(tool), Some(id)) => format!("{tool} {id}"),
            _ => String::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub commit: String,
    pub kind: Kind,
    #[serde(flatten)]
    pub detail: Detail,
    pub timestamp: String,
}

impl Record {
    pub fn new(commit: String, kind: Kind, detail: Detail) -> Record {
        Record {
            commit,
            kind,
            detail,
            timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        }
    }
}

/// How every checkpoint line of a transcript starts.
const LINE_START: &[u8] = b"{\"type\":\"checkpoint\"";

/// The checkpoints of a transcript, in order.
pub fn read(path: &Path) -> std::io::Result<Vec<Record>> {
    #[derive(Deserialize)]
    struct Line {
        record: Record,
    }
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, std::fs::File::open(path)?);
    let mut line = Vec::new();
    let mut out = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(out);
        }
        if line.starts_with(LINE_START)
            && let Ok(Line { record }) = serde_json::from_slice(&line)
        {
            out.push(record);
        }
    }
}

/// The checkpoints of the other sessions kept beside `transcript` (the same project) that were
/// written to since `since` (a record's timestamp): their work since then is not this
/// session's to undo.
pub(crate) fn others_since(transcript: &Path, since: &str) -> Vec<Vec<Record>> {
    let Ok(since) = chrono::DateTime::parse_from_rfc3339(since) else {
        return Vec::new();
    };
    let since: std::time::SystemTime = since.with_timezone(&chrono::Utc).into();
    let Some(dir) = transcript.parent() else {
        return Vec::new();
    };
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.as_path() != transcript && p.extension().is_some_and(|x| x == "jsonl"))
        .filter(|p| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since)
        })
        .filter_map(|p| read(&p).ok())
        .filter(|records| !records.is_empty())
        .collect()
}
