//! `--json-schema`: the final answer must be JSON matching a schema. The model gives it through
//! the StructuredOutput tool (`tools::structured_output`), as with Claude Code; an answer given
//! as text instead is checked here, and a failed check is sent back once with the validator's
//! findings.

use serde_json::Value;

/// StructuredOutput calls refused before the run ends with
/// `error_max_structured_output_retries`.
pub(crate) const MAX_REFUSALS: u32 = 5;

/// What the system prompt adds for a schema: an object schema is the StructuredOutput tool's
/// input; any other is asked for as the answer's text.
pub fn instruction(schema: &Value) -> String {
    if schema.get("type").and_then(Value::as_str) == Some("object") {
        format!(
            "When you give your final answer, call the StructuredOutput tool with it; its input must match this JSON Schema:\n{schema}"
        )
    } else {
        format!(
            "When you give your final answer, reply with only a JSON value (no prose, no code fence) that matches this JSON Schema:\n{schema}"
        )
    }
}

/// The answer as JSON that matches `schema`, or what is wrong with it.
pub fn check(schema: &Value, answer: &str) -> Result<Value, String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the --json-schema is not a valid JSON Schema: {e}"))?;
    let text = unfence(answer.trim());
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the answer is not JSON ({e})"))?;
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(format!(
            "the answer does not match the schema: {}",
            problems.join("; ")
        ))
    }
}

/// The request to answer again after a failed check.
pub(crate) fn retry_prompt(problem: &str) -> String {
    format!(
        "Your final answer could not be used: {problem}. Give it again by calling the StructuredOutput tool with an input that matches the schema."
    )
}

/// The text inside a Markdown code fence, if the whole answer is one.
fn unfence(text: &str) -> &str {
    let Some(inner) = text.strip_prefix("```").and_then(|t| t.strip_suffix("```")) else {
        return text;
    };
    // Drop the info string (`json`) on the opening line.
    inner
        .split_once('\n')
        .map_or(inner, |(_, body)| body)
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    }

    #[test]
    fn a_matching_answer_passes_fenced_or_not() {
        assert_eq!(check(&schema(), r#"{"n": 3}"#), Ok(json!({"n": 3})));
        assert_eq!(
            check(&schema(), "```json\n{\"n\": 4}\n```"),
            Ok(json!({"n": 4}))
        );
    }

    #[test]
    fn failures_say_what_is_wrong() {
        let e = check(&schema(), "three").unwrap_err();
        assert!(e.contains("not JSON"), "{e}");
        let e = check(&schema(), r#"{"n": "x"}"#).unwrap_err();
        assert!(e.contains("does not match") && e.contains("/n"), "{e}");
        let e = check(&json!({"type": 12}), "{}").unwrap_err();
        assert!(e.contains("not a valid JSON Schema"), "{e}");
    }
}
