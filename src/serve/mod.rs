//! `ouro serve`: Chirality's harness API over HTTP and SSE, for a GUI that runs coding agents
//! in sessions, each with a persona and a mode. Every turn runs on a brain through
//! [`crate::brain::BrainCli::turn`] (ouro's own or the claude CLI, by slug); its UI events are
//! numbered and kept per session, so a reload or a dropped connection loses nothing.
//!
//! Safe by default: loopback only, a token for every API call, `Host` and `Origin` checked,
//! no CORS unless asked, secrets filtered out of every process a turn starts.

mod approvals;
mod auth;
mod error;
mod events;
mod listen;
mod log;
mod memory;
mod prompt;
mod record;
mod routes;
mod state;
mod store;
mod turn;
mod web;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

pub use error::ApiError;
pub use state::ServeOptions;

use state::AppState;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "could not listen on {address}: {source}. Another server may be using the port; stop it or pick another with --port"
    )]
    Bind {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("could not read or create the token file {path}: {source}")]
    Token {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("ouro has no home folder for its sessions (set OURO_HOME)")]
    NoHome,
    #[error(
        "another ouro serve ({holder}) already uses the ouro home {home}; one server per home keeps its sessions whole: use that one, stop it, or give this one another home with OURO_HOME"
    )]
    AlreadyRunning { holder: String, home: PathBuf },
    #[error("could not lock {path}: {source}")]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped with an error: {0}")]
    Serve(#[source] std::io::Error),
}

/// Binds, prints where to open it, and serves until SIGINT or SIGTERM; then every running
/// turn is ended cleanly (its stream gets `process:exit`, its session is saved). The Approvals
/// inbox shows the questions parked `elsewhere` beside the sessions' own.
pub async fn run(
    options: ServeOptions,
    elsewhere: Vec<Arc<dyn crate::brain::parked::Elsewhere>>,
) -> Result<(), ServeError> {
    let home = crate::settings::ouro_home().ok_or(ServeError::NoHome)?;
    let lock = hold_home(&home)?;
    let token_file = options
        .token_file
        .clone()
        .unwrap_or_else(|| home.join("serve/token"));
    let token = auth::load_or_create(&token_file).map_err(|source| ServeError::Token {
        path: token_file.clone(),
        source,
    })?;
    let address = format!("{}:{}", options.host, options.port);
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .map_err(|source| ServeError::Bind {
            address: address.clone(),
            source,
        })?;
    let bound: SocketAddr = listener.local_addr().map_err(ServeError::Serve)?;
    if !bound.ip().is_loopback() {
        eprintln!(
            "warning: ouro serve listens on {bound}, reachable from other machines; anyone with the token can run commands here"
        );
    }
    if !crate::sys::secrets::claude_can_scrub() {
        eprintln!(
            "warning: bubblewrap (bwrap) is not installed, so sessions on a claude@ brain pass the API key to Claude Code's own tool processes; install bubblewrap and socat to keep it from them"
        );
    }
    // What the server keeps (sessions, events with tool output, logs) is the user's alone.
    let own = home.join("serve");
    if std::fs::create_dir_all(&own).is_ok() {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o700));
    }
    let state = Arc::new(AppState {
        address: bound.to_string(),
        token,
        token_file: token_file.clone(),
        sessions: Mutex::new(Default::default()),
        prompts: Default::default(),
        log: log::HarnessLog::new(home.join("serve/logs/harness.log")),
        closing: tokio::sync::watch::channel(false).0,
        approvals: tokio::sync::watch::channel(0).0,
        elsewhere,
        warm: warm_policy(&home),
        preparing: Default::default(),
        home,
        options,
    });
    tokio::spawn(state::keep_cool(state.clone()));
    for source in &state.elsewhere {
        tokio::spawn(source.follow(state.approvals.clone()));
    }
    for (session, written) in record::load_all(&state.home) {
        match state.make_live(session.clone(), written) {
            Ok(live) => {
                // A server that did not stop cleanly left saves in the journal.
                if let Err(e) = live.fold(&state.home) {
                    tracing::warn!(session = %session.id, error = %e, "could not fold a served session's journal");
                }
                crate::sys::sync::lock(&state.sessions).insert(session.id.clone(), live);
            }
            Err(e) => {
                tracing::warn!(session = %session.id, error = %e, "skipping a served session whose brain cannot be opened")
            }
        }
    }
    let host = if bound.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        bound.ip().to_string()
    };
    println!(
        "ouro serve: http://{host}:{}/?token={}",
        bound.port(),
        state.token
    );
    println!("token file: {}", token_file.display());
    // Who holds the home, for a second server to name.
    {
        use std::io::Write as _;
        let mut file = &lock;
        let _ = file
            .set_len(0)
            .and_then(|()| writeln!(file, "pid {} at http://{bound}/", std::process::id()));
    }
    let app = router(state.clone());
    let shutdown = {
        let state = state.clone();
        async move {
            wait_for_signal().await;
            end_all_turns(&state).await;
            state.fold_all();
            state.closing.send_replace(true);
        }
    };
    listen::serve(listener, app, shutdown)
        .await
        .map_err(ServeError::Serve)
}

/// `serve.brainIdleSeconds` and `serve.maxWarmBrains` from the user's settings.
fn warm_policy(home: &std::path::Path) -> crate::brain::warm::WarmPolicy {
    let mut policy = crate::brain::warm::WarmPolicy::default();
    if let Ok(Some(settings)) = crate::settings::read_settings(&home.join("settings.json")) {
        if let Some(seconds) = settings.serve.brain_idle_seconds {
            policy.idle = std::time::Duration::from_secs(seconds);
        }
        if let Some(max) = settings.serve.max_warm_brains {
            policy.max_warm = max;
        }
    }
    policy
}

/// The lock that makes this the one server of `home` (held until the process ends, however).
fn hold_home(home: &std::path::Path) -> Result<std::fs::File, ServeError> {
    let path = home.join("serve/serve.lock");
    let held = crate::sys::flock::hold(&path, &format!("pid {}", std::process::id())).map_err(
        |source| ServeError::Lock {
            path: path.clone(),
            source,
        },
    )?;
    match held {
        crate::sys::flock::Held::Ours(file) => Ok(file),
        crate::sys::flock::Held::Theirs(holder) => Err(ServeError::AlreadyRunning {
            holder,
            home: home.to_path_buf(),
        }),
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // Without signal handlers the server runs until it is killed.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}

async fn end_all_turns(state: &AppState) {
    let lives: Vec<_> = crate::sys::sync::lock(&state.sessions)
        .values()
        .cloned()
        .collect();
    let stops = lives.iter().map(|l| routes::stop_turn(l));
    futures::future::join_all(stops).await;
}

fn router(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route("/", get(web::index))
        .route("/app.js", get(web::script))
        .route("/render.js", get(web::render))
        .route("/memory.js", get(web::memory))
        .route("/style.css", get(web::style))
        .route("/api/auth", post(routes::auth))
        .route("/api/harness/session/create", post(routes::create))
        .route("/api/harness/session/list", get(routes::list))
        .route(
            "/api/harness/session/{id}",
            get(routes::get).delete(routes::delete),
        )
        .route("/api/harness/session/{id}/events", get(routes::events))
        .route("/api/harness/session/{id}/history", get(routes::history))
        .route("/api/harness/turn", post(routes::turn))
        .route("/api/harness/interrupt", post(routes::interrupt))
        .route("/api/harness/permission", post(approvals::permission))
        .route("/api/harness/approvals", get(approvals::list))
        .route("/api/harness/approvals/events", get(approvals::events))
        .route("/api/harness/approvals/{id}", post(approvals::answer))
        .route("/api/harness/personas", get(routes::personas))
        .route("/api/harness/projects", get(routes::projects))
        .route("/api/harness/files", get(routes::files))
        .route("/api/harness/memory", get(memory::graph));
    api.fallback(|| async {
        ApiError::not_found("there is no such route; the API is under /api/harness/")
    })
    .layer(DefaultBodyLimit::max(error::BODY_LIMIT))
    .layer(axum::middleware::map_response(error::json_errors))
    .layer(axum::middleware::from_fn_with_state(
        state.clone(),
        auth::guard,
    ))
    .with_state(state)
}
