//! `ouro dogs`: a model's reply applied to a directory, all or nothing, after the user saw
//! what it does; optionally verified by a command and taken back exactly when that fails.
//!
//! Exit codes: 0 applied (and verified, or a versioned bundle with no files: nothing to
//! apply), 1 verification failed or the answer held no changes,
//! 2 bundle rejected or not confirmed (nothing written), 3 the model asked for more context
//! (nothing written).

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

use super::BundleError;
use super::apply;
use super::journal;
use super::parse::{self, Reply};
use super::plan::{self, Change};
use super::review;
use crate::checkpoint::worktree::Worktrees;

pub struct DogsOptions {
    /// A file, or `-` for stdin.
    pub bundle: String,
    pub dir: PathBuf,
    pub yes: bool,
    pub dry_run: bool,
    pub verify: Option<String>,
    pub revert_on_fail: bool,
    /// A cats bundle whose manifest says what the files were when they were bundled.
    pub manifest: Option<PathBuf>,
    /// Apply even over files that changed since they were bundled.
    pub force: bool,
    /// Review file by file and hunk by hunk in a full-screen view first.
    pub interactive: bool,
    /// Where the review's comments go, for the next prompt to the model.
    pub feedback: Option<PathBuf>,
    /// Apply inside this worktree of the project holding `dir`, and checkpoint it.
    pub worktree: Option<String>,
    /// Write protected files without the typed yes (`--yes-protected`, for scripts); each is
    /// named on stderr.
    pub yes_protected: bool,
    /// Resolve an apply that was cut off, instead of applying a bundle.
    pub recover: bool,
    /// With `recover`: undo it rather than finish it.
    pub rollback: bool,
}

pub(crate) const APPLIED: i32 = 0;
pub(crate) const VERIFY_FAILED: i32 = 1;
/// The answer holds no bundle at all (a plain code block, prose).
pub(crate) const NO_CHANGES: i32 = 1;
pub(crate) const REJECTED: i32 = 2;
pub(crate) const CONTEXT_REQUESTED: i32 = 3;

pub fn run(options: &DogsOptions) -> Result<i32, BundleError> {
    let Some(id) = &options.worktree else {
        return match options.recover {
            true => recover_in(options, &options.dir),
            false => apply_in(options, &options.dir),
        };
    };
    let worktrees = Worktrees::of(&options.dir)?;
    let manifest = worktrees.load(id)?;
    if options.recover {
        return recover_in(options, &manifest.path);
    }
    let code = apply_in(options, &manifest.path)?;
    if code == APPLIED && !options.dry_run {
        let note = Path::new(&options.bundle).file_name().map_or_else(
            || "a bundle from stdin".into(),
            |n| n.to_string_lossy().into_owned(),
        );
        if let Some(cp) = worktrees.checkpoint(id, &note)? {
            eprintln!(
                "ouro dogs: checkpoint {} of worktree {id} ({})",
                cp.id, cp.tag
            );
        }
    }
    Ok(code)
}

/// `--recover`: finishes (or rolls back) the apply a journal in `dir` records.
fn recover_in(options: &DogsOptions, dir: &Path) -> Result<i32, BundleError> {
    let dir = target(dir)?;
    let journal = match journal::pending(&dir) {
        Ok(Some(journal)) => journal,
        Ok(None) => {
            eprintln!(
                "ouro dogs: no cut-off apply in {}; nothing to recover",
                dir.display()
            );
            return Ok(APPLIED);
        }
        Err(why) => {
            eprintln!(
                "ouro dogs: {why}; remove it by hand once you have checked the files it names"
            );
            return Ok(REJECTED);
        }
    };
    // An apply cut off during its verification (`--revert-on-fail`) was never verified.
    let verifying = journal.state == journal::State::Verifying;
    if verifying {
        eprintln!(
            "ouro dogs: the cut-off apply was being verified (--revert-on-fail), so it is rolled back"
        );
    }
    match journal::settle(&dir, &journal, options.rollback || verifying) {
        Ok(journal::Settled::Finished(n)) => {
            eprintln!("ouro dogs: finished the cut-off apply: {n} file(s) have their new content");
        }
        Ok(journal::Settled::RolledBack(n))
            if journal.state == journal::State::Staging && !options.rollback =>
        {
            eprintln!(
                "ouro dogs: the cut-off apply had changed no file yet (it was still staging), so nothing was applied; its {n} staged file(s) are removed"
            );
        }
        Ok(journal::Settled::RolledBack(n))
            if journal.state == journal::State::RollingBack && !options.rollback =>
        {
            eprintln!(
                "ouro dogs: the cut-off apply was being undone when it stopped, so the undo is finished rather than the apply: {n} file(s) are as they were before it"
            );
        }
        Ok(journal::Settled::RolledBack(n)) => {
            eprintln!(
                "ouro dogs: rolled back the cut-off apply: {n} file(s) are as they were before it"
            );
        }
        Err(why) => {
            eprintln!(
                "ouro dogs: could not resolve the cut-off apply: {why}; fix that and run --recover again"
            );
            return Ok(REJECTED);
        }
    }
    Ok(APPLIED)
}

fn target(dir: &Path) -> Result<PathBuf, BundleError> {
    dir.canonicalize().map_err(|source| BundleError::Io {
        action: "open the target directory",
        path: dir.to_path_buf(),
        source,
    })
}

fn apply_in(options: &DogsOptions, dir: &Path) -> Result<i32, BundleError> {
    let dir = target(dir)?;
    match journal::pending(&dir) {
        Ok(None) => {}
        Ok(Some(journal)) => {
            let shown = options.dir.display();
            eprintln!(
                "ouro dogs: an apply in {} was cut off (pid {}, started {}, {} file(s)); nothing else is applied here until it is resolved:\n  ouro dogs --recover --dir {shown}             finishes it\n  ouro dogs --recover --rollback --dir {shown}  puts every old file back",
                dir.display(),
                journal.pid,
                journal.started,
                journal.entries.len(),
            );
            return Ok(REJECTED);
        }
        Err(why) => {
            eprintln!("ouro dogs: an apply here was cut off, but {why}; nothing was applied");
            return Ok(REJECTED);
        }
    }
    let reply = read_bundle(&options.bundle)?;
    let (blocks, mut manifest, front) = match parse::parse(&reply) {
        Ok(Reply::RequestContext(what)) => {
            eprintln!("The model asks for more context before it changes anything:\n  {what}");
            eprintln!("Nothing was applied. Bundle what it asks for with `ouro cats` and send it.");
            return Ok(CONTEXT_REQUESTED);
        }
        Ok(Reply::Changes {
            blocks,
            manifest,
            front,
        }) => (blocks, manifest, front),
        Err(e) => {
            eprintln!("ouro dogs: bundle rejected, nothing written: {e}");
            return Ok(REJECTED);
        }
    };
    if let Some(path) = &options.manifest {
        let bundle = std::fs::read(path).map_err(|source| BundleError::Io {
            action: "read the manifest bundle",
            path: path.clone(),
            source,
        })?;
        match parse::parse(&bundle) {
            Ok(Reply::Changes { manifest: m, .. }) if !m.is_empty() => manifest.extend(m),
            Err(e) => {
                eprintln!("ouro dogs: {}: {e}; nothing written", path.display());
                return Ok(REJECTED);
            }
            _ => {
                eprintln!(
                    "ouro dogs: {} holds no manifest to check against (is it a bundle from `ouro cats`?); nothing written",
                    path.display()
                );
                return Ok(REJECTED);
            }
        }
    }
    if let Some(front) = &front {
        eprintln!("ouro dogs: {}", front.describe());
    }
    // A versioned bundle with no files is an agent's empty change set, not an answer that
    // missed the format.
    if blocks.is_empty() && front.is_some() {
        eprintln!("ouro dogs: the bundle holds no file changes: nothing to apply");
        return Ok(APPLIED);
    }
    if blocks.is_empty() {
        eprintln!(
            "ouro dogs: the answer holds no changes, so nothing was applied: it has no file between `🐕 --- DOGS_START_FILE: path ---` and `🐕 --- DOGS_END_FILE: path ---` lines (nor 🐈 blocks, SEARCH/REPLACE blocks or a unified diff). Ask the model to answer as the bundle's instructions say (`ouro cats` puts them before the files)."
        );
        return Ok(NO_CHANGES);
    }
    let changes = match plan::plan(&dir, blocks, &manifest, options.force) {
        Ok(changes) => changes,
        Err(problems) => {
            eprintln!("ouro dogs: bundle rejected, nothing written:");
            for problem in problems {
                eprintln!("  {problem}");
            }
            return Ok(REJECTED);
        }
    };
    if changes.is_empty() {
        eprintln!("ouro dogs: the bundle changes nothing: every file already has that content");
        return Ok(APPLIED);
    }
    if options.dry_run {
        eprint!("{}", summary(&changes));
        print!("{}", diffs(&changes));
        return Ok(APPLIED);
    }
    let reviewed = options.interactive;
    let changes = if reviewed {
        let decision = review::review(changes)?;
        if let Some(path) = &options.feedback {
            review::write_feedback(path, &decision.feedback)?;
        }
        if decision.aborted {
            eprintln!("ouro dogs: review quit; nothing written");
            return Ok(REJECTED);
        }
        if decision.changes.is_empty() {
            eprintln!("ouro dogs: nothing accepted; nothing written");
            return Ok(APPLIED);
        }
        decision.changes
    } else {
        changes
    };
    eprint!("{}", summary(&changes));
    let protected: Vec<&Change> = changes.iter().filter(|c| c.protected.is_some()).collect();
    if !protected.is_empty() {
        eprintln!("These files decide what runs or what an agent is told later:");
        for change in &protected {
            eprintln!(
                "  {} ({})",
                change.path.display(),
                change.protected.unwrap_or_default()
            );
        }
        // Even with -y: these need a person's explicit yes, or the script's own flag for them.
        if options.yes_protected {
            eprintln!("--yes-protected: writing them without asking");
        } else if !confirmed(
            "Type yes to write them (d shows the diff): ",
            true,
            &changes,
        ) {
            return Ok(REJECTED);
        }
    } else if !options.yes
        && !reviewed
        && !confirmed(
            "Apply these changes? [y/N, d shows the diff] ",
            false,
            &changes,
        )
    {
        return Ok(REJECTED);
    }
    // Held until the verification is over, so an apply cut off meanwhile is rolled back.
    let hold = options.verify.is_some() && options.revert_on_fail;
    let applied = match apply::apply(&dir, changes, hold) {
        Ok(applied) => applied,
        Err(e) => {
            eprintln!("ouro dogs: {e}");
            return Ok(REJECTED);
        }
    };
    eprintln!("ouro dogs: applied {} file(s)", apply::touched(&applied));
    let Some(command) = &options.verify else {
        return Ok(APPLIED);
    };
    let passed = verify(&dir, command).unwrap_or_else(|e| {
        eprintln!("ouro dogs: {e}");
        false
    });
    if passed {
        apply::release(&dir, &applied)?;
        eprintln!("ouro dogs: verified: `{command}` passed");
        return Ok(APPLIED);
    }
    if options.revert_on_fail {
        apply::restore(&dir, &applied)?;
        apply::release(&dir, &applied)?;
        eprintln!(
            "ouro dogs: `{command}` failed; restored the {} file(s) dogs touched to their bytes and modes before (nothing else was touched)",
            apply::touched(&applied)
        );
    } else {
        eprintln!(
            "ouro dogs: `{command}` failed; the changes stay (add --revert-on-fail to take them back)"
        );
    }
    Ok(VERIFY_FAILED)
}

fn read_bundle(source: &str) -> Result<Vec<u8>, BundleError> {
    if source == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|source| BundleError::Io {
                action: "read the bundle from",
                path: "stdin".into(),
                source,
            })?;
        return Ok(bytes);
    }
    std::fs::read(source).map_err(|e| BundleError::Io {
        action: "read the bundle",
        path: source.into(),
        source: e,
    })
}

/// Whether the user said yes; says why not when not.
fn confirmed(question: &str, exact: bool, changes: &[Change]) -> bool {
    match confirm(question, exact, changes) {
        Ok(true) => true,
        Ok(false) => {
            eprintln!("ouro dogs: not confirmed; nothing written");
            false
        }
        Err(e) => {
            eprintln!("ouro dogs: {e}; nothing written");
            false
        }
    }
}

/// Asks on the terminal (`/dev/tty`, so a bundle piped to stdin does not answer it);
/// `exact`: only the word `yes` counts. `d` shows the diff of `changes`, then asks again.
fn confirm(question: &str, exact: bool, changes: &[Change]) -> Result<bool, BundleError> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty");
    let Ok(mut tty) = tty else {
        return Err(BundleError::NoTerminal);
    };
    loop {
        let _ = write!(tty, "{question}");
        let _ = tty.flush();
        let mut answer = String::new();
        std::io::BufReader::new(&mut tty)
            .read_line(&mut answer)
            .map_err(|_| BundleError::NoTerminal)?;
        let answer = answer.trim().to_ascii_lowercase();
        if answer == "d" {
            let _ = write!(tty, "{}", diffs(changes).replace('\n', "\r\n"));
            continue;
        }
        return Ok(if exact {
            answer == "yes"
        } else {
            answer == "y" || answer == "yes"
        });
    }
}

/// Created / changed / deleted, each file's +/- lines, and the totals.
pub fn summary(changes: &[Change]) -> String {
    let mut out = String::new();
    let (mut added, mut removed) = (0, 0);
    let mut counts = [0usize; 3];
    let lines: Vec<(usize, usize)> = {
        use rayon::prelude::*;
        changes.par_iter().map(line_counts).collect()
    };
    for (change, (plus, minus)) in changes.iter().zip(lines) {
        added += plus;
        removed += minus;
        let kind = change.kind();
        counts[match kind {
            "create" => 0,
            "change" => 1,
            _ => 2,
        }] += 1;
        out.push_str(&format!(
            "  {kind:<7} {} (+{plus} -{minus})\n",
            change.path.display()
        ));
    }
    out.push_str(&format!(
        "{} created, {} changed, {} deleted; +{added} -{removed} lines\n",
        counts[0], counts[1], counts[2]
    ));
    out
}

fn text_of(bytes: Option<&[u8]>) -> String {
    bytes
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

/// Lines as a diff counts them: a last line without its newline is one too.
fn lines(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).count()
        + usize::from(bytes.last().is_some_and(|b| *b != b'\n'))
}

fn line_counts(change: &Change) -> (usize, usize) {
    // A file created or deleted whole needs no diff: every line is added, or removed.
    match (&change.before, &change.after) {
        (None, Some(new)) => return (lines(new), 0),
        (Some((old, _)), None) => return (0, lines(old)),
        _ => {}
    }
    let old = text_of(change.before.as_ref().map(|(b, _)| b.as_slice()));
    let new = text_of(change.after.as_deref());
    let diff = similar::TextDiff::from_lines(&old, &new);
    let mut counts = (0, 0);
    for op in diff.iter_all_changes() {
        match op.tag() {
            similar::ChangeTag::Insert => counts.0 += 1,
            similar::ChangeTag::Delete => counts.1 += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    counts
}

/// The unified diff of every change (what `--dry-run` prints).
pub fn diffs(changes: &[Change]) -> String {
    let mut out = String::new();
    for change in changes {
        let old = text_of(change.before.as_ref().map(|(b, _)| b.as_slice()));
        let new = text_of(change.after.as_deref());
        let name = change.path.display().to_string();
        let (from, to) = match change.kind() {
            "create" => ("/dev/null".to_string(), format!("b/{name}")),
            "delete" => (format!("a/{name}"), "/dev/null".to_string()),
            _ => (format!("a/{name}"), format!("b/{name}")),
        };
        out.push_str(
            &similar::TextDiff::from_lines(&old, &new)
                .unified_diff()
                .header(&from, &to)
                .to_string(),
        );
    }
    out
}

/// Runs `command` with `sh -c` in `dir`, its output streaming to the terminal.
fn verify(dir: &Path, command: &str) -> Result<bool, BundleError> {
    eprintln!("ouro dogs: verifying with `{command}`");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|source| BundleError::Io {
            action: "run the verify command in",
            path: dir.to_path_buf(),
            source,
        })?;
    Ok(status.success())
}
