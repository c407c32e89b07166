//! Fault injection, table-driven: a session is cut by SIGTERM, SIGHUP or SIGKILL at several
//! points of a turn (mid-stream, while a tool runs, mid-stream after a tool), or runs out of
//! disk at several points; each time the transcript stays whole JSON lines, and a resume finds
//! a valid, complete history (the mock API validates every request as the real one does), with
//! no tool run twice.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{self, Sandbox, Watched, bodies, server};

/// Where in the turn the fault lands.
#[derive(Debug, Clone, Copy)]
enum Point {
    /// The first answer is streaming.
    MidStream,
    /// A Bash call is running.
    InTool,
    /// The answer after a tool's result is streaming.
    AfterTool,
}

fn first_turns(point: Point) -> Value {
    let log = |extra: &str| {
        json!({"content": [{"type": "tool_use", "name": "Bash",
            "input": {"command": format!("echo ran >> ran.log{extra}")}}]})
    };
    match point {
        Point::MidStream => json!({"turns": [
            {"content": [{"type": "text", "text": "a long answer that never ends"}],
             "hold_after_events": 3}
        ]}),
        Point::InTool => {
            json!({"turns": [log("; sleep 300"), {"content": [{"type": "text", "text": "never"}]}]})
        }
        Point::AfterTool => json!({"turns": [
            log(""),
            {"content": [{"type": "text", "text": "an answer after the tool"}], "hold_after_events": 3}
        ]}),
    }
}

/// The transcript holds only whole JSON lines.
fn assert_whole_lines(sb: &Sandbox, label: &str) {
    for file in sb.transcripts() {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            assert!(
                serde_json::from_str::<Value>(line).is_ok(),
                "{label}: a torn line in {}: {line}",
                file.display()
            );
        }
    }
}

fn runs_logged(sb: &Sandbox) -> usize {
    std::fs::read_to_string(sb.root().join("ran.log"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Resumes the only conversation in `sb` and checks what the API was sent.
async fn resume_is_whole(sb: &Sandbox, label: &str) {
    let transcript = &sb.transcripts()[0];
    let id = transcript
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let mock =
        server(json!({"turns": [{"content": [{"type": "text", "text": "resumed fine"}]}]})).await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--resume", &id, "--output-format", "json", "go on"],
        )
        .await;
    assert!(run.status.success(), "{label}: {}", run.debug());
    assert_eq!(run.result()["result"], "resumed fine", "{label}");
    let sent = &bodies(&mock)[0];
    let messages = sent["messages"].as_array().unwrap();
    let mut uses = Vec::new();
    let mut results = Vec::new();
    for block in messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
    {
        match block["type"].as_str() {
            Some("tool_use") => uses.push(block["id"].as_str().unwrap().to_string()),
            Some("tool_result") => results.push(block["tool_use_id"].as_str().unwrap().to_string()),
            _ => {}
        }
    }
    assert_eq!(uses, results, "{label}: every call has its one result");
    let mut unique = uses.clone();
    unique.dedup();
    assert_eq!(unique, uses, "{label}: no call twice");
    assert!(runs_logged(sb) <= 1, "{label}: a tool ran twice");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signal_at_any_point_of_a_turn_leaves_a_session_that_resumes_whole() {
    for point in [Point::MidStream, Point::InTool, Point::AfterTool] {
        for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGKILL] {
            let label = format!("{point:?}, signal {signal}");
            let sb = Sandbox::new();
            let mock = server(first_turns(point)).await;
            let ouro = Watched::spawn(sb.command(
                &mock.url(),
                &[
                    "-p",
                    "--allowedTools",
                    "Bash",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "go",
                ],
            ));
            match point {
                Point::MidStream => mock.wait_held(1).await,
                Point::InTool => ouro.wait_for_descendant("sleep").await,
                Point::AfterTool => mock.wait_held(1).await,
            }
            ouro.signal(signal);
            let run = ouro.finish(Duration::from_secs(20)).await;
            let expected = if signal == libc::SIGKILL {
                None
            } else {
                Some(128 + signal)
            };
            assert_eq!(run.status.code(), expected, "{label}: {}", run.debug());
            mock.release();
            assert_whole_lines(&sb, &label);
            resume_is_whole(&sb, &label).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disk_that_fills_at_any_point_leaves_a_session_that_resumes_whole() {
    let sb = Sandbox::new();
    if common::SmallDisk::mount(&sb.home.path().join("probe"), "256k").is_none() {
        common::skip::cannot_mount("a small tmpfs");
        return;
    }
    // Room left on the disk when the session starts: from nothing to a little more than the
    // start needs, so the write that fails is a different one each time.
    let mut outcomes = Vec::new();
    for room in [
        0usize,
        1024,
        4096,
        12 * 1024,
        24 * 1024,
        48 * 1024,
        96 * 1024,
        200 * 1024,
    ] {
        let label = format!("{room} bytes free");
        let sb = Sandbox::new();
        let home = sb.home.path().join("small");
        let disk = common::SmallDisk::mount(&home, "256k").unwrap();
        let big: String = (0..1500)
            .map(|i| format!("line {i:05} of a big file\n"))
            .collect();
        sb.write("big.txt", &big);
        let mock = server(json!({"turns": [
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo ran >> ran.log; cat big.txt"}}]},
            {"content": [{"type": "text", "text": "all done"}]}
        ]}))
        .await;
        let filler = home.join("filler");
        std::fs::write(&filler, vec![0u8; disk.free().saturating_sub(room)]).ok();
        let mut cmd = sb.command(
            &mock.url(),
            &[
                "-p",
                "--allowedTools",
                "Bash",
                "--output-format",
                "json",
                "go",
            ],
        );
        cmd.env("OURO_HOME", &home);
        let run = common::Run::from(cmd.output().await.unwrap());
        let code = run.status.code();
        outcomes.push(code);
        assert!(
            matches!(code, Some(0) | Some(1)),
            "{label}: {}",
            run.debug()
        );
        if code == Some(1) {
            assert!(
                run.stdout.contains("error_during_execution") || run.stderr.contains("space"),
                "{label}: a failure must say what happened: {}",
                run.debug()
            );
        }
        let _ = std::fs::remove_file(&filler);
        let transcripts: Vec<_> = walk_jsonl(&home);
        for file in &transcripts {
            let text = std::fs::read_to_string(file).unwrap();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                assert!(
                    serde_json::from_str::<Value>(line).is_ok(),
                    "{label}: torn line {line}"
                );
            }
        }
        if let Some(file) = transcripts.first() {
            let id = file.file_stem().unwrap().to_string_lossy().to_string();
            let again =
                server(json!({"turns": [{"content": [{"type": "text", "text": "resumed fine"}]}]}))
                    .await;
            let mut cmd = sb.command(
                &again.url(),
                &["-p", "--resume", &id, "--output-format", "json", "go on"],
            );
            cmd.env("OURO_HOME", &home);
            let resumed = common::Run::from(cmd.output().await.unwrap());
            assert!(resumed.status.success(), "{label}: {}", resumed.debug());
            assert!(runs_logged(&sb) <= 1, "{label}: a tool ran twice");
        }
        drop(disk);
    }
    // The rooms span both sides: some sessions fail somewhere, the roomiest finishes.
    assert!(
        outcomes.contains(&Some(1)) && outcomes.contains(&Some(0)),
        "{outcomes:?}"
    );
}

fn walk_jsonl(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl")
                && path.parent().is_some_and(|p| !p.ends_with("subagents"))
            {
                out.push(path);
            }
        }
    }
    out
}
