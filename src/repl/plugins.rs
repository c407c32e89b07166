//! `/plugin`: the plugins in force and what each brings, the known marketplaces and what they
//! offer; `/plugin enable|disable NAME@MARKETPLACE` and `/plugin marketplace add PATH` write
//! the user's settings (`enabledPlugins`, `extraKnownMarketplaces`), read at the next start.

use std::fmt::Write as _;

use serde_json::json;

use super::Repl;
use crate::app;

impl Repl {
    pub(super) fn plugin(&mut self, argument: Option<String>) -> String {
        let argument = argument.unwrap_or_default();
        let words: Vec<&str> = argument.split_whitespace().collect();
        match words.as_slice() {
            [] | ["list"] => self.plugins_list(),
            ["enable", id] => set_enabled(id, true, &self.known_marketplaces()),
            ["disable", id] => set_enabled(id, false, &self.known_marketplaces()),
            ["marketplace", "add", path] => add_marketplace(&self.cwd.join(path)),
            _ => "Usage: /plugin [list] · /plugin enable NAME@MARKETPLACE · /plugin disable NAME@MARKETPLACE · /plugin marketplace add PATH".into(),
        }
    }

    fn known_marketplaces(
        &self,
    ) -> std::collections::BTreeMap<String, Result<crate::plugins::Marketplace, String>> {
        match app::load_settings(&self.options, &self.cwd) {
            Ok((layered, _)) => crate::plugins::marketplaces(&layered.merged()),
            Err(_) => Default::default(),
        }
    }

    fn plugins_list(&self) -> String {
        let mut out = String::new();
        if self.plugins.is_empty() {
            out.push_str("No plugins are in force. --plugin-dir PATH loads one for a session; /plugin enable NAME@MARKETPLACE turns one on.\n");
        } else {
            out.push_str("Plugins in force:\n");
            for plugin in &self.plugins {
                let version = plugin
                    .version
                    .as_deref()
                    .map(|v| format!(" {v}"))
                    .unwrap_or_default();
                let commands = plugin.command_names();
                let mut brings = Vec::new();
                if !commands.is_empty() {
                    brings.push(format!("commands /{}", commands.join(", /")));
                }
                for (dir, what) in [
                    (plugin.agents_dir(), "agents"),
                    (plugin.skills_dir(), "skills"),
                ] {
                    if dir.is_dir() {
                        brings.push(what.to_string());
                    }
                }
                if plugin.hooks != Default::default() {
                    brings.push("hooks".into());
                }
                if !plugin.mcp_servers.is_empty() {
                    let names: Vec<&str> = plugin.mcp_servers.keys().map(String::as_str).collect();
                    brings.push(format!("MCP servers {}", names.join(", ")));
                }
                let _ = writeln!(
                    out,
                    "  ● {}{version} ({}) — {}{}",
                    plugin.name,
                    plugin.origin,
                    plugin.description,
                    if brings.is_empty() {
                        String::new()
                    } else {
                        format!(" [{}]", brings.join("; "))
                    }
                );
            }
        }
        let known = self.known_marketplaces();
        for (name, market) in &known {
            match market {
                Ok(market) => {
                    let _ = writeln!(out, "Marketplace {name} ({}):", market.root.display());
                    for (plugin, _, description) in &market.plugins {
                        let on = self
                            .plugins
                            .iter()
                            .any(|p| p.origin == format!("{plugin}@{name}"));
                        let mark = if on { "●" } else { "○" };
                        let _ = writeln!(out, "  {mark} {plugin}@{name} — {description}");
                    }
                }
                Err(why) => {
                    let _ = writeln!(out, "Marketplace {name}: {why}");
                }
            }
        }
        out.trim_end().to_string()
    }
}

fn set_enabled(
    id: &str,
    on: bool,
    known: &std::collections::BTreeMap<String, Result<crate::plugins::Marketplace, String>>,
) -> String {
    let offered = id.split_once('@').is_some_and(|(name, market)| {
        matches!(known.get(market), Some(Ok(m)) if m.plugins.iter().any(|(n, _, _)| n == name))
    });
    if on && !offered {
        return format!(
            "No known marketplace offers {id}; /plugin lists what the marketplaces offer (NAME@MARKETPLACE), and /plugin marketplace add PATH adds one."
        );
    }
    let written = crate::settings::user_settings_path()
        .and_then(|path| crate::settings::set_path(&path, &["enabledPlugins", id], json!(on)));
    match written {
        Ok(()) => format!(
            "{} {id} in your settings (~/.ouro/settings.json); it takes effect when ouro starts next.",
            if on { "Enabled" } else { "Disabled" }
        ),
        Err(e) => format!("Could not change your settings: {e}"),
    }
}

fn add_marketplace(path: &std::path::Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let market = match crate::plugins::read_marketplace(&path) {
        Ok(market) => market,
        Err(e) => {
            return format!(
                "No marketplace there: {e}. A marketplace is a folder with {}.",
                crate::plugins::CATALOGUE
            );
        }
    };
    let entry = json!({"source": {"source": "directory", "path": path}});
    let written = crate::settings::user_settings_path().and_then(|settings| {
        crate::settings::set_path(&settings, &["extraKnownMarketplaces", &market.name], entry)
    });
    match written {
        Ok(()) => format!(
            "Added the marketplace {} ({} plugins); /plugin enable NAME@{} turns one on.",
            market.name,
            market.plugins.len(),
            market.name
        ),
        Err(e) => format!("Could not change your settings: {e}"),
    }
}
