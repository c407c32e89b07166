//! Opening a connection to one server with rmcp: a child process over stdio (its stderr goes
//! to the log, never to the screen) or streamable HTTP with the configured headers.

use std::collections::HashMap;
use std::process::Stdio;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;

use super::config::Transport;

pub type Client = RunningService<RoleClient, ()>;

/// Connects and completes the MCP handshake; the error is a sentence for the user.
pub async fn open(server: &str, transport: &Transport) -> Result<Client, String> {
    match transport {
        Transport::Stdio { command, args, env } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).envs(env).kill_on_drop(true);
            let (child, stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("could not start `{command}`: {e}"))?;
            if let Some(stderr) = stderr {
                let name = server.to_string();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tracing::debug!(server = %name, "mcp stderr: {line}");
                    }
                });
            }
            ().serve(child).await.map_err(|e| {
                format!(
                    "the MCP handshake with `{command}` failed ({}); run the command yourself to see its error",
                    root_cause(&e)
                )
            })
        }
        Transport::Http { url, headers } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let header = HeaderName::try_from(name.as_str())
                    .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
                let value = HeaderValue::try_from(value.as_str())
                    .map_err(|_| format!("the value of header `{name}` is not valid"))?;
                custom.insert(header, value);
            }
            config = config.custom_headers(custom);
            let transport = StreamableHttpClientTransport::from_config(config);
            ().serve(transport).await.map_err(|e| {
                let cause = root_cause(&e);
                // rmcp's HTTP errors carry the worker's type name before the cause.
                let cause = cause.rsplit("Client error: ").next().unwrap_or(&cause);
                format!("could not connect to {url}: {cause}")
            })
        }
        Transport::Sse { url, .. } => Err(format!(
            "{url} uses the legacy SSE transport, which ouro does not speak (rmcp dropped it); \
             most servers also serve streamable HTTP: use \"type\": \"http\" with its /mcp URL"
        )),
    }
}

/// The innermost error: what actually went wrong (refused connection, closed pipe), without
/// the layers of transport type names above it.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut last = error;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}
