use super::*;

fn file_at(git_dir: &Path, commit: &str, path: &str) -> String {
    let out = std::process::Command::new("git")
        .args(["cat-file", "blob", &format!("{commit}:{path}")])
        .env("GIT_DIR", git_dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{commit}:{path} is not in the snapshot"
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A project with `files`, and checkpoints of it kept in a home of their own.
struct Fixture {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    root: PathBuf,
    git_dir: PathBuf,
    checkpoints: Arc<Checkpoints>,
}

fn fixture(files: &[(&str, &str)]) -> Fixture {
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap();
    for (name, text) in files {
        std::fs::write(root.join(name), text).unwrap();
    }
    let shadow = Shadow::new(home.path().join("shadow"), root.clone());
    let git_dir = shadow.git_dir().to_path_buf();
    let checkpoints = Arc::new(Checkpoints::with_shadow(
        shadow,
        &root,
        "session",
        CheckpointConfig::default(),
    ));
    Fixture {
        _dirs: (project, home),
        root,
        git_dir,
        checkpoints,
    }
}

/// A call that writes while a snapshot is under way (the first of a session reads the whole
/// project): its checkpoint holds the file as it was before the call, the snapshot under way
/// does too, and the end of the turn has the new contents.
#[tokio::test(flavor = "multi_thread")]
async fn a_write_during_a_snapshot_does_not_wait_and_is_checkpointed_as_it_was() {
    let Fixture {
        _dirs,
        root,
        git_dir,
        checkpoints,
    } = fixture(&[("a.txt", "before\n")]);
    for i in 0..300 {
        std::fs::write(root.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    checkpoints
        .take_soon(Kind::Prompt, record::Detail::prompt("go", 0), async {})
        .await;
    checkpoints
        .take_before_write(record::Detail::tool("Edit", "toolu_1"), &["a.txt".into()])
        .await;
    std::fs::write(root.join("a.txt"), "after\n").unwrap();
    checkpoints.wrote(Some(vec!["a.txt".into()]));
    checkpoints.take(Kind::End, record::Detail::default()).await;
    let records = checkpoints.drain();
    let kinds: Vec<Kind> = records.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [Kind::Prompt, Kind::Tool, Kind::End]);
    let contents: Vec<String> = records
        .iter()
        .map(|r| file_at(&git_dir, &r.commit, "a.txt"))
        .collect();
    assert_eq!(contents, ["before\n", "before\n", "after\n"]);
    assert_eq!(records[1].detail.tool_use_id.as_deref(), Some("toolu_1"));
    // Nothing is held any more: a later write is read from the disk.
    assert!(lock(&checkpoints.preimages).is_empty());
}

/// Two calls put off behind one snapshot, each writing its own file: the second call's
/// checkpoint has what the first wrote, and its own file as it was.
#[tokio::test(flavor = "multi_thread")]
async fn calls_put_off_in_a_row_each_see_the_ones_before() {
    let Fixture {
        _dirs,
        root,
        git_dir,
        checkpoints,
    } = fixture(&[("x.txt", "before\n"), ("y.txt", "before\n")]);
    checkpoints
        .take_soon(Kind::Prompt, record::Detail::prompt("go", 0), async {})
        .await;
    for (id, name) in [("toolu_x", "x.txt"), ("toolu_y", "y.txt")] {
        checkpoints
            .take_before_write(record::Detail::tool("Edit", id), &[name.into()])
            .await;
        std::fs::write(root.join(name), "after\n").unwrap();
        checkpoints.wrote(Some(vec![name.into()]));
    }
    checkpoints.take(Kind::End, record::Detail::default()).await;
    let records = checkpoints.drain();
    let seen: Vec<(Kind, String, String)> = records
        .iter()
        .map(|r| {
            (
                r.kind,
                file_at(&git_dir, &r.commit, "x.txt"),
                file_at(&git_dir, &r.commit, "y.txt"),
            )
        })
        .collect();
    let (before, after) = ("before\n".to_string(), "after\n".to_string());
    assert_eq!(
        seen,
        [
            (Kind::Prompt, before.clone(), before.clone()),
            (Kind::Tool, before.clone(), before.clone()),
            (Kind::Tool, after.clone(), before.clone()),
            (Kind::End, after.clone(), after.clone()),
        ]
    );
}

/// While a snapshot works, a write to a plain file is put off at once; one through a link (the
/// tool writes where it leads) or to ignore rules (they change what the walk leaves out) waits.
#[tokio::test(flavor = "multi_thread")]
async fn a_write_is_put_off_only_under_its_own_plain_name() {
    let Fixture {
        _dirs,
        root,
        checkpoints,
        ..
    } = fixture(&[
        ("a.txt", "a\n"),
        ("target.txt", "t\n"),
        (".gitignore", "*.log\n"),
    ]);
    std::os::unix::fs::symlink("target.txt", root.join("link.txt")).unwrap();
    // A snapshot under way, for as long as this test says.
    let working = checkpoints.state.clone().lock_owned().await;
    let edit = |path: &str| {
        let (checkpoints, path) = (checkpoints.clone(), path.to_string());
        async move {
            checkpoints
                .take_before_write(record::Detail::tool("Edit", "t"), &[path])
                .await;
        }
    };
    let wait = std::time::Duration::from_millis(300);
    assert!(tokio::time::timeout(wait, edit("a.txt")).await.is_ok());
    assert!(tokio::time::timeout(wait, edit("link.txt")).await.is_err());
    assert!(
        tokio::time::timeout(wait, edit(".gitignore"))
            .await
            .is_err()
    );
    assert!(tokio::time::timeout(wait, edit("new.txt")).await.is_ok());
    assert_eq!(lock(&checkpoints.deferred).len(), 2);
    drop(working);
}

/// With no snapshot under way the call does not wait for its own either: whenever that
/// snapshot runs, before the write or after it, it holds the file as it was.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_checkpoint_has_the_file_as_before_whenever_it_is_taken() {
    let Fixture {
        _dirs,
        root,
        git_dir,
        checkpoints,
    } = fixture(&[("a.txt", "0\n")]);
    checkpoints
        .take(Kind::Prompt, record::Detail::prompt("go", 0))
        .await;
    for i in 1..=20 {
        checkpoints
            .take_before_write(record::Detail::tool("Edit", "t"), &["a.txt".into()])
            .await;
        std::fs::write(root.join("a.txt"), format!("{i}\n")).unwrap();
        checkpoints.wrote(Some(vec!["a.txt".into()]));
    }
    checkpoints.take(Kind::End, record::Detail::default()).await;
    let contents: Vec<String> = checkpoints
        .drain()
        .iter()
        .map(|r| file_at(&git_dir, &r.commit, "a.txt"))
        .collect();
    // The prompt's, each call's (what the calls before it wrote), the end's.
    let expected: Vec<String> = [0]
        .into_iter()
        .chain(0..20)
        .chain([20])
        .map(|i| format!("{i}\n"))
        .collect();
    assert_eq!(contents, expected);
    assert!(lock(&checkpoints.preimages).is_empty());
}

/// After writes were lost (a disk that filled), the snapshots forget what they took to be
/// stored: the next checkpoint writes again every object it names, changed or not.
#[tokio::test(flavor = "multi_thread")]
async fn after_lost_writes_a_checkpoint_names_only_objects_on_disk() {
    let Fixture {
        _dirs,
        root,
        git_dir,
        checkpoints,
    } = fixture(&[("kept.txt", "kept\n")]);
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/b/changed.txt"), "1\n").unwrap();
    checkpoints
        .take(Kind::Prompt, record::Detail::prompt("go", 0))
        .await;
    checkpoints.settle().await.unwrap();
    std::fs::remove_dir_all(git_dir.join("objects")).unwrap();
    std::fs::create_dir_all(git_dir.join("objects/pack")).unwrap();
    checkpoints.forget_stored().await;
    checkpoints
        .take_before_write(
            record::Detail::tool("Edit", "t"),
            &["a/b/changed.txt".into()],
        )
        .await;
    std::fs::write(root.join("a/b/changed.txt"), "2\n").unwrap();
    checkpoints.wrote(Some(vec!["a/b/changed.txt".into()]));
    checkpoints.take(Kind::End, record::Detail::default()).await;
    let records = checkpoints.drain();
    let end = records.last().unwrap();
    assert_eq!(end.kind, Kind::End);
    assert_eq!(file_at(&git_dir, &end.commit, "kept.txt"), "kept\n");
    assert_eq!(file_at(&git_dir, &end.commit, "a/b/changed.txt"), "2\n");
    assert_eq!(
        file_at(&git_dir, &records[1].commit, "a/b/changed.txt"),
        "1\n"
    );
}

/// A second session in a project nobody changed keeps the first one's commit rather than
/// writing another; a change makes a new one. Both are kept by their own session's line.
#[tokio::test(flavor = "multi_thread")]
async fn a_new_session_keeps_the_last_commit_of_the_same_files() {
    let Fixture {
        _dirs,
        root,
        git_dir,
        checkpoints,
    } = fixture(&[("a.txt", "one\n")]);
    let prompt = || record::Detail::prompt("go", 0);
    let first = checkpoints.take(Kind::End, prompt()).await.unwrap();
    let shadow = || Shadow::new(git_dir.clone(), root.clone());
    let loose = || walkdir_count(&git_dir.join("objects"));
    let before = loose();
    let second = Checkpoints::with_shadow(shadow(), &root, "second", CheckpointConfig::default());
    let again = second
        .take(Kind::End, record::Detail::prompt("a second question", 0))
        .await
        .unwrap();
    assert_eq!(again.commit, first.commit);
    assert_eq!(loose(), before, "no object was written");
    std::fs::write(root.join("a.txt"), "two\n").unwrap();
    let third = Checkpoints::with_shadow(shadow(), &root, "third", CheckpointConfig::default());
    let changed = third.take(Kind::End, prompt()).await.unwrap();
    assert_ne!(changed.commit, first.commit);
    assert_eq!(file_at(&git_dir, &changed.commit, "a.txt"), "two\n");
    let sessions: Vec<String> = std::fs::read_to_string(git_dir.join("logs").join(keep::REF))
        .unwrap()
        .lines()
        .map(|l| keep::Kept::parse(l).unwrap().session)
        .collect();
    assert_eq!(sessions, ["session", "second", "third"]);
    // An old line is not taken up again: pruning could drop it before a new line keeps it.
    let fourth = Checkpoints::with_shadow(
        shadow(),
        &root,
        "fourth",
        CheckpointConfig {
            keep_days: 0,
            ..CheckpointConfig::default()
        },
    );
    let other = record::Detail::prompt("another message makes another commit", 0);
    assert_ne!(
        fourth.take(Kind::End, other).await.unwrap().commit,
        changed.commit
    );
}

/// How many files lie under `dir`, at any depth.
fn walkdir_count(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                walkdir_count(&e.path())
            } else {
                1
            }
        })
        .sum()
}

/// Another session's newest checkpoint may not be written yet (its writer holds it) or may
/// be lost (it was killed): what that session changed still counts as its own, up to now, and
/// a rewind names it rather than undoing it unasked.
#[tokio::test(flavor = "multi_thread")]
async fn another_sessions_unwritten_checkpoint_still_marks_its_changes() {
    let Fixture {
        _dirs,
        root,
        git_dir,
        checkpoints,
    } = fixture(&[("a.txt", "one\n")]);
    let prompt = checkpoints
        .take(Kind::End, record::Detail::prompt("go", 0))
        .await
        .unwrap();
    let mut before = prompt.clone();
    before.kind = Kind::Prompt;
    before.timestamp = "2000-01-01T00:00:00.000Z".into();
    // The other session: a checkpoint before, and its newest, which never reached the disk.
    let mut unwritten = Record::new("ab".repeat(20), Kind::Tool, record::Detail::default());
    unwritten.timestamp = "2999-01-01T00:00:00.000Z".into();
    let other = vec![before.clone(), unwritten];
    std::fs::write(root.join("a.txt"), "the other session's\n").unwrap();
    let now = checkpoints
        .take(Kind::Rewind, record::Detail::default())
        .await
        .unwrap();
    // This session's own turn ended with the files as they are now: nothing of its own marks
    // the change.
    let mut end = now.clone();
    end.kind = Kind::End;
    end.timestamp = "2000-01-01T00:00:01.000Z".into();
    let shadow = Shadow::new(git_dir.clone(), root.clone());
    let plan = restore::plan(&shadow, &[before, end], 0, &now.commit, &[other])
        .await
        .unwrap();
    assert!(plan.outside.contains("a.txt"), "{:?}", plan.outside);
}
