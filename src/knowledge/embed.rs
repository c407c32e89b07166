//! Semantic search's vectors (`memory.embeddings`): a local model2vec folder, loaded from disk
//! only (no crate that downloads), or an OpenAI-compatible embeddings endpoint. Either is
//! optional; with none, memory works on keywords.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use model2vec_rs::model::StaticModel;
use serde_json::Value;
use tokio::sync::OnceCell;

use super::recall::Semantic;
use super::{Store, StoreError};
use crate::settings::EmbeddingsSettings;

pub mod fixture;

/// At most this many characters of a memory are embedded: its name and description lead, and
/// both kinds of model stop reading long before.
const TEXT_CHARS: usize = 4000;
/// Texts per request to an endpoint (and per step of a local model).
const BATCH: usize = 64;
/// Vectors written per transaction: each commit syncs the file.
const COMMIT: usize = 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(
        "memory.embeddings: give either \"url\" (an OpenAI-compatible endpoint) or \"path\" (a model2vec folder)"
    )]
    Setting,
    #[error("memory.embeddings: the model2vec folder {path} cannot be loaded: {reason}")]
    Load { path: String, reason: String },
    #[error("memory.embeddings: {url} did not answer: {reason}")]
    Request { url: String, reason: String },
    #[error("memory.embeddings: {url} answered {reason}")]
    Answer { url: String, reason: String },
    #[error(
        "memory.embeddings: the variable {0} (apiKeyEnv) is not set; export it before starting ouro"
    )]
    NoKey(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

enum Source {
    Local {
        path: PathBuf,
        model: OnceCell<StaticModel>,
    },
    Remote {
        url: String,
        model: String,
        /// The variable holding the key, read at each request (a shell without it still
        /// starts; recall says what is missing).
        key: Option<String>,
        http: OnceCell<reqwest::Client>,
    },
}

/// One embedding model. Nothing is loaded or connected until the first text is embedded, so a
/// session that never recalls pays nothing.
pub struct Embedder {
    source: Source,
    space: String,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("space", &self.space)
            .finish()
    }
}

impl Embedder {
    /// The embedder `settings` describe; a relative `path` is the project's.
    pub fn from_settings(
        settings: &EmbeddingsSettings,
        root: &Path,
    ) -> Result<Arc<Embedder>, EmbedError> {
        let url = settings
            .url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty());
        let path = settings
            .path
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty());
        match (url, path) {
            (Some(url), None) => {
                let key = settings.api_key_env.clone().filter(|n| !n.is_empty());
                let model = settings.model.clone().unwrap_or_default();
                Ok(Arc::new(Embedder {
                    space: format!("{url}#{model}"),
                    source: Source::Remote {
                        url: url.to_string(),
                        model,
                        key,
                        http: OnceCell::new(),
                    },
                }))
            }
            (None, Some(path)) => {
                let dir = crate::settings::expand_home(path, dirs::home_dir().as_deref())
                    .unwrap_or_else(|| root.join(path));
                Ok(Arc::new(Embedder::local(&dir)))
            }
            _ => Err(EmbedError::Setting),
        }
    }

    /// A model2vec folder (`config.json`, `tokenizer.json`, `model.safetensors`).
    pub fn local(dir: &Path) -> Embedder {
        // The space names the weights' file as it is now: vectors of a replaced model are
        // never compared with the new one's.
        let weights = std::fs::metadata(dir.join("model.safetensors")).ok();
        let stamp = weights.map_or((0, 0), |m| {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs());
            (m.len(), modified)
        });
        Embedder {
            space: format!("model2vec:{}:{}:{}", dir.display(), stamp.0, stamp.1),
            source: Source::Local {
                path: dir.to_path_buf(),
                model: OnceCell::new(),
            },
        }
    }

    /// The name of this model's vector space: vectors are only compared within one.
    pub fn space(&self) -> &str {
        &self.space
    }

    /// One vector per text, in order.
    pub async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let texts: Vec<String> = texts.into_iter().map(clip).collect();
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let vectors = match &self.source {
                Source::Local { path, model } => encode_local(path, model, batch).await?,
                Source::Remote {
                    url,
                    model,
                    key,
                    http,
                } => encode_remote(url, model, key.as_deref(), http, batch).await?,
            };
            out.extend(vectors);
        }
        Ok(out)
    }
}

/// A query as the model sees it: its vector (none without a model or when the model failed)
/// and what to tell the reader when the model failed (empty otherwise); recall then goes on
/// with keywords.
pub struct Query {
    space: String,
    vector: Option<Vec<f32>>,
    pub unavailable: String,
}

impl Query {
    /// The semantic seeds' input, when there is a vector.
    pub fn semantic(&self) -> Option<Semantic<'_>> {
        self.vector.as_deref().map(|vector| Semantic {
            space: &self.space,
            vector,
        })
    }
}

/// `query` through `embedder`, if there is one.
pub async fn query_vector(embedder: Option<&Embedder>, query: &str) -> Query {
    let mut out = Query {
        space: embedder.map(|e| e.space.clone()).unwrap_or_default(),
        vector: None,
        unavailable: String::new(),
    };
    if let Some(embedder) = embedder {
        // A query goes to the model as memories do: redacted (an endpoint is a third party).
        match embedder
            .embed(vec![crate::sys::secrets::redact(query).into_owned()])
            .await
        {
            Ok(mut vectors) => out.vector = vectors.pop(),
            Err(e) => {
                out.unavailable = format!(
                    "\n(Semantic search is unavailable, so these are keyword matches only: {e})\n"
                )
            }
        }
    }
    out
}

/// Gives every memory of `store` without a vector in `embedder`'s space one, up to `limit`
/// of them (all with `None`); returns how many it embedded.
pub async fn backfill(
    store: &mut Store,
    embedder: &Embedder,
    limit: Option<usize>,
) -> Result<usize, EmbedError> {
    let mut done = 0;
    loop {
        let room = limit.map_or(COMMIT, |l| COMMIT.min(l.saturating_sub(done)));
        if room == 0 {
            return Ok(done);
        }
        let missing = store.missing_vectors(embedder.space(), room)?;
        if missing.is_empty() {
            return Ok(done);
        }
        let (ids, texts): (Vec<String>, Vec<String>) = missing.into_iter().unzip();
        let vectors = embedder.embed(texts).await?;
        let pairs: Vec<(String, Vec<f32>)> = ids.into_iter().zip(vectors).collect();
        store.put_vectors(embedder.space(), &pairs)?;
        done += pairs.len();
    }
}

fn clip(mut text: String) -> String {
    if let Some((at, _)) = text.char_indices().nth(TEXT_CHARS) {
        text.truncate(at);
    }
    text
}

async fn encode_local(
    path: &Path,
    cell: &OnceCell<StaticModel>,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let failed = |reason: String| EmbedError::Load {
        path: path.display().to_string(),
        reason,
    };
    let model = cell
        .get_or_try_init(|| async {
            let dir = path.to_path_buf();
            tokio::task::spawn_blocking(move || {
                StaticModel::from_pretrained(&dir, None, None, None)
            })
            .await
            .map_err(|e| failed(e.to_string()))?
            .map_err(|e| failed(format!("{e:#}")))
        })
        .await?
        .clone();
    let texts = texts.to_vec();
    // The crate panics on a text its tokenizer refuses; on a blocking thread that is an
    // error for this call, not the session's end.
    tokio::task::spawn_blocking(move || model.encode(&texts))
        .await
        .map_err(|_| failed("its tokenizer refused the text".into()))
}

async fn encode_remote(
    url: &str,
    model: &str,
    key: Option<&str>,
    cell: &OnceCell<reqwest::Client>,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let request_error = |reason: String| EmbedError::Request {
        url: url.to_string(),
        reason,
    };
    let answer_error = |reason: String| EmbedError::Answer {
        url: url.to_string(),
        reason,
    };
    let http = cell
        .get_or_try_init(|| async {
            crate::api::client::install_crypto();
            reqwest::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .build()
                .map_err(|e| request_error(e.to_string()))
        })
        .await?;
    let mut body = serde_json::json!({ "input": texts });
    if !model.is_empty() {
        body["model"] = Value::String(model.to_string());
    }
    let mut request = http.post(url).json(&body);
    if let Some(name) = key {
        let key = std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| EmbedError::NoKey(name.to_string()))?;
        request = request.bearer_auth(key);
    }
    let response = request
        .send()
        .await
        .map_err(|e| request_error(e.to_string()))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| request_error(e.to_string()))?;
    if !status.is_success() {
        let head: String = text.chars().take(300).collect();
        return Err(answer_error(format!("{status}: {head}")));
    }
    parse_answer(&text, texts.len()).map_err(answer_error)
}

/// `{"data": [{"embedding": [...], "index": i}, ...]}`, put back in the inputs' order.
fn parse_answer(text: &str, count: usize) -> Result<Vec<Vec<f32>>, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("something that is not JSON ({e})"))?;
    let data = value
        .get("data")
        .and_then(Value::as_array)
        .ok_or("JSON without a \"data\" array")?;
    if data.len() != count {
        return Err(format!("{} vectors for {count} texts", data.len()));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; count];
    for (position, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .map_or(position, |i| i as usize);
        let vector: Vec<f32> = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or("an item without an \"embedding\" array (base64 answers are not read)")?
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32).filter(|f| f.is_finite()))
            .collect::<Option<_>>()
            .ok_or("an embedding with a value that is not a finite number")?;
        if vector.is_empty() {
            return Err("an empty embedding".into());
        }
        let slot = out
            .get_mut(index)
            .ok_or_else(|| format!("index {index} for {count} texts"))?;
        *slot = Some(vector);
    }
    let vectors: Vec<Vec<f32>> = out
        .into_iter()
        .collect::<Option<_>>()
        .ok_or("two vectors for one text")?;
    if vectors.iter().any(|v| v.len() != vectors[0].len()) {
        return Err("vectors of different lengths".into());
    }
    Ok(vectors)
}

#[cfg(test)]
mod tests;
