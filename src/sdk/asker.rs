//! `--permission-prompt-tool stdio`: a question the permission engine would put to a user goes
//! to the SDK's `can_use_tool` callback instead.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::outgoing::Outgoing;
use crate::exec::{AskAnswer, AskRequest, Asker};
use crate::stream_json::wire::{PermissionResult, PermissionUpdate, RequestBody, RuleValue};

pub struct SdkAsker {
    pub outgoing: Arc<Outgoing>,
}

impl Asker for SdkAsker {
    fn ask(&self, request: AskRequest) -> BoxFuture<'_, AskAnswer> {
        Box::pin(async move {
            let suggestions = if request.suggested_rule.trim().is_empty() {
                Vec::new()
            } else {
                vec![PermissionUpdate {
                    kind: "addRules".into(),
                    behavior: Some("allow".into()),
                    destination: Some("localSettings".into()),
                    rules: vec![RuleValue::parse(&request.suggested_rule)],
                    mode: None,
                }]
            };
            let asked = self
                .outgoing
                .request(RequestBody::CanUseTool {
                    tool_name: request.tool.clone(),
                    input: request.input.clone(),
                    permission_suggestions: suggestions,
                    decision_reason: Some(request.reason.clone()),
                    description: Some(request.summary.clone()),
                    tool_use_id: Some(request.tool_use_id.clone()),
                })
                .await
                .and_then(|answer| {
                    serde_json::from_value::<PermissionResult>(answer)
                        .map_err(|e| format!("its answer is malformed: {e}"))
                });
            match asked {
                Err(e) => AskAnswer::Deny(Some(format!("The permission callback failed: {e}"))),
                Ok(PermissionResult::Allow {
                    updated_input: Some(input),
                    ..
                }) if input.is_object() && input != request.input => AskAnswer::AllowChanged(input),
                Ok(PermissionResult::Allow {
                    updated_permissions,
                    ..
                }) if !updated_permissions.is_empty() => {
                    let chosen = updated_permissions
                        .iter()
                        .flat_map(|u| &u.rules)
                        .next()
                        .map(RuleValue::text);
                    // Kept where the SDK says: `session` is this process's memory alone.
                    if updated_permissions
                        .iter()
                        .all(|u| u.destination.as_deref() == Some("session"))
                    {
                        AskAnswer::AllowForSession(chosen)
                    } else {
                        chosen.map_or(AskAnswer::AllowAlways, AskAnswer::AllowRule)
                    }
                }
                Ok(PermissionResult::Allow { .. }) => AskAnswer::AllowOnce,
                Ok(PermissionResult::Deny { message, interrupt }) => {
                    // "Deny, and stop": the turn ends now instead of asking the model again.
                    if interrupt {
                        self.outgoing.interrupt_turn();
                    }
                    AskAnswer::Deny(message)
                }
            }
        })
    }
}
