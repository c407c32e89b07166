//! The tree an agent's run starts in: a directory as it is, a context bundle written out as a
//! fresh tree (`--context`), or a new git worktree of the project (`--worktree`, or the
//! definition's `isolation: worktree`), so the run never touches the checked-out files.

use std::path::{Path, PathBuf};

use super::instance::Instance;
use crate::checkpoint::worktree::{WorktreeError, Worktrees};
use crate::paws::tree::TreeError;

/// How the caller asked for the starting tree.
#[derive(Debug, Clone, Default)]
pub struct StartAt {
    /// `--dir`: work there (with `context`: write the bundle there, into an empty folder).
    pub dir: Option<PathBuf>,
    /// `--context CATS.md`.
    pub context: Option<PathBuf>,
    /// `--worktree`.
    pub worktree: bool,
}

/// The tree made ready, and a sentence saying what was made (none for a plain directory).
#[derive(Debug, Clone, PartialEq)]
pub struct StartTree {
    pub dir: PathBuf,
    pub made: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "--worktree makes the agent's tree from the project; it cannot be combined with --dir or --context"
    )]
    WorktreeAndTree,
    #[error(
        "{} is not empty; --context writes the bundle into a new or empty folder (leave out --dir to get a fresh one)",
        dir.display()
    )]
    NotEmpty { dir: PathBuf },
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error(transparent)]
    Worktree(#[from] WorktreeError),
}

/// Makes the starting tree of a run of `instance` asked for in `cwd`; `isolated` is the
/// definition's `isolation: worktree`, used when nothing else is asked for.
pub fn prepare(
    instance: &Instance,
    cwd: &Path,
    at: &StartAt,
    isolated: bool,
) -> Result<StartTree, StartError> {
    let dir = at.dir.as_ref().map(|d| cwd.join(d));
    if at.worktree && (dir.is_some() || at.context.is_some()) {
        return Err(StartError::WorktreeAndTree);
    }
    if let Some(bundle) = &at.context {
        let bundle = cwd.join(bundle);
        let into = match dir {
            Some(dir) => {
                let empty = std::fs::read_dir(&dir).map_or(true, |mut e| e.next().is_none());
                if !empty {
                    return Err(StartError::NotEmpty { dir });
                }
                dir
            }
            None => instance.work(&fresh_id()),
        };
        let files = crate::paws::tree::materialise(&bundle, &into)?;
        return Ok(StartTree {
            made: Some(format!(
                "wrote the {files} files of {} into {} as the starting tree",
                bundle.display(),
                into.display()
            )),
            dir: into,
        });
    }
    if let Some(dir) = dir {
        return Ok(StartTree { dir, made: None });
    }
    if at.worktree || isolated {
        let worktrees = Worktrees::of(cwd)?;
        let id = format!("agent-{}-{}", short(&instance.name), fresh_id());
        let manifest = worktrees.start(Some(&id), None)?;
        return Ok(StartTree {
            made: Some(format!(
                "made the worktree {id} (branch {}) at {}; `ouro worktree merge {id}` takes the agent's commits, its artifact has every change",
                manifest.branch,
                manifest.path.display()
            )),
            dir: manifest.path,
        });
    }
    Ok(StartTree {
        dir: cwd.to_path_buf(),
        made: None,
    })
}

fn fresh_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

/// An instance name short enough that the worktree id stays within 64 characters.
fn short(name: &str) -> &str {
    match name.char_indices().nth(40) {
        Some((cut, _)) => &name[..cut],
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(dir: &Path) -> Instance {
        Instance {
            name: "fixer".into(),
            dir: dir.join("instances/fixer"),
        }
    }

    fn bundle(dir: &Path) -> PathBuf {
        let entries = [crate::paws::format::Entry {
            path: b"src/a.rs".to_vec(),
            content: b"fn a() {}\n".to_vec(),
        }];
        let path = dir.join("context.md");
        std::fs::write(&path, crate::paws::format::bundle(&entries, false)).unwrap();
        path
    }

    #[test]
    fn a_context_bundle_becomes_a_fresh_tree_or_fills_an_empty_dir() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let at = StartAt {
            context: Some(bundle(cwd.path())),
            ..StartAt::default()
        };
        let made = prepare(&instance(home.path()), cwd.path(), &at, false).unwrap();
        assert!(
            made.dir
                .starts_with(home.path().join("instances/fixer/work"))
        );
        assert_eq!(
            std::fs::read_to_string(made.dir.join("src/a.rs")).unwrap(),
            "fn a() {}\n"
        );
        assert!(made.made.unwrap().contains("1 files"));

        let at = StartAt {
            dir: Some("into".into()),
            ..at
        };
        let made = prepare(&instance(home.path()), cwd.path(), &at, false).unwrap();
        assert_eq!(made.dir, cwd.path().join("into"));
        assert!(made.dir.join("src/a.rs").exists());
        let again = prepare(&instance(home.path()), cwd.path(), &at, false).unwrap_err();
        assert!(matches!(again, StartError::NotEmpty { .. }), "{again}");
    }

    #[test]
    fn a_plain_dir_is_used_as_it_is_and_worktree_combines_with_nothing() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let made = prepare(
            &instance(home.path()),
            cwd.path(),
            &StartAt::default(),
            false,
        )
        .unwrap();
        assert_eq!(
            made,
            StartTree {
                dir: cwd.path().to_path_buf(),
                made: None
            }
        );
        let at = StartAt {
            dir: Some("d".into()),
            worktree: true,
            ..StartAt::default()
        };
        let err = prepare(&instance(home.path()), cwd.path(), &at, false).unwrap_err();
        assert!(matches!(err, StartError::WorktreeAndTree));
        // An explicit directory wins over the definition's isolation.
        let at = StartAt {
            dir: Some("d".into()),
            ..StartAt::default()
        };
        let made = prepare(&instance(home.path()), cwd.path(), &at, true).unwrap();
        assert_eq!(made.dir, cwd.path().join("d"));
    }
}
