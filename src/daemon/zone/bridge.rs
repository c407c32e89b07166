//! `ouro daemon bridge`: what a zone's ssh runs on the far side. It starts the host's daemon
//! when none runs, then carries bytes between ssh's stdio and the daemon's socket, unread: the
//! frames, the handshake included, are the daemon's and the far client's business, so a zone
//! speaks the same protocol as a local socket.

use tokio::net::UnixStream;

use super::super::{DaemonError, Paths, client};

pub async fn run(paths: &Paths) -> Result<(), DaemonError> {
    // Connecting once makes sure a daemon runs (starting one) and is this user's.
    drop(client::Client::connect(paths, true).await?);
    let mut socket =
        UnixStream::connect(&paths.socket)
            .await
            .map_err(|source| DaemonError::Io {
                action: "connect to the daemon at",
                path: paths.socket.clone(),
                source,
            })?;
    client::ours(&socket, &paths.socket)?;
    let mut stdio = tokio::io::join(tokio::io::stdin(), tokio::io::stdout());
    // Either side closing ends the bridge: ssh's link dropped, or the daemon answered and
    // closed.
    let _ = tokio::io::copy_bidirectional(&mut socket, &mut stdio).await;
    Ok(())
}
