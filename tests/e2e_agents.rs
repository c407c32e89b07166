//! End-to-end: sub-agents (issue 17). A parent delegates to two read-only agents, which run at
//! the same time, and to a writing agent, which runs alone; the children work under the
//! parent's rules, their messages carry the Agent call's id, and what they spend is billed
//! to the session.

use crate::common;

use std::time::Duration;

use common::{Sandbox, bodies, request_tool_results, server};
use serde_json::{Value, json};

fn agent(kind: &str, prompt: &str) -> Value {
    json!({"type": "tool_use", "name": "Agent",
           "input": {"description": "a task", "prompt": prompt, "subagent_type": kind}})
}

fn requests_with(mock: &ouro::mock::MockServer, text: &str) -> Vec<Value> {
    bodies(mock)
        .into_iter()
        .filter(|b| b["messages"][0].to_string().contains(text))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn read_only_agents_run_together_a_writer_alone_under_the_parents_rules() {
    let sb = Sandbox::new();
    let a = sb.write("a.txt", "alpha\n");
    let b = sb.write("b.txt", "beta\n");
    let victim = sb.write("victim.txt", "keep me\n");
    let out = sb.root().join("out.txt");
    let usage = json!({"input_tokens": 100, "output_tokens": 10});
    let mock = server(json!({"turns": [
        {"content": [agent("explore", "FIND-A in a.txt"), agent("explore", "FIND-B in b.txt"),
                     agent("general-purpose", "WRITE-C the report")], "usage": usage},
        {"content": [{"type": "text", "text": "all three reported"}], "usage": usage},
        {"when_text": "FIND-A", "content": [{"type": "tool_use", "name": "Read", "input": {"file_path": a}}],
         "usage": usage, "hold_after_events": 2},
        {"when_text": "FIND-A", "content": [{"type": "text", "text": "A says alpha"}], "usage": usage},
        {"when_text": "FIND-B", "content": [{"type": "tool_use", "name": "Read", "input": {"file_path": b}}], "usage": usage},
        {"when_text": "FIND-B", "content": [{"type": "text", "text": "B says beta"}], "usage": usage},
        {"when_text": "WRITE-C", "content": [
            {"type": "tool_use", "name": "Write", "input": {"file_path": out, "content": "report\n"}},
            {"type": "tool_use", "name": "Bash", "input": {"command": format!("rm {}", victim.display())}}
        ], "usage": usage},
        {"when_text": "WRITE-C", "content": [{"type": "text", "text": "C wrote it"}], "usage": usage}
    ]}))
    .await;
    let url = mock.url();
    let args = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "acceptEdits",
        "--disallowedTools",
        "Bash(rm:*)",
        "--",
        "delegate",
    ];
    let watch = async {
        // B finishes while A's first answer is held: they ran at the same time.
        for _ in 0..600 {
            if requests_with(&mock, "FIND-B").len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(requests_with(&mock, "FIND-B").len(), 2, "B finished");
        assert_eq!(requests_with(&mock, "FIND-A").len(), 1, "A is still held");
        assert!(
            requests_with(&mock, "WRITE-C").is_empty(),
            "the writer waits for the others"
        );
        mock.release();
    };
    let (run, ()) = tokio::join!(sb.run(&url, &args), watch);
    assert!(run.status.success(), "{}", run.debug());

    // The writer started only after both readers were done.
    let all = bodies(&mock);
    let position = |text: &str| {
        all.iter()
            .enumerate()
            .filter(|(_, b)| b["messages"][0].to_string().contains(text))
            .map(|(i, _)| i)
            .collect::<Vec<_>>()
    };
    let (pa, pb, pc) = (position("FIND-A"), position("FIND-B"), position("WRITE-C"));
    assert!(pc[0] > pa[1] && pc[0] > pb[1], "{pa:?} {pb:?} {pc:?}");

    // Children see their own prompt and tools, never Agent.
    let child = &requests_with(&mock, "FIND-A")[0];
    let tools: Vec<&str> = child["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["Glob", "Grep", "Read"]);
    assert!(
        child["system"]
            .to_string()
            .contains("read-only exploration")
    );
    assert!(all[0]["tools"].to_string().contains("\"Agent\""));
    // Two agents of one type share the cacheable prefix: tools and system prompt.
    let other = &requests_with(&mock, "FIND-B")[0];
    assert_eq!(child["tools"], other["tools"]);
    assert_eq!(child["system"], other["system"]);

    // The parent's deny rule bound the child; acceptEdits let it write.
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "report\n");
    assert!(victim.exists(), "rm was denied by the parent's rule");
    let c_results = request_tool_results(&requests_with(&mock, "WRITE-C")[1]);
    assert_eq!(c_results[1]["is_error"], true, "{c_results:?}");

    // The parent got each report as its tool_result, in call order.
    let reports = request_tool_results(&all[all.len() - 1]);
    assert!(
        reports[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("A says alpha")
    );
    assert!(
        reports[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("B says beta")
    );
    assert!(
        reports[2]["content"]
            .as_str()
            .unwrap()
            .contains("agentId: agent-")
    );

    // Children's messages carry their Agent call's id.
    let lines = run.events();
    let ids: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .filter_map(|l| l["parent_tool_use_id"].as_str().map(str::to_string))
        .collect();
    assert!(ids.contains(&"toolu_mock_0000_00".to_string()), "{ids:?}");
    assert!(ids.contains(&"toolu_mock_0000_02".to_string()), "{ids:?}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["type"] == "system" && l["subtype"] == "init")
            .count(),
        1,
        "children's init lines stay inside"
    );

    // Each child's conversation is kept in its own file beside the session's transcript.
    let session = result_session(&run);
    let side = find_files(sb.home.path(), "subagents");
    assert_eq!(side.len(), 3, "{side:?}");
    assert!(
        side.iter().all(|p| p.to_string_lossy().contains(&session)),
        "{side:?}"
    );

    // Eight responses of 10 output tokens each: the children's are billed to the session.
    let result = run.result();
    assert_eq!(result["usage"]["output_tokens"], 80, "{result}");
    let model_usage = result["modelUsage"].as_object().unwrap();
    let billed: u64 = model_usage
        .values()
        .map(|m| m["outputTokens"].as_u64().unwrap())
        .sum();
    assert_eq!(billed, 80);
}

fn result_session(run: &common::Run) -> String {
    run.result()["session_id"].as_str().unwrap().to_string()
}

/// Files under `dir` whose path goes through a directory named `within`.
fn find_files(dir: &std::path::Path, within: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.components().any(|c| c.as_os_str() == within) {
                found.push(path);
            }
        }
    }
    found
}

/// A definition's `disallowedTools` takes those tools from the sub-agent even when it lists
/// no `tools` (it then has every other tool of the session).
#[tokio::test(flavor = "multi_thread")]
async fn disallowed_tools_leave_a_sub_agent_without_them() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [agent("nobash", "NOBASH look around")]},
        {"content": [{"type": "text", "text": "done"}]},
        {"when_text": "NOBASH", "content": [{"type": "text", "text": "looked"}]}
    ]}))
    .await;
    let agents = json!({"nobash": {"description": "Looks without a shell", "prompt": "Look.",
                                    "disallowedTools": ["Bash"]}})
    .to_string();
    let run = sb
        .run(&mock.url(), &["-p", "--agents", &agents, "--", "delegate"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let [child] = requests_with(&mock, "NOBASH").try_into().unwrap();
    let tools: Vec<&str> = child["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!tools.contains(&"Bash"), "{tools:?}");
    assert!(
        tools.contains(&"Read") && tools.contains(&"Edit"),
        "{tools:?}"
    );
}

/// `Task`, the sub-agent tool's name in older Claude Code, still names it in tool lists, rules
/// and hook matchers.
#[tokio::test]
async fn task_is_the_agent_tool_under_its_older_name() {
    let tools_of = |run: &common::Run| -> Vec<String> {
        run.of_type("system", Some("init"))[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect()
    };
    for (flags, offered) in [
        (&["--disallowedTools", "Task"][..], false),
        (&["--tools", "Read,Task"][..], true),
    ] {
        let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "ok"}]}]})).await;
        let sb = Sandbox::new();
        let args = [
            &["-p", "--output-format", "stream-json", "--verbose"][..],
            flags,
            &["hi"],
        ]
        .concat();
        let run = sb.run(&mock.url(), &args).await;
        assert!(run.status.success(), "{}", run.debug());
        assert_eq!(
            tools_of(&run).iter().any(|t| t == "Agent"),
            offered,
            "{flags:?}: {:?}",
            tools_of(&run)
        );
    }
}
