//! Putting the project's files back as a checkpoint had them. What the restore would change is
//! the difference between the checkpoint and a snapshot of now; a file that changed outside
//! ouro since the checkpoint (between the end of a turn and the next prompt, or since the last
//! turn) is reported and left alone unless forced.

use std::collections::BTreeSet;
use std::path::Path;

use super::record::{Kind, Record};
use super::shadow::{Change, Shadow, ShadowError};

/// What restoring `target` would do.
#[derive(Debug)]
pub struct Plan {
    pub target: String,
    /// The snapshot of the files as they are now.
    pub now: String,
    pub changes: Vec<Change>,
    /// Paths among `changes` that changed outside ouro since the checkpoint.
    pub outside: BTreeSet<String>,
}

/// What a restore did.
#[derive(Debug, Default)]
pub struct Applied {
    pub restored: Vec<String>,
    pub removed: Vec<String>,
    /// Changed outside ouro, so left as they are.
    pub kept: Vec<String>,
    /// Not in the checkpoint because its `.gitignore` rules left them out: they may have been
    /// there, so they stay.
    pub ignored: Vec<String>,
    pub failed: Vec<(String, String)>,
}

impl Applied {
    /// A few lines for the user.
    pub fn report(&self) -> String {
        let mut out = Vec::new();
        let list = |paths: &[String]| paths.join(", ");
        if !self.restored.is_empty() {
            out.push(format!("Restored {}", list(&self.restored)));
        }
        if !self.removed.is_empty() {
            out.push(format!("Removed {}", list(&self.removed)));
        }
        if !self.kept.is_empty() {
            out.push(format!(
                "Kept {} as they are: they changed outside ouro since that checkpoint (--force overwrites them)",
                list(&self.kept)
            ));
        }
        if !self.ignored.is_empty() {
            out.push(format!(
                "Left {} alone: ignored by .gitignore at that checkpoint, so not recorded",
                list(&self.ignored)
            ));
        }
        for (path, error) in &self.failed {
            out.push(format!("Could not restore {path}: {error}"));
        }
        if out.is_empty() {
            out.push("The files already match that checkpoint.".into());
        }
        out.join("\n")
    }
}

/// Plans the restore of `records[index]`, with `now` a snapshot of the files as they are and
/// `others` the checkpoints of other sessions in the project.
pub async fn plan(
    shadow: &Shadow,
    records: &[Record],
    index: usize,
    now: &str,
    others: &[Vec<Record>],
) -> Result<Plan, ShadowError> {
    let target = records
        .get(index)
        .map(|r| r.commit.clone())
        .unwrap_or_default();
    let changes = shadow.diff(&target, now).await?;
    // Spans of snapshots (from, to) in which files changed that were not this session's doing.
    let mut spans: Vec<(&str, &str)> = Vec::new();
    // After each end of turn, until the next snapshot taken from outside a turn (a prompt or
    // a rewind) or until now, only the user changed files.
    let later = &records[index.min(records.len())..];
    for (i, record) in later.iter().enumerate() {
        if record.kind != Kind::End {
            continue;
        }
        let next = later[i + 1..]
            .iter()
            .find(|r| matches!(r.kind, Kind::Prompt | Kind::Rewind))
            .map_or(now, |r| r.commit.as_str());
        spans.push((&record.commit, next));
    }
    // A session that was killed mid-turn left no end of turn: what changed since its last
    // checkpoint cannot be told apart from the user's work, so it counts as theirs.
    if let Some(last) = later.last().filter(|r| r.kind != Kind::End) {
        spans.push((&last.commit, now));
    }
    // Another session working in the project since then: what its snapshots saw change is
    // not this session's to undo (it may include this session's own changes made at the same
    // time; those are then kept too, and named, rather than the other's work lost). Its
    // checkpoints may have been pruned: those spans are skipped, not an error.
    let mut foreign: Vec<(&str, &str)> = Vec::new();
    if let Some(since) = records.get(index).map(|r| r.timestamp.as_str()) {
        for other in others {
            let start = other.iter().rposition(|r| r.timestamp.as_str() <= since);
            let window = &other[start.unwrap_or(0)..];
            if let (Some(first), Some(last)) = (window.first(), window.last())
                && last.timestamp.as_str() > since
            {
                foreign.push((&first.commit, &last.commit));
            }
        }
    }
    let touched: BTreeSet<&str> = changes.iter().map(|c| c.path.as_str()).collect();
    let mut outside = BTreeSet::new();
    let mut mark = |changed: Vec<Change>| {
        outside.extend(
            changed
                .into_iter()
                .filter(|c| touched.contains(c.path.as_str()))
                .map(|c| c.path),
        );
    };
    // A commit the transcript names may not be in the repository: another session's writer
    // may still hold its newest snapshots, and a session killed mid-turn lost its last ones.
    // The span then runs to now, which marks more rather than less.
    for (from, to) in spans.into_iter().filter(|(from, to)| from != to) {
        match diff_or_to_now(shadow, from, to, now).await {
            Some(changed) => mark(changed),
            // Not even where it starts is there: every path this rewind would change is asked
            // about rather than taken for this session's own.
            None => mark(changes.clone()),
        }
    }
    for (from, to) in foreign.into_iter().filter(|(from, to)| from != to) {
        mark(
            diff_or_to_now(shadow, from, to, now)
                .await
                .unwrap_or_default(),
        );
    }
    Ok(Plan {
        target,
        now: now.to_string(),
        changes,
        outside,
    })
}

/// What changed from `from` to `to`, or to `now` when `to` cannot be read; `None` when
/// neither can.
async fn diff_or_to_now(shadow: &Shadow, from: &str, to: &str, now: &str) -> Option<Vec<Change>> {
    match shadow.diff(from, to).await {
        Ok(changed) => Some(changed),
        Err(_) => shadow.diff(from, now).await.ok(),
    }
}

/// Carries out `plan` in the work tree `root`. The checkpoint's `.gitignore` files go back
/// first, so that a file its rules ignored (hence never recorded) is not taken for one created
/// since; then deletions, deepest first, so that a link or file standing where the checkpoint
/// had a folder is gone before that folder's files are written; then the files. Nothing is
/// written or deleted through a symbolic link.
pub async fn apply(
    shadow: &Shadow,
    root: &Path,
    plan: &Plan,
    force: bool,
) -> Result<Applied, ShadowError> {
    let mut applied = Applied::default();
    let mut writes: Vec<(&str, u32, &str)> = Vec::new();
    let mut removals = Vec::new();
    for change in &plan.changes {
        if !change.exact_name {
            applied.failed.push((
                change.path.clone(),
                "its name is not UTF-8, so ouro leaves it as it is".into(),
            ));
            continue;
        }
        if plan.outside.contains(&change.path) && !force {
            applied.kept.push(change.path.clone());
            continue;
        }
        match &change.old {
            Some((mode, blob)) => writes.push((&change.path, *mode, blob)),
            None => removals.push(change.path.as_str()),
        }
    }
    // Ignore files first: they decide which removals are safe.
    writes.sort_by_key(|(path, _, _)| !is_ignore_file(path));
    let blobs: Vec<String> = writes.iter().map(|(_, _, b)| b.to_string()).collect();
    let mut contents = if blobs.is_empty() {
        Vec::new()
    } else {
        shadow.blobs(&blobs).await?
    }
    .into_iter();
    let write = |applied: &mut Applied, (path, mode, _): (&str, u32, &str), content: Vec<u8>| {
        match safe_write(root, path, mode, &content) {
            Ok(()) => applied.restored.push(path.to_string()),
            Err(e) => applied.failed.push((path.to_string(), e.to_string())),
        }
    };
    let ignore_files = writes
        .iter()
        .take_while(|(p, _, _)| is_ignore_file(p))
        .count();
    for (w, content) in writes[..ignore_files].iter().zip(contents.by_ref()) {
        write(&mut applied, *w, content);
    }
    let ignored = shadow.ignored(&removals).await?;
    removals.retain(|path| {
        let keep = ignored.contains(*path);
        if keep {
            applied.ignored.push(path.to_string());
        }
        !keep
    });
    removals.sort_by_key(|path| std::cmp::Reverse(path.matches('/').count()));
    let dirs = if removals.is_empty() {
        BTreeSet::new()
    } else {
        shadow.dirs(&plan.target).await?
    };
    for path in removals {
        match safe_remove(root, path) {
            Ok(true) => applied.removed.push(path.to_string()),
            Ok(false) => {}
            Err(e) => applied.failed.push((path.to_string(), e.to_string())),
        }
        remove_new_dirs(root, Path::new(path), &dirs);
    }
    for (w, content) in writes[ignore_files..].iter().zip(contents) {
        write(&mut applied, *w, content);
    }
    Ok(applied)
}

/// A file whose rules decide what git, and so the snapshots' walk, leaves out.
pub(super) fn is_ignore_file(path: &str) -> bool {
    path == ".gitignore" || path.ends_with("/.gitignore")
}

/// Whether a folder on the way from `root` to `path` is a symbolic link (or not a folder).
fn through_link(root: &Path, path: &str) -> bool {
    let mut dir = root.to_path_buf();
    let parts: Vec<&str> = path.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() || !meta.is_dir() => return true,
            _ => {}
        }
    }
    false
}

fn safe_write(root: &Path, path: &str, mode: u32, content: &[u8]) -> std::io::Result<()> {
    if through_link(root, path) {
        return Err(std::io::Error::other(
            "a link or a file stands where its folder was",
        ));
    }
    write_file(&root.join(path), mode, content)
}

/// Removes the file (or link) at `path`; `false` when there was none.
fn safe_remove(root: &Path, path: &str) -> std::io::Result<bool> {
    if through_link(root, path) {
        return Err(std::io::Error::other("it is behind a link now"));
    }
    let full = root.join(path);
    match std::fs::symlink_metadata(&full) {
        Ok(meta) if meta.is_dir() => Err(std::io::Error::other("a folder is there now")),
        Ok(_) => std::fs::remove_file(&full).map(|()| true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes `content` at `path` as git `mode` had it: a symlink, or a file whose execute bits
/// follow the mode while its other permission bits stay as they are.
fn write_file(path: &Path, mode: u32, content: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let existing = std::fs::symlink_metadata(path).ok();
    if existing.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(std::io::Error::other("a folder is there now"));
    }
    match mode {
        0o120000 => {
            if existing.is_some() {
                std::fs::remove_file(path)?;
            }
            let target = String::from_utf8_lossy(content).into_owned();
            std::os::unix::fs::symlink(target, path)
        }
        0o160000 => Ok(()),
        _ => {
            if existing
                .as_ref()
                .is_some_and(|m| m.file_type().is_symlink())
            {
                std::fs::remove_file(path)?;
            }
            std::fs::write(path, content)?;
            let mut perms = std::fs::metadata(path)?.permissions();
            let bits = perms.mode();
            let wanted = if mode == 0o100755 {
                bits | ((bits & 0o444) >> 2)
            } else {
                bits & !0o111
            };
            perms.set_mode(wanted);
            std::fs::set_permissions(path, perms)
        }
    }
}

/// Removes the folders of `path` that were not in the checkpoint and are now empty.
fn remove_new_dirs(root: &Path, path: &Path, kept: &BTreeSet<String>) {
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
        if kept.contains(d.to_string_lossy().as_ref()) || std::fs::remove_dir(root.join(d)).is_err()
        {
            return;
        }
        dir = d.parent();
    }
}
