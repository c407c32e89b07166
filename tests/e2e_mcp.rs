//! End-to-end: ouro against real MCP servers from npm (`@modelcontextprotocol/server-everything`,
//! installed by .ci/run) with a scripted model (issue 16).

use crate::common;

use common::{Run, Sandbox, bodies, request_tool_results, server};
use serde_json::{Value, json};

const EVERYTHING: &str = "mcp-server-everything";

fn config(servers: Value) -> String {
    json!({ "mcpServers": servers }).to_string()
}

/// A print-mode run in stream-json with one allow rule and the given `--mcp-config`; it must
/// succeed. With `wait`, the first request waits for the servers however long a busy machine
/// takes to start them (what they say at start-up is the point then, not how soon they come).
async fn stream_run(
    sb: &Sandbox,
    url: &str,
    allowed: &str,
    mcp: &str,
    prompt: &str,
    wait: bool,
) -> Run {
    let args = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        allowed,
        "--mcp-config",
        mcp,
        "--",
        prompt,
    ];
    let run = if wait {
        sb.run_waiting_for_mcp(url, &args).await
    } else {
        sb.run(url, &args).await
    };
    assert!(run.status.success(), "{}", run.debug());
    run
}

/// Whether a request offers any tool of `server`.
fn offers_server(body: &Value, server: &str) -> bool {
    let prefix = format!("mcp__{server}__");
    offered(body).iter().any(|t| t.starts_with(&prefix))
}

fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_model_calls_an_mcp_tool_and_gets_its_result() {
    if !common::skip::mcp_everything() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "mcp__everything__echo", "input": {"message": "hi there"}}]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let mcp = config(json!({"everything": {"command": EVERYTHING}}));
    let run = stream_run(&sb, &mock.url(), "mcp__everything", &mcp, "echo it", true).await;
    let init = &run.of_type("system", Some("init"))[0];
    assert_eq!(
        init["mcp_servers"],
        json!([{"name": "everything", "status": "connected"}])
    );
    let requests = bodies(&mock);
    let tools = offered(&requests[0]);
    assert!(
        tools.contains(&"mcp__everything__echo".to_string()),
        "{tools:?}"
    );
    let mut sorted = tools.clone();
    sorted.sort();
    assert_eq!(tools, sorted, "tools are in a stable order");
    let results = request_tool_results(&requests[1]);
    assert_eq!(results[0]["content"], "Echo: hi there", "{results:?}");
    assert_ne!(results[0]["is_error"], true);
}

#[tokio::test]
async fn an_image_from_an_mcp_tool_reaches_the_model_as_an_image_block() {
    if !common::skip::mcp_everything() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "mcp__everything__get-tiny-image", "input": {}}]},
        {"content": [{"type": "text", "text": "a tiny image"}]}
    ]}))
    .await;
    let mcp = config(json!({"everything": {"command": EVERYTHING}}));
    stream_run(&sb, &mock.url(), "mcp__everything", &mcp, "show me", true).await;
    let results = request_tool_results(&bodies(&mock)[1]);
    let blocks = results[0]["content"].as_array().expect("content blocks");
    let image = blocks
        .iter()
        .find(|b| b["type"] == "image")
        .expect("an image block");
    assert_eq!(image["source"]["type"], "base64");
    assert_eq!(image["source"]["media_type"], "image/png");
    assert!(image["source"]["data"].as_str().unwrap().len() > 100);
    assert!(
        blocks.iter().any(|b| b["type"] == "text"),
        "the tool's text is kept: {blocks:?}"
    );
}

#[tokio::test]
async fn deny_rules_hold_for_mcp_tools_and_unallowed_ones_are_not_run_in_print_mode() {
    if !common::skip::mcp_everything() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [
            {"type": "tool_use", "name": "mcp__everything__echo", "input": {"message": "a"}},
            {"type": "tool_use", "name": "mcp__everything__get-sum", "input": {"a": 1, "b": 2}}
        ]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let mcp = config(json!({"everything": {"command": EVERYTHING}}));
    let run = sb
        .run_waiting_for_mcp(
            &mock.url(),
            &[
                "-p",
                "--allowedTools",
                "mcp__everything__*",
                "--disallowedTools",
                "mcp__everything__echo",
                "--mcp-config",
                &mcp,
                "--",
                "go",
            ],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let results = request_tool_results(&bodies(&mock)[1]);
    assert_eq!(results[0]["is_error"], true, "{results:?}");
    assert!(
        !results[0]["content"].as_str().unwrap().contains("Echo"),
        "{results:?}"
    );
    assert_ne!(results[1]["is_error"], true, "{results:?}");
    assert!(
        results[1]["content"].as_str().unwrap().contains('3'),
        "{results:?}"
    );

    // Without an allow rule nothing runs: print mode cannot ask.
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "mcp__everything__echo", "input": {"message": "a"}}]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let run = sb
        .run_waiting_for_mcp(&mock.url(), &["-p", "--mcp-config", &mcp, "--", "go"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let results = request_tool_results(&bodies(&mock)[1]);
    assert_eq!(results[0]["is_error"], true, "{results:?}");
}

#[tokio::test]
async fn a_failing_server_is_reported_once_and_the_turn_goes_on() {
    if !common::skip::mcp_everything() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [{"content": [{"type": "text", "text": "fine"}]}]})).await;
    let mcp = config(json!({
        "broken": {"command": "sh", "args": ["-c", "echo boom >&2; exit 3"]},
        "everything": {"command": EVERYTHING}
    }));
    let run = sb
        .run_waiting_for_mcp(
            &mock.url(),
            &[
                "-p",
                "--output-format",
                "json",
                "--mcp-config",
                &mcp,
                "--",
                "hi",
            ],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    assert_eq!(run.result()["result"], "fine");
    assert_eq!(
        run.stderr.matches("MCP server \"broken\"").count(),
        1,
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("ERROR"),
        "no raw library logs: {}",
        run.stderr
    );
    let first = &bodies(&mock)[0];
    assert!(offers_server(first, "everything"), "{:?}", offered(first));
    assert!(!offers_server(first, "broken"), "{:?}", offered(first));
}

#[tokio::test]
async fn a_slow_server_does_not_hold_the_first_request_and_joins_later() {
    if !common::skip::mcp_everything() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "sleep 4"}}]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let slow = format!("sleep 2; exec {EVERYTHING}");
    let mcp = config(json!({"slow": {"command": "sh", "args": ["-c", slow]}}));
    let run = stream_run(&sb, &mock.url(), "Bash(sleep:*)", &mcp, "wait", false).await;
    let init = &run.of_type("system", Some("init"))[0];
    assert_eq!(
        init["mcp_servers"],
        json!([{"name": "slow", "status": "pending"}])
    );
    let requests = bodies(&mock);
    assert!(!offers_server(&requests[0], "slow"));
    assert!(offers_server(&requests[1], "slow"));
    let changed = run.of_type("system", Some("tools_changed"));
    assert_eq!(changed.len(), 1, "{}", run.stdout);
    assert_eq!(changed[0]["mcp_servers"][0]["status"], "connected");
}

#[tokio::test]
async fn mcp_add_list_get_and_remove_round_trip() {
    if !common::skip::mcp_everything() {
        return;
    }
    let sb = Sandbox::new();
    let add = sb
        .run(
            "http://unused",
            &["mcp", "add", "everything", "--", EVERYTHING],
        )
        .await;
    assert!(add.status.success(), "{}", add.debug());
    let add = sb
        .run(
            "http://unused",
            &[
                "mcp",
                "add",
                "-s",
                "project",
                "-t",
                "http",
                "-H",
                "Authorization: Bearer ${TOKEN:-none}",
                "web",
                "http://127.0.0.1:9/mcp",
            ],
        )
        .await;
    assert!(add.status.success(), "{}", add.debug());
    let project: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.root().join(".mcp.json")).unwrap())
            .unwrap();
    assert_eq!(
        project["mcpServers"]["web"]["headers"]["Authorization"],
        "Bearer ${TOKEN:-none}"
    );

    let list = sb.run("http://unused", &["mcp", "list"]).await;
    assert!(list.status.success(), "{}", list.debug());
    assert!(
        list.stdout
            .contains("everything: mcp-server-everything (stdio) - ✓ connected"),
        "{}",
        list.stdout
    );
    // The sandbox directory is not trusted, so its .mcp.json is not used.
    assert!(!list.stdout.contains("web:"), "{}", list.stdout);

    let get = sb.run("http://unused", &["mcp", "get", "everything"]).await;
    assert!(
        get.stdout.contains("Scope: user settings"),
        "{}",
        get.stdout
    );
    let remove = sb
        .run("http://unused", &["mcp", "remove", "everything"])
        .await;
    assert!(remove.status.success(), "{}", remove.debug());
    let remove = sb.run("http://unused", &["mcp", "remove", "web"]).await;
    assert!(remove.status.success(), "{}", remove.debug());
    let list = sb.run("http://unused", &["mcp", "list"]).await;
    assert!(
        list.stdout.contains("No MCP servers are configured"),
        "{}",
        list.stdout
    );
    let missing = sb
        .run("http://unused", &["mcp", "remove", "everything"])
        .await;
    assert!(!missing.status.success());
    assert!(
        missing
            .stderr
            .contains("There is no MCP server \"everything\""),
        "{}",
        missing.stderr
    );
}

/// server-everything serving HTTP on a free port, stopped when dropped.
struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl HttpServer {
    async fn start(mode: &str) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new(EVERYTHING)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Built first, so a server that never listens is still stopped.
        let server = HttpServer { child, port };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return server;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("{EVERYTHING} {mode} did not listen on port {port}");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn streamable_http_and_legacy_sse_servers_serve_tools_with_headers() {
    if !common::skip::mcp_everything() {
        return;
    }
    let http = HttpServer::start("streamableHttp").await;
    let sse = HttpServer::start("sse").await;
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [
            {"type": "tool_use", "name": "mcp__web__echo", "input": {"message": "over http"}},
            {"type": "tool_use", "name": "mcp__old__echo", "input": {"message": "over sse"}}
        ]},
        {"content": [{"type": "text", "text": "done"}]}
    ]}))
    .await;
    let headers = json!({"Authorization": "Bearer ${MCP_TEST_TOKEN:-none}"});
    let mcp = json!({"mcpServers": {
        "web": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", http.port), "headers": headers},
        "old": {"type": "sse", "url": format!("http://127.0.0.1:{}/sse", sse.port), "headers": headers}
    }})
    .to_string();
    let run = stream_run(&sb, &mock.url(), "mcp__web,mcp__old", &mcp, "echo", true).await;
    let init = &run.of_type("system", Some("init"))[0];
    let mut statuses = init["mcp_servers"].as_array().unwrap().clone();
    statuses.sort_by_key(|s| s["name"].as_str().unwrap().to_string());
    assert_eq!(
        statuses,
        [
            json!({"name": "old", "status": "connected"}),
            json!({"name": "web", "status": "connected"})
        ]
    );
    let results = request_tool_results(&bodies(&mock)[1]);
    assert_eq!(results[0]["content"], "Echo: over http", "{results:?}");
    assert_eq!(results[1]["content"], "Echo: over sse", "{results:?}");
}
