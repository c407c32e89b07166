//! Local marketplaces: a folder, or the working tree of a git repository, holding
//! `.claude-plugin/marketplace.json` (`name`, and `plugins`: each a `name`, a `source` path
//! relative to the marketplace, a `description`). The settings' `extraKnownMarketplaces` list
//! them as Claude Code's do (`{"NAME": {"source": {"source": "directory", "path": "…"}}}`, or
//! `"git"` with a local `url`); ouro fetches nothing, so a remote one is named as such.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Plugin;
use crate::settings::Settings;

pub const CATALOGUE: &str = ".claude-plugin/marketplace.json";

#[derive(Debug, Clone, PartialEq)]
pub struct Marketplace {
    pub name: String,
    pub root: PathBuf,
    /// Each plugin it offers: name, folder, description.
    pub plugins: Vec<(String, PathBuf, String)>,
}

/// Every marketplace the settings list, by name; one that cannot be read is a `Err` with why.
pub fn marketplaces(settings: &Settings) -> BTreeMap<String, Result<Marketplace, String>> {
    settings
        .extra_known_marketplaces
        .iter()
        .map(|(name, entry)| (name.clone(), read_entry(name, entry)))
        .collect()
}

fn read_entry(name: &str, entry: &Value) -> Result<Marketplace, String> {
    let source = &entry["source"];
    let path = match source["source"].as_str() {
        Some("directory") => source["path"].as_str().map(str::to_string),
        Some("git") => source["url"]
            .as_str()
            .map(|u| u.strip_prefix("file://").unwrap_or(u).to_string())
            .filter(|u| !u.contains("://") && !u.contains('@')),
        _ => None,
    }
    .ok_or_else(|| {
        format!(
            "the marketplace {name} (extraKnownMarketplaces) is not a local folder or git working tree; ouro fetches nothing: clone it and give its folder as {{\"source\": {{\"source\": \"directory\", \"path\": \"…\"}}}}"
        )
    })?;
    let path = expand(&path).ok_or_else(|| {
        format!(
            "the marketplace {name} (extraKnownMarketplaces) has the relative path {path:?}; give an absolute one (or ~/…): a relative path would mean another folder in every project"
        )
    })?;
    read(&path).map(|mut market| {
        name.clone_into(&mut market.name);
        market
    })
}

/// An absolute path, `~/` expanded; `None` for a relative one.
fn expand(path: &str) -> Option<PathBuf> {
    match path.strip_prefix("~/") {
        Some(rest) => dirs::home_dir().map(|home| home.join(rest)),
        None => Some(PathBuf::from(path)).filter(|p| p.is_absolute()),
    }
}

/// The marketplace in `root`.
pub fn read(root: &Path) -> Result<Marketplace, String> {
    let path = root.join(CATALOGUE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: could not be read ({e})", path.display()))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not valid JSON ({e})", path.display()))?;
    let name = doc["name"]
        .as_str()
        .ok_or_else(|| format!("{}: the key `name` must be a string", path.display()))?
        .to_string();
    let entries = doc["plugins"]
        .as_array()
        .ok_or_else(|| format!("{}: the key `plugins` must be a list", path.display()))?;
    let mut plugins = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let bad = |key: &str| {
            format!(
                "{}: plugins[{i}].{key} must be a string (ouro reads plugins kept in the marketplace's own folder)",
                path.display()
            )
        };
        let plugin = entry["name"].as_str().ok_or_else(|| bad("name"))?;
        let source = entry["source"].as_str().ok_or_else(|| bad("source"))?;
        let folder = root.join(source);
        if !folder.starts_with(root) || source.split('/').any(|part| part == "..") {
            return Err(format!(
                "{}: plugins[{i}].source leads out of the marketplace's folder",
                path.display()
            ));
        }
        let description = entry["description"].as_str().unwrap_or_default();
        plugins.push((plugin.to_string(), folder, description.to_string()));
    }
    Ok(Marketplace {
        name,
        root: root.to_path_buf(),
        plugins,
    })
}

/// The plugin `id` (`NAME@MARKETPLACE`, as `enabledPlugins` names it) from `known`.
pub(super) fn enabled(
    id: &str,
    known: &BTreeMap<String, Result<Marketplace, String>>,
) -> Result<Plugin, String> {
    let Some((name, market)) = id.split_once('@') else {
        return Err(format!(
            "enabledPlugins: {id:?} names no marketplace; write NAME@MARKETPLACE"
        ));
    };
    let market = match known.get(market) {
        Some(Ok(market)) => market,
        Some(Err(why)) => return Err(format!("enabledPlugins: {id}: {why}")),
        None => {
            return Err(format!(
                "enabledPlugins: {id}: no marketplace {market} is known; add it with `/plugin marketplace add PATH` or under extraKnownMarketplaces"
            ));
        }
    };
    let Some((_, folder, _)) = market.plugins.iter().find(|(n, _, _)| n == name) else {
        return Err(format!(
            "enabledPlugins: {id}: the marketplace {} offers no plugin {name}",
            market.name
        ));
    };
    Plugin::read(folder, id)
}
