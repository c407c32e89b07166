//! End-to-end: MCP in the REPL (issue 16), against the real `@modelcontextprotocol/server-everything`
//! from npm: `/mcp` shows the server, its prompts run as slash commands and `@server:uri`
//! attaches a resource.

use crate::common;
use crate::common::pty;

use common::{Sandbox, bodies, last_user_text, server};
use pty::{Options, Term};
use serde_json::json;

/// The REPL with server-everything configured.
fn with_everything(sb: &Sandbox, url: &str) -> Term {
    let mcp =
        json!({"mcpServers": {"everything": {"command": "mcp-server-everything"}}}).to_string();
    Term::start(
        sb,
        url,
        Options {
            args: &["--mcp-config", &mcp],
            ..Options::default()
        },
    )
}

/// Runs `/mcp` until the server is connected (its start-up takes a moment); the prompt after
/// the listing is left for the next `submit`.
fn connected(term: &mut Term) -> String {
    for _ in 0..20 {
        term.submit("/mcp");
        // With its line end: the command hints under the prompt say "MCP servers: status…".
        term.expect("MCP servers:\n");
        let listing = term.peek("\n› ");
        // Prompts and resources are listed just after the tools.
        if listing.contains("✓ connected") && listing.contains("resources") {
            return listing;
        }
        assert!(!listing.contains("failed"), "{listing}");
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    panic!("the server did not connect: {}", term.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_mcp_shows_each_server_with_what_it_offers() {
    if !common::skip::mcp_everything() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": []})).await;
    let mut term = with_everything(&sb, &mock.url());
    let listing = connected(&mut term);
    assert!(
        listing.contains("everything: mcp-server-everything (stdio) - ✓ connected,"),
        "{listing}"
    );
    assert!(
        listing.contains("/mcp__everything__args-prompt <city> [state]"),
        "{listing}"
    );
    term.exit();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_prompt_runs_as_a_slash_command_and_a_resource_attaches() {
    if !common::skip::mcp_everything() {
        return;
    }
    let sb = Sandbox::new();
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "Sunny."}]},
        {"content": [{"type": "text", "text": "Read it."}]}
    ]}))
    .await;
    let mut term = with_everything(&sb, &mock.url());
    connected(&mut term);
    term.submit("/mcp__everything__args-prompt");
    term.expect("needs its argument `city`");
    term.submit("/mcp__everything__args-prompt Springfield North Dakota");
    term.expect("Sunny.");
    assert_eq!(
        last_user_text(&bodies(&mock)[0]),
        "What's weather in Springfield, North Dakota?"
    );
    term.submit("summarise @everything:demo://resource/static/document/features.md please");
    term.expect("Read it.");
    let sent = last_user_text(&bodies(&mock)[1]);
    assert!(
        sent.contains(
            "<resource server=\"everything\" uri=\"demo://resource/static/document/features.md\">"
        ),
        "{sent}"
    );
    assert!(sent.len() > 400, "the document's text is attached: {sent}");
    term.submit("@everything:demo://nothing/here");
    term.expect("could not read demo://nothing/here");
    term.exit();
}
