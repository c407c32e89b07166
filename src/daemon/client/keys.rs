//! The detach key sequence, in `docker attach`'s notation (`ctrl-p,ctrl-q` by default; set
//! `detachKeys` in ~/.ouro/settings.json or pass `--detach-keys`), and the scanner that finds
//! it in the keyboard bytes. Everything else passes through untouched: a held prefix of the
//! sequence is sent on as soon as the next byte shows it was not the sequence.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetachKeys {
    keys: Vec<u8>,
    matched: usize,
}

impl DetachKeys {
    /// Parses `ctrl-p,ctrl-q`, `ctrl-a,d`, `ctrl-\` …: comma-separated keys, each a single
    /// ASCII character or `ctrl-` and one of `a`–`z`, `@`, `[`, `\`, `]`, `^`, `_`.
    pub fn parse(spec: &str) -> Result<DetachKeys, String> {
        let mut keys = Vec::new();
        for part in spec.split(',') {
            let lower = part.trim().to_ascii_lowercase();
            let byte = match lower.strip_prefix("ctrl-") {
                Some(key) => match key.as_bytes() {
                    [c @ b'a'..=b'z'] => c - b'a' + 1,
                    [b'@'] => 0,
                    [c @ (b'[' | b'\\' | b']' | b'^' | b'_')] => c - b'@',
                    _ => return Err(bad(spec, part)),
                },
                None => match part.trim().as_bytes() {
                    [c] if c.is_ascii_graphic() => *c,
                    _ => return Err(bad(spec, part)),
                },
            };
            keys.push(byte);
        }
        Ok(DetachKeys { keys, matched: 0 })
    }

    /// The bytes to send on for `input`, and whether the sequence was completed (what follows
    /// it in `input` is dropped: the talk ends there).
    pub fn feed(&mut self, input: &[u8]) -> (Vec<u8>, bool) {
        let mut out = Vec::with_capacity(input.len());
        for &byte in input {
            let mut candidate = self.keys[..self.matched].to_vec();
            candidate.push(byte);
            // The longest end of what was typed that may still begin the sequence (a held
            // `a a` of `a,a,d` followed by `a` keeps `a a` and sends the first `a` on).
            let keep = (0..=candidate.len().min(self.keys.len()))
                .rev()
                .find(|&n| self.keys.starts_with(&candidate[candidate.len() - n..]))
                .unwrap_or(0);
            out.extend_from_slice(&candidate[..candidate.len() - keep]);
            if keep == self.keys.len() {
                self.matched = 0;
                return (out, true);
            }
            self.matched = keep;
        }
        (out, false)
    }
}

fn bad(spec: &str, part: &str) -> String {
    format!(
        "`{spec}` is not a detach key sequence (`{part}` is not a key): write keys as in docker, e.g. ctrl-p,ctrl-q or ctrl-a,d"
    )
}

impl Default for DetachKeys {
    fn default() -> Self {
        DetachKeys {
            keys: vec![0x10, 0x11],
            matched: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_ctrl_p_ctrl_q() {
        assert_eq!(
            DetachKeys::parse("ctrl-p,ctrl-q").unwrap(),
            DetachKeys::default()
        );
        assert_eq!(DetachKeys::parse("ctrl-a,d").unwrap().keys, vec![1, b'd']);
        assert_eq!(DetachKeys::parse("ctrl-\\").unwrap().keys, vec![0x1c]);
        for bad in ["", "ctrl-", "ctrl-pp", "ab", "ctrl-1", " "] {
            assert!(DetachKeys::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bytes_pass_through_and_the_sequence_detaches() {
        let mut keys = DetachKeys::default();
        assert_eq!(keys.feed(b"ls\r"), (b"ls\r".to_vec(), false));
        assert_eq!(keys.feed(b"a\x10\x11rest"), (b"a".to_vec(), true));
    }

    #[test]
    fn a_sequence_split_across_reads_still_detaches() {
        let mut keys = DetachKeys::default();
        assert_eq!(keys.feed(b"x\x10"), (b"x".to_vec(), false));
        assert_eq!(keys.feed(b"\x11"), (Vec::new(), true));
    }

    #[test]
    fn a_held_prefix_is_sent_on_when_the_sequence_breaks() {
        let mut keys = DetachKeys::default();
        assert_eq!(keys.feed(b"\x10"), (Vec::new(), false));
        assert_eq!(keys.feed(b"k"), (b"\x10k".to_vec(), false));
        // Ctrl-P twice: the first is sent, the second may start the sequence.
        assert_eq!(keys.feed(b"\x10\x10"), (b"\x10".to_vec(), false));
        assert_eq!(keys.feed(b"\x11"), (Vec::new(), true));
    }

    #[test]
    fn a_sequence_with_a_repeated_key_is_found_after_an_extra_press() {
        let mut keys = DetachKeys::parse("ctrl-a,ctrl-a,d").unwrap();
        assert_eq!(keys.feed(b"\x01\x01\x01d"), (b"\x01".to_vec(), true));
        let mut keys = DetachKeys::parse("ctrl-a,ctrl-a,d").unwrap();
        assert_eq!(keys.feed(b"\x01\x01x"), (b"\x01\x01x".to_vec(), false));
    }

    #[test]
    fn binary_input_is_untouched() {
        let mut keys = DetachKeys::default();
        let all: Vec<u8> = (0..=255u8).filter(|b| *b != 0x10).collect();
        assert_eq!(keys.feed(&all), (all.clone(), false));
    }
}
