//! A suite: a directory of task directories (native or Harbor), or one task directory, read
//! in the order of their ids.

use std::path::{Path, PathBuf};

use super::task::{Broken, Task};

/// Every task of `suite`, by id: a directory holding `task.md` is one task; any other
/// directory is a suite of them. With `docker`, a Harbor task with a Dockerfile runs in its
/// image.
pub(super) fn load_suite(
    suite: &Path,
    docker: bool,
) -> Result<Vec<Result<Task, Broken>>, std::io::Error> {
    Ok(task_dirs(suite)?.iter().map(|d| load(d, docker)).collect())
}

/// Whether any task of `suite` is a Harbor task with an image to build.
pub(super) fn has_images(suite: &Path) -> bool {
    task_dirs(suite).is_ok_and(|dirs| {
        dirs.iter()
            .any(|d| !d.join("task.md").exists() && super::harbor::dockerfile(d).is_some())
    })
}

fn task_dirs(suite: &Path) -> Result<Vec<PathBuf>, std::io::Error> {
    if is_task(suite) {
        return Ok(vec![suite.to_path_buf()]);
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(suite)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && is_task(p))
        .collect();
    dirs.sort();
    Ok(dirs)
}

fn is_task(dir: &Path) -> bool {
    dir.join("task.md").exists() || dir.join("task.toml").exists()
}

fn load(dir: &Path, docker: bool) -> Result<Task, Broken> {
    if dir.join("task.md").exists() {
        super::task::load_native(dir)
    } else {
        super::harbor::load(dir, docker)
    }
}
