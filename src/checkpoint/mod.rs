//! Checkpoints: a snapshot of the project before each prompt is answered, before each tool call
//! that may write (Bash included) and at the end of each turn, kept in a shadow git repository
//! (see [`shadow`]) and recorded in the transcript, so that `/rewind` and `ouro rewind` can put
//! the code (and the conversation) back as it was. Snapshots are written in process
//! ([`objects`], and a stat cache that reads only changed files); git runs only to restore.

mod keep;
pub mod objects;
mod pack;
pub mod prune;
mod read;
pub mod record;
pub mod restore;
mod scan;
pub mod shadow;
pub mod timeline;
pub mod worktree;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::sys::sync::lock;
pub use record::{Kind, Record};
use shadow::{Shadow, ShadowError};

/// A snapshot slower than this turns checkpoints off for the session: the project is too big
/// for them to stay cheap.
const TOO_SLOW: Duration = Duration::from_secs(3);

/// The `checkpoints` settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckpointConfig {
    pub enabled: bool,
    /// Untracked files larger than this are left out of snapshots.
    pub(crate) max_file_bytes: u64,
    /// Checkpoints of sessions idle longer than this are pruned.
    pub keep_days: u32,
    /// At most this many checkpoints per session (the oldest go first).
    pub keep_per_session: usize,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            enabled: true,
            max_file_bytes: 10 << 20,
            keep_days: 30,
            keep_per_session: 500,
        }
    }
}

impl CheckpointConfig {
    /// The settings over the defaults; `OURO_CHECKPOINTS=0` turns them off.
    pub fn from_settings(settings: &crate::settings::CheckpointSettings) -> CheckpointConfig {
        let default = CheckpointConfig::default();
        let off_by_env = std::env::var("OURO_CHECKPOINTS").is_ok_and(|v| v == "0");
        CheckpointConfig {
            enabled: settings.enabled.unwrap_or(true) && !off_by_env,
            max_file_bytes: settings
                .max_file_size_mb
                .map_or(default.max_file_bytes, |mb| {
                    (mb.max(0.0) * 1048576.0) as u64
                }),
            keep_days: settings.keep_days.unwrap_or(default.keep_days),
            keep_per_session: settings
                .keep_per_session
                .unwrap_or(default.keep_per_session),
        }
    }
}

/// Whether `full` is where it says, with no link or `..` on the way (a file not there yet is
/// judged by its folder).
fn names_itself(full: &Path) -> bool {
    let real = match std::fs::canonicalize(full) {
        Ok(real) => Some(real),
        Err(_) => full
            .parent()
            .and_then(|dir| std::fs::canonicalize(dir).ok())
            .zip(full.file_name())
            .map(|(dir, name)| dir.join(name)),
    };
    real.as_deref() == Some(full)
}

/// Why `root` is no place for snapshots, if it is not: the home folder or `/` (ouro started
/// outside any project). A project of too many files is found by the first snapshot itself.
fn unsuitable(root: &Path) -> Option<String> {
    (Some(root) == dirs::home_dir().as_deref() || root == Path::new("/")).then(|| {
        format!(
            "{} is not a project folder (start ouro in a project to have checkpoints)",
            root.display()
        )
    })
}

/// The shadow repository of the project at `root`: a readable name plus a hash of the whole
/// path, so that `/x/a b`, `/x/a-b` and `/x/a/b` never share one.
pub(crate) fn shadow_for(root: &Path) -> Option<Shadow> {
    let dir = crate::settings::ouro_home()?
        .join("checkpoints")
        .join(crate::settings::project_key(root));
    Some(Shadow::new(dir, root.to_path_buf()))
}

/// The commit a snapshot makes when its tree is new.
struct CommitSpec {
    last_tree: Option<objects::Oid>,
    message: String,
    /// The session whose line keeps it.
    session: String,
    /// A commit of this tree taken a moment ago (by the last session): kept again rather than
    /// made again.
    reuse: Option<keep::Kept>,
}

fn snapshot_blocking(
    scan: &mut scan::Scan,
    scope: Scope,
    commit: Option<CommitSpec>,
) -> std::io::Result<(objects::Oid, Option<objects::Oid>)> {
    let tree = match scope {
        Scope::Only(paths) => match scan.only(&paths)? {
            Some(tree) => tree,
            None => scan.everything()?,
        },
        Scope::Everything => scan.everything()?,
    };
    let Some(spec) = commit.filter(|c| c.last_tree != Some(tree)) else {
        scan.finish(Vec::new())?;
        return Ok((tree, None));
    };
    let oid = match spec
        .reuse
        .filter(|r| r.tree == tree && scan.claim(&r.commit))
    {
        Some(reused) => reused.commit,
        None => scan.put(
            objects::Kind::Commit,
            &objects::commit(&tree, None, &spec.message),
        )?,
    };
    scan.finish(vec![keep::Kept::now(oid, tree, &spec.session)])?;
    Ok((tree, Some(oid)))
}

/// What may have changed since the last snapshot, as far as ouro knows.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    /// Anything (a prompt: the user may have edited; after Bash: anything it touched).
    Everything,
    /// Only these files (relative to the root) since the last snapshot, which Edit and Write
    /// declare, so the snapshot need not look at the rest of the project.
    Only(Vec<String>),
}

struct State {
    /// The files as last seen; `None` only while a snapshot works on it off the runtime.
    scan: Option<scan::Scan>,
    /// The session the checkpoints are kept for (`/clear` starts another).
    session: String,
    last_tree: Option<String>,
    last_commit: Option<String>,
    /// Files written by tools since the last snapshot, `None` once anything else may have run.
    since: Option<Vec<String>>,
}

/// A call's checkpoint put off because a snapshot was under way when the call came: it is
/// taken by whoever holds the snapshots next, with the call's files as they were (`paths`
/// are held in [`scan::Preimages`] until then).
struct Deferred {
    detail: record::Detail,
    paths: Vec<Vec<u8>>,
}

/// What tools wrote since the last snapshot, told without waiting for one under way.
enum Written {
    Paths(Vec<String>),
    Anything,
}

pub struct Checkpoints {
    shadow: Shadow,
    /// How long an idle session's checkpoints are kept, and how many of each (0: none).
    keep_days: u32,
    keep_per_session: usize,
    preimages: Arc<scan::Preimages>,
    /// Locked before `preimages` wherever both are.
    deferred: Mutex<Vec<Deferred>>,
    written: Mutex<Written>,
    /// Writes the snapshots' objects and refs in the background, in order.
    writer: Arc<writer::Writer>,
    root: PathBuf,
    state: Arc<tokio::sync::Mutex<State>>,
    pending: Mutex<Vec<Record>>,
    off: AtomicBool,
    /// A failed snapshot was reported (once per session).
    warned: AtomicBool,
    notice: Mutex<Option<String>>,
    disk_failure: Mutex<Option<String>>,
}

impl Checkpoints {
    pub fn new(root: &Path, session: &str, config: CheckpointConfig) -> Option<Checkpoints> {
        if !config.enabled {
            return None;
        }
        Some(Checkpoints::with_shadow(
            shadow_for(root)?,
            root,
            session,
            config,
        ))
    }

    /// Checkpoints kept in `shadow` (the benchmark keeps its own).
    pub fn with_shadow(
        shadow: Shadow,
        root: &Path,
        session: &str,
        config: CheckpointConfig,
    ) -> Checkpoints {
        let writer = Arc::new(writer::Writer::start(shadow.git_dir()));
        let preimages = Arc::new(scan::Preimages::default());
        let scan = scan::Scan::new(
            root,
            shadow.git_dir(),
            config.max_file_bytes,
            writer.clone(),
            preimages.clone(),
        );
        Checkpoints {
            shadow,
            keep_days: config.keep_days,
            keep_per_session: config.keep_per_session,
            preimages,
            deferred: Mutex::new(Vec::new()),
            written: Mutex::new(Written::Paths(Vec::new())),
            writer,
            root: root.to_path_buf(),
            state: Arc::new(tokio::sync::Mutex::new(State {
                scan: Some(scan),
                session: session.to_string(),
                last_tree: None,
                last_commit: None,
                since: None,
            })),
            pending: Mutex::new(Vec::new()),
            off: AtomicBool::new(false),
            warned: AtomicBool::new(false),
            notice: Mutex::new(None),
            disk_failure: Mutex::new(None),
        }
    }

    pub fn shadow(&self) -> &Shadow {
        &self.shadow
    }

    /// Checkpoints from now on belong to session `id` (after `/clear`).
    pub async fn start_session(&self, id: &str) {
        let mut state = self.state.lock().await;
        // Checkpoints put off belong to the session they were taken in.
        self.run_deferred(&mut state).await;
        state.session = id.to_string();
    }

    /// A tool that may write has run: it changed only `paths` (relative to the root), or
    /// anything (`None`: Bash, an MCP tool). Told at once, even while a snapshot is under way;
    /// the next snapshot takes it into account.
    pub fn wrote(&self, paths: Option<Vec<String>>) {
        let mut written = lock(&self.written);
        match (&mut *written, paths) {
            (Written::Paths(known), Some(paths)) => known.extend(paths),
            (written, _) => *written = Written::Anything,
        }
    }

    /// Before a call that writes only `paths`. The call does not wait for its snapshot: the
    /// files' present contents are held, and the call's checkpoint is taken in the background
    /// with them in place of what the call writes (after the snapshot under way, if any: the
    /// first of a session may read the whole project). Only what cannot be held (a file too
    /// large, through a link, ignore rules) is snapshotted before the call goes on.
    pub async fn take_before_write(self: &Arc<Self>, detail: record::Detail, paths: &[String]) {
        if self.off.load(Ordering::Relaxed) {
            return;
        }
        let Some(detail) = self.defer(detail, paths) else {
            let this = self.clone();
            tokio::spawn(async move {
                let mut state = this.state.lock().await;
                this.run_deferred(&mut state).await;
            });
            return;
        };
        let mut state = self.state.lock().await;
        self.snapshot_locked(&mut state, Kind::Tool, detail, true)
            .await;
    }

    /// Holds the files' contents and queues the checkpoint; gives `detail` back when that
    /// cannot be done (a file too large or unreadable, or already held for another call).
    fn defer(&self, detail: record::Detail, paths: &[String]) -> Option<record::Detail> {
        /// What is held in memory for one call at most.
        const MAX_HELD: u64 = 16 << 20;
        let mut held = Vec::new();
        let mut bytes = 0;
        for path in paths {
            let rel = path.trim_start_matches("./").as_bytes().to_vec();
            let full = self.root.join(path);
            // What the walk would find under this very name: no link or `..` on the way (the
            // tool writes where a link leads), and not a file that changes what the walk
            // leaves out.
            if restore::is_ignore_file(path) || !names_itself(&full) {
                return Some(detail);
            }
            let pre = match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_file() || meta.file_type().is_symlink() => {
                    bytes += meta.len();
                    if bytes > MAX_HELD {
                        return Some(detail);
                    }
                    match read::content(&full, &meta) {
                        Ok(Some(data)) => Some((data, read::mode_of(&meta))),
                        _ => return Some(detail),
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                _ => return Some(detail),
            };
            held.push((rel, pre));
        }
        let mut deferred = lock(&self.deferred);
        let mut preimages = lock(&self.preimages);
        if held.iter().any(|(rel, _)| preimages.contains_key(rel)) {
            return Some(detail);
        }
        let paths = held.iter().map(|(rel, _)| rel.clone()).collect();
        preimages.extend(held);
        deferred.push(Deferred { detail, paths });
        None
    }

    /// Takes the checkpoints put off while the last snapshot worked, in order, letting go of
    /// each call's files once its checkpoint is taken: the next call's checkpoint must see
    /// what this call wrote, and only the later calls' files as they were.
    async fn run_deferred(&self, state: &mut State) {
        loop {
            let Some(detail) = lock(&self.deferred).first().map(|d| d.detail.clone()) else {
                return;
            };
            self.snapshot_one(state, Kind::Tool, detail, true).await;
            let mut deferred = lock(&self.deferred);
            let mut preimages = lock(&self.preimages);
            if !deferred.is_empty() {
                for rel in deferred.remove(0).paths {
                    preimages.remove(&rel);
                }
            }
        }
    }

    /// Snapshots the project and records a checkpoint of `kind`. A snapshot that cannot work
    /// here (no git, an unsuitable folder, too slow) turns checkpoints off for the session with
    /// one notice; one that merely failed is retried at the next.
    pub async fn take(&self, kind: Kind, detail: record::Detail) -> Option<Record> {
        if self.off.load(Ordering::Relaxed) {
            return None;
        }
        // A turn's end and a rewind wait for the writes, so what the transcript names is on
        // disk before anyone (git, the next session) reads it.
        let settle = matches!(kind, Kind::End | Kind::Rewind);
        let mut state = self.state.lock().await;
        let record = self.snapshot_locked(&mut state, kind, detail, true).await;
        // Calls that came while it worked get their checkpoints now, not at the next one.
        self.run_deferred(&mut state).await;
        drop(state);
        if settle && let Err(e) = self.settle().await {
            self.failed(&e);
            return None;
        }
        record
    }

    /// [`Checkpoints::take`] in the background: the snapshot is queued now, before anything
    /// else can change the files through ouro (a tool's checkpoint waits for it), and taken
    /// once `after` is ready, while the caller goes on. Before a prompt this overlaps the
    /// snapshot with the model's answer.
    pub async fn take_soon(
        self: &Arc<Self>,
        kind: Kind,
        detail: record::Detail,
        after: impl Future<Output = ()> + Send + 'static,
    ) {
        if self.off.load(Ordering::Relaxed) {
            return;
        }
        let mut state = self.state.clone().lock_owned().await;
        // Checkpoints put off before this one come before it; those put off while it works
        // come after it, and are taken as soon as it is done.
        self.run_deferred(&mut state).await;
        let this = self.clone();
        tokio::spawn(async move {
            after.await;
            this.snapshot_one(&mut state, kind, detail, true).await;
            this.run_deferred(&mut state).await;
        });
    }

    /// After a call that may have written anything (Bash, an MCP tool): the project is walked
    /// now, in the background, while the model answers, instead of before the next call that
    /// may write. That call's checkpoint then finds nothing new and costs nothing. A process the
    /// command left running that writes meanwhile is seen by the next full walk (before the
    /// next prompt, or after the next such call), as it would have been after that call.
    pub fn refresh_soon(self: &Arc<Self>, detail: record::Detail) {
        if self.off.load(Ordering::Relaxed) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            let mut state = this.state.clone().lock_owned().await;
            this.merge_written(&mut state);
            if state.since.is_none() {
                this.snapshot_locked(&mut state, Kind::Tool, detail, false)
                    .await;
            }
            this.run_deferred(&mut state).await;
        });
    }

    /// What tools said they wrote since the last snapshot, into `state.since`.
    fn merge_written(&self, state: &mut State) {
        let written = std::mem::replace(&mut *lock(&self.written), Written::Paths(Vec::new()));
        match (written, &mut state.since) {
            (Written::Paths(paths), Some(known)) => known.extend(paths),
            (Written::Paths(_), None) => {}
            (Written::Anything, since) => *since = None,
        }
    }

    /// A snapshot, and its record (`recorded`) for the transcript, after the checkpoints put
    /// off while the last one worked.
    async fn snapshot_locked(
        &self,
        state: &mut State,
        kind: Kind,
        detail: record::Detail,
        recorded: bool,
    ) -> Option<Record> {
        self.run_deferred(state).await;
        self.snapshot_one(state, kind, detail, recorded).await
    }

    async fn snapshot_one(
        &self,
        state: &mut State,
        kind: Kind,
        detail: record::Detail,
        recorded: bool,
    ) -> Option<Record> {
        self.merge_written(state);
        let start = Instant::now();
        // The first snapshot of a session may read every file; only later ones must be quick.
        let first = state.last_tree.is_none();
        match self.snapshot(state, &kind, &detail).await {
            Ok(commit) => {
                let took = start.elapsed();
                if took > TOO_SLOW && !first {
                    self.turn_off(format!(
                        "a checkpoint of {} took {:.1} s, so checkpoints are off for this session (set \"checkpoints\": {{\"enabled\": false}} to skip them here)",
                        self.root.display(),
                        took.as_secs_f64()
                    ));
                }
                let record = Record::new(commit, kind, detail);
                if recorded {
                    lock(&self.pending).push(record.clone());
                }
                Some(record)
            }
            // No git, or no place for snapshots: nothing will work this session.
            Err(e @ (ShadowError::Spawn(_) | ShadowError::Unsuitable(_))) => {
                self.turn_off(format!(
                    "checkpoints are off for this session: {e}; /rewind cannot restore files changed from now on"
                ));
                None
            }
            // A file that vanished mid-snapshot, a lock held a moment: the next one may work.
            Err(e) => {
                state.since = None;
                self.failed(&e);
                None
            }
        }
    }

    async fn snapshot(
        &self,
        state: &mut State,
        kind: &Kind,
        detail: &record::Detail,
    ) -> Result<String, ShadowError> {
        // Within a turn ouro knows what Edit and Write changed; before a prompt or a rewind the
        // user may have changed anything, and after Bash so may the command.
        let scope = match (kind, &state.since, &state.last_tree) {
            (Kind::Tool | Kind::End, Some(paths), Some(_)) => Scope::Only(paths.clone()),
            _ => Scope::Everything,
        };
        let mut reuse = None;
        if state.last_tree.is_none() {
            if let Some(reason) = unsuitable(&self.root) {
                return Err(ShadowError::Unsuitable(reason));
            }
            self.shadow.init()?;
            self.exclude_own_home()?;
            reuse = self.reusable();
        }
        // Nothing was written since the last snapshot.
        if let (Scope::Only(paths), Some(commit)) = (&scope, &state.last_commit)
            && paths.is_empty()
        {
            return Ok(commit.clone());
        }
        let message = format!("{} {}", kind.label(), detail.describe());
        let commit = Some(CommitSpec {
            last_tree: state.last_tree.as_deref().and_then(objects::parse_hex),
            message,
            session: state.session.clone(),
            reuse,
        });
        let (tree, commit) = Self::scan(state, scope, commit).await?;
        // Files put in as they were before a call that has written them since: the next
        // snapshot reads them again.
        state.since = Some(
            state
                .scan
                .as_ref()
                .map(|s| s.overridden.clone())
                .unwrap_or_default(),
        );
        let Some(commit) = commit else {
            return Ok(state.last_commit.clone().unwrap_or_default());
        };
        let commit = objects::hex(&commit);
        state.last_tree = Some(objects::hex(&tree));
        state.last_commit = Some(commit.clone());
        Ok(commit)
    }

    /// The newest checkpoint of the project, when it is recent enough to be kept again by a
    /// new session's first snapshot of the same files (a second question asked in a project
    /// nobody changed meanwhile writes no commit). Recent, because a line pruning removes (and
    /// `git prune` after it) could take an old commit away before this session's line keeps
    /// it; the newest line of a session active within the hour is never pruned.
    fn reusable(&self) -> Option<keep::Kept> {
        const RECENT: u64 = 3600;
        let newest = keep::newest(self.shadow.git_dir())?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs();
        let kept = self.keep_days > 0 && self.keep_per_session > 0;
        (kept && now.saturating_sub(newest.time) < RECENT).then_some(newest)
    }

    /// The tree of the files in `scope` (everything when the declared paths are not enough)
    /// and, unless the tree is the last one, its commit, kept by a line of the log: worked out
    /// on a blocking thread (a first snapshot reads the whole project), written in the
    /// background.
    async fn scan(
        state: &mut State,
        scope: Scope,
        commit: Option<CommitSpec>,
    ) -> Result<(objects::Oid, Option<objects::Oid>), ShadowError> {
        let Some(mut scan) = state.scan.take() else {
            return Err(ShadowError::Io(std::io::Error::other(
                "a snapshot was abandoned half-way",
            )));
        };
        let (scan, done) = tokio::task::spawn_blocking(move || {
            let done = snapshot_blocking(&mut scan, scope, commit);
            (scan, done)
        })
        .await
        .map_err(|e| ShadowError::Io(std::io::Error::other(e.to_string())))?;
        state.scan = Some(scan);
        done.map_err(|e| {
            if e.get_ref()
                .is_some_and(|inner| inner.is::<scan::TooManyFiles>())
            {
                ShadowError::Unsuitable(e.to_string())
            } else {
                ShadowError::Io(e)
            }
        })
    }

    /// Waits until every snapshot taken so far is on disk (before git reads the repository).
    pub async fn settle(&self) -> Result<(), ShadowError> {
        let writer = self.writer.clone();
        let settled = tokio::task::spawn_blocking(move || writer.settle())
            .await
            .map_err(|e| ShadowError::Io(std::io::Error::other(e.to_string())))?;
        if settled.is_err() {
            self.forget_stored().await;
        }
        settled.map_err(ShadowError::Io)
    }

    /// What a failed write held is not on disk: the next snapshot looks at every file and
    /// stores again whatever the repository lacks (the disk may have room again by then).
    async fn forget_stored(&self) {
        let mut state = self.state.lock().await;
        state.since = None;
        // The last commit may be among what was lost: the next one is written whatever it holds.
        state.last_tree = None;
        state.last_commit = None;
        if let Some(scan) = state.scan.as_mut() {
            scan.forget_stored();
        }
    }

    /// A write that failed because the disk is full, read-only or failing, once: what was
    /// recorded may name objects that are not there, so the turn must stop.
    pub fn take_disk_failure(&self) -> Option<String> {
        lock(&self.disk_failure).take()
    }

    /// Keeps ouro's own folder out of the snapshots when it lies inside the project.
    fn exclude_own_home(&self) -> Result<(), ShadowError> {
        let Some(home) = crate::settings::ouro_home() else {
            return Ok(());
        };
        let Ok(inside) = home.strip_prefix(&self.root) else {
            return Ok(());
        };
        let pattern = inside.to_string_lossy().into_owned();
        if !pattern.is_empty() && !self.shadow.excludes(&pattern) {
            self.shadow.exclude(&[pattern])?;
        }
        Ok(())
    }

    fn failed(&self, e: &ShadowError) {
        if let ShadowError::Io(io) = e
            && crate::sys::disk::is_disk_failure(io)
        {
            lock(&self.disk_failure).get_or_insert_with(|| {
                format!(
                    "could not write a checkpoint under {}: {io}",
                    self.shadow.git_dir().display()
                )
            });
        }
        let mut notice = lock(&self.notice);
        if !self.warned.swap(true, Ordering::Relaxed) {
            *notice = Some(format!(
                "a checkpoint could not be taken ({e}); ouro tries again at the next one"
            ));
        }
    }

    fn turn_off(&self, message: String) {
        if !self.off.swap(true, Ordering::Relaxed) {
            tracing::warn!("{message}");
            *lock(&self.notice) = Some(message);
        }
        // No snapshot will take them now; what they hold is let go.
        let mut deferred = lock(&self.deferred);
        lock(&self.preimages).clear();
        deferred.clear();
    }

    /// Checkpoints taken since the last call, for the transcript.
    pub fn drain(&self) -> Vec<Record> {
        std::mem::take(&mut *lock(&self.pending))
    }

    /// Why checkpoints stopped, once.
    pub fn take_notice(&self) -> Option<String> {
        lock(&self.notice).take()
    }

    /// The files as they are now, as a tree, without recording a checkpoint (`--diff`).
    pub async fn snapshot_tree(&self) -> Result<String, String> {
        let mut state = self.state.lock().await;
        let tree = async {
            self.shadow.init()?;
            Self::scan(&mut state, Scope::Everything, None).await
        };
        let (tree, _) = tree.await.map_err(|e| e.to_string())?;
        drop(state);
        self.settle().await.map_err(|e| e.to_string())?;
        Ok(objects::hex(&tree))
    }

    /// Snapshots the files as they are now (so the rewind can itself be undone) and plans
    /// putting back the checkpoint `records[index]` of the session kept in `transcript`
    /// (the other sessions beside it are consulted too).
    pub async fn plan_restore(
        &self,
        transcript: &Path,
        records: &[Record],
        index: usize,
    ) -> Result<restore::Plan, String> {
        let since = records.get(index).map_or("", |r| r.timestamp.as_str());
        let others = record::others_since(transcript, since);
        let now = self
            .take(Kind::Rewind, record::Detail::default())
            .await
            .ok_or_else(|| {
                self.take_notice()
                    .unwrap_or_else(|| "checkpoints are off for this session".into())
            })?;
        restore::plan(&self.shadow, records, index, &now.commit, &others)
            .await
            .map_err(|e| e.to_string())
    }

    /// Carries out `plan`; files changed outside ouro are overwritten only when `force`d.
    pub async fn restore(
        &self,
        plan: &restore::Plan,
        force: bool,
    ) -> Result<restore::Applied, String> {
        let applied = restore::apply(&self.shadow, &self.root, plan, force)
            .await
            .map_err(|e| e.to_string())?;
        self.wrote(None);
        self.take(Kind::End, record::Detail::default()).await;
        Ok(applied)
    }
}

#[cfg(test)]
mod tests;
