//! `ouro cats` and `ouro dogs`: context bundles in PAWS's format for any chat model, and the
//! model's reply applied back, checked whole first, shown, confirmed, optionally verified and
//! taken back exactly. Compatible with PAWS's own tools both ways (`format`), without the ways
//! they lose data (`docs/paws-format.md` lists them).

mod apply;
pub mod cats;
mod curate;
pub mod dogs;
mod edit;
mod journal;
mod plan;
mod review;

use std::path::PathBuf;

pub(crate) use crate::paws::{format, front, parse};

pub use cats::{CatsOptions, cats};
pub use curate::CurateOptions;
pub use dogs::DogsOptions;

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "nothing to bundle: name files, directories or globs (run `ouro cats .` for this whole directory)"
    )]
    NothingToBundle,
    #[error("`{arg}` names no file, directory or file matching it as a glob")]
    NoMatch { arg: String },
    #[error("`{pattern}` is not a glob: {reason}")]
    BadGlob { pattern: String, reason: String },
    #[error("could not walk {dir}: {reason}")]
    Walk { dir: PathBuf, reason: String },
    #[error(
        "{path} is outside this directory; run cats from a directory that contains every file to bundle"
    )]
    Outside { path: PathBuf },
    #[error(transparent)]
    Paws(#[from] crate::paws::PawsError),
    #[error(transparent)]
    Front(#[from] front::FrontError),
    #[error(
        "there is no terminal to confirm on; pass -y to apply without asking, and --yes-protected as well when the reply writes protected files (under .git, settings, hooks)"
    )]
    NoTerminal,
    #[error("--ai-curate failed: {0}")]
    Curate(String),
    #[error("could not write {path}: {source}; nothing was kept{undone}")]
    Apply {
        path: PathBuf,
        #[source]
        source: std::io::Error,
        /// Empty when every written file was taken back; else what could not be.
        undone: String,
    },
    #[error("every file has its new content, but {why}; run `ouro dogs --recover` here to finish")]
    Leftovers { why: String },
    #[error(transparent)]
    Worktree(#[from] crate::checkpoint::worktree::WorktreeError),
    #[error("could not restore every file: {failed}")]
    Restore { failed: String },
}
