//! The checks the real Messages API applies before it runs a request, with its error texts.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};

/// The largest request body the real API accepts (32 MB).
pub(super) const MAX_BODY_BYTES: usize = crate::api::client::MAX_REQUEST_BYTES as usize;

/// An error response as the API sends it: status, error type and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ApiError {
    pub status: u16,
    pub kind: String,
    pub message: String,
}

impl ApiError {
    pub(super) fn invalid_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            kind: "invalid_request_error".into(),
            message: message.into(),
        }
    }

    /// The error the API sends with `status`; `message` replaces the usual text.
    pub(super) fn for_status(status: u16, message: Option<String>) -> ApiError {
        let (kind, usual) = match status {
            400 => ("invalid_request_error", "Invalid request."),
            401 => ("authentication_error", "invalid x-api-key"),
            403 => (
                "permission_error",
                "Your API key does not have permission to use the specified resource.",
            ),
            404 => ("not_found_error", "Not Found"),
            413 => (
                "request_too_large",
                "Request exceeds the maximum allowed number of bytes.",
            ),
            429 => (
                "rate_limit_error",
                "This request would exceed the rate limit for your organization. Please retry after the time in the retry-after header.",
            ),
            529 => ("overloaded_error", "Overloaded"),
            500..=599 => ("api_error", "Internal server error"),
            _ => ("invalid_request_error", "Invalid request."),
        };
        ApiError {
            status,
            kind: kind.into(),
            message: message.unwrap_or_else(|| usual.to_string()),
        }
    }

    /// An error of type `kind` (kept verbatim) with the status it has as a plain response.
    pub(super) fn for_type(kind: &str, message: Option<String>) -> ApiError {
        let status = match kind {
            "invalid_request_error" => 400,
            "authentication_error" => 401,
            "permission_error" => 403,
            "not_found_error" => 404,
            "request_too_large" => 413,
            "rate_limit_error" => 429,
            "overloaded_error" => 529,
            _ => 500,
        };
        ApiError {
            kind: kind.into(),
            ..ApiError::for_status(status, message)
        }
    }

    pub(super) fn prompt_too_long(tokens: u64, limit: u64) -> ApiError {
        ApiError::invalid_request(format!(
            "prompt is too long: {tokens} tokens > {limit} maximum"
        ))
    }

    pub(super) fn body(&self, request_id: &str) -> Value {
        json!({
            "type": "error",
            "error": {"type": self.kind, "message": self.message},
            "request_id": request_id,
        })
    }
}

/// Authentication and version headers (names lowercase).
pub(super) fn check_headers(headers: &BTreeMap<String, String>) -> Result<(), ApiError> {
    let has = |name: &str| headers.get(name).is_some_and(|v| !v.trim().is_empty());
    let bearer = headers
        .get("authorization")
        .is_some_and(|v| v.starts_with("Bearer ") && v.len() > "Bearer ".len());
    if !has("x-api-key") && !bearer {
        return Err(ApiError {
            status: 401,
            kind: "authentication_error".into(),
            message: "x-api-key header is required".into(),
        });
    }
    if !has("anthropic-version") {
        return Err(ApiError::invalid_request(
            "anthropic-version: header is required",
        ));
    }
    Ok(())
}

/// `thinking` and `output_config.effort` as the API takes them, for the model asked for.
fn check_reasoning(obj: &serde_json::Map<String, Value>) -> Result<(), ApiError> {
    use crate::api::models::{Thinking, capabilities};
    let model = obj.get("model").and_then(Value::as_str).unwrap_or("");
    let caps = capabilities(model);
    let max_tokens = obj.get("max_tokens").and_then(Value::as_u64).unwrap_or(0);
    if let Some(thinking) = obj.get("thinking") {
        match (thinking["type"].as_str(), caps.thinking) {
            (Some("adaptive"), Thinking::Adaptive { .. }) => {}
            (Some("enabled"), Thinking::Budget | Thinking::Adaptive { only: false }) => {
                let budget = thinking["budget_tokens"].as_u64().unwrap_or(0);
                if budget < 1024 || budget >= max_tokens {
                    return Err(ApiError::invalid_request(
                        "thinking.budget_tokens: must be at least 1024 and less than max_tokens",
                    ));
                }
            }
            (Some("disabled"), Thinking::Budget | Thinking::Adaptive { only: false }) => {}
            (kind, _) => {
                return Err(ApiError::invalid_request(format!(
                    "thinking.type: {} is not supported on {model}",
                    kind.unwrap_or("a missing type")
                )));
            }
        }
    }
    if let Some(config) = obj.get("output_config") {
        let effort = config["effort"].as_str().unwrap_or("");
        let known =
            matches!(effort, "low" | "medium" | "high") || (effort == "max" && caps.max_effort);
        if !caps.effort || !known {
            return Err(ApiError::invalid_request(format!(
                "output_config.effort: `{effort}` is not supported on {model}"
            )));
        }
    }
    Ok(())
}

/// The request body: required fields, message shapes and tool_use/tool_result pairing.
pub(super) fn check_body(body: &Value) -> Result<(), ApiError> {
    let Some(obj) = body.as_object() else {
        return Err(ApiError::invalid_request(
            "The request body must be a JSON object with model, max_tokens and messages.",
        ));
    };
    match obj.get("model") {
        None => return Err(ApiError::invalid_request("model: Field required")),
        Some(Value::String(m)) if !m.is_empty() => {}
        Some(_) => {
            return Err(ApiError::invalid_request(
                "model: Input should be a valid string",
            ));
        }
    }
    match obj.get("max_tokens") {
        None => return Err(ApiError::invalid_request("max_tokens: Field required")),
        Some(v) if v.as_u64().is_some_and(|n| n >= 1) => {}
        Some(_) => {
            return Err(ApiError::invalid_request(
                "max_tokens: Input should be a positive integer",
            ));
        }
    }
    check_reasoning(obj)?;
    check_system(obj.get("system"))?;
    let messages = match obj.get("messages") {
        None => return Err(ApiError::invalid_request("messages: Field required")),
        Some(Value::Array(m)) => m,
        Some(_) => {
            return Err(ApiError::invalid_request(
                "messages: Input should be a valid list",
            ));
        }
    };
    if messages.is_empty() {
        return Err(ApiError::invalid_request(
            "messages: at least one message is required",
        ));
    }
    let parsed = messages
        .iter()
        .enumerate()
        .map(|(i, m)| parse_message(i, m, i + 1 == messages.len()))
        .collect::<Result<Vec<_>, _>>()?;
    if parsed[0].role != "user" {
        return Err(ApiError::invalid_request(
            "messages: first message must use the \"user\" role",
        ));
    }
    // A system message (instructions inserted mid-conversation, as Claude Code sends them)
    // holds text only and stands outside the user/assistant pairing.
    for (i, msg) in parsed.iter().enumerate() {
        if msg.role == "system"
            && msg
                .blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) != Some("text"))
        {
            return Err(ApiError::invalid_request(format!(
                "messages.{i}: a system message may hold only text blocks"
            )));
        }
    }
    let parsed: Vec<Msg> = parsed.into_iter().filter(|m| m.role != "system").collect();
    check_pairing(&parsed)
}

struct Msg<'a> {
    role: &'a str,
    blocks: Vec<&'a Value>,
}

fn parse_message(i: usize, m: &Value, last: bool) -> Result<Msg<'_>, ApiError> {
    let role = match m.get("role").and_then(Value::as_str) {
        Some(r @ ("user" | "assistant" | "system")) => r,
        Some(_) => {
            return Err(ApiError::invalid_request(format!(
                "messages.{i}.role: Input should be 'user', 'assistant' or 'system'"
            )));
        }
        None => {
            return Err(ApiError::invalid_request(format!(
                "messages.{i}.role: Field required"
            )));
        }
    };
    let blocks: Vec<&Value> = match m.get("content") {
        Some(Value::String(text)) => {
            check_text(text)?;
            Vec::new()
        }
        Some(Value::Array(blocks)) => blocks.iter().collect(),
        Some(_) => {
            return Err(ApiError::invalid_request(format!(
                "messages.{i}.content: Input should be a valid string or list of content blocks"
            )));
        }
        None => {
            return Err(ApiError::invalid_request(format!(
                "messages.{i}.content: Field required"
            )));
        }
    };
    if matches!(m.get("content"), Some(Value::Array(b)) if b.is_empty())
        && !(last && role == "assistant")
    {
        return Err(ApiError::invalid_request(format!(
            "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
        )));
    }
    for (j, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            None => {
                return Err(ApiError::invalid_request(format!(
                    "messages.{i}.content.{j}.type: Field required"
                )));
            }
            Some("text") => check_text(block.get("text").and_then(Value::as_str).unwrap_or(""))?,
            Some(_) => {}
        }
    }
    Ok(Msg { role, blocks })
}

/// A system prompt given as blocks: each text block must hold text, as the API demands.
fn check_system(system: Option<&Value>) -> Result<(), ApiError> {
    for (i, block) in system
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let text = block["text"].as_str().unwrap_or_default();
        if text.trim().is_empty() {
            return Err(ApiError::invalid_request(format!(
                "system.{i}: text content blocks must be non-empty"
            )));
        }
    }
    Ok(())
}

fn check_text(text: &str) -> Result<(), ApiError> {
    if text.is_empty() {
        return Err(ApiError::invalid_request(
            "messages: text content blocks must be non-empty",
        ));
    }
    if text.trim().is_empty() {
        return Err(ApiError::invalid_request(
            "messages: text content blocks must contain non-whitespace text",
        ));
    }
    Ok(())
}

fn ids_of<'a>(msg: &Msg<'a>, kind: &str, field: &str) -> Vec<(usize, &'a str)> {
    msg.blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.get("type").and_then(Value::as_str) == Some(kind))
        .map(|(j, b)| (j, b.get(field).and_then(Value::as_str).unwrap_or("")))
        .collect()
}

/// Every tool_use must be answered in the very next message, and every tool_result must answer
/// a tool_use of the message right before it.
fn check_pairing(messages: &[Msg<'_>]) -> Result<(), ApiError> {
    for (i, msg) in messages.iter().enumerate() {
        if msg.role == "user" {
            let asked: HashSet<&str> = match i.checked_sub(1).map(|p| &messages[p]) {
                Some(prev) if prev.role == "assistant" => ids_of(prev, "tool_use", "id")
                    .into_iter()
                    .map(|(_, id)| id)
                    .collect(),
                _ => HashSet::new(),
            };
            for (j, id) in ids_of(msg, "tool_result", "tool_use_id") {
                if !asked.contains(id) {
                    return Err(ApiError::invalid_request(format!(
                        "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    )));
                }
            }
        } else {
            let answered: HashSet<&str> = match messages.get(i + 1) {
                Some(next) if next.role == "user" => ids_of(next, "tool_result", "tool_use_id")
                    .into_iter()
                    .map(|(_, id)| id)
                    .collect(),
                _ => HashSet::new(),
            };
            let missing: Vec<&str> = ids_of(msg, "tool_use", "id")
                .into_iter()
                .map(|(_, id)| id)
                .filter(|id| !answered.contains(id))
                .collect();
            if !missing.is_empty() {
                return Err(ApiError::invalid_request(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    missing.join(", ")
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(messages: Value) -> Value {
        json!({"model": "claude-test", "max_tokens": 1024, "messages": messages})
    }

    fn message_of(body: Value) -> String {
        check_body(&body).unwrap_err().message
    }

    fn tool_use(id: &str) -> Value {
        json!({"type": "tool_use", "id": id, "name": "Read", "input": {}})
    }

    fn tool_result(id: &str) -> Value {
        json!({"type": "tool_result", "tool_use_id": id, "content": "ok"})
    }

    #[test]
    fn a_well_formed_tool_exchange_passes() {
        let body = request(json!([
            {"role": "user", "content": "read it"},
            {"role": "assistant", "content": [{"type": "text", "text": "sure"}, tool_use("toolu_a"), tool_use("toolu_b")]},
            {"role": "user", "content": [tool_result("toolu_b"), tool_result("toolu_a")]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
            {"role": "user", "content": [{"type": "text", "text": "thanks"}]}
        ]));
        assert_eq!(check_body(&body), Ok(()));
    }

    #[test]
    fn unanswered_tool_use_gets_the_real_message() {
        let body = request(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {"role": "user", "content": "go on"},
            {"role": "assistant", "content": [tool_use("toolu_x"), tool_use("toolu_y")]},
            {"role": "user", "content": [tool_result("toolu_y"), {"type": "text", "text": "hm"}]}
        ]));
        assert_eq!(
            message_of(body),
            "messages.3: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_x. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
        );
    }

    #[test]
    fn trailing_tool_use_without_a_next_message_is_rejected() {
        let body = request(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [tool_use("toolu_x")]}
        ]));
        assert!(message_of(body).starts_with("messages.1: `tool_use` ids were found"));
    }

    #[test]
    fn stray_tool_result_gets_the_real_message() {
        let body = request(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [tool_use("toolu_x")]},
            {"role": "user", "content": [tool_result("toolu_x"), tool_result("toolu_zzz")]}
        ]));
        assert_eq!(
            message_of(body),
            "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_zzz. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
        );
        let body = request(json!([{"role": "user", "content": [tool_result("toolu_q")]}]));
        assert!(message_of(body).starts_with("messages.0.content.0: unexpected `tool_use_id`"));
    }

    #[test]
    fn required_fields_and_roles() {
        assert_eq!(
            message_of(json!({"max_tokens": 5, "messages": []})),
            "model: Field required"
        );
        assert_eq!(
            message_of(json!({"model": "m", "messages": []})),
            "max_tokens: Field required"
        );
        assert_eq!(
            message_of(request(json!([]))),
            "messages: at least one message is required"
        );
        assert_eq!(
            message_of(request(json!([{"role": "assistant", "content": "hi"}]))),
            "messages: first message must use the \"user\" role"
        );
        assert_eq!(
            message_of(request(json!([{"role": "system", "content": "hi"}]))),
            "messages: first message must use the \"user\" role"
        );
        assert_eq!(
            message_of(request(json!([{"role": "tool", "content": "hi"}]))),
            "messages.0.role: Input should be 'user', 'assistant' or 'system'"
        );
        let tool_use = json!({"type": "tool_use", "id": "t1", "name": "Read", "input": {}});
        assert_eq!(
            message_of(request(json!([
                {"role": "user", "content": "hi"},
                {"role": "system", "content": [tool_use]}
            ]))),
            "messages.1: a system message may hold only text blocks"
        );
        assert!(
            check_body(&request(json!([
                {"role": "user", "content": "hi"},
                {"role": "system", "content": "Agents you can start: explore"}
            ])))
            .is_ok(),
            "Claude Code's mid-conversation system message is accepted"
        );
        assert!(check_body(&json!([1, 2])).is_err());
    }

    #[test]
    fn empty_content_is_rejected_like_the_real_api() {
        assert_eq!(
            message_of(request(json!([{"role": "user", "content": ""}]))),
            "messages: text content blocks must be non-empty"
        );
        assert_eq!(
            message_of(request(
                json!([{"role": "user", "content": [{"type": "text", "text": " \n"}]}])
            )),
            "messages: text content blocks must contain non-whitespace text"
        );
        assert!(
            message_of(request(json!([{"role": "user", "content": []}])))
                .starts_with("messages.0: all messages must have non-empty content")
        );
        let prefill = request(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": []}
        ]));
        assert_eq!(check_body(&prefill), Ok(()));
    }

    #[test]
    fn headers_need_a_key_and_a_version() {
        let mut h = BTreeMap::new();
        let err = check_headers(&h).unwrap_err();
        assert_eq!(
            (err.status, err.kind.as_str()),
            (401, "authentication_error")
        );
        h.insert("x-api-key".to_string(), "sk-test".to_string());
        let err = check_headers(&h).unwrap_err();
        assert_eq!(err.message, "anthropic-version: header is required");
        h.insert("anthropic-version".to_string(), "2023-06-01".to_string());
        assert_eq!(check_headers(&h), Ok(()));
        h.remove("x-api-key");
        h.insert("authorization".to_string(), "Bearer tok".to_string());
        assert_eq!(check_headers(&h), Ok(()));
    }

    #[test]
    fn error_bodies_have_the_real_shape() {
        let e = ApiError::for_status(529, None);
        assert_eq!(
            e.body("req_1"),
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"})
        );
        assert_eq!(ApiError::for_status(500, None).kind, "api_error");
        assert_eq!(ApiError::for_status(429, None).kind, "rate_limit_error");
        assert_eq!(ApiError::for_type("overloaded_error", None).status, 529);
        let custom = ApiError::for_type("brand_new_error", Some("boom".into()));
        assert_eq!(
            (custom.status, custom.kind.as_str()),
            (500, "brand_new_error")
        );
        assert_eq!(
            ApiError::prompt_too_long(250_000, 200_000).message,
            "prompt is too long: 250000 tokens > 200000 maximum"
        );
    }

    #[test]
    fn an_empty_system_text_block_is_refused_as_the_api_does() {
        let body = |system: Value| {
            serde_json::json!({"model": "m", "max_tokens": 1, "system": system,
                "messages": [{"role": "user", "content": "hi"}]})
        };
        let err = check_body(&body(serde_json::json!([{"type": "text", "text": ""}]))).unwrap_err();
        assert!(err.message.contains("system.0"), "{}", err.message);
        check_body(&body(serde_json::json!([{"type": "text", "text": "x"}]))).unwrap();
        check_body(&body(serde_json::json!("plain"))).unwrap();
    }
}
