//! Recall: the model's read-only window on memory (the project's store once the project is
//! trusted, and the user's).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Progress, Tool, ToolContext, ToolError, ToolOutput};
use crate::knowledge::embed::{self, Embedder};
use crate::knowledge::recall::{self, Reach, Semantic};
use crate::knowledge::{Store, StoreError};
use crate::permissions::Access;

pub const NAME: &str = "Recall";

/// One store Recall reads: where it is and what it is called in answers.
struct Source {
    label: &'static str,
    path: PathBuf,
    /// Opened on the first call that finds the file.
    store: Mutex<Option<Store>>,
}

pub struct RecallTool {
    /// Shared with the blocking thread a call reads them on.
    sources: Arc<Vec<Source>>,
    /// Semantic seeds beside the keywords (`memory.embeddings`).
    embedder: Option<Arc<Embedder>>,
}

impl RecallTool {
    /// Recall over these stores, as (label, path); the files need not exist yet.
    pub fn new(stores: Vec<(&'static str, PathBuf)>, embedder: Option<Arc<Embedder>>) -> Self {
        RecallTool {
            embedder,
            sources: Arc::new(
                stores
                    .into_iter()
                    .map(|(label, path)| Source {
                        label,
                        path,
                        store: Mutex::new(None),
                    })
                    .collect(),
            ),
        }
    }
}

/// What `sources` hold for `query`. SQLite reads, and waits out another process's write for up
/// to its busy timeout: callers run it on a blocking thread.
fn recall(
    sources: &[Source],
    query: &str,
    semantic: Option<Semantic<'_>>,
    reach: Reach,
) -> Result<String, StoreError> {
    let mut found = Vec::new();
    for source in sources {
        let mut slot = crate::sys::sync::lock(&source.store);
        if slot.is_none() {
            *slot = Store::open_existing(&source.path)?;
        }
        if let Some(store) = slot.as_ref() {
            found.push(recall::walk(store, source.label, query, semantic, reach)?);
        }
    }
    Ok(recall::render(query, &found, crate::knowledge::now()))
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallInput {
    /// What to recall, in natural language.
    pub query: String,
    /// Also show relations that are no longer true (marked as such).
    #[serde(default)]
    pub history: bool,
}

impl Tool for RecallTool {
    type Input = RecallInput;

    const NAME: &'static str = NAME;

    fn description(&self) -> &'static str {
        include_str!("../../tools/Recall.md")
    }

    fn validate(&self, input: &RecallInput, _ctx: &ToolContext) -> Result<(), String> {
        if input.query.trim().is_empty() {
            return Err("query is empty: say what to recall".into());
        }
        Ok(())
    }

    fn access(&self, _input: &RecallInput, _ctx: &ToolContext) -> Access {
        Access::None
    }

    fn is_read_only(&self, _input: &RecallInput) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _input: &RecallInput) -> bool {
        true
    }

    fn summary(&self, input: &RecallInput) -> String {
        input.query.clone()
    }

    async fn call(
        &self,
        input: RecallInput,
        _ctx: &ToolContext,
        _progress: &Progress,
    ) -> Result<ToolOutput, ToolError> {
        let reach = Reach {
            history: input.history,
            ..Reach::default()
        };
        let vector = embed::query_vector(self.embedder.as_deref(), &input.query).await;
        let sources = self.sources.clone();
        let found = super::paths::blocking(move || {
            Ok(recall(&sources, &input.query, vector.semantic(), reach)
                .map(|text| text + &vector.unavailable))
        })
        .await?;
        match found {
            Ok(text) => Ok(ToolOutput::ok(text)),
            Err(e) => Ok(ToolOutput::error(format!("memory could not be read: {e}"))),
        }
    }
}
