//! A request body in shared pieces. The conversation's messages are encoded once and reused by
//! every later request; building a body, sending it, or sending it again after a failure copies
//! none of them.

use std::convert::Infallible;
use std::task::Poll;

use bytes::Bytes;
use tokio::sync::oneshot;

/// Held by a request's body and let go of once the connection has taken the body's last byte,
/// or when the body is dropped unsent (a failed or cancelled attempt): see [`when_sent`].
#[derive(Debug)]
pub struct Sent(oneshot::Sender<()>);

/// Resolves once the request that carries the [`Sent`] is on its way, or will never be.
pub type WhenSent = oneshot::Receiver<()>;

/// A pair for work that should not compete with sending a request (a checkpoint's walk of the
/// project): it awaits the [`WhenSent`] while the request's body carries the [`Sent`].
pub fn when_sent() -> (Sent, WhenSent) {
    let (tx, rx) = oneshot::channel();
    (Sent(tx), rx)
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Body {
    pieces: Vec<Bytes>,
    len: usize,
}

impl Body {
    pub fn push(&mut self, piece: Bytes) {
        if !piece.is_empty() {
            self.len += piece.len();
            self.pieces.push(piece);
        }
    }

    /// The body's size in bytes (sent as `Content-Length`).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole body in one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        for piece in &self.pieces {
            out.extend_from_slice(piece);
        }
        out
    }

    /// The body for one HTTP request: the pieces are shared, not copied. `sent` is let go of
    /// when the connection takes the last piece (or drops the body).
    pub(crate) fn to_http(&self, sent: Option<Sent>) -> reqwest::Body {
        match (self.pieces.as_slice(), sent) {
            ([], None) => reqwest::Body::from(Bytes::new()),
            ([one], None) => reqwest::Body::from(one.clone()),
            (_, mut sent) => {
                let mut pieces = self.pieces.clone().into_iter();
                reqwest::Body::wrap_stream(futures::stream::poll_fn(move |_| {
                    let piece = pieces.next();
                    if pieces.len() == 0
                        && let Some(Sent(sent)) = sent.take()
                    {
                        let _ = sent.send(());
                    }
                    Poll::Ready(piece.map(Ok::<Bytes, Infallible>))
                }))
            }
        }
    }
}

impl From<Vec<u8>> for Body {
    fn from(bytes: Vec<u8>) -> Self {
        let mut body = Body::default();
        body.push(Bytes::from(bytes));
        body
    }
}
