//! Semantic search's vectors, kept beside the nodes in the same file: one per node and model
//! (a node whose text changes loses its vector until it is embedded again), compared by cosine
//! over an in-memory copy (unit-length rows, one contiguous block) that is read again only
//! when the table changed.

use rusqlite::params;

use super::{NODE_COLUMNS, Store, StoreError, node_row};
use crate::knowledge::Node;

pub(super) const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS vectors (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    node TEXT NOT NULL UNIQUE REFERENCES nodes(id) ON DELETE CASCADE,
    space TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE TRIGGER IF NOT EXISTS nodes_au_vectors AFTER UPDATE ON nodes BEGIN
    DELETE FROM vectors WHERE node = old.id;
END;
"#;

/// The vectors of one space as last read, and what the table looked like then. `seq` never
/// repeats (AUTOINCREMENT), so any insert raises the largest and any delete lowers the count.
pub(super) struct Cache {
    space: String,
    shape: (i64, i64),
    ids: Vec<String>,
    /// The length of every row (a vector of another length, from a confused endpoint, is
    /// left out).
    dim: usize,
    /// `ids.len()` rows of `dim` floats, each scaled to length 1 so a dot product is the
    /// cosine.
    rows: Vec<f32>,
}

impl Store {
    /// Up to `limit` nodes with no vector in `space`, as (id, the text to embed).
    pub fn missing_vectors(
        &self,
        space: &str,
        limit: usize,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT n.id, n.name, n.description, n.code_snippet FROM nodes n
             LEFT JOIN vectors v ON v.node = n.id AND v.space = ?1
             WHERE v.node IS NULL ORDER BY n.rowid LIMIT ?2",
        )?;
        let rows = stmt.query_map(
            params![space, i64::try_from(limit).unwrap_or(i64::MAX)],
            |r| {
                let mut text: String = r.get(1)?;
                for part in [
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                ] {
                    if !part.is_empty() {
                        text.push('\n');
                        text.push_str(&part);
                    }
                }
                Ok((r.get(0)?, text))
            },
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Keeps `vectors` in `space`, replacing a node's vector of any space; a node forgotten
    /// meanwhile is skipped.
    pub fn put_vectors(
        &mut self,
        space: &str,
        vectors: &[(String, Vec<f32>)],
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO vectors (node, space, vector)
                 SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM nodes WHERE id = ?1)",
            )?;
            for (id, vector) in vectors {
                let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                stmt.execute(params![id, space, bytes])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// How many nodes have a vector in `space`.
    pub fn vector_count(&self, space: &str) -> Result<i64, StoreError> {
        Ok(self.conn.query_row(
            "SELECT count(*) FROM vectors WHERE space = ?1",
            [space],
            |r| r.get(0),
        )?)
    }

    /// The `limit` nodes whose vectors in `space` are most like `query`, at least `floor`
    /// alike, best first.
    pub fn nearest(
        &self,
        space: &str,
        query: &[f32],
        limit: usize,
        floor: f32,
    ) -> Result<Vec<(Node, f32)>, StoreError> {
        let shape: (i64, i64) = self.conn.query_row(
            "SELECT count(*), coalesce(max(seq), 0) FROM vectors",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let mut cache = self.vectors.borrow_mut();
        if !cache
            .as_ref()
            .is_some_and(|c| c.shape == shape && c.space == space)
        {
            *cache = Some(self.read_vectors(space, shape)?);
        }
        let Some(cache) = cache.as_ref() else {
            return Ok(Vec::new());
        };
        if query.len() != cache.dim || cache.dim == 0 {
            return Ok(Vec::new());
        }
        let Some(query) = unit(query) else {
            return Ok(Vec::new());
        };
        let mut scored: Vec<(usize, f32)> = cache
            .rows
            .chunks_exact(cache.dim)
            .enumerate()
            .map(|(i, row)| (i, dot(&query, row)))
            .filter(|(_, score)| *score >= floor)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.truncate(limit);
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {NODE_COLUMNS} FROM nodes WHERE id = ?1"))?;
        let mut out = Vec::with_capacity(scored.len());
        for (i, score) in scored {
            if let Some(node) = stmt.query_map([&cache.ids[i]], node_row)?.next() {
                out.push((node?, score));
            }
        }
        Ok(out)
    }

    fn read_vectors(&self, space: &str, shape: (i64, i64)) -> Result<Cache, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT node, vector FROM vectors WHERE space = ?1")?;
        let mut ids = Vec::new();
        let mut rows = Vec::new();
        let mut dim = 0;
        let found = stmt.query_map([space], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
        })?;
        for row in found {
            let (id, bytes) = row?;
            let vector: Vec<f32> = bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            if dim == 0 {
                dim = vector.len();
            }
            if vector.len() != dim {
                continue;
            }
            // An all-zero vector (a text of unknown words) is like nothing.
            if let Some(vector) = unit(&vector) {
                ids.push(id);
                rows.extend(vector);
            }
        }
        Ok(Cache {
            space: space.to_string(),
            shape,
            ids,
            dim,
            rows,
        })
    }
}

/// `v` scaled to length 1; `None` for the zero vector.
fn unit(v: &[f32]) -> Option<Vec<f32>> {
    let norm = dot(v, v).sqrt();
    (norm > 0.0 && norm.is_finite()).then(|| v.iter().map(|x| x / norm).collect())
}

/// Eight running sums, so the compiler can keep them in one vector register.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            sums[i] += x[i] * y[i];
        }
    }
    sums.iter().sum::<f32>() + tail
}
