//! Memory's semantic search end to end: a generated model2vec folder loaded by the real code,
//! and an OpenAI-compatible endpoint (the mock's `/v1/embeddings`), each finding a memory whose
//! words the query does not share, and recall going on with keywords when the model fails.

use serde_json::{Value, json};

use crate::common::{Run, Sandbox, bodies, server};

/// Four meanings: speed, search, failure, databases.
fn words() -> Vec<(&'static str, Vec<f32>)> {
    vec![
        ("fast", vec![1.0, 0.0, 0.0, 0.0]),
        ("quick", vec![0.95, 0.05, 0.0, 0.0]),
        ("search", vec![0.0, 1.0, 0.0, 0.0]),
        ("lookup", vec![0.05, 0.95, 0.0, 0.0]),
        ("ripgrep", vec![0.3, 0.9, 0.0, 0.0]),
        ("crash", vec![0.0, 0.0, 0.95, 0.05]),
        ("postgres", vec![0.0, 0.0, 0.1, 0.95]),
    ]
}

async fn ouro(sb: &Sandbox, url: &str, args: &[&str]) -> Run {
    let run = sb.run(url, args).await;
    assert!(run.status.success(), "{}", run.debug());
    run
}

fn user_settings(sb: &Sandbox, settings: Value) {
    std::fs::write(sb.home.path().join("settings.json"), settings.to_string()).unwrap();
}

async fn add_two(sb: &Sandbox, url: &str) -> (Run, Run) {
    let rg = ouro(
        sb,
        url,
        &[
            "memory",
            "add",
            "--type",
            "Tool",
            "--id",
            "rg",
            "--name",
            "Use ripgrep",
            "--description",
            "fast search in big trees",
        ],
    )
    .await;
    let pg = ouro(
        sb,
        url,
        &[
            "memory",
            "add",
            "--type",
            "FailureCase",
            "--id",
            "pg",
            "--name",
            "Postgres crash",
            "--description",
            "the migration takes a lock",
        ],
    )
    .await;
    (rg, pg)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_local_model2vec_folder_lets_recall_find_a_memory_by_meaning() {
    let sb = Sandbox::new();
    let model = sb.home.path().join("models/tiny");
    ouro::knowledge::embed::fixture::write_model2vec(&model, &words()).unwrap();
    user_settings(
        &sb,
        json!({"memory": {"embeddings": {"path": "~/models/tiny"}}}),
    );
    let url = "http://127.0.0.1:9";
    add_two(&sb, url).await;
    let embedded = ouro(&sb, url, &["memory", "embed"]).await;
    assert!(
        embedded
            .stdout
            .contains("Embedded 0 memories; 2 have vectors"),
        "add made the vectors: {}",
        embedded.debug()
    );
    let found = ouro(&sb, url, &["memory", "search", "quick lookup"]).await;
    assert!(found.stdout.contains("Use ripgrep"), "{}", found.debug());
    assert!(!found.stdout.contains("Postgres"), "{}", found.debug());

    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "id": "toolu_recall", "name": "Recall",
                      "input": {"query": "quick lookup"}}]},
        {"content": [{"type": "text", "text": "ripgrep."}]}
    ]}))
    .await;
    let session = ouro(
        &sb,
        &mock.url(),
        &["-p", "--trust-project", "how do we look things up?"],
    )
    .await;
    let request = &bodies(&mock)[1];
    let recalled = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .map(|b| b["content"].to_string())
        .unwrap_or_else(|| panic!("no Recall result: {}", session.debug()));
    assert!(recalled.contains("Use ripgrep"), "{recalled}");
    assert!(!recalled.contains("Postgres"), "{recalled}");

    // The same query on keywords alone finds nothing: the vectors found it.
    user_settings(&sb, json!({}));
    let keywords = ouro(&sb, url, &["memory", "recall", "quick lookup"]).await;
    assert!(
        keywords.stdout.contains("Nothing in memory matches"),
        "{}",
        keywords.debug()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_embeddings_endpoint_gets_the_key_it_names_and_a_failing_one_leaves_keywords() {
    let sb = Sandbox::new();
    let mock = server(json!({"turns": []})).await;
    let url = mock.url();
    user_settings(
        &sb,
        json!({"memory": {"embeddings": {"url": format!("{url}/v1/embeddings"),
               "model": "text-embedding-3-small", "apiKeyEnv": "OURO_TEST_EMBED_KEY"}}}),
    );
    // No key in this shell: the memories are kept, and the user is told what is missing.
    let (rg, _) = add_two(&sb, &url).await;
    assert!(
        rg.stderr.contains("OURO_TEST_EMBED_KEY") && rg.stderr.contains("ouro memory embed"),
        "{}",
        rg.debug()
    );
    let listed = ouro(&sb, &url, &["memory", "list"]).await;
    assert!(listed.stdout.contains("Use ripgrep"), "{}", listed.debug());

    let mut embed = sb.command(&url, &["memory", "embed"]);
    embed.env("OURO_TEST_EMBED_KEY", "sk-test");
    let embedded = Run::from(embed.output().await.unwrap());
    assert!(
        embedded.status.success() && embedded.stdout.contains("Embedded 2 memories"),
        "{}",
        embedded.debug()
    );
    // "grep" is no word of the memory ("ripgrep" is): only its spelling's vector finds it.
    let mut recall = sb.command(&url, &["memory", "recall", "grep"]);
    recall.env("OURO_TEST_EMBED_KEY", "sk-test");
    let recalled = Run::from(recall.output().await.unwrap());
    assert!(
        recalled.stdout.contains("Use ripgrep"),
        "{}",
        recalled.debug()
    );
    assert!(
        !recalled.stdout.contains("keyword matches only"),
        "{}",
        recalled.debug()
    );

    // Without the key the endpoint answers 401: recall says so and goes on with keywords.
    let without = ouro(&sb, &url, &["memory", "recall", "postgres"]).await;
    assert!(
        without.stdout.contains("Postgres crash"),
        "{}",
        without.debug()
    );
    assert!(
        without.stdout.contains("keyword matches only")
            && without.stdout.contains("OURO_TEST_EMBED_KEY"),
        "{}",
        without.debug()
    );
    user_settings(
        &sb,
        json!({"memory": {"embeddings": {"url": format!("{url}/v1/embeddings")}}}),
    );
    let unauthorized = ouro(&sb, &url, &["memory", "recall", "grep"]).await;
    assert!(
        unauthorized.stdout.contains("401")
            && unauthorized.stdout.contains("Nothing in memory matches"),
        "{}",
        unauthorized.debug()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_setting_with_both_a_url_and_a_path_is_refused_with_a_clear_sentence() {
    let sb = Sandbox::new();
    user_settings(
        &sb,
        json!({"memory": {"embeddings": {"url": "http://127.0.0.1:9/v1/embeddings", "path": "m"}}}),
    );
    let run = sb
        .run("http://127.0.0.1:9", &["memory", "recall", "x"])
        .await;
    assert!(!run.status.success());
    assert!(run.stderr.contains("either \"url\""), "{}", run.debug());
    let session = sb.run("http://127.0.0.1:9", &["-p", "hi"]).await;
    assert!(!session.status.success());
    assert!(
        session.stderr.contains("memory.embeddings"),
        "{}",
        session.debug()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn what_reflect_keeps_gets_its_vector_before_the_session_ends() {
    let sb = Sandbox::new();
    let model = sb.home.path().join("models/tiny");
    ouro::knowledge::embed::fixture::write_model2vec(&model, &words()).unwrap();
    user_settings(&sb, json!({"memory": {"embeddings": {"path": model}}}));
    sb.write(".ouro/settings.json", r#"{"memory": {"reflect": "auto"}}"#);
    let proposal = json!([{"op": "add_node", "type": "Tool", "id": "rg",
        "properties": {"name": "Use ripgrep", "description": "fast search"}}]);
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Use ripgrep."}]},
        {"expect_text": "The user's prompt, quoted",
         "content": [{"type": "text", "text": proposal.to_string()}]}
    ]}))
    .await;
    let url = mock.url();
    ouro(&sb, &url, &["-p", "--trust-project", "how do we search?"]).await;
    let embedded = ouro(&sb, &url, &["memory", "embed"]).await;
    assert!(
        embedded
            .stdout
            .contains("Embedded 0 memories; 1 have vectors"),
        "{}",
        embedded.debug()
    );
    let found = ouro(&sb, &url, &["memory", "search", "quick lookup"]).await;
    assert!(found.stdout.contains("Use ripgrep"), "{}", found.debug());
}
