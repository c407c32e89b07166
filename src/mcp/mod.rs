//! The MCP client: servers from the settings, `.mcp.json` and `--mcp-config` connect in
//! parallel in the background, and their tools join the session as `mcp__<server>__<tool>`
//! as each one is ready. The first request waits for them only briefly.

pub(crate) mod catalog;
pub mod config;
mod connect;
mod limits;
mod sdk_link;
mod server;
mod sse;
mod tool;

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::watch;

use crate::tools::{DynTool, ServerStatus, ToolSource};
use catalog::{PromptInfo, ResourceInfo};
use config::ServerConfig;
pub use limits::Limits;
pub use sdk_link::{SdkBridge, SdkLink};

pub struct McpHub {
    servers: Vec<Arc<server::Server>>,
    changes: watch::Receiver<u64>,
    limits: Limits,
}

impl McpHub {
    /// Starts connecting every server (on the current tokio runtime) and returns at once.
    /// `sdk` reaches the servers that live in the Agent SDK driving this session.
    pub fn start(configs: Vec<ServerConfig>, limits: Limits, sdk: Option<SdkLink>) -> Arc<McpHub> {
        let (tx, changes) = watch::channel(0);
        let servers: Vec<Arc<server::Server>> = configs
            .into_iter()
            .map(|c| Arc::new(server::Server::new(c, limits, tx.clone(), sdk.clone())))
            .collect();
        for server in &servers {
            tokio::spawn(server.clone().start());
        }
        Arc::new(McpHub {
            servers,
            changes,
            limits,
        })
    }
}

impl McpHub {
    /// Every server's prompts, as slash commands.
    pub fn prompts(&self) -> Vec<PromptInfo> {
        self.servers.iter().flat_map(|s| s.prompts()).collect()
    }

    pub fn resources(&self) -> Vec<ResourceInfo> {
        self.servers.iter().flat_map(|s| s.resources()).collect()
    }

    pub fn has_server(&self, name: &str) -> bool {
        self.servers.iter().any(|s| s.config.name == name)
    }

    fn server(&self, name: &str) -> Result<&Arc<server::Server>, String> {
        self.servers
            .iter()
            .find(|s| s.config.name == name)
            .ok_or_else(|| format!("There is no MCP server \"{name}\" (/mcp lists them)"))
    }

    /// The text of prompt command `command` (without its slash) with the typed `line` as its
    /// arguments.
    pub async fn run_prompt(&self, command: &str, line: &str) -> Result<String, String> {
        let prompt = self
            .prompts()
            .into_iter()
            .find(|p| p.command == command)
            .ok_or_else(|| {
                format!("No connected MCP server offers /{command} (/mcp lists them)")
            })?;
        let arguments = prompt.arguments_from(line)?;
        let result = self
            .server(&prompt.server)?
            .get_prompt(&prompt.name, arguments)
            .await
            .map_err(|e| {
                format!(
                    "The MCP server \"{}\" could not give /{command}: {e}",
                    prompt.server
                )
            })?;
        Ok(catalog::render_prompt(&result))
    }

    /// A resource as an attachment.
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<String, String> {
        let result = self
            .server(server)?
            .read_resource(uri)
            .await
            .map_err(|e| format!("The MCP server \"{server}\" could not read {uri}: {e}"))?;
        Ok(catalog::render_resource(server, uri, &result))
    }

    /// The Agent SDK's `mcp_toggle`.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), String> {
        self.server(name)?.set_enabled(enabled);
        Ok(())
    }

    /// The Agent SDK's `mcp_reconnect`: the error says why it failed.
    pub async fn reconnect(&self, name: &str) -> Result<(), String> {
        let server = self.server(name)?.clone();
        server
            .reconnect()
            .await
            .map_err(|e| format!("MCP server \"{name}\" did not reconnect: {e}"))
    }

    /// Every server's state as the Agent SDK's `mcp_status` answers it.
    pub fn report(&self) -> Vec<serde_json::Value> {
        self.servers.iter().map(|s| s.report()).collect()
    }

    /// One line per server: how it is reached, its state and what it offers.
    pub fn overview(&self) -> Vec<String> {
        self.servers
            .iter()
            .map(|server| {
                let status = server.status();
                let state = match (status.status.as_str(), &status.error) {
                    ("connected", _) => {
                        let mut offers = vec![count(status.tools, "tool")];
                        let prompts = server.prompts().len();
                        if prompts > 0 {
                            offers.push(count(prompts, "prompt"));
                        }
                        let resources = server.resources().len();
                        if resources > 0 {
                            offers.push(count(resources, "resource"));
                        }
                        format!("✓ connected, {}", offers.join(", "))
                    }
                    (_, Some(error)) => format!("✗ failed: {error}"),
                    (other, None) => other.to_string(),
                };
                let transport = &server.config.transport;
                format!(
                    "{}: {} ({}) - {state}",
                    server.config.name,
                    transport.describe(),
                    transport.kind()
                )
            })
            .collect()
    }
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

impl ToolSource for McpHub {
    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        self.servers.iter().flat_map(|s| s.tools()).collect()
    }

    fn generation(&self) -> u64 {
        *self.changes.borrow()
    }

    fn settle(&self) -> BoxFuture<'_, ()> {
        async move {
            let mut changes = self.changes.clone();
            let started = tokio::time::Instant::now();
            // An SDK server lives in the program that drives ouro and answers as soon as that
            // program does, so the first request waits for it as long as a connect may take.
            let wait_for = |s: &server::Server| {
                if matches!(s.config.transport, config::Transport::Sdk { .. }) {
                    self.limits.connect_timeout
                } else {
                    self.limits.startup_wait
                }
            };
            loop {
                let Some(deadline) = self
                    .servers
                    .iter()
                    .filter(|s| s.is_connecting())
                    .map(|s| started + wait_for(s))
                    .max()
                else {
                    return;
                };
                match tokio::time::timeout_at(deadline, changes.changed()).await {
                    Ok(Ok(())) => {}
                    // Out of time, or every server is gone.
                    Err(_) | Ok(Err(_)) => return,
                }
            }
        }
        .boxed()
    }

    fn servers(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }
}
