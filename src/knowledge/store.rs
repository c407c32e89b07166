//! The SQLite file: nodes, edges with both time axes, and an FTS5 index of the nodes' text.
//! `secure_delete` is on and the full-text index deletes securely, so a forgotten node leaves
//! no copy in a free page; text is redacted before it is written at all.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use super::ops::Properties;
use super::{Edge, EdgeKind, Node, NodeKind, Operation, Origin, Provenance};

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS nodes (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    code_snippet TEXT,
    origin TEXT NOT NULL,
    session TEXT,
    turn INTEGER,
    git_commit TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS edges (
    source TEXT NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    target TEXT NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_to INTEGER,
    created_at INTEGER NOT NULL,
    expired_at INTEGER,
    origin TEXT NOT NULL,
    session TEXT
);
CREATE INDEX IF NOT EXISTS edges_by_source ON edges(source);
CREATE INDEX IF NOT EXISTS edges_by_target ON edges(target);
CREATE VIRTUAL TABLE IF NOT EXISTS nodes_fts USING fts5(
    id, name, description, code_snippet,
    content='nodes', content_rowid='rowid', tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS nodes_ai AFTER INSERT ON nodes BEGIN
    INSERT INTO nodes_fts(rowid, id, name, description, code_snippet)
    VALUES (new.rowid, new.id, new.name, new.description, new.code_snippet);
END;
CREATE TRIGGER IF NOT EXISTS nodes_ad AFTER DELETE ON nodes BEGIN
    INSERT INTO nodes_fts(nodes_fts, rowid, id, name, description, code_snippet)
    VALUES ('delete', old.rowid, old.id, old.name, old.description, old.code_snippet);
END;
CREATE TRIGGER IF NOT EXISTS nodes_au AFTER UPDATE ON nodes BEGIN
    INSERT INTO nodes_fts(nodes_fts, rowid, id, name, description, code_snippet)
    VALUES ('delete', old.rowid, old.id, old.name, old.description, old.code_snippet);
    INSERT INTO nodes_fts(rowid, id, name, description, code_snippet)
    VALUES (new.rowid, new.id, new.name, new.description, new.code_snippet);
END;
"#;

const NODE_COLUMNS: &str = "id, kind, name, description, code_snippet, origin, session, turn, git_commit, created_at, updated_at";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("memory store {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("cannot make the memory folder {path}: {source}")]
    Folder {
        path: String,
        source: std::io::Error,
    },
    #[error("operation {index}: {reason}")]
    Op { index: usize, reason: String },
    #[error("memory store: {0}")]
    Sql(#[from] rusqlite::Error),
}

/// What one applied array changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    pub nodes: usize,
    pub edges: usize,
    pub invalidated: usize,
}

impl Applied {
    pub fn total(self) -> usize {
        self.nodes + self.edges + self.invalidated
    }
}

pub struct Store {
    conn: Connection,
    vectors: std::cell::RefCell<Option<vectors::Cache>>,
}

impl Store {
    /// Opens the store at `path`, making it (and its private folder) when missing.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent() {
            crate::sys::atomic::make_private_dir(dir).map_err(|source| StoreError::Folder {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let open = |source| StoreError::Open {
            path: path.display().to_string(),
            source,
        };
        let conn = Connection::open(path).map_err(open)?;
        conn.execute_batch(
            "PRAGMA secure_delete = ON; PRAGMA foreign_keys = ON; PRAGMA journal_mode = DELETE; PRAGMA busy_timeout = 5000;",
        )
        .map_err(open)?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(open)?;
        if version == 0 {
            conn.execute_batch(&format!(
                "BEGIN; {SCHEMA} INSERT INTO nodes_fts(nodes_fts, rank) VALUES ('secure-delete', 1); PRAGMA user_version = 1; COMMIT;"
            ))
            .map_err(open)?;
        }
        if version < 2 {
            conn.execute_batch(&format!(
                "BEGIN; {} PRAGMA user_version = 2; COMMIT;",
                vectors::SCHEMA
            ))
            .map_err(open)?;
        }
        Ok(Store {
            conn,
            vectors: std::cell::RefCell::new(None),
        })
    }

    /// Opens the store only when its file exists: reading memory never makes one.
    pub fn open_existing(path: &Path) -> Result<Option<Store>, StoreError> {
        if !path.exists() {
            return Ok(None);
        }
        Store::open(path).map(Some)
    }

    /// Applies `ops` as one transaction: all of them, or (on the first bad one, named by its
    /// index) none. Text is redacted before it is stored.
    pub fn apply(
        &mut self,
        ops: &[Operation],
        origin: Origin,
        provenance: &Provenance,
    ) -> Result<Applied, StoreError> {
        let now = super::now();
        let tx = self.conn.transaction()?;
        let mut applied = Applied::default();
        for (index, op) in ops.iter().enumerate() {
            let bad = |reason: String| StoreError::Op { index, reason };
            match op {
                Operation::AddNode {
                    kind,
                    id,
                    properties,
                } => {
                    upsert_node(&tx, *kind, id, properties, origin, provenance, now)?;
                    applied.nodes += 1;
                }
                Operation::AddEdge {
                    source,
                    target,
                    kind,
                } => {
                    for end in [source, target] {
                        if !exists(&tx, end)? {
                            return Err(bad(format!(
                                "no node {end:?}: add it before an edge to it"
                            )));
                        }
                    }
                    let open: bool = tx.query_row(
                        "SELECT EXISTS(SELECT 1 FROM edges WHERE source = ?1 AND target = ?2 AND kind = ?3 AND valid_to IS NULL)",
                        params![source, target, kind.as_str()],
                        |r| r.get(0),
                    )?;
                    if !open {
                        tx.execute(
                            "INSERT INTO edges (source, target, kind, valid_from, created_at, origin, session) VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)",
                            params![source, target, kind.as_str(), now, origin.as_str(), provenance.session],
                        )?;
                        applied.edges += 1;
                    }
                }
                Operation::InvalidateEdge {
                    source,
                    target,
                    kind,
                } => {
                    let changed = tx.execute(
                        "UPDATE edges SET valid_to = ?4, expired_at = ?4 WHERE source = ?1 AND target = ?2 AND kind = ?3 AND valid_to IS NULL",
                        params![source, target, kind.as_str(), now],
                    )?;
                    if changed == 0 {
                        return Err(bad(format!(
                            "no edge {source} {} {target} is valid now",
                            kind.as_str()
                        )));
                    }
                    applied.invalidated += changed;
                }
            }
        }
        tx.commit()?;
        Ok(applied)
    }

    pub fn node(&self, id: &str) -> Result<Option<Node>, StoreError> {
        Ok(self
            .conn
            .query_row(
                &format!("SELECT {NODE_COLUMNS} FROM nodes WHERE id = ?1"),
                [id],
                node_row,
            )
            .optional()?)
    }

    /// The edges touching `id`, each with the other end's name; invalidated ones only with
    /// `history`. Oldest first.
    pub fn edges_of(&self, id: &str, history: bool) -> Result<Vec<(Edge, String)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT e.source, e.target, e.kind, e.valid_from, e.valid_to, e.created_at, e.expired_at, e.origin, n.name
             FROM edges e JOIN nodes n ON n.id = CASE WHEN e.source = ?1 THEN e.target ELSE e.source END
             WHERE (e.source = ?1 OR e.target = ?1) AND (?2 OR e.valid_to IS NULL)
             ORDER BY e.created_at, e.rowid",
        )?;
        let rows = stmt.query_map(params![id, history], |r| {
            Ok((edge_row(r)?, r.get::<_, String>(8)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The newest nodes first.
    pub fn list(&self, limit: usize) -> Result<Vec<Node>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {NODE_COLUMNS} FROM nodes ORDER BY updated_at DESC, rowid DESC LIMIT ?1"
        ))?;
        let rows = stmt.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], node_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Nodes matching the words of `query`, best first (BM25 over id, name, description and
    /// code). BM25 scores every matching row, so only a bounded set is ranked: the words
    /// rarest first while the rows they match stay within [`RANKED_ROWS`]; when even the
    /// rarest word is more common, its newest rows (found without reading the others). A
    /// query with no searchable word matches nothing.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Node>, StoreError> {
        let mut counted = Vec::new();
        for word in query_words(query) {
            let phrase = format!("\"{word}\"");
            let rows = self.rows_matching(&phrase)?;
            if rows > 0 {
                counted.push((rows, phrase));
            }
        }
        counted.sort();
        let Some((rarest, _)) = counted.first() else {
            return Ok(Vec::new());
        };
        if *rarest > RANKED_ROWS {
            return self.matching(&counted[0].1, "f.rowid DESC", limit);
        }
        let mut total = 0;
        let words: Vec<&str> = counted
            .iter()
            .take_while(|(rows, _)| {
                total += rows;
                total <= RANKED_ROWS
            })
            .map(|(_, phrase)| phrase.as_str())
            .collect();
        self.matching(&words.join(" OR "), "f.rank", limit)
    }

    /// The nodes an FTS5 expression matches, in `order`.
    fn matching(&self, matcher: &str, order: &str, limit: usize) -> Result<Vec<Node>, StoreError> {
        let columns = NODE_COLUMNS
            .split(", ")
            .map(|c| format!("n.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {columns} FROM nodes_fts f JOIN nodes n ON n.rowid = f.rowid
             WHERE nodes_fts MATCH ?1 ORDER BY {order} LIMIT ?2"
        ))?;
        let rows = stmt.query_map(
            params![matcher, i64::try_from(limit).unwrap_or(i64::MAX)],
            node_row,
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many nodes an FTS5 expression matches, counted up to one past [`RANKED_ROWS`]:
    /// enough to know it is too common to rank, at a bounded cost.
    fn rows_matching(&self, expression: &str) -> Result<i64, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT count(*) FROM (SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ?1 LIMIT ?2)",
        )?;
        Ok(stmt.query_row(params![expression, RANKED_ROWS + 1], |r| r.get(0))?)
    }

    /// Deletes a node and every edge touching it, leaving no copy in the file; `false` when
    /// there was no such node.
    pub fn forget(&mut self, id: &str) -> Result<bool, StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM edges WHERE source = ?1 OR target = ?1", [id])?;
        let gone = tx.execute("DELETE FROM nodes WHERE id = ?1", [id])? > 0;
        tx.commit()?;
        if gone {
            self.conn
                .execute_batch("INSERT INTO nodes_fts(nodes_fts) VALUES ('optimize'); VACUUM;")?;
        }
        Ok(gone)
    }

    pub fn counts(&self) -> Result<(i64, i64), StoreError> {
        let nodes = self
            .conn
            .query_row("SELECT COUNT(*) FROM nodes", [], |r| r.get(0))?;
        let edges = self.conn.query_row(
            "SELECT COUNT(*) FROM edges WHERE valid_to IS NULL",
            [],
            |r| r.get(0),
        )?;
        Ok((nodes, edges))
    }

    /// Every node, oldest first.
    pub fn all_nodes(&self) -> Result<Vec<Node>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {NODE_COLUMNS} FROM nodes ORDER BY created_at, rowid"
        ))?;
        let rows = stmt.query_map([], node_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every edge, invalidated ones too, oldest first.
    pub fn all_edges(&self) -> Result<Vec<Edge>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT source, target, kind, valid_from, valid_to, created_at, expired_at, origin FROM edges ORDER BY created_at, rowid",
        )?;
        let rows = stmt.query_map([], edge_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Puts back nodes and edges as an export holds them (times and provenance kept), as
    /// one transaction; text is redacted again.
    pub fn restore(&mut self, nodes: &[Node], edges: &[Edge]) -> Result<Applied, StoreError> {
        let tx = self.conn.transaction()?;
        for node in nodes {
            let properties = Properties {
                name: node.name.clone(),
                description: node.description.clone(),
                code_snippet: node.code_snippet.clone(),
            };
            upsert_node(
                &tx,
                node.kind,
                &node.id,
                &properties,
                node.origin,
                &node.provenance,
                node.updated_at,
            )?;
            tx.execute(
                "UPDATE nodes SET created_at = ?2 WHERE id = ?1",
                params![node.id, node.created_at],
            )?;
        }
        let mut added = 0;
        for (index, e) in edges.iter().enumerate() {
            for end in [&e.source, &e.target] {
                if !exists(&tx, end)? {
                    return Err(StoreError::Op {
                        index,
                        reason: format!("edge to a node not in the import: {end:?}"),
                    });
                }
            }
            // The same import twice keeps each relation once.
            added += tx.execute(
                "INSERT INTO edges (source, target, kind, valid_from, valid_to, created_at, expired_at, origin)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
                 WHERE NOT EXISTS (SELECT 1 FROM edges WHERE source = ?1 AND target = ?2 AND kind = ?3
                                   AND valid_from = ?4 AND valid_to IS ?5)",
                params![e.source, e.target, e.kind.as_str(), e.valid_from, e.valid_to, e.created_at, e.expired_at, e.origin.as_str()],
            )?;
        }
        tx.commit()?;
        Ok(Applied {
            nodes: nodes.len(),
            edges: added,
            invalidated: 0,
        })
    }

    /// The edges touching `id` (invalidated ones only with `history`), in no order: two index
    /// lookups, for Recall's walk.
    pub fn edges_around(&self, id: &str, history: bool) -> Result<Vec<Edge>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT source, target, kind, valid_from, valid_to, created_at, expired_at, origin FROM edges
             WHERE source = ?1 AND (?2 OR valid_to IS NULL)
             UNION ALL
             SELECT source, target, kind, valid_from, valid_to, created_at, expired_at, origin FROM edges
             WHERE target = ?1 AND (?2 OR valid_to IS NULL)",
        )?;
        let rows = stmt.query_map(params![id, history], edge_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Runs `work` inside one transaction (bulk loads: the benchmark's graph).
    pub fn bulk<T>(
        &mut self,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let tx = self.conn.transaction()?;
        let out = work(&tx)?;
        tx.commit()?;
        Ok(out)
    }
}

fn exists(tx: &rusqlite::Transaction<'_>, id: &str) -> rusqlite::Result<bool> {
    tx.query_row(
        "SELECT EXISTS(SELECT 1 FROM nodes WHERE id = ?1)",
        [id],
        |r| r.get(0),
    )
}

fn upsert_node(
    tx: &rusqlite::Transaction<'_>,
    kind: NodeKind,
    id: &str,
    p: &Properties,
    origin: Origin,
    provenance: &Provenance,
    now: i64,
) -> rusqlite::Result<()> {
    use crate::sys::secrets::redact;
    tx.execute(
        "INSERT INTO nodes (id, kind, name, description, code_snippet, origin, session, turn, git_commit, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)
         ON CONFLICT(id) DO UPDATE SET kind = excluded.kind, name = excluded.name,
           description = excluded.description, code_snippet = excluded.code_snippet,
           origin = excluded.origin, session = excluded.session, turn = excluded.turn,
           git_commit = excluded.git_commit, updated_at = excluded.updated_at",
        params![
            redact(id),
            kind.as_str(),
            redact(&p.name),
            redact(&p.description),
            p.code_snippet.as_deref().map(redact),
            origin.as_str(),
            provenance.session,
            provenance.turn,
            provenance.commit,
            now
        ],
    )?;
    Ok(())
}

fn node_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Node> {
    let kind: String = r.get(1)?;
    let origin: String = r.get(5)?;
    Ok(Node {
        id: r.get(0)?,
        kind: NodeKind::parse(&kind).unwrap_or(NodeKind::Fact),
        name: r.get(2)?,
        description: r.get(3)?,
        code_snippet: r.get(4)?,
        origin: Origin::parse(&origin),
        provenance: Provenance {
            session: r.get(6)?,
            turn: r.get(7)?,
            commit: r.get(8)?,
        },
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
    })
}

fn edge_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Edge> {
    let kind: String = r.get(2)?;
    let origin: String = r.get(7)?;
    Ok(Edge {
        source: r.get(0)?,
        target: r.get(1)?,
        kind: EdgeKind::parse(&kind).unwrap_or(EdgeKind::Uses),
        valid_from: r.get(3)?,
        valid_to: r.get(4)?,
        created_at: r.get(5)?,
        expired_at: r.get(6)?,
        origin: Origin::parse(&origin),
    })
}

/// Words too common to find anything by.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "me", "my", "of", "on", "or", "that", "the", "this", "to", "was", "we", "what",
    "when", "where", "which", "who", "why", "with", "you",
];

/// Rows ranked at most: BM25 costs some microseconds per matching row, and Recall must stay
/// within a few milliseconds on a large memory (a memory of a few thousand nodes ranks every
/// match).
const RANKED_ROWS: i64 = 300;

/// The searchable words of a natural-language query, lower-cased, without stopwords or
/// repeats. Each is quoted when matched, so none is read as an FTS5 operator or column.
fn query_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .map(str::to_lowercase)
    {
        if word.chars().count() < 2 || STOPWORDS.contains(&word.as_str()) || words.contains(&word) {
            continue;
        }
        words.push(word);
        if words.len() == 16 {
            break;
        }
    }
    words
}

mod vectors;

#[cfg(test)]
mod tests;
