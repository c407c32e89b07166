//! A served session on disk: its record (`sessions/{id}.json`, replaced whole) and the
//! journal of its saves since (`sessions/{id}.jsonl`, a line each). A turn saves its session
//! twice (the message when it starts, the cost when it ends); replacing the record each time
//! made a file and freed one, in the folder every session of a project shares, and was most
//! of what a busy server did per turn. A line appended costs no new file. The record takes
//! the journal in when the server loads the session, when it stops, and every
//! [`FOLD_AT`] lines.
//!
//! The journal is not synced: a power cut may lose its last lines (never the record, which is
//! written aside, synced and renamed), and a torn last line is skipped when it is read.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::store::{Session, TurnRecord, session_file};

/// Journal lines after which the next save rewrites the record instead.
const FOLD_AT: usize = 64;

/// What a session's files hold together, so a save knows what it must add.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Written {
    /// The last save's number: the record holds every save up to `journalSeq`, the journal
    /// the ones after it.
    seq: u64,
    /// The turns of the history on disk.
    history: usize,
    /// Lines in the journal file (counting any the record already holds).
    lines: usize,
    /// The journal ends in a line a crash cut short: the next line starts on a line of its
    /// own, not glued to it.
    torn: bool,
}

#[derive(Serialize)]
struct RecordOut<'a> {
    #[serde(flatten)]
    session: &'a Session,
    #[serde(rename = "journalSeq")]
    journal_seq: u64,
}

#[derive(Deserialize)]
struct RecordIn {
    #[serde(flatten)]
    session: Session,
    #[serde(default, rename = "journalSeq")]
    journal_seq: u64,
}

/// One save: the session's fields as they were (its history left out) and the turns the
/// history gained.
#[derive(Serialize, Deserialize)]
struct Line {
    seq: u64,
    session: Session,
    push: Vec<TurnRecord>,
}

fn journal_file(record: &Path) -> PathBuf {
    record.with_extension("jsonl")
}

/// Removes a deleted session's record, then its journal: a crash between the two leaves a
/// journal no load reads, not a record that brings the session back.
pub(super) fn remove(home: &Path, session: &Session) {
    let record = session_file(home, session);
    let _ = std::fs::remove_file(&record);
    let _ = std::fs::remove_file(journal_file(&record));
}

/// Keeps a new session: its record, and its journal empty (made now rather than by its first
/// turn, which has files enough to make).
pub(super) fn create(home: &Path, session: &Session) -> std::io::Result<Written> {
    let mut written = Written::default();
    fold(home, session, &mut written)?;
    crate::sys::atomic::append_whole(&journal_file(&session_file(home, session)), b"")?;
    Ok(written)
}

/// Saves `session`, after the saves `written` describes: one journal line, or the record
/// rewritten when the journal is long (or the history is not the one on disk plus turns).
pub(super) fn save(
    home: &Path,
    mut session: Session,
    written: &mut Written,
) -> std::io::Result<()> {
    if written.lines >= FOLD_AT || session.history.len() < written.history {
        return fold(home, &session, written);
    }
    let push = session.history.split_off(written.history);
    session.history.clear();
    let line = Line {
        seq: written.seq + 1,
        session,
        push,
    };
    let mut bytes = Vec::new();
    if written.torn {
        bytes.push(b'\n');
    }
    serde_json::to_writer(&mut bytes, &line).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    let record = session_file(home, &line.session);
    crate::sys::atomic::append_whole(&journal_file(&record), &bytes)?;
    written.seq = line.seq;
    written.history += line.push.len();
    written.lines += 1;
    written.torn = false;
    Ok(())
}

/// Rewrites the record whole, the journal's saves in it, and empties the journal.
pub(super) fn fold(home: &Path, session: &Session, written: &mut Written) -> std::io::Result<()> {
    let record = session_file(home, session);
    crate::sys::atomic::write_json(
        &record,
        &RecordOut {
            session,
            journal_seq: written.seq,
        },
    )?;
    written.history = session.history.len();
    // A journal left full (a crash here) holds only saves the record has: they are skipped.
    match std::fs::OpenOptions::new()
        .write(true)
        .open(journal_file(&record))
    {
        Ok(file) => file.set_len(0)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    written.lines = 0;
    written.torn = false;
    Ok(())
}

/// The session kept in `record`, with the saves its journal holds after it.
pub(super) fn load(record: &Path) -> std::io::Result<(Session, Written)> {
    let bytes = std::fs::read(record)?;
    let RecordIn {
        mut session,
        journal_seq,
    } = serde_json::from_slice(&bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let mut written = Written {
        seq: journal_seq,
        history: session.history.len(),
        lines: 0,
        torn: false,
    };
    let journal = match std::fs::read(journal_file(record)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    written.torn = journal.last().is_some_and(|b| *b != b'\n');
    for text in journal.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        written.lines += 1;
        // A line cut short by a crash is skipped: each line holds every field, so the next
        // one is whole without it (only the turns it added are lost).
        let Ok(line) = serde_json::from_slice::<Line>(text) else {
            continue;
        };
        if line.seq <= written.seq {
            continue;
        }
        let history = std::mem::take(&mut session.history);
        session = line.session;
        session.history = history;
        session.history.extend(line.push);
        written.seq = line.seq;
        written.history = session.history.len();
    }
    Ok((session, written))
}

/// Every session kept under `home`, with what its files hold; unreadable ones are skipped
/// with a warning.
pub(super) fn load_all(home: &Path) -> Vec<(Session, Written)> {
    let Ok(projects) = std::fs::read_dir(home.join("serve/projects")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for project in projects.filter_map(Result::ok) {
        let Ok(files) = std::fs::read_dir(project.path().join("sessions")) else {
            continue;
        };
        for file in files.filter_map(Result::ok).map(|f| f.path()) {
            if file.extension().is_none_or(|x| x != "json") {
                continue;
            }
            match load(&file) {
                Ok(loaded) => out.push(loaded),
                Err(e) => {
                    tracing::warn!(file = %file.display(), error = %e, "skipping a served session that cannot be read")
                }
            }
        }
    }
    out
}

impl Written {
    /// Whether the journal holds saves the record lacks, or lines at all.
    pub(super) fn journaled(&self) -> bool {
        self.lines > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::store::sample as session;

    /// Appends raw bytes to the journal, as a crash mid-write leaves them.
    fn append_raw(record: &Path, bytes: &[u8]) {
        std::fs::OpenOptions::new()
            .append(true)
            .open(journal_file(record))
            .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))
            .unwrap();
    }

    /// A new session kept in a new home: the home, the session, what its files hold and
    /// where its record is.
    fn kept() -> (tempfile::TempDir, Session, Written, PathBuf) {
        let home = tempfile::tempdir().unwrap();
        let s = session();
        let written = create(home.path(), &s).unwrap();
        let record = session_file(home.path(), &s);
        (home, s, written, record)
    }

    fn turn(n: usize) -> TurnRecord {
        TurnRecord {
            turn_id: format!("t{n}"),
            message: format!("message {n}"),
        }
    }

    #[test]
    fn sessions_round_trip_through_their_files() {
        let home = tempfile::tempdir().unwrap();
        let s = Session {
            claude_session_id: Some("c".into()),
            cost_usd: 0.5,
            turns: 1,
            ..session()
        };
        create(home.path(), &s).unwrap();
        assert_eq!(load_all(home.path())[0].0, s);
        let text = std::fs::read_to_string(session_file(home.path(), &s)).unwrap();
        assert!(text.contains("\"claudeSessionId\"") && text.contains("\"projectRoot\""));
    }

    #[test]
    fn saves_are_journal_lines_that_a_load_plays_back_in_order() {
        let (home, mut s, mut written, record) = kept();
        let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let first = inode(&record);
        for n in 0..5 {
            s.history.push(turn(n));
            save(home.path(), s.clone(), &mut written).unwrap();
            s.turns += 1;
            s.cost_usd += 0.25;
            s.claude_session_id = Some(format!("c{n}"));
            save(home.path(), s.clone(), &mut written).unwrap();
        }
        assert_eq!(inode(&record), first, "the record was not replaced");
        let journal = std::fs::read_to_string(journal_file(&record)).unwrap();
        assert_eq!(journal.lines().count(), 10);
        assert_eq!(
            journal.matches("message 0").count(),
            1,
            "each turn once: {journal}"
        );
        let (loaded, again) = load(&record).unwrap();
        assert_eq!(loaded, s);
        assert_eq!(again, written);
        // A line torn by a crash is not played.
        append_raw(&record, b"{\"seq\":11,\"sess\xff");
        let (loaded, mut written) = load(&record).unwrap();
        assert_eq!(loaded, s);
        // Nor does it hide the saves after it (a crash mid-line, then a restart that could
        // not fold the journal, then more turns): the next line starts on its own.
        s.history.push(turn(5));
        s.turns += 1;
        save(home.path(), s.clone(), &mut written).unwrap();
        assert_eq!(load(&record).unwrap().0, s);
    }

    #[test]
    fn the_record_takes_the_journal_in_and_stale_lines_are_skipped() {
        let (home, mut s, mut written, record) = kept();
        for n in 0..FOLD_AT + 3 {
            s.history.push(turn(n));
            save(home.path(), s.clone(), &mut written).unwrap();
        }
        let journal = std::fs::read_to_string(journal_file(&record)).unwrap();
        assert_eq!(journal.lines().count(), 2, "folded at {FOLD_AT} lines");
        assert_eq!(load(&record).unwrap().0, s);

        // A crash between the record's rewrite and the journal's emptying leaves lines the
        // record holds already: played again, they would repeat turns.
        let stale = std::fs::read(journal_file(&record)).unwrap();
        fold(home.path(), &s, &mut written).unwrap();
        assert!(!written.journaled());
        std::fs::write(journal_file(&record), &stale).unwrap();
        let (loaded, _) = load(&record).unwrap();
        assert_eq!(loaded.history.len(), FOLD_AT + 3);
        assert_eq!(loaded, s);

        // A record edited by hand while the server is stopped stands.
        fold(home.path(), &s, &mut written).unwrap();
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
        v["claudeSessionId"] = "edited".into();
        std::fs::write(&record, v.to_string()).unwrap();
        assert_eq!(
            load(&record).unwrap().0.claude_session_id.as_deref(),
            Some("edited")
        );
    }
}
