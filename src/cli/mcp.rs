//! `ouro mcp`: list, inspect, add and remove MCP servers, as `claude mcp` does. Servers are
//! kept in `~/.ouro/settings.json` (scope `user`, the default), `.mcp.json` (scope `project`,
//! shared with the repository) or `.ouro/settings.local.json` (scope `local`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::Subcommand;
use serde_json::{Value, json};

use crate::mcp::config::{self, Scope, ServerConfig, Transport};
use crate::mcp::{Limits, McpHub};
use crate::tools::ToolSource;

#[derive(Debug, Clone, Subcommand)]
pub enum McpAction {
    /// Every configured server with its status (each is connected to check).
    List,
    /// One server's configuration and status.
    Get { name: String },
    /// Add a server: `add NAME -- COMMAND [ARGS...]`, or `add --transport http NAME URL`.
    Add {
        /// Where to keep it: user (~/.ouro/settings.json), project (.mcp.json) or local
        /// (.ouro/settings.local.json, effective once the directory is trusted).
        #[arg(short, long, default_value = "user")]
        scope: String,
        /// stdio (a command), http or sse (a URL).
        #[arg(short, long, default_value = "stdio")]
        transport: String,
        /// Environment for a stdio server: KEY=value (repeatable).
        #[arg(short, long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// Headers for an HTTP server: "Name: value" (repeatable).
        #[arg(short = 'H', long = "header", value_name = "HEADER")]
        headers: Vec<String>,
        name: String,
        /// The command and its arguments, or the URL.
        #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
        target: Vec<String>,
    },
    /// Remove a server (from the given scope, else from wherever it is).
    Remove {
        name: String,
        #[arg(short, long)]
        scope: Option<String>,
    },
}

pub async fn run(action: McpAction, cwd: &Path) -> anyhow::Result<String> {
    let root = crate::app::project_root(cwd);
    match action {
        McpAction::List => list(&root, None).await,
        McpAction::Get { name } => list(&root, Some(&name)).await,
        McpAction::Add {
            scope,
            transport,
            env,
            headers,
            name,
            target,
        } => {
            let entry = entry(&transport, &env, &headers, &target)?;
            config::parse_server(&name, &entry, Scope::Flag).map_err(anyhow::Error::msg)?;
            let path = file_of(&scope, &root)?;
            edit(&path, |servers| {
                servers.insert(name.clone(), entry);
            })?;
            Ok(format!(
                "Added the MCP server \"{name}\" to {}.\n",
                path.display()
            ))
        }
        McpAction::Remove { name, scope } => {
            let scopes = match &scope {
                Some(s) => vec![s.clone()],
                None => ["local", "project", "user"].map(String::from).to_vec(),
            };
            for scope in scopes {
                let path = file_of(&scope, &root)?;
                let mut removed = false;
                if path.is_file() {
                    edit(&path, |servers| {
                        removed = servers.remove(&name).is_some();
                    })?;
                }
                if removed {
                    return Ok(format!(
                        "Removed the MCP server \"{name}\" from {}.\n",
                        path.display()
                    ));
                }
            }
            bail!("There is no MCP server \"{name}\"; `ouro mcp list` shows the configured ones.")
        }
    }
}

/// The settings entry `add` writes.
fn entry(
    transport: &str,
    env: &[String],
    headers: &[String],
    target: &[String],
) -> anyhow::Result<Value> {
    match transport {
        "stdio" => {
            let env: BTreeMap<String, String> = env
                .iter()
                .map(|pair| {
                    pair.split_once('=')
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .with_context(|| format!("-e takes KEY=value, not {pair:?}"))
                })
                .collect::<anyhow::Result<_>>()?;
            let (command, args) = target.split_first().context("give the server's command")?;
            let mut entry = json!({"type": "stdio", "command": command, "args": args});
            if !env.is_empty() {
                entry["env"] = json!(env);
            }
            Ok(entry)
        }
        "http" | "sse" => {
            let [url] = target else {
                bail!("an {transport} server takes one URL");
            };
            let headers: BTreeMap<String, String> = headers
                .iter()
                .map(|h| {
                    h.split_once(':')
                        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                        .with_context(|| format!("-H takes \"Name: value\", not {h:?}"))
                })
                .collect::<anyhow::Result<_>>()?;
            let mut entry = json!({"type": transport, "url": url});
            if !headers.is_empty() {
                entry["headers"] = json!(headers);
            }
            Ok(entry)
        }
        other => bail!("--transport takes stdio, http or sse, not {other:?}"),
    }
}

fn file_of(scope: &str, root: &Path) -> anyhow::Result<PathBuf> {
    Ok(match scope {
        "user" => crate::settings::ouro_home()
            .context("there is no home directory for ~/.ouro")?
            .join("settings.json"),
        "project" => root.join(".mcp.json"),
        "local" => root.join(".ouro/settings.local.json"),
        other => bail!("--scope takes user, project or local, not {other:?}"),
    })
}

/// Changes the `mcpServers` object of a JSON file, keeping everything else.
fn edit(
    path: &Path,
    change: impl FnOnce(&mut serde_json::Map<String, Value>),
) -> anyhow::Result<()> {
    crate::settings::edit_json_file(path, |doc| {
        let servers = doc
            .as_object_mut()
            .ok_or("the file does not hold a JSON object")?
            .entry("mcpServers")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or("\"mcpServers\" is not an object")?;
        change(servers);
        Ok(())
    })?;
    Ok(())
}

/// Every server from every file (the project's only once trusted), connected to check.
async fn list(root: &Path, only: Option<&str>) -> anyhow::Result<String> {
    let layered = crate::settings::LayeredSettings::load(root)?;
    let trusted = layered.trusts(root);
    let (mut servers, errors) =
        config::gather(&layered.merged().mcp_servers, root, trusted, &[], false);
    if let Some(name) = only {
        servers.retain(|s| s.name == name);
        if servers.is_empty() {
            bail!("There is no MCP server \"{name}\"; `ouro mcp list` shows the configured ones.");
        }
    }
    let mut out = String::new();
    for error in &errors {
        out.push_str(&format!("✗ {error}\n"));
    }
    if servers.is_empty() {
        out.push_str(
            "No MCP servers are configured. Add one with `ouro mcp add NAME -- COMMAND`.\n",
        );
        if !trusted && root.join(".mcp.json").is_file() {
            out.push_str(
                "(This directory's .mcp.json is ignored until you trust the directory.)\n",
            );
        }
        return Ok(out);
    }
    let hub = McpHub::start(servers.clone(), Limits::patient(), None);
    hub.settle().await;
    for (server, line) in servers.iter().zip(hub.overview()) {
        out.push_str(&line);
        out.push('\n');
        if only.is_some() {
            out.push_str(&details(server));
        }
    }
    Ok(out)
}

fn details(server: &ServerConfig) -> String {
    let mut out = format!("  Scope: {}\n", server.scope.label());
    match &server.transport {
        Transport::Stdio { command, args, env } => {
            out.push_str(&format!("  Command: {command}\n"));
            if !args.is_empty() {
                out.push_str(&format!("  Args: {}\n", args.join(" ")));
            }
            if !env.is_empty() {
                let keys: Vec<&str> = env.keys().map(String::as_str).collect();
                out.push_str(&format!("  Environment: {}\n", keys.join(", ")));
            }
        }
        Transport::Http { url, headers } | Transport::Sse { url, headers } => {
            out.push_str(&format!("  URL: {url}\n"));
            if !headers.is_empty() {
                let names: Vec<&str> = headers.keys().map(String::as_str).collect();
                out.push_str(&format!("  Headers: {}\n", names.join(", ")));
            }
        }
        Transport::Sdk { .. } => out.push_str("  Served by the Agent SDK that drives ouro\n"),
    }
    out
}
