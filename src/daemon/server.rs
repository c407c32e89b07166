//! The daemon process: takes the home's lock (one daemon per home), listens on the socket,
//! recovers the clones from disk and serves one request per connection until stopped.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::{UnixListener, UnixStream};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::clone::CloneHandle;
use super::conn::Conn;
use super::frame::{self, ForwardedEnv, Frame, Header, PROTOCOL};
use super::store::{self, CloneRecord, CloneStore};
use super::{DaemonError, Paths, agent, dispatch, talk};

mod zoned;
use crate::brain::BrainConfig;
use crate::sys::sync::lock;

/// How long a permission question waits for an answer before the call is denied.
const PERMISSION_TIMEOUT: Duration = Duration::from_secs(300);

pub(super) struct Daemon {
    paths: Paths,
    store: CloneStore,
    clones: Mutex<BTreeMap<String, Arc<CloneHandle>>>,
    /// Clones in zones: their brains run under the zones' daemons.
    zoned: Mutex<BTreeMap<String, CloneRecord>>,
    started: Instant,
    pub shutdown: CancellationToken,
    pub permission_timeout: Duration,
    foundry: Arc<agent::Foundry>,
    /// Bumped whenever a question is parked in any clone or leaves one.
    questions: tokio::sync::watch::Sender<u64>,
}

/// Runs the daemon in this process until `ouro daemon stop`, SIGTERM or SIGINT.
pub async fn run(paths: Paths) -> Result<(), DaemonError> {
    let io = |action, path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| DaemonError::Io {
            action,
            path,
            source,
        }
    };
    std::fs::create_dir_all(&paths.state).map_err(io("create", &paths.state))?;
    let _lock = take_lock(&paths)?;
    paths.prepare_socket_dir()?;
    // The lock is ours, so a socket left here belongs to a daemon that died.
    match std::fs::remove_file(&paths.socket) {
        Ok(()) => tracing::info!(socket = %paths.socket.display(), "replaced a stale socket"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("remove the stale socket", &paths.socket)(e)),
    }
    let (mut listener, mut socket_id) = listen(&paths)?;
    let mut socket_check = tokio::time::interval(SOCKET_CHECK);

    let daemon = Arc::new(Daemon::recover(paths));
    daemon.paths.record_socket();
    let connections = tokio_util::task::TaskTracker::new();
    let mut term =
        signal(SignalKind::terminate()).map_err(io("watch signals", &daemon.paths.state))?;
    let mut int =
        signal(SignalKind::interrupt()).map_err(io("watch signals", &daemon.paths.state))?;
    tracing::info!(pid = std::process::id(), socket = %daemon.paths.socket.display(), "daemon ready");
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let daemon = daemon.clone();
                    connections.spawn(async move { daemon.serve(stream).await });
                }
                Err(e) => tracing::warn!(error = %e, "could not accept a connection"),
            },
            _ = socket_check.tick() => {
                // Its folder removed (a cleaned runtime dir) or the socket replaced: clients
                // would find no daemon, so it listens again where they look.
                if file_id(&daemon.paths.socket) != socket_id {
                    match daemon.paths.prepare_socket_dir().and_then(|()| {
                        let _ = std::fs::remove_file(&daemon.paths.socket);
                        listen(&daemon.paths)
                    }) {
                        Ok((again, id)) => {
                            (listener, socket_id) = (again, id);
                            daemon.paths.record_socket();
                            tracing::warn!(socket = %daemon.paths.socket.display(), "the socket was gone; listening on a new one");
                        }
                        Err(e) => tracing::warn!(error = %e, "the socket is gone and could not be made again"),
                    }
                }
            }
            _ = daemon.shutdown.cancelled() => break,
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    // New clients find no daemon (and start one) instead of one that no longer answers.
    drop(listener);
    let _ = std::fs::remove_file(&daemon.paths.socket);
    daemon.paths.forget_socket();
    daemon.shutdown.cancel();
    let clones: Vec<_> = lock(&daemon.clones).values().cloned().collect();
    for clone in clones {
        if let Err(e) = clone.brain.kill().await {
            tracing::warn!(clone = clone.name(), error = %e, "could not stop a brain");
        }
    }
    // Every client hears how its request ended before the process goes.
    connections.close();
    let _ = tokio::time::timeout(Duration::from_secs(10), connections.wait()).await;
    Ok(())
}

/// How often the daemon checks that its socket is still where clients look.
const SOCKET_CHECK: Duration = Duration::from_secs(1);

/// A socket file as (device, inode).
type FileId = (u64, u64);

fn file_id(path: &std::path::Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// Listens on the socket of `paths`, only this user may connect; with the socket file's id.
fn listen(paths: &Paths) -> Result<(UnixListener, Option<FileId>), DaemonError> {
    let failed = |action| {
        let path = paths.socket.clone();
        move |source| DaemonError::Io {
            action,
            path,
            source,
        }
    };
    let listener = UnixListener::bind(&paths.socket).map_err(failed("listen on"))?;
    std::fs::set_permissions(&paths.socket, std::fs::Permissions::from_mode(0o600))
        .map_err(failed("protect"))?;
    Ok((listener, file_id(&paths.socket)))
}

/// The home's daemon lock, held for the daemon's life; its file names the holder's pid.
fn take_lock(paths: &Paths) -> Result<File, DaemonError> {
    let path = paths.lock();
    let failed = |source| DaemonError::Io {
        action: "lock",
        path: path.clone(),
        source,
    };
    match crate::sys::flock::hold(&path, &std::process::id().to_string()).map_err(failed)? {
        crate::sys::flock::Held::Ours(file) => Ok(file),
        // The file holds the daemon's bare pid.
        crate::sys::flock::Held::Theirs(said) => Err(DaemonError::AlreadyRunning {
            holder: match said.parse::<u32>() {
                Ok(pid) => format!("pid {pid}"),
                Err(_) => said,
            },
        }),
    }
}

impl Daemon {
    /// The daemon with every clone stored in the home; a clone whose brain cannot be opened
    /// (its slug no longer exists, say) is left on disk and reported in the log.
    fn recover(paths: Paths) -> Daemon {
        let store = CloneStore::new(paths.clones());
        let questions = tokio::sync::watch::channel(0).0;
        let mut clones = BTreeMap::new();
        let mut zoned = BTreeMap::new();
        for record in store.load_all() {
            if record.zone.is_some() {
                zoned.insert(record.name.clone(), record);
                continue;
            }
            match open_clone(&store, record.clone(), &ForwardedEnv::default(), &questions) {
                Ok(handle) => {
                    clones.insert(record.name.clone(), handle);
                }
                Err(e) => {
                    tracing::warn!(clone = record.name, error = %e, "could not recover a clone")
                }
            }
        }
        let permission_timeout = std::env::var("OURO_DAEMON_PERMISSION_TIMEOUT")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(PERMISSION_TIMEOUT, Duration::from_secs);
        Daemon {
            foundry: Arc::new(agent::Foundry::new(&paths)),
            paths,
            store,
            clones: Mutex::new(clones),
            zoned: Mutex::new(zoned),
            started: Instant::now(),
            shutdown: CancellationToken::new(),
            permission_timeout,
            questions,
        }
    }

    /// Every parked question of every clone and agent.
    fn pending(&self) -> Vec<frame::PendingQuestion> {
        lock(&self.clones)
            .values()
            .flat_map(|c| c.pending())
            .collect()
    }

    /// Sends the parked questions now and again after every change, until the client goes
    /// or the daemon stops.
    async fn follow_pending(&self, conn: &mut Conn) {
        let mut changes = self.questions.subscribe();
        loop {
            // Marked seen before the list is read: a change while it is read sends it again.
            changes.mark_unchanged();
            let header = Header::Pending {
                questions: self.pending(),
            };
            if !conn.send(header).await {
                return;
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                // The client sends nothing more: anything, or its going, ends the stream.
                _ = conn.next() => return,
                _ = self.shutdown.cancelled() => return,
            }
        }
    }

    fn clone_named(&self, name: &str) -> Result<Arc<CloneHandle>, DaemonError> {
        lock(&self.clones)
            .get(name)
            .cloned()
            .ok_or_else(|| DaemonError::NoClone {
                name: name.to_string(),
            })
    }

    async fn serve(self: Arc<Self>, mut stream: UnixStream) {
        // The socket's directory already keeps others out; this holds even if it were opened.
        // SAFETY: getuid has no preconditions and cannot fail.
        let me = unsafe { libc::getuid() };
        if stream.peer_cred().ok().map(|c| c.uid()) != Some(me) {
            tracing::warn!("refused a connection from another user");
            return;
        }
        match frame::read(&mut stream).await {
            Ok(Some(Frame {
                header: Header::Hello { protocol, version },
                ..
            })) if protocol == PROTOCOL => {
                let welcome = Header::Welcome {
                    protocol: PROTOCOL,
                    version: env!("CARGO_PKG_VERSION").into(),
                    pid: std::process::id(),
                };
                if frame::write(&mut stream, &welcome.into()).await.is_err() {
                    return;
                }
                tracing::debug!(client_version = version, "a client connected");
            }
            Ok(Some(Frame {
                header: Header::Hello { protocol, version },
                ..
            })) => {
                let reason = format!(
                    "the client (ouro {version}) speaks daemon protocol {protocol}, this daemon (ouro {}, pid {}) speaks {PROTOCOL}; stop the daemon with that client's `ouro daemon stop` and run the command again",
                    env!("CARGO_PKG_VERSION"),
                    std::process::id()
                );
                let _ = frame::write(&mut stream, &Header::Refused { reason }.into()).await;
                return;
            }
            _ => {
                let reason =
                    "expected a hello frame first (is this an ouro client of the same version?)"
                        .to_string();
                let _ = frame::write(&mut stream, &Header::Refused { reason }.into()).await;
                return;
            }
        }
        let mut conn = Conn::new(stream);
        let Some(request) = conn.next().await else {
            return;
        };
        let answer = match self.handle(request, &mut conn).await {
            Ok(answer) => answer,
            Err(e) => Some(Header::Error {
                message: e.to_string(),
            }),
        };
        if let Some(header) = answer {
            conn.send(header).await;
        }
        conn.close().await;
    }

    /// Serves one request; the answer frame, if the request has a single one.
    async fn handle(
        self: &Arc<Self>,
        request: Frame,
        conn: &mut Conn,
    ) -> Result<Option<Header>, DaemonError> {
        if let Some(record) = relayed(&request.header).and_then(|name| self.zoned(name)) {
            return self.relay_to_zone(record, request, conn).await;
        }
        Ok(Some(match request.header {
            Header::Status => Header::StatusReport {
                pid: std::process::id(),
                version: env!("CARGO_PKG_VERSION").into(),
                socket: self.paths.socket.clone(),
                home: self.paths.home.clone(),
                clones: lock(&self.clones).len(),
                uptime_secs: self.started.elapsed().as_secs(),
            },
            Header::Stop => {
                self.shutdown.cancel();
                Header::Ok {
                    message: format!("the daemon (pid {}) stops", std::process::id()),
                }
            }
            Header::CloneNew {
                name,
                brain,
                dir,
                permission_mode,
                pass_env,
                zone,
                env,
            } => {
                let record = CloneRecord {
                    name,
                    brain,
                    dir,
                    permission_mode,
                    pass_env,
                    agent: false,
                    zone,
                    created_at: chrono::Utc::now().to_rfc3339(),
                };
                if record.zone.is_some() {
                    self.zone_clone_new(record, env).await?
                } else {
                    self.clone_new(record, &env)?
                }
            }
            Header::CloneList => {
                let mut clones: Vec<_> = lock(&self.clones).values().map(|c| c.info()).collect();
                clones.extend(self.zoned_infos().await);
                clones.sort_by(|a, b| a.name.cmp(&b.name));
                Header::Clones { clones }
            }
            Header::CloneRm { name } => self.clone_rm(&name).await?,
            Header::Dispatch {
                name,
                verb,
                prompt,
                lines,
            } => {
                let clone = self.clone_named(&name)?;
                dispatch::run(clone, conn, verb, prompt, lines, self.permission_timeout).await;
                return Ok(None);
            }
            Header::Watch {
                name,
                replay,
                since,
            } => {
                let clone = self.clone_named(&name)?;
                let after = replay.then_some(since);
                talk::watch(clone, conn, &self.shutdown, after).await;
                return Ok(None);
            }
            Header::Talk { name, cols, rows } => {
                let clone = self.clone_named(&name)?;
                let size = crate::brain::TermSize { cols, rows };
                talk::run(clone, conn, size, &self.shutdown).await;
                return Ok(None);
            }
            Header::AgentRun {
                name,
                task,
                dir,
                brain,
                detach,
            } => {
                self.agent_run(conn, name, task, dir, brain, detach).await?;
                return Ok(None);
            }
            Header::AgentStop { name } => {
                let run_id = self.foundry.stop(&name)?;
                Header::Ok {
                    message: format!("stopping the agent {name} (run {run_id})"),
                }
            }
            Header::AgentPending { here_only } => {
                let mut questions = self.pending();
                if !here_only {
                    questions.extend(self.zoned_pending().await);
                }
                Header::Pending { questions }
            }
            Header::AgentPendingFollow => {
                self.follow_pending(conn).await;
                return Ok(None);
            }
            Header::AgentAnswer {
                request_id,
                allow,
                always,
                message,
                here_only,
            } => {
                let clones: Vec<_> = lock(&self.clones).values().cloned().collect();
                let answered = clones
                    .iter()
                    .find(|c| c.answer_with(&request_id, allow, always, message.clone()));
                let none = |also: &str| Header::Error {
                    message: format!(
                        "no question {request_id} is waiting (it was answered, timed out, or its run ended){also}; `ouro agent pending` lists those that are"
                    ),
                };
                match answered {
                    Some(clone) => Header::Ok {
                        message: format!(
                            "{} the call of {} ({request_id})",
                            if allow { "allowed" } else { "denied" },
                            clone.name()
                        ),
                    },
                    None if here_only => none(""),
                    None => match self
                        .zoned_answer(request_id.clone(), allow, always, message)
                        .await
                    {
                        Ok(answered) => answered,
                        Err(unasked) if unasked.is_empty() => none(""),
                        Err(unasked) => {
                            none(&format!(" here or in a zone that answered ({unasked})"))
                        }
                    },
                }
            }
            other => Header::Error {
                message: format!(
                    "expected a request, got a {} frame",
                    serde_json::to_value(&other)
                        .ok()
                        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(String::from))
                        .unwrap_or_default()
                ),
            },
        }))
    }

    fn clone_new(
        &self,
        mut record: CloneRecord,
        env: &ForwardedEnv,
    ) -> Result<Header, DaemonError> {
        store::check_name(&record.name)?;
        if let Some(mode) = &record.permission_mode {
            store::check_mode(mode)?;
        }
        record.dir = store::check_dir(&record.dir)?;
        let name = record.name.clone();
        let mut clones = lock(&self.clones);
        if clones.contains_key(&name) || self.zoned(&name).is_some() {
            return Err(DaemonError::CloneExists { name });
        }
        let handle = open_clone(&self.store, record.clone(), env, &self.questions)?;
        self.store.save(&record)?;
        clones.insert(name.clone(), handle);
        Ok(Header::Ok {
            message: format!(
                "clone {name} ({}) works in {}",
                record.brain,
                record.dir.display()
            ),
        })
    }

    /// Starts a run of the agent instance `name` on its clone (made, or remade for another
    /// directory or brain, as needed); without `detach`, follows it on `conn` to its result.
    async fn agent_run(
        self: &Arc<Self>,
        conn: &mut Conn,
        name: String,
        task: String,
        dir: std::path::PathBuf,
        brain: Option<String>,
        detach: bool,
    ) -> Result<(), DaemonError> {
        let instance = self
            .foundry
            .instances
            .get(&name)
            .map_err(|e| DaemonError::Client(e.to_string()))?;
        let config = instance
            .config()
            .map_err(|e| DaemonError::Client(e.to_string()))?;
        let record = CloneRecord {
            name: name.clone(),
            brain: agent::brain_slug(&config, brain.as_deref()).map_err(DaemonError::Client)?,
            dir: store::check_dir(&dir)?,
            permission_mode: config.permission_mode.clone(),
            pass_env: Vec::new(),
            agent: true,
            zone: None,
            created_at: chrono::Utc::now().to_rfc3339(),
        };
        let (run_id, stop) = self.foundry.claim(&name)?;
        let clone = match self.agent_clone(record) {
            Ok(clone) => clone,
            Err(e) => {
                self.foundry.stop(&name).ok();
                return Err(e);
            }
        };
        // Subscribed before the run starts, so the follower misses none of it.
        let (_, rx) = clone.watch();
        let started = Header::AgentStarted {
            name: name.clone(),
            run_id: run_id.clone(),
            dir: clone.record.dir.clone(),
        };
        let request = agent::RunRequest {
            task,
            dir: clone.record.dir.clone(),
        };
        tokio::spawn(agent::run(
            self.foundry.clone(),
            clone.clone(),
            instance,
            run_id.clone(),
            stop,
            request,
        ));
        conn.send(started).await;
        if !detach {
            talk::follow(&clone, conn, &self.shutdown, None, rx, Some(&run_id)).await;
        }
        Ok(())
    }

    /// The clone an agent run uses: the instance's own, made anew when the run's directory or
    /// brain differ from the last run's. A clone of that name that is not an agent's is left
    /// alone, and the run refused.
    fn agent_clone(&self, record: CloneRecord) -> Result<Arc<CloneHandle>, DaemonError> {
        let name = record.name.clone();
        let mut clones = lock(&self.clones);
        if let Some(existing) = clones.get(&name) {
            if !existing.record.agent {
                return Err(DaemonError::Client(format!(
                    "a clone named {name} that is not an agent exists; `ouro clone rm {name}` removes it, or give the agent another name"
                )));
            }
            if existing.record.dir == record.dir && existing.record.brain == record.brain {
                return Ok(existing.clone());
            }
            if existing.try_take_turn().is_none() {
                return Err(DaemonError::Busy {
                    name,
                    what: "a turn or a talk runs, or waits",
                });
            }
        }
        let handle = open_clone(
            &self.store,
            record.clone(),
            &ForwardedEnv::default(),
            &self.questions,
        )?;
        self.store.save(&record)?;
        if let Some(old) = clones.insert(name, handle.clone()) {
            // Its process ends with it (a clone's process lives only for a turn anyway).
            tokio::spawn(async move {
                let _ = old.brain.kill().await;
            });
        }
        Ok(handle)
    }

    async fn clone_rm(&self, name: &str) -> Result<Header, DaemonError> {
        let clone = self.clone_named(name)?;
        // Held through the removal, so no turn or talk starts on a clone being removed.
        let Some(_queue) = clone.try_take_turn() else {
            return Err(DaemonError::Busy {
                name: name.to_string(),
                what: "a turn or a talk runs, or waits",
            });
        };
        lock(&self.clones).remove(name);
        if let Err(e) = clone.brain.kill().await {
            tracing::warn!(clone = name, error = %e, "could not stop the brain of a removed clone");
        }
        clone.broadcast(
            Header::Notice {
                message: format!("the clone {name} was removed"),
            }
            .into(),
        );
        self.store.remove(name)?;
        Ok(Header::Ok {
            message: format!("removed the clone {name}"),
        })
    }
}

/// The clone a request is about, when it is one this daemon may relay to a zone.
fn relayed(header: &Header) -> Option<&str> {
    match header {
        Header::Dispatch { name, .. }
        | Header::Watch { name, .. }
        | Header::Talk { name, .. }
        | Header::CloneRm { name } => Some(name),
        _ => None,
    }
}

/// A clone's handle and brain; `env`: variables a client forwarded (`--forward-env`), given
/// to the brain from memory only.
fn open_clone(
    store: &CloneStore,
    record: CloneRecord,
    env: &ForwardedEnv,
    questions: &tokio::sync::watch::Sender<u64>,
) -> Result<Arc<CloneHandle>, DaemonError> {
    let mut config =
        BrainConfig::new(&record.dir, store.brain_dir(&record.name)).pass_env(&record.pass_env);
    for (name, value) in &env.0 {
        config = config.env(name, value);
    }
    if !env.is_empty() {
        let names: Vec<&str> = env.0.keys().map(String::as_str).collect();
        config = config.env(crate::sys::secrets::SCRUB_ENV, names.join(","));
    }
    let brain = crate::brain::open(&record.brain, config).map_err(|source| DaemonError::Brain {
        name: record.name.clone(),
        source,
    })?;
    let state = store.dir(&record.name);
    Ok(CloneHandle::new(record, brain, &state, questions.clone()))
}
