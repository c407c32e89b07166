//! The Memory view's data: the neighbourhood of a node, what a query recalls, or the newest
//! memories, as nodes and edges for the web app to draw. A project's memory is shown only
//! once the project is trusted.

use axum::Json;
use axum::extract::Query;
use serde::Deserialize;
use serde_json::{Value, json};

use super::error::ApiError;
use super::routes::project_root;
use crate::knowledge::Store;
use crate::knowledge::recall::{self, Found, Reach};

/// Memories the view shows without a query.
const NEWEST: usize = 20;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MemoryQuery {
    project_root: Option<String>,
    /// Words to recall.
    q: Option<String>,
    /// A node to centre on.
    id: Option<String>,
}

pub(super) async fn graph(Query(q): Query<MemoryQuery>) -> Result<Json<Value>, ApiError> {
    let raw = q
        .project_root
        .ok_or_else(|| ApiError::bad_request("projectRoot is required"))?;
    let root = project_root(&raw)?;
    if !crate::settings::trusted(&root) {
        return Ok(Json(
            json!({"trusted": false, "nodes": [], "edges": [], "text": "This project is not trusted: its memory is shown once it is (answer the trust question in the REPL)."}),
        ));
    }
    let Some(path) = crate::knowledge::project_store(&root) else {
        return Err(ApiError::internal("ouro has no home folder for its memory"));
    };
    let found = tokio::task::spawn_blocking(move || -> Result<Option<Found>, String> {
        let Some(store) = Store::open_existing(&path).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let label = "project memory";
        let reach = Reach {
            nodes: 24,
            ..Reach::default()
        };
        let found = match (q.id.as_deref(), q.q.as_deref().map(str::trim)) {
            (Some(id), _) => {
                let seed = store.node(id).map_err(|e| e.to_string())?;
                recall::walk_from(&store, label, seed.into_iter().collect(), reach)
            }
            (None, Some(words)) if !words.is_empty() => {
                recall::walk(&store, label, words, None, reach)
            }
            _ => recall::newest(&store, label, NEWEST),
        };
        found.map(Some).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
    .map_err(ApiError::internal)?;
    let now = crate::knowledge::now();
    let (nodes, edges) = match found {
        Some(found) => (
            found
                .nodes
                .iter()
                .map(|n| {
                    json!({"id": n.id, "type": n.kind.as_str(), "name": n.name,
                        "description": n.description, "origin": n.origin.as_str(),
                        "age": crate::knowledge::age(n.updated_at, now)})
                })
                .collect::<Vec<_>>(),
            found
                .edges
                .iter()
                .map(|e| json!({"source": e.source, "target": e.target, "type": e.kind.as_str()}))
                .collect::<Vec<_>>(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    Ok(Json(
        json!({"trusted": true, "nodes": nodes, "edges": edges}),
    ))
}
