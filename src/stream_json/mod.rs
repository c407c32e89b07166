//! Claude Code's stream-json protocol, both halves: [`write`] renders the engine's events as
//! the lines `ouro -p --output-format stream-json` prints, and [`read`] parses such lines back
//! (from the `claude` CLI or from a child `ouro`, for the brains). Both go through the serde
//! types of [`wire`], which also carry the Agent SDK's control protocol.

mod control;
pub mod read;
pub mod wire;
pub mod write;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use serde_json::json;

    use super::read::{self, Line};
    use super::write;
    use crate::api::types::{ContentBlock, StopReason, Usage};
    use crate::event::{
        CompactInfo, CompactTrigger, Event, InitInfo, PhaseTimings, ResultKind, RetryInfo,
        RunResult, ToolStatus,
    };

    /// The line ouro prints for `event`, read back as JSON.
    fn value(event: &Event) -> serde_json::Value {
        let mut out = Vec::new();
        assert!(
            write::write_line(event, "sess-1", &mut out).unwrap(),
            "the event has a stream-json line"
        );
        assert_eq!(out.last(), Some(&b'\n'));
        serde_json::from_slice(&out).unwrap()
    }

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_creation_input_tokens: 3,
            cache_read_input_tokens: 4,
        }
    }

    #[test]
    fn error_results_carry_errors_and_every_result_its_terminal_reason() {
        let failed = RunResult {
            kind: ResultKind::ErrorMaxTurns,
            text: std::sync::Arc::new("stopped after 2 turns".into()),
            ..RunResult::not_started("")
        };
        let line = value(&Event::Result(failed));
        assert_eq!(line["errors"], json!(["stopped after 2 turns"]));
        assert_eq!(line["terminal_reason"], "max_turns");
        let done = RunResult {
            kind: ResultKind::Success,
            ..RunResult::not_started("fine")
        };
        let line = value(&Event::Result(done));
        assert!(line.get("errors").is_none(), "{line}");
        assert_eq!(line["terminal_reason"], "completed");
    }

    /// The keys of Claude Code 2.1.331's `system/init` (captured against the mock API); ouro's
    /// has each, with its own value or Claude Code's empty form. Two have no value to give.
    #[test]
    fn init_has_every_key_of_claude_codes() {
        const KEYS: &[&str] = &[
            "additional_directories",
            "agents",
            "analytics_disabled",
            "apiKeySource",
            "capabilities",
            "claude_code_version",
            "cwd",
            "fast_mode_state",
            "mcp_servers",
            "memory_paths",
            "model",
            "original_cwd",
            "output_style",
            "per_turn_effort_active",
            "permissionMode",
            "plugins",
            "product_feedback_disabled",
            "sandbox_enabled",
            "served_by_anthropic",
            "session_id",
            "skills",
            "slash_commands",
            "subtype",
            "terminal_slash_commands",
            "tools",
            "type",
            "ultrathink_available",
            "ultrathink_typed_raises",
            "uuid",
            "view_mode",
        ];
        let init = Event::Init(InitInfo {
            session_id: "s".into(),
            cwd: "/p".into(),
            model: "m".into(),
            tools: vec!["Read".into()],
            permission_mode: "default".into(),
            mcp_servers: Vec::new(),
            meta: crate::event::InitMeta {
                agents: vec![crate::event::AgentInfo {
                    name: "explore".into(),
                    description: "Reads".into(),
                    model: None,
                }],
                skills: vec!["pdf".into()],
                ..Default::default()
            },
        });
        let line = value(&init);
        for key in KEYS {
            assert!(line.get(*key).is_some(), "{key} missing from {line}");
        }
        assert_eq!(line["agents"], json!(["explore"]));
        assert_eq!(line["slash_commands"], json!(["pdf"]));
    }

    /// Every key of `ours` is in `theirs` with the same value (objects compared key by key).
    fn subset(ours: &serde_json::Value, theirs: &serde_json::Value, at: &str) {
        match (ours, theirs) {
            (serde_json::Value::Object(o), serde_json::Value::Object(t)) => {
                for (key, value) in o {
                    let there = t
                        .get(key)
                        .unwrap_or_else(|| panic!("{at}.{key} is not in the original"));
                    subset(value, there, &format!("{at}.{key}"));
                }
            }
            (serde_json::Value::Array(o), serde_json::Value::Array(t)) => {
                assert_eq!(o.len(), t.len(), "{at}: lengths differ");
                for (i, (a, b)) in o.iter().zip(t).enumerate() {
                    subset(a, b, &format!("{at}[{i}]"));
                }
            }
            (serde_json::Value::Number(a), serde_json::Value::Number(b)) => {
                assert_eq!(a.as_f64(), b.as_f64(), "{at}")
            }
            _ => assert_eq!(ours, theirs, "{at}"),
        }
    }

    /// The real `claude` CLI's stream-json (`tests/fixtures/claude-cli`): every line is a kind the wire
    /// types model, and writing the parsed line back gives the same values for every key ouro
    /// models.
    #[test]
    fn the_real_claude_captures_round_trip_through_the_wire_types() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-cli");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            panic!("{} is missing", dir.display());
        };
        let mut lines = 0;
        for entry in entries {
            let path = entry.unwrap().path();
            for (n, text) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
                if text.trim().is_empty() {
                    continue;
                }
                let at = format!("{}:{}", path.display(), n + 1);
                let parsed: super::wire::Line = serde_json::from_str(text)
                    .unwrap_or_else(|e| panic!("{at} does not parse: {e}"));
                let original: serde_json::Value = serde_json::from_str(text).unwrap();
                subset(&serde_json::to_value(&parsed).unwrap(), &original, &at);
                lines += 1;
            }
        }
        assert!(lines > 20, "only {lines} lines in {}", dir.display());
    }

    fn round_trip(event: &Event) -> Line {
        let line = value(event);
        read::parse_line(&line.to_string())
            .expect("ouro's own line parses")
            .expect("the line is not blank")
    }

    #[test]
    fn what_ouro_writes_its_reader_reads_back_identically() {
        let init = Event::Init(InitInfo {
            session_id: "sess-1".into(),
            cwd: "/p".into(),
            model: "claude-x".into(),
            tools: vec!["Bash".into(), "Read".into()],
            permission_mode: "default".into(),
            mcp_servers: Vec::new(),
            meta: crate::event::InitMeta::default(),
        });
        let Line::Init(got) = round_trip(&init) else {
            panic!("init")
        };
        assert_eq!(
            (got.session_id, got.model, got.cwd, got.tools),
            (
                "sess-1".into(),
                "claude-x".into(),
                "/p".into(),
                vec!["Bash".into(), "Read".into()]
            )
        );

        let retry = Event::ApiRetry(RetryInfo {
            message: String::new(),
            attempt: 2,
            max_retries: 10,
            retry_delay_ms: 500,
            error_status: Some(529),
            error: "overloaded".into(),
        });
        assert_eq!(
            round_trip(&retry),
            Line::ApiRetry(read::ApiRetry {
                attempt: 2,
                max_retries: 10,
                error_status: Some(529),
                error: "overloaded".into(),
            })
        );

        for block in [
            ContentBlock::text("héllo\nworld"),
            ContentBlock::ToolUse {
                id: "toolu_1".into(),
                name: "Read".into(),
                input: json!({"file_path": "/p/a \"b\".rs", "limit": 3}),
            },
        ] {
            let event = Event::AssistantBlock {
                message_id: "msg_1".into(),
                model: "claude-x".into(),
                block: block.clone().into(),
                usage: usage(10, 20),
            };
            assert_eq!(
                round_trip(&event),
                Line::Assistant(read::AssistantEvent {
                    message_id: "msg_1".into(),
                    model: "claude-x".into(),
                    blocks: vec![block],
                    usage: usage(10, 20),
                    error: None,
                })
            );
        }

        let result = ContentBlock::ToolResult {
            tool_use_id: "toolu_1".into(),
            content: "1\tfn main() {}".into(),
            is_error: true,
        };
        let finished = Event::ToolFinished {
            id: "toolu_1".into(),
            name: "Read".into(),
            result: result.clone(),
            status: ToolStatus::Error,
            display: None,
            elapsed: Duration::from_millis(5),
            timings: PhaseTimings::default(),
        };
        assert_eq!(
            round_trip(&finished),
            Line::User(read::UserEvent {
                blocks: vec![result],
                synthetic: false,
            })
        );

        let synthetic = Event::SyntheticUser {
            text: "Continue.".into(),
        };
        assert_eq!(
            round_trip(&synthetic),
            Line::User(read::UserEvent {
                blocks: vec![ContentBlock::text("Continue.")],
                synthetic: true,
            })
        );

        let boundary = Event::CompactBoundary(CompactInfo {
            trigger: CompactTrigger::Auto,
            pre_tokens: 1,
            messages_summarised: 2,
            messages_kept: 3,
        });
        assert_eq!(
            round_trip(&boundary),
            Line::Other("system/compact_boundary".into())
        );

        let run = RunResult {
            kind: ResultKind::ErrorMaxTurns,
            text: std::sync::Arc::new("stopped after 2 turns".into()),
            session_id: "sess-1".into(),
            num_turns: 2,
            duration: Duration::from_millis(1500),
            api_duration: Duration::from_millis(900),
            stop_reason: Some(StopReason::ToolUse),
            usage: usage(100, 50),
            cost_usd: 0.25,
            total_cost_usd: 0.75,
            model_usage: BTreeMap::new(),
            cost_unknown: false,
            api_error_status: Some(529),
            permission_denials: Vec::new(),
            structured_output: None,
        };
        assert_eq!(
            round_trip(&Event::Result(run)),
            Line::Result(read::ResultEvent {
                subtype: "error_max_turns".into(),
                is_error: true,
                text: Some("stopped after 2 turns".into()),
                session_id: Some("sess-1".into()),
                usage: Some(usage(100, 50)),
                total_cost_usd: Some(0.75),
                api_error_status: Some(529),
                num_turns: 2,
                duration_ms: 1500,
            })
        );
    }
}
