//! `rewind_files`: the files back as they were before the prompt whose message the SDK names
//! (its `uuid`, echoed with `--replay-user-messages`). Files changed outside ouro since are
//! kept and named; `dryRun` only says what would change.

use std::path::Path;

use serde_json::{Value, json};

use crate::checkpoint::Checkpoints;
use crate::checkpoint::record::{self, Kind};

pub(super) async fn rewind_files(
    checkpoints: Option<&Checkpoints>,
    transcript: Option<&Path>,
    id: &str,
    dry_run: bool,
) -> Result<Value, String> {
    let (Some(checkpoints), Some(transcript)) = (checkpoints, transcript) else {
        return Ok(cannot(
            "this session keeps no checkpoints (it is not saved, or \"checkpoints\" are off in the settings)",
        ));
    };
    let records = record::read(transcript).map_err(|e| e.to_string())?;
    let Some(index) = records
        .iter()
        .position(|r| r.kind == Kind::Prompt && r.detail.message_id.as_deref() == Some(id))
    else {
        return Ok(cannot(&format!(
            "no checkpoint belongs to user message {id} (pass --replay-user-messages to learn the ids)"
        )));
    };
    let plan = checkpoints
        .plan_restore(transcript, &records, index)
        .await?;
    let would: Vec<&str> = plan.changes.iter().map(|c| c.path.as_str()).collect();
    if dry_run {
        return Ok(json!({"canRewind": true, "filesChanged": would}));
    }
    let applied = checkpoints.restore(&plan, false).await?;
    let changed: Vec<&String> = applied.restored.iter().chain(&applied.removed).collect();
    let mut out = json!({"canRewind": true, "filesChanged": changed});
    if !applied.kept.is_empty() {
        out["keptFiles"] = json!(applied.kept);
        out["message"] = json!(applied.report());
    }
    Ok(out)
}

fn cannot(reason: &str) -> Value {
    json!({"canRewind": false, "error": reason})
}
