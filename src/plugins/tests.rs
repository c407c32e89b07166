use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn plugin_at(dir: &Path, name: &str) -> PathBuf {
    let root = dir.join(name);
    write(
        &root.join(MANIFEST),
        &format!(r#"{{"name": "{name}", "version": "1.2.0", "description": "does {name}"}}"#),
    );
    write(
        &root.join("hooks/hooks.json"),
        r#"{"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/fmt.sh"}]}]}}"#,
    );
    write(
        &root.join(".mcp.json"),
        r#"{"mcpServers": {"db": {"command": "${CLAUDE_PLUGIN_ROOT}/db-server"}}}"#,
    );
    root
}

#[test]
fn a_plugin_dir_loads_its_hooks_and_servers_with_its_root_put_in() {
    let dir = tempfile::tempdir().unwrap();
    let root = plugin_at(dir.path(), "fmt");
    let (plugins, errors) = load(std::slice::from_ref(&root), &Settings::default(), false);
    assert!(errors.is_empty(), "{errors:?}");
    let plugin = &plugins[0];
    assert_eq!(plugin.name, "fmt");
    assert_eq!(plugin.version.as_deref(), Some("1.2.0"));
    let hook = &plugin.hooks.post_tool_use[0].hooks[0];
    assert_eq!(
        hook.command,
        format!(
            "{}/fmt.sh",
            crate::text::shell_quote(&root.to_string_lossy())
        )
    );
    assert_eq!(
        plugin.mcp_servers["db"]["command"],
        format!("{}/db-server", root.display())
    );
    // A folder of plugins loads each.
    plugin_at(dir.path(), "lint");
    let (both, _) = load(&[dir.path().to_path_buf()], &Settings::default(), false);
    assert_eq!(both.len(), 2);
}

#[test]
fn a_malformed_manifest_or_hooks_file_is_named_and_that_plugin_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let good = plugin_at(dir.path(), "good");
    let bad = dir.path().join("bad");
    write(&bad.join(MANIFEST), r#"{"name": 7}"#);
    let worse = dir.path().join("worse");
    write(&worse.join(MANIFEST), r#"{"name": "worse"}"#);
    write(
        &worse.join("hooks/hooks.json"),
        r#"{"hooks": {"PostToolUse": "nope"}}"#,
    );
    let (plugins, errors) = load(&[good, bad.clone(), worse], &Settings::default(), false);
    assert_eq!(plugins.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains(&bad.join(MANIFEST).display().to_string())
            && errors[0].contains("`name`"),
        "{errors:?}"
    );
    assert!(errors[1].contains("hooks"), "{errors:?}");
    let (_, zipped) = load(&[dir.path().join("p.zip")], &Settings::default(), false);
    assert!(zipped[0].contains("unzip"), "{zipped:?}");
}

#[test]
fn a_local_marketplace_serves_the_plugins_the_settings_enable() {
    let dir = tempfile::tempdir().unwrap();
    let market = dir.path().join("market");
    plugin_at(&market.join("plugins"), "fmt");
    write(
        &market.join(CATALOGUE),
        r#"{"name": "tools", "plugins": [{"name": "fmt", "source": "./plugins/fmt", "description": "formats"}, {"name": "away", "source": "../elsewhere"}]}"#,
    );
    let mut settings = Settings::default();
    settings.extra_known_marketplaces.insert(
        "tools".into(),
        serde_json::json!({"source": {"source": "directory", "path": market}}),
    );
    settings.enabled_plugins.insert("fmt@tools".into(), true);
    settings.enabled_plugins.insert("off@tools".into(), false);
    // A source leading out of the marketplace is refused, naming it.
    let (plugins, errors) = load(&[], &settings, false);
    assert!(plugins.is_empty());
    assert!(errors[0].contains("leads out"), "{errors:?}");
    write(
        &market.join(CATALOGUE),
        r#"{"name": "tools", "plugins": [{"name": "fmt", "source": "./plugins/fmt", "description": "formats"}]}"#,
    );
    let (plugins, errors) = load(&[], &settings, false);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(plugins[0].origin, "fmt@tools");
    // --bare: only --plugin-dir's.
    assert!(load(&[], &settings, true).0.is_empty());
    // A relative path would be another folder in every project: refused.
    settings.extra_known_marketplaces.insert(
        "tools".into(),
        serde_json::json!({"source": {"source": "directory", "path": "tools/market"}}),
    );
    let (plugins, errors) = load(&[], &settings, false);
    assert!(plugins.is_empty());
    assert!(errors[0].contains("relative"), "{errors:?}");
    // A remote marketplace is named as such.
    settings.extra_known_marketplaces.insert(
        "far".into(),
        serde_json::json!({"source": {"source": "github", "repo": "o/r"}}),
    );
    settings.enabled_plugins.insert("x@far".into(), true);
    let (_, errors) = load(&[], &settings, false);
    assert!(
        errors.iter().any(|e| e.contains("fetches nothing")),
        "{errors:?}"
    );
}
