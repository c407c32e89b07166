//! A request body in shared pieces. The conversation's messages are encoded once and reused by
//! every later request; building a body, sending it, or sending it again after a failure copies
//! none of them.

use bytes::Bytes;

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

    /// The body for one HTTP request: the pieces are shared, not copied.
    pub(crate) fn to_http(&self) -> reqwest::Body {
        match self.pieces.as_slice() {
            [] => reqwest::Body::from(Bytes::new()),
            [one] => reqwest::Body::from(one.clone()),
            _ => reqwest::Body::wrap_stream(futures::stream::iter(
                self.pieces
                    .clone()
                    .into_iter()
                    .map(Ok::<Bytes, std::convert::Infallible>),
            )),
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
