//! The transcript: every message of a session, appended as it happens. The user's message is
//! on disk before the request that answers it starts, so nothing a user typed is ever lost.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::api::types::{ContentBlock, Message, Role};

/// One line as read back (what loading needs of it; the rest is for people and tools).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Entry {
    Meta {
        session_id: String,
        model: String,
    },
    User {
        message: Message,
    },
    /// One finished block of an assistant message; blocks with the same `message_id` form one
    /// message, so a crash mid-message keeps what had finished.
    Assistant {
        message_id: String,
        message: Message,
    },
    /// Compaction (or a rewind) replaced the history with `messages`; what came before is not
    /// loaded.
    Compact {
        messages: Vec<Message>,
    },
    /// A snapshot of the project's files (see `checkpoint`, which reads these lines itself);
    /// not part of the conversation.
    Checkpoint {},
    /// Auto mode's reviewer judged a call: a record for people and tools, not conversation.
    AutoReview {},
    /// Memory's reflect step ran: a record of its cost, not conversation.
    MemoryReflect {},
}

/// One line as written: the same shape as [`Entry`], borrowing what it writes, so a large
/// message is not copied to be saved.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Written<'a> {
    Meta {
        session_id: &'a str,
        cwd: &'a str,
        model: &'a str,
        timestamp: &'a str,
    },
    User {
        uuid: &'a str,
        timestamp: &'a str,
        message: &'a Message,
    },
    Assistant {
        uuid: &'a str,
        timestamp: &'a str,
        message_id: &'a str,
        message: MessageRef<'a>,
    },
    Compact {
        uuid: &'a str,
        timestamp: &'a str,
        messages: &'a [Message],
    },
    Checkpoint {
        record: &'a crate::checkpoint::Record,
    },
    AutoReview(&'a crate::event::ReviewInfo),
    MemoryReflect(&'a crate::event::ReflectInfo),
}

/// A [`Message`] of borrowed blocks.
#[derive(Serialize)]
struct MessageRef<'a> {
    role: Role,
    content: &'a [ContentBlock],
}

#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error(
        "could not write the transcript {path}: {source}{}",
        persistence_hint(source)
    )]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not read the transcript {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Another process wrote this conversation while this one waited between turns.
    #[error(
        "the conversation {session} was continued by another process since this one last wrote it; resume it again (--resume {session}) to go on from there"
    )]
    Changed { session: String },
    /// Another process writes this conversation now.
    #[error(
        "the conversation {session} is in use by another ouro ({holder}); wait for it to finish, or continue a copy of it with --fork-session"
    )]
    Busy {
        session: String,
        holder: String,
        /// The holder's pid, when the lock says.
        pid: Option<u32>,
    },
}

/// What to do when the transcript's folder cannot be written at all.
fn persistence_hint(source: &std::io::Error) -> &'static str {
    let unwritable = matches!(
        source.kind(),
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    );
    if unwritable {
        ". Point OURO_HOME at a writable folder, or pass --no-session-persistence to run without saving the session"
    } else {
        ""
    }
}

pub struct Transcript {
    path: PathBuf,
    file: File,
    /// The file's length when the lock was let go between turns.
    let_go_at: Option<u64>,
}

/// Takes the conversation's advisory lock on the open transcript, or says who holds it.
fn lock_exclusive(file: &File, path: &Path) -> Result<(), TranscriptError> {
    let taken =
        crate::sys::flock::try_exclusive(file).map_err(|source| TranscriptError::Write {
            path: path.to_path_buf(),
            source,
        })?;
    if taken {
        return Ok(());
    }
    let session = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let pid = crate::sys::flock::holder(file);
    let holder = match pid {
        Some(pid) => format!("pid {pid}"),
        None => "another process".into(),
    };
    Err(TranscriptError::Busy {
        session,
        holder,
        pid,
    })
}

/// Whether the conversation in `path` is free to write now (a missing file is): the lock
/// taken and let go at once, so a caller can refuse early instead of failing mid-way.
pub fn check_free(path: &Path) -> Result<(), TranscriptError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(TranscriptError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    // Dropping the file on return releases the lock again.
    lock_exclusive(&file, path)
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl Transcript {
    /// Start a new transcript (or continue an existing file) at `path`.
    pub fn open(
        path: &Path,
        session_id: &str,
        cwd: &Path,
        model: &str,
    ) -> Result<Self, TranscriptError> {
        let err = |source| TranscriptError::Write {
            path: path.to_path_buf(),
            source,
        };
        // Transcripts hold private code and conversations: only the user may read them.
        if let Some(parent) = path.parent() {
            crate::sys::atomic::make_private_dir(parent).map_err(err)?;
        }
        let fresh = !path.exists();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(err)?;
        // One writer per conversation: a CLI process holds the lock for its life, a server for
        // as long as it writes; the kernel drops it when the holder dies.
        lock_exclusive(&file, path)?;
        let torn = !fresh && ends_in_torn_line(path).map_err(err)?;
        // A transcript written before this rule (or copied in) is tightened too.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(err)?;
        let mut t = Transcript {
            path: path.to_path_buf(),
            file,
            let_go_at: None,
        };
        // A crash mid-write leaves a last line without its newline; the next entry must start
        // on a line of its own, or it is glued to the torn one and lost on the next load.
        if torn {
            t.file.write_all(b"\n").map_err(err)?;
        }
        if fresh {
            t.write(&Written::Meta {
                session_id,
                cwd: &cwd.to_string_lossy(),
                model,
                timestamp: &now(),
            })?;
        }
        Ok(t)
    }

    /// Lets go of the conversation between turns of a process that waits for its next prompt,
    /// so a CLI may continue it meanwhile.
    pub fn let_go(&mut self) -> Result<(), TranscriptError> {
        let err = |source| TranscriptError::Write {
            path: self.path.clone(),
            source,
        };
        let len = self.file.metadata().map_err(err)?.len();
        crate::sys::flock::unlock(&self.file).map_err(err)?;
        self.let_go_at = Some(len);
        Ok(())
    }

    /// Takes the conversation back for a turn: refused while another process holds it, and
    /// when one wrote to it meanwhile (what this process holds in memory is then out of date).
    pub fn take_back(&mut self) -> Result<(), TranscriptError> {
        let Some(len) = self.let_go_at else {
            return Ok(());
        };
        lock_exclusive(&self.file, &self.path)?;
        let now = self
            .file
            .metadata()
            .map_err(|source| TranscriptError::Write {
                path: self.path.clone(),
                source,
            })?
            .len();
        if now != len {
            let _ = crate::sys::flock::unlock(&self.file);
            return Err(TranscriptError::Changed {
                session: self
                    .path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            });
        }
        self.let_go_at = None;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn append_user(&mut self, message: &Message) -> Result<(), TranscriptError> {
        self.write(&Written::User {
            uuid: &uuid(),
            timestamp: &now(),
            message,
        })
    }

    pub fn append_assistant_block(
        &mut self,
        message_id: &str,
        block: &ContentBlock,
    ) -> Result<(), TranscriptError> {
        self.write(&Written::Assistant {
            uuid: &uuid(),
            timestamp: &now(),
            message_id,
            message: MessageRef {
                role: Role::Assistant,
                content: std::slice::from_ref(block),
            },
        })
    }

    pub fn append_compaction(&mut self, messages: &[Message]) -> Result<(), TranscriptError> {
        self.write(&Written::Compact {
            uuid: &uuid(),
            timestamp: &now(),
            messages,
        })
    }

    pub fn append_reflect(
        &mut self,
        reflect: &crate::event::ReflectInfo,
    ) -> Result<(), TranscriptError> {
        self.write(&Written::MemoryReflect(reflect))
    }

    pub fn append_review(
        &mut self,
        review: &crate::event::ReviewInfo,
    ) -> Result<(), TranscriptError> {
        self.write(&Written::AutoReview(review))
    }

    pub fn append_checkpoint(
        &mut self,
        record: &crate::checkpoint::Record,
    ) -> Result<(), TranscriptError> {
        self.write(&Written::Checkpoint { record })
    }

    /// A line is serialised straight into a buffer of [`LINE_BUFFER`] bytes: one `write` for
    /// a line that fits (nearly all), several for a large one, which is then never held whole
    /// in memory a second time. A crash leaves at worst one truncated last line.
    fn write(&mut self, entry: &Written<'_>) -> Result<(), TranscriptError> {
        let before = self.file.metadata().map(|m| m.len());
        let written = {
            let mut out = std::io::BufWriter::with_capacity(LINE_BUFFER, &mut self.file);
            serde_json::to_writer(&mut out, entry)
                .map_err(std::io::Error::other)
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush())
        };
        written.and_then(|_| self.file.flush()).map_err(|source| {
            // A line the disk took only part of is cut off again, so the transcript
            // stays whole lines (what a full disk would otherwise leave torn).
            if let Ok(len) = before {
                let _ = self.file.set_len(len);
            }
            TranscriptError::Write {
                path: self.path.clone(),
                source,
            }
        })
    }
}

/// Lines up to this size go to the file in one write.
const LINE_BUFFER: usize = 256 * 1024;

fn ends_in_torn_line(path: &Path) -> std::io::Result<bool> {
    let mut file = File::open(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

/// A transcript read back.
#[derive(Debug, Default)]
pub struct Loaded {
    pub session_id: Option<String>,
    pub model: Option<String>,
    pub messages: Vec<Message>,
    /// Lines that could not be read (a truncated last line after a crash, typically).
    pub skipped_lines: usize,
}

/// Read a transcript: its first line for the session's facts, then only what follows its last
/// compaction (found by scanning back from the end), line by line. Resuming a huge session costs
/// the live conversation, not the file.
pub fn load(path: &Path) -> Result<Loaded, TranscriptError> {
    let read_error = |source| TranscriptError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(read_error)?;
    let mut out = Loaded::default();
    let start = last_compaction(&mut file).map_err(read_error)?;
    if let Some(at) = start {
        if let Some((session_id, model)) = read_meta(&mut file).map_err(read_error)? {
            out.session_id = Some(session_id);
            out.model = Some(model);
        }
        file.seek(SeekFrom::Start(at)).map_err(read_error)?;
    }
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut last_assistant_id: Option<String> = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(read_error)?;
        if n == 0 {
            break;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let entry: Entry = match serde_json::from_slice(&line) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "skipping an unreadable transcript line");
                out.skipped_lines += 1;
                continue;
            }
        };
        match entry {
            Entry::Meta {
                session_id, model, ..
            } => {
                out.session_id.get_or_insert(session_id);
                out.model.get_or_insert(model);
            }
            Entry::User { message, .. } => {
                last_assistant_id = None;
                out.messages.push(message);
            }
            Entry::Assistant {
                message_id,
                message,
                ..
            } => {
                match (out.messages.last_mut(), last_assistant_id.as_deref()) {
                    (Some(last), Some(id)) if last.role == Role::Assistant => {
                        let abandoned = last.content.iter().all(|b| {
                            matches!(
                                b,
                                ContentBlock::Thinking { .. }
                                    | ContentBlock::RedactedThinking { .. }
                            )
                        });
                        if id == message_id {
                            last.content.extend(message.content)
                        } else if abandoned {
                            // Thinking alone, then another message: an attempt whose stream
                            // broke before any answer and that was sent again.
                            *last = message;
                        } else {
                            // Two answers in a row (after pause_turn): one message, as in the
                            // live session.
                            last.content.extend(message.content)
                        }
                    }
                    _ => out.messages.push(message),
                }
                last_assistant_id = Some(message_id);
            }
            Entry::Compact { messages, .. } => {
                last_assistant_id = None;
                out.messages = messages;
            }
            Entry::Checkpoint { .. } | Entry::AutoReview { .. } | Entry::MemoryReflect { .. } => {}
        }
    }
    Ok(out)
}

/// The session id and model a transcript was started with, read from its first line only.
pub fn meta(path: &Path) -> Result<Option<(String, String)>, TranscriptError> {
    File::open(path)
        .and_then(|mut file| read_meta(&mut file))
        .map_err(|source| TranscriptError::Read {
            path: path.to_path_buf(),
            source,
        })
}

/// The facts of the first line of `file`, read from where it stands (its start).
fn read_meta(file: &mut File) -> std::io::Result<Option<(String, String)>> {
    let mut first = Vec::new();
    BufReader::new(file)
        .take(MAX_META_LINE)
        .read_until(b'\n', &mut first)?;
    Ok(match serde_json::from_slice(&first) {
        Ok(Entry::Meta {
            session_id, model, ..
        }) => Some((session_id, model)),
        _ => None,
    })
}

/// The session's first prompt: its first user message with text, read from the start of the
/// file (a resume skips it once the session was compacted, but a session list names it).
pub fn first_prompt(path: &Path) -> Option<String> {
    const LOOK_AT: usize = 200;
    let file = File::open(path).ok()?;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    for _ in 0..LOOK_AT {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        if let Ok(Entry::User { message, .. }) = serde_json::from_slice(&line) {
            let text = message.text();
            if !text.trim().is_empty() {
                return Some(text);
            }
        }
    }
    None
}

/// The first line (the session's facts) is small; a longer one is not read as such.
const MAX_META_LINE: u64 = 64 * 1024;
/// How much of the file is read at a time when scanning back for a compaction.
const SCAN_BLOCK: u64 = 1 << 20;
/// How every compaction line starts: serde writes the tag first, and a raw newline never occurs
/// inside a JSON line, so this can only be the start of a line.
const COMPACT_LINE: &[u8] = b"\n{\"type\":\"compact\"";

/// Where the last readable compaction line starts, scanning back from the end of the file.
fn last_compaction(file: &mut File) -> std::io::Result<Option<u64>> {
    let mut before = file.metadata()?.len();
    while let Some(at) = find_back(file, before)? {
        file.seek(SeekFrom::Start(at))?;
        let mut line = Vec::new();
        BufReader::new(&mut *file).read_until(b'\n', &mut line)?;
        // A compaction torn by a crash is skipped for the one before it.
        if matches!(serde_json::from_slice(&line), Ok(Entry::Compact { .. })) {
            file.seek(SeekFrom::Start(0))?;
            return Ok(Some(at));
        }
        before = at;
    }
    file.seek(SeekFrom::Start(0))?;
    Ok(None)
}

/// The start of the last compaction line that begins before `before`.
fn find_back(file: &mut File, before: u64) -> std::io::Result<Option<u64>> {
    let overlap = COMPACT_LINE.len() as u64 - 1;
    let mut end = before;
    let mut block = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(SCAN_BLOCK);
        // Read a little past `end` so a marker split between two blocks is still seen.
        let stop = (end + overlap).min(before);
        block.resize((stop - start) as usize, 0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block)?;
        if let Some(i) = block
            .windows(COMPACT_LINE.len())
            .rposition(|w| w == COMPACT_LINE)
        {
            return Ok(Some(start + i as u64 + 1));
        }
        end = start;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_unwritable_home_suggests_running_without_saving() {
        for kind in [
            std::io::ErrorKind::ReadOnlyFilesystem,
            std::io::ErrorKind::PermissionDenied,
        ] {
            let error = TranscriptError::Write {
                path: "/home/x/.ouro/projects/p/s.jsonl".into(),
                source: std::io::Error::from(kind),
            };
            assert!(
                error.to_string().contains("--no-session-persistence"),
                "{error}"
            );
        }
        let full = TranscriptError::Write {
            path: "/x".into(),
            source: std::io::Error::from(std::io::ErrorKind::StorageFull),
        };
        assert!(!full.to_string().contains("--no-session-persistence"));
    }

    use super::*;

    #[test]
    fn blocks_merge_into_messages_and_a_truncated_tail_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut t = Transcript::open(&path, "sid", dir.path(), "m").unwrap();
        t.append_user(&Message::user_text("hi")).unwrap();
        t.append_assistant_block("msg1", &ContentBlock::text("a"))
            .unwrap();
        t.append_assistant_block("msg1", &ContentBlock::text("b"))
            .unwrap();
        t.append_user(&Message::user_text("again")).unwrap();
        t.append_assistant_block("msg2", &ContentBlock::text("c"))
            .unwrap();
        drop(t);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"type":"user","uuid":"x","timest"#)
            .unwrap();
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.session_id.as_deref(), Some("sid"));
        assert_eq!(loaded.skipped_lines, 1);
        assert_eq!(loaded.messages.len(), 4);
        assert_eq!(loaded.messages[1].content.len(), 2);
        assert_eq!(loaded.messages[3].text(), "c");
    }

    #[test]
    fn an_entry_after_a_torn_last_line_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut t = Transcript::open(&path, "sid", dir.path(), "m").unwrap();
        t.append_user(&Message::user_text("before")).unwrap();
        drop(t);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"type":"assistant","uuid":"x","mess"#)
            .unwrap();
        drop(f);
        let mut t = Transcript::open(&path, "sid", dir.path(), "m").unwrap();
        t.append_user(&Message::user_text("after")).unwrap();
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.skipped_lines, 1);
        let texts: Vec<String> = loaded.messages.iter().map(Message::text).collect();
        assert_eq!(texts, vec!["before", "after"]);
    }

    #[test]
    fn transcripts_and_their_folders_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("projects/p/s.jsonl");
        Transcript::open(&path, "sid", dir.path(), "m").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        Transcript::open(&path, "sid", dir.path(), "m").unwrap();
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn a_conversation_let_go_between_turns_is_refused_back_once_another_wrote_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s-2.jsonl");
        let mut warm = Transcript::open(&path, "s-2", dir.path(), "m").unwrap();
        warm.let_go().unwrap();
        warm.take_back().unwrap();
        warm.let_go().unwrap();
        {
            let mut cli = Transcript::open(&path, "s-2", dir.path(), "m").unwrap();
            assert!(matches!(
                warm.take_back(),
                Err(TranscriptError::Busy { .. })
            ));
            cli.append_user(&crate::api::types::Message::user_text("hi"))
                .unwrap();
        }
        assert!(matches!(
            warm.take_back(),
            Err(TranscriptError::Changed { .. })
        ));
    }

    #[test]
    fn a_second_writer_of_a_conversation_is_refused_and_told_who_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s-1.jsonl");
        let first = Transcript::open(&path, "s-1", dir.path(), "m").unwrap();
        let Err(TranscriptError::Busy {
            session, holder, ..
        }) = Transcript::open(&path, "s-1", dir.path(), "m")
        else {
            panic!("a second writer was let in");
        };
        assert_eq!(session, "s-1");
        assert_eq!(holder, format!("pid {}", std::process::id()));
        drop(first);
        Transcript::open(&path, "s-1", dir.path(), "m").unwrap();
    }

    #[test]
    fn a_retried_attempt_replaces_the_broken_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut t = Transcript::open(&path, "sid", dir.path(), "m").unwrap();
        t.append_user(&Message::user_text("q")).unwrap();
        let thinking = ContentBlock::Thinking {
            thinking: "first try".into(),
            signature: "s".into(),
        };
        t.append_assistant_block("try1", &thinking).unwrap();
        t.append_assistant_block("try2", &ContentBlock::text("answer"))
            .unwrap();
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.messages.len(), 2);
        assert_eq!(
            loaded.messages[1].content,
            vec![ContentBlock::text("answer")]
        );
    }

    #[test]
    fn loading_starts_at_the_last_readable_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut t = Transcript::open(&path, "sid", dir.path(), "model-x").unwrap();
        t.append_user(&Message::user_text("ancient")).unwrap();
        t.append_compaction(&[Message::user_text("first summary")])
            .unwrap();
        t.append_user(&Message::user_text("middle")).unwrap();
        t.append_compaction(&[Message::user_text("second summary")])
            .unwrap();
        t.append_assistant_block("m", &ContentBlock::text("after"))
            .unwrap();
        drop(t);
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.session_id.as_deref(), Some("sid"));
        assert_eq!(loaded.model.as_deref(), Some("model-x"));
        let texts: Vec<String> = loaded.messages.iter().map(Message::text).collect();
        assert_eq!(texts, ["second summary", "after"]);

        // A compaction torn by a crash falls back to the one before it.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"type":"compact","uuid":"x","timestamp":"t","messages":[{"role":"#)
            .unwrap();
        let loaded = load(&path).unwrap();
        let texts: Vec<String> = loaded.messages.iter().map(Message::text).collect();
        assert_eq!(texts, ["second summary", "after"]);
        assert_eq!(loaded.skipped_lines, 1);
    }

    #[test]
    fn a_marker_split_across_scan_blocks_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut t = Transcript::open(&path, "sid", dir.path(), "m").unwrap();
        t.append_compaction(&[Message::user_text("summary")])
            .unwrap();
        drop(t);
        let at = std::fs::read(&path)
            .unwrap()
            .windows(COMPACT_LINE.len())
            .position(|w| w == COMPACT_LINE)
            .unwrap() as u64;
        // Pad after the compaction so the marker straddles a block boundary from the end.
        let len = std::fs::metadata(&path).unwrap().len();
        for split in 1..COMPACT_LINE.len() as u64 {
            let pad = (SCAN_BLOCK - (len - at) + split) as usize;
            let padded = dir.path().join(format!("p{split}.jsonl"));
            std::fs::copy(&path, &padded).unwrap();
            let mut g = OpenOptions::new().append(true).open(&padded).unwrap();
            g.write_all(&vec![b' '; pad]).unwrap();
            g.write_all(b"\n").unwrap();
            assert_eq!(
                load(&padded).unwrap().messages,
                vec![Message::user_text("summary")],
                "split {split}"
            );
        }
    }

    #[test]
    fn consecutive_answers_are_both_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut t = Transcript::open(&path, "sid", dir.path(), "m").unwrap();
        t.append_user(&Message::user_text("q")).unwrap();
        t.append_assistant_block("m1", &ContentBlock::text("paused"))
            .unwrap();
        t.append_assistant_block("m2", &ContentBlock::text("resumed"))
            .unwrap();
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.messages.len(), 2);
        assert_eq!(loaded.messages[1].text(), "pausedresumed");
    }

    #[test]
    fn the_first_prompt_outlives_a_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut t = Transcript::open(&path, "sid", dir.path(), "m").unwrap();
        t.append_user(&Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result("x", "not a prompt", false)],
        })
        .unwrap();
        t.append_user(&Message::user_text("fix the parser"))
            .unwrap();
        t.append_compaction(&[Message::user_text("summary")])
            .unwrap();
        assert_eq!(first_prompt(&path).as_deref(), Some("fix the parser"));
        assert_eq!(load(&path).unwrap().messages[0].text(), "summary");
    }

    #[test]
    fn compaction_resets_the_history() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut t = Transcript::open(&path, "sid", dir.path(), "m").unwrap();
        t.append_user(&Message::user_text("old")).unwrap();
        t.append_compaction(&[Message::user_text("summary")])
            .unwrap();
        t.append_assistant_block("m3", &ContentBlock::text("new"))
            .unwrap();
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.messages.len(), 2);
        assert_eq!(loaded.messages[0].text(), "summary");
    }
}
