//! A session's checkpoints as the user picks among them: one entry per prompt, with the files
//! the agent changed while answering it and the checkpoints of its tool calls.

use super::record::{Kind, Record};
use super::shadow::Shadow;

#[derive(Debug, Clone)]
pub struct PromptEntry {
    /// 1-based, in the order of the session.
    pub number: usize,
    /// Its checkpoint's place in the session's records.
    pub index: usize,
    pub prompt: String,
    /// What the agent changed while answering it; `None` once its checkpoints were pruned.
    pub changed: Option<Vec<String>>,
    /// The places of its tool calls' checkpoints in the records.
    pub tools: Vec<usize>,
}

pub async fn prompts(shadow: &Shadow, records: &[Record]) -> Vec<PromptEntry> {
    let mut out = Vec::new();
    for (index, record) in records.iter().enumerate() {
        if record.kind != Kind::Prompt {
            continue;
        }
        // A turn's records run to the next prompt, or to a rewind, which is no part of it.
        let turn = records[index + 1..]
            .iter()
            .position(|r| matches!(r.kind, Kind::Prompt | Kind::Rewind))
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
                .await
                .ok()
                .map(|changes| changes.into_iter().map(|c| c.path).collect()),
            _ => Some(Vec::new()),
        };
        out.push(PromptEntry {
            number: out.len() + 1,
            index,
            prompt: record.detail.prompt.clone().unwrap_or_default(),
            changed,
            tools,
        });
    }
    out
}

/// The record a user named: `3` or `#3` (the third prompt), or a commit prefix (any
/// checkpoint, tool calls' included).
pub fn find(records: &[Record], entries: &[PromptEntry], name: &str) -> Result<usize, String> {
    let number = name.trim_start_matches('#');
    // `#12` is always a prompt; a bare number is one when the session has that many prompts
    // (a checkpoint id may be all digits too).
    if let Ok(n) = number.parse::<usize>()
        && (name.starts_with('#') || n <= entries.len())
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

/// A checkpoint's id as shown and typed: its first ten characters.
pub fn short_id(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}

/// `2026-11-23T19:09:33.060Z` as `2026-11-23 19:09`.
fn minute(timestamp: &str) -> String {
    timestamp.get(..16).unwrap_or(timestamp).replace('T', " ")
}

/// The list `ouro rewind --list` and `/rewind` show.
pub fn render(records: &[Record], entries: &[PromptEntry]) -> String {
    let mut out = String::new();
    for entry in entries {
        let record = &records[entry.index];
        let when = minute(&record.timestamp);
        let prompt = crate::text::truncate(entry.prompt.lines().next().unwrap_or_default(), 60);
        let commit = short_id(&record.commit);
        out.push_str(&format!(
            "#{:<3} {when}  {commit}  {prompt}\n",
            entry.number
        ));
        match &entry.changed {
            None => out.push_str("       its checkpoints were pruned\n"),
            Some(changed) if changed.is_empty() => out.push_str("       no files changed\n"),
            Some(changed) => {
                out.push_str(&format!("       changed: {}\n", changed.join(", ")));
            }
        }
        for &i in &entry.tools {
            let r = &records[i];
            out.push_str(&format!(
                "       {}  before {} {}\n",
                short_id(&r.commit),
                r.detail.tool.as_deref().unwrap_or("tool"),
                r.detail.tool_use_id.as_deref().unwrap_or("")
            ));
        }
    }
    for r in records.iter().filter(|r| r.kind == Kind::Rewind) {
        let (when, id) = (minute(&r.timestamp), short_id(&r.commit));
        out.push_str(&format!(
            "rewind at {when}: the files before it are {id} (ouro rewind --to {id} --code undoes it)\n"
        ));
    }
    if entries.is_empty() {
        out.push_str("This session has no checkpoints yet.\n");
    }
    out
}
