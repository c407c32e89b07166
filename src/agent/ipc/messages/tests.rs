use serde_json::json;

use super::*;

fn line(kind: &str, payload: Value) -> String {
    json!({
        "protocolVersion": "1.0",
        "messageId": "0b6f8a52-3f2e-4c39-9d1c-6f7f2b7f9a10",
        "timestamp": "2026-01-02T03:04:05.678Z",
        "type": kind,
        "payload": payload,
    })
    .to_string()
}

#[test]
fn every_supervisor_message_reads_with_the_issues_field_names() {
    let init = read(&line(
        "task:initialize",
        json!({
            "agentConfigPath": "/a/fixer.agent.md",
            "systemPromptPath": "/a/prompt.md",
            "initialContextArtifactPath": "/a/context.cats.md",
            "task": "fix it",
            "knowledgeGraphPath": "/a/kg.json",
        }),
    ))
    .unwrap();
    assert_eq!(init.header.protocol_version, "1.0");
    assert_eq!(
        init.body,
        ToAgent::Initialize(Initialize {
            agent_config_path: "/a/fixer.agent.md".into(),
            system_prompt_path: Some("/a/prompt.md".into()),
            initial_context_artifact_path: "/a/context.cats.md".into(),
            task: "fix it".into(),
            knowledge_graph_path: Some("/a/kg.json".into()),
            working_directory: None,
        })
    );
    let response = read(&line(
        "permission:response",
        json!({"requestId": "r1", "behavior": "allow", "updatedInput": {"command": "ls"},
               "newRules": ["Bash(ls)", {"toolName": "Bash"}]}),
    ))
    .unwrap();
    assert_eq!(
        response.body,
        ToAgent::PermissionResponse(PermissionResponse {
            request_id: "r1".into(),
            behavior: Behavior::Allow,
            updated_input: Some(json!({"command": "ls"})),
            new_rules: vec![
                NewRule::Text("Bash(ls)".into()),
                NewRule::Object(json!({"toolName": "Bash"}).as_object().unwrap().clone()),
            ],
            message: None,
        })
    );
    // task:terminate needs no payload at all.
    for payload in [json!({}), Value::Null] {
        let terminate = read(&line("task:terminate", payload)).unwrap();
        assert_eq!(terminate.body, ToAgent::Terminate(Terminate::default()));
    }
    let mut bare: Value = serde_json::from_str(&line("task:terminate", json!(null))).unwrap();
    bare.as_object_mut().unwrap().remove("payload");
    assert!(read(&bare.to_string()).is_ok());
    // What is read is what is written.
    let again = serde_json::to_string(&response).unwrap();
    assert_eq!(read(&again).unwrap(), response);
}

#[test]
fn another_major_version_is_fatal_and_names_both_versions() {
    for found in ["2.0", "0.9", "10"] {
        let mut message: Value = serde_json::from_str(&line("task:terminate", json!({}))).unwrap();
        message["protocolVersion"] = json!(found);
        // Checked first: even a type it does not know is refused for its version.
        message["type"] = json!("task:frobnicate");
        let err = read(&message.to_string()).unwrap_err();
        assert!(err.is_fatal(), "{err}");
        let text = err.to_string();
        assert!(text.contains("1.0") && text.contains(found), "{text}");
    }
    let mut minor: Value = serde_json::from_str(&line("task:terminate", json!({}))).unwrap();
    minor["protocolVersion"] = json!("1.7");
    assert!(read(&minor.to_string()).is_ok());
    minor["protocolVersion"] = json!(2.0);
    assert!(read(&minor.to_string()).unwrap_err().is_fatal());
}

#[test]
fn a_bad_line_is_an_error_that_quotes_it_and_is_not_fatal() {
    let cases = [
        ("this is not json", "not a JSON object"),
        ("[1, 2]", "not an object"),
        (
            &line("task:frobnicate", json!({})) as &str,
            "unknown message type \"task:frobnicate\"",
        ),
        (
            r#"{"protocolVersion": "1.0", "messageId": "m", "timestamp": "t", "payload": {}}"#,
            "unknown message type (none)",
        ),
        (
            r#"{"type": "task:terminate", "payload": {}}"#,
            "no protocolVersion",
        ),
        (
            r#"{"protocolVersion": "one", "type": "task:terminate"}"#,
            "not a version",
        ),
        (
            &line("task:initialize", json!({"task": "x"})) as &str,
            "a task:initialize message that does not fit the protocol (missing field `agentConfigPath`)",
        ),
        (
            &line(
                "permission:response",
                json!({"requestId": "r", "behavior": "maybe"}),
            ) as &str,
            "unknown variant `maybe`",
        ),
    ];
    for (text, expected) in cases {
        let err = read(text).unwrap_err();
        assert!(!err.is_fatal(), "{err}");
        let shown = err.to_string();
        assert!(shown.contains(expected), "{shown}");
        let quoted = crate::text::truncate(text.trim(), QUOTE);
        assert!(shown.ends_with(&quoted), "{shown}");
    }
    let long = "x".repeat(5000);
    assert!(read(&long).unwrap_err().to_string().len() < 1000);
}

#[test]
fn a_message_out_has_a_fresh_envelope_and_the_issues_field_names() {
    let message = ToSupervisorMessage::new(ToSupervisor::PermissionRequest(PermissionRequest {
        request_id: "r1".into(),
        tool_name: "Bash".into(),
        input: json!({"command": "make"}),
        permission_result: AskResult {
            behavior: Ask::Ask,
            message: "May Bash run?".into(),
        },
        suggested_rules: Vec::new(),
    }));
    let value = serde_json::to_value(&message).unwrap();
    assert_eq!(value["protocolVersion"], "1.0");
    assert!(uuid::Uuid::parse_str(value["messageId"].as_str().unwrap()).is_ok());
    assert!(chrono::DateTime::parse_from_rfc3339(value["timestamp"].as_str().unwrap()).is_ok());
    assert_eq!(value["type"], "permission:request");
    assert_eq!(
        value["payload"],
        json!({"requestId": "r1", "toolName": "Bash", "input": {"command": "make"},
               "permissionResult": {"behavior": "ask", "message": "May Bash run?"}})
    );
    let other = ToSupervisorMessage::new(ToSupervisor::log(Level::Warn, "w"));
    assert_ne!(other.header.message_id, message.header.message_id);
    assert_eq!(
        serde_json::to_value(&other).unwrap()["payload"],
        json!({"level": "warn", "message": "w"})
    );
    let result = ToSupervisorMessage::new(ToSupervisor::TaskResult(TaskResult {
        status: Status::Success,
        output_artifact_path: Some("/h/agents/ipc/r/r.dogs.md".into()),
        summary: "Done.".into(),
        run_id: Some("r".into()),
        changed: 2,
        cost_usd: 0.5,
        duration_ms: 7,
    }));
    let value = serde_json::to_value(&result).unwrap();
    assert_eq!(value["type"], "task:result");
    assert_eq!(
        value["payload"],
        json!({"status": "success", "outputArtifactPath": "/h/agents/ipc/r/r.dogs.md",
               "summary": "Done.", "runId": "r", "changed": 2, "costUsd": 0.5, "durationMs": 7})
    );
    let back: ToSupervisorMessage = serde_json::from_value(value).unwrap();
    assert_eq!(back, result);
}

#[test]
fn the_schema_accepts_what_is_written_and_refuses_another_version() {
    let schema = schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let written = [
        ToSupervisorMessage::new(ToSupervisor::log(Level::Error, "bad line")),
        ToSupervisorMessage::new(ToSupervisor::TaskResult(TaskResult {
            status: Status::Failure,
            output_artifact_path: None,
            summary: "terminated".into(),
            run_id: None,
            changed: 0,
            cost_usd: 0.0,
            duration_ms: 0,
        })),
    ];
    for message in &written {
        let value = serde_json::to_value(message).unwrap();
        assert!(validator.is_valid(&value), "{value}");
    }
    let read_back: Value = serde_json::from_str(&line(
        "task:initialize",
        json!({"agentConfigPath": "a.md", "initialContextArtifactPath": "c.md", "task": "t"}),
    ))
    .unwrap();
    assert!(validator.is_valid(&read_back), "{read_back}");
    let mut other = read_back.clone();
    other["protocolVersion"] = json!("2.0");
    assert!(!validator.is_valid(&other));
    let mut unknown = read_back;
    unknown["type"] = json!("task:frobnicate");
    assert!(!validator.is_valid(&unknown));
}
