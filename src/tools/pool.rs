//! The built-in tool pool, and narrowing it to what a session allows.

use std::sync::Arc;

use super::edit::EditTool;
use super::glob::GlobTool;
use super::grep::GrepTool;
use super::read::ReadTool;
use super::write::WriteTool;
use super::{DynTool, erase};

/// Every built-in tool, sorted by name so the tool list (and the prompt prefix it becomes)
/// is identical from one request to the next.
pub fn builtin_tools() -> Vec<Arc<dyn DynTool>> {
    let mut tools = vec![
        erase(super::bash::BashTool),
        erase(EditTool),
        erase(GlobTool),
        erase(GrepTool),
        erase(ReadTool),
        erase(WriteTool),
        erase(super::todo::TodoWriteTool),
    ];
    tools.sort_by(|a, b| a.name().cmp(b.name()));
    tools
}

/// Keeps the tools named in `only` (all when `None`), minus those named in `deny`, sorted by
/// name.
pub fn select(
    tools: Vec<Arc<dyn DynTool>>,
    only: Option<&[String]>,
    deny: &[String],
) -> Vec<Arc<dyn DynTool>> {
    let mut kept: Vec<Arc<dyn DynTool>> = tools
        .into_iter()
        .filter(|tool| only.is_none_or(|names| names.iter().any(|n| named(n, tool.name()))))
        .filter(|tool| !deny.iter().any(|n| named(n, tool.name())))
        .collect();
    kept.sort_by(|a, b| a.name().cmp(b.name()));
    kept
}

/// Whether `name`, as a user wrote it, names the tool called `tool`.
pub fn named(name: &str, tool: &str) -> bool {
    crate::permissions::canonical_tool(name) == tool
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tools: &[Arc<dyn DynTool>]) -> Vec<&str> {
        tools.iter().map(|t| t.name()).collect()
    }

    #[test]
    fn builtins_are_sorted_and_have_object_schemas() {
        let tools = builtin_tools();
        let listed = names(&tools);
        let mut sorted = listed.clone();
        sorted.sort_unstable();
        assert_eq!(listed, sorted);
        for name in ["Edit", "Glob", "Grep", "Read", "Write"] {
            assert!(listed.contains(&name), "{name} missing from {listed:?}");
        }
        for tool in &tools {
            assert_eq!(tool.input_schema()["type"], "object", "{}", tool.name());
            assert!(!tool.description().trim().is_empty(), "{}", tool.name());
            // The validator is compiled on the first check: each derived schema compiles,
            // and a wrong input is refused by it.
            assert!(
                tool.check_schema(&serde_json::json!([])).is_err(),
                "{}",
                tool.name()
            );
        }
    }

    #[test]
    fn select_applies_only_then_deny() {
        let only = vec!["Write".to_string(), "Read".to_string(), "Grep".to_string()];
        let deny = vec!["Grep".to_string()];
        let picked = select(builtin_tools(), Some(&only), &deny);
        assert_eq!(names(&picked), vec!["Read", "Write"]);
        let all_but_edit = select(builtin_tools(), None, &["Edit".to_string()]);
        assert!(!names(&all_but_edit).contains(&"Edit"));
        assert_eq!(all_but_edit.len(), builtin_tools().len() - 1);
    }
}
