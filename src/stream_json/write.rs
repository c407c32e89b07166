//! The writing half: the engine's events as Claude Code's stream-json lines, so existing
//! consumers work unchanged.

use serde_json::Value;

use super::wire::{
    ApiRetry, AssistantLine, AssistantMessage, AutoReview, CompactBoundary, CompactMetadata,
    Envelope, HookResponse, HookStarted, Init, InitMore, Line, MemoryReflect, ModelFallback,
    Notice, ResultLine, ResultUsage, Status, StreamCut, StreamEventLine, System, ToolsChanged,
    UserContent, UserLine, UserMessage,
};
use crate::api::types::ContentBlock;
use crate::event::{Event, ResultKind, RunResult};

/// The Claude Code release whose stream-json and control protocol ouro speaks: the Agent SDKs
/// read `claude_code_version` from `system/init` to know which features they can use.
pub const CLAUDE_CODE_COMPAT_VERSION: &str = "2.1.197";

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn envelope(session_id: &str) -> Envelope {
    Envelope {
        session_id: session_id.to_string(),
        uuid: uuid(),
    }
}

fn to_values<T: serde::Serialize>(items: &[T]) -> Vec<Value> {
    items
        .iter()
        .filter_map(|i| serde_json::to_value(i).ok())
        .collect()
}

fn user_line(session_id: &str, blocks: Vec<ContentBlock>) -> UserLine {
    UserLine {
        message: UserMessage {
            role: "user".into(),
            content: UserContent::Blocks(blocks),
        },
        parent_tool_use_id: None,
        session_id: session_id.to_string(),
        uuid: Some(uuid()),
        timestamp: None,
        is_synthetic: false,
        is_replay: false,
    }
}

/// The stream-json line for an event written to `out` with its newline, straight from its
/// typed form (a long answer is not held again as a JSON value); `Ok(false)` for events that
/// format has no line for (live deltas, progress). A result's line is also the whole output
/// of `--output-format json`.
pub fn write_line(
    event: &Event,
    session_id: &str,
    out: &mut impl std::io::Write,
) -> std::io::Result<bool> {
    let Some(line) = line(event, session_id) else {
        return Ok(false);
    };
    serde_json::to_writer(&mut *out, &line)?;
    out.write_all(b"\n")?;
    Ok(true)
}

/// The typed line for an event (see [`write_line`]).
pub fn line(event: &Event, session_id: &str) -> Option<Line> {
    let system = |s: System| Some(Line::System(s));
    match event {
        Event::Init(info) => system(System::Init(Init {
            cwd: info.cwd.clone(),
            tools: info.tools.clone(),
            mcp_servers: to_values(&info.mcp_servers),
            model: info.model.clone(),
            permission_mode: info.permission_mode.clone(),
            api_key_source: "ANTHROPIC_API_KEY".into(),
            output_style: if info.meta.output_style.is_empty() {
                "default".into()
            } else {
                info.meta.output_style.clone()
            },
            claude_code_version: CLAUDE_CODE_COMPAT_VERSION.into(),
            ouro_version: Some(env!("CARGO_PKG_VERSION").into()),
            more: Box::new(InitMore {
                additional_directories: Some(info.meta.additional_directories.clone()),
                agents: Some(info.meta.agents.iter().map(|a| a.name.clone()).collect()),
                skills: Some(info.meta.skills.clone()),
                slash_commands: Some(info.meta.skills.clone()),
                plugins: Some(Vec::new()),
                capabilities: Some(Vec::new()),
                memory_paths: Some(serde_json::Map::new()),
                original_cwd: Some(info.cwd.clone()),
                sandbox_enabled: Some(info.meta.sandbox_enabled),
                // ouro sends nothing anywhere but the API it is pointed at.
                analytics_disabled: Some(true),
                product_feedback_disabled: Some(true),
                served_by_anthropic: Some(false),
                fast_mode_state: Some("off".into()),
                fast_mode_disabled_reason: None,
                messaging_socket_path: None,
                terminal_slash_commands: Some(Vec::new()),
                per_turn_effort_active: Some(false),
                ultrathink_available: Some(false),
                ultrathink_typed_raises: Some(false),
                view_mode: Some("default".into()),
            }),
            envelope: Envelope {
                session_id: info.session_id.clone(),
                uuid: uuid(),
            },
        })),
        Event::ApiRetry(r) => system(System::ApiRetry(ApiRetry {
            attempt: r.attempt.into(),
            max_retries: r.max_retries.into(),
            retry_delay_ms: r.retry_delay_ms.into(),
            error_status: r.error_status,
            error: r.error.clone(),
            envelope: envelope(session_id),
        })),
        Event::StreamCut {
            error,
            kept_blocks,
            continuation,
        } => system(System::StreamCut(StreamCut {
            error: error.clone(),
            kept_blocks: *kept_blocks,
            continuation: *continuation,
            envelope: envelope(session_id),
        })),
        Event::HookStarted { id, name, event } => system(System::HookStarted(HookStarted {
            hook_id: id.clone(),
            hook_name: name.clone(),
            hook_event: event.clone(),
            envelope: envelope(session_id),
        })),
        Event::HookResponse {
            id,
            name,
            event,
            outcome,
            stdout,
            stderr,
            exit_code,
        } => system(System::HookResponse(HookResponse {
            hook_id: id.clone(),
            hook_name: name.clone(),
            hook_event: event.clone(),
            output: format!("{stdout}{stderr}"),
            stdout: stdout.clone(),
            stderr: stderr.clone(),
            exit_code: *exit_code,
            outcome: outcome.to_string(),
            envelope: envelope(session_id),
        })),
        Event::PromptReplay { text, uuid } => Some(Line::User(UserLine {
            uuid: Some(uuid.clone()),
            is_replay: true,
            ..user_line(session_id, vec![ContentBlock::text(text.clone())])
        })),
        Event::Notice(text) => system(System::Notice(Notice {
            message: text.clone(),
            envelope: envelope(session_id),
        })),
        Event::MemoryReflect(reflect) => system(System::MemoryReflect(MemoryReflect {
            reflect: reflect.clone(),
            envelope: envelope(session_id),
        })),
        Event::AutoReview(review) => system(System::AutoReview(AutoReview {
            review: review.clone(),
            envelope: envelope(session_id),
        })),
        Event::ToolsChanged { tools, mcp_servers } => system(System::ToolsChanged(ToolsChanged {
            tools: tools.clone(),
            mcp_servers: to_values(mcp_servers),
            envelope: envelope(session_id),
        })),
        Event::StreamEvent(raw) => Some(Line::StreamEvent(StreamEventLine {
            event: serde_json::to_value(raw).unwrap_or(Value::Null),
            parent_tool_use_id: None,
            envelope: envelope(session_id),
        })),
        Event::ModelFallback { from, to, reason } => system(System::ModelFallback(ModelFallback {
            from_model: from.clone(),
            model: to.clone(),
            reason: reason.clone(),
            envelope: envelope(session_id),
        })),
        Event::AssistantBlock {
            message_id,
            model,
            block,
            usage,
        } => Some(Line::Assistant(AssistantLine {
            message: AssistantMessage {
                id: message_id.clone(),
                kind: "message".into(),
                role: "assistant".into(),
                model: model.clone(),
                content: vec![block.clone()],
                stop_reason: None,
                stop_sequence: None,
                usage: *usage,
            },
            parent_tool_use_id: None,
            error: None,
            envelope: envelope(session_id),
        })),
        Event::ToolFinished { result, .. } => Some(Line::User(UserLine {
            timestamp: Some(
                chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            ),
            ..user_line(session_id, vec![result.clone()])
        })),
        Event::CompactStarted | Event::CompactFinished => system(System::Status(Status {
            status: matches!(event, Event::CompactStarted).then(|| "compacting".into()),
            compact_result: None,
            compact_error: None,
            envelope: envelope(session_id),
        })),
        Event::CompactBoundary(info) => system(System::CompactBoundary(CompactBoundary {
            compact_metadata: CompactMetadata {
                trigger: serde_json::to_value(info.trigger)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                pre_tokens: info.pre_tokens,
                messages_summarised: Some(info.messages_summarised),
                messages_kept: Some(info.messages_kept),
            },
            envelope: envelope(session_id),
        })),
        Event::SyntheticUser { text } => Some(Line::User(UserLine {
            is_synthetic: true,
            ..user_line(session_id, vec![ContentBlock::text(text.clone())])
        })),
        Event::Result(r) => Some(Line::Result(result_line(r))),
        // A sub-agent's messages, marked with the Agent call they belong to, as Claude Code
        // does; its own init and result stay inside the call.
        Event::Child {
            parent_tool_use_id,
            event,
        } => {
            let parent = Some(parent_tool_use_id.clone());
            match line(event, session_id)? {
                Line::Assistant(l) => Some(Line::Assistant(AssistantLine {
                    parent_tool_use_id: parent,
                    ..l
                })),
                Line::User(l) if matches!(**event, Event::ToolFinished { .. }) => {
                    Some(Line::User(UserLine {
                        parent_tool_use_id: parent,
                        ..l
                    }))
                }
                Line::StreamEvent(l) => Some(Line::StreamEvent(StreamEventLine {
                    parent_tool_use_id: parent,
                    ..l
                })),
                _ => None,
            }
        }
        Event::RequestStarted { .. }
        | Event::TextDelta { .. }
        | Event::ThinkingDelta { .. }
        | Event::MessageDone { .. }
        | Event::ToolStarted { .. }
        | Event::ToolProgress { .. }
        | Event::PermissionDenied(_) => None,
    }
}

/// Per model, in Claude Code's `modelUsage` shape.
fn model_usage(r: &RunResult) -> serde_json::Map<String, Value> {
    r.model_usage
        .iter()
        .map(|(model, (u, cost))| {
            let usage = ModelUsage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cache_read_input_tokens: u.cache_read_input_tokens,
                cache_creation_input_tokens: u.cache_creation_input_tokens,
                web_search_requests: 0,
                cost_usd: *cost,
                context_window: crate::api::models::context_window(model),
            };
            (
                model.clone(),
                serde_json::to_value(usage).unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// One model's entry in `modelUsage`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ModelUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_input_tokens: u64,
    cache_creation_input_tokens: u64,
    web_search_requests: u64,
    #[serde(rename = "costUSD")]
    cost_usd: f64,
    context_window: u64,
}

/// The typed `result` line.
pub(crate) fn result_line(r: &RunResult) -> ResultLine {
    ResultLine {
        subtype: subtype(r.kind),
        is_error: r.kind.is_error(),
        api_error_status: r.api_error_status,
        duration_ms: u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX),
        duration_api_ms: u64::try_from(r.api_duration.as_millis()).unwrap_or(u64::MAX),
        num_turns: r.num_turns.into(),
        result: Some(r.text.to_string()),
        stop_reason: r.stop_reason.map(|s| s.as_str().to_string()),
        session_id: r.session_id.clone(),
        total_cost_usd: Some(r.total_cost_usd),
        model_usage: model_usage(r),
        usage: Some(Box::new(ResultUsage {
            counts: r.usage,
            server_tool_use: Some(serde_json::json!({
                "web_search_requests": 0,
                "web_fetch_requests": 0
            })),
            service_tier: Some("standard".into()),
            // ouro asks for the default cache lifetime, five minutes.
            cache_creation: Some(serde_json::json!({
                "ephemeral_1h_input_tokens": 0,
                "ephemeral_5m_input_tokens": r.usage.cache_creation_input_tokens
            })),
            // Claude Code's empty forms: ouro has no value for these.
            output_tokens_details: Some(serde_json::json!({"thinking_tokens": 0})),
            inference_geo: Some(String::new()),
            iterations: Some(serde_json::json!([])),
            speed: Some("standard".into()),
            fallback_credit: Some(Value::Null),
        })),
        permission_denials: to_values(&r.permission_denials),
        structured_output: r.structured_output.clone(),
        cost_note: r.cost_unknown.then(|| {
            "this model has no pricing entry in ouro, so its cost is reported as 0".to_string()
        }),
        terminal_reason: Some(terminal_reason(r).to_string()),
        fast_mode_state: Some("off".into()),
        errors: r.kind.is_error().then(|| vec![r.text.to_string()]),
        num_tool_calls: None,
        uuid: uuid(),
    }
}

/// The `result` line's subtype. Claude Code reports a failed API call, a prompt too long among
/// them, as a "success" that is an error (`is_error`, `api_error_status`, the error as the
/// result): the SDKs' result types know no other subtype for it.
fn subtype(kind: ResultKind) -> String {
    match kind {
        ResultKind::ErrorApi | ResultKind::ErrorPromptTooLong => "success".into(),
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
    }
}

/// Why the loop ended, as the Agent SDKs' `TerminalReason` names it.
fn terminal_reason(r: &RunResult) -> &'static str {
    match r.kind {
        ResultKind::Success => "completed",
        ResultKind::ErrorMaxTurns => "max_turns",
        ResultKind::ErrorMaxBudgetUsd => "budget_exhausted",
        ResultKind::ErrorPromptTooLong => "prompt_too_long",
        ResultKind::ErrorAborted => "aborted_streaming",
        ResultKind::ErrorMaxStructuredOutputRetries => "structured_output_retry_exhausted",
        // As Claude Code: the loop completed, with the API's error as its answer.
        ResultKind::ErrorApi => "completed",
        ResultKind::ErrorMaxOutputTokens | ResultKind::ErrorDuringExecution => {
            if r.api_error_status.is_some() {
                "api_error"
            } else {
                "model_error"
            }
        }
    }
}
