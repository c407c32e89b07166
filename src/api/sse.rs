//! Server-sent events framing (the WHATWG `text/event-stream` rules), linear in the bytes
//! received whatever the length of a line: each byte is searched for a line end once, and a
//! line that is still arriving is only appended to, never re-scanned. One event is capped, so a
//! line that never ends cannot grow without bound.

use std::collections::VecDeque;

/// A line at least this long is moved into an event's data rather than copied.
const BIG_LINE: usize = 64 * 1024;

/// One dispatched event: its `event:` name ("message" if none was given) and its `data:`
/// lines joined with newlines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub event: String,
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error(
        "one event of the response stream is larger than {limit} bytes; raise OURO_STREAM_MAX_EVENT_BYTES if such events are expected"
    )]
    TooLarge { limit: usize },
    #[error("an event of the response stream is not valid UTF-8")]
    NotUtf8,
}

/// Splits a byte stream into events.
#[derive(Debug)]
pub struct Decoder {
    /// Bytes not yet consumed: at most the start of one line.
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no line end.
    scanned: usize,
    /// The last line ended with CR: a LF that starts the next chunk belongs to it.
    after_cr: bool,
    event: String,
    data: Vec<u8>,
    has_data: bool,
    limit: usize,
}

impl Decoder {
    /// `limit` caps one event: its data plus the line still arriving.
    pub fn new(limit: usize) -> Self {
        Decoder {
            buf: Vec::new(),
            scanned: 0,
            after_cr: false,
            event: String::new(),
            data: Vec::new(),
            has_data: false,
            limit,
        }
    }

    /// Takes the next bytes of the stream; the events they complete are pushed onto `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<Frame>) -> Result<(), SseError> {
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        loop {
            if self.after_cr {
                match self.buf.get(start) {
                    None => break,
                    Some(b'\n') => start += 1,
                    Some(_) => {}
                }
                self.after_cr = false;
            }
            let from = self.scanned.max(start);
            let Some(offset) = self.buf[from..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r')
            else {
                self.scanned = self.buf.len();
                break;
            };
            let end = from + offset;
            self.after_cr = self.buf[end] == b'\r';
            if start == 0
                && end >= BIG_LINE
                && self.data.is_empty()
                && self.buf.starts_with(b"data:")
            {
                self.take_big_data_line(end)?;
                start = 0;
                self.scanned = 0;
                continue;
            }
            let line = std::mem::take(&mut self.buf);
            let result = self.line(&line[start..end], out);
            self.buf = line;
            result?;
            start = end + 1;
            self.scanned = start;
        }
        self.buf.drain(..start);
        self.scanned -= start;
        if self.buf.len() + self.data.len() > self.limit {
            return Err(SseError::TooLarge { limit: self.limit });
        }
        Ok(())
    }

    /// The first `data:` line of an event, ending at `end`, that is large (one long text
    /// delta): its bytes become the event's data where they lie, instead of being copied, so a
    /// 50 MB delta is not held twice here.
    fn take_big_data_line(&mut self, end: usize) -> Result<(), SseError> {
        let mut line = std::mem::take(&mut self.buf);
        self.buf = line.split_off(end + 1);
        line.truncate(end);
        let prefix = if line.get(5) == Some(&b' ') { 6 } else { 5 };
        line.drain(..prefix);
        if line.len() + 1 > self.limit {
            return Err(SseError::TooLarge { limit: self.limit });
        }
        line.push(b'\n');
        self.data = line;
        self.has_data = true;
        Ok(())
    }

    fn line(&mut self, line: &[u8], out: &mut VecDeque<Frame>) -> Result<(), SseError> {
        if line.is_empty() {
            return self.dispatch(out);
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"event" => {
                self.event = String::from_utf8(value.to_vec()).map_err(|_| SseError::NotUtf8)?;
            }
            b"data" => {
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(SseError::TooLarge { limit: self.limit });
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
                self.has_data = true;
            }
            // `id` and `retry` steer browser reconnection, which a one-shot request does not do.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut VecDeque<Frame>) -> Result<(), SseError> {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return Ok(());
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        let data = String::from_utf8(data).map_err(|_| SseError::NotUtf8)?;
        out.push_back(Frame {
            event: if event.is_empty() {
                "message".into()
            } else {
                event
            },
            data,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]], limit: usize) -> Result<Vec<Frame>, SseError> {
        let mut d = Decoder::new(limit);
        let mut out = VecDeque::new();
        for c in chunks {
            d.feed(c, &mut out)?;
        }
        Ok(out.into_iter().collect())
    }

    fn frame(event: &str, data: &str) -> Frame {
        Frame {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let body = b"event: ping\ndata: {\"type\":\"ping\"}\n\n: comment\nevent: a\ndata: 1\ndata:2\n\ndata: x\n\n";
        let expected = vec![
            frame("ping", "{\"type\":\"ping\"}"),
            frame("a", "1\n2"),
            frame("message", "x"),
        ];
        assert_eq!(decode(&[body], 1 << 20).unwrap(), expected);
        for cut in 0..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(decode(&[a, b], 1 << 20).unwrap(), expected, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode(&bytes, 1 << 20).unwrap(), expected);
    }

    #[test]
    fn a_big_data_line_decodes_as_a_small_one_does_however_it_is_cut() {
        let big = "y".repeat(BIG_LINE + 10);
        for end in ["\n", "\r\n", "\r"] {
            let body = format!("event: d\ndata: {big}{end}data:more{end}{end}data:{big}{end}{end}");
            let expected = vec![frame("d", &format!("{big}\nmore")), frame("message", &big)];
            for size in [1, 7, 4096, BIG_LINE, body.len()] {
                let chunks: Vec<&[u8]> = body.as_bytes().chunks(size).collect();
                assert_eq!(
                    decode(&chunks, 1 << 20).unwrap(),
                    expected,
                    "{end:?} in {size}"
                );
            }
        }
        let body = format!("data: {big}\n\n");
        assert_eq!(
            decode(&[body.as_bytes()], BIG_LINE),
            Err(SseError::TooLarge { limit: BIG_LINE })
        );
    }

    #[test]
    fn cr_and_crlf_end_lines_too() {
        let expected = vec![frame("a", "1"), frame("b", "2")];
        assert_eq!(
            decode(&[b"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r"], 100).unwrap(),
            expected
        );
        assert_eq!(
            decode(
                &[
                    b"event: a\r",
                    b"\ndata: 1\r",
                    b"\n\r",
                    b"\nevent: b\rdata: 2\r\r"
                ],
                100
            )
            .unwrap(),
            expected
        );
    }

    #[test]
    fn an_unfinished_event_is_not_dispatched() {
        assert_eq!(decode(&[b"data: 1\n"], 100).unwrap(), vec![]);
        assert_eq!(decode(&[b"event: a\n\n"], 100).unwrap(), vec![]);
    }

    #[test]
    fn a_line_that_never_ends_is_stopped_at_the_limit() {
        let mut d = Decoder::new(1000);
        let mut out = VecDeque::new();
        d.feed(b"data: ", &mut out).unwrap();
        let chunk = [b'x'; 100];
        let mut failed = None;
        for i in 0..20 {
            if let Err(e) = d.feed(&chunk, &mut out) {
                failed = Some((i, e));
                break;
            }
        }
        assert_eq!(failed, Some((9, SseError::TooLarge { limit: 1000 })));
    }

    #[test]
    fn many_data_lines_are_capped_together() {
        let many = b"data: 0123456789\n".repeat(10);
        assert!(matches!(
            decode(&[&many], 100),
            Err(SseError::TooLarge { limit: 100 })
        ));
    }

    #[test]
    fn a_huge_line_in_small_chunks_is_linear() {
        // 8 MB in 1 KiB chunks: a quadratic rescan would touch ~32 TB; this takes milliseconds.
        let mut d = Decoder::new(16 << 20);
        let mut out = VecDeque::new();
        d.feed(b"data: ", &mut out).unwrap();
        let chunk = [b'y'; 1024];
        for _ in 0..8192 {
            d.feed(&chunk, &mut out).unwrap();
        }
        d.feed(b"\n\n", &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data.len(), 8 << 20);
    }
}
