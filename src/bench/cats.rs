//! `--cats`: bundling a large tree (10,000 files, 100 MB) with `ouro cats`, against `find` and
//! `cat` reading the same files as the floor, and applying that bundle with `ouro dogs` into an
//! empty directory, against the same floor and against `cp -r` writing the same files there
//! (creating files costs what the file system makes it cost: on ext4 without a journal, say,
//! each new inode is searched for past every one freed in the last seconds). Each is a process
//! run start to end, median of three.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Serialize;

use super::BenchError;
use super::fixture::{Rng, WorkDir};
use super::measure::median;

const FILES: usize = 10_000;
const FILE_BYTES: usize = 10_000;
const RUNS: usize = 3;

#[derive(Debug, Clone, Serialize)]
pub struct CatsCost {
    pub files: usize,
    pub megabytes: f64,
    pub(crate) cats_ms: f64,
    /// `find -type f | xargs cat > /dev/null` over the same tree.
    pub(crate) floor_ms: f64,
    pub(crate) dogs_ms: f64,
    /// `cp -r` of the tree into an empty directory: the same files written, nothing checked.
    pub(crate) copy_ms: f64,
}

pub(crate) fn measure() -> Result<CatsCost, BenchError> {
    let dir = WorkDir::new("cats").map_err(|e| BenchError::io("could not create a work dir", e))?;
    let tree = dir.path().join("tree");
    generate(&tree).map_err(|e| BenchError::io("could not generate the tree", e))?;
    let exe = std::env::current_exe()
        .map_err(|e| BenchError::io("could not find the ouro executable", e))?;
    // Each run writes a new file: replacing the last run's 100 MB bundle would time the file
    // system freeing it (200 ms on a disk mounted with `discard`), which the floor never pays.
    let mut n = 0;
    let cats_ms = timed(|| {
        n += 1;
        let bundle = dir.path().join(format!("bundle-{n}.md"));
        run(Command::new(&exe)
            .arg("cats")
            .arg(".")
            .arg("-o")
            .arg(&bundle)
            .current_dir(&tree))
    })?;
    let bundle_arg = dir.path().join("bundle-1.md").display().to_string();
    let floor_ms = timed(|| {
        run(Command::new("sh")
            .args(["-c", "find . -type f -print0 | xargs -0 cat > /dev/null"])
            .current_dir(&tree))
    })?;
    // dogs and `cp -r` take turns: creating files costs what the file system's state makes it
    // cost at that moment (freed inodes slow the search for new ones for some seconds), so each
    // run of one is timed beside a run of the other, in the same state.
    let (dogs_ms, copy_ms) = timed_in_turns(
        |n| {
            let target = dir.path().join(format!("applied-{n}"));
            std::fs::create_dir_all(&target)
                .map_err(|e| BenchError::io("could not create a target", e))?;
            run(Command::new(&exe)
                .args(["dogs", &bundle_arg, "-y"])
                .current_dir(&target))
        },
        |n| {
            let target = dir.path().join(format!("copied-{n}"));
            run(Command::new("cp").arg("-r").arg(&tree).arg(&target))
        },
    )?;
    Ok(CatsCost {
        files: FILES,
        megabytes: (FILES * FILE_BYTES) as f64 / 1e6,
        cats_ms,
        floor_ms,
        dogs_ms,
        copy_ms,
    })
}

/// The median wall time of [`RUNS`] runs of `f`, in milliseconds.
fn timed(mut f: impl FnMut() -> Result<(), BenchError>) -> Result<f64, BenchError> {
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        times.push(once(&mut f)?);
    }
    median_of(&times)
}

/// The wall time of one run of `f`, in milliseconds.
fn once(f: impl FnOnce() -> Result<(), BenchError>) -> Result<f64, BenchError> {
    let started = Instant::now();
    f()?;
    Ok(started.elapsed().as_secs_f64() * 1000.0)
}

fn median_of(times: &[f64]) -> Result<f64, BenchError> {
    median(times).ok_or_else(|| BenchError::Failed("nothing was timed".into()))
}

/// The median wall times of [`RUNS`] runs each of `a` and `b`, run in turns (`a` first), in
/// milliseconds; each is given its run's number.
fn timed_in_turns(
    mut a: impl FnMut(usize) -> Result<(), BenchError>,
    mut b: impl FnMut(usize) -> Result<(), BenchError>,
) -> Result<(f64, f64), BenchError> {
    let (mut times_a, mut times_b) = (Vec::with_capacity(RUNS), Vec::with_capacity(RUNS));
    for n in 1..=RUNS {
        times_a.push(once(|| a(n))?);
        times_b.push(once(|| b(n))?);
    }
    Ok((median_of(&times_a)?, median_of(&times_b)?))
}

fn run(command: &mut Command) -> Result<(), BenchError> {
    let out = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| BenchError::io("could not run a bundle command", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(BenchError::Failed(format!(
            "a bundle command failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}

/// 10,000 text files of 10 kB in 100 folders, from a fixed seed.
fn generate(root: &Path) -> std::io::Result<()> {
    let mut rng = Rng::new(7);
    let words = [
        "alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta",
    ];
    for i in 0..FILES {
        let dir = root.join(format!("d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        let mut text = String::with_capacity(FILE_BYTES);
        while text.len() < FILE_BYTES - 16 {
            text.push_str(words[rng.below(words.len())]);
            text.push(if rng.below(10) == 0 { '\n' } else { ' ' });
        }
        text.truncate(FILE_BYTES - 1);
        text.push('\n');
        std::fs::write(dir.join(format!("f{i:05}.txt")), text)?;
    }
    Ok(())
}
