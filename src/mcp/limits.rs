//! How long MCP servers may take and how much they may return.

use std::time::Duration;

/// Time limits and caps, from Claude Code's environment variables where it has them.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `MCP_TIMEOUT` (ms): connecting and listing tools.
    pub connect_timeout: Duration,
    /// `MCP_TOOL_TIMEOUT` (ms): one tool call.
    pub(crate) call_timeout: Duration,
    /// `MAX_MCP_OUTPUT_TOKENS` (×4 characters): one tool result.
    pub max_result_chars: usize,
    /// `OURO_MCP_STARTUP_WAIT_MS`: how long the first request waits for servers.
    pub(crate) startup_wait: Duration,
    /// Say on stderr when a server does not start (a session does; `ouro mcp list` shows it
    /// in its own output).
    pub report: bool,
}

impl Limits {
    pub fn from_env() -> Limits {
        let ms = |var: &str, default: u64| {
            Duration::from_millis(
                std::env::var(var)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(default),
            )
        };
        let tokens = std::env::var("MAX_MCP_OUTPUT_TOKENS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(25_000);
        Limits {
            connect_timeout: ms("MCP_TIMEOUT", 30_000),
            call_timeout: ms("MCP_TOOL_TIMEOUT", 600_000),
            max_result_chars: tokens.saturating_mul(4),
            startup_wait: ms("OURO_MCP_STARTUP_WAIT_MS", 1_000),
            report: true,
        }
    }

    /// For a check outside a session (`ouro mcp list`, `ouro bench`): wait for every server
    /// as long as it may take to connect, and say nothing on stderr.
    pub fn patient() -> Limits {
        let mut limits = Limits::from_env();
        limits.startup_wait = limits.connect_timeout;
        limits.report = false;
        limits
    }
}
