//! Claude Code's stream-json protocol, both halves: [`write`] renders the engine's events as
//! the lines `ouro -p --output-format stream-json` prints, and [`read`] parses such lines back
//! (from the `claude` CLI or from a child `ouro`, for the brains).

pub mod read;
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

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_creation_input_tokens: 3,
            cache_read_input_tokens: 4,
        }
    }

    fn round_trip(event: &Event) -> Line {
        let line = write::render(event, "sess-1").expect("the event has a stream-json line");
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
                block: block.clone(),
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
            text: "stopped after 2 turns".into(),
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
