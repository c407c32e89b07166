//! Git settings that make it run nothing a repository's own config names. Ouro's own `git
//! status` at start-up and every Bash call allowed only as read-only get them, so a cloned
//! repository (or an embedded bare one) cannot turn a look at its status into running a program.

/// `(key, value)` overrides, passed as `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`,
/// which outrank every config file.
const OVERRIDES: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("diff.external", ""),
    ("safe.bareRepository", "explicit"),
    ("protocol.allow", "never"),
];

/// The environment variables that apply the overrides.
pub fn safety_env() -> Vec<(String, String)> {
    let mut out = vec![("GIT_CONFIG_COUNT".to_string(), OVERRIDES.len().to_string())];
    for (i, (key, value)) in OVERRIDES.iter().enumerate() {
        out.push((format!("GIT_CONFIG_KEY_{i}"), (*key).to_string()));
        out.push((format!("GIT_CONFIG_VALUE_{i}"), (*value).to_string()));
    }
    out
}
