//! The same Agent SDK programs on ouro and on the real `claude` 2.1.331 (installed by
//! .ci/run), each against its own mock API with the same script: what the program sees must be
//! the same. Every scripted turn names the prompt it expects, so a request Claude Code makes
//! beyond the conversation gets a 400 instead of stealing a turn.

use crate::common;
use crate::sdk_python as py;
use crate::sdk_typescript as ts;

use common::{Sandbox, server};
use serde_json::{Value, json};

/// The real `claude` on PATH, to compare with; `None` (and a recorded skip) without it.
fn claude_cli() -> Option<String> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("claude"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        common::skip::not_installed("the real `claude` CLI (npm; .ci/run installs it)");
    }
    found.map(|p| p.display().to_string())
}

/// Which SDK runs the program.
#[derive(Clone, Copy)]
enum Sdk {
    Python,
    TypeScript,
}

/// Runs `body` with `sdk` on ouro and on Claude Code, each with a fresh sandbox and a mock
/// serving what `turns` scripts for it; returns (ouro's output, Claude Code's), or `None`
/// (a recorded skip) when the SDK or `claude` is missing.
async fn both(
    sdk: Sdk,
    body: &str,
    turns: impl Fn(&Sandbox) -> Value,
) -> Option<(Vec<Value>, Vec<Value>, Vec<Vec<Value>>)> {
    let installed = match sdk {
        Sdk::Python => py::python_sdk(),
        Sdk::TypeScript => ts::ts_sdk(),
    };
    if !installed {
        return None;
    }
    let claude = claude_cli()?;
    let mut answers = Vec::new();
    let mut sent = Vec::new();
    for cli in [env!("CARGO_BIN_EXE_ouro").to_string(), claude] {
        let sb = Sandbox::new();
        let mock = server(turns(&sb)).await;
        answers.push(match sdk {
            Sdk::Python => py::sdk_on(&sb, &mock.url(), body, &cli).await,
            Sdk::TypeScript => ts::sdk_on(&sb, &mock.url(), body, &cli).await,
        });
        sent.push(common::bodies(&mock));
    }
    let claude = answers.pop()?;
    Some((answers.pop()?, claude, sent))
}

fn read_then_text(sb: &Sandbox, prompt: &str) -> Value {
    let file = sb.write("a.txt", "a\n");
    json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": file}}],
         "expect_text": prompt},
        {"content": [{"type": "text", "text": "never"}], "expect_text": prompt}
    ]})
}

/// An error result reaches the program with the same subtype, `terminal_reason` and an
/// `errors` list, and then the SDK raises the same kind of error.
#[tokio::test]
async fn an_error_result_is_what_claude_code_gives() {
    let body = r#"
try {
  for await (const m of query({ prompt: "read a.txt", options: { ...opts, maxTurns: 1 } })) {
    if (m.type === "result") out("result", { subtype: m.subtype, is_error: m.is_error,
      reason: m.terminal_reason, errors: Array.isArray(m.errors) });
  }
  out("ended", {});
} catch (e) {
  out("thrown", { kind: String(e).split(":").slice(0, 2).join(":") });
}
"#;
    let Some((ouro, claude, _)) =
        both(Sdk::TypeScript, body, |sb| read_then_text(sb, "read a.txt")).await
    else {
        return;
    };
    assert_eq!(ouro, claude, "ouro, then Claude Code");
    assert_eq!(ouro[0]["subtype"], "error_max_turns");
}

/// `outputFormat`: the same `structured_output` from the same StructuredOutput call.
#[tokio::test]
async fn structured_output_is_what_claude_code_gives() {
    let body = r#"
const outputFormat = { type: "json_schema", schema: {
  type: "object",
  properties: { city: { type: "string" }, people: { type: "integer" } },
  required: ["city", "people"] } };
for await (const m of query({ prompt: "biggest city on the Rhone", options: { ...opts, outputFormat } })) {
  if (m.type === "result") out("result", { subtype: m.subtype, structured: m.structured_output });
}
"#;
    let Some((ouro, claude, _)) = both(Sdk::TypeScript, body, |_| {
        json!({"turns": [
            {"content": [{"type": "tool_use", "name": "StructuredOutput",
                "input": {"city": "Lyon", "people": 522000}}], "expect_text": "Rhone"},
            {"content": [{"type": "text", "text": "done"}], "expect_text": "Rhone"}
        ]})
    })
    .await
    else {
        return;
    };
    assert_eq!(ouro, claude, "ouro, then Claude Code");
    assert_eq!(
        ouro[0]["structured"],
        json!({"city": "Lyon", "people": 522000})
    );
}

/// The deny programs' script: a Write of b.txt, then an answer that must never be asked for.
fn write_b_then_never(sb: &Sandbox) -> Value {
    let file = sb.root().join("b.txt").display().to_string();
    json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Write",
            "input": {"file_path": file, "content": "b"}}], "expect_text": "make b.txt"},
        {"content": [{"type": "text", "text": "never"}], "expect_text": "make b.txt"}
    ]})
}

/// `interrupt()` mid-answer: the same user message and result subtype.
#[tokio::test]
async fn an_interrupt_is_what_claude_code_gives() {
    let body = r#"
const q = query({ prompt: "a slow one", options: opts });
setTimeout(() => q.interrupt(), 1500);
try {
  for await (const m of q) {
    if (m.type === "user" && Array.isArray(m.message.content)) {
      for (const b of m.message.content) if (b.type === "text") out("user", { text: b.text });
    }
    if (m.type === "result") out("result", { subtype: m.subtype, is_error: m.is_error });
  }
} catch (e) {
  out("thrown", { kind: String(e).split(":")[0] });
}
"#;
    let Some((ouro, claude, _)) = both(Sdk::TypeScript, body, |_| {
        json!({"turns": [
            {"content": [{"type": "text", "text": "a very slow answer that never finishes"}],
             "hold_after_events": 2, "expect_text": "a slow one"}
        ]})
    })
    .await
    else {
        return;
    };
    assert_eq!(ouro, claude, "ouro, then Claude Code");
}

/// `canUseTool` denying with `interrupt: true`: the same result, and the call never runs.
#[tokio::test]
async fn a_deny_that_stops_is_what_claude_code_gives() {
    let body = r#"
const canUseTool = async () => ({ behavior: "deny", message: "stop right there", interrupt: true });
try {
  for await (const m of query({ prompt: "make b.txt", options: { ...opts, canUseTool } })) {
    if (m.type === "result") out("result", { subtype: m.subtype, is_error: m.is_error });
  }
} catch (e) {
  out("thrown", { kind: String(e).split(":")[0] });
}
"#;
    let Some((ouro, claude, sent)) = both(Sdk::TypeScript, body, write_b_then_never).await else {
        return;
    };
    assert_eq!(ouro, claude, "ouro, then Claude Code");
    let asked = |bodies: &[Value]| {
        bodies
            .iter()
            .filter(|b| b.to_string().contains("make b.txt"))
            .count()
    };
    assert_eq!(
        asked(&sent[0]),
        asked(&sent[1]),
        "the model is asked as often"
    );
}

/// `settingSources: ["project"]` reads the project's CLAUDE.md on both.
#[tokio::test]
async fn project_instructions_reach_the_model_as_on_claude_code() {
    let body = r#"
for await (const m of query({ prompt: "hello there", options: { ...opts, settingSources: ["project"] } })) {
  if (m.type === "result") out("result", { subtype: m.subtype });
}
"#;
    let Some((ouro, claude, sent)) = both(Sdk::TypeScript, body, |sb| {
        sb.write("CLAUDE.md", "Answer briefly. MARKER-6262\n");
        json!({"turns": [{"content": [{"type": "text", "text": "ok"}], "expect_text": "hello there"}]})
    })
    .await
    else {
        return;
    };
    assert_eq!(ouro, claude, "ouro, then Claude Code");
    for (who, bodies) in ["ouro", "claude"].iter().zip(&sent) {
        let main = bodies
            .iter()
            .find(|b| b.to_string().contains("hello there"))
            .unwrap();
        assert!(
            main.to_string().contains("MARKER-6262"),
            "{who} did not send CLAUDE.md"
        );
    }
}

#[tokio::test]
async fn python_an_error_result_then_the_process_error_are_what_claude_code_gives() {
    let Some((ouro, claude, _)) = both(
        Sdk::Python,
        r#"
    try:
        async for m in query(prompt="read a.txt", options=ClaudeAgentOptions(
                **{**opts.__dict__, "max_turns": 1})):
            if isinstance(m, ResultMessage):
                out("result", subtype=m.subtype, is_error=m.is_error,
                    errors=isinstance(getattr(m, "errors", None), list) or "errors" in str(m))
        out("ended")
    except Exception as e:
        out("raised", type=type(e).__name__)
"#,
        |sb| read_then_text(sb, "read a.txt"),
    )
    .await
    else {
        return;
    };
    assert_eq!(ouro, claude, "ouro, then Claude Code");
    assert_eq!(ouro[0]["subtype"], "error_max_turns");
}

#[tokio::test]
async fn python_a_deny_that_stops_is_what_claude_code_gives() {
    let Some((ouro, claude, _)) = both(
        Sdk::Python,
        r#"
    async def decide(tool, data, context):
        return PermissionResultDeny(message="stop right there", interrupt=True)
    opts.can_use_tool = decide
    try:
        async with ClaudeSDKClient(options=opts) as client:
            await client.query("make b.txt")
            async for m in client.receive_response():
                if isinstance(m, ResultMessage):
                    out("result", subtype=m.subtype, is_error=m.is_error)
    except Exception as e:
        out("raised", type=type(e).__name__)
    out("file", exists=os.path.exists("b.txt"))
"#,
        write_b_then_never,
    )
    .await
    else {
        return;
    };
    assert_eq!(ouro, claude, "ouro, then Claude Code");
    assert_eq!(ouro.last().unwrap()["exists"], false);
}

#[tokio::test]
async fn python_a_plain_answer_has_the_fields_claude_code_gives() {
    let Some((ouro, claude, _)) = both(
        Sdk::Python,
        r#"
    async for m in query(prompt="say hi", options=opts):
        if isinstance(m, ResultMessage):
            out("result", subtype=m.subtype, is_error=m.is_error, result=m.result,
                turns=m.num_turns, usage=sorted((m.usage or {}).keys()),
                reason=getattr(m, "terminal_reason", None))
"#,
        |_| json!({"turns": [{"content": [{"type": "text", "text": "hi"}], "expect_text": "say hi"}]}),
    )
    .await
    else {
        return;
    };
    assert_eq!(ouro, claude, "ouro, then Claude Code");
}
