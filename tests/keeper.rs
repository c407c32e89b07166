//! End-to-end: ouro's process keeper, which starts tool processes, under the inputs that could
//! break it: a command the kernel refuses to start while another process of the session runs
//! (std reaps that child itself, and the keeper must not take it first), a project whose path
//! is not UTF-8, and a SIGKILL of ouro after all of it.

use crate::common;

use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use common::{Sandbox, Watched, request_tool_results, server};
use serde_json::json;

fn bash(command: &str) -> serde_json::Value {
    json!({"content": [{"type": "tool_use", "name": "Bash", "input": {"command": command}}]})
}

#[tokio::test]
async fn the_keeper_survives_a_refused_start_and_a_non_utf8_project() {
    let sb = Sandbox::new();
    // A directory name that is not UTF-8, as the project ouro runs in.
    let odd = sb.root().join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    std::fs::create_dir(&odd).unwrap();
    // One argument longer than the kernel takes (E2BIG): the exec fails after the fork.
    let too_long = format!("echo {}", "x".repeat(200_000));
    let mock = server(json!({"turns": [
        bash("sleep 300 & echo $! > bg.pid"),
        bash(&too_long),
        bash("echo $$ > shell.pid; sleep 300"),
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    // Bypass: the long command is not refused by the analyser before it reaches the kernel.
    let mut command = sb.command(
        &mock.url(),
        &["-p", "--permission-mode", "bypassPermissions", "go"],
    );
    command.current_dir(&odd).env("OURO_ALLOW_ROOT_BYPASS", "1");
    let ouro = Watched::spawn(command);
    let pid_file = odd.join("bg.pid");
    let deadline = Instant::now() + Duration::from_secs(60);
    while common::bodies(&mock).len() < 3 {
        assert!(Instant::now() < deadline, "the third call never came");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let bodies = common::bodies(&mock);
    let results = request_tool_results(&bodies[2]);
    let refused = results.last().unwrap();
    assert_eq!(refused["is_error"], true, "{results:?}");
    assert!(
        refused["content"]
            .to_string()
            .contains("Argument list too long"),
        "{results:?}"
    );
    let background: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The third call runs: the keeper lived through the refused start.
    let deadline = Instant::now() + Duration::from_secs(30);
    let shell = loop {
        if let Some(pid) = std::fs::read_to_string(odd.join("shell.pid"))
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the third call never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // SAFETY: kill only sends a signal to our own child.
    unsafe { libc::kill(ouro.pid(), libc::SIGKILL) };
    ouro.finish(Duration::from_secs(20)).await;
    for pid in [background, shell] {
        common::wait_gone(pid);
    }
}
