use serde_json::json;

use super::fixture::write_model2vec;
use super::*;
use crate::knowledge::recall::{self, Semantic};
use crate::knowledge::{Origin, Provenance, ops};

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

/// Four meanings: speed, search, failure, databases.
fn words() -> Vec<(&'static str, Vec<f32>)> {
    vec![
        ("fast", vec![1.0, 0.0, 0.0, 0.0]),
        ("quick", vec![0.95, 0.05, 0.0, 0.0]),
        ("search", vec![0.0, 1.0, 0.0, 0.0]),
        ("lookup", vec![0.05, 0.95, 0.0, 0.0]),
        ("ripgrep", vec![0.3, 0.9, 0.0, 0.0]),
        ("crash", vec![0.0, 0.0, 0.95, 0.05]),
        ("failure", vec![0.0, 0.0, 1.0, 0.0]),
        ("postgres", vec![0.0, 0.0, 0.1, 0.95]),
        ("database", vec![0.0, 0.0, 0.0, 1.0]),
    ]
}

fn model(dir: &Path) -> Arc<Embedder> {
    let path = dir.join("model");
    write_model2vec(&path, &words()).unwrap();
    Arc::new(Embedder::local(&path))
}

fn seeded(dir: &Path) -> Store {
    let mut store = Store::open(&dir.join("m.sqlite")).unwrap();
    let operations = ops::parse(&json!([
        {"op": "add_node", "type": "Tool", "id": "rg", "properties": {"name": "Use ripgrep", "description": "fast search in big trees"}},
        {"op": "add_node", "type": "FailureCase", "id": "pg", "properties": {"name": "Postgres crash", "description": "the migration takes a lock"}},
    ]))
    .unwrap();
    store
        .apply(&operations, Origin::User, &Provenance::default())
        .unwrap();
    store
}

#[tokio::test]
async fn a_generated_model2vec_folder_loads_and_means_what_its_words_mean() {
    let dir = tempfile::tempdir().unwrap();
    let embedder = model(dir.path());
    let vectors = embedder
        .embed(vec![
            "Quick lookup".into(),
            "fast search".into(),
            "database failure".into(),
            "words it has never seen".into(),
        ])
        .await
        .unwrap();
    assert_eq!(vectors.len(), 4);
    assert_eq!(vectors[0].len(), 4);
    assert!(cosine(&vectors[0], &vectors[1]) > 0.95);
    assert!(cosine(&vectors[0], &vectors[2]) < 0.1);
    // Unknown words are dropped, as model2vec does: nothing left is all zeros.
    assert!(vectors[3].iter().all(|x| *x == 0.0));
    // Normalised, as the folder's config asks.
    let norm: f32 = vectors[0].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "{norm}");
}

#[tokio::test]
async fn backfill_gives_each_memory_a_vector_and_recall_seeds_by_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let embedder = model(dir.path());
    let mut store = seeded(dir.path());
    assert_eq!(store.search("quick lookup", 5).unwrap().len(), 0);
    assert_eq!(backfill(&mut store, &embedder, None).await.unwrap(), 2);
    assert_eq!(backfill(&mut store, &embedder, None).await.unwrap(), 0);
    assert_eq!(store.vector_count(embedder.space()).unwrap(), 2);

    let query = embedder.embed(vec!["quick lookup".into()]).await.unwrap();
    let semantic = Semantic {
        space: embedder.space(),
        vector: &query[0],
    };
    let seeds = recall::seeds(&store, "quick lookup", Some(semantic), 5).unwrap();
    assert_eq!(
        seeds.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(),
        ["rg"]
    );
    // Keywords and meaning both seed, each memory once.
    let query = embedder
        .embed(vec!["database failure".into()])
        .await
        .unwrap();
    let semantic = Semantic {
        space: embedder.space(),
        vector: &query[0],
    };
    let seeds = recall::seeds(&store, "ripgrep database failure", Some(semantic), 5).unwrap();
    let ids: Vec<&str> = seeds.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["rg", "pg"]);
    // Another model's space is never compared.
    assert!(
        store
            .nearest("other", &query[0], 5, 0.0)
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_changed_memory_loses_its_vector_and_a_forgotten_one_leaves_none() {
    let dir = tempfile::tempdir().unwrap();
    let embedder = model(dir.path());
    let mut store = seeded(dir.path());
    backfill(&mut store, &embedder, None).await.unwrap();
    let update = ops::parse(&json!([{"op": "add_node", "type": "Tool", "id": "rg",
        "properties": {"name": "Use ripgrep", "description": "database crash"}}]))
    .unwrap();
    store
        .apply(&update, Origin::User, &Provenance::default())
        .unwrap();
    let missing = store.missing_vectors(embedder.space(), 10).unwrap();
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].0, "rg");
    assert!(missing[0].1.contains("database crash"));
    backfill(&mut store, &embedder, Some(1)).await.unwrap();
    // The cached copy sees the new vector: "database" now finds both.
    let query = embedder.embed(vec!["database".into()]).await.unwrap();
    let near = store.nearest(embedder.space(), &query[0], 5, 0.3).unwrap();
    assert_eq!(near.len(), 2);
    assert!(store.forget("pg").unwrap());
    assert_eq!(store.vector_count(embedder.space()).unwrap(), 1);
    let near = store.nearest(embedder.space(), &query[0], 5, 0.3).unwrap();
    assert_eq!(near.len(), 1);
}

#[tokio::test]
async fn a_broken_model_folder_is_an_error_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model");
    write_model2vec(&path, &words()).unwrap();
    std::fs::write(path.join("model.safetensors"), b"not a tensor file").unwrap();
    let error = Embedder::local(&path)
        .embed(vec!["fast".into()])
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains(&path.display().to_string()), "{error}");
    let missing = Embedder::local(&dir.path().join("nowhere"))
        .embed(vec!["fast".into()])
        .await
        .unwrap_err();
    assert!(matches!(missing, EmbedError::Load { .. }), "{missing}");
}

#[test]
fn a_replaced_model_is_another_space() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model");
    write_model2vec(&path, &words()).unwrap();
    let before = Embedder::local(&path).space().to_string();
    write_model2vec(&path, &words()[..3]).unwrap();
    assert_ne!(Embedder::local(&path).space(), before);
}

#[test]
fn settings_name_one_source() {
    let root = Path::new("/project");
    let both = EmbeddingsSettings {
        url: Some("http://localhost:1/v1/embeddings".into()),
        path: Some("model".into()),
        ..Default::default()
    };
    assert!(matches!(
        Embedder::from_settings(&both, root),
        Err(EmbedError::Setting)
    ));
    assert!(matches!(
        Embedder::from_settings(&EmbeddingsSettings::default(), root),
        Err(EmbedError::Setting)
    ));
    let local = EmbeddingsSettings {
        path: Some("models/potion".into()),
        ..Default::default()
    };
    let space = Embedder::from_settings(&local, root).unwrap();
    assert!(
        space.space().contains("/project/models/potion"),
        "{}",
        space.space()
    );
    let remote = EmbeddingsSettings {
        url: Some("http://localhost:1/v1/embeddings".into()),
        model: Some("m".into()),
        ..Default::default()
    };
    assert_eq!(
        Embedder::from_settings(&remote, root).unwrap().space(),
        "http://localhost:1/v1/embeddings#m"
    );
}

#[test]
fn an_endpoint_answer_is_checked_and_put_in_order() {
    let answer = json!({"data": [
        {"index": 1, "embedding": [0.0, 1.0]},
        {"index": 0, "embedding": [1.0, 0.0]},
    ]})
    .to_string();
    assert_eq!(
        parse_answer(&answer, 2).unwrap(),
        vec![vec![1.0, 0.0], vec![0.0, 1.0]]
    );
    assert!(
        parse_answer(&answer, 3)
            .unwrap_err()
            .contains("2 vectors for 3")
    );
    let twice =
        json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]});
    assert!(parse_answer(&twice.to_string(), 2).is_err());
    let ragged = json!({"data": [{"embedding": [1.0]}, {"embedding": [1.0, 2.0]}]});
    assert!(
        parse_answer(&ragged.to_string(), 2)
            .unwrap_err()
            .contains("different lengths")
    );
    let text = json!({"data": [{"embedding": ["x"]}]});
    assert!(parse_answer(&text.to_string(), 1).is_err());
    let far = json!({"data": [{"index": 7, "embedding": [1.0]}]});
    assert!(parse_answer(&far.to_string(), 1).is_err());
    assert!(parse_answer("<html>", 1).unwrap_err().contains("not JSON"));
}

#[tokio::test]
async fn an_endpoint_that_is_down_is_an_error_and_recall_says_keywords_only() {
    let settings = EmbeddingsSettings {
        url: Some("http://127.0.0.1:9/v1/embeddings".into()),
        ..Default::default()
    };
    let embedder = Embedder::from_settings(&settings, Path::new("/")).unwrap();
    let query = query_vector(Some(&embedder), "anything").await;
    assert!(query.semantic().is_none());
    let note = &query.unavailable;
    assert!(note.contains("keyword matches only"), "{note}");
    assert!(note.contains("127.0.0.1:9"), "{note}");
    let query = query_vector(None, "anything").await;
    assert!(query.semantic().is_none() && query.unavailable.is_empty());
}
