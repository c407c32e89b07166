//! Old checkpoints go: sessions idle for longer than `keepDays` lose all of theirs, others keep
//! their newest `keepPerSession`. Each checkpoint is one ref, so pruning deletes refs, and
//! `git prune` then removes what no ref reaches (only objects over two hours old, so a snapshot
//! being written by a running session is never caught between its `add` and its commit).

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::CheckpointConfig;

/// How many checkpoints were removed from the shadow repository at `git_dir`.
pub fn prune(git_dir: &Path, config: &CheckpointConfig, now: SystemTime) -> usize {
    let sessions = git_dir.join("refs/ouro");
    let Ok(entries) = std::fs::read_dir(&sessions) else {
        return 0;
    };
    let max_age = Duration::from_secs(u64::from(config.keep_days) * 24 * 3600);
    let mut removed = 0;
    for session in entries.filter_map(Result::ok) {
        let dir = session.path();
        let mut refs: Vec<_> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        refs.sort();
        let newest = refs
            .iter()
            .filter_map(|r| std::fs::metadata(r).ok()?.modified().ok())
            .max();
        let idle = newest
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > max_age);
        let doomed = if idle {
            refs.len()
        } else {
            refs.len().saturating_sub(config.keep_per_session)
        };
        for r in &refs[..doomed] {
            if std::fs::remove_file(r).is_ok() {
                removed += 1;
            }
        }
        if idle {
            let _ = std::fs::remove_dir(&dir);
            let name = session.file_name();
            let _ = std::fs::remove_file(git_dir.join(format!("index-{}", name.to_string_lossy())));
        }
    }
    // The stat cache may name objects that are about to become unreachable.
    if removed > 0 {
        let _ = std::fs::remove_file(git_dir.join(super::scan::CACHE_FILE));
    }
    removed
}

/// Prunes in the background and lets git drop what is no longer reachable.
pub fn prune_in_background(git_dir: &Path, config: CheckpointConfig) {
    let git_dir = git_dir.to_path_buf();
    std::thread::spawn(move || {
        if prune(&git_dir, &config, SystemTime::now()) == 0 {
            return;
        }
        let _ = std::process::Command::new("git")
            .env("GIT_DIR", &git_dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(["prune", "--expire=2.hours.ago"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_sessions_go_and_busy_ones_keep_their_newest() {
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path();
        let write = |session: &str, n: usize| {
            let d = git_dir.join("refs/ouro").join(session);
            std::fs::create_dir_all(&d).unwrap();
            for i in 1..=n {
                std::fs::write(d.join(format!("{i:06}")), "abc\n").unwrap();
            }
        };
        write("old", 3);
        write("busy", 5);
        std::fs::write(git_dir.join("index-old"), "").unwrap();
        let config = CheckpointConfig {
            keep_days: 1,
            keep_per_session: 2,
            ..CheckpointConfig::default()
        };
        let later = SystemTime::now() + Duration::from_secs(3600);
        assert_eq!(prune(git_dir, &config, later), 4);
        let left: Vec<String> = std::fs::read_dir(git_dir.join("refs/ouro/busy"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(left, vec!["000004", "000005"]);
        let much_later = SystemTime::now() + Duration::from_secs(3 * 24 * 3600);
        assert_eq!(prune(git_dir, &config, much_later), 4);
        assert!(!git_dir.join("refs/ouro/old").exists());
        assert!(!git_dir.join("index-old").exists());
    }
}
