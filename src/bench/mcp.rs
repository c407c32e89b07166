//! `--compare-mcp`: what ouro adds to an MCP tool call over stdio. The same `echo` call is
//! timed through ouro's MCP tool (schema check, preparation, the call, rendering the result)
//! and as a bare rmcp round trip to a second instance of the same server; the difference is
//! ouro's overhead per call.

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde::Serialize;
use serde_json::json;

use super::BenchError;
use super::measure::{Spread, ms};
use crate::mcp::config::{Scope, ServerConfig, Transport};
use crate::mcp::{Limits, McpHub};
use crate::tools::{Progress, ToolContext, ToolSource};

/// The server's name in the session, so its tool is `mcp__bench__echo`.
const SERVER: &str = "bench";
const TOOL: &str = "echo";

#[derive(Debug, Clone, Serialize)]
pub struct McpCost {
    pub server: String,
    pub calls: usize,
    /// One call through ouro's MCP tool.
    pub tool_ms: Spread,
    /// The same call as a bare rmcp round trip.
    pub raw_ms: Spread,
    /// Median through ouro − median bare.
    pub added_ms: f64,
}

/// Times `calls` echo calls each way (after one untimed call each) against `command`, a
/// stdio server with an `echo` tool taking `message` (server-everything's shape).
pub async fn compare(command: &str, calls: usize) -> Result<McpCost, BenchError> {
    let config = ServerConfig {
        name: SERVER.to_string(),
        transport: Transport::Stdio {
            command: command.to_string(),
            args: Vec::new(),
            env: Default::default(),
        },
        scope: Scope::Flag,
    };
    let hub = McpHub::start(vec![config], Limits::patient(), None);
    hub.settle().await;
    let name = format!("mcp__{SERVER}__{TOOL}");
    let tool = hub
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| {
            let status = hub.servers().into_iter().next();
            let why = status
                .and_then(|s| s.error)
                .unwrap_or_else(|| format!("it offers no `{TOOL}` tool"));
            BenchError::Failed(format!("the MCP server `{command}` cannot be timed: {why}"))
        })?;
    let mut child = tokio::process::Command::new(command);
    child.kill_on_drop(true);
    let transport = TokioChildProcess::new(child)
        .map_err(|e| BenchError::io(format!("could not start `{command}`"), e))?;
    let raw = ()
        .serve(transport)
        .await
        .map_err(|e| BenchError::Failed(format!("the bare MCP connection failed: {e}")))?;

    let ctx = ToolContext::new(std::env::temp_dir());
    let input = json!({"message": "ping"});
    let arguments = input.as_object().cloned().unwrap_or_default();
    let mut through_ouro = Vec::with_capacity(calls);
    let mut bare = Vec::with_capacity(calls);
    for round in 0..=calls {
        let started = Instant::now();
        tool.check_schema(&input).map_err(failed)?;
        let call = tool.prepare(&input, &ctx).map_err(failed)?;
        let output = call
            .run(&ctx, &Progress::none())
            .await
            .map_err(|e| failed(e.to_string()))?;
        let ouro_took = started.elapsed();
        if output.is_error {
            return Err(failed(output.content));
        }
        let started = Instant::now();
        raw.call_tool(CallToolRequestParams::new(TOOL).with_arguments(arguments.clone()))
            .await
            .map_err(|e| failed(e.to_string()))?;
        let bare_took: Duration = started.elapsed();
        if round > 0 {
            through_ouro.push(ms(ouro_took));
            bare.push(ms(bare_took));
        }
    }
    let (Some(tool_ms), Some(raw_ms)) = (Spread::of(&through_ouro), Spread::of(&bare)) else {
        return Err(BenchError::Failed("no MCP calls were timed".into()));
    };
    Ok(McpCost {
        server: command.to_string(),
        calls,
        added_ms: tool_ms.median - raw_ms.median,
        tool_ms,
        raw_ms,
    })
}

fn failed(message: String) -> BenchError {
    BenchError::Invalid(format!("the MCP echo call failed: {message}"))
}
