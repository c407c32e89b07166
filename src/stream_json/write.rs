//! The writing half: the engine's events as Claude Code's stream-json lines, so existing
//! consumers work unchanged.

use serde_json::{Value, json};

use crate::api::types::{ContentBlock, Usage};
use crate::event::{Event, RunResult};

/// The Claude Code release whose stream-json and control protocol ouro speaks: the Agent SDKs
/// read `claude_code_version` from `system/init` to know which features they can use.
pub const CLAUDE_CODE_COMPAT_VERSION: &str = "2.1.197";

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "output_tokens": u.output_tokens,
    })
}

/// The stream-json line for an event, or `None` for events that format has no line for
/// (live deltas, progress).
pub fn render(event: &Event, session_id: &str) -> Option<Value> {
    Some(match event {
        Event::Init(info) => json!({
            "type": "system",
            "subtype": "init",
            "cwd": info.cwd,
            "session_id": info.session_id,
            "tools": info.tools,
            "mcp_servers": info.mcp_servers,
            "model": info.model,
            "permissionMode": info.permission_mode,
            "apiKeySource": "ANTHROPIC_API_KEY",
            "output_style": "default",
            "claude_code_version": CLAUDE_CODE_COMPAT_VERSION,
            "ouro_version": env!("CARGO_PKG_VERSION"),
            "uuid": uuid(),
        }),
        Event::ApiRetry(r) => json!({
            "type": "system",
            "subtype": "api_retry",
            "attempt": r.attempt,
            "max_retries": r.max_retries,
            "retry_delay_ms": r.retry_delay_ms,
            "error_status": r.error_status,
            "error": r.error,
            "session_id": session_id,
            "uuid": uuid(),
        }),
        Event::StreamCut {
            error,
            kept_blocks,
            continuation,
        } => json!({
            "type": "system",
            "subtype": "stream_cut",
            "error": error,
            "kept_blocks": kept_blocks,
            "continuation": continuation,
            "session_id": session_id,
            "uuid": uuid(),
        }),
        Event::HookStarted { id, name, event } => json!({
            "type": "system",
            "subtype": "hook_started",
            "hook_id": id,
            "hook_name": name,
            "hook_event": event,
            "session_id": session_id,
            "uuid": uuid(),
        }),
        Event::HookResponse {
            id,
            name,
            event,
            outcome,
            stdout,
            stderr,
            exit_code,
        } => json!({
            "type": "system",
            "subtype": "hook_response",
            "hook_id": id,
            "hook_name": name,
            "hook_event": event,
            "output": format!("{stdout}{stderr}"),
            "stdout": stdout,
            "stderr": stderr,
            "exit_code": exit_code,
            "outcome": outcome,
            "session_id": session_id,
            "uuid": uuid(),
        }),
        Event::PromptReplay { text, uuid } => json!({
            "type": "user",
            "message": {"role": "user", "content": [ContentBlock::text(text.clone())]},
            "parent_tool_use_id": null,
            "session_id": session_id,
            "uuid": uuid,
            "isReplay": true,
        }),
        Event::Notice(text) => json!({
            "type": "system",
            "subtype": "notice",
            "message": text,
            "session_id": session_id,
            "uuid": uuid(),
        }),
        Event::ToolsChanged { tools, mcp_servers } => json!({
            "type": "system",
            "subtype": "tools_changed",
            "tools": tools,
            "mcp_servers": mcp_servers,
            "session_id": session_id,
            "uuid": uuid(),
        }),
        Event::StreamEvent(raw) => json!({
            "type": "stream_event",
            "event": raw,
            "session_id": session_id,
            "parent_tool_use_id": null,
            "uuid": uuid(),
        }),
        Event::ModelFallback { from, to, reason } => json!({
            "type": "system",
            "subtype": "model_fallback",
            "from_model": from,
            "model": to,
            "reason": reason,
            "session_id": session_id,
            "uuid": uuid(),
        }),
        Event::AssistantBlock {
            message_id,
            model,
            block,
            usage,
        } => json!({
            "type": "assistant",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [block],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": usage_json(usage),
            },
            "parent_tool_use_id": null,
            "session_id": session_id,
            "uuid": uuid(),
        }),
        Event::ToolFinished { result, .. } => json!({
            "type": "user",
            "message": {"role": "user", "content": [result]},
            "parent_tool_use_id": null,
            "session_id": session_id,
            "uuid": uuid(),
            "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        }),
        Event::CompactStarted | Event::CompactFinished => json!({
            "type": "system",
            "subtype": "status",
            "status": match event {
                Event::CompactStarted => Value::from("compacting"),
                _ => Value::Null,
            },
            "session_id": session_id,
            "uuid": uuid(),
        }),
        Event::CompactBoundary(info) => json!({
            "type": "system",
            "subtype": "compact_boundary",
            "session_id": session_id,
            "uuid": uuid(),
            "compact_metadata": {
                "trigger": info.trigger,
                "pre_tokens": info.pre_tokens,
                "messages_summarised": info.messages_summarised,
                "messages_kept": info.messages_kept,
            },
        }),
        Event::SyntheticUser { text } => json!({
            "type": "user",
            "message": {"role": "user", "content": [ContentBlock::text(text.clone())]},
            "parent_tool_use_id": null,
            "session_id": session_id,
            "uuid": uuid(),
            "isSynthetic": true,
        }),
        Event::Result(r) => result(r),
        // A sub-agent's messages, marked with the Agent call they belong to, as Claude Code
        // does; its own init and result stay inside the call.
        Event::Child {
            parent_tool_use_id,
            event,
        } => match **event {
            Event::AssistantBlock { .. } | Event::ToolFinished { .. } | Event::StreamEvent(_) => {
                let mut line = render(event, session_id)?;
                line["parent_tool_use_id"] = Value::from(parent_tool_use_id.as_str());
                line
            }
            _ => return None,
        },
        Event::RequestStarted { .. }
        | Event::TextDelta { .. }
        | Event::ThinkingDelta { .. }
        | Event::MessageDone { .. }
        | Event::ToolStarted { .. }
        | Event::ToolProgress { .. }
        | Event::PermissionDenied(_) => return None,
    })
}

/// Per model, in Claude Code's `modelUsage` shape.
fn model_usage(r: &RunResult) -> Value {
    let mut out = serde_json::Map::new();
    for (model, (u, cost)) in &r.model_usage {
        out.insert(
            model.clone(),
            json!({
                "inputTokens": u.input_tokens,
                "outputTokens": u.output_tokens,
                "cacheReadInputTokens": u.cache_read_input_tokens,
                "cacheCreationInputTokens": u.cache_creation_input_tokens,
                "webSearchRequests": 0,
                "costUSD": cost,
                "contextWindow": crate::api::models::context_window(model),
            }),
        );
    }
    Value::Object(out)
}

/// The final `result` object (also the whole output of `--output-format json`).
pub fn result(r: &RunResult) -> Value {
    let mut v = json!({
        "type": "result",
        "subtype": r.kind,
        "is_error": r.kind.is_error(),
        "api_error_status": r.api_error_status,
        "duration_ms": r.duration.as_millis() as u64,
        "duration_api_ms": r.api_duration.as_millis() as u64,
        "num_turns": r.num_turns,
        "result": r.text,
        "stop_reason": r.stop_reason.map(|s| s.as_str()),
        "session_id": r.session_id,
        "total_cost_usd": r.total_cost_usd,
        "modelUsage": model_usage(r),
        "usage": usage_json(&r.usage),
        "permission_denials": r.permission_denials,
        "uuid": uuid(),
    });
    if let Some(output) = &r.structured_output {
        v["structured_output"] = output.clone();
    }
    if r.cost_unknown {
        v["cost_note"] =
            json!("this model has no pricing entry in ouro, so its cost is reported as 0");
    }
    v
}
