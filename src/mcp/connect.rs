//! Opening a connection to one server with rmcp: a child process over stdio (its stderr goes
//! to the log, never to the screen), streamable HTTP or legacy SSE with the configured headers.

use std::collections::BTreeMap;
use std::process::Stdio;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;

use super::config::Transport;
use super::sdk_link::{SdkLink, SdkTransport};
use super::sse::SseTransport;

pub(super) type Client = RunningService<RoleClient, ()>;

/// Connects and completes the MCP handshake; the error is a sentence for the user.
pub(super) async fn open(
    server: &str,
    transport: &Transport,
    sdk: Option<&SdkLink>,
) -> Result<Client, String> {
    match transport {
        Transport::Sdk { .. } => {
            let link = sdk.ok_or(
                "it is an in-process server of the Agent SDK, which only an SDK driving ouro (--input-format stream-json) can serve",
            )?;
            ().serve(SdkTransport::new(server, link))
                .await
                .map_err(|e| {
                    format!(
                        "the MCP handshake through the SDK failed ({})",
                        root_cause(&e)
                    )
                })
        }
        Transport::Stdio { command, args, env } => {
            let mut cmd = tokio::process::Command::new(command);
            // What the server's `env` names it gets; of ouro's own environment, no secret.
            cmd.args(args)
                .env_clear()
                .envs(crate::sys::secrets::tool_env(std::env::vars_os(), &[]))
                .envs(env)
                .kill_on_drop(true);
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
            crate::api::client::install_crypto();
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(parse_headers(headers)?.into_iter().collect());
            let transport = StreamableHttpClientTransport::from_config(config);
            ().serve(transport)
                .await
                .map_err(|e| unreachable_at(url, &e))
        }
        Transport::Sse { url, headers } => {
            let transport =
                SseTransport::connect(url, parse_headers(headers)?.into_iter().collect())
                    .await
                    .map_err(|e| format!("could not connect to {url}: {e}"))?;
            ().serve(transport)
                .await
                .map_err(|e| unreachable_at(url, &e))
        }
    }
}

fn unreachable_at(url: &str, error: &(dyn std::error::Error + 'static)) -> String {
    let cause = root_cause(error);
    // rmcp's HTTP errors carry the worker's type name before the cause.
    let cause = cause.rsplit("Client error: ").next().unwrap_or(&cause);
    format!("could not connect to {url}: {cause}")
}

fn parse_headers(
    headers: &BTreeMap<String, String>,
) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    headers
        .iter()
        .map(|(name, value)| {
            let header = HeaderName::try_from(name.as_str())
                .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
            let value = HeaderValue::try_from(value.as_str())
                .map_err(|_| format!("the value of header `{name}` is not valid"))?;
            Ok((header, value))
        })
        .collect()
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
