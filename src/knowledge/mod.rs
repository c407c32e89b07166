//! Memory's knowledge graph, below the engine so the Recall tool, the engine's reflect step
//! and every front end share one store: nodes (strategies, tools, code patterns, failure
//! cases, facts) and typed edges, each with when it was true and when it was learned, in one
//! SQLite file per project and one per user.

pub mod embed;
pub mod markdown;
pub mod ops;
pub mod recall;
pub mod reflect;
pub mod store;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use ops::{Operation, OpsError};
pub use store::{Store, StoreError};

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, Hash)]
pub enum NodeKind {
    Strategy,
    Tool,
    #[serde(rename = "API")]
    Api,
    Library,
    CodePattern,
    FailureCase,
    Fact,
}

/// How two nodes relate: `source TYPE target`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, Hash)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EdgeKind {
    Implements,
    Uses,
    DependsOn,
    Solves,
    FailsOn,
    Improves,
    Supersedes,
}

impl NodeKind {
    pub const ALL: [NodeKind; 7] = [
        NodeKind::Strategy,
        NodeKind::Tool,
        NodeKind::Api,
        NodeKind::Library,
        NodeKind::CodePattern,
        NodeKind::FailureCase,
        NodeKind::Fact,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Strategy => "Strategy",
            NodeKind::Tool => "Tool",
            NodeKind::Api => "API",
            NodeKind::Library => "Library",
            NodeKind::CodePattern => "CodePattern",
            NodeKind::FailureCase => "FailureCase",
            NodeKind::Fact => "Fact",
        }
    }

    pub fn parse(text: &str) -> Option<NodeKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

impl EdgeKind {
    pub const ALL: [EdgeKind; 7] = [
        EdgeKind::Implements,
        EdgeKind::Uses,
        EdgeKind::DependsOn,
        EdgeKind::Solves,
        EdgeKind::FailsOn,
        EdgeKind::Improves,
        EdgeKind::Supersedes,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Implements => "IMPLEMENTS",
            EdgeKind::Uses => "USES",
            EdgeKind::DependsOn => "DEPENDS_ON",
            EdgeKind::Solves => "SOLVES",
            EdgeKind::FailsOn => "FAILS_ON",
            EdgeKind::Improves => "IMPROVES",
            EdgeKind::Supersedes => "SUPERSEDES",
        }
    }

    pub fn parse(text: &str) -> Option<EdgeKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// Who put a node or edge in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Typed by the user (`ouro memory add|apply|import`, the REPL's ask flow).
    User,
    /// Proposed by the reflect step from a turn that read no tool output.
    Reflect,
    /// Proposed by the reflect step from a turn whose tool results it saw: text a file or a
    /// command printed may be an injection, so Recall says where it came from.
    ToolOutput,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Reflect => "reflect",
            Origin::ToolOutput => "tool_output",
        }
    }

    fn parse(text: &str) -> Origin {
        match text {
            "reflect" => Origin::Reflect,
            "tool_output" => Origin::ToolOutput,
            _ => Origin::User,
        }
    }
}

/// Where a node or edge came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// A node as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: NodeKind,
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_snippet: Option<String>,
    pub origin: Origin,
    #[serde(flatten)]
    pub provenance: Provenance,
    /// Unix seconds.
    pub created_at: i64,
    pub updated_at: i64,
}

/// An edge as stored, with both time axes: `valid_to` ends when it stopped being true,
/// `expired_at` when the store learned that.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    pub source: String,
    pub target: String,
    #[serde(rename = "type")]
    pub kind: EdgeKind,
    pub valid_from: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<i64>,
    pub created_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_at: Option<i64>,
    pub origin: Origin,
}

/// `ouro memory export`'s document: everything, times and provenance kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Export {
    /// `ouro-memory/1`.
    pub schema: String,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

pub const EXPORT_SCHEMA: &str = "ouro-memory/1";

impl Export {
    /// What an import must be before any of it is kept: this format, and every memory and
    /// relation what an operation adding it would have to be (an export may come from anywhere).
    pub fn check(&self) -> Result<(), String> {
        if self.schema != EXPORT_SCHEMA {
            return Err(format!(
                "its schema is {:?}; this version reads {EXPORT_SCHEMA:?}",
                self.schema
            ));
        }
        for (i, node) in self.nodes.iter().enumerate() {
            ops::check_node(
                &node.id,
                &node.name,
                &node.description,
                node.code_snippet.as_deref(),
            )
            .map_err(|e| format!("memory {i}: {e}"))?;
        }
        for (i, edge) in self.edges.iter().enumerate() {
            ops::check_edge(&edge.source, &edge.target)
                .map_err(|e| format!("relation {i}: {e}"))?;
            if edge.valid_to.is_some_and(|to| to < edge.valid_from) {
                return Err(format!("relation {i}: it ends before it begins"));
            }
        }
        Ok(())
    }
}

/// The project's store: in ouro's home, keyed by the project's whole root (two projects whose
/// paths differ only in punctuation never share one), never inside the project (a clone must
/// not bring memories with it).
pub fn project_store(root: &Path) -> Option<PathBuf> {
    let folder = crate::settings::ouro_home()?
        .join("memory")
        .join("projects");
    let store = folder.join(crate::settings::project_key(root) + ".sqlite");
    // An earlier version's store, named by the readable part alone, moves to its key once.
    let earlier = folder.join(crate::settings::folder_name(root) + ".sqlite");
    if !store.exists() && earlier.is_file() {
        let with = |path: &Path, suffix: &str| {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            PathBuf::from(name)
        };
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::rename(with(&earlier, suffix), with(&store, suffix));
        }
    }
    Some(store)
}

/// The user's store, shared by every project.
pub fn user_store() -> Option<PathBuf> {
    crate::settings::ouro_home().map(|h| h.join("memory").join("user.sqlite"))
}

/// A memory file a session's Recall reads besides the project's and the user's (the second
/// pass of `ouro eval run --learn` hands its trials the first pass's memory this way).
pub const MEMORY_FILE_ENV: &str = "OURO_MEMORY_FILE";

/// The stores a session reads, labelled as Recall names them: the project's (when `project`:
/// it is trusted, or the user asked for it), the user's, and one handed over in
/// [`MEMORY_FILE_ENV`]. The files need not exist.
pub fn stores(root: &Path, project: bool) -> Vec<(&'static str, PathBuf)> {
    let mut stores = Vec::new();
    if project && let Some(path) = project_store(root) {
        stores.push(("project memory", path));
    }
    if let Some(path) = user_store() {
        stores.push(("your memory", path));
    }
    if let Some(path) = std::env::var_os(MEMORY_FILE_ENV) {
        stores.push(("shared memory", PathBuf::from(path)));
    }
    stores
}

/// Now, in Unix seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// How long ago `then` was, in words (`just now`, `5 minutes ago`, `3 days ago`).
pub fn age(then: i64, now: i64) -> String {
    let secs = (now - then).max(0);
    let (n, unit) = match secs {
        0..60 => return "just now".into(),
        60..3_600 => (secs / 60, "minute"),
        3_600..86_400 => (secs / 3_600, "hour"),
        86_400..2_592_000 => (secs / 86_400, "day"),
        2_592_000..31_536_000 => (secs / 2_592_000, "month"),
        _ => (secs / 31_536_000, "year"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_by_their_wire_names() {
        for kind in NodeKind::ALL {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, kind.as_str());
            assert_eq!(NodeKind::parse(kind.as_str()), Some(kind));
        }
        for kind in EdgeKind::ALL {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, kind.as_str());
            assert_eq!(EdgeKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(age(100, 100), "just now");
        assert_eq!(age(0, 7_200), "2 hours ago");
        assert_eq!(age(0, 86_400), "1 day ago");
    }
}
