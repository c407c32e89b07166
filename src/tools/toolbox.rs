//! The tools a session offers: the built-in ones, plus those of a source whose tools come and
//! go while the session runs (MCP servers that connect after the first request).

use std::sync::Arc;

use super::DynTool;
pub use crate::event::ServerStatus;
use futures::future::BoxFuture;

/// Tools that appear while the session runs.
pub trait ToolSource: Send + Sync {
    fn tools(&self) -> Vec<Arc<dyn DynTool>>;
    /// Changes whenever `tools` may have.
    fn generation(&self) -> u64;
    /// Waits until nothing is still connecting, at most the source's own start-up wait.
    fn settle(&self) -> BoxFuture<'_, ()>;
    fn servers(&self) -> Vec<ServerStatus>;
}

#[derive(Clone, Default)]
pub struct Toolbox {
    builtin: Vec<Arc<dyn DynTool>>,
    source: Option<Arc<dyn ToolSource>>,
}

impl From<Vec<Arc<dyn DynTool>>> for Toolbox {
    fn from(builtin: Vec<Arc<dyn DynTool>>) -> Toolbox {
        Toolbox {
            builtin,
            source: None,
        }
    }
}

impl Toolbox {
    /// One more tool, of those that need the rest of the session to exist first (Agent).
    pub fn with_tool(mut self, tool: Arc<dyn DynTool>) -> Toolbox {
        self.builtin.push(tool);
        self
    }

    pub fn with_source(mut self, source: Arc<dyn ToolSource>) -> Toolbox {
        self.source = Some(source);
        self
    }

    /// Every tool offered now, sorted by name so the prompt prefix stays stable.
    pub fn all(&self) -> Vec<Arc<dyn DynTool>> {
        let mut all = self.builtin.clone();
        if let Some(source) = &self.source {
            all.extend(source.tools());
        }
        all.sort_by(|a, b| a.name().cmp(b.name()));
        all
    }

    pub fn find(&self, name: &str) -> Option<Arc<dyn DynTool>> {
        if let Some(tool) = self.builtin.iter().find(|t| t.name() == name) {
            return Some(tool.clone());
        }
        self.source
            .as_ref()?
            .tools()
            .into_iter()
            .find(|t| t.name() == name)
    }

    pub fn generation(&self) -> u64 {
        self.source.as_ref().map_or(0, |s| s.generation())
    }

    pub async fn settle(&self) {
        if let Some(source) = &self.source {
            source.settle().await;
        }
    }

    pub fn servers(&self) -> Vec<ServerStatus> {
        self.source
            .as_ref()
            .map(|s| s.servers())
            .unwrap_or_default()
    }
}
