//! End-to-end: `ouro agent ipc`, the Ouroboros IPC v1, driven by a supervisor that is not ouro
//! (a Python script speaking the protocol over pipes), with the native brain against the mock
//! API; and the published schema, which must be what the message types generate.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{API_KEY, Run, Sandbox, bodies, server, tree};

const SUPERVISOR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/ipc_supervisor.py"
);
const FAKE_CLAUDE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_claude.py");
const SCHEMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/ipc-v1.schema.json");
const LIMIT: Duration = Duration::from_secs(90);

const DEFINITION: &str = "---
name: builder
description: Builds and tidies
permissionMode: default
tools:
  - Read
  - Glob
  - name: Bash
    denied_commands: ['rm -rf .*']
---
You build things and tidy up.
";

/// What the supervisor saw: the agent's exit code and every message it sent.
struct Supervised {
    exit_code: i64,
    messages: Vec<Value>,
    run: Run,
}

impl Supervised {
    fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.messages.iter().filter(|m| m["type"] == kind).collect()
    }

    fn result(&self) -> &Value {
        let results = self.of_type("task:result");
        assert_eq!(results.len(), 1, "{}", self.debug());
        &results[0]["payload"]
    }

    fn logs(&self, level: &str) -> Vec<String> {
        self.of_type("log")
            .into_iter()
            .filter(|m| m["payload"]["level"] == level)
            .map(|m| m["payload"]["message"].as_str().unwrap().to_string())
            .collect()
    }

    fn debug(&self) -> String {
        format!(
            "exit code {}\n{:#?}\n{}",
            self.exit_code,
            self.messages,
            self.run.debug()
        )
    }
}

fn python() -> bool {
    let found = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        crate::common::skip::not_installed("python3");
    }
    found
}

/// Runs the Python supervisor with `scenario`, the agent in `sb`'s home against `url`.
async fn supervise(sb: &Sandbox, url: &str, scenario: Value) -> Supervised {
    supervise_with(sb, url, scenario, &[]).await
}

/// [`supervise`] with more of the agent's environment.
async fn supervise_with(
    sb: &Sandbox,
    url: &str,
    scenario: Value,
    env: &[(&str, &str)],
) -> Supervised {
    let mut command = tokio::process::Command::new("python3");
    command.envs(env.iter().copied());
    command
        .arg(SUPERVISOR)
        .current_dir(sb.root())
        .env("OURO_BIN", env!("CARGO_BIN_EXE_ouro"))
        .env("IPC_SCENARIO", scenario.to_string())
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("OURO_HOME", sb.home.path())
        .env("HOME", sb.home.path())
        .env_remove("ANTHROPIC_MODEL")
        .env_remove("OURO_LOG")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(LIMIT, command.output())
        .await
        .expect("the supervisor did not finish")
        .unwrap();
    let run = Run::from(output);
    let seen: Value = serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the supervisor's report is not JSON ({e}):\n{}",
            run.debug()
        )
    });
    let supervised = Supervised {
        exit_code: seen["exitCode"].as_i64().unwrap(),
        messages: seen["messages"].as_array().unwrap().clone(),
        run,
    };
    // Every message the agent sent is one the published schema describes.
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(SCHEMA).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for message in &supervised.messages {
        assert!(
            validator.is_valid(message),
            "not valid by {SCHEMA}: {message}"
        );
    }
    supervised
}

fn message(kind: &str, version: &str, payload: Value) -> String {
    json!({
        "protocolVersion": version,
        "messageId": uuid::Uuid::new_v4().to_string(),
        "timestamp": "2026-01-02T03:04:05Z",
        "type": kind,
        "payload": payload,
    })
    .to_string()
}

/// A starting tree in `sb`'s project, its cats bundle and the agent's definition, both kept
/// outside it; the `task:initialize` payload for them.
async fn task(sb: &Sandbox, url: &str, task: &str) -> Value {
    task_of(sb, url, task, DEFINITION).await
}

/// [`task`] for the agent `definition`.
async fn task_of(sb: &Sandbox, url: &str, task: &str, definition_text: &str) -> Value {
    sb.write("a.txt", "old line\n");
    sb.write("gone.txt", "bye\n");
    sb.write("src/keep.rs", "fn keep() {}\n");
    let outside = sb.home.path().join("supervisor");
    std::fs::create_dir_all(&outside).unwrap();
    let bundle = outside.join("context.cats.md");
    let definition = outside.join("builder.agent.md");
    std::fs::write(&definition, definition_text).unwrap();
    let bundle_arg = bundle.display().to_string();
    let cats = sb.run(url, &["cats", ".", "-o", &bundle_arg]).await;
    assert!(cats.status.success(), "{}", cats.debug());
    json!({
        "agentConfigPath": definition,
        "systemPromptPath": null,
        "initialContextArtifactPath": bundle,
        "task": task,
        "knowledgeGraphPath": outside.join("graph.json"),
    })
}

const BUILD: &str = "echo built > built.txt && sed -i 's/old/new/' a.txt && rm gone.txt && printf 'pub fn new() {}\\n' > src/new.rs";

/// The whole supervised path: a bad line is logged and the agent goes on; the task's tree is
/// made from the context bundle; a command the definition's pattern denies never reaches the
/// supervisor; a Bash call that needs asking becomes a permission:request, allowed, and
/// another denied with a message the model reads; the task:result's bundle, applied to a copy
/// of the starting tree with `ouro dogs`, reproduces the agent's tree.
#[tokio::test(flavor = "multi_thread")]
async fn a_supervisor_drives_a_task_through_its_questions_to_a_bundle_that_reproduces_the_tree() {
    if !python() {
        return;
    }
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "rm -rf src"}}]},
        {"expect_text": "denied_commands pattern `rm -rf .*`", "content": [
            {"type": "tool_use", "name": "Bash", "input": {"command": BUILD}}]},
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "touch denied.txt"}}]},
        {"expect_text": "Not that one.", "content": [{"type": "text", "text": "Built it."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let init = task(&sb, &mock.url(), "build it and tidy up").await;
    let start = sb.root();
    let seen = supervise(
        &sb,
        &mock.url(),
        json!({
            "before": ["this line is not JSON"],
            "initialize": init,
            "answers": [
                {"behavior": "allow"},
                {"behavior": "deny", "message": "Not that one."}
            ],
        }),
    )
    .await;
    assert_eq!(seen.exit_code, 0, "{}", seen.debug());
    let errors = seen.logs("error");
    assert!(
        errors[0].contains("this line is not JSON"),
        "{}",
        seen.debug()
    );
    assert!(
        seen.logs("warn")
            .iter()
            .any(|w| w.contains("knowledgeGraphPath")),
        "{}",
        seen.debug()
    );

    let requests = seen.of_type("permission:request");
    assert_eq!(requests.len(), 2, "{}", seen.debug());
    let first = &requests[0]["payload"];
    assert_eq!(first["toolName"], "Bash");
    assert_eq!(first["input"]["command"], BUILD);
    assert_eq!(first["permissionResult"]["behavior"], "ask");
    assert!(first["permissionResult"]["message"].is_string());
    assert_ne!(
        requests[0]["payload"]["requestId"],
        requests[1]["payload"]["requestId"]
    );
    // The brain's events went out as logs, each carrying its UI event.
    let events: Vec<&Value> = seen
        .of_type("log")
        .into_iter()
        .filter_map(|m| m["payload"].get("event"))
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool:start" && e["name"] == "Bash"),
        "{}",
        seen.debug()
    );

    let result = seen.result();
    assert_eq!(result["status"], "success", "{}", seen.debug());
    assert_eq!(result["summary"], "Built it.");
    assert_eq!(result["changed"], 4, "{result}");
    let artifact = PathBuf::from(result["outputArtifactPath"].as_str().unwrap());
    let run_id = result["runId"].as_str().unwrap();
    let run_dir = sb.home.path().join("agents/ipc").join(run_id);
    assert_eq!(artifact, run_dir.join(format!("{run_id}.dogs.md")));
    let agent_tree = run_dir.join("tree");
    let bundle = std::fs::read_to_string(&artifact).unwrap();
    assert!(bundle.contains("agent_name: \"builder\""), "{bundle}");
    assert!(bundle.contains(run_id), "{bundle}");
    assert_eq!(
        std::fs::read_to_string(agent_tree.join("a.txt")).unwrap(),
        "new line\n"
    );
    assert!(!agent_tree.join("denied.txt").exists());
    assert!(agent_tree.join("src/keep.rs").exists());
    // The project itself was never touched: the agent worked in its own tree.
    assert_eq!(
        std::fs::read_to_string(start.join("a.txt")).unwrap(),
        "old line\n"
    );

    let copy = tempfile::tempdir().unwrap();
    for (rel, bytes) in tree(&start) {
        let path = copy.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let artifact_arg = artifact.display().to_string();
    let copy_arg = copy.path().display().to_string();
    let applied = sb
        .run(
            &mock.url(),
            &["dogs", &artifact_arg, "--dir", &copy_arg, "--yes"],
        )
        .await;
    assert!(applied.status.success(), "{}", applied.debug());
    assert_eq!(tree(copy.path()), tree(&agent_tree));
    assert_eq!(bodies(&mock).len(), 4);
}

/// `task:terminate` while a question waits: the brain is stopped, the question denied, and
/// the task ends as a failure that says it was terminated, its bundle written all the same.
#[tokio::test(flavor = "multi_thread")]
async fn terminate_stops_the_task_and_its_result_says_so() {
    if !python() {
        return;
    }
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo late > late.txt"}}]},
        {"content": [{"type": "text", "text": "Never read."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let init = task(&sb, &mock.url(), "write late.txt").await;
    let seen = supervise(
        &sb,
        &mock.url(),
        json!({"initialize": init, "answers": ["terminate"]}),
    )
    .await;
    assert_eq!(seen.exit_code, 1, "{}", seen.debug());
    let result = seen.result();
    assert_eq!(result["status"], "failure");
    let summary = result["summary"].as_str().unwrap();
    assert!(summary.contains("terminated"), "{summary}");
    assert!(summary.contains("has seen enough"), "{summary}");
    let artifact = PathBuf::from(result["outputArtifactPath"].as_str().unwrap());
    assert!(artifact.is_file(), "{}", seen.debug());
    assert_eq!(result["changed"], 0);
    let run_dir = sb.home.path().join("agents/ipc");
    let run_id = result["runId"].as_str().unwrap();
    assert!(!run_dir.join(run_id).join("tree/late.txt").exists());
}

/// ouro's `workingDirectory`: the agent works in that directory itself, and the bundle holds
/// what it changed there.
#[tokio::test(flavor = "multi_thread")]
async fn with_a_working_directory_the_agent_works_in_it() {
    if !python() {
        return;
    }
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo hi > hi.txt"}}]},
        {"content": [{"type": "text", "text": "Said hi."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut init = task(&sb, &mock.url(), "say hi").await;
    init["workingDirectory"] = json!(sb.root());
    let seen = supervise(
        &sb,
        &mock.url(),
        json!({"initialize": init, "answers": [{"behavior": "allow"}]}),
    )
    .await;
    assert_eq!(seen.exit_code, 0, "{}", seen.debug());
    assert_eq!(
        std::fs::read_to_string(sb.root().join("hi.txt")).unwrap(),
        "hi\n"
    );
    let result = seen.result();
    assert_eq!(result["changed"], 1, "{result}");
    let bundle = std::fs::read_to_string(result["outputArtifactPath"].as_str().unwrap()).unwrap();
    assert!(bundle.contains("DOGS_START_FILE: hi.txt"), "{bundle}");
    let run_dir = sb
        .home
        .path()
        .join("agents/ipc")
        .join(result["runId"].as_str().unwrap());
    assert!(!run_dir.join("tree").exists());
}

/// A `permission:response` may edit the call (`updatedInput`: it runs as edited) and add rules
/// (`newRules`: a later call they cover runs without asking).
#[tokio::test(flavor = "multi_thread")]
async fn an_edited_input_runs_as_edited_and_new_rules_allow_later_calls() {
    if !python() {
        return;
    }
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo hi > hi.txt"}}]},
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo again > again.txt"}}]},
        {"content": [{"type": "text", "text": "Done."}]}
    ]}))
    .await;
    let sb = Sandbox::new();
    let mut init = task(&sb, &mock.url(), "say hi").await;
    init["workingDirectory"] = json!(sb.root());
    let answer = json!({
        "behavior": "allow",
        "updatedInput": {"command": "echo edited > hi.txt"},
        "newRules": [{"toolName": "Bash", "ruleContent": "echo again > again.txt"}]
    });
    let seen = supervise(
        &sb,
        &mock.url(),
        json!({"initialize": init, "answers": [answer]}),
    )
    .await;
    assert_eq!(seen.exit_code, 0, "{}", seen.debug());
    assert_eq!(
        seen.of_type("permission:request").len(),
        1,
        "{}",
        seen.debug()
    );
    assert_eq!(
        std::fs::read_to_string(sb.root().join("hi.txt")).unwrap(),
        "edited\n"
    );
    assert_eq!(
        std::fs::read_to_string(sb.root().join("again.txt")).unwrap(),
        "again\n"
    );
    // The rules last for the task: nothing is written into the supervisor's tree.
    assert!(
        !sb.root().join(".ouro/settings.local.json").exists(),
        "newRules were saved in the work tree"
    );
}

/// A `claude@` agent is supervised the same way: its brain (a stand-in for the `claude` CLI)
/// gets the definition's prompt and the stdio permission prompt, and its answer is the result.
#[tokio::test(flavor = "multi_thread")]
async fn a_claude_agent_runs_its_task_in_the_same_protocol() {
    if !python() {
        return;
    }
    let mock = server(json!({"turns": []})).await;
    let sb = Sandbox::new();
    sb.write("notes.txt", "the notes\n");
    let definition = "---\nname: reader\nengine:\n  brain: claude@anthropic/claude/sonnet\n---\nYou read notes.\n";
    let init = task_of(&sb, &mock.url(), "read the tool notes", definition).await;
    let log = sb.home.path().join("fake_claude.log");
    let log_arg = log.display().to_string();
    let seen = supervise_with(
        &sb,
        &mock.url(),
        json!({"initialize": init}),
        &[
            ("OURO_CLAUDE_BIN", FAKE_CLAUDE),
            ("FAKE_CLAUDE_LOG", &log_arg),
        ],
    )
    .await;
    assert_eq!(seen.exit_code, 0, "{}", seen.debug());
    let result = seen.result();
    assert_eq!(
        result["summary"],
        "echo: read the tool notes",
        "{}",
        seen.debug()
    );
    assert_eq!(result["changed"], 0);
    let read = seen
        .of_type("log")
        .into_iter()
        .filter_map(|m| m["payload"].get("event"))
        .find(|e| e["type"] == "tool:result")
        .cloned();
    assert_eq!(read.unwrap()["content"], "the notes\n", "{}", seen.debug());
    let started = std::fs::read_to_string(&log).unwrap();
    assert!(started.contains("You read notes."), "{started}");
    assert!(started.contains("--permission-prompt-tool"), "{started}");
    assert!(bodies(&mock).is_empty());
}

/// A message of another major version: an error naming both versions, and exit code 2.
#[tokio::test(flavor = "multi_thread")]
async fn a_message_of_version_2_ends_the_agent_with_exit_code_2() {
    if !python() {
        return;
    }
    let mock = server(json!({"turns": []})).await;
    let sb = Sandbox::new();
    let seen = supervise(
        &sb,
        &mock.url(),
        json!({"before": [message("task:terminate", "2.0", json!({}))]}),
    )
    .await;
    assert_eq!(seen.exit_code, 2, "{}", seen.debug());
    assert_eq!(seen.messages.len(), 1, "{}", seen.debug());
    let errors = seen.logs("error");
    assert!(
        errors[0].contains("1.0") && errors[0].contains("2.0"),
        "{}",
        seen.debug()
    );
}

/// `docs/ipc-v1.schema.json` is what the message types generate (and what `ouro agent ipc
/// --schema` prints). `OURO_WRITE_SCHEMA=1` rewrites it after a change to the types.
#[test]
fn the_published_schema_is_the_one_the_types_generate() {
    let generated = format!(
        "{}\n",
        serde_json::to_string_pretty(&ouro::agent::ipc::messages::schema()).unwrap()
    );
    if std::env::var_os("OURO_WRITE_SCHEMA").is_some_and(|v| v == "1") {
        std::fs::write(SCHEMA, &generated).unwrap();
    }
    let published = std::fs::read_to_string(SCHEMA).unwrap_or_default();
    assert!(
        published == generated,
        "docs/ipc-v1.schema.json is not what the IPC message types generate (src/agent/ipc/messages.rs); regenerate it with `OURO_WRITE_SCHEMA=1 cargo test --test main -- ipc::the_published_schema`"
    );
    let printed = std::process::Command::new(env!("CARGO_BIN_EXE_ouro"))
        .args(["agent", "ipc", "--schema"])
        .output()
        .unwrap();
    assert!(printed.status.success());
    assert_eq!(String::from_utf8(printed.stdout).unwrap(), generated);
}
