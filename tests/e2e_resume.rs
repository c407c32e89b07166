//! End-to-end: resuming sessions: huge transcripts, transcripts that end in a compaction or
//! mid-message.

use crate::common;

use common::{Sandbox, bodies, server};
use serde_json::{Value, json};

/// A session started with one prompt, its transcript extended with `entries` (JSON lines);
/// returns its id.
async fn session_with(sb: &Sandbox, entries: impl IntoIterator<Item = Value>) -> String {
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "first"}]}]})).await;
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "start"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let path = sb.transcripts()[0].clone();
    let mut text = std::fs::read_to_string(&path).unwrap();
    for entry in entries {
        text.push_str(&entry.to_string());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    common::session_id(&run)
}

fn user(uuid: String, content: Value) -> Value {
    json!({"type": "user", "uuid": uuid, "timestamp": "2026-01-01T00:00:00.000Z",
           "message": {"role": "user", "content": content}})
}

fn assistant(uuid: String, content: Value) -> Value {
    json!({"type": "assistant", "uuid": uuid.clone(), "timestamp": "2026-01-01T00:00:00.000Z",
           "message_id": format!("msg_{uuid}"), "message": {"role": "assistant", "content": content}})
}

/// A round: a Read call and its result of `result` bytes.
fn read_round(i: usize, result: usize) -> [Value; 2] {
    let id = format!("toolu_{i}");
    [
        assistant(
            format!("a{i}"),
            json!([{"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": format!("/p/f{i}.rs")}}]),
        ),
        user(
            format!("u{i}"),
            json!([{"type": "tool_result", "tool_use_id": id,
                    "content": format!("{i:05} ").repeat(result / 6)}]),
        ),
    ]
}

#[tokio::test]
async fn a_resume_too_big_for_the_window_compacts_before_its_first_request() {
    let sb = Sandbox::new();
    let entries = (0..6_000).flat_map(|i| {
        [
            user(
                format!("u{i}"),
                json!([{"type": "text", "text": format!("question {i}")}]),
            ),
            assistant(
                format!("a{i}"),
                json!([{"type": "text", "text": format!("answer {i}")}]),
            ),
        ]
    });
    let id = session_with(&sb, entries).await;
    // 12k messages are ~800 KB of JSON, ~200k tokens: past the threshold of a 200k window
    // before anything is sent (and short enough to summarise in one request).
    let mock2 = server(json!({"context_limit_tokens": 200_000,
        "turns": [{"content": [{"type": "text", "text": "SUMMARY-20K"}]},
                  {"content": [{"type": "text", "text": "resumed"}], "expect_text": "SUMMARY-20K",
                   "usage": {"input_tokens": 1000, "output_tokens": 5}}]}))
    .await;
    let run2 = sb
        .run(
            &mock2.url(),
            &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--resume",
                &id,
                "last one",
            ],
        )
        .await;
    assert!(run2.status.success(), "{}", run2.debug());
    assert_eq!(run2.of_type("system", Some("compact_boundary")).len(), 1);
    let sent = bodies(&mock2);
    assert_eq!(
        sent.len(),
        2,
        "the summary request, then the answer: no refusal first"
    );
    assert!(
        sent[0].get("tools").is_none(),
        "the first request is the summary"
    );
    let messages = sent[1]["messages"].as_array().unwrap();
    assert!(messages.len() < 10, "{}", messages.len());
    let last = messages.last().unwrap()["content"].to_string();
    assert!(last.contains("last one"), "{last}");
}

#[tokio::test]
async fn a_conversation_too_long_for_one_summary_is_summarised_in_chunks() {
    let sb = Sandbox::new();
    // 300 results of 3 KB: each is cut to 2,000 characters for the summariser, ~620k
    // characters in all, more than one summary request takes.
    let id = session_with(&sb, (0..300).flat_map(|i| read_round(i, 3_000))).await;
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "S1-PART"}]},
        {"content": [{"type": "text", "text": "S2-ALL"}], "expect_text": "S1-PART"},
        {"content": [{"type": "text", "text": "resumed"}], "expect_text": "S2-ALL"}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "--resume", &id, "go on"],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let sent = bodies(&mock);
    let second = sent[1]["messages"].to_string();
    assert!(
        second.contains("Summary of the conversation before this part") && second.contains("00297"),
        "the second chunk carries the first summary and the newest rounds"
    );
    let first = sent[0]["messages"].to_string();
    assert!(first.contains("00000") && !first.contains("00297"));
    let last = sent[2]["messages"].to_string();
    assert!(
        last.contains("00299") && !last.contains("00297"),
        "the last two rounds are kept"
    );
    assert!(sent.iter().all(|b| b.to_string().len() < 600_000));
}

#[tokio::test]
async fn an_oversized_result_in_the_kept_round_is_cut_in_place() {
    let sb = Sandbox::new();
    let mut entries = vec![user(
        "u".into(),
        json!([{"type": "text", "text": "the task"}]),
    )];
    entries.extend(read_round(1, 1_200_000));
    entries.extend(read_round(2, 1_200_000));
    let id = session_with(&sb, entries).await;
    let mock = server(json!({"context_limit_tokens": 200_000, "turns": [
        {"content": [{"type": "text", "text": "SUM-B"}]},
        {"content": [{"type": "text", "text": "resumed"}], "expect_text": "its middle was cut"}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "--resume", &id, "go on"],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let last = bodies(&mock).pop().unwrap();
    let text = last["messages"].to_string();
    assert!(
        text.contains("SUM-B") && text.contains("go on"),
        "{}",
        &text[..500]
    );
    assert!(text.len() < 400_000, "{}", text.len());
}

#[tokio::test]
async fn resume_after_compaction_starts_from_the_summary() {
    let sb = Sandbox::new();
    let big = sb.write("big.txt", &"lorem ipsum dolor sit amet\n".repeat(400));
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": big}}]},
        {"content": [{"type": "text", "text": "SUMMARY-XYZ"}], "faults": [{"kind": "prompt_too_long"}]},
        {"content": [{"type": "text", "text": "Done after compaction."}], "expect_text": "SUMMARY-XYZ"}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "read big.txt thrice"],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(
        run.result()["num_turns"],
        4,
        "the summary call is not a turn"
    );
    let mock2 = server(json!({"turns": [
        {"content": [{"type": "text", "text": "still here"}], "expect_text": "SUMMARY-XYZ"}
    ]}))
    .await;
    let run2 = sb
        .run(
            &mock2.url(),
            &[
                "-p",
                "--output-format",
                "json",
                "--resume",
                &common::session_id(&run),
                "more",
            ],
        )
        .await;
    assert!(run2.status.success(), "{}", run2.debug());
    let body = &bodies(&mock2)[0];
    let messages = body["messages"].as_array().unwrap();
    let all = body["messages"].to_string();
    assert!(all.contains("Done after compaction."), "{all}");
    assert!(
        messages.len() < 8,
        "the summarised rounds are gone: {}",
        messages.len()
    );
}

#[tokio::test]
async fn resume_of_a_transcript_that_ends_mid_message_is_repaired() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "first"}]}]})).await;
    let run = sb
        .run(&mock.url(), &["-p", "--output-format", "json", "start"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let id = common::session_id(&run);
    let path = sb.transcripts()[0].clone();
    let mut text = std::fs::read_to_string(&path).unwrap();
    let block = |uuid: &str, b: Value| {
        json!({"type": "assistant", "uuid": uuid, "timestamp": "2026-01-01T00:00:00.000Z",
               "message_id": "msg_cut", "message": {"role": "assistant", "content": [b]}})
        .to_string()
    };
    text.push_str(
        &json!({"type": "user", "uuid": "u1", "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "do two things"}]}})
        .to_string(),
    );
    text.push('\n');
    text.push_str(&block(
        "a1",
        json!({"type": "thinking", "thinking": "plan", "signature": "s"}),
    ));
    text.push('\n');
    text.push_str(&block(
        "a2",
        json!({"type": "tool_use", "id": "toolu_cut_1", "name": "Bash", "input": {"command": "true"}}),
    ));
    text.push('\n');
    text.push_str(r#"{"type":"assistant","uuid":"a3","timestamp":"2026-01-01T00:00:00.000Z","message_id":"msg_cut","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_cut_2","na"#);
    std::fs::write(&path, text).unwrap();

    let mock2 = server(json!({"turns": [
        {"content": [{"type": "text", "text": "picked up"}], "expect_text": "interrupted"}
    ]}))
    .await;
    let run2 = sb
        .run(
            &mock2.url(),
            &["-p", "--output-format", "json", "--resume", &id, "go on"],
        )
        .await;
    assert!(run2.status.success(), "{}", run2.debug());
    let body = &bodies(&mock2)[0];
    let messages = body["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 2];
    assert_eq!(assistant["content"][0]["type"], "thinking");
    assert_eq!(assistant["content"][1]["id"], "toolu_cut_1");
    let last = messages.last().unwrap();
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_cut_1");
    assert_eq!(last["content"][0]["is_error"], true);
    assert_eq!(last["content"][1]["text"], "go on");

    // What the resumed run wrote must survive the next resume too, although the file
    // ended in a torn line.
    let mock3 = server(json!({"turns": [{"content": [{"type": "text", "text": "third"}]}]})).await;
    let run3 = sb
        .run(
            &mock3.url(),
            &[
                "-p",
                "--output-format",
                "json",
                "--resume",
                &id,
                "and again",
            ],
        )
        .await;
    assert!(run3.status.success(), "{}", run3.debug());
    let all = bodies(&mock3)[0]["messages"].to_string();
    assert!(
        all.contains("go on"),
        "the prompt after the torn line was lost: {all}"
    );
    assert!(all.contains("picked up"), "{all}");
}

/// Two processes on one conversation: the second (`--resume` or `--continue`) is refused at
/// once, naming the conversation and the pid that writes it, and the transcript holds only the
/// first one's turn; once the first is done, the conversation can be resumed again.
#[tokio::test]
async fn a_second_writer_of_a_conversation_fails_at_once_and_names_the_holder() {
    let sb = Sandbox::new();
    let id = session_with(&sb, []).await;
    let mock = server(json!({"turns": [
        {"delay_ms": 400, "content": [{"type": "text", "text": "slow answer"}]},
        {"content": [{"type": "text", "text": "later answer"}]}
    ]}))
    .await;
    let first = common::Watched::spawn(sb.command(&mock.url(), &["-p", "--resume", &id, "one"]));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while mock.requests().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no request arrived");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for args in [
        vec!["-p", "--resume", id.as_str(), "two"],
        vec!["-p", "--continue", "two"],
    ] {
        let started = std::time::Instant::now();
        let second = sb.run(&mock.url(), &args).await;
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "it waited"
        );
        assert_ne!(second.status.code(), Some(0), "{}", second.debug());
        let pid = first.pid();
        assert!(
            second.stderr.contains(&format!(
                "the conversation {id} is in use by another ouro (pid {pid})"
            )),
            "{}",
            second.debug()
        );
    }
    let first = first.finish(std::time::Duration::from_secs(30)).await;
    assert!(first.status.success(), "{}", first.debug());
    let transcript = std::fs::read_to_string(&sb.transcripts()[0]).unwrap();
    assert!(transcript.contains("\"one\"") && !transcript.contains("\"two\""));
    let again = sb.run(&mock.url(), &["-p", "--resume", &id, "three"]).await;
    assert!(again.status.success(), "{}", again.debug());
    assert_eq!(bodies(&mock).len(), 2);
}

/// A disk that fills mid-session: the tool result cannot be saved, so the turn stops before
/// the next request with a clear error and a non-zero exit, the transcript is whole lines, and
/// the session resumes once there is room again.
#[tokio::test]
async fn a_full_disk_stops_the_turn_and_keeps_the_transcript_whole() {
    let sb = Sandbox::new();
    let home = sb.home.path().join("small");
    let Some(disk) = common::SmallDisk::mount(&home, "128k") else {
        common::skip::cannot_mount("a small tmpfs");
        return;
    };
    let big: String = (0..2000)
        .map(|i| format!("line {i:05} of a file too big for the disk\n"))
        .collect();
    sb.write("big.txt", &big);
    let path = common::path_str(&sb.root().join("big.txt"));
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": path}}]},
        {"content": [{"type": "text", "text": "never asked"}]},
        {"content": [{"type": "text", "text": "resumed fine"}]}
    ]}))
    .await;
    // Leave room for the session to start, not for an 80 KB tool result.
    let filler = home.join("filler");
    std::fs::write(&filler, vec![0u8; disk.free().saturating_sub(32 * 1024)]).unwrap();
    let mut cmd = sb.command(&mock.url(), &["-p", "--output-format", "json", "read it"]);
    cmd.env("OURO_HOME", &home);
    let run = common::Run::from(cmd.output().await.unwrap());
    assert_eq!(run.status.code(), Some(1), "{}", run.debug());
    let result = run.result();
    assert_eq!(
        result["subtype"],
        "error_during_execution",
        "{}",
        run.debug()
    );
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("could not save this session") && text.contains("No space left on device"),
        "{text}"
    );
    assert!(text.contains("Free space on the disk that holds"), "{text}");
    assert_eq!(bodies(&mock).len(), 1, "no request after the failed write");
    let transcript = std::fs::read_dir(home.join("projects"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let saved = std::fs::read_to_string(&transcript).unwrap();
    assert!(saved.ends_with('\n'), "a torn last line");
    for line in saved.lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    // Room again: the conversation goes on from what was saved.
    std::fs::remove_file(&filler).unwrap();
    let id = result["session_id"].as_str().unwrap();
    let mut cmd = sb.command(&mock.url(), &["-p", "--resume", id, "go on"]);
    cmd.env("OURO_HOME", &home);
    let again = common::Run::from(cmd.output().await.unwrap());
    assert!(again.status.success(), "{}", again.debug());
}

#[tokio::test]
async fn resume_takes_a_unique_prefix_and_asks_for_an_id_in_print_mode() {
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "First."}]},
        {"content": [{"type": "text", "text": "Second."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let first = sb
        .run(
            &mock.url(),
            &["-p", "remember PREFIX-TEST", "--output-format", "json"],
        )
        .await;
    assert!(first.status.success(), "{}", first.debug());
    let id = crate::common::session_id(&first);
    let again = sb
        .run(&mock.url(), &["-p", "and now?", "--resume", &id[..8]])
        .await;
    assert!(again.status.success(), "{}", again.debug());
    assert_eq!(again.stdout.trim(), "Second.");
    let last = serde_json::to_string(&crate::common::bodies(&mock)[1]["messages"]).unwrap();
    assert!(last.contains("PREFIX-TEST"), "{last}");

    let bare = sb.run(&mock.url(), &["-p", "hi", "--resume"]).await;
    assert_eq!(bare.status.code(), Some(1), "{}", bare.debug());
    assert!(
        bare.stderr
            .contains("--resume without an id opens the session picker"),
        "{}",
        bare.debug()
    );
}
