//! `get_context_usage`: how full the context window is, in the shape of the SDK's
//! `ContextUsageResponse`. The turn loop refreshes the figures after each turn, so the answer
//! is immediate, and during a turn it describes the context as the turn started.

use serde_json::{Value, json};

use crate::api::models;
use crate::engine::Engine;

pub(super) fn report(engine: &Engine) -> Value {
    let model = &engine.config().model;
    let window = models::context_window(model);
    let (prompt, messages) = engine.context_use();
    let used = prompt + messages;
    let threshold = engine.config().auto_compact_threshold;
    let auto_compact = threshold > 0.0 && threshold < 1.0;
    let category = |name: &str, tokens: u64, color: &str| json!({"name": name, "tokens": tokens, "color": color});
    let mut out = json!({
        "categories": [
            category("System prompt and tools", prompt, "promptBorder"),
            category("Messages", messages, "purple"),
            category("Free space", window.saturating_sub(used), "promptBorder"),
        ],
        "totalTokens": used,
        "maxTokens": window,
        "rawMaxTokens": window,
        "percentage": used as f64 * 100.0 / window.max(1) as f64,
        "model": model,
        "isAutoCompactEnabled": auto_compact,
        "memoryFiles": [],
        "mcpTools": [],
        "agents": [],
        "gridRows": [],
    });
    if auto_compact {
        out["autoCompactThreshold"] = ((window as f64 * threshold) as u64).into();
    }
    out
}
