//! MCP server configuration in Claude Code's format: `mcpServers` in the user's settings,
//! `.mcp.json` at the project root (only once the directory is trusted), and `--mcp-config`.
//! `${VAR}` and `${VAR:-default}` are expanded in commands, arguments, environment, URLs and
//! headers when a server starts.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One server as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport.
    Sse {
        url: String,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
    /// A server inside the Agent SDK's process, reached over the control protocol.
    Sdk {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

/// Where a server's configuration came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    User,
    Project,
    Flag,
}

impl Scope {
    pub fn label(self) -> &'static str {
        match self {
            Scope::User => "user settings (~/.ouro/settings.json)",
            Scope::Project => "project (.mcp.json)",
            Scope::Flag => "--mcp-config",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub scope: Scope,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("MCP server \"{name}\" in {source_label}: {reason}")]
    Server {
        name: String,
        source_label: String,
        reason: String,
    },
    #[error("{0}")]
    Unreadable(String),
    #[error("{name}: ${{{var}}} is not set; set it or write ${{{var}:-default}}")]
    Unset { name: String, var: String },
}

/// Reads one server entry. `type` may be left out: `command` means stdio, `url` means HTTP.
pub fn parse_server(name: &str, value: &Value, scope: Scope) -> Result<ServerConfig, ConfigError> {
    let bad = |reason: String| ConfigError::Server {
        name: name.to_string(),
        source_label: scope.label().to_string(),
        reason,
    };
    if !valid_name(name) {
        return Err(bad(
            "a server name may hold only letters, digits, `-` and `_`".into(),
        ));
    }
    let mut value = value.clone();
    if let Some(object) = value.as_object_mut()
        && !object.contains_key("type")
    {
        let kind = if object.contains_key("command") {
            "stdio"
        } else {
            "http"
        };
        object.insert("type".into(), Value::from(kind));
    }
    if value.get("type").and_then(Value::as_str) == Some("streamable-http") {
        value["type"] = Value::from("http");
    }
    let transport: Transport = serde_json::from_value(value).map_err(|e| {
        bad(format!(
            "{e}; write {{\"command\": ..., \"args\": [...]}} for a local server or {{\"type\": \"http\", \"url\": ...}}"
        ))
    })?;
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        scope,
    })
}

/// Names become part of tool names (`mcp__<server>__<tool>`), so they stay plain.
pub fn valid_name(name: &str) -> bool {
    crate::text::is_plain_name(name)
}

/// The servers of an `{"mcpServers": {...}}` document; a bad entry is an error of its own
/// and does not hide the others.
pub(crate) fn parse_document(doc: &Value, scope: Scope) -> (Vec<ServerConfig>, Vec<ConfigError>) {
    let mut servers = Vec::new();
    let mut errors = Vec::new();
    let Some(map) = doc.get("mcpServers").and_then(Value::as_object) else {
        return (servers, errors);
    };
    for (name, value) in map {
        match parse_server(name, value, scope) {
            Ok(server) => servers.push(server),
            Err(e) => errors.push(e),
        }
    }
    (servers, errors)
}

/// A `--mcp-config` value: a file, or JSON text.
pub(crate) fn read_flag(text: &str) -> Result<Value, ConfigError> {
    let trimmed = text.trim_start();
    let source = if trimmed.starts_with('{') {
        text.to_string()
    } else {
        std::fs::read_to_string(text).map_err(|e| {
            ConfigError::Unreadable(format!("--mcp-config {text}: could not read it ({e})"))
        })?
    };
    serde_json::from_str(&source).map_err(|e| {
        ConfigError::Unreadable(format!(
            "--mcp-config {text}: not valid JSON ({e}); give {{\"mcpServers\": {{...}}}} or a file holding it"
        ))
    })
}

/// `.mcp.json` at the project root, if there is one.
pub(crate) fn read_project_file(root: &Path) -> Result<Option<Value>, ConfigError> {
    let path = root.join(".mcp.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ConfigError::Unreadable(format!(
                "could not read {}: {e}",
                path.display()
            )));
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ConfigError::Unreadable(format!("{} is not valid JSON ({e})", path.display())))
}

/// Every server of the session: from the settings and (once the project is trusted)
/// `.mcp.json`, unless `strict`, then `--mcp-config`; a later source replaces an earlier
/// server of the same name. The errors are sentences for stderr.
pub fn gather(
    settings: &BTreeMap<String, Value>,
    root: &Path,
    trusted: bool,
    flags: &[String],
    strict: bool,
) -> (Vec<ServerConfig>, Vec<String>) {
    let mut servers: BTreeMap<String, ServerConfig> = BTreeMap::new();
    let mut errors = Vec::new();
    let mut add = |found: (Vec<ServerConfig>, Vec<ConfigError>), errors: &mut Vec<String>| {
        for server in found.0 {
            servers.insert(server.name.clone(), server);
        }
        errors.extend(found.1.iter().map(ToString::to_string));
    };
    if !strict {
        let doc = serde_json::json!({ "mcpServers": settings });
        add(parse_document(&doc, Scope::User), &mut errors);
        if trusted {
            match read_project_file(root) {
                Ok(Some(doc)) => add(parse_document(&doc, Scope::Project), &mut errors),
                Ok(None) => {}
                Err(e) => errors.push(e.to_string()),
            }
        }
    }
    for flag in flags {
        match read_flag(flag) {
            Ok(doc) => add(parse_document(&doc, Scope::Flag), &mut errors),
            Err(e) => errors.push(e.to_string()),
        }
    }
    (servers.into_values().collect(), errors)
}

/// `${VAR}` and `${VAR:-default}` in `text`, from `lookup`. `name` says what is expanded,
/// for the error.
pub fn expand(
    text: &str,
    name: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (inner, None),
        };
        match (lookup(var).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(ConfigError::Unset {
                    name: name.to_string(),
                    var: var.to_string(),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Transport {
    /// The transport with every `${VAR}` expanded from the environment.
    pub fn expanded(&self, server: &str) -> Result<Transport, ConfigError> {
        let env = |var: &str| std::env::var(var).ok();
        let one = |text: &str| expand(text, server, &env);
        let map = |m: &BTreeMap<String, String>| -> Result<BTreeMap<String, String>, ConfigError> {
            m.iter().map(|(k, v)| Ok((k.clone(), one(v)?))).collect()
        };
        Ok(match self {
            Transport::Stdio { command, args, env } => Transport::Stdio {
                command: one(command)?,
                args: args.iter().map(|a| one(a)).collect::<Result<_, _>>()?,
                env: map(env)?,
            },
            Transport::Http { url, headers } => Transport::Http {
                url: one(url)?,
                headers: map(headers)?,
            },
            Transport::Sse { url, headers } => Transport::Sse {
                url: one(url)?,
                headers: map(headers)?,
            },
            Transport::Sdk { .. } => self.clone(),
        })
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
            Transport::Sse { .. } => "sse",
            Transport::Sdk { .. } => "sdk",
        }
    }

    /// One line: the command line or the URL.
    pub fn describe(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } | Transport::Sse { url, .. } => url.clone(),
            Transport::Sdk { .. } => "in the Agent SDK's process".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn claude_code_entries_parse_with_or_without_a_type() {
        let doc = json!({"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server-filesystem", "."], "env": {"A": "1"}},
            "remote": {"type": "http", "url": "https://x.dev/mcp", "headers": {"Authorization": "Bearer t"}},
            "plain-url": {"url": "https://y.dev/mcp"},
            "old": {"type": "sse", "url": "https://z.dev/sse"},
            "bad name!": {"command": "x"},
            "broken": {"type": "stdio"}
        }});
        let (servers, errors) = parse_document(&doc, Scope::Project);
        let kinds: Vec<(&str, &str)> = servers
            .iter()
            .map(|s| (s.name.as_str(), s.transport.kind()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("files", "stdio"),
                ("old", "sse"),
                ("plain-url", "http"),
                ("remote", "http")
            ]
        );
        assert_eq!(errors.len(), 2, "{errors:?}");
        let text = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            text.contains("bad name!") && text.contains("broken"),
            "{text}"
        );
        assert!(text.contains(".mcp.json"), "{text}");
    }

    #[test]
    fn variables_expand_with_defaults_and_unset_ones_are_named() {
        let env = |var: &str| match var {
            "TOKEN" => Some("s3cret".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        assert_eq!(
            expand("Bearer ${TOKEN}", "x", &env).unwrap(),
            "Bearer s3cret"
        );
        assert_eq!(
            expand("${HOST:-localhost}:${EMPTY:-80}/${TOKEN}", "x", &env).unwrap(),
            "localhost:80/s3cret"
        );
        assert_eq!(
            expand("no vars, $HOME, ${open", "x", &env).unwrap(),
            "no vars, $HOME, ${open"
        );
        let err = expand("${MISSING}", "remote", &env)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("remote") && err.contains("${MISSING}"),
            "{err}"
        );
    }

    #[test]
    fn a_flag_is_json_text_or_a_file() {
        assert!(read_flag("{\"mcpServers\": {}}").is_ok());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        std::fs::write(&path, "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}").unwrap();
        let doc = read_flag(path.to_str().unwrap()).unwrap();
        assert_eq!(parse_document(&doc, Scope::Flag).0.len(), 1);
        assert!(
            read_flag("/no/such/file")
                .unwrap_err()
                .to_string()
                .contains("could not read")
        );
        assert!(
            read_flag("{oops")
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
    }
}
