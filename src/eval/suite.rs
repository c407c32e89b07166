//! A suite: a directory of task directories (native or Harbor), or one task directory, read
//! in the order of their ids.

use std::path::{Path, PathBuf};

use super::task::{Broken, Task};

/// Every task of `suite`, by id: a directory holding `task.md` is one task; any other
/// directory is a suite of them.
pub(super) fn load_suite(suite: &Path) -> Result<Vec<Result<Task, Broken>>, std::io::Error> {
    if is_task(suite) {
        return Ok(vec![load(suite)]);
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(suite)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && is_task(p))
        .collect();
    dirs.sort();
    Ok(dirs.iter().map(|d| load(d)).collect())
}

fn is_task(dir: &Path) -> bool {
    dir.join("task.md").exists() || dir.join("task.toml").exists()
}

fn load(dir: &Path) -> Result<Task, Broken> {
    if dir.join("task.md").exists() {
        super::task::load_native(dir)
    } else {
        super::harbor::load(dir)
    }
}
