//! `serve/logs/harness.log` under ouro's home: one JSON object a line (time, kind, session,
//! the event's fields), messages cut at 200 characters, rotated at 10 MB to `harness.log.1`.

use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::sys::sync::lock;

const ROTATE_AT: u64 = 10 << 20;
const MESSAGE_CHARS: usize = 200;

pub(super) struct HarnessLog {
    file: PathBuf,
    /// The file, kept open between records; the writers take turns on it.
    out: Mutex<Option<Open>>,
}

impl HarnessLog {
    pub(super) fn new(file: PathBuf) -> HarnessLog {
        HarnessLog {
            file,
            out: Mutex::new(None),
        }
    }

    /// Appends one record; a log that cannot be written is not worth failing a turn for.
    pub(super) fn record(&self, kind: &str, session_id: &str, mut fields: Value) {
        if let Some(map) = fields.as_object_mut() {
            for value in map.values_mut() {
                if let Some(text) = value.as_str() {
                    let (cut, _) = crate::text::prefix_chars(text, MESSAGE_CHARS);
                    *value = Value::from(cut);
                }
            }
        }
        let mut line = json!({
            "ts": super::store::now(),
            "kind": kind,
            "sessionId": session_id,
        });
        if let (Some(line), Some(fields)) = (line.as_object_mut(), fields.as_object()) {
            line.extend(fields.clone());
        }
        let Ok(mut bytes) = serde_json::to_vec(&line) else {
            return;
        };
        bytes.push(b'\n');
        let mut out = lock(&self.out);
        if self.append(&mut out, &bytes).is_err() {
            *out = None;
        }
    }

    fn append(&self, out: &mut Option<Open>, line: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        // The path is asked each time, not the open file: a log someone else removed or moved
        // away is opened afresh rather than written where nobody looks.
        let now = std::fs::metadata(&self.file).ok();
        let full = now.as_ref().is_some_and(|m| m.len() >= ROTATE_AT);
        if full {
            std::fs::rename(&self.file, self.file.with_extension("log.1"))?;
        }
        let ours = match (&*out, &now) {
            (Some(open), Some(now)) => !full && open.id == (now.dev(), now.ino()),
            _ => false,
        };
        if !ours {
            *out = None;
        }
        let open = match out {
            Some(open) => open,
            None => {
                let file = crate::sys::atomic::open_to_append(&self.file)?;
                let meta = file.metadata()?;
                out.insert(Open {
                    id: (meta.dev(), meta.ino()),
                    file,
                })
            }
        };
        crate::sys::atomic::append_whole_to(&mut open.file, line)
    }
}

/// The log file as opened, and which file that was.
struct Open {
    file: std::fs::File,
    id: (u64, u64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_json_lines_with_cut_messages_and_rotate() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("logs/harness.log");
        let log = HarnessLog::new(file.clone());
        log.record("stderr", "s1", json!({"message": "x".repeat(500)}));
        let text = std::fs::read_to_string(&file).unwrap();
        let v: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["kind"], "stderr");
        assert_eq!(v["sessionId"], "s1");
        assert_eq!(v["message"].as_str().unwrap().len(), 200);
        std::fs::write(&file, vec![b'x'; ROTATE_AT as usize]).unwrap();
        log.record("turn", "s1", json!({}));
        assert!(dir.path().join("logs/harness.log.1").exists());
        assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 1);
        // Removed or moved away by someone else: the next record starts the file again.
        std::fs::remove_file(&file).unwrap();
        log.record("turn", "s2", json!({}));
        std::fs::rename(&file, dir.path().join("moved.log")).unwrap();
        log.record("turn", "s3", json!({}));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("s3") && !text.contains("s2"), "{text}");
        // A log already full when the server starts is rotated by its first record.
        std::fs::write(&file, vec![b'x'; ROTATE_AT as usize]).unwrap();
        HarnessLog::new(file.clone()).record("turn", "s4", json!({}));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with('{') && text.contains("s4"), "{text:.80}");
    }
}
