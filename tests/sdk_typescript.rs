//! End-to-end: the real TypeScript Claude Agent SDK (`@anthropic-ai/claude-agent-sdk`, pinned
//! in tests/sdk_ts/package.json and installed there by .ci/run) drives ouro as its CLI
//! (`pathToClaudeCodeExecutable`) against the mock API (issue 18). Unlike the Python SDK it
//! sends the system prompt, agents and in-process MCP servers inside `initialize`.

use crate::common;

use common::{Sandbox, bodies, server};
use serde_json::{Value, json};

/// Whether the TypeScript Agent SDK is installed beside these tests.
pub(crate) fn ts_sdk() -> bool {
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
    sdk_on(sb, url, body, env!("CARGO_BIN_EXE_ouro")).await
}

/// [`sdk`] with `cli` as the SDK's executable: ouro, or the real `claude` to compare with.
pub(crate) async fn sdk_on(sb: &Sandbox, url: &str, body: &str, cli: &str) -> Vec<Value> {
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
          OURO_HOME: {home:?}, HOME: {home:?}, DISABLE_TELEMETRY: "1",
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1" }},
}};
{body}
"#,
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

/// After an error result ouro exits 1, as Claude Code does: the program is handed the result
/// first, then the SDK raises its process error.
#[tokio::test]
async fn an_error_result_comes_first_then_the_sdk_raises_the_exit() {
    if !ts_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let file = sb.write("a.txt", "a\n");
    let mock = server(json!({"turns": [
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
    if (m.type === "result") out("result", { subtype: m.subtype, is_error: m.is_error });
  }
  out("ended", {});
} catch (e) {
  out("thrown", { message: String(e) });
}
"#,
    )
    .await;
    assert_eq!(printed[0]["kind"], "result", "{printed:?}");
    assert_eq!(printed[0]["subtype"], "error_max_turns");
    assert_eq!(printed[0]["is_error"], true);
    // The SDK turns the exit code 1 into this error, carrying the result's text.
    assert_eq!(printed[1]["kind"], "thrown", "{printed:?}");
    assert!(
        printed[1]["message"]
            .as_str()
            .unwrap()
            .contains("returned an error result: Reached the maximum number of turns"),
        "{printed:?}"
    );
}

/// `interrupt()` ends a slow turn as Claude Code does: a user message saying so, then an
/// `error_during_execution` result.
#[tokio::test]
async fn interrupt_ends_the_turn_with_claude_codes_message_and_subtype() {
    if !ts_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "a very slow answer that never finishes"}], "hold_after_events": 2}
    ]}))
    .await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
const q = query({ prompt: "slow", options: opts });
setTimeout(() => q.interrupt(), 1000);
try {
  for await (const m of q) {
    if (m.type === "user" && Array.isArray(m.message.content)) {
      for (const b of m.message.content) if (b.type === "text") out("user", { text: b.text });
    }
    if (m.type === "result") out("result", { subtype: m.subtype, is_error: m.is_error });
  }
} catch (e) {
  out("thrown", { message: String(e) });
}
"#,
    )
    .await;
    let user = printed.iter().find(|p| p["kind"] == "user").unwrap();
    assert_eq!(user["text"], "[Request interrupted by user]", "{printed:?}");
    let result = printed.iter().find(|p| p["kind"] == "result").unwrap();
    assert_eq!(result["subtype"], "error_during_execution", "{printed:?}");
    assert_eq!(bodies(&mock).len(), 1);
}

/// `canUseTool` denying with `interrupt: true` ends the turn at once: the model is not asked
/// again and the call does not run.
#[tokio::test]
async fn a_deny_with_interrupt_stops_the_turn() {
    if !ts_sdk() {
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
const canUseTool = async () => ({ behavior: "deny", message: "stop right there", interrupt: true });
try {
  for await (const m of query({ prompt: "work", options: { ...opts, canUseTool } })) {
    if (m.type === "result") out("result", { subtype: m.subtype, is_error: m.is_error });
  }
} catch (e) {
  out("thrown", { message: String(e) });
}
"#,
    )
    .await;
    let result = printed.iter().find(|p| p["kind"] == "result").unwrap();
    assert_eq!(result["is_error"], true, "{printed:?}");
    assert_eq!(
        bodies(&mock).len(),
        1,
        "the model was asked again after the stop"
    );
    assert!(!sb.root().join("b.txt").exists());
}

/// The SDK's `stderr` callback with `--debug-to-stderr` gets ouro's debug lines, and the
/// query still answers.
#[tokio::test]
async fn the_stderr_callback_gets_debug_lines() {
    if !ts_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "fine"}]}]})).await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
const lines = [];
const stderr = (d) => lines.push(String(d));
for await (const m of query({ prompt: "hi", options: { ...opts, stderr, extraArgs: { "debug-to-stderr": null } } })) {
  if (m.type === "result") out("result", { result: m.result });
}
out("stderr", { count: lines.length, text: lines.join("") });
"#,
    )
    .await;
    assert_eq!(printed[0]["result"], "fine", "{printed:?}");
    assert!(printed[1]["count"].as_u64().unwrap() > 0, "{printed:?}");
}

/// `outputFormat` is answered through the StructuredOutput tool; the program reads
/// `structured_output`.
#[tokio::test]
async fn an_output_format_comes_back_as_structured_output() {
    if !ts_sdk() {
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
const outputFormat = { type: "json_schema", schema: {
  type: "object",
  properties: { city: { type: "string" }, people: { type: "integer" } },
  required: ["city", "people"] } };
for await (const m of query({ prompt: "the biggest city on the Rhône?", options: { ...opts, outputFormat } })) {
  if (m.type === "result") out("result", { subtype: m.subtype, structured: m.structured_output });
}
"#,
    )
    .await;
    assert_eq!(printed[0]["subtype"], "success", "{printed:?}");
    assert_eq!(
        printed[0]["structured"],
        json!({"city": "Lyon", "people": 522000})
    );
    assert!(
        bodies(&mock)[0]["tools"]
            .to_string()
            .contains("StructuredOutput")
    );
}

/// `settingSources: ["project"]` is the program's consent for its directory: the project's
/// CLAUDE.md reaches the model though the directory was never trusted; without it, it does not.
#[tokio::test]
async fn naming_project_settings_reads_claude_md() {
    if !ts_sdk() {
        return;
    }
    for (sources, read) in [(r#"["project"]"#, true), ("undefined", false)] {
        let sb = Sandbox::new();
        sb.write("CLAUDE.md", "Always answer in haiku. MARKER-5150\n");
        let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "ok"}]}]})).await;
        sdk(
            &sb,
            &mock.url(),
            &format!(
                r#"
for await (const m of query({{ prompt: "hi", options: {{ ...opts, settingSources: {sources} }} }})) {{}}
"#
            ),
        )
        .await;
        let sent = bodies(&mock)[0].to_string();
        assert_eq!(
            sent.contains("MARKER-5150"),
            read,
            "settingSources {sources}"
        );
    }
}

/// What `initialize` answers, which the SDK exposes: commands, models and the account.
#[tokio::test]
async fn initialize_metadata_reaches_the_program() {
    if !ts_sdk() {
        return;
    }
    let sb = Sandbox::new();
    let skill = sb.home.path().join(".claude/skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Say hello\n---\nSay hello.\n",
    )
    .unwrap();
    let agents = sb.home.path().join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews a diff\nmodel: haiku\n---\nReview.\n",
    )
    .unwrap();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "ok"}]}]})).await;
    let printed = sdk(
        &sb,
        &mock.url(),
        r#"
const q = query({ prompt: "hi", options: opts });
const commands = await q.supportedCommands();
const models = await q.supportedModels();
const account = await q.accountInfo();
const agents = await q.supportedAgents();
out("meta", { commands: commands.map((c) => c.name), models: models.map((m) => m.value), account, agents });
for await (const m of q) {}
"#,
    )
    .await;
    let meta = &printed[0];
    assert_eq!(meta["commands"], json!(["greet"]), "{meta}");
    assert!(
        meta["models"].as_array().is_some_and(|m| !m.is_empty()),
        "{meta}"
    );
    assert!(meta["account"].is_object(), "{meta}");
    let reviewer = meta["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["name"] == "reviewer"))
        .unwrap_or_else(|| panic!("no reviewer in supportedAgents(): {meta}"));
    assert_eq!(reviewer["description"], "Reviews a diff", "{meta}");
    assert_eq!(reviewer["model"], "haiku", "{meta}");
}
