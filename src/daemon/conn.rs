//! One socket connection as two channels: frames read arrive on `incoming` (closed when the
//! peer goes away), frames given to `outgoing` are written in order. A task each side, so a
//! slow peer never blocks the one who produces its frames.

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::frame::{self, Frame, FrameError};

/// Frames queued behind the first are written with it up to this many bytes: a relay's flood
/// goes out in large writes, not one system call per chunk the brain printed.
const COALESCE: usize = 256 * 1024;

/// How many frames may wait to be written before producers must wait or drop.
pub(super) const OUTGOING: usize = 4096;

pub(super) struct Conn {
    pub incoming: mpsc::Receiver<Result<Frame, FrameError>>,
    pub outgoing: mpsc::Sender<Frame>,
    writer: tokio::task::JoinHandle<()>,
}

impl Conn {
    pub(super) fn new(stream: UnixStream) -> Conn {
        let (read, write) = stream.into_split();
        Conn::over(read, write)
    }

    /// A connection over any byte pipe (a zone's ssh: its stdout and stdin).
    pub(super) fn over(
        read: impl AsyncRead + Unpin + Send + 'static,
        mut write: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Conn {
        // A frame is read in three parts (lengths, header, payload): one system call, not three.
        let mut read = tokio::io::BufReader::with_capacity(64 * 1024, read);
        let (in_tx, incoming) = mpsc::channel(256);
        let (outgoing, mut out_rx) = mpsc::channel::<Frame>(OUTGOING);
        tokio::spawn(async move {
            loop {
                match frame::read(&mut read).await {
                    Ok(Some(frame)) => {
                        if in_tx.send(Ok(frame)).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => return,
                    Err(e) => {
                        let _ = in_tx.send(Err(e)).await;
                        return;
                    }
                }
            }
        });
        let writer = tokio::spawn(async move {
            let mut buf = Vec::new();
            while let Some(frame) = out_rx.recv().await {
                if let Err(e) = write_queued(&mut write, frame, &mut out_rx, &mut buf).await {
                    tracing::debug!(error = %e, "a daemon connection closed while writing");
                    return;
                }
            }
        });
        Conn {
            incoming,
            outgoing,
            writer,
        }
    }

    /// Stops queueing and waits (a few seconds at most) until what is queued was written.
    pub(super) async fn close(self) {
        drop(self.outgoing);
        drop(self.incoming);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.writer).await;
    }

    /// The next frame; `None` when the peer is gone (closed, or sent something unreadable).
    pub(super) async fn next(&mut self) -> Option<Frame> {
        match self.incoming.recv().await? {
            Ok(frame) => Some(frame),
            Err(e) => {
                tracing::debug!(error = %e, "dropping a daemon connection");
                None
            }
        }
    }

    /// Queues a frame; `false` when the peer is gone.
    pub(super) async fn send(&self, frame: impl Into<Frame>) -> bool {
        self.outgoing.send(frame.into()).await.is_ok()
    }
}

/// Writes `first` and the frames queued behind it, up to [`COALESCE`] bytes, in one write.
async fn write_queued(
    out: &mut (impl AsyncWrite + Unpin),
    first: Frame,
    queued: &mut mpsc::Receiver<Frame>,
    buf: &mut Vec<u8>,
) -> Result<(), FrameError> {
    buf.clear();
    frame::encode_into(&first, buf)?;
    while buf.len() < COALESCE {
        let Ok(frame) = queued.try_recv() else { break };
        frame::encode_into(&frame, buf)?;
    }
    out.write_all(buf).await?;
    out.flush().await?;
    Ok(())
}
