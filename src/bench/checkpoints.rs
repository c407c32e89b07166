//! `--checkpoints`: what a checkpoint costs on a generated project: the first snapshot (every
//! file read once), one taken before a prompt when nothing changed and when one file did (the
//! whole project is looked at), and one taken before a tool call after an Edit (only the
//! edited file is looked at).

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::BenchError;
use super::fixture::{Fixture, WorkDir};
use super::measure::{Spread, ms};
use crate::checkpoint::record::Detail;
use crate::checkpoint::shadow::Shadow;
use crate::checkpoint::{CheckpointConfig, Checkpoints, Kind};

#[derive(Debug, Clone, Serialize)]
pub struct CheckpointCost {
    pub files: usize,
    pub runs: usize,
    pub(crate) first_ms: f64,
    pub(crate) unchanged_ms: Spread,
    pub(crate) one_file_changed_ms: Spread,
    pub(crate) after_an_edit_ms: Spread,
}

pub(crate) async fn measure(
    files: usize,
    runs: usize,
    seed: u64,
) -> Result<CheckpointCost, BenchError> {
    let dir = WorkDir::new("checkpoints")
        .map_err(|e| BenchError::io("could not create the fixture directory", e))?;
    let root = dir.path().join("project");
    std::fs::create_dir_all(&root)
        .map_err(|e| BenchError::io("could not create the fixture directory", e))?;
    let fixture = Fixture::generate(&root, files, seed)
        .map_err(|e| BenchError::io("could not write the fixture tree", e))?;
    let shadow = Shadow::new(dir.path().join("shadow"), root.clone());
    let checkpoints = Checkpoints::with_shadow(shadow, &root, "bench", CheckpointConfig::default());
    let checkpoints = &checkpoints;
    let take = |kind| async move {
        let started = Instant::now();
        checkpoints
            .take(kind, Detail::default())
            .await
            .ok_or_else(|| BenchError::Failed(checkpoints.take_notice().unwrap_or_default()))?;
        Ok::<f64, BenchError>(ms(started.elapsed()))
    };
    let first_ms = take(Kind::Prompt).await?;
    let mut unchanged = Vec::with_capacity(runs);
    let mut one_file = Vec::with_capacity(runs);
    let mut after_edit = Vec::with_capacity(runs);
    for run in 0..runs {
        unchanged.push(take(Kind::Prompt).await?);
        let file = &fixture.files[run % fixture.files.len()];
        touch(&root, &file.rel, run)?;
        one_file.push(take(Kind::Prompt).await?);
        touch(&root, &file.rel, run + runs)?;
        checkpoints.wrote(Some(vec![file.rel.clone()]));
        after_edit.push(take(Kind::Tool).await?);
    }
    let spread = |values: &[f64]| {
        Spread::of(values).ok_or_else(|| BenchError::Failed("no checkpoint was timed".into()))
    };
    Ok(CheckpointCost {
        files,
        runs,
        first_ms,
        unchanged_ms: spread(&unchanged)?,
        one_file_changed_ms: spread(&one_file)?,
        after_an_edit_ms: spread(&after_edit)?,
    })
}

/// Appends a line, as an edit would.
fn touch(root: &Path, rel: &str, n: usize) -> Result<(), BenchError> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(root.join(rel))
        .and_then(|mut f| writeln!(f, "// edit {n}"))
        .map_err(|e| BenchError::io("could not change a fixture file", e))
}
