//! End-to-end: checkpoints and `ouro rewind` (issue 19). A session edits two files, rewrites
//! one with Bash (`sed -i`, `echo >`, `chmod`) and deletes one with `rm`; going back to before
//! the first prompt restores all of them, content and mode, and leaves the user's own git state
//! exactly as it was.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{Sandbox, bodies, git, server};
use serde_json::{Value, json};

/// Everything of the user's git state a rewind must not touch.
fn git_state(dir: &Path) -> Vec<String> {
    [
        &[
            "status",
            "--porcelain=v2",
            "--branch",
            "--untracked-files=all",
        ][..],
        &["stash", "list"],
        &["diff", "--cached"],
        &["log", "--all", "--oneline"],
        &["ls-files", "--stage"],
    ]
    .iter()
    .map(|args| git(dir, args))
    .collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A project under git with a stash, a staged change and an untracked file, the four files the
/// session changes, and a script whose mode the session changes.
fn project(sb: &Sandbox) {
    let root = sb.root();
    git(&root, &["init", "-q", "-b", "main"]);
    sb.write("a.txt", "alpha\n");
    sb.write("b.txt", "bravo\n");
    sb.write("c.txt", "charlie x\n");
    sb.write("d.txt", "delta\n");
    sb.write("run.sh", "#!/bin/sh\necho run\n");
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    sb.write("stash.txt", "one\n");
    git(&root, &["add", "."]);
    git(&root, &["commit", "-qm", "start"]);
    sb.write("stash.txt", "stashed\n");
    git(&root, &["stash", "-q"]);
    sb.write("staged.txt", "staged\n");
    git(&root, &["add", "staged.txt"]);
    sb.write("untracked.txt", "mine\n");
}

fn tool(name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "name": name, "input": input})
}

/// The first prompt's turns: Read, Edit twice, Bash rewrites and deletes; then a second prompt
/// that writes one more file.
fn scenario(root: &Path) -> Value {
    let p = |f: &str| root.join(f).to_string_lossy().into_owned();
    json!({"turns": [
        {"content": [tool("Read", json!({"file_path": p("a.txt")})), tool("Read", json!({"file_path": p("b.txt")}))]},
        {"content": [
            tool("Edit", json!({"file_path": p("a.txt"), "old_string": "alpha", "new_string": "ALPHA"})),
            tool("Edit", json!({"file_path": p("b.txt"), "old_string": "bravo", "new_string": "BRAVO"}))
        ]},
        {"content": [tool("Bash", json!({"command": "sed -i s/x/y/ c.txt && echo new > run.sh && chmod 644 run.sh"}))]},
        {"content": [tool("Bash", json!({"command": "rm d.txt"}))]},
        {"content": [{"type": "text", "text": "first done"}]},
        {"content": [tool("Write", json!({"file_path": p("e.txt"), "content": "echo\n"}))]},
        {"content": [{"type": "text", "text": "second done"}]},
        {"content": [{"type": "text", "text": "after the rewind"}]}
    ]})
}

/// One prompt with every call allowed (the tests run as root in CI).
async fn bypassing(sb: &Sandbox, url: &str, args: &[&str]) {
    let mut all = vec!["-p", "--permission-mode", "bypassPermissions"];
    all.extend(args);
    let output = sb
        .command(url, &all)
        .env("OURO_ALLOW_ROOT_BYPASS", "1")
        .output()
        .await
        .unwrap();
    let run = common::Run::from(output);
    assert!(run.status.success(), "{}", run.debug());
}

async fn two_prompts(sb: &Sandbox, url: &str) {
    bypassing(sb, url, &["change things"]).await;
    bypassing(sb, url, &["--continue", "one more"]).await;
    assert!(sb.root().join("e.txt").exists());
}

fn read(sb: &Sandbox, f: &str) -> String {
    std::fs::read_to_string(sb.root().join(f)).unwrap()
}

#[tokio::test]
async fn rewinding_to_the_first_prompt_restores_every_change_and_cuts_the_conversation() {
    let sb = Sandbox::new();
    project(&sb);
    let before = git_state(&sb.root());
    let mock = server(scenario(&sb.root())).await;
    two_prompts(&sb, &mock.url()).await;
    assert_eq!(read(&sb, "a.txt"), "ALPHA\n");
    assert_eq!(read(&sb, "c.txt"), "charlie y\n");
    assert!(!sb.root().join("d.txt").exists());
    assert_eq!(mode(&sb.root().join("run.sh")), 0o644);

    let list = sb.run(&mock.url(), &["rewind", "--list"]).await;
    assert!(list.status.success(), "{}", list.debug());
    assert!(list.stdout.contains("#1"), "{}", list.stdout);
    assert!(list.stdout.contains("change things"), "{}", list.stdout);
    for changed in ["a.txt", "b.txt", "c.txt", "d.txt", "run.sh"] {
        assert!(list.stdout.contains(changed), "{changed}: {}", list.stdout);
    }
    assert!(list.stdout.contains("before Bash"), "{}", list.stdout);
    let diff = sb.run(&mock.url(), &["rewind", "--diff", "1"]).await;
    assert!(
        diff.stdout.contains("-alpha") && diff.stdout.contains("+ALPHA"),
        "{}",
        diff.stdout
    );

    let rewind = sb
        .run(&mock.url(), &["rewind", "--continue", "--to", "1"])
        .await;
    assert!(rewind.status.success(), "{}", rewind.debug());
    assert_eq!(read(&sb, "a.txt"), "alpha\n");
    assert_eq!(read(&sb, "b.txt"), "bravo\n");
    assert_eq!(read(&sb, "c.txt"), "charlie x\n");
    assert_eq!(read(&sb, "d.txt"), "delta\n");
    assert_eq!(read(&sb, "run.sh"), "#!/bin/sh\necho run\n");
    assert_eq!(mode(&sb.root().join("run.sh")), 0o755);
    assert!(
        !sb.root().join("e.txt").exists(),
        "the second prompt's file goes too"
    );
    assert_eq!(
        git_state(&sb.root()),
        before,
        "the user's git state is untouched"
    );
    assert!(sb.root().join("untracked.txt").exists());

    // The next resume starts from before the first prompt.
    let resumed = sb.run(&mock.url(), &["-p", "--continue", "again"]).await;
    assert!(resumed.status.success(), "{}", resumed.debug());
    let last = bodies(&mock).pop().unwrap();
    assert_eq!(last["messages"].as_array().unwrap().len(), 1, "{last}");
}

#[tokio::test]
async fn a_conversation_rewind_keeps_the_files() {
    let sb = Sandbox::new();
    project(&sb);
    let mock = server(scenario(&sb.root())).await;
    two_prompts(&sb, &mock.url()).await;
    let rewind = sb
        .run(&mock.url(), &["rewind", "--to", "2", "--conversation"])
        .await;
    assert!(rewind.status.success(), "{}", rewind.debug());
    assert!(rewind.stdout.contains("one more"), "{}", rewind.stdout);
    assert_eq!(read(&sb, "a.txt"), "ALPHA\n");
    assert!(sb.root().join("e.txt").exists());
    let resumed = sb.run(&mock.url(), &["-p", "--continue", "again"]).await;
    assert!(resumed.status.success(), "{}", resumed.debug());
    let last = bodies(&mock).pop().unwrap();
    let texts: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.to_string())
        .collect();
    assert!(texts.iter().any(|t| t.contains("change things")));
    assert!(!texts.iter().any(|t| t.contains("one more")), "{texts:?}");
}

#[tokio::test]
async fn a_file_the_user_changed_is_reported_and_kept_unless_forced() {
    let sb = Sandbox::new();
    project(&sb);
    let mock = server(scenario(&sb.root())).await;
    two_prompts(&sb, &mock.url()).await;
    sb.write("b.txt", "the user's own\n");
    let rewind = sb
        .run(&mock.url(), &["rewind", "--to", "1", "--code"])
        .await;
    assert!(rewind.status.success(), "{}", rewind.debug());
    assert!(rewind.stdout.contains("Kept b.txt"), "{}", rewind.stdout);
    assert_eq!(read(&sb, "b.txt"), "the user's own\n");
    assert_eq!(read(&sb, "a.txt"), "alpha\n");
    // The rewind itself was checkpointed: going back to before it brings ALPHA back.
    let list = sb.run(&mock.url(), &["rewind", "--list"]).await;
    assert!(list.stdout.contains("#2"), "{}", list.stdout);
    let forced = sb
        .run(&mock.url(), &["rewind", "--to", "1", "--code", "--force"])
        .await;
    assert!(forced.status.success(), "{}", forced.debug());
    assert_eq!(read(&sb, "b.txt"), "bravo\n");
}

#[tokio::test]
async fn every_checkpoint_is_in_the_transcript_with_its_tool_use_id() {
    let sb = Sandbox::new();
    project(&sb);
    let mock = server(scenario(&sb.root())).await;
    two_prompts(&sb, &mock.url()).await;
    let transcript = std::fs::read_to_string(&sb.transcripts()[0]).unwrap();
    let records: Vec<Value> = transcript
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "checkpoint")
        .map(|v| v["record"].clone())
        .collect();
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "prompt", "tool", "tool", "tool", "tool", "end", "prompt", "tool", "end"
        ],
        "{records:#?}"
    );
    let tools: Vec<&str> = records.iter().filter_map(|r| r["tool"].as_str()).collect();
    assert_eq!(tools, ["Edit", "Edit", "Bash", "Bash", "Write"]);
    assert!(
        records[1]["tool_use_id"]
            .as_str()
            .unwrap()
            .starts_with("toolu_")
    );
    assert!(!sb.root().join(".git/ouro").exists());
    assert!(sb.home.path().join("checkpoints").is_dir());
}

/// One prompt whose turns are these Bash commands, then a closing answer.
fn commands(commands: &[&str]) -> Value {
    let mut turns: Vec<Value> = commands
        .iter()
        .map(|c| json!({"content": [tool("Bash", json!({"command": c}))]}))
        .collect();
    turns.push(json!({"content": [{"type": "text", "text": "done"}]}));
    json!({ "turns": turns })
}

#[tokio::test]
async fn links_folders_and_files_that_swapped_places_come_back_without_touching_outside() {
    let sb = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("f.txt"), "PRECIOUS\n").unwrap();
    sb.write("sub/f.txt", "orig\n");
    sb.write("x", "a file\n");
    sb.write("d/f", "in a folder\n");
    let link = format!("rm -rf sub && ln -s {} sub", outside.path().display());
    let mock = server(commands(&[
        &link,
        "rm x && mkdir x && echo y > x/y && rm -rf d && echo now-a-file > d",
    ]))
    .await;
    bypassing(&sb, &mock.url(), &["shuffle"]).await;
    assert!(sb.root().join("sub").is_symlink());
    let rewind = sb
        .run(&mock.url(), &["rewind", "--to", "1", "--code"])
        .await;
    assert!(rewind.status.success(), "{}", rewind.debug());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("f.txt")).unwrap(),
        "PRECIOUS\n",
        "nothing is written through the link"
    );
    assert!(!sb.root().join("sub").is_symlink());
    assert_eq!(read(&sb, "sub/f.txt"), "orig\n");
    assert_eq!(read(&sb, "x"), "a file\n");
    assert_eq!(read(&sb, "d/f"), "in a folder\n");
    assert!(rewind.stdout.contains("To undo this"), "{}", rewind.stdout);
}

#[tokio::test]
async fn files_the_checkpoints_gitignore_left_out_are_not_deleted() {
    let sb = Sandbox::new();
    sb.write(".gitignore", ".env\nbuild/\n");
    sb.write(".env", "SECRET=1\n");
    sb.write("build/out.bin", "binary\n");
    let mock = server(commands(&["printf 'node_modules/\\n' > .gitignore"])).await;
    bypassing(&sb, &mock.url(), &["change the ignores"]).await;
    let rewind = sb
        .run(&mock.url(), &["rewind", "--to", "1", "--code"])
        .await;
    assert!(rewind.status.success(), "{}", rewind.debug());
    assert_eq!(read(&sb, ".gitignore"), ".env\nbuild/\n");
    assert_eq!(read(&sb, ".env"), "SECRET=1\n");
    assert_eq!(read(&sb, "build/out.bin"), "binary\n");
}

#[tokio::test]
async fn a_write_git_will_not_take_leaves_checkpoints_on() {
    let sb = Sandbox::new();
    sb.write(".gitignore", ".env\n");
    sb.write("a.txt", "one\n");
    let p = |f: &str| sb.root().join(f).to_string_lossy().into_owned();
    let mock = server(json!({"turns": [
        {"content": [tool("Write", json!({"file_path": p(".env"), "content": "X=1\n"}))]},
        {"content": [tool("Write", json!({"file_path": p(":(glob)*"), "content": "odd\n"}))]},
        {"content": [tool("Bash", json!({"command": "echo two > a.txt"}))]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    bypassing(&sb, &mock.url(), &["write odd things"]).await;
    let transcript = std::fs::read_to_string(&sb.transcripts()[0]).unwrap();
    let kinds: Vec<String> = transcript
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "checkpoint")
        .map(|v| v["record"]["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        ["prompt", "tool", "tool", "tool", "end"],
        "{transcript}"
    );
    let rewind = sb
        .run(&mock.url(), &["rewind", "--to", "1", "--code"])
        .await;
    assert!(rewind.status.success(), "{}", rewind.debug());
    assert_eq!(read(&sb, "a.txt"), "one\n");
    assert!(!sb.root().join(":(glob)*").exists());
    assert_eq!(
        read(&sb, ".env"),
        "X=1\n",
        "ignored: never recorded, so kept"
    );
}

#[tokio::test]
async fn another_sessions_work_during_the_turn_is_not_undone() {
    let sb = Sandbox::new();
    sb.write("keep.txt", "keep\n");
    let first = server(commands(&["echo A > a.txt && sleep 3"])).await;
    let b = sb.root().join("b.txt");
    let second = server(json!({"turns": [
        {"content": [tool("Write", json!({"file_path": b, "content": "B\n"}))]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let id = "0a0a0a0a-0000-4000-8000-000000000001";
    let mut session_a = sb.command(
        &first.url(),
        &[
            "-p",
            "--permission-mode",
            "bypassPermissions",
            "--session-id",
            id,
            "work",
        ],
    );
    let running = session_a
        .env("OURO_ALLOW_ROOT_BYPASS", "1")
        .spawn()
        .unwrap();
    // Session B does all its work while A's command runs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !sb.root().join("a.txt").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "session A never ran its command"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    bypassing(&sb, &second.url(), &["write b"]).await;
    let a = running.wait_with_output().await.unwrap();
    assert!(a.status.success(), "{a:?}");

    let rewind = sb
        .run(
            &first.url(),
            &["rewind", "--resume", id, "--to", "1", "--code"],
        )
        .await;
    assert!(rewind.status.success(), "{}", rewind.debug());
    assert!(
        !sb.root().join("a.txt").exists(),
        "A's own change is undone"
    );
    assert_eq!(read(&sb, "b.txt"), "B\n", "B's is not");
    assert!(rewind.stdout.contains("Kept b.txt"), "{}", rewind.stdout);
}
