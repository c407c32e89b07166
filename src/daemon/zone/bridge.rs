//! `ouro daemon bridge`: what a zone's ssh runs on the far side. It starts the host's daemon
//! when none runs, then carries bytes between ssh's stdio and the daemon's socket, unread: the
//! frames, the handshake included, are the daemon's and the far client's business, so a zone
//! speaks the same protocol as a local socket.

use std::path::PathBuf;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

use super::super::{DaemonError, Paths, client};

pub async fn run(paths: &Paths) -> Result<(), DaemonError> {
    let mut socket = daemon(paths).await?.1;
    let mut stdio = tokio::io::join(stdin(), stdout());
    // Either side closing ends the bridge: ssh's link dropped, or the daemon answered and
    // closed.
    let _ = tokio::io::copy_bidirectional(&mut socket, &mut stdio).await;
    Ok(())
}

/// ssh's end of the pipe to us, read as a non-blocking pipe: tokio's own stdin reads on a
/// blocking thread, a hop every keystroke pays. Anything but a pipe is read as tokio does.
fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    use std::os::fd::AsFd;
    std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| pipe::Receiver::from_file(std::fs::File::from(fd)).ok())
        .map_or_else(
            || Box::new(tokio::io::stdin()) as Box<dyn AsyncRead + Unpin + Send>,
            |pipe| Box::new(pipe),
        )
}

/// `ouro daemon socket`: the socket of this user's daemon (started when none runs), for a
/// zone that forwards it instead of running the bridge.
pub async fn socket(paths: &Paths) -> Result<PathBuf, DaemonError> {
    Ok(daemon(paths).await?.0)
}

/// Connects to this user's daemon, starting one when none runs: the socket it answers on.
async fn daemon(paths: &Paths) -> Result<(PathBuf, UnixStream), DaemonError> {
    // The client's handshake is its own: the bridge's stream carries the far client's.
    let path = client::Client::connect(paths, true).await?.socket;
    let socket = UnixStream::connect(&path)
        .await
        .map_err(|source| DaemonError::Io {
            action: "connect to the daemon at",
            path: path.clone(),
            source,
        })?;
    client::ours(&socket, &path)?;
    Ok((path, socket))
}

/// [`stdin`]'s other half: our end of the pipe to ssh.
fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    use std::os::fd::AsFd;
    std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| pipe::Sender::from_file(std::fs::File::from(fd)).ok())
        .map_or_else(
            || Box::new(tokio::io::stdout()) as Box<dyn AsyncWrite + Unpin + Send>,
            |pipe| Box::new(pipe),
        )
}
