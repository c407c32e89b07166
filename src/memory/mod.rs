//! `ouro memory …`: the user's view of and control over the knowledge graph — list, search,
//! show (with history), forget, add, apply operations, export (JSON or Markdown), import, and
//! recall as the model sees it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::knowledge::embed::{self, EmbedError, Embedder};
use crate::knowledge::recall::{self, Reach};
use crate::knowledge::{
    EXPORT_SCHEMA, Export, Node, NodeKind, Operation, Origin, Provenance, Store, StoreError, age,
    now, ops,
};

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Input(String),
    #[error("no memory has the id {0:?} (`ouro memory list` shows them)")]
    NoSuchId(String),
    #[error("ouro has no home folder for its memory: set OURO_HOME or HOME")]
    NoHome,
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("{0}")]
    Settings(String),
}

/// `ouro memory list`: the newest memories first.
pub fn list(root: &Path, user: bool, limit: usize, json: bool) -> Result<(), MemoryError> {
    let nodes = match open_existing(root, user)? {
        Some(store) => store.list(limit)?,
        None => Vec::new(),
    };
    print_nodes(&nodes, json, user);
    Ok(())
}

/// `ouro memory search`: memories matching the words of `query` (and, with
/// `memory.embeddings`, its meaning), best first.
pub async fn search(
    root: &Path,
    user: bool,
    query: &str,
    limit: usize,
    json: bool,
) -> Result<(), MemoryError> {
    let vector = embed::query_vector(embedder(root)?.as_deref(), query).await;
    let nodes = match open_existing(root, user)? {
        Some(store) => recall::seeds(&store, query, vector.semantic(), limit)?,
        None => Vec::new(),
    };
    print_nodes(&nodes, json, user);
    eprint!("{}", vector.unavailable);
    Ok(())
}

/// `ouro memory embed`: gives every memory without a vector in the configured model one.
pub async fn embed(root: &Path, user: bool) -> Result<(), MemoryError> {
    let embedder = embedder(root)?.ok_or_else(|| {
        MemoryError::Settings(
            "no embedding model is configured: set memory.embeddings in settings (see docs/memory.md)"
                .into(),
        )
    })?;
    let Some(mut store) = open_existing(root, user)? else {
        println!("No memories to embed.");
        return Ok(());
    };
    let made = embed::backfill(&mut store, &embedder, None).await?;
    println!(
        "Embedded {made} memor{}; {} have vectors in {}.",
        if made == 1 { "y" } else { "ies" },
        store.vector_count(embedder.space())?,
        embedder.space()
    );
    Ok(())
}

/// `ouro memory show`: one memory and its relations (ended ones too with `history`).
pub fn show(
    root: &Path,
    user: bool,
    id: &str,
    history: bool,
    json: bool,
) -> Result<(), MemoryError> {
    let missing = || MemoryError::NoSuchId(id.to_string());
    let store = open_existing(root, user)?.ok_or_else(missing)?;
    let node = store.node(id)?.ok_or_else(missing)?;
    let edges = store.edges_of(id, history)?;
    if json {
        let edges: Vec<Value> = edges
            .iter()
            .map(|(e, name)| {
                let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
                v["other_name"] = Value::String(name.clone());
                v
            })
            .collect();
        println!("{}", serde_json::json!({"node": node, "edges": edges}));
    } else {
        print!("{}", describe(&node, &edges));
    }
    Ok(())
}

/// `ouro memory forget`: the memory and its relations, leaving no copy in the file.
pub fn forget(root: &Path, user: bool, id: &str) -> Result<(), MemoryError> {
    let missing = || MemoryError::NoSuchId(id.to_string());
    let mut store = open_existing(root, user)?.ok_or_else(missing)?;
    if !store.forget(id)? {
        return Err(missing());
    }
    println!("Forgot {id} and its relations.");
    Ok(())
}

/// What `ouro memory add` adds.
pub struct NewMemory<'a> {
    pub kind: &'a str,
    pub id: &'a str,
    pub name: &'a str,
    pub description: &'a str,
    /// A file whose text is the code snippet.
    pub code: Option<&'a Path>,
}

/// `ouro memory add`: one memory, added or updated.
pub async fn add(root: &Path, user: bool, new: &NewMemory<'_>) -> Result<(), MemoryError> {
    let kind = NodeKind::parse(new.kind).ok_or_else(|| {
        MemoryError::Input(format!(
            "--type {}: use one of {}",
            new.kind,
            NodeKind::ALL.map(NodeKind::as_str).join(", ")
        ))
    })?;
    let code_snippet = new.code.map(read_input).transpose()?;
    let op = serde_json::json!([{"op": "add_node", "type": kind, "id": new.id,
        "properties": {"name": new.name, "description": new.description, "code_snippet": code_snippet}}]);
    let operations = ops::parse(&op).map_err(|e| MemoryError::Input(e.to_string()))?;
    apply(root, user, &operations).await
}

/// `ouro memory apply`: a JSON array of operations from `file` (`-`: stdin), as one
/// transaction.
pub async fn apply_file(root: &Path, user: bool, file: &Path) -> Result<(), MemoryError> {
    let value = read_json(file)?;
    let operations = ops::parse(&value).map_err(|e| MemoryError::Input(e.to_string()))?;
    apply(root, user, &operations).await
}

/// `ouro memory export`: the whole graph as JSON (`ouro-memory/1`) or a MEMORY.md page.
pub fn export(root: &Path, user: bool, markdown: bool) -> Result<(), MemoryError> {
    let (nodes, edges) = match open_existing(root, user)? {
        Some(store) => (store.all_nodes()?, store.all_edges()?),
        None => (Vec::new(), Vec::new()),
    };
    if markdown {
        let title = if user {
            "Memory".to_string()
        } else {
            format!("Memory of {}", root.display())
        };
        print!(
            "{}",
            crate::knowledge::markdown::render(&title, &nodes, &edges)
        );
    } else {
        let export = Export {
            schema: EXPORT_SCHEMA.into(),
            nodes,
            edges,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&export).unwrap_or_default()
        );
    }
    Ok(())
}

/// `ouro memory import`: an export (times and provenance kept) or an array of operations.
pub async fn import(root: &Path, user: bool, file: &Path) -> Result<(), MemoryError> {
    let value = read_json(file)?;
    if value.get("schema").is_none() {
        return apply_file(root, user, file).await;
    }
    let export: Export = serde_json::from_value(value).map_err(|e| {
        MemoryError::Input(format!(
            "{} is not an ouro memory export: {e}",
            file.display()
        ))
    })?;
    export.check().map_err(|e| {
        MemoryError::Input(format!(
            "{} was not imported (nothing of it is kept): {e}",
            file.display()
        ))
    })?;
    let mut store = Store::open(&store_path(root, user)?)?;
    let done = store.restore(&export.nodes, &export.edges)?;
    println!(
        "Imported {} memories and {} relations.",
        done.nodes, done.edges
    );
    embed_new(root, &mut store).await
}

/// `ouro memory recall`: what the Recall tool would tell the model (the project's memory
/// and the user's).
pub async fn recall(root: &Path, query: &str, history: bool) -> Result<(), MemoryError> {
    let reach = Reach {
        history,
        ..Reach::default()
    };
    let vector = embed::query_vector(embedder(root)?.as_deref(), query).await;
    let found = recall::gather(&crate::knowledge::stores(root, true), |store, label| {
        recall::walk(store, label, query, vector.semantic(), reach)
    })?;
    print!(
        "{}{}",
        recall::render(query, &found, now()),
        vector.unavailable
    );
    Ok(())
}

/// The model of `memory.embeddings` in this project's settings (its own only once trusted).
fn embedder(root: &Path) -> Result<Option<Arc<Embedder>>, MemoryError> {
    crate::app::memory::configured_embedder(root, false)
        .map_err(|e| MemoryError::Settings(e.to_string()))
}

/// After a write: vectors for what has none (with `memory.embeddings`). A model that fails
/// leaves the memories kept and says how to finish.
async fn embed_new(root: &Path, store: &mut Store) -> Result<(), MemoryError> {
    let Some(embedder) = embedder(root)? else {
        return Ok(());
    };
    if let Err(e) = embed::backfill(store, &embedder, None).await {
        eprintln!(
            "The memories are kept, but without vectors for semantic search: {e}. `ouro memory embed` makes them later."
        );
    }
    Ok(())
}

fn read_json(file: &Path) -> Result<Value, MemoryError> {
    let text = read_input(file)?;
    serde_json::from_str(&text)
        .map_err(|e| MemoryError::Input(format!("{} is not JSON: {e}", file.display())))
}

fn store_path(root: &Path, user: bool) -> Result<PathBuf, MemoryError> {
    let path = if user {
        crate::knowledge::user_store()
    } else {
        crate::knowledge::project_store(root)
    };
    path.ok_or(MemoryError::NoHome)
}

fn open_existing(root: &Path, user: bool) -> Result<Option<Store>, MemoryError> {
    Ok(Store::open_existing(&store_path(root, user)?)?)
}

async fn apply(root: &Path, user: bool, operations: &[Operation]) -> Result<(), MemoryError> {
    let mut store = Store::open(&store_path(root, user)?)?;
    let done = store.apply(operations, Origin::User, &Provenance::default())?;
    println!(
        "Applied {} operation{}: {} memories, {} relations added, {} ended.",
        operations.len(),
        if operations.len() == 1 { "" } else { "s" },
        done.nodes,
        done.edges,
        done.invalidated
    );
    embed_new(root, &mut store).await
}

fn read_input(path: &Path) -> Result<String, MemoryError> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| MemoryError::Input(format!("cannot read stdin: {e}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(path)
        .map_err(|e| MemoryError::Input(format!("cannot read {}: {e}", path.display())))
}

fn print_nodes(nodes: &[Node], json: bool, user: bool) {
    if json {
        println!("{}", serde_json::to_string(nodes).unwrap_or_default());
        return;
    }
    if nodes.is_empty() {
        println!(
            "No memories{}.",
            if user {
                " of yours"
            } else {
                " for this project"
            }
        );
        return;
    }
    let now = now();
    for node in nodes {
        println!(
            "{}  {}  {}  ({}, {})",
            node.id,
            node.kind.as_str(),
            node.name,
            age(node.updated_at, now),
            node.origin.as_str()
        );
    }
}

fn describe(node: &Node, edges: &[(crate::knowledge::Edge, String)]) -> String {
    let now = now();
    let mut out = format!("{} ({})\n{}\n", node.id, node.kind.as_str(), node.name);
    if !node.description.is_empty() {
        out.push_str(&format!("{}\n", node.description));
    }
    if let Some(code) = &node.code_snippet {
        out.push_str(&format!("\n{code}\n"));
    }
    out.push_str(&format!(
        "\nlearned {} from {}",
        age(node.updated_at, now),
        node.origin.as_str()
    ));
    if let Some(session) = &node.provenance.session {
        out.push_str(&format!(", session {session}"));
    }
    if let Some(turn) = node.provenance.turn {
        out.push_str(&format!(" turn {turn}"));
    }
    if let Some(commit) = &node.provenance.commit {
        out.push_str(&format!(", commit {commit}"));
    }
    out.push('\n');
    if edges.is_empty() {
        return out;
    }
    out.push_str("\nrelations:\n");
    for (edge, other_name) in edges {
        let arrow = if edge.source == node.id {
            format!("{} → {} ({other_name})", edge.kind.as_str(), edge.target)
        } else {
            format!("← {} {} ({other_name})", edge.kind.as_str(), edge.source)
        };
        let when = match edge.valid_to {
            Some(to) => format!(
                "valid from {} until {} (invalidated)",
                age(edge.valid_from, now),
                age(to, now)
            ),
            None => format!("valid since {}", age(edge.valid_from, now)),
        };
        out.push_str(&format!("  {arrow}  {when}\n"));
    }
    out
}
