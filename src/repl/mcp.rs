//! MCP in the REPL: `/mcp` shows each server, a server's prompts run as
//! `/mcp__<server>__<prompt> args`, and `@<server>:<uri>` attaches a resource.

use super::Repl;
use super::complete::Command;
use crate::mcp::McpHub;

impl Repl {
    /// `/mcp`: each server's transport, state (with what it offers, or its last error).
    pub(super) async fn mcp_status(&mut self) {
        let Some(hub) = self.mcp.clone() else {
            self.ui.render.print(
                "No MCP servers are configured. Add one with `ouro mcp add NAME -- COMMAND` \
                 (or .mcp.json, or --mcp-config).",
            );
            return;
        };
        // A server still starting gets the same short wait as the first request.
        crate::tools::ToolSource::settle(hub.as_ref()).await;
        let mut text = String::from("MCP servers:\n");
        for line in hub.overview() {
            text.push_str(&format!("  {line}\n"));
        }
        let prompts = hub.prompts();
        if !prompts.is_empty() {
            text.push_str("Prompts (run as commands):\n");
            for prompt in prompts {
                text.push_str(&format!("  {}  {}\n", prompt.usage(), prompt.description));
            }
        }
        let resources = hub.resources().len();
        if resources > 0 {
            text.push_str(&format!(
                "{resources} resources: type @ and the server's name, then Tab, to attach one.\n"
            ));
        }
        self.ui.render.print(text.trim_end());
    }

    /// `/mcp__<server>__<prompt> args`: the server's prompt, sent as the user's message.
    pub(super) async fn mcp_prompt(&mut self, command: &str, arguments: &str) {
        let Some(hub) = self.mcp.clone() else {
            self.fail(&format!(
                "Unknown command /{command}: no MCP servers are configured."
            ));
            return;
        };
        match hub.run_prompt(command, arguments).await {
            Ok(text) if text.trim().is_empty() => {
                self.fail(&format!(
                    "/{command} gave an empty prompt; nothing was sent."
                ));
            }
            Ok(text) => {
                let typed = format!("/{command} {arguments}");
                self.prompt_as(&text, typed.trim_end()).await;
            }
            Err(e) => self.fail(&e),
        }
    }

    /// The `@server:uri` mentions of `text` that name a resource of a configured server, read.
    /// A failed read is shown and attaches nothing.
    pub(super) async fn mcp_attachments(&mut self, text: &str) -> Vec<String> {
        let Some(hub) = self.mcp.clone() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (server, uri) in mentions(&hub, text) {
            match hub.read_resource(&server, &uri).await {
                Ok(attachment) => out.push(attachment),
                Err(e) => self.fail(&format!("{e}; it is not attached.")),
            }
        }
        out
    }
}

/// What the prompt offers besides the built-in and project commands: the MCP prompts, and the
/// resources to mention.
pub(super) fn offers(hub: Option<&McpHub>) -> (Vec<Command>, Vec<String>) {
    let Some(hub) = hub else {
        return (Vec::new(), Vec::new());
    };
    let commands = hub
        .prompts()
        .into_iter()
        .map(|p| Command {
            name: format!("/{}", p.command),
            about: format!("{} (MCP)", p.description),
        })
        .collect();
    let resources = hub
        .resources()
        .into_iter()
        .map(|r| r.mention().trim_start_matches('@').to_string())
        .collect();
    (commands, resources)
}

/// `@server:uri` words whose server is configured; `@file.rs` and `@a:b` of unknown servers
/// are left to the file mentions.
fn mentions(hub: &McpHub, text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for word in text.split_whitespace() {
        let Some(mention) = word.strip_prefix('@') else {
            continue;
        };
        let mention = mention.trim_end_matches([',', '.', ';', '!', '?', ')', '"', '\'']);
        let Some((server, uri)) = mention.split_once(':') else {
            continue;
        };
        if !uri.is_empty() && hub.has_server(server) {
            let pair = (server.to_string(), uri.to_string());
            if !found.contains(&pair) {
                found.push(pair);
            }
        }
    }
    found
}
