//! What an `initialize` request configures before the session is built. The TypeScript SDK
//! sends its system prompt, agents, JSON schema and the names of its in-process MCP servers
//! there rather than as flags, so the headless loop reads the first stdin line before it
//! builds the session, and applies it over the flags.

use serde_json::{Map, Value, json};

use crate::app::Options;
use crate::stream_json::wire::{Initialize, SystemPrompt};

/// Applies the session options an `initialize` request carries.
pub fn apply(request: &Initialize, options: &mut Options) -> Result<(), String> {
    match &request.system_prompt {
        None => {}
        Some(SystemPrompt::Text(text)) => options.system_prompt = Some(text.clone()),
        Some(SystemPrompt::Parts(parts)) => options.system_prompt = Some(parts.join("\n\n")),
    }
    if let Some(append) = &request.append_system_prompt {
        options.append_system_prompt = Some(append.clone());
    }
    if let Some(schema) = request.json_schema.as_ref().filter(|s| s.is_object()) {
        options.json_schema = Some(schema.clone());
    }
    if let Some(agents) = &request.agents {
        options.agents = Some(merged_agents(options.agents.as_deref(), agents)?);
    }
    let servers: Map<String, Value> = request
        .sdk_mcp_servers
        .iter()
        .map(|name| (name.clone(), json!({"type": "sdk", "name": name})))
        .collect();
    if !servers.is_empty() {
        options
            .mcp_config
            .push(json!({ "mcpServers": servers }).to_string());
    }
    Ok(())
}

/// `--agents` with `initialize`'s agents over it, as one JSON text.
fn merged_agents(flag: Option<&str>, agents: &Map<String, Value>) -> Result<String, String> {
    let mut all: Map<String, Value> = match flag {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| format!("--agents is not a JSON object of agents: {e}"))?,
        None => Map::new(),
    };
    all.extend(agents.clone());
    Ok(Value::Object(all).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_typescript_sdks_initialize_configures_the_session() {
        let mut options = Options {
            agents: Some(r#"{"a": {"description": "A", "prompt": "be a"}}"#.into()),
            ..Options::default()
        };
        let request: Initialize = serde_json::from_value(json!({
            "subtype": "initialize",
            "systemPrompt": ["Be terse.", "Answer in French."],
            "appendSystemPrompt": "Sign with ouro.",
            "agents": {"b": {"description": "B", "prompt": "be b"}},
            "sdkMcpServers": ["calc"],
            "jsonSchema": {"type": "object"},
        }))
        .unwrap();
        apply(&request, &mut options).unwrap();
        assert_eq!(
            options.system_prompt.as_deref(),
            Some("Be terse.\n\nAnswer in French.")
        );
        assert_eq!(
            options.append_system_prompt.as_deref(),
            Some("Sign with ouro.")
        );
        let agents: Value = serde_json::from_str(options.agents.as_deref().unwrap()).unwrap();
        assert_eq!(agents["a"]["prompt"], "be a");
        assert_eq!(agents["b"]["prompt"], "be b");
        let mcp: Value = serde_json::from_str(&options.mcp_config[0]).unwrap();
        assert_eq!(mcp["mcpServers"]["calc"]["type"], "sdk");
        assert_eq!(options.json_schema, Some(json!({"type": "object"})));
        assert!(serde_json::from_value::<Initialize>(json!({"systemPrompt": 3})).is_err());
    }

    #[test]
    fn the_python_sdks_initialize_changes_nothing() {
        let mut options = Options::default();
        let request: Initialize =
            serde_json::from_value(json!({"subtype": "initialize", "hooks": null})).unwrap();
        apply(&request, &mut options).unwrap();
        assert!(options.system_prompt.is_none() && options.mcp_config.is_empty());
    }
}
