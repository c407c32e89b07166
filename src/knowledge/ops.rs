//! Graph operations: what `ouro memory apply` reads and the reflect step returns. One array is
//! one transaction; the first bad operation is named by its index and nothing is applied.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{EdgeKind, NodeKind};

/// Longest texts a node keeps: memory is for short, reusable knowledge, not transcripts.
const MAX_ID: usize = 120;
const MAX_NAME: usize = 200;
const MAX_DESCRIPTION: usize = 4_000;
const MAX_SNIPPET: usize = 8_000;
/// Most operations one array may carry.
pub const MAX_OPERATIONS: usize = 500;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Operation {
    AddNode {
        #[serde(rename = "type")]
        kind: NodeKind,
        id: String,
        properties: Properties,
    },
    AddEdge {
        source: String,
        target: String,
        #[serde(rename = "type")]
        kind: EdgeKind,
    },
    InvalidateEdge {
        source: String,
        target: String,
        #[serde(rename = "type")]
        kind: EdgeKind,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Properties {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_snippet: Option<String>,
}

/// Why an array of operations was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OpsError {
    #[error("the operations must be a JSON array (or an object with an \"operations\" array)")]
    NotAnArray,
    #[error("{0} operations are more than the {MAX_OPERATIONS} one array may carry")]
    TooMany(usize),
    #[error("operation {index}: {reason}")]
    Bad { index: usize, reason: String },
}

/// The operations in `value`: an array, or `{"operations": [...]}`. Every element is checked
/// before any is returned.
pub fn parse(value: &Value) -> Result<Vec<Operation>, OpsError> {
    let items = match value {
        Value::Array(items) => items,
        Value::Object(map) => match map.get("operations") {
            Some(Value::Array(items)) => items,
            _ => return Err(OpsError::NotAnArray),
        },
        _ => return Err(OpsError::NotAnArray),
    };
    if items.len() > MAX_OPERATIONS {
        return Err(OpsError::TooMany(items.len()));
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let op: Operation =
                serde_json::from_value(item.clone()).map_err(|e| OpsError::Bad {
                    index,
                    reason: e.to_string(),
                })?;
            check(&op).map_err(|reason| OpsError::Bad { index, reason })?;
            Ok(op)
        })
        .collect()
}

/// The semantic checks the schema cannot make.
fn check(op: &Operation) -> Result<(), String> {
    match op {
        Operation::AddNode { id, properties, .. } => check_node(
            id,
            &properties.name,
            &properties.description,
            properties.code_snippet.as_deref(),
        ),
        Operation::AddEdge { source, target, .. }
        | Operation::InvalidateEdge { source, target, .. } => check_edge(source, target),
    }
}

/// What every memory must be, however it comes in (an operation, an import): an id that is a
/// key, a name, and texts within their limits.
pub fn check_node(
    id: &str,
    name: &str,
    description: &str,
    snippet: Option<&str>,
) -> Result<(), String> {
    check_id("id", id)?;
    if name.trim().is_empty() {
        return Err("properties.name is empty".into());
    }
    limit("properties.name", name, MAX_NAME)?;
    limit("properties.description", description, MAX_DESCRIPTION)?;
    if let Some(snippet) = snippet {
        limit("properties.code_snippet", snippet, MAX_SNIPPET)?;
    }
    Ok(())
}

/// What every relation must be: between two memories, not one and itself.
pub fn check_edge(source: &str, target: &str) -> Result<(), String> {
    check_id("source", source)?;
    check_id("target", target)?;
    if source == target {
        return Err(format!("an edge from {source:?} to itself"));
    }
    Ok(())
}

fn check_id(field: &str, id: &str) -> Result<(), String> {
    if id.trim().is_empty() {
        return Err(format!("{field} is empty"));
    }
    if id.chars().any(char::is_control) {
        return Err(format!("{field} {id:?} has control characters"));
    }
    // An id is a key: a secret in it could be neither kept (memory keeps none) nor redacted
    // (two would become one). It is not repeated here either.
    if crate::sys::secrets::find_in_text(id).is_some() {
        return Err(format!(
            "{field} looks like an access token or key; name the memory with words instead"
        ));
    }
    limit(field, id, MAX_ID)
}

fn limit(field: &str, text: &str, max: usize) -> Result<(), String> {
    let n = text.chars().count();
    if n > max {
        return Err(format!(
            "{field} has {n} characters; at most {max} are kept"
        ));
    }
    Ok(())
}

/// The JSON Schema of one operation, for the reflect prompt and the docs.
pub fn schema() -> Value {
    schemars::schema_for!(Operation).to_value()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arrays_and_wrapped_arrays_parse_and_a_bad_element_is_named_by_index() {
        let ops = json!([
            {"op": "add_node", "type": "Strategy", "id": "s1", "properties": {"name": "Bisect"}},
            {"op": "add_edge", "source": "s1", "target": "t1", "type": "USES"},
            {"op": "invalidate_edge", "source": "s1", "target": "t1", "type": "USES"},
        ]);
        assert_eq!(parse(&ops).unwrap().len(), 3);
        assert_eq!(parse(&json!({"operations": ops})).unwrap().len(), 3);
        let bad = json!([
            {"op": "add_node", "type": "Strategy", "id": "s1", "properties": {"name": "x"}},
            {"op": "add_node", "type": "Gadget", "id": "s2", "properties": {"name": "x"}},
        ]);
        let err = parse(&bad).unwrap_err();
        assert!(matches!(err, OpsError::Bad { index: 1, .. }), "{err}");
        assert!(err.to_string().starts_with("operation 1:"), "{err}");
        let unknown =
            json!([{"op": "add_edge", "source": "a", "target": "b", "type": "USES", "x": 1}]);
        assert!(matches!(
            parse(&unknown),
            Err(OpsError::Bad { index: 0, .. })
        ));
        let selfish = json!([{"op": "add_edge", "source": "a", "target": "a", "type": "USES"}]);
        assert!(parse(&selfish).is_err());
        assert_eq!(parse(&json!("x")), Err(OpsError::NotAnArray));
        let empty_name =
            json!([{"op": "add_node", "type": "Fact", "id": "f", "properties": {"name": " "}}]);
        assert!(parse(&empty_name).is_err());
    }
}
