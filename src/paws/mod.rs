//! The PAWS bundle format, below every front end that reads or writes it: `cats` and `dogs`
//! (`bundle/`), and the agent foundry's run artifacts (`daemon/`). Markers and fences
//! (`format`), the v1 front matter of both kinds of bundle (`front`), the reader of a reply or
//! bundle (`parse`), the writer of a dogs bundle from a change set (`artifact`), and a context bundle made
//! into a tree of files (`tree`). `docs/paws-format.md` has the format facts.

pub mod artifact;
pub mod format;
pub mod front;
pub mod parse;
pub mod tree;

use std::path::PathBuf;

/// A file name a bundle cannot carry.
#[derive(Debug, thiserror::Error)]
pub enum PawsError {
    #[error("{path}: a file name with a newline cannot go in a bundle")]
    NewlineInName { path: PathBuf },
    #[error(
        "{path}: a 🐕 marker cannot carry this file name exactly (spaces at its ends, or a name ending in `(Content:Base64)`)"
    )]
    Unmarkable { path: PathBuf },
    #[error(transparent)]
    Front(#[from] front::FrontError),
}
