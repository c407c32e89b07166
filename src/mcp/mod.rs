//! The MCP client: servers from the settings, `.mcp.json` and `--mcp-config` connect in
//! parallel in the background, and their tools join the session as `mcp__<server>__<tool>`
//! as each one is ready. The first request waits for them only briefly.

pub mod config;
mod connect;
mod limits;
mod server;
mod sse;
mod tool;

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::watch;

use crate::tools::{DynTool, ServerStatus, ToolSource};
use config::ServerConfig;
pub use limits::Limits;

pub struct McpHub {
    servers: Vec<Arc<server::Server>>,
    changes: watch::Receiver<u64>,
    limits: Limits,
}

impl McpHub {
    /// Starts connecting every server (on the current tokio runtime) and returns at once.
    pub fn start(configs: Vec<ServerConfig>, limits: Limits) -> Arc<McpHub> {
        let (tx, changes) = watch::channel(0);
        let servers: Vec<Arc<server::Server>> = configs
            .into_iter()
            .map(|c| Arc::new(server::Server::new(c, limits, tx.clone())))
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
            let deadline = tokio::time::Instant::now() + self.limits.startup_wait;
            while self.servers.iter().any(|s| s.is_connecting()) {
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
