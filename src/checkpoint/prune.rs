//! Old checkpoints go: sessions idle for longer than `keepDays` lose all of theirs, others keep
//! their newest `keepPerSession`. Each checkpoint is one line of the log that keeps commits
//! ([`super::keep`]), so pruning drops lines, and `git prune` then removes what nothing reaches
//! (only objects over two hours old, so a snapshot being written by a running session is never
//! caught between its objects and its line).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::CheckpointConfig;
use super::keep::{self, Kept};

/// How many checkpoints were removed from the shadow repository at `git_dir`.
pub fn prune(git_dir: &Path, config: &CheckpointConfig, now: SystemTime) -> usize {
    let max_age = Duration::from_secs(u64::from(config.keep_days) * 24 * 3600);
    let now_secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Sessions with a line that stays, and those left with none (idle).
    let mut staying = HashSet::new();
    let mut idle = BTreeSet::new();
    let removed = keep::prune(git_dir, |all| {
        let verdicts = verdicts(all, config.keep_per_session, now_secs, max_age.as_secs());
        staying = all
            .iter()
            .zip(&verdicts)
            .filter(|(_, keep)| **keep)
            .map(|(k, _)| k.session.clone())
            .collect();
        idle = all
            .iter()
            .map(|k| k.session.clone())
            .filter(|session| !staying.contains(session))
            .collect();
        verdicts
    })
    .unwrap_or(0);
    let removed = removed + prune_refs(git_dir, max_age, now, &staying);
    // An idle session's index (of its last restore) goes with its checkpoints.
    for session in idle {
        let _ = std::fs::remove_file(git_dir.join(format!("index-{session}")));
    }
    // The stat cache may name objects that are about to become unreachable.
    if removed > 0 {
        let _ = std::fs::remove_file(git_dir.join(super::scan::CACHE_FILE));
    }
    removed
}

/// Which lines stay: none of a session whose newest is older than `max_age`, else the
/// newest `per_session` of each.
fn verdicts(all: &[Kept], per_session: usize, now: u64, max_age: u64) -> Vec<bool> {
    let mut newest: HashMap<&str, u64> = HashMap::new();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for k in all {
        let time = newest.entry(&k.session).or_default();
        *time = (*time).max(k.time);
        *count.entry(&k.session).or_default() += 1;
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    all.iter()
        .map(|k| {
            let idle = now.saturating_sub(newest[k.session.as_str()]) > max_age;
            let at = seen.entry(&k.session).or_default();
            *at += 1;
            // Lines are appended in order: the last `per_session` of a session are its newest.
            !idle && count[k.session.as_str()] - *at < per_session
        })
        .collect()
}

/// Checkpoints kept as one ref each (`refs/ouro/<session>/<n>`, before the log): an idle
/// session's go, unless the session went on since (it has lines in the log).
fn prune_refs(
    git_dir: &Path,
    max_age: Duration,
    now: SystemTime,
    active: &HashSet<String>,
) -> usize {
    let Ok(sessions) = std::fs::read_dir(git_dir.join("refs/ouro")) else {
        return 0;
    };
    let mut removed = 0;
    for session in sessions.filter_map(Result::ok) {
        if active.contains(session.file_name().to_string_lossy().as_ref()) {
            continue;
        }
        let dir = session.path();
        let refs: Vec<_> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        let idle = refs
            .iter()
            .filter_map(|r| std::fs::metadata(r).ok()?.modified().ok())
            .max()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > max_age);
        if idle {
            removed += refs
                .iter()
                .filter(|r| std::fs::remove_file(r).is_ok())
                .count();
            let _ = std::fs::remove_dir(&dir);
        }
    }
    removed
}

/// How often pruning runs at most: it reads every checkpoint's line, and sessions start far
/// more often than a day of checkpoints ages.
const EVERY: Duration = Duration::from_secs(3600);

/// Whether pruning is due in `git_dir`: the stamp file's time says when it last ran. Only a
/// `stat`, so a session's start can ask; [`claim`] marks it done.
fn due(git_dir: &Path, now: SystemTime) -> bool {
    let last = std::fs::metadata(git_dir.join(STAMP)).and_then(|m| m.modified());
    !last.is_ok_and(|at| now.duration_since(at).is_ok_and(|age| age < EVERY))
}

/// Marks pruning done now, so the sessions that start within the hour leave it; `false` when
/// the stamp cannot be written (then nobody prunes: a failing disk is no place for it).
fn claim(git_dir: &Path, now: SystemTime) -> bool {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(git_dir.join(STAMP))
        .and_then(|f| f.set_modified(now))
        .is_ok()
}

const STAMP: &str = "ouro-pruned";

/// Past this many packs, they are made into one: every session that wrote checkpoints left
/// some, and a session's first snapshot reads the index of each.
const MANY_PACKS: usize = 16;

/// Prunes in the background (at most once an hour), lets git drop what is no longer
/// reachable, and makes many packs one. Whether it is due is asked here, one `stat`: the
/// thread is started only when there is work for it, as a session starting waits for its start.
pub fn prune_in_background(git_dir: &Path, config: CheckpointConfig) {
    let now = SystemTime::now();
    if !due(git_dir, now) {
        return;
    }
    let git_dir = git_dir.to_path_buf();
    std::thread::spawn(move || {
        if !claim(&git_dir, now) {
            return;
        }
        if prune(&git_dir, &config, now) > 0 {
            git(&git_dir, &["prune", "--expire=2.hours.ago"]);
        }
        repack_if_many(&git_dir);
    });
}

/// Makes the packs one when there are more than [`MANY_PACKS`]. Nothing is dropped
/// (`--keep-unreachable`): a session running beside this one may be about to name any object
/// it found, and a pack, unlike a loose object, has no age `git prune` would spare.
fn repack_if_many(git_dir: &Path) -> bool {
    let packs = std::fs::read_dir(git_dir.join("objects/pack"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| super::pack::is_pack_file(&e.path(), "pack"))
        .count();
    packs > MANY_PACKS && git(git_dir, &["repack", "-a", "-d", "-q", "--keep-unreachable"])
}

/// Runs git on the shadow repository at `git_dir`, with none of the caller's git context;
/// whether it worked (a failure is logged: nothing waits on it).
fn git(git_dir: &Path, args: &[&str]) -> bool {
    let status = crate::sys::git::on_own_repository(git_dir)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    let worked = status.as_ref().is_ok_and(|s| s.success());
    if !worked {
        tracing::warn!(
            ?status,
            "git {} failed in {}",
            args.join(" "),
            git_dir.display()
        );
    }
    worked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_sessions_go_and_busy_ones_keep_their_newest() {
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path();
        let day = 24 * 3600;
        let later = SystemTime::now() + Duration::from_secs(2 * day);
        let now = later
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let line = |session: &str, n: u8, age: u64| Kept {
            commit: [n; 20],
            tree: [0; 20],
            session: session.into(),
            time: now - age,
        };
        keep::append(
            git_dir,
            &[
                line("old", 1, 3 * day),
                line("busy", 2, 3 * day),
                line("old", 3, 2 * day),
                line("busy", 4, 10),
                line("busy", 5, 5),
                line("busy", 6, 1),
            ],
        )
        .unwrap();
        std::fs::write(git_dir.join("index-old"), "").unwrap();
        std::fs::write(git_dir.join("index-busy"), "").unwrap();
        // A session of the refs this log replaced, idle too; and one that went on since.
        for session in ["older", "busy"] {
            std::fs::create_dir_all(git_dir.join("refs/ouro").join(session)).unwrap();
            std::fs::write(
                git_dir.join("refs/ouro").join(session).join("000001"),
                "abc\n",
            )
            .unwrap();
        }
        let config = CheckpointConfig {
            keep_days: 1,
            keep_per_session: 2,
            ..CheckpointConfig::default()
        };
        assert_eq!(prune(git_dir, &config, later), 2 + 2 + 1);
        let left: Vec<u8> = std::fs::read_to_string(git_dir.join("logs").join(keep::REF))
            .unwrap()
            .lines()
            .map(|l| Kept::parse(l).unwrap().commit[0])
            .collect();
        assert_eq!(left, vec![5, 6]);
        assert!(!git_dir.join("index-old").exists());
        assert!(git_dir.join("index-busy").exists());
        assert!(!git_dir.join("refs/ouro/older").exists());
        assert!(git_dir.join("refs/ouro/busy/000001").exists());
        assert_eq!(prune(git_dir, &config, later), 0);
    }

    #[test]
    fn pruning_is_due_once_an_hour() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        assert!(due(dir.path(), now));
        assert!(claim(dir.path(), now));
        assert!(!due(dir.path(), now + Duration::from_secs(60)));
        let later = now + EVERY + Duration::from_secs(1);
        assert!(due(dir.path(), later));
        assert!(claim(dir.path(), later));
        assert!(!due(dir.path(), later + Duration::from_secs(1)));
    }

    #[test]
    fn many_packs_become_one_and_every_object_stays() {
        use crate::checkpoint::objects::{self, Kind};
        use crate::checkpoint::pack::PackWriter;
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path();
        objects::init(git_dir).unwrap();
        let mut oids = Vec::new();
        for n in 0..=MANY_PACKS {
            let mut pack = PackWriter::start(git_dir).unwrap();
            oids.push(
                pack.add(Kind::Blob, format!("object {n}\n").as_bytes())
                    .unwrap(),
            );
            pack.finish().unwrap();
        }
        let packs = || {
            std::fs::read_dir(git_dir.join("objects/pack"))
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().extension().unwrap() == "pack")
                .count()
        };
        assert_eq!(packs(), MANY_PACKS + 1);
        assert!(repack_if_many(git_dir));
        assert_eq!(packs(), 1);
        for oid in &oids {
            // Nothing keeps these blobs, and they are kept all the same.
            assert!(git(git_dir, &["cat-file", "-e", &objects::hex(oid)]));
        }
        assert!(!repack_if_many(git_dir), "one pack is left alone");
        // Files a killed writer left are no packs: they never make a repack due.
        for n in 0..=MANY_PACKS {
            std::fs::write(git_dir.join(format!("objects/pack/.tmp-{n}.pack")), "").unwrap();
            std::fs::write(git_dir.join(format!("objects/pack/.tmp-{n}.idx")), "").unwrap();
        }
        assert!(!repack_if_many(git_dir));
        assert_eq!(
            super::super::pack::packed_ids(git_dir).len(),
            oids.len(),
            "a half-written index is not read"
        );
    }
}
