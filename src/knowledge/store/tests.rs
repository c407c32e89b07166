use serde_json::json;

use super::*;
use crate::knowledge::ops;

fn ops(value: serde_json::Value) -> Vec<Operation> {
    ops::parse(&value).unwrap()
}

fn seeded(dir: &Path) -> Store {
    let mut store = Store::open(&dir.join("m.sqlite")).unwrap();
    store
        .apply(
            &ops(json!([
                {"op": "add_node", "type": "Strategy", "id": "bisect", "properties": {"name": "Bisect a regression", "description": "Find the breaking commit with git bisect run"}},
                {"op": "add_node", "type": "Tool", "id": "git", "properties": {"name": "git", "description": "version control"}},
                {"op": "add_edge", "source": "bisect", "target": "git", "type": "USES"},
            ])),
            Origin::User,
            &Provenance {
                session: Some("s1".into()),
                turn: Some(2),
                commit: None,
            },
        )
        .unwrap();
    store
}

#[test]
fn an_array_is_one_transaction_and_the_bad_operation_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = seeded(dir.path());
    let err = store
        .apply(
            &ops(json!([
                {"op": "add_node", "type": "Fact", "id": "f1", "properties": {"name": "kept?"}},
                {"op": "add_edge", "source": "f1", "target": "nowhere", "type": "USES"},
            ])),
            Origin::User,
            &Provenance::default(),
        )
        .unwrap_err();
    assert!(err.to_string().starts_with("operation 1:"), "{err}");
    assert!(store.node("f1").unwrap().is_none(), "nothing applied");
    let node = store.node("bisect").unwrap().unwrap();
    assert_eq!(node.provenance.session.as_deref(), Some("s1"));
    assert_eq!(node.provenance.turn, Some(2));
    assert_eq!(store.counts().unwrap(), (2, 1));
}

#[test]
fn an_invalidated_edge_stays_in_history_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = seeded(dir.path());
    let invalidate = ops(
        json!([{"op": "invalidate_edge", "source": "bisect", "target": "git", "type": "USES"}]),
    );
    store
        .apply(&invalidate, Origin::User, &Provenance::default())
        .unwrap();
    assert!(store.edges_of("bisect", false).unwrap().is_empty());
    assert!(store.edges_around("bisect", false).unwrap().is_empty());
    assert_eq!(store.edges_around("bisect", true).unwrap().len(), 1);
    let history = store.edges_of("bisect", true).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].1, "git");
    assert!(history[0].0.valid_to.is_some() && history[0].0.expired_at.is_some());
    // A second invalidation has nothing valid to close.
    let err = store
        .apply(&invalidate, Origin::User, &Provenance::default())
        .unwrap_err();
    assert!(err.to_string().contains("is valid now"), "{err}");
}

#[test]
fn secrets_are_redacted_and_forgotten_text_leaves_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = seeded(dir.path());
    let token = format!("sk-ant-api03-{}", "Q".repeat(40));
    let marker = "zebracorn-marker-text";
    store
        .apply(
            &ops(json!([
                {"op": "add_node", "type": "Fact", "id": "key", "properties": {"name": "API key", "description": format!("the key is {token}")}},
                {"op": "add_node", "type": "Fact", "id": "gone", "properties": {"name": marker, "description": marker}},
            ])),
            Origin::ToolOutput,
            &Provenance::default(),
        )
        .unwrap();
    let key = store.node("key").unwrap().unwrap();
    assert_eq!(key.description, "the key is [redacted]");
    assert_eq!(key.origin, Origin::ToolOutput);
    assert_eq!(store.search("zebracorn", 5).unwrap().len(), 1);
    assert!(store.forget("gone").unwrap());
    assert!(!store.forget("gone").unwrap());
    assert!(store.search("zebracorn", 5).unwrap().is_empty());
    drop(store);
    let bytes = std::fs::read(dir.path().join("m.sqlite")).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains("sk-ant-api03"), "the token reached the file");
    assert!(
        !text.contains(marker),
        "forgotten text is still in the file"
    );
}

#[test]
fn search_is_by_words_and_survives_operator_characters() {
    let dir = tempfile::tempdir().unwrap();
    let store = seeded(dir.path());
    let found = store.search("how do I find a breaking commit?", 5).unwrap();
    assert_eq!(found[0].id, "bisect");
    assert_eq!(store.search("bisecting", 5).unwrap().len(), 1, "stemmed");
    for odd in ["\"", "NEAR(", "name:git", "*", "a AND", "-x", ""] {
        assert!(store.search(odd, 5).is_ok(), "{odd}");
    }
    assert_eq!(store.list(10).unwrap().len(), 2);
}

#[test]
fn an_import_checks_what_an_operation_would_and_twice_keeps_each_relation_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = seeded(dir.path());
    let export = crate::knowledge::Export {
        schema: crate::knowledge::EXPORT_SCHEMA.into(),
        nodes: store.all_nodes().unwrap(),
        edges: store.all_edges().unwrap(),
    };
    assert_eq!(export.check(), Ok(()));
    let other = tempfile::tempdir().unwrap();
    let mut fresh = Store::open(&other.path().join("m.sqlite")).unwrap();
    for _ in 0..2 {
        fresh.restore(&export.nodes, &export.edges).unwrap();
    }
    assert_eq!(fresh.counts().unwrap(), (2, 1));
    let mut bad = export.clone();
    bad.schema = "something-else/9".into();
    assert!(bad.check().unwrap_err().contains("schema"));
    let mut bad = export.clone();
    bad.nodes[0].name = "x".repeat(10_000);
    assert!(bad.check().unwrap_err().starts_with("memory 0:"));
    let mut bad = export.clone();
    bad.edges[0].target = bad.edges[0].source.clone();
    assert!(bad.check().unwrap_err().contains("to itself"));
    let mut bad = export;
    bad.nodes[0].id = "ghp_abcdefghijklmnopqrstuvwxyz0123456789".into();
    let why = bad.check().unwrap_err();
    assert!(
        why.contains("access token") && !why.contains("ghp_"),
        "{why}"
    );
}
