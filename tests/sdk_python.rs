//! End-to-end: the real Python Claude Agent SDK (`claude-agent-sdk` from PyPI, installed by
//! .ci/run) drives ouro as its CLI (`cli_path`) against the mock API (issue 18).

use crate::common;

use common::{Sandbox, bodies, server};
use serde_json::{Value, json};

/// Whether the Python Agent SDK is importable (a counted skip, or a failure in CI, if not).
pub(crate) fn python_sdk() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", "import claude_agent_sdk"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        common::skip::not_installed(
            "the Python package claude-agent-sdk (pip install; .ci/run does)",
        );
    }
    found
}

/// Runs `body` (Python, inside `async def main():`, with `opts` set up) and returns what it
/// printed as JSON lines.
async fn sdk(sb: &Sandbox, url: &str, body: &str) -> Vec<Value> {
    sdk_on(sb, url, body, env!("CARGO_BIN_EXE_ouro")).await
}

/// [`sdk`] with `cli` as the SDK's executable: ouro, or the real `claude` to compare with.
pub(crate) async fn sdk_on(sb: &Sandbox, url: &str, body: &str, cli: &str) -> Vec<Value> {
    let script = format!(
        r#"
import anyio, json, os
from claude_agent_sdk import *
def out(kind, **fields):
    print(json.dumps(dict(kind=kind, **fields)), flush=True)
async def main():
    opts = ClaudeAgentOptions(cli_path={cli:?}, cwd={cwd:?},
        env={{"ANTHROPIC_BASE_URL": {url:?}, "ANTHROPIC_API_KEY": "k",
              "OURO_HOME": {home:?}, "HOME": {home:?}, "DISABLE_TELEMETRY": "1",
              "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}})
{body}
anyio.run(main)
"#,
        cwd = sb.root().display().to_string(),
        home = sb.home.path().display().to_string(),
    );
    let output = tokio::process::Command::new("python3")
        .arg("-c")
        .arg(&script)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the SDK script failed (pip install claude-agent-sdk; .ci/run does)\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(!stderr.contains("too old"), "{stderr}");
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[tokio::test]
async fn query_gets_a_plain_answer_and_a_full_result() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let mock =
        server(json!({"turns": [{"content": [{"type": "text", "text": "Hello from ouro"}]}]}))
            .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
    async for m in query(prompt="hi", options=opts):
        if isinstance(m, SystemMessage):
            out("system", subtype=m.subtype, tools=m.data.get("tools"), keys=sorted(m.data))
        elif isinstance(m, AssistantMessage):
            out("assistant", text=[b.text for b in m.content if isinstance(b, TextBlock)])
        elif isinstance(m, ResultMessage):
            out("result", subtype=m.subtype, result=m.result, is_error=m.is_error,
                turns=m.num_turns, cost=m.total_cost_usd, session=m.session_id,
                usage=m.usage, model_usage=m.model_usage)
    async with ClaudeSDKClient(options=opts) as client:
        out("server_info", info=await client.get_server_info())
"#,
    )
    .await;
    // Claude Code's metadata keys, with ouro's values or their empty forms.
    let keys = printed[0]["keys"].to_string();
    for key in [
        "agents",
        "skills",
        "slash_commands",
        "capabilities",
        "original_cwd",
        "plugins",
    ] {
        assert!(keys.contains(key), "system/init lacks {key}: {keys}");
    }
    let info = &printed[3]["info"];
    for key in [
        "commands",
        "models",
        "account",
        "pid",
        "output_style",
        "agents",
    ] {
        assert!(info.get(key).is_some(), "initialize lacks {key}: {info}");
    }
    let usage = &printed[2]["usage"];
    assert_eq!(usage["service_tier"], "standard", "{usage}");
    assert!(
        usage["server_tool_use"].is_object() && usage["cache_creation"].is_object(),
        "{usage}"
    );
    assert_eq!(printed[0]["kind"], "system");
    assert_eq!(printed[0]["subtype"], "init");
    assert_eq!(printed[1]["text"], json!(["Hello from ouro"]));
    let result = &printed[2];
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["result"], "Hello from ouro");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["turns"], 1);
    assert!(result["cost"].as_f64().unwrap() > 0.0);
    assert!(result["usage"]["output_tokens"].as_u64().unwrap() > 0);
    assert!(result["model_usage"].as_object().unwrap().len() == 1);
    assert_eq!(bodies(&mock).len(), 1);
}

#[tokio::test]
async fn a_client_keeps_one_session_across_turns_and_switches_model() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "first"}]},
        {"content": [{"type": "text", "text": "second"}], "expect_text": "first"}
    ]}))
    .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
    async with ClaudeSDKClient(options=opts) as client:
        for prompt in ["one", "two"]:
            if prompt == "two":
                await client.set_model("claude-haiku-4-5")
            await client.query(prompt)
            async for m in client.receive_response():
                if isinstance(m, ResultMessage):
                    out("result", result=m.result, session=m.session_id)
"#,
    )
    .await;
    assert_eq!(printed[0]["result"], "first");
    assert_eq!(printed[1]["result"], "second");
    assert_eq!(printed[0]["session"], printed[1]["session"]);
    let requests = bodies(&mock);
    assert_eq!(requests[1]["messages"].as_array().unwrap().len(), 3);
    assert_eq!(requests[1]["model"], "claude-haiku-4-5");
}

#[tokio::test]
async fn interrupt_stops_a_slow_turn_and_the_next_one_runs() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "a very slow answer that never finishes"}], "hold_after_events": 2},
        {"content": [{"type": "text", "text": "after the interrupt"}]}
    ]}))
    .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("slow")
        await anyio.sleep(1.0)
        await client.interrupt()
        async for m in client.receive_response():
            if isinstance(m, UserMessage) and isinstance(m.content, list):
                for block in m.content:
                    if isinstance(block, TextBlock):
                        out("user", text=block.text)
            if isinstance(m, ResultMessage):
                out("result", subtype=m.subtype, is_error=m.is_error)
        await client.query("again")
        async for m in client.receive_response():
            if isinstance(m, ResultMessage):
                out("result", subtype=m.subtype, result=m.result)
"#,
    )
    .await;
    // As Claude Code: the interrupt is said as a user message, then an execution error.
    assert_eq!(
        printed[0]["text"], "[Request interrupted by user]",
        "{printed:?}"
    );
    assert_eq!(
        printed[1]["subtype"], "error_during_execution",
        "{printed:?}"
    );
    assert_eq!(printed[1]["is_error"], true, "{printed:?}");
    assert_eq!(printed[2]["result"], "after the interrupt");
}

#[tokio::test]
async fn control_requests_are_answered_by_id_and_unknown_ones_get_an_error() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "ok"}]}]})).await;
    let stdin = [
        json!({"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize", "hooks": null}}),
        json!({"type": "control_request", "request_id": "req_2", "request": {"subtype": "teleport"}}),
        json!({"type": "control_request", "request_id": "req_3", "request": {"subtype": "set_permission_mode", "mode": "acceptEdits"}}),
        json!({"type": "user", "session_id": "", "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": null}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect::<String>();
    let run = sb
        .run_with_stdin(
            &mock.url(),
            &[
                "--output-format",
                "stream-json",
                "--verbose",
                "--input-format",
                "stream-json",
            ],
            stdin.as_bytes(),
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let responses = run.of_type("control_response", None);
    let by_id = |id: &str| {
        responses
            .iter()
            .find(|r| r["response"]["request_id"] == id)
            .unwrap_or_else(|| panic!("no response to {id}: {}", run.stdout))
            .clone()
    };
    assert_eq!(by_id("req_1")["response"]["subtype"], "success");
    let unknown = by_id("req_2");
    assert_eq!(unknown["response"]["subtype"], "error");
    assert!(
        unknown["response"]["error"]
            .as_str()
            .unwrap()
            .contains("teleport")
    );
    assert_eq!(by_id("req_3")["response"]["subtype"], "success");
    let init = &run.of_type("system", Some("init"))[0];
    assert_eq!(init["permissionMode"], "acceptEdits");
    assert_eq!(run.result()["result"], "ok");
}

#[tokio::test]
async fn can_use_tool_answers_the_permission_questions() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let readme = sb.write("README.md", "read me\n");
    let written = sb.root().join("a.txt");
    let mock = server(json!({"turns": [
        {"content": [
            {"type": "tool_use", "name": "Read", "input": {"file_path": readme}},
            {"type": "tool_use", "name": "Write", "input": {"file_path": written, "content": "yes\n"}},
            {"type": "tool_use", "name": "Bash", "input": {"command": "touch b.txt"}}
        ]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
    asked = []
    ids = []
    async def decide(tool, data, context):
        asked.append(tool)
        ids.append(getattr(context, "tool_use_id", None))
        if tool == "Bash":
            return PermissionResultDeny(message="no shell today")
        return PermissionResultAllow()
    opts.can_use_tool = decide
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("work")
        async for m in client.receive_response():
            if isinstance(m, ResultMessage):
                out("result", result=m.result, denials=m.permission_denials)
    out("asked", tools=asked, ids=ids)
"#,
    )
    .await;
    assert_eq!(printed[0]["result"], "done");
    assert_eq!(
        printed[1]["tools"],
        json!(["Write", "Bash"]),
        "Read needs no question"
    );
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "yes\n");
    assert!(!sb.root().join("b.txt").exists());
    let results = common::request_tool_results(&bodies(&mock)[1]);
    // Each question names its call, as Claude Code's do.
    assert_eq!(
        printed[1]["ids"],
        json!([results[1]["tool_use_id"], results[2]["tool_use_id"]])
    );
    assert_ne!(results[1]["is_error"], true, "{results:?}");
    assert_eq!(results[2]["is_error"], true, "{results:?}");
    assert!(
        results[2]["content"]
            .as_str()
            .unwrap()
            .contains("no shell today"),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_pre_tool_use_hook_callback_blocks_a_call() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo hi"}}]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
    seen = []
    async def guard(data, tool_use_id, context):
        seen.append([data["hook_event_name"], data["tool_name"], data["tool_input"]["command"],
                     tool_use_id, data["tool_use_id"]])
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": "hooked out"}}
    opts.hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[guard])]}
    opts.include_hook_events = True
    events = []
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("run it")
        async for m in client.receive_response():
            if isinstance(m, HookEventMessage):
                events.append([m.subtype, m.hook_event_name, m.data["hook_name"],
                               m.data.get("outcome")])
            if isinstance(m, ResultMessage):
                out("result", result=m.result)
    out("seen", calls=seen)
    out("events", events=events)
"#,
    )
    .await;
    assert_eq!(printed[0]["result"], "done");
    assert_eq!(
        printed[1]["calls"],
        json!([[
            "PreToolUse",
            "Bash",
            "echo hi",
            "toolu_mock_0000_00",
            "toolu_mock_0000_00"
        ]])
    );
    assert_eq!(
        printed[2]["events"],
        json!([
            ["hook_started", "PreToolUse", "PreToolUse:Bash", null],
            ["hook_response", "PreToolUse", "PreToolUse:Bash", "success"]
        ])
    );
    let results = common::request_tool_results(&bodies(&mock)[1]);
    assert_eq!(results[0]["is_error"], true, "{results:?}");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("hooked out"),
        "{results:?}"
    );
}

#[tokio::test]
async fn options_reach_the_session_and_resume_continues_it() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let written = sb.root().join("w.txt");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Write", "input": {"file_path": written, "content": "w\n"}}]},
        {"content": [{"type": "text", "text": "resumed"}], "expect_text": "FIRST-PROMPT"}
    ]}))
    .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
    opts.system_prompt = "You are TESTBOT."
    opts.max_turns = 1
    opts.permission_mode = "acceptEdits"
    session = None
    try:
        async for m in query(prompt="FIRST-PROMPT", options=opts):
            if isinstance(m, ResultMessage):
                session = m.session_id
                out("result", subtype=m.subtype, is_error=m.is_error)
    except Exception as e:
        # As on Claude Code: the CLI exits 1 after an error result and the SDK raises it.
        out("raised", error=type(e).__name__)
    opts.max_turns = None
    opts.resume = session
    async for m in query(prompt="and now?", options=opts):
        if isinstance(m, ResultMessage):
            out("result", subtype=m.subtype, result=m.result, session=m.session_id)
    out("first", session=session)
"#,
    )
    .await;
    assert_eq!(printed[0]["subtype"], "error_max_turns", "{printed:?}");
    assert_eq!(printed[1]["kind"], "raised", "{printed:?}");
    let printed = &printed[1..];
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "w\n",
        "acceptEdits"
    );
    assert_eq!(printed[1]["result"], "resumed");
    assert_eq!(printed[1]["session"], printed[2]["session"]);
    let requests = bodies(&mock);
    assert!(
        requests[0]["system"]
            .to_string()
            .contains("You are TESTBOT.")
    );
}

#[tokio::test]
async fn an_in_process_sdk_mcp_tool_is_called_and_reported() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "mcp__calc__add", "input": {"a": 2, "b": 3}}]},
        {"content": [{"type": "text", "text": "five"}]}
    ]}))
    .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
    @tool("add", "Adds two numbers", {"a": float, "b": float})
    async def add(args):
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']:g}"}]}
    opts.mcp_servers = {"calc": create_sdk_mcp_server(name="calc", version="2.1.0", tools=[add])}
    opts.allowed_tools = ["mcp__calc__add"]
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("add 2 and 3")
        async for m in client.receive_response():
            if isinstance(m, ResultMessage):
                out("result", result=m.result)
        out("status", servers=(await client.get_mcp_status())["mcpServers"])
        usage = await client.get_context_usage()
        out("usage", total=usage["totalTokens"], max=usage["maxTokens"],
            model=usage["model"], mcp=usage["mcpTools"])
        await client.toggle_mcp_server("calc", False)
        out("off", servers=(await client.get_mcp_status())["mcpServers"])
        await client.toggle_mcp_server("calc", True)
        await client.reconnect_mcp_server("calc")
        out("on", servers=(await client.get_mcp_status())["mcpServers"])
"#,
    )
    .await;
    assert_eq!(printed[0]["result"], "five");
    let results = common::request_tool_results(&bodies(&mock)[1]);
    assert_ne!(results[0]["is_error"], true, "{results:?}");
    assert!(
        results[0].to_string().contains("sum=5"),
        "the SDK's function ran: {results:?}"
    );
    let tools = bodies(&mock)[0]["tools"].clone();
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "mcp__calc__add"),
        "{tools}"
    );
    let calc = &printed[1]["servers"][0];
    assert_eq!(calc["name"], "calc");
    assert_eq!(calc["status"], "connected");
    assert_eq!(calc["serverInfo"]["version"], "2.1.0");
    assert_eq!(calc["tools"][0]["name"], "add");
    let usage = &printed[2];
    assert!(usage["total"].as_u64().unwrap() > 0, "{usage}");
    assert_eq!(usage["max"], 200_000);
    assert_eq!(usage["mcp"][0]["name"], "add");
    assert_eq!(usage["mcp"][0]["serverName"], "calc");
    assert_eq!(printed[3]["servers"][0]["status"], "disabled");
    assert_eq!(printed[4]["servers"][0]["status"], "connected");
    assert_eq!(printed[4]["servers"][0]["tools"][0]["name"], "add");
}

#[tokio::test]
async fn can_use_tool_may_change_the_input_but_not_past_a_deny_rule() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let keep = sb.write("keep.txt", "");
    let written = sb.root().join("w.txt");
    let mock = server(json!({"turns": [
        {"content": [
            {"type": "tool_use", "name": "Bash", "input": {"command": "touch model.txt"}},
            {"type": "tool_use", "name": "Bash", "input": {"command": "touch other.txt"}},
            {"type": "tool_use", "name": "Write", "input": {"file_path": written, "content": "x"}}
        ]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    sdk(
        &sb,
        &mock.url(),
        r#"
    async def decide(tool, data, context):
        if data.get("command") == "touch model.txt":
            return PermissionResultAllow(updated_input={"command": "touch user.txt"})
        if data.get("command") == "touch other.txt":
            return PermissionResultAllow(updated_input={"command": "rm -f keep.txt"})
        return PermissionResultAllow(updated_input={"file_path": 7})
    opts.can_use_tool = decide
    opts.disallowed_tools = ["Bash(rm:*)"]
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("work")
        async for m in client.receive_response():
            pass
"#,
    )
    .await;
    assert!(sb.root().join("user.txt").exists(), "the changed call ran");
    assert!(!sb.root().join("model.txt").exists(), "the model's did not");
    assert!(keep.exists());
    assert!(!written.exists());
    let results = common::request_tool_results(&bodies(&mock)[1]);
    assert_ne!(results[0]["is_error"], true, "{results:?}");
    assert_eq!(results[1]["is_error"], true, "{results:?}");
    assert!(
        results[1]["content"].as_str().unwrap().contains("denied"),
        "{results:?}"
    );
    assert_eq!(results[2]["is_error"], true, "{results:?}");
    assert!(
        results[2]["content"]
            .as_str()
            .unwrap()
            .contains("changed input is invalid"),
        "{results:?}"
    );
}

#[tokio::test]
async fn rewind_files_puts_the_files_back_as_before_a_replayed_prompt() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let notes = sb.root().join("notes.txt");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Write", "input": {"file_path": notes, "content": "after\n"}}]},
        {"content": [{"type": "text", "text": "written"}]}
    ]}))
    .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
    opts.enable_file_checkpointing = True
    opts.extra_args = {"replay-user-messages": None}
    opts.permission_mode = "acceptEdits"
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("change the notes")
        first = None
        async for m in client.receive_response():
            if isinstance(m, UserMessage) and m.uuid and first is None:
                first = m.uuid
                out("replayed", uuid=m.uuid, content=str(m.content))
        out("after", text=open(opts.cwd + "/notes.txt").read())
        await client.rewind_files(first)
        out("rewound", exists=os.path.exists(opts.cwd + "/notes.txt"))
"#,
    )
    .await;
    assert!(
        printed[0]["content"]
            .as_str()
            .unwrap()
            .contains("change the notes")
    );
    assert_eq!(printed[1]["text"], "after\n");
    assert_eq!(
        printed[2]["exists"], false,
        "the file the prompt created is gone"
    );
}

/// A `can_use_tool` deny with `interrupt=True` ends the turn at once: the model is not asked
/// again.
#[tokio::test]
async fn a_deny_that_asks_to_stop_ends_the_turn() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "touch b.txt"}}]},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
    async def decide(tool, data, context):
        return PermissionResultDeny(message="stop right there", interrupt=True)
    opts.can_use_tool = decide
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("work")
        async for m in client.receive_response():
            if isinstance(m, ResultMessage):
                out("result", subtype=m.subtype, is_error=m.is_error)
"#,
    )
    .await;
    assert_eq!(printed[0]["is_error"], true, "{printed:?}");
    assert_eq!(
        bodies(&mock).len(),
        1,
        "the model was asked again after the stop"
    );
    assert!(!sb.root().join("b.txt").exists());
}

/// `output_format={"type": "json_schema", ...}`: the model answers through the
/// StructuredOutput tool and the program reads `structured_output`, as on Claude Code.
#[tokio::test]
async fn an_output_format_is_answered_through_the_structured_output_tool() {
    if !python_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "StructuredOutput", "input": {"city": "Lyon", "people": 522000}}]}
    ]}))
    .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
    opts.output_format = {"type": "json_schema", "schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "people": {"type": "integer"}},
        "required": ["city", "people"]}}
    async for m in query(prompt="the biggest city on the Rhône?", options=opts):
        if isinstance(m, ResultMessage):
            out("result", subtype=m.subtype, structured=m.structured_output)
"#,
    )
    .await;
    assert_eq!(printed[0]["subtype"], "success", "{printed:?}");
    assert_eq!(
        printed[0]["structured"],
        json!({"city": "Lyon", "people": 522000})
    );
    let tools = bodies(&mock)[0]["tools"].to_string();
    assert!(tools.contains("StructuredOutput"), "{tools}");
}
