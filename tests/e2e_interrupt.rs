//! End-to-end: Ctrl-C (SIGINT) at every stage of a print-mode run: during compaction, a retry
//! wait, a streaming reply after a tool call, and a tool still running after a cut. Each test
//! signals once the mock reports the state it wants to interrupt, never after a fixed sleep.

use crate::common;

use std::time::Duration;

use common::{Run, Sandbox, Watched, bodies, server};
use serde_json::json;

#[tokio::test]
async fn ctrl_c_during_the_compaction_request_is_an_abort() {
    let sb = Sandbox::new();
    let big = sb.write("big.txt", &"lorem ipsum dolor sit amet\n".repeat(400));
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "text", "text": "SUMMARY that is held back"}],
         "faults": [{"kind": "prompt_too_long"}], "hold_after_events": 0},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let ouro =
        Watched::spawn(sb.command(&mock.url(), &["-p", "--output-format", "stream-json", "go"]));
    // Three tool rounds, the rejected fourth request, then the summary request, held.
    mock.wait_held(1).await;
    assert_eq!(mock.requests().len(), 5);
    ouro.wait_stdout(r#""status":"compacting""#).await;
    ouro.interrupt();
    let run = ouro.finish(Duration::from_secs(15)).await;
    assert_interrupted(&run);
    assert_eq!(mock.requests().len(), 5, "no request after the interrupt");
}

#[tokio::test]
async fn ctrl_c_during_a_retry_wait_ends_the_run_at_once() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "never"}],
         "faults": [{"kind": "http", "status": 429, "retry_after": 60}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let ouro =
        Watched::spawn(sb.command(&mock.url(), &["-p", "--output-format", "stream-json", "go"]));
    // The retry event is written when the wait begins.
    ouro.wait_stdout(r#""subtype":"api_retry""#).await;
    ouro.interrupt();
    let run = ouro.finish(Duration::from_secs(20)).await;
    assert_interrupted(&run);
    assert_eq!(mock.turns_served(), 0);
}

#[tokio::test]
async fn ctrl_c_mid_stream_after_a_tool_call_keeps_the_pair_for_resume() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        // The tool_use block completes (7 events), the text block starts, and the reply is held.
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "sleep 30"}},
                     {"type": "text", "text": "a trailing text block that never finishes"}],
         "hold_after_events": 9},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let ouro = Watched::spawn(sb.command(
        &mock.url(),
        &[
            "-p",
            "--output-format",
            "stream-json",
            "--allowedTools",
            "Bash(sleep:*)",
            "wait",
        ],
    ));
    mock.wait_held(1).await;
    ouro.wait_for_descendant("sleep").await;
    ouro.interrupt();
    let run = ouro.finish(Duration::from_secs(15)).await;
    assert_interrupted(&run);
    assert_eq!(run.tool_results().len(), 1, "{}", run.debug());
    assert_eq!(mock.turns_served(), 1);

    let mock2 = server(json!({"turns": [{"content": [{"type": "text", "text": "fine"}]}]})).await;
    let run2 = sb
        .run(
            &mock2.url(),
            &["-p", "--output-format", "json", "--continue", "status?"],
        )
        .await;
    assert!(run2.status.success(), "{}", run2.debug());
    let messages = bodies(&mock2)[0]["messages"].clone();
    let last = messages.as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["content"][0]["tool_use_id"], "toolu_mock_0000_00",
        "{messages}"
    );
    assert_eq!(last["content"][0]["is_error"], true);
}

#[tokio::test]
async fn ctrl_c_reaches_a_tool_still_running_after_the_stream_was_cut() {
    let sb = Sandbox::new();
    // The tool_use block completes (7 events), then the connection drops in the text block.
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "sleep 30"}},
                     {"type": "text", "text": "trailing words that are cut"}],
         "faults": [{"kind": "cut", "after_events": 9}]},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let mut command = sb.command(
        &mock.url(),
        &[
            "-p",
            "--output-format",
            "stream-json",
            "--allowedTools",
            "Bash(sleep:*)",
            "wait",
        ],
    );
    command.env("OURO_LOG", "ouro::engine=debug");
    let ouro = Watched::spawn(command);
    ouro.wait_for_descendant("sleep").await;
    // The cut has landed: the engine now waits for the tool.
    ouro.wait_stderr("the stream broke after finished blocks")
        .await;
    ouro.interrupt();
    // Well within the tool's 30 s: Ctrl-C stopped it instead of waiting for it.
    let run = ouro.finish(Duration::from_secs(15)).await;
    assert_interrupted(&run);
    let results = run.tool_results();
    assert_eq!(results.len(), 1, "{}", run.debug());
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(mock.turns_served(), 0, "the cut attempt served no turn");
}

/// A second Ctrl-C ends ouro at once even while its one thread is stuck writing the answer to a
/// reader that stopped reading (the runtime cannot handle the first signal until the write
/// returns, so the signal handler itself exits).
#[tokio::test]
async fn a_second_ctrl_c_ends_ouro_while_nobody_reads_its_output() {
    let answer = "lorem ipsum ".repeat(50_000);
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": answer}]}]})).await;
    let sb = Sandbox::new();
    let mut command = sb.command(&mock.url(), &["-p", "go"]);
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut ouro = command.spawn().unwrap();
    let unread = ouro.stdout.take();
    let pid = ouro.id().unwrap() as i32;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while mock.turns_served() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the answer was never served"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The answer (600 kB) is bigger than the pipe: the write that prints it blocks.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for _ in 0..2 {
        // SAFETY: kill only sends a signal to our own child.
        unsafe { libc::kill(pid, libc::SIGINT) };
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status = tokio::time::timeout(Duration::from_secs(10), ouro.wait())
        .await
        .expect("ouro did not end on a second Ctrl-C")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    drop(unread);
}

/// SIGTERM and SIGHUP end a print-mode run like Ctrl-C: the turn ends with its transcript
/// whole, ouro exits with 128 + the signal, and what the session's command started in the
/// background (in its group, or escaped with setsid) ends with it.
#[tokio::test]
async fn sigterm_and_sighup_end_the_session_and_everything_it_started() {
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let sb = Sandbox::new();
        let command =
            "sleep 300 & echo $! > bg.pid; setsid sleep 300 & echo $! > escaped.pid; sleep 300";
        let mock = server(json!({"turns": [
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": command}}]},
            {"content": [{"type": "text", "text": "never"}]}
        ]}))
        .await;
        let ouro = Watched::spawn(sb.command(
            &mock.url(),
            &[
                "-p",
                "--allowedTools",
                "Bash",
                "--output-format",
                "stream-json",
                "go",
            ],
        ));
        let pid_of = |name: &str| {
            std::fs::read_to_string(sb.root().join(name))
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while pid_of("bg.pid").is_none() || pid_of("escaped.pid").is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "the command never started"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let started = [pid_of("bg.pid").unwrap(), pid_of("escaped.pid").unwrap()];
        // SAFETY: kill only sends a signal to our own child.
        unsafe { libc::kill(ouro.pid(), signal) };
        let run = ouro.finish(Duration::from_secs(20)).await;
        assert_eq!(run.status.code(), Some(code), "{}", run.debug());
        assert_interrupted(&run);
        assert_eq!(bodies(&mock).len(), 1, "no request after the signal");
        for pid in started {
            common::wait_gone(pid);
        }
        for line in std::fs::read_to_string(&sb.transcripts()[0])
            .unwrap()
            .lines()
        {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
    }
}

/// A SIGKILL of ouro cannot be caught, yet what its command left running still ends with it:
/// in the command's group, escaped with setsid, double-forked, under nohup, or the command
/// itself. ouro's keeper starts them and ends them when ouro is gone.
#[tokio::test]
async fn sigkill_of_ouro_ends_everything_its_commands_started() {
    let sb = Sandbox::new();
    let command = "sleep 300 & echo $! > bg.pid; setsid sleep 300 & echo $! > escaped.pid; \
                   (setsid sh -c 'echo $$ > double.pid; exec sleep 300' &) ; \
                   nohup sleep 300 >/dev/null 2>&1 & echo $! > nohup.pid; \
                   echo $$ > shell.pid; sleep 300";
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": command}}]},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let ouro = Watched::spawn(sb.command(&mock.url(), &["-p", "--allowedTools", "Bash", "go"]));
    let names = [
        "bg.pid",
        "escaped.pid",
        "double.pid",
        "nohup.pid",
        "shell.pid",
    ];
    let pid_of = |name: &str| {
        std::fs::read_to_string(sb.root().join(name))
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while names.iter().any(|n| pid_of(n).is_none()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started: Vec<i32> = names.iter().filter_map(|n| pid_of(n)).collect();
    assert!(
        started.iter().all(|pid| !common::gone(*pid)),
        "all run before the kill"
    );
    // SAFETY: kill only sends a signal to our own child.
    unsafe { libc::kill(ouro.pid(), libc::SIGKILL) };
    let run = ouro.finish(Duration::from_secs(20)).await;
    assert_eq!(run.status.code(), None, "{}", run.debug());
    for pid in started {
        common::wait_gone(pid);
    }
}

/// The result of an interrupted run, as Claude Code reports one.
fn assert_interrupted(run: &Run) {
    assert_eq!(
        run.result()["subtype"],
        "error_during_execution",
        "{}",
        run.debug()
    );
    assert_eq!(
        run.result()["terminal_reason"],
        "aborted_streaming",
        "{}",
        run.debug()
    );
}
