//! Settings files: `~/.ouro/settings.json` < `.ouro/settings.json` < `.ouro/settings.local.json`
//! (flags override all three). Each file is kept with its source so rules can say where they
//! came from.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SettingsSource {
    User,
    Project,
    Local,
    Cli,
    Session,
}

impl SettingsSource {
    pub fn label(self) -> &'static str {
        match self {
            SettingsSource::User => "user settings (~/.ouro/settings.json)",
            SettingsSource::Project => "project settings (.ouro/settings.json)",
            SettingsSource::Local => "local settings (.ouro/settings.local.json)",
            SettingsSource::Cli => "command-line flags",
            SettingsSource::Session => "granted in this session",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionSettings {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<String>,
    #[serde(default)]
    pub additional_directories: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookCommand {
    #[serde(rename = "type", default = "command_kind")]
    pub kind: String,
    pub command: String,
    /// Seconds; a hook that runs longer is killed and denies the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

fn command_kind() -> String {
    "command".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookMatcher {
    /// Tool name, `A|B` alternatives, or empty / `*` for every tool.
    #[serde(default)]
    pub matcher: String,
    pub hooks: Vec<HookCommand>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HookSettings {
    #[serde(default, rename = "PreToolUse")]
    pub pre_tool_use: Vec<HookMatcher>,
    #[serde(default, rename = "PostToolUse")]
    pub post_tool_use: Vec<HookMatcher>,
}

/// The OS sandbox Bash runs in (`sandbox` in the settings).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxSettings {
    /// `false` runs Bash without the sandbox (a warning says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// `false` refuses TCP to approved commands too (auto-allowed ones never have it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<bool>,
    /// Extra paths approved commands may write (e.g. `~/.cargo`).
    #[serde(default)]
    pub writable_paths: Vec<String>,
    /// Extra paths every command may read.
    #[serde(default)]
    pub readable_paths: Vec<String>,
    /// Commands that, once approved, run outside the sandbox (prefixes, e.g. `docker`).
    #[serde(default)]
    pub excluded_commands: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default)]
    pub permissions: PermissionSettings,
    #[serde(default)]
    pub hooks: HookSettings,
    /// Secret-looking environment variables Bash may still see.
    #[serde(default)]
    pub bash_env_passthrough: Vec<String>,
    /// Share of the context window at which the conversation is compacted before sending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_compact_threshold: Option<f64>,
    #[serde(default)]
    pub sandbox: SandboxSettings,
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid settings JSON ({source}); fix or remove the file")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("could not write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Every settings file that exists, lowest priority first.
#[derive(Debug, Clone, Default)]
pub struct LayeredSettings {
    pub layers: Vec<(SettingsSource, Settings)>,
}

pub fn ouro_home() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("OURO_HOME") {
        return Some(PathBuf::from(dir));
    }
    dirs::home_dir().map(|h| h.join(".ouro"))
}

pub fn local_settings_path(project_root: &Path) -> PathBuf {
    project_root.join(".ouro").join("settings.local.json")
}

impl LayeredSettings {
    pub fn load(project_root: &Path) -> Result<Self, SettingsError> {
        let mut candidates = Vec::new();
        if let Some(home) = ouro_home() {
            candidates.push((SettingsSource::User, home.join("settings.json")));
        }
        candidates.push((
            SettingsSource::Project,
            project_root.join(".ouro").join("settings.json"),
        ));
        candidates.push((SettingsSource::Local, local_settings_path(project_root)));
        let mut layers = Vec::new();
        for (source, path) in candidates {
            if let Some(settings) = read_settings(&path)? {
                layers.push((source, settings));
            }
        }
        Ok(LayeredSettings { layers })
    }

    /// Scalars from the highest layer that sets them; lists joined from all layers.
    pub fn merged(&self) -> Settings {
        let mut out = Settings::default();
        for (_, s) in &self.layers {
            if s.model.is_some() {
                out.model.clone_from(&s.model);
            }
            if s.permissions.default_mode.is_some() {
                out.permissions
                    .default_mode
                    .clone_from(&s.permissions.default_mode);
            }
            if s.auto_compact_threshold.is_some() {
                out.auto_compact_threshold = s.auto_compact_threshold;
            }
            out.permissions
                .allow
                .extend(s.permissions.allow.iter().cloned());
            out.permissions
                .deny
                .extend(s.permissions.deny.iter().cloned());
            out.permissions
                .ask
                .extend(s.permissions.ask.iter().cloned());
            out.permissions
                .additional_directories
                .extend(s.permissions.additional_directories.iter().cloned());
            out.hooks
                .pre_tool_use
                .extend(s.hooks.pre_tool_use.iter().cloned());
            out.hooks
                .post_tool_use
                .extend(s.hooks.post_tool_use.iter().cloned());
            out.bash_env_passthrough
                .extend(s.bash_env_passthrough.iter().cloned());
            let (sandbox, layer) = (&mut out.sandbox, &s.sandbox);
            if layer.enabled.is_some() {
                sandbox.enabled = layer.enabled;
            }
            if layer.network.is_some() {
                sandbox.network = layer.network;
            }
            sandbox
                .writable_paths
                .extend(layer.writable_paths.iter().cloned());
            sandbox
                .readable_paths
                .extend(layer.readable_paths.iter().cloned());
            sandbox
                .excluded_commands
                .extend(layer.excluded_commands.iter().cloned());
        }
        out
    }
}

pub fn read_settings(path: &Path) -> Result<Option<Settings>, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SettingsError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if text.trim().is_empty() {
        return Ok(Some(Settings::default()));
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|source| SettingsError::Parse {
            path: path.to_path_buf(),
            source,
        })
}

/// Add an allow rule to a settings file, keeping every other key the file has.
pub fn append_allow_rule(path: &Path, rule: &str) -> Result<(), SettingsError> {
    let write_err = |source| SettingsError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut doc: serde_json::Value = match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => {
            serde_json::from_str(&text).map_err(|source| SettingsError::Parse {
                path: path.to_path_buf(),
                source,
            })?
        }
        _ => serde_json::json!({}),
    };
    let root = doc.as_object_mut().ok_or_else(|| {
        write_err(std::io::Error::other(
            "the settings file is not a JSON object",
        ))
    })?;
    let perms = root
        .entry("permissions")
        .or_insert_with(|| serde_json::json!({}));
    let allow = perms
        .as_object_mut()
        .ok_or_else(|| write_err(std::io::Error::other("\"permissions\" is not an object")))?
        .entry("allow")
        .or_insert_with(|| serde_json::json!([]));
    let list = allow
        .as_array_mut()
        .ok_or_else(|| write_err(std::io::Error::other("\"permissions.allow\" is not a list")))?;
    if !list.iter().any(|r| r.as_str() == Some(rule)) {
        list.push(serde_json::Value::String(rule.to_string()));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(write_err)?;
    }
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    std::fs::write(path, text + "\n").map_err(write_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_merge_scalars_by_priority_and_join_lists() {
        let user: Settings = serde_json::from_str(
            r#"{"model":"a","permissions":{"allow":["Read"],"defaultMode":"plan"}}"#,
        )
        .unwrap();
        let local: Settings =
            serde_json::from_str(r#"{"model":"b","permissions":{"allow":["Bash(ls)"]}}"#).unwrap();
        let layered = LayeredSettings {
            layers: vec![(SettingsSource::User, user), (SettingsSource::Local, local)],
        };
        let m = layered.merged();
        assert_eq!(m.model.as_deref(), Some("b"));
        assert_eq!(m.permissions.default_mode.as_deref(), Some("plan"));
        assert_eq!(m.permissions.allow, vec!["Read", "Bash(ls)"]);
    }

    #[test]
    fn append_allow_rule_keeps_other_keys_and_does_not_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".ouro/settings.local.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            r#"{"model":"x","permissions":{"deny":["Bash(rm:*)"]}}"#,
        )
        .unwrap();
        append_allow_rule(&path, "Bash(ls:*)").unwrap();
        append_allow_rule(&path, "Bash(ls:*)").unwrap();
        let s = read_settings(&path).unwrap().unwrap();
        assert_eq!(s.model.as_deref(), Some("x"));
        assert_eq!(s.permissions.allow, vec!["Bash(ls:*)"]);
        assert_eq!(s.permissions.deny, vec!["Bash(rm:*)"]);
    }

    #[test]
    fn a_broken_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{not json").unwrap();
        let err = read_settings(&path).unwrap_err().to_string();
        assert!(err.contains("not valid settings JSON"), "{err}");
    }
}
