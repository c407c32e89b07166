//! `StructuredOutput` (`--json-schema`): the tool the model calls with its final answer, whose
//! input schema is the caller's. A call that does not match is refused with what is wrong, and
//! the engine ends the run once a call succeeds, or after too many refusals, as Claude Code
//! does.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;

use super::{DynTool, PreparedCall, Progress, ToolContext, ToolError, ToolOutput};
use crate::permissions::Access;
use crate::sys::sync::lock;

pub const NAME: &str = "StructuredOutput";

/// What the calls of one run produced: the accepted answer, and how many were refused.
#[derive(Debug, Default)]
pub struct Outcome {
    pub value: Option<Value>,
    pub refused: u32,
}

/// Shared by the tool (which fills it) and the engine (which ends the run on it).
pub type Slot = Arc<Mutex<Outcome>>;

pub struct StructuredOutputTool {
    schema: Value,
    validator: jsonschema::Validator,
    slot: Slot,
}

impl StructuredOutputTool {
    /// `Err` says why `schema` cannot be a tool's input schema.
    pub fn new(schema: Value, slot: Slot) -> Result<StructuredOutputTool, String> {
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err("--json-schema must describe an object (\"type\": \"object\"): it becomes the input of the StructuredOutput tool".into());
        }
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| format!("--json-schema is not a valid JSON Schema: {e}"))?;
        Ok(StructuredOutputTool {
            schema,
            validator,
            slot,
        })
    }
}

impl DynTool for StructuredOutputTool {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        include_str!("../../tools/StructuredOutput.md")
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn summarize(&self, _input: &Value) -> Option<String> {
        Some("the final answer".into())
    }

    /// The schema is checked in phase 2, where a refusal is counted.
    fn check_schema(&self, _input: &Value) -> Result<(), String> {
        Ok(())
    }

    fn prepare(&self, input: &Value, _ctx: &ToolContext) -> Result<Box<dyn PreparedCall>, String> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(input)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        if !problems.is_empty() {
            lock(&self.slot).refused += 1;
            return Err(format!(
                "The output does not match the required schema: {}. Call StructuredOutput again with a corrected input.",
                problems.join("; ")
            ));
        }
        Ok(Box::new(Accepted {
            value: input.clone(),
            slot: self.slot.clone(),
        }))
    }
}

struct Accepted {
    value: Value,
    slot: Slot,
}

impl PreparedCall for Accepted {
    fn access(&self, _ctx: &ToolContext) -> Access {
        Access::None
    }

    fn is_read_only(&self) -> bool {
        true
    }

    fn is_concurrency_safe(&self) -> bool {
        true
    }

    fn is_destructive(&self) -> bool {
        false
    }

    fn max_result_chars(&self) -> usize {
        1000
    }

    fn summary(&self) -> String {
        "the final answer".into()
    }

    fn preview(&self, _ctx: &ToolContext) -> Option<String> {
        None
    }

    fn run<'a>(
        self: Box<Self>,
        _ctx: &'a ToolContext,
        _progress: &'a Progress,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            lock(&self.slot).value = Some(self.value);
            Ok(ToolOutput::ok("Structured output provided successfully"))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_matching_input_is_kept_and_a_wrong_one_refused_and_counted() {
        let slot = Slot::default();
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        let tool = StructuredOutputTool::new(schema, slot.clone()).unwrap();
        let ctx = ToolContext::new(std::env::temp_dir());
        let refused = tool.prepare(&json!({"n": "three"}), &ctx).err().unwrap();
        assert!(refused.contains("does not match"), "{refused}");
        assert_eq!(lock(&slot).refused, 1);
        let call = tool.prepare(&json!({"n": 3}), &ctx).ok().unwrap();
        let progress = Progress::new("t", None);
        let out = futures::executor::block_on(call.run(&ctx, &progress)).unwrap();
        assert!(!out.is_error);
        assert_eq!(lock(&slot).value, Some(json!({"n": 3})));
        assert!(StructuredOutputTool::new(json!({"type": "array"}), slot).is_err());
    }
}
