//! The server's accept loop: axum's router on hyper's HTTP/1 connections, with what
//! `axum::serve` cannot set: a client must send a request's headers within 10 s
//! (`OURO_SERVE_HEADER_TIMEOUT_MS`), so connections left half-open (slowloris) cannot pile up.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;

/// How long a connection may take to send a request's headers (each request's, keep-alive
/// included) before it is closed.
fn header_read_timeout() -> Duration {
    std::env::var("OURO_SERVE_HEADER_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// How long connections get to finish once the server is stopping: a client that stopped
/// reading (a suspended tab) or an upload that never ends must not keep the server up.
const DRAIN: Duration = Duration::from_secs(5);

/// Serves `app` until `shutdown` resolves, then lets every connection finish what it is
/// sending (SSE streams end when the server closes them), for at most [`DRAIN`], and returns.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let (closing, closed) = watch::channel(false);
    let connections = TaskTracker::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let header_timeout = header_read_timeout();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of descriptors or a connection reset before accept: the listener
                // itself is fine; a moment later it accepts again.
                Err(e) => {
                    tracing::warn!(error = %e, "could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small SSE writes go out at once, not after the peer's delayed ACK (40 ms).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let service = TowerToHyperService::new(app.clone());
        let mut closed = closed.clone();
        connections.spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let connection = http
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            let mut connection = std::pin::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                _ = async { let _ = closed.wait_for(|c| *c).await; } => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "a connection ended with an error");
            }
        });
    }
    closing.send_replace(true);
    connections.close();
    if tokio::time::timeout(DRAIN, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            "{} connection(s) did not finish within {} s of the stop; closing them",
            connections.len(),
            DRAIN.as_secs()
        );
    }
    Ok(())
}
