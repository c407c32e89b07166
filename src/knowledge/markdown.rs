//! `ouro memory export --markdown`: the graph as a `MEMORY.md`-style page, one section per
//! kind, each memory a line with its relations under it, readable by people and by Claude
//! Code.

use std::collections::HashMap;
use std::fmt::Write;

use super::{Edge, Node, NodeKind};

pub fn render(title: &str, nodes: &[Node], edges: &[Edge]) -> String {
    let names: HashMap<&str, &str> = nodes
        .iter()
        .map(|n| (n.id.as_str(), n.name.as_str()))
        .collect();
    let mut out = format!("# {title}\n\n");
    if nodes.is_empty() {
        out.push_str("Nothing is remembered yet.\n");
        return out;
    }
    for kind in NodeKind::ALL {
        let of_kind: Vec<&Node> = nodes.iter().filter(|n| n.kind == kind).collect();
        if of_kind.is_empty() {
            continue;
        }
        let _ = writeln!(out, "## {}\n", heading(kind));
        for node in of_kind {
            let _ = write!(out, "- **{}** (`{}`)", one_line(&node.name), node.id);
            if !node.description.is_empty() {
                let _ = write!(out, ": {}", one_line(&node.description));
            }
            out.push('\n');
            for edge in edges
                .iter()
                .filter(|e| e.source == node.id && e.valid_to.is_none())
            {
                let target = names.get(edge.target.as_str()).copied().unwrap_or("?");
                let _ = writeln!(
                    out,
                    "  - {} **{}** (`{}`)",
                    edge.kind.as_str().to_lowercase().replace('_', " "),
                    one_line(target),
                    edge.target
                );
            }
            if let Some(code) = &node.code_snippet {
                let _ = writeln!(out, "\n  ```\n  {}\n  ```", code.replace('\n', "\n  "));
            }
        }
        out.push('\n');
    }
    out
}

fn heading(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Strategy => "Strategies",
        NodeKind::Tool => "Tools",
        NodeKind::Api => "APIs",
        NodeKind::Library => "Libraries",
        NodeKind::CodePattern => "Code patterns",
        NodeKind::FailureCase => "Failure cases",
        NodeKind::Fact => "Facts",
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
