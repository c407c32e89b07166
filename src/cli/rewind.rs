//! `ouro rewind`: the checkpoints of a session for scripts: list them, show what changed since
//! one, or put the code and/or the conversation back to one.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::checkpoint::record::{self, Kind};
use crate::checkpoint::{CheckpointConfig, Checkpoints, timeline};
use crate::session::{self, Transcript};

#[derive(Debug, Clone, clap::Args)]
pub struct RewindArgs {
    /// The session (an id, or a transcript file); the latest session of this directory when
    /// neither this nor --continue is given.
    #[arg(long, short = 'r', value_name = "ID")]
    pub resume: Option<String>,
    /// The latest session of this directory.
    #[arg(long = "continue", short = 'c', conflicts_with = "resume")]
    pub continue_last: bool,
    /// List the session's prompts, the files each changed, and their checkpoints (the default).
    #[arg(long, conflicts_with_all = ["to", "diff"])]
    pub list: bool,
    /// Go back to this checkpoint: a prompt number from --list (`3`) or a checkpoint id.
    #[arg(long, value_name = "CHECKPOINT", conflicts_with = "diff")]
    pub to: Option<String>,
    /// Show what changed in the files since this checkpoint.
    #[arg(long, value_name = "CHECKPOINT")]
    pub diff: Option<String>,
    /// Restore the files only.
    #[arg(long, requires = "to", conflicts_with_all = ["conversation", "both"])]
    pub code: bool,
    /// Cut the conversation back only (the files stay as they are).
    #[arg(long, requires = "to", conflicts_with = "both")]
    pub conversation: bool,
    /// Both (the default for a prompt's checkpoint).
    #[arg(long, requires = "to")]
    pub both: bool,
    /// Also overwrite files that changed outside ouro since the checkpoint.
    #[arg(long, requires = "to")]
    pub force: bool,
}

pub async fn run(args: &RewindArgs, cwd: &Path) -> anyhow::Result<String> {
    let path = session_path(args, cwd)?;
    // Only going back reads the conversation; listing needs the first line and the checkpoints.
    let (session_id, model) =
        session::transcript::meta(&path)?.context("the transcript has no session id")?;
    let records =
        record::read(&path).with_context(|| format!("could not read {}", path.display()))?;
    let root = crate::app::project_root(cwd);
    let (layered, _) = crate::app::load_settings(&crate::app::Options::default(), cwd)?;
    let mut config = CheckpointConfig::from_settings(&layered.merged().checkpoints);
    // Going back must work even where new checkpoints are no longer taken.
    config.enabled = true;
    let checkpoints = Checkpoints::new(&root, &session_id, config)
        .context("ouro has no home folder to keep checkpoints in (set OURO_HOME)")?;
    let entries = timeline::prompts(checkpoints.shadow(), &records).await;
    if let Some(name) = &args.diff {
        let index = timeline::find(&records, &entries, name).map_err(anyhow::Error::msg)?;
        let now = checkpoints
            .snapshot_tree()
            .await
            .map_err(anyhow::Error::msg)?;
        let patch = checkpoints
            .shadow()
            .patch(&records[index].commit, &now)
            .await?;
        return Ok(if patch.is_empty() {
            "Nothing changed since that checkpoint.\n".into()
        } else {
            patch
        });
    }
    let Some(name) = &args.to else {
        return Ok(format!(
            "Session {session_id}\n{}",
            timeline::render(&records, &entries)
        ));
    };
    let index = timeline::find(&records, &entries, name).map_err(anyhow::Error::msg)?;
    let record = &records[index];
    let loaded = session::transcript::load(&path)?;
    let is_prompt = record.kind == Kind::Prompt;
    let cut = crate::engine::checkpoints::at_prompt(&loaded.messages, record);
    let (code, conversation) = match (args.code, args.conversation, args.both) {
        (true, _, _) => (true, false),
        (_, true, _) => (false, true),
        (_, _, true) => (true, true),
        // The default: both when the conversation still holds the prompt.
        _ => (true, is_prompt && cut.is_some()),
    };
    if conversation && !is_prompt {
        bail!(
            "{name} is the checkpoint of a tool call; only a prompt's checkpoint can take the conversation back (use --code)"
        );
    }
    // Checked before any file is touched: a rewind does all it was asked or nothing.
    let cut = match (conversation, cut) {
        (true, None) => bail!(
            "the conversation no longer holds that prompt (it was compacted or rewound since); only the code can go back to it (--code)"
        ),
        (_, cut) => cut,
    };
    let mut out = String::new();
    let mut failed = false;
    if code {
        let plan = checkpoints
            .plan_restore(&path, &records, index)
            .await
            .map_err(anyhow::Error::msg)?;
        let applied = checkpoints
            .restore(&plan, args.force)
            .await
            .map_err(anyhow::Error::msg)?;
        failed = !applied.failed.is_empty();
        out.push_str(&applied.report());
        out.push_str(&format!(
            "\nTo undo this: ouro rewind --to {} --code\n",
            timeline::short_id(&plan.now)
        ));
    }
    let mut transcript = Transcript::open(&path, &session_id, cwd, &model)?;
    for taken in checkpoints.drain() {
        transcript.append_checkpoint(&taken)?;
    }
    if let (true, Some(at)) = (conversation, cut) {
        transcript.append_compaction(&loaded.messages[..at])?;
        out.push_str(&format!(
            "The conversation now ends before prompt #{}: {}\n",
            entry_number(&entries, index),
            crate::text::truncate(record.detail.prompt.as_deref().unwrap_or_default(), 72)
        ));
    }
    if failed {
        print!("{out}");
        bail!("some files could not be restored (see above)");
    }
    Ok(out)
}

fn entry_number(entries: &[timeline::PromptEntry], index: usize) -> usize {
    entries
        .iter()
        .find(|e| e.index == index)
        .map_or(0, |e| e.number)
}

fn session_path(args: &RewindArgs, cwd: &Path) -> anyhow::Result<PathBuf> {
    match &args.resume {
        Some(id) => {
            let id = session::resolve(cwd, id).map_err(|matching| {
                anyhow::anyhow!(
                    "`{id}` starts {} sessions here; give more of the id",
                    matching.len()
                )
            })?;
            session::locate(cwd, &id).with_context(|| {
                format!("no session {id} in this directory (`ouro rewind` lists the latest one's checkpoints)")
            })
        }
        None => session::list(cwd)
            .into_iter()
            .next()
            .map(|s| s.path)
            .context("this directory has no sessions yet"),
    }
}
