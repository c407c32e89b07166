//! `ouro worktree`: PAWS's sessions on git worktrees (in ouro a "session" is a conversation, so
//! the name differs). A worktree lives in ouro's home, keyed by project, so searches, bundles
//! and checkpoints of the main tree never see it; inside it, it is the project root. Its
//! manifest records the branch, where it started, and a checkpoint (a commit and a tag) per
//! bundle `ouro dogs --worktree` applied. Rewind and merge refuse to run over uncommitted
//! changes they would lose. Every git ouro runs here gets the settings that run nothing a
//! repository configures (hooks, filters, fsmonitor…).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Why a worktree command did not happen.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A sentence saying what to do.
    #[error("{0}")]
    Failed(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub id: String,
    pub project: PathBuf,
    pub path: PathBuf,
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    pub created_at: String,
    pub checkpoints: Vec<Checkpoint>,
    #[serde(default)]
    pub archived: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// `cp1`, `cp2`, …
    pub id: String,
    pub tag: String,
    pub commit: String,
    /// What was applied (the bundle's file name).
    pub note: String,
    pub at: String,
}

/// The worktrees of one project.
pub struct Worktrees {
    project: PathBuf,
    root: PathBuf,
}

fn failed(message: impl Into<String>) -> WorktreeError {
    WorktreeError::Failed(message.into())
}

impl Worktrees {
    /// The worktrees of the git repository holding `cwd`.
    pub fn of(cwd: &Path) -> Result<Worktrees, WorktreeError> {
        let top = git(cwd, &["rev-parse", "--show-toplevel"])
            .map_err(|_| failed(format!("{} is not in a git repository", cwd.display())))?;
        let project = PathBuf::from(top);
        let home = crate::settings::ouro_home()
            .ok_or_else(|| failed("ouro has no home folder (set OURO_HOME)"))?;
        let root = home
            .join("worktrees")
            .join(crate::settings::folder_name(&project));
        Ok(Worktrees { project, root })
    }

    fn manifest_path(&self, id: &str) -> PathBuf {
        self.root.join(format!("{id}.json"))
    }

    pub fn load(&self, id: &str) -> Result<Manifest, WorktreeError> {
        check_id(id)?;
        let text = std::fs::read(self.manifest_path(id)).map_err(|_| {
            failed(format!(
                "there is no worktree `{id}` for this project; `ouro worktree list` shows them"
            ))
        })?;
        serde_json::from_slice(&text)
            .map_err(|e| failed(format!("the manifest of {id} is damaged: {e}")))
    }

    fn save(&self, manifest: &Manifest) -> Result<(), WorktreeError> {
        crate::sys::atomic::write_json(&self.manifest_path(&manifest.id), manifest).map_err(
            |source| WorktreeError::Io {
                action: "save the worktree manifest",
                path: self.manifest_path(&manifest.id),
                source,
            },
        )
    }

    /// A new worktree on a new branch (`ouro/<id>` unless named) from the project's HEAD; an
    /// existing one of that name is returned as it is.
    pub fn start(
        &self,
        name: Option<&str>,
        branch: Option<&str>,
    ) -> Result<Manifest, WorktreeError> {
        let id = match name {
            Some(name) => name.to_string(),
            None => format!("wt-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
        };
        check_id(&id)?;
        if let Ok(existing) = self.load(&id) {
            return Ok(existing);
        }
        let base = git(&self.project, &["rev-parse", "HEAD"]).map_err(|_| {
            failed("the project has no commit yet; commit once, then start a worktree")
        })?;
        let branch = branch.map_or_else(|| format!("ouro/{id}"), String::from);
        let path = self.root.join(&id);
        std::fs::create_dir_all(&self.root).map_err(|source| WorktreeError::Io {
            action: "create",
            path: self.root.clone(),
            source,
        })?;
        let target = path.display().to_string();
        git(
            &self.project,
            &["worktree", "add", "-b", &branch, &target, &base],
        )?;
        let manifest = Manifest {
            id,
            project: self.project.clone(),
            path,
            branch,
            base,
            created_at: chrono::Utc::now().to_rfc3339(),
            checkpoints: Vec::new(),
            archived: false,
        };
        self.save(&manifest)?;
        Ok(manifest)
    }

    pub fn list(&self) -> Vec<Manifest> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut out: Vec<Manifest> = entries
            .filter_map(Result::ok)
            .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
            .collect();
        out.sort_by(|a: &Manifest, b| a.created_at.cmp(&b.created_at));
        out
    }

    /// Commits what an apply changed in worktree `id` and tags it; `None` when nothing changed.
    pub fn checkpoint(&self, id: &str, note: &str) -> Result<Option<Checkpoint>, WorktreeError> {
        let mut manifest = self.load(id)?;
        let dir = manifest.path.clone();
        git(&dir, &["add", "-A"])?;
        if git(&dir, &["diff", "--cached", "--quiet"]).is_ok() {
            return Ok(None);
        }
        let n = manifest.checkpoints.len() + 1;
        let cp = format!("cp{n}");
        git_commit(&dir, &format!("ouro dogs: {note}"))?;
        let commit = git(&dir, &["rev-parse", "HEAD"])?;
        let tag = format!("ouro/{id}/{cp}");
        git(&dir, &["tag", "-f", &tag, &commit])?;
        let checkpoint = Checkpoint {
            id: cp,
            tag,
            commit,
            note: note.to_string(),
            at: chrono::Utc::now().to_rfc3339(),
        };
        manifest.checkpoints.push(checkpoint.clone());
        self.save(&manifest)?;
        Ok(Some(checkpoint))
    }

    /// Back to checkpoint `to` (`base` for where it started); later checkpoints are dropped.
    pub fn rewind(&self, id: &str, to: &str) -> Result<String, WorktreeError> {
        let mut manifest = self.load(id)?;
        refuse_dirty(&manifest.path, "rewind")?;
        let (commit, keep) = if to == "base" {
            (manifest.base.clone(), 0)
        } else {
            let at = manifest
                .checkpoints
                .iter()
                .position(|c| c.id == to)
                .ok_or_else(|| {
                    failed(format!(
                        "worktree {id} has no checkpoint `{to}`; `ouro worktree list` shows them"
                    ))
                })?;
            (manifest.checkpoints[at].commit.clone(), at + 1)
        };
        git(&manifest.path, &["reset", "--hard", &commit])?;
        for dropped in manifest.checkpoints.drain(keep..) {
            let _ = git(&manifest.path, &["tag", "-d", &dropped.tag]);
        }
        self.save(&manifest)?;
        Ok(format!(
            "worktree {id} is back at {to} ({})",
            &commit[..commit.len().min(12)]
        ))
    }

    /// Merges the worktree's branch into the project's checked-out branch.
    pub fn merge(&self, id: &str, squash: bool) -> Result<String, WorktreeError> {
        let manifest = self.load(id)?;
        // An archived worktree has no folder: its branch is merged as it is.
        if !manifest.archived {
            refuse_dirty(
                &manifest.path,
                "merge (commit or apply them in the worktree first)",
            )?;
        }
        refuse_dirty(&self.project, "merge into")?;
        let message = format!("Merge worktree {id} ({})", manifest.branch);
        // Whatever merge drivers the repository's configuration defines, git's own merge runs.
        let safe = crate::sys::git::merge_overrides(&self.project);
        let mut args: Vec<&str> = safe.iter().map(String::as_str).collect();
        let merged = if squash {
            args.extend(["merge", "--squash", &manifest.branch]);
            git(&self.project, &args).and_then(|_| git_commit(&self.project, &message))
        } else {
            args.extend(identity(&self.project));
            args.extend(["merge", "--no-ff", "-m", &message, &manifest.branch]);
            git(&self.project, &args)
        };
        if let Err(e) = merged {
            let _ = git(&self.project, &["merge", "--abort"]);
            let _ = git(&self.project, &["reset", "--merge"]);
            return Err(failed(format!(
                "the merge of {id} did not go through and was undone: {e}"
            )));
        }
        Ok(format!(
            "merged worktree {id} ({}) into the project{}",
            manifest.branch,
            if squash { " as one commit" } else { "" }
        ))
    }

    /// Removes the worktree's folder (its branch, tags and manifest stay).
    pub fn archive(&self, id: &str) -> Result<String, WorktreeError> {
        let mut manifest = self.load(id)?;
        refuse_dirty(&manifest.path, "archive")?;
        let target = manifest.path.display().to_string();
        git(&self.project, &["worktree", "remove", &target])?;
        manifest.archived = true;
        self.save(&manifest)?;
        Ok(format!(
            "archived worktree {id}; its branch {} and checkpoints stay",
            manifest.branch
        ))
    }
}

/// A worktree id is a folder name and a tag part.
fn check_id(id: &str) -> Result<(), WorktreeError> {
    if crate::text::is_id(id) {
        Ok(())
    } else {
        Err(failed(format!(
            "`{id}` is not a worktree name: use 1 to 64 letters, digits, - and _"
        )))
    }
}

fn refuse_dirty(dir: &Path, what: &str) -> Result<(), WorktreeError> {
    let status = git(dir, &["status", "--porcelain", "--untracked-files=no"])?;
    if status.is_empty() {
        return Ok(());
    }
    Err(failed(format!(
        "{} has uncommitted changes that would be lost or mixed in; commit or stash them before you {what}:\n{status}",
        dir.display()
    )))
}

fn git_commit(dir: &Path, message: &str) -> Result<String, WorktreeError> {
    let mut args = identity(dir);
    args.extend(["commit", "-q", "--no-verify", "-m", message]);
    git(dir, &args)
}

/// What a commit in `dir` needs for a name: one set in git's config wins, else ouro signs as
/// itself (as its checkpoint commits do).
fn identity(dir: &Path) -> Vec<&'static str> {
    let named = git(dir, &["config", "user.email"]).is_ok_and(|v| !v.is_empty());
    if named {
        Vec::new()
    } else {
        vec!["-c", "user.name=ouro", "-c", "user.email=ouro@localhost"]
    }
}

/// Runs git in `dir` with the settings that run nothing a repository configures; its output,
/// trimmed.
fn git(dir: &Path, args: &[&str]) -> Result<String, WorktreeError> {
    let out = crate::sys::git::in_work_tree("git", dir)
        .args(args)
        .output()
        .map_err(|source| WorktreeError::Io {
            action: "run git in",
            path: dir.to_path_buf(),
            source,
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(failed(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// `ouro worktree list`, as a table.
pub fn table(worktrees: &[Manifest]) -> String {
    if worktrees.is_empty() {
        return "no worktrees; `ouro worktree start [NAME]` makes one\n".into();
    }
    let mut out = String::new();
    for w in worktrees {
        let state = if w.archived { " (archived)" } else { "" };
        out.push_str(&format!(
            "{}{state}  branch {}  {}\n",
            w.id,
            w.branch,
            w.path.display()
        ));
        out.push_str(&format!("  base {}\n", &w.base[..w.base.len().min(12)]));
        for c in &w.checkpoints {
            out.push_str(&format!(
                "  {}  {}  {}  {}\n",
                c.id,
                &c.commit[..c.commit.len().min(12)],
                c.at,
                c.note
            ));
        }
    }
    out
}
