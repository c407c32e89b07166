//! End-to-end: the real TypeScript Claude Agent SDK (`@anthropic-ai/claude-agent-sdk`, pinned
//! in tests/sdk_ts/package.json and installed there by .ci/run) drives ouro as its CLI
//! (`pathToClaudeCodeExecutable`) against the mock API (issue 18). Unlike the Python SDK it
//! sends the system prompt, agents and in-process MCP servers inside `initialize`.

use crate::common;

use common::{Sandbox, bodies, server};
use serde_json::{Value, json};

/// Whether the TypeScript Agent SDK is installed beside these tests.
fn ts_sdk() -> bool {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk_ts/node_modules/@anthropic-ai/claude-agent-sdk");
    let found = dir.is_dir() && common::skip::on_path("node");
    if !found {
        common::skip::not_installed(
            "@anthropic-ai/claude-agent-sdk with node (npm ci --prefix tests/sdk_ts; .ci/run does)",
        );
    }
    found
}

/// Runs `body` (JavaScript, an ES module with the SDK, `zod` as `z`, `opts` and `out` in
/// scope) and returns what it printed as JSON lines.
async fn sdk(sb: &Sandbox, url: &str, body: &str) -> Vec<Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk_ts");
    assert!(
        dir.join("node_modules/@anthropic-ai/claude-agent-sdk")
            .is_dir(),
        "the TypeScript SDK is not installed: run `npm ci --prefix tests/sdk_ts` (.ci/run does)"
    );
    let script = format!(
        r#"
import {{ query, tool, createSdkMcpServer }} from "@anthropic-ai/claude-agent-sdk";
import {{ z }} from "zod";
const out = (kind, fields) => console.log(JSON.stringify({{ kind, ...fields }}));
const opts = {{
  pathToClaudeCodeExecutable: {cli:?}, cwd: {cwd:?},
  env: {{ ...process.env, ANTHROPIC_BASE_URL: {url:?}, ANTHROPIC_API_KEY: "k",
          OURO_HOME: {home:?}, HOME: {home:?} }},
}};
{body}
"#,
        cli = env!("CARGO_BIN_EXE_ouro"),
        cwd = sb.root().display().to_string(),
        home = sb.home.path().display().to_string(),
    );
    // With --eval, bare imports resolve from the working directory: tests/sdk_ts.
    let output = tokio::process::Command::new("node")
        .args(["--input-type=module", "-e", &script])
        .current_dir(&dir)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the SDK script failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[tokio::test]
async fn query_sends_the_initialize_system_prompt_and_answers() {
    if !ts_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "Bonjour"}]}]})).await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
for await (const m of query({ prompt: "hi", options: { ...opts, systemPrompt: "Answer in French." } })) {
  if (m.type === "system") out("system", { subtype: m.subtype, version: m.claude_code_version });
  if (m.type === "result") out("result", { subtype: m.subtype, result: m.result, turns: m.num_turns,
                                           cost: m.total_cost_usd, session: m.session_id });
}
"#,
    )
    .await;
    assert_eq!(printed[0]["subtype"], "init");
    assert_eq!(printed[1]["subtype"], "success");
    assert_eq!(printed[1]["result"], "Bonjour");
    assert_eq!(printed[1]["turns"], 1);
    assert!(printed[1]["cost"].as_f64().unwrap() > 0.0);
    let system = bodies(&mock)[0]["system"].to_string();
    assert!(system.contains("Answer in French."), "{system}");
    assert!(
        !system.contains("You are ouro"),
        "the SDK's prompt replaces ouro's own: {system}"
    );
}

#[tokio::test]
async fn a_tool_round_with_can_use_tool_and_an_in_process_mcp_tool() {
    if !ts_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let written = sb.root().join("a.txt");
    let mock = server(json!({"turns": [
        {"content": [
            {"type": "tool_use", "name": "mcp__calc__add", "input": {"a": 2, "b": 3}},
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
const add = tool("add", "Adds two numbers", { a: z.number(), b: z.number() },
  async ({ a, b }) => ({ content: [{ type: "text", text: `sum=${a + b}` }] }));
const calc = createSdkMcpServer({ name: "calc", version: "1.0.0", tools: [add] });
const asked = [];
const canUseTool = async (name, input) => {
  asked.push(name);
  return name === "Bash" ? { behavior: "deny", message: "no shell today" }
                         : { behavior: "allow", updatedInput: input };
};
for await (const m of query({ prompt: "work", options: { ...opts, mcpServers: { calc },
    allowedTools: ["mcp__calc__add"], canUseTool } })) {
  if (m.type === "result") out("result", { result: m.result, denials: m.permission_denials.length });
}
out("asked", { tools: asked });
"#,
    )
    .await;
    assert_eq!(printed[0]["result"], "done");
    assert_eq!(printed[0]["denials"], 1);
    assert_eq!(printed[1]["tools"], json!(["Write", "Bash"]));
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "yes\n");
    assert!(!sb.root().join("b.txt").exists());
    let results = common::request_tool_results(&bodies(&mock)[1]);
    assert!(results[0].to_string().contains("sum=5"), "{results:?}");
    assert_ne!(results[1]["is_error"], true, "{results:?}");
    assert_eq!(results[2]["is_error"], true, "{results:?}");
}

/// An error result carries `errors` and `terminal_reason`, which the TypeScript SDK reads:
/// a program that handles `error_max_turns` gets the message instead of a TypeError.
#[tokio::test]
async fn an_error_result_has_errors_and_a_terminal_reason() {
    if !ts_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "a\n");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}}]},
        {"content": [{"type": "text", "text": "never"}]}
    ]}))
    .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
try {
  for await (const m of query({ prompt: "read", options: { ...opts, maxTurns: 1 } })) {
    if (m.type === "result") out("result", { subtype: m.subtype, errors: m.errors.join(" | "),
                                             reason: m.terminal_reason });
  }
} catch (e) {
  out("thrown", { message: String(e) });
}
"#,
    )
    .await;
    let result = printed.iter().find(|p| p["kind"] == "result").unwrap();
    assert_eq!(result["subtype"], "error_max_turns", "{printed:?}");
    assert_eq!(result["reason"], "max_turns");
    assert!(
        result["errors"]
            .as_str()
            .unwrap()
            .contains("maximum number of turns"),
        "{result}"
    );
}
