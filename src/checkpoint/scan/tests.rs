use super::*;

fn listing(git_dir: &Path, tree: &Oid) -> String {
    let out = std::process::Command::new("git")
        .args(["ls-tree", "-r", &objects::hex(tree)])
        .env("GIT_DIR", git_dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap().to_string() + "\n")
        .collect()
}

fn blob_of(git_dir: &Path, tree: &Oid, path: &str) -> Vec<u8> {
    let out = std::process::Command::new("git")
        .args([
            "cat-file",
            "blob",
            &format!("{}:{path}", objects::hex(tree)),
        ])
        .env("GIT_DIR", git_dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    out.stdout
}

/// A scan of `root` into `git_dir` that has walked it once, and its writer.
fn walked(root: &Path, git_dir: &Path) -> (std::sync::Arc<Writer>, Scan) {
    let writer = std::sync::Arc::new(Writer::start(git_dir));
    let mut scan = Scan::new(root, git_dir, 1 << 20, writer.clone(), Default::default());
    scan.everything().unwrap();
    scan.finish(Vec::new()).unwrap();
    (writer, scan)
}

/// A project and an empty shadow repository for it.
fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    let project = tempfile::tempdir().unwrap();
    let shadow = tempfile::tempdir().unwrap();
    objects::init(shadow.path()).unwrap();
    (project, shadow)
}

/// Writes `text` to `rel` under `root`, making its folders.
fn put_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn snapshots_follow_git_rules_and_see_every_change() {
    let (project, shadow) = dirs();
    let (root, git_dir) = (project.path(), shadow.path());
    let write = |rel: &str, text: &str| put_file(root, rel, text);
    write(".gitignore", "build/\n*.log\n");
    write("src/main.rs", "fn main() {}\n");
    write("build/out.bin", "ignored");
    write("run.log", "ignored");
    write("big.dat", &"x".repeat(2000));
    write("nested/.git/HEAD", "ref: refs/heads/main\n");
    write("nested/inner.txt", "a repository of its own");
    std::os::unix::fs::symlink("src/main.rs", root.join("link")).unwrap();
    let writer = std::sync::Arc::new(Writer::start(git_dir));
    let mut scan = Scan::new(root, git_dir, 1000, writer.clone(), Default::default());
    let settled = |scan: &mut Scan, tree: Oid| {
        scan.finish(Vec::new()).unwrap();
        writer.settle().unwrap();
        tree
    };
    let tree = scan.everything().unwrap();
    let first = settled(&mut scan, tree);
    assert_eq!(listing(git_dir, &first), ".gitignore\nlink\nsrc/main.rs\n");

    // Declared edits are read whatever the stat says; an unchanged tree keeps its id.
    write("src/main.rs", "fn main() { run() }\n");
    let tree = scan.only(&["src/main.rs".into()]).unwrap().unwrap();
    let edited = settled(&mut scan, tree);
    assert_ne!(edited, first);
    assert_eq!(
        blob_of(git_dir, &edited, "src/main.rs"),
        b"fn main() { run() }\n"
    );
    // A path new to the snapshots needs the ignore rules: the caller looks at everything.
    assert_eq!(scan.only(&["new.txt".into()]).unwrap(), None);

    // Changes ouro did not declare are found by the next full look, even one of the same
    // size moments after the last snapshot (its stat was too recent to trust).
    write("src/main.rs", "fn main() { ran() }\n");
    std::fs::remove_file(root.join("link")).unwrap();
    let tree = scan.everything().unwrap();
    let full = settled(&mut scan, tree);
    assert_eq!(listing(git_dir, &full), ".gitignore\nsrc/main.rs\n");
    assert_eq!(
        blob_of(git_dir, &full, "src/main.rs"),
        b"fn main() { ran() }\n"
    );

    // A new session starts from the saved cache and finds the same tree.
    let mut again = Scan::new(root, git_dir, 1000, writer.clone(), Default::default());
    assert_eq!(again.everything().unwrap(), full);
}

#[test]
fn a_first_snapshot_of_many_files_goes_into_one_pack_git_can_read() {
    let (project, shadow) = dirs();
    for i in 0..300 {
        let dir = project.path().join(format!("d{}", i % 7));
        std::fs::create_dir_all(&dir).unwrap();
        // Files past 250 repeat earlier contents: one object for both.
        std::fs::write(dir.join(format!("f{i}.txt")), format!("file {}\n", i % 250)).unwrap();
    }
    let writer = std::sync::Arc::new(Writer::start(shadow.path()));
    let mut scan = Scan::new(
        project.path(),
        shadow.path(),
        1 << 20,
        writer.clone(),
        Default::default(),
    );
    let tree = scan.everything().unwrap();
    scan.finish(Vec::new()).unwrap();
    writer.settle().unwrap();
    assert_eq!(listing(shadow.path(), &tree).lines().count(), 300);
    assert_eq!(blob_of(shadow.path(), &tree, "d3/f10.txt"), b"file 10\n");
    assert_eq!(blob_of(shadow.path(), &tree, "d1/f260.txt"), b"file 10\n");
    let packs = std::fs::read_dir(shadow.path().join("objects/pack"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "idx")
        })
        .count();
    assert_eq!(packs, 1);
    let fsck = std::process::Command::new("git")
        .args(["fsck", "--strict", &objects::hex(&tree)])
        .env("GIT_DIR", shadow.path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

/// After calls that said what they wrote, only the folders above those files are remade: the
/// tree is the one a whole new look at the project makes, through edits, a folder emptied and
/// a file deleted beside others.
#[test]
fn trees_remade_above_the_changes_equal_trees_made_whole() {
    let (project, shadow) = dirs();
    let (root, git_dir) = (project.path(), shadow.path());
    let write = |rel: &str, text: &str| put_file(root, rel, text);
    for rel in [
        "top.txt",
        "a/x.rs",
        "a/b/c/one.rs",
        "a/b/c/two.rs",
        "a/b.rs",
        "a-b/z.rs",
        "d/e/only.rs",
        "d/keep.rs",
    ] {
        write(rel, rel);
    }
    let (writer, mut scan) = walked(root, git_dir);
    let whole = || walked(root, dirs().1.path()).1.update_trees(&[]).unwrap();
    let steps: [(&[&str], &dyn Fn()); 4] = [
        (&["a/b/c/one.rs"], &|| write("a/b/c/one.rs", "edited")),
        (&["a/x.rs", "a-b/z.rs", "top.txt"], &|| {
            write("a/x.rs", "x2");
            write("a-b/z.rs", "z2");
            write("top.txt", "t2");
        }),
        (&["d/e/only.rs"], &|| {
            std::fs::remove_file(root.join("d/e/only.rs")).unwrap();
        }),
        (&["a/b/c/two.rs", "a/b.rs"], &|| {
            std::fs::remove_file(root.join("a/b/c/two.rs")).unwrap();
            write("a/b.rs", "b2");
        }),
    ];
    for (paths, change) in steps {
        change();
        let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        let tree = scan.only(&paths).unwrap().unwrap();
        scan.finish(Vec::new()).unwrap();
        assert_eq!(
            objects::hex(&tree),
            objects::hex(&whole()),
            "after {paths:?}"
        );
    }
    writer.settle().unwrap();
    assert_eq!(
        listing(git_dir, &scan.update_trees(&[]).unwrap()),
        "a-b/z.rs\na/b.rs\na/b/c/one.rs\na/x.rs\nd/keep.rs\ntop.txt\n"
    );
}

/// What the walk finds is what git itself would add, on a tree of the rules people write:
/// nested `.gitignore` files that override their parents, negations, anchored and folder-only
/// patterns, `**`, `info/exclude`, a nested repository, links and hidden files.
#[test]
fn the_walk_finds_what_git_would_add() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q"]);
    let files = [
        (
            ".gitignore",
            "*.log\n!keep.log\n/top-only.txt\nbuild/\ndocs/**/draft.md\n",
        ),
        ("keep.log", "x"),
        ("drop.log", "x"),
        ("top-only.txt", "x"),
        ("src/top-only.txt", "x"),
        ("src/.gitignore", "!debug.log\n*.tmp\ngen/\n"),
        ("src/debug.log", "x"),
        ("src/other.log", "x"),
        ("src/a.tmp", "x"),
        ("src/gen/out.rs", "x"),
        ("src/deep/er/.gitignore", "!*.tmp\n"),
        ("src/deep/er/b.tmp", "x"),
        ("src/deep/c.tmp", "x"),
        ("build/x.o", "x"),
        ("lib/build", "a file, not the folder the rule names"),
        ("docs/a/b/draft.md", "x"),
        ("docs/a/final.md", "x"),
        (".hidden/cfg", "x"),
        ("secret.env", "x"),
        ("nested/inner.txt", "x"),
        ("unicode/é ñ.txt", "x"),
    ];
    for (rel, text) in files {
        put_file(root, rel, text);
    }
    git(&["init", "-q", "nested"]);
    std::fs::write(root.join(".git/info/exclude"), "*.env\n").unwrap();
    std::os::unix::fs::symlink("keep.log", root.join("link")).unwrap();
    std::os::unix::fs::symlink("/nowhere", root.join("dangling")).unwrap();
    let mut expected: Vec<String> = git(&["ls-files", "-z", "--others", "--exclude-standard"])
        .split('\0')
        .filter(|p| !p.is_empty() && !p.ends_with('/'))
        .map(str::to_string)
        .collect();
    expected.sort();
    let Ok(found) = walk::walk(root, &Gitignore::empty(), MAX_FILES) else {
        panic!("the walk stopped");
    };
    let mut names: Vec<String> = found
        .iter()
        .map(|(rel, _)| String::from_utf8(rel.clone()).unwrap())
        .collect();
    names.sort();
    assert_eq!(names, expected);
    assert!(
        names.contains(&"src/deep/er/b.tmp".to_string()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.starts_with("nested/")), "{names:?}");

    // ouro's own exclusions win over the project's rules, and the limit is kept.
    let mut builder = GitignoreBuilder::new(root);
    builder.add_line(None, "keep.log").unwrap();
    let excludes = builder.build().unwrap();
    let found = walk::walk(root, &excludes, MAX_FILES).ok().unwrap();
    assert!(!found.iter().any(|(rel, _)| rel == b"keep.log"));
    assert!(matches!(
        walk::walk(root, &Gitignore::empty(), names.len() - 1),
        Err(walk::Stop::TooMany)
    ));
    assert!(walk::walk(root, &Gitignore::empty(), names.len()).is_ok());
    // A folder that is gone is no error, a project that is gone is one.
    assert!(matches!(
        walk::walk(&root.join("missing"), &Gitignore::empty(), MAX_FILES),
        Err(walk::Stop::Failed(_))
    ));
}

/// A walk remakes only the trees above what it found changed: after each kind of change
/// (an edit, a new folder, a folder emptied, a file made executable, a file turned into a
/// folder) its tree is the one a fresh walk makes whole.
#[test]
fn trees_after_a_walk_equal_trees_made_whole() {
    use std::os::unix::fs::PermissionsExt;
    let (project, shadow) = dirs();
    let (root, git_dir) = (project.path(), shadow.path());
    let write = |rel: &str, text: &str| put_file(root, rel, text);
    for rel in [
        "top.txt",
        "a/x.rs",
        "a/b/c/one.rs",
        "a/b.rs",
        "d/e/only.rs",
        "d/keep.rs",
    ] {
        write(rel, rel);
    }
    let (writer, mut scan) = walked(root, git_dir);
    let whole = || walked(root, dirs().1.path()).1.update_trees(&[]).unwrap();
    let steps: [&dyn Fn(); 5] = [
        &|| write("a/b/c/one.rs", "edited"),
        &|| write("n/e/w/file.rs", "new"),
        &|| std::fs::remove_file(root.join("d/e/only.rs")).unwrap(),
        &|| {
            let path = root.join("a/b.rs");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        },
        &|| {
            std::fs::remove_file(root.join("top.txt")).unwrap();
            write("top.txt/inside.rs", "a folder now");
        },
    ];
    let mut trees = vec![objects::hex(&scan.update_trees(&[]).unwrap())];
    for (step, change) in steps.iter().enumerate() {
        change();
        let tree = scan.everything().unwrap();
        scan.finish(Vec::new()).unwrap();
        assert_eq!(objects::hex(&tree), objects::hex(&whole()), "step {step}");
        trees.push(objects::hex(&tree));
    }
    trees.dedup();
    assert_eq!(trees.len(), steps.len() + 1, "every change made a new tree");
    writer.settle().unwrap();
}

/// A project nested deeper than a snapshot goes (a repository built to crash whatever walks
/// it): the walk leaves the deep part out, on a thread with the stack a blocking task gets.
#[test]
fn a_very_deep_project_is_walked_to_a_limit_without_exhausting_the_stack() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path().to_path_buf();
    let deep: PathBuf = std::iter::once(root.clone())
        .chain((0..1800).map(|_| PathBuf::from("d")))
        .collect();
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("bottom.txt"), "too deep").unwrap();
    let shallow: PathBuf = std::iter::once(root.clone())
        .chain((0..10).map(|_| PathBuf::from("d")))
        .collect();
    std::fs::write(shallow.join("shallow.txt"), "found").unwrap();
    let found = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(
            move || match walk::walk(&root, &Gitignore::empty(), MAX_FILES) {
                Ok(found) => found
                    .into_iter()
                    .map(|(rel, _)| String::from_utf8(rel).unwrap())
                    .collect::<Vec<_>>(),
                Err(_) => panic!("the walk stopped"),
            },
        )
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(found, [format!("{}shallow.txt", "d/".repeat(10))]);
}
