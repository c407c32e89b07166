//! Reading a command's stdout and stderr as they arrive: streamed to the progress sink and kept,
//! interleaved and capped, for the result.

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe::Receiver;

use crate::text::HeadTail;
use crate::tools::Progress;

/// Streams both pipes to `progress` chunk by chunk and keeps them, interleaved, in `kept`.
pub(super) async fn read_output(
    stdout: Option<Receiver>,
    stderr: Option<Receiver>,
    kept: &mut HeadTail,
    progress: &Progress,
) {
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];
    let mut out_text = Utf8Stream::default();
    let mut err_text = Utf8Stream::default();
    let (mut out_open, mut err_open) = (stdout.is_some(), stderr.is_some());
    let (mut stdout, mut stderr) = (stdout, stderr);
    let mut emit = |text: String| {
        if !text.is_empty() {
            kept.push(&text);
            progress.emit(text);
        }
    };
    while out_open || err_open {
        tokio::select! {
            read = read_some(&mut stdout, &mut out_buf), if out_open => match read {
                0 => { out_open = false; emit(out_text.finish()); }
                n => emit(out_text.decode(&out_buf[..n])),
            },
            read = read_some(&mut stderr, &mut err_buf), if err_open => match read {
                0 => { err_open = false; emit(err_text.finish()); }
                n => emit(err_text.decode(&err_buf[..n])),
            },
        }
    }
}

/// A read error ends the stream like EOF: the command's exit status still tells what happened.
async fn read_some(pipe: &mut Option<impl AsyncReadExt + Unpin>, buf: &mut [u8]) -> usize {
    match pipe {
        Some(pipe) => pipe.read(buf).await.unwrap_or(0),
        None => 0,
    }
}

/// Decodes UTF-8 that arrives in arbitrary pieces, holding back a character cut in two.
#[derive(Default)]
struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    fn decode(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut text = String::new();
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    text.push_str(valid);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    text.push_str(&String::from_utf8_lossy(valid));
                    match e.error_len() {
                        Some(bad) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[bad..];
                        }
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        self.pending = rest.to_vec();
        text
    }

    fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_across_reads_is_kept_whole() {
        let mut stream = Utf8Stream::default();
        let bytes = "añb".as_bytes();
        assert_eq!(stream.decode(&bytes[..2]), "a");
        assert_eq!(stream.decode(&bytes[2..]), "ñb");
        assert_eq!(stream.decode(&[0xff, b'c']), "\u{FFFD}c");
        assert_eq!(stream.decode(&[0xc3]), "");
        assert_eq!(stream.finish(), "\u{FFFD}");
    }
}
