//! Plugins, as Claude Code has them: a folder with `.claude-plugin/plugin.json` and any of
//! `commands/*.md`, `agents/*.md`, `skills/*/SKILL.md`, `hooks/hooks.json` and `.mcp.json`.
//! They come from `--plugin-dir` (the user named them: in force at once) and from local
//! marketplaces (a folder or git working tree with `.claude-plugin/marketplace.json`, listed in
//! `extraKnownMarketplaces`) for the ones `enabledPlugins` turns on — a project's own settings
//! count once it is trusted. A malformed `plugin.json` or `hooks.json` is named with its key,
//! and that plugin is skipped; the others load.

mod marketplace;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::settings::{HookSettings, Settings};

pub use marketplace::{CATALOGUE, Marketplace, marketplaces, read as read_marketplace};

/// Where a plugin's manifest is, inside its folder.
pub const MANIFEST: &str = ".claude-plugin/plugin.json";
/// What a plugin's hook and server commands write for the plugin's folder.
const ROOT_VAR: &str = "${CLAUDE_PLUGIN_ROOT}";

#[derive(Debug, Clone, PartialEq)]
pub struct Plugin {
    pub name: String,
    pub version: Option<String>,
    pub description: String,
    pub root: PathBuf,
    /// `--plugin-dir`, or `NAME@MARKETPLACE` as `enabledPlugins` names it.
    pub origin: String,
    pub hooks: HookSettings,
    pub mcp_servers: BTreeMap<String, Value>,
}

impl Plugin {
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }

    pub fn agents_dir(&self) -> PathBuf {
        self.root.join("agents")
    }

    pub fn commands_dir(&self) -> PathBuf {
        self.root.join("commands")
    }

    /// The names of its commands (`commands/<name>.md`), sorted.
    pub fn command_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.commands_dir())
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "md"))
                    .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The plugin in `root`: its manifest checked, its hooks and servers read.
    pub fn read(root: &Path, origin: &str) -> Result<Plugin, String> {
        let manifest_path = root.join(MANIFEST);
        let manifest = read_json(&manifest_path)?;
        let bad = |key: &str, expected: &str| {
            format!(
                "{}: the key `{key}` must be {expected}; the plugin is skipped",
                manifest_path.display()
            )
        };
        let Some(fields) = manifest.as_object() else {
            return Err(format!(
                "{}: the manifest must be a JSON object; the plugin is skipped",
                manifest_path.display()
            ));
        };
        let text = |key: &str| match fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(key, "a string")),
        };
        let name = text("name")?.ok_or_else(|| bad("name", "given (the plugin's name)"))?;
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(bad("name", "letters, digits, '-', '_' and '.'"));
        }
        let hooks = match fields.get("hooks") {
            None => optional_file(&root.join("hooks/hooks.json"))?,
            Some(Value::String(rel)) => Some(read_json(&root.join(rel))?),
            Some(inline @ Value::Object(_)) => Some(inline.clone()),
            Some(_) => return Err(bad("hooks", "a path or an object")),
        };
        let hooks = match hooks {
            Some(doc) => hook_settings(root, &doc)
                .map_err(|why| format!("{}: {why}; the plugin is skipped", root.display()))?,
            None => HookSettings::default(),
        };
        let mut servers = match fields.get("mcpServers") {
            None => optional_file(&root.join(".mcp.json"))?,
            Some(Value::String(rel)) => Some(read_json(&root.join(rel))?),
            Some(inline @ Value::Object(_)) => Some(serde_json::json!({"mcpServers": inline})),
            Some(_) => return Err(bad("mcpServers", "a path or an object")),
        };
        // A server's command and arguments are not run by a shell: the folder goes in as it is.
        if let Some(doc) = servers.as_mut() {
            substitute(doc, &root.to_string_lossy());
        }
        let mcp_servers = match servers.as_ref().map(|doc| &doc["mcpServers"]) {
            Some(Value::Object(map)) => map.clone().into_iter().collect(),
            Some(Value::Null) | None => BTreeMap::new(),
            Some(_) => {
                return Err(format!(
                    "{}: the key `mcpServers` must be an object; the plugin is skipped",
                    root.join(".mcp.json").display()
                ));
            }
        };
        Ok(Plugin {
            name,
            version: text("version")?,
            description: text("description")?.unwrap_or_default(),
            root: root.to_path_buf(),
            origin: origin.to_string(),
            hooks,
            mcp_servers,
        })
    }
}

/// `hooks.json`'s `hooks` (Claude Code's events and groups), `${CLAUDE_PLUGIN_ROOT}` put in
/// quoted for the shell that runs them (a folder may have spaces in its name).
fn hook_settings(root: &Path, doc: &Value) -> Result<HookSettings, String> {
    let hooks = doc.get("hooks").unwrap_or(doc);
    let quoted = crate::text::shell_quote(&root.to_string_lossy());
    serde_json::from_value(hooks.clone())
        .map_err(|e| {
            format!("hooks/hooks.json: the key `hooks` is not Claude Code's hook format: {e}")
        })
        .map(|mut settings: HookSettings| {
            settings.map_commands(|command| command.replace(ROOT_VAR, &quoted));
            settings
        })
}

/// A JSON file of the plugin.
fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: could not be read ({e}); the plugin is skipped",
            path.display()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not valid JSON ({e}); the plugin is skipped",
            path.display()
        )
    })
}

fn optional_file(path: &Path) -> Result<Option<Value>, String> {
    if path.is_file() {
        read_json(path).map(Some)
    } else {
        Ok(None)
    }
}

fn substitute(value: &mut Value, root: &str) {
    match value {
        Value::String(s) if s.contains(ROOT_VAR) => *s = s.replace(ROOT_VAR, root),
        Value::Array(items) => items.iter_mut().for_each(|v| substitute(v, root)),
        Value::Object(map) => map.values_mut().for_each(|v| substitute(v, root)),
        _ => {}
    }
}

/// The plugins `--plugin-dir` names: a plugin's folder, or a folder of plugins (each child
/// with a manifest).
fn from_flag(dir: &Path, plugins: &mut Vec<Plugin>, errors: &mut Vec<String>) {
    if dir.extension().is_some_and(|e| e == "zip") {
        errors.push(format!(
            "--plugin-dir {}: ouro does not read zipped plugins; unzip it and give the folder",
            dir.display()
        ));
        return;
    }
    if dir.join(MANIFEST).is_file() {
        match Plugin::read(dir, "--plugin-dir") {
            Ok(plugin) => plugins.push(plugin),
            Err(e) => errors.push(e),
        }
        return;
    }
    let mut children: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    children.sort();
    let before = plugins.len() + errors.len();
    for child in children.iter().filter(|c| c.join(MANIFEST).is_file()) {
        match Plugin::read(child, "--plugin-dir") {
            Ok(plugin) => plugins.push(plugin),
            Err(e) => errors.push(e),
        }
    }
    if plugins.len() + errors.len() == before {
        errors.push(format!(
            "--plugin-dir {}: there is no plugin there (a folder with {MANIFEST}, or a folder of such folders)",
            dir.display()
        ));
    }
}

/// The plugins in force: `flag_dirs`' (unless the same plugin came first), then those the
/// settings enable from their marketplaces (none with `bare`); and what could not load, as
/// sentences. `settings` are the merged ones, an untrusted project's own already left out.
pub fn load(flag_dirs: &[PathBuf], settings: &Settings, bare: bool) -> (Vec<Plugin>, Vec<String>) {
    let mut plugins = Vec::new();
    let mut errors = Vec::new();
    for dir in flag_dirs {
        from_flag(dir, &mut plugins, &mut errors);
    }
    if !bare {
        let known = marketplaces(settings);
        for (id, _) in settings.enabled_plugins.iter().filter(|(_, on)| **on) {
            match marketplace::enabled(id, &known) {
                Ok(plugin) if plugins.iter().any(|p| p.name == plugin.name) => {}
                Ok(plugin) => plugins.push(plugin),
                Err(e) => errors.push(e),
            }
        }
    }
    (plugins, errors)
}

#[cfg(test)]
mod tests;
