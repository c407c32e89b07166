//! `--permission-prompt-tool stdio`: a question the permission engine would put to a user goes
//! to the SDK's `can_use_tool` callback instead.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::json;

use super::outgoing::Outgoing;
use crate::exec::{AskAnswer, AskRequest, Asker};

pub struct SdkAsker {
    pub outgoing: Arc<Outgoing>,
}

impl Asker for SdkAsker {
    fn ask(&self, request: AskRequest) -> BoxFuture<'_, AskAnswer> {
        Box::pin(async move {
            let suggestions = if request.suggested_rule.trim().is_empty() {
                json!([])
            } else {
                json!([{"type": "addRules", "behavior": "allow", "destination": "localSettings",
                        "rules": [rule_value(&request.suggested_rule)]}])
            };
            let asked = self
                .outgoing
                .request(json!({
                    "subtype": "can_use_tool",
                    "tool_name": request.tool,
                    "input": request.input,
                    "permission_suggestions": suggestions,
                    "decision_reason": request.reason,
                    "description": request.summary,
                }))
                .await;
            let answer = match asked {
                Ok(answer) => answer,
                Err(e) => {
                    return AskAnswer::Deny(Some(format!("The permission callback failed: {e}")));
                }
            };
            match answer["behavior"].as_str() {
                Some("allow") => {
                    if let Some(input) = answer
                        .get("updatedInput")
                        .filter(|i| i.is_object() && **i != request.input)
                    {
                        return AskAnswer::AllowChanged(input.clone());
                    }
                    let saves = answer["updatedPermissions"]
                        .as_array()
                        .is_some_and(|updates| !updates.is_empty());
                    if saves {
                        AskAnswer::AllowAlways
                    } else {
                        AskAnswer::AllowOnce
                    }
                }
                _ => AskAnswer::Deny(answer["message"].as_str().map(str::to_string)),
            }
        })
    }
}

/// `Bash(npm test:*)` as the SDK's rule value: `{"toolName": "Bash", "ruleContent": "npm test:*"}`.
fn rule_value(rule: &str) -> serde_json::Value {
    match rule.split_once('(') {
        Some((tool, rest)) => {
            json!({"toolName": tool, "ruleContent": rest.strip_suffix(')').unwrap_or(rest)})
        }
        None => json!({"toolName": rule}),
    }
}
