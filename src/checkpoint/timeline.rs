//! A session's checkpoints as the user picks among them: one entry per prompt, with the files
//! the agent changed while answering it and the checkpoints of its tool calls.

use super::record::{Kind, Record};
use super::shadow::{Shadow, ShadowError};

#[derive(Debug, Clone)]
pub struct PromptEntry {
    /// 1-based, in the order of the session.
    pub number: usize,
    /// Its checkpoint's place in the session's records.
    pub index: usize,
    pub prompt: String,
    pub timestamp: String,
    /// What the agent changed while answering it.
    pub changed: Vec<String>,
    /// The places of its tool calls' checkpoints in the records.
    pub tools: Vec<usize>,
}

pub async fn prompts(shadow: &Shadow, records: &[Record]) -> Result<Vec<PromptEntry>, ShadowError> {
    let mut out = Vec::new();
    for (index, record) in records.iter().enumerate() {
        if record.kind != Kind::Prompt {
            continue;
        }
        let turn = records[index + 1..]
            .iter()
            .position(|r| r.kind == Kind::Prompt)
            .map_or(&records[index + 1..], |end| {
                &records[index + 1..index + 1 + end]
            });
        let tools = turn
            .iter()
            .enumerate()
            .filter(|(_, r)| r.kind == Kind::Tool)
            .map(|(i, _)| index + 1 + i)
            .collect();
        // What the agent left: the last end of turn before the next prompt.
        let changed = match turn.iter().rev().find(|r| r.kind == Kind::End) {
            Some(end) if end.commit != record.commit => shadow
                .diff(&record.commit, &end.commit)
                .await?
                .into_iter()
                .map(|c| c.path)
                .collect(),
            _ => Vec::new(),
        };
        out.push(PromptEntry {
            number: out.len() + 1,
            index,
            prompt: record.detail.prompt.clone().unwrap_or_default(),
            timestamp: record.timestamp.clone(),
            changed,
            tools,
        });
    }
    Ok(out)
}

/// The record a user named: `3` or `#3` (the third prompt), or a commit prefix (any
/// checkpoint, tool calls' included).
pub fn find(records: &[Record], entries: &[PromptEntry], name: &str) -> Result<usize, String> {
    let number = name.trim_start_matches('#');
    if let Ok(n) = number.parse::<usize>()
        && name.len() < 4
    {
        return entries
            .iter()
            .find(|e| e.number == n)
            .map(|e| e.index)
            .ok_or_else(|| {
                format!(
                    "there is no prompt #{n} (the session has {})",
                    entries.len()
                )
            });
    }
    let matching: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| name.len() >= 4 && r.commit.starts_with(name))
        .map(|(i, _)| i)
        .collect();
    match matching.as_slice() {
        [] => Err(format!(
            "no checkpoint is named {name}; give a prompt number from --list or a checkpoint id"
        )),
        [one] => Ok(*one),
        // The same snapshot can serve several checkpoints (nothing changed in between); the
        // first is as good as any.
        [first, ..]
            if matching
                .iter()
                .all(|&i| records[i].commit == records[*first].commit) =>
        {
            Ok(*first)
        }
        _ => Err(format!(
            "{name} names more than one checkpoint; give more of its id"
        )),
    }
}

/// The list `ouro rewind --list` and `/rewind` show.
pub fn render(records: &[Record], entries: &[PromptEntry]) -> String {
    let mut out = String::new();
    for entry in entries {
        let when = entry
            .timestamp
            .get(..16)
            .unwrap_or(&entry.timestamp)
            .replace('T', " ");
        let prompt = crate::text::truncate(entry.prompt.lines().next().unwrap_or_default(), 60);
        let commit = records[entry.index].commit.get(..10).unwrap_or_default();
        out.push_str(&format!(
            "#{:<3} {when}  {commit}  {prompt}\n",
            entry.number
        ));
        if entry.changed.is_empty() {
            out.push_str("       no files changed\n");
        } else {
            out.push_str(&format!("       changed: {}\n", entry.changed.join(", ")));
        }
        for &i in &entry.tools {
            let r = &records[i];
            out.push_str(&format!(
                "       {}  before {} {}\n",
                r.commit.get(..10).unwrap_or_default(),
                r.detail.tool.as_deref().unwrap_or("tool"),
                r.detail.tool_use_id.as_deref().unwrap_or("")
            ));
        }
    }
    if entries.is_empty() {
        out.push_str("This session has no checkpoints yet.\n");
    }
    out
}
