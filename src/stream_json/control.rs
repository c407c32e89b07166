//! The Agent SDK's control protocol as serde types: the requests either side sends inside a
//! `control_request` line and the answers inside a `control_response` line (see the `wire`
//! module for the lines themselves).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request of the control protocol: the SDK's to ouro (`initialize`, `interrupt`, …) or
/// ouro's to the SDK (`can_use_tool`, `hook_callback`, `mcp_message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlRequest {
    pub request_id: String,
    /// Kept as JSON until [`ControlRequest::body`] reads it, so a request of a kind ouro does
    /// not know still has an id to answer with an error.
    pub request: Value,
}

impl ControlRequest {
    pub fn new(request_id: String, body: &RequestBody) -> ControlRequest {
        ControlRequest {
            request_id,
            request: serde_json::to_value(body).unwrap_or(Value::Null),
        }
    }

    /// The request's `subtype`, for messages about it.
    pub fn subtype(&self) -> &str {
        self.request
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub fn body(&self) -> Result<RequestBody, String> {
        RequestBody::deserialize(&self.request).map_err(|e| {
            if e.to_string().starts_with("unknown variant") {
                format!(
                    "ouro does not support the control request \"{}\" yet",
                    self.subtype()
                )
            } else {
                format!(
                    "the control request \"{}\" is malformed: {e}",
                    self.subtype()
                )
            }
        })
    }
}

/// What a control request asks, by `subtype`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum RequestBody {
    Initialize(Initialize),
    Interrupt {},
    SetPermissionMode {
        mode: String,
    },
    SetModel {
        #[serde(default)]
        model: Option<String>,
    },
    McpToggle {
        #[serde(rename = "serverName")]
        server_name: String,
        #[serde(default = "yes")]
        enabled: bool,
    },
    McpStatus {},
    McpReconnect {
        #[serde(rename = "serverName")]
        server_name: String,
    },
    GetContextUsage {},
    RewindFiles {
        user_message_id: String,
        #[serde(rename = "dryRun", alias = "dry_run", default)]
        dry_run: bool,
    },
    StopTask {
        #[serde(default)]
        task_id: Option<String>,
    },
    /// ouro asks whether a tool call may run (`--permission-prompt-tool stdio`).
    CanUseTool {
        tool_name: String,
        input: Value,
        #[serde(default)]
        permission_suggestions: Vec<PermissionUpdate>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision_reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<String>,
    },
    /// ouro runs a hook the SDK registered in `initialize`.
    HookCallback {
        callback_id: String,
        #[serde(default)]
        tool_use_id: Option<String>,
        input: Value,
    },
    /// A JSON-RPC message to or from an in-process SDK MCP server.
    McpMessage {
        server_name: String,
        message: Value,
    },
}

fn yes() -> bool {
    true
}

/// `initialize`: the SDK's hooks, and (TypeScript SDK) options it sends here rather than as
/// flags.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Initialize {
    /// `{"PreToolUse": [{"matcher", "hookCallbackIds", "timeout"}]}`.
    #[serde(default)]
    pub hooks: Option<std::collections::BTreeMap<String, Vec<HookGroup>>>,
    /// A text, or a list of texts joined by blank lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<SystemPrompt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<serde_json::Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sdk_mcp_servers: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SystemPrompt {
    Text(String),
    Parts(Vec<String>),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookGroup {
    #[serde(default)]
    pub matcher: Option<String>,
    #[serde(default)]
    pub hook_callback_ids: Vec<String>,
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// A rule change offered with a permission question (`permission_suggestions`) or made with
/// its answer (`updatedPermissions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PermissionUpdate {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// `Bash(npm test:*)` as `{"toolName": "Bash", "ruleContent": "npm test:*"}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleValue {
    pub tool_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_content: Option<String>,
}

impl RuleValue {
    /// As a rule is written: `Bash(npm test:*)`, or the tool alone.
    pub fn text(&self) -> String {
        match &self.rule_content {
            Some(content) => format!("{}({content})", self.tool_name),
            None => self.tool_name.clone(),
        }
    }

    pub fn parse(rule: &str) -> RuleValue {
        match rule.split_once('(') {
            Some((tool, rest)) => RuleValue {
                tool_name: tool.to_string(),
                rule_content: Some(rest.strip_suffix(')').unwrap_or(rest).to_string()),
            },
            None => RuleValue {
                tool_name: rule.to_string(),
                rule_content: None,
            },
        }
    }
}

/// The SDK's answer to `can_use_tool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "behavior",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum PermissionResult {
    Allow {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        updated_input: Option<Value>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        updated_permissions: Vec<PermissionUpdate>,
    },
    Deny {
        #[serde(default)]
        message: Option<String>,
        #[serde(default, skip_serializing_if = "is_false")]
        interrupt: bool,
    },
}

/// The answer to a control request, matched to it by `request_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlResponse {
    pub response: ResponseBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ResponseBody {
    Success {
        request_id: String,
        #[serde(default)]
        response: Value,
    },
    Error {
        request_id: String,
        #[serde(default)]
        error: String,
    },
}

impl ControlResponse {
    pub fn to(request_id: String, outcome: Result<Value, String>) -> ControlResponse {
        ControlResponse {
            response: match outcome {
                Ok(response) => ResponseBody::Success {
                    request_id,
                    response,
                },
                Err(error) => ResponseBody::Error { request_id, error },
            },
        }
    }

    pub fn request_id(&self) -> &str {
        match &self.response {
            ResponseBody::Success { request_id, .. } | ResponseBody::Error { request_id, .. } => {
                request_id
            }
        }
    }

    pub fn outcome(self) -> Result<Value, String> {
        match self.response {
            ResponseBody::Success { response, .. } => Ok(response),
            ResponseBody::Error { error, .. } => Err(error),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ControlCancel {
    #[serde(default)]
    pub request_id: String,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn field_names_are_the_sdks_camel_case() {
        let rule = serde_json::to_value(RuleValue::parse("Bash(npm test:*)")).unwrap();
        assert_eq!(
            rule,
            json!({"toolName": "Bash", "ruleContent": "npm test:*"})
        );
        let allow: PermissionResult = serde_json::from_value(json!({
            "behavior": "allow", "updatedInput": {"a": 1},
            "updatedPermissions": [{"type": "addRules", "rules": [{"toolName": "Read"}]}]
        }))
        .unwrap();
        let PermissionResult::Allow {
            updated_input,
            updated_permissions,
        } = allow
        else {
            panic!("not an allow")
        };
        assert_eq!(updated_input, Some(json!({"a": 1})));
        assert_eq!(updated_permissions[0].rules[0].tool_name, "Read");
        let init: Initialize = serde_json::from_value(json!({
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["h1"]}]},
            "appendSystemPrompt": "x", "jsonSchema": {}, "sdkMcpServers": ["calc"]
        }))
        .unwrap();
        assert_eq!(
            init.hooks.unwrap()["PreToolUse"][0].hook_callback_ids,
            ["h1"]
        );
        assert_eq!(init.append_system_prompt.as_deref(), Some("x"));
        assert_eq!(init.sdk_mcp_servers, ["calc"]);
        assert!(init.json_schema.is_some());
    }
}
