//! The permission engine: rules, precedence, paths, modes, sources, suggestions and grants.

use std::path::{Path, PathBuf};

use ouro::permissions::paths::resolve;
use ouro::permissions::{
    Access, CliPermissions, Decision, PermissionEngine, PermissionError, PermissionMode,
    PermissionPolicy, PermissionRequest, RuleKind, SourcedRule, check_bypass_allowed,
    split_rule_list,
};
use ouro::settings::{LayeredSettings, Settings, SettingsSource};

struct Project {
    _dir: tempfile::TempDir,
    _outside: tempfile::TempDir,
    root: PathBuf,
    /// A directory outside the project.
    outside: PathBuf,
}

fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = resolve(dir.path());
    let out = resolve(outside.path());
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(out.join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(&out, root.join("link")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("zero")).unwrap();
    Project {
        _dir: dir,
        _outside: outside,
        root,
        outside: out,
    }
}

fn rule(text: &str, kind: RuleKind) -> SourcedRule {
    SourcedRule::new(text, kind, SettingsSource::Project)
}

fn engine(p: &Project, mode: PermissionMode, rules: Vec<SourcedRule>) -> PermissionEngine {
    PermissionEngine::new(p.root.clone(), mode, rules, Vec::new()).unwrap()
}

fn ask(engine: &PermissionEngine, tool: &str, access: Access) -> Decision {
    engine.decide(&PermissionRequest {
        tool,
        access: &access,
        read_only: matches!(access, Access::Read(_)),
        cwd: None,
    })
}

fn read(engine: &PermissionEngine, path: &Path) -> Decision {
    ask(engine, "Read", Access::Read(path.to_path_buf()))
}

fn write(engine: &PermissionEngine, tool: &str, path: &Path) -> Decision {
    ask(engine, tool, Access::Write(path.to_path_buf()))
}

fn bash(engine: &PermissionEngine, command: &str) -> Decision {
    ask(engine, "Bash", Access::Execute(command.to_string()))
}

fn is_ask(d: &Decision) -> bool {
    matches!(d, Decision::Ask(_))
}

fn is_deny(d: &Decision) -> bool {
    matches!(d, Decision::Deny(_))
}

#[test]
fn unparseable_rules_are_errors_naming_the_rule() {
    let p = project();
    for bad in [
        "Bash(git status",
        "Bash()",
        "WebFetch(domain:example.com)",
        "Bash(git $(x):*)",
        "Bash(FOO=1 make:*)",
        "Not a tool",
        "Read(src/[)",
    ] {
        let err = PermissionEngine::new(
            p.root.clone(),
            PermissionMode::Default,
            vec![rule(bad, RuleKind::Allow)],
            Vec::new(),
        )
        .err()
        .unwrap_or_else(|| panic!("{bad} must be rejected"));
        assert!(
            matches!(&err, PermissionError::InvalidRule { rule, .. } if rule == bad),
            "{bad}: {err}"
        );
        assert!(err.to_string().contains(bad), "{err}");
    }
    for good in [
        "Read",
        "Edit(src/**)",
        "Read(//etc/**)",
        "Read(~/notes/**)",
        "Edit(/docs/*.md)",
        "Bash",
        "Bash(*)",
        "Bash(git status)",
        "Bash(npm run test:*)",
        "WebFetch",
        "mcp__github",
    ] {
        engine(
            &p,
            PermissionMode::Default,
            vec![rule(good, RuleKind::Allow)],
        );
    }
}

#[test]
fn deny_beats_ask_beats_allow() {
    let p = project();
    let file = p.root.join("src/main.rs");
    let with = |kinds: &[RuleKind]| {
        let mut rules = Vec::new();
        for kind in kinds {
            rules.push(rule("Bash(npm test:*)", *kind));
            rules.push(rule("Edit(src/**)", *kind));
        }
        engine(&p, PermissionMode::Default, rules)
    };
    let all = with(&[RuleKind::Allow, RuleKind::Ask, RuleKind::Deny]);
    assert!(is_deny(&bash(&all, "npm test")));
    assert!(is_deny(&write(&all, "Edit", &file)));
    let allow_ask = with(&[RuleKind::Allow, RuleKind::Ask]);
    assert!(is_ask(&bash(&allow_ask, "npm test")));
    assert!(is_ask(&write(&allow_ask, "Edit", &file)));
    let allow = with(&[RuleKind::Allow]);
    assert_eq!(bash(&allow, "npm test"), Decision::Allow);
    assert_eq!(write(&allow, "Edit", &file), Decision::Allow);
    // Ask rules hold even for what the mode would allow.
    let asking = engine(
        &p,
        PermissionMode::AcceptEdits,
        vec![rule("Edit(src/**)", RuleKind::Ask)],
    );
    assert!(is_ask(&write(&asking, "Edit", &file)));
}

#[test]
fn bash_prefix_rules_respect_word_boundaries_and_parts() {
    let p = project();
    let e = engine(
        &p,
        PermissionMode::Default,
        vec![
            rule("Bash(npm run test:*)", RuleKind::Allow),
            rule("Bash(git diff)", RuleKind::Allow),
            rule("Bash(rm:*)", RuleKind::Deny),
        ],
    );
    assert_eq!(bash(&e, "npm run test"), Decision::Allow);
    assert_eq!(bash(&e, "npm run test -- --watch"), Decision::Allow);
    assert!(is_ask(&bash(&e, "npm run testing")));
    assert!(is_ask(&bash(&e, "npm run test && npm publish")));
    assert!(is_ask(&bash(&e, "FOO=1 npm run test")));
    assert_eq!(bash(&e, "git diff"), Decision::Allow);
    assert_eq!(
        bash(&e, "git diff --stat"),
        Decision::Allow,
        "read-only anyway"
    );
    assert!(is_deny(&bash(&e, "timeout 5 rm -rf x")));
    assert!(is_deny(&bash(&e, "npm run test; rm -rf x")));
}

#[test]
fn path_rules_understand_every_anchor() {
    let p = project();
    let etc_file = Path::new("/etc/hostname");
    let e = engine(
        &p,
        PermissionMode::Default,
        vec![rule("Read(//etc/**)", RuleKind::Allow)],
    );
    assert_eq!(read(&e, etc_file), Decision::Allow);
    let bare = engine(&p, PermissionMode::Default, Vec::new());
    assert!(is_ask(&read(&bare, etc_file)));

    let home = resolve(&dirs::home_dir().unwrap());
    let in_home = home.join("ouro-permissions-test-missing/notes.txt");
    let e = engine(
        &p,
        PermissionMode::Default,
        vec![rule(
            "Read(~/ouro-permissions-test-missing/**)",
            RuleKind::Allow,
        )],
    );
    assert_eq!(read(&e, &in_home), Decision::Allow);

    for pattern in ["Edit(/src/**)", "Edit(src/**)", "Edit(./src/**)"] {
        let e = engine(
            &p,
            PermissionMode::Default,
            vec![rule(pattern, RuleKind::Allow)],
        );
        assert_eq!(
            write(&e, "Edit", &p.root.join("src/new.rs")),
            Decision::Allow,
            "{pattern}"
        );
        assert!(
            is_ask(&write(&e, "Edit", &p.root.join("other.rs"))),
            "{pattern}"
        );
    }

    let e = engine(
        &p,
        PermissionMode::Default,
        vec![rule("Edit(*.md)", RuleKind::Allow)],
    );
    assert_eq!(
        write(&e, "Edit", &p.root.join("README.md")),
        Decision::Allow
    );
    assert!(is_ask(&write(&e, "Edit", &p.root.join("docs/guide.md"))));
}

#[test]
fn edit_rules_cover_every_editing_tool_and_read_rules_every_reading_tool() {
    let p = project();
    let e = engine(
        &p,
        PermissionMode::Default,
        vec![
            rule("Edit(src/**)", RuleKind::Allow),
            rule("Edit(secrets/**)", RuleKind::Deny),
            rule("Read(.env)", RuleKind::Deny),
        ],
    );
    assert_eq!(
        write(&e, "Write", &p.root.join("src/new.rs")),
        Decision::Allow
    );
    assert!(is_deny(&write(&e, "Write", &p.root.join("secrets/key"))));
    assert!(is_deny(&ask(&e, "Grep", Access::Read(p.root.join(".env")))));
    // File deny rules also hold for commands that read or write those files.
    assert!(is_deny(&bash(&e, "cat .env")));
    assert!(is_deny(&bash(&e, "echo x > secrets/key")));
}

#[test]
fn symlinks_are_judged_by_their_target() {
    let p = project();
    let through_link = p.root.join("link/secret.txt");
    let default = engine(&p, PermissionMode::Default, Vec::new());
    assert!(is_ask(&read(&default, &through_link)));
    let accept = engine(&p, PermissionMode::AcceptEdits, Vec::new());
    assert!(is_ask(&write(&accept, "Edit", &through_link)));
    assert_eq!(
        write(&accept, "Edit", &p.root.join("src/main.rs")),
        Decision::Allow
    );

    // An allow rule on the link's name does not lend itself to the target.
    let named = engine(
        &p,
        PermissionMode::Default,
        vec![rule("Read(link/**)", RuleKind::Allow)],
    );
    assert!(is_ask(&read(&named, &through_link)));

    // A deny rule holds for the name and for the target.
    let deny_name = engine(
        &p,
        PermissionMode::BypassPermissions,
        vec![rule("Read(link/**)", RuleKind::Deny)],
    );
    assert!(is_deny(&read(&deny_name, &through_link)));
    let target_rule = format!("Read(/{}/**)", p.outside.display());
    let deny_target = engine(
        &p,
        PermissionMode::BypassPermissions,
        vec![rule(&target_rule, RuleKind::Deny)],
    );
    assert!(is_deny(&read(&deny_target, &through_link)));
}

#[test]
fn parent_dir_traversal_is_resolved() {
    let p = project();
    let default = engine(&p, PermissionMode::Default, Vec::new());
    let accept = engine(&p, PermissionMode::AcceptEdits, Vec::new());
    let escaping = p.root.join("src/../../escaped.txt");
    assert!(is_ask(&read(&default, &escaping)));
    assert!(is_ask(&write(
        &accept,
        "Write",
        &p.root.join("new/dir/../../../escaped.txt")
    )));
    assert_eq!(
        read(&default, &p.root.join("src/../src/main.rs")),
        Decision::Allow
    );
}

#[test]
fn devices_and_network_paths_are_refused_in_every_mode() {
    let p = project();
    for mode in PermissionMode::ALL {
        let e = engine(
            &p,
            mode,
            vec![rule("Read", RuleKind::Allow), rule("Edit", RuleKind::Allow)],
        );
        for path in [
            "/dev/sda",
            "/dev/tty",
            "//host/share/file",
            "\\\\host\\share",
        ] {
            assert!(is_deny(&read(&e, Path::new(path))), "{mode} {path}");
        }
        assert!(
            is_deny(&read(&e, &p.root.join("zero"))),
            "{mode}: symlink to a device"
        );
        assert!(
            is_deny(&write(&e, "Write", Path::new("/dev/sda"))),
            "{mode}"
        );
    }
    let bypass = engine(&p, PermissionMode::BypassPermissions, Vec::new());
    assert_eq!(read(&bypass, Path::new("/dev/null")), Decision::Allow);
}

#[test]
fn modes_decide_file_access() {
    let p = project();
    let inside = p.root.join("src/main.rs");
    let outside = p.outside.join("secret.txt");
    let e = |mode| engine(&p, mode, Vec::new());
    use PermissionMode::*;

    assert_eq!(read(&e(Default), &inside), Decision::Allow);
    assert!(is_ask(&write(&e(Default), "Edit", &inside)));
    assert!(is_ask(&read(&e(Default), &outside)));

    assert_eq!(write(&e(AcceptEdits), "Edit", &inside), Decision::Allow);
    assert!(is_ask(&write(&e(AcceptEdits), "Write", &outside)));

    assert_eq!(read(&e(Plan), &inside), Decision::Allow);
    let Decision::Deny(reason) = write(&e(Plan), "Edit", &inside) else {
        panic!("plan mode must deny edits");
    };
    assert!(reason.contains("plan mode"), "{reason}");

    assert!(is_deny(&write(&e(DontAsk), "Edit", &inside)));
    assert!(is_deny(&read(&e(DontAsk), &outside)));
    assert_eq!(read(&e(DontAsk), &inside), Decision::Allow);

    assert_eq!(
        write(&e(BypassPermissions), "Write", &outside),
        Decision::Allow
    );
    let guarded = engine(
        &p,
        BypassPermissions,
        vec![rule("Edit(src/**)", RuleKind::Deny)],
    );
    assert!(is_deny(&write(&guarded, "Edit", &inside)));

    // A whole-tool allow rule does not open writes outside the project; a path rule does.
    let whole = engine(&p, Default, vec![rule("Edit", RuleKind::Allow)]);
    assert_eq!(write(&whole, "Edit", &inside), Decision::Allow);
    assert!(is_ask(&write(&whole, "Edit", &outside)));
    let named = format!("Edit(/{}/**)", p.outside.display());
    let pathed = engine(&p, Default, vec![rule(&named, RuleKind::Allow)]);
    assert_eq!(write(&pathed, "Edit", &outside), Decision::Allow);
}

#[test]
fn additional_directories_count_as_inside() {
    let p = project();
    let e = PermissionEngine::new(
        p.root.clone(),
        PermissionMode::AcceptEdits,
        Vec::new(),
        vec![p.outside.clone()],
    )
    .unwrap();
    let file = p.outside.join("secret.txt");
    assert_eq!(read(&e, &file), Decision::Allow);
    assert_eq!(write(&e, "Edit", &file), Decision::Allow);
    assert_eq!(
        bash(&e, &format!("cat {}", file.display())),
        Decision::Allow
    );
}

#[test]
fn other_tools_follow_rules_naming_them() {
    let p = project();
    let e = engine(
        &p,
        PermissionMode::Default,
        vec![
            rule("TodoWrite", RuleKind::Deny),
            rule("mcp__github", RuleKind::Ask),
        ],
    );
    assert_eq!(ask(&e, "WebSearch", Access::None), Decision::Allow);
    assert!(is_deny(&ask(&e, "TodoWrite", Access::None)));
    assert!(is_ask(&ask(&e, "mcp__github__create_issue", Access::None)));
    assert_eq!(ask(&e, "mcp__githubby__x", Access::None), Decision::Allow);
}

#[test]
fn mcp_tools_ask_unless_allowed_and_deny_wins_over_every_allow_form() {
    let p = project();
    let e = engine(
        &p,
        PermissionMode::Default,
        vec![
            rule("mcp__files", RuleKind::Allow),
            rule("mcp__files__write_file", RuleKind::Deny),
            rule("mcp__web__*", RuleKind::Allow),
            rule("mcp__web__post", RuleKind::Ask),
            rule("mcp__db__query", RuleKind::Allow),
        ],
    );
    assert_eq!(
        ask(&e, "mcp__files__read_file", Access::External),
        Decision::Allow
    );
    assert!(is_deny(&ask(
        &e,
        "mcp__files__write_file",
        Access::External
    )));
    assert_eq!(
        ask(&e, "mcp__web__fetch", Access::External),
        Decision::Allow
    );
    assert!(is_ask(&ask(&e, "mcp__web__post", Access::External)));
    assert_eq!(ask(&e, "mcp__db__query", Access::External), Decision::Allow);
    assert!(is_ask(&ask(&e, "mcp__db__drop", Access::External)));
    assert!(is_ask(&ask(&e, "mcp__other__x", Access::External)));
    assert!(is_ask(&ask(&e, "mcp__webby__x", Access::External)));

    let bypass = engine(
        &p,
        PermissionMode::BypassPermissions,
        vec![rule("mcp__files__write_file", RuleKind::Deny)],
    );
    assert_eq!(
        ask(&bypass, "mcp__other__x", Access::External),
        Decision::Allow
    );
    assert!(is_deny(&ask(
        &bypass,
        "mcp__files__write_file",
        Access::External
    )));
    let dont_ask = engine(&p, PermissionMode::DontAsk, vec![]);
    assert!(is_deny(&ask(&dont_ask, "mcp__other__x", Access::External)));
}

#[test]
fn cli_lists_split_outside_parentheses() {
    assert_eq!(
        split_rule_list("Bash(git status:*),Edit"),
        vec!["Bash(git status:*)", "Edit"]
    );
    assert_eq!(
        split_rule_list("Bash(git status:*) Edit, Read(src/**)"),
        vec!["Bash(git status:*)", "Edit", "Read(src/**)"]
    );
    let cli = CliPermissions {
        allowed: vec!["Bash(git status:*),Edit".into(), "Read".into()],
        disallowed: vec!["Bash(rm:*) WebFetch".into()],
        ask: Vec::new(),
        mode: None,
        add_dirs: Vec::new(),
    };
    let rules = cli.rules();
    let texts: Vec<(&str, RuleKind)> = rules.iter().map(|r| (r.rule.as_str(), r.kind)).collect();
    assert_eq!(
        texts,
        vec![
            ("Bash(git status:*)", RuleKind::Allow),
            ("Edit", RuleKind::Allow),
            ("Read", RuleKind::Allow),
            ("Bash(rm:*)", RuleKind::Deny),
            ("WebFetch", RuleKind::Deny),
        ]
    );
    assert!(rules.iter().all(|r| r.source == SettingsSource::Cli));
}

#[test]
fn modes_parse_and_print_with_claude_code_spellings() {
    for mode in PermissionMode::ALL {
        assert_eq!(mode.to_string().parse::<PermissionMode>().unwrap(), mode);
    }
    assert_eq!(
        "acceptEdits".parse::<PermissionMode>().unwrap(),
        PermissionMode::AcceptEdits
    );
    let err = "accept".parse::<PermissionMode>().unwrap_err().to_string();
    assert!(
        err.contains("accept") && err.contains("bypassPermissions") && err.contains("dontAsk"),
        "{err}"
    );
}

#[test]
fn bypass_as_root_needs_the_override() {
    use PermissionMode::*;
    assert_eq!(
        check_bypass_allowed(BypassPermissions, true, false),
        Err(PermissionError::RootBypass)
    );
    assert!(check_bypass_allowed(BypassPermissions, true, true).is_ok());
    assert!(check_bypass_allowed(BypassPermissions, false, false).is_ok());
    assert!(check_bypass_allowed(Default, true, false).is_ok());
    assert!(
        PermissionError::RootBypass
            .to_string()
            .contains("OURO_ALLOW_ROOT_BYPASS=1")
    );

    let p = project();
    let cli = CliPermissions {
        mode: Some(BypassPermissions),
        ..CliPermissions::default()
    };
    let settings = LayeredSettings::default();
    let refused = PermissionEngine::from_settings_as(&p.root, &settings, &cli, true, false);
    assert!(matches!(refused, Err(PermissionError::RootBypass)));
    let allowed = PermissionEngine::from_settings_as(&p.root, &settings, &cli, true, true).unwrap();
    assert_eq!(allowed.mode(), BypassPermissions);
}

fn layer(json: &str) -> Settings {
    serde_json::from_str(json).unwrap()
}

#[test]
fn settings_layers_and_flags_combine_and_describe_lists_sources() {
    let p = project();
    let settings = LayeredSettings {
        layers: vec![
            (
                SettingsSource::User,
                layer(
                    r#"{"permissions":{"allow":["Bash(git status:*)"],"defaultMode":"acceptEdits"}}"#,
                ),
            ),
            (
                SettingsSource::Project,
                layer(r#"{"permissions":{"deny":["Bash(rm:*)"]}}"#),
            ),
            (
                SettingsSource::Local,
                layer(r#"{"permissions":{"ask":["Bash(git push:*)"],"defaultMode":"plan"}}"#),
            ),
        ],
    };
    let no_flags = CliPermissions::default();
    let e =
        PermissionEngine::from_settings_as(&p.root, &settings, &no_flags, false, false).unwrap();
    assert_eq!(
        e.mode(),
        PermissionMode::Plan,
        "the highest layer's defaultMode wins"
    );

    let flags = CliPermissions {
        allowed: vec!["Bash(npm test:*)".into()],
        disallowed: vec!["WebFetch".into()],
        ask: Vec::new(),
        mode: Some(PermissionMode::Default),
        add_dirs: Vec::new(),
    };
    let e = PermissionEngine::from_settings_as(&p.root, &settings, &flags, false, false).unwrap();
    assert_eq!(e.mode(), PermissionMode::Default, "the flag beats settings");
    assert_eq!(bash(&e, "npm test"), Decision::Allow);
    assert!(is_deny(&bash(&e, "rm x")));
    assert!(is_ask(&bash(&e, "git push")));

    e.grant("Bash(cargo build:*)");
    let text = e.describe();
    assert!(text.contains("Permission mode: default"), "{text}");
    for (rule, source) in [
        ("Bash(git status:*)", SettingsSource::User),
        ("Bash(rm:*)", SettingsSource::Project),
        ("Bash(git push:*)", SettingsSource::Local),
        ("Bash(npm test:*)", SettingsSource::Cli),
        ("WebFetch", SettingsSource::Cli),
        ("Bash(cargo build:*)", SettingsSource::Session),
    ] {
        let line = text
            .lines()
            .find(|l| l.contains(rule))
            .unwrap_or_else(|| panic!("{rule} missing from:\n{text}"));
        assert!(line.contains(source.label()), "{line}");
    }
    let allow_at = text.find("allow rules").unwrap();
    let ask_at = text.find("ask rules").unwrap();
    let deny_at = text.find("deny rules").unwrap();
    assert!(allow_at < ask_at && ask_at < deny_at, "{text}");
    assert!(text[deny_at..].contains("Bash(rm:*)"));

    let bypass = engine(&p, PermissionMode::BypassPermissions, Vec::new());
    assert!(bypass.describe().contains("WARNING"));
}

#[test]
fn bad_settings_are_errors_naming_where_they_came_from() {
    let p = project();
    let bad_mode = LayeredSettings {
        layers: vec![(
            SettingsSource::Local,
            layer(r#"{"permissions":{"defaultMode":"yolo"}}"#),
        )],
    };
    let err = PermissionEngine::from_settings_as(
        &p.root,
        &bad_mode,
        &CliPermissions::default(),
        false,
        false,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("yolo") && err.contains("settings.local.json"),
        "{err}"
    );

    let bad_rule = LayeredSettings {
        layers: vec![(
            SettingsSource::Project,
            layer(r#"{"permissions":{"allow":["Bash(oops"]}}"#),
        )],
    };
    let err = PermissionEngine::from_settings_as(
        &p.root,
        &bad_rule,
        &CliPermissions::default(),
        false,
        false,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("Bash(oops"), "{err}");
}

#[test]
fn suggested_rules_are_narrow_and_work_once_granted() {
    let p = project();
    let e = engine(&p, PermissionMode::Default, Vec::new());
    let suggest = |access: Access, tool: &str| {
        e.suggest_rule(&PermissionRequest {
            tool,
            access: &access,
            read_only: false,
            cwd: None,
        })
    };
    let cmd = |c: &str| suggest(Access::Execute(c.into()), "Bash");
    assert_eq!(cmd("npm test -- --watch"), "Bash(npm test:*)");
    assert_eq!(cmd("npm run build"), "Bash(npm run build:*)");
    assert_eq!(cmd("ls && cargo build --release"), "Bash(cargo build:*)");
    assert_eq!(cmd("rm -rf build"), "Bash(rm -rf build)");
    assert_eq!(cmd("FOO=1 make"), "Bash(FOO=1 make)");
    assert_eq!(
        suggest(Access::Write(p.root.join("src/main.rs")), "Write"),
        "Edit(src/main.rs)"
    );
    assert_eq!(
        suggest(Access::Read(PathBuf::from("/etc/hostname")), "Read"),
        "Read(//etc/**)"
    );
    assert_eq!(suggest(Access::None, "WebFetch"), "WebFetch");

    for command in ["npm test -- --watch", "rm -rf build", "FOO=1 make"] {
        assert!(is_ask(&bash(&e, command)), "{command}");
        e.grant(&cmd(command));
        assert_eq!(bash(&e, command), Decision::Allow, "{command}");
    }
    assert!(is_ask(&bash(&e, "npm test && npm publish")));
    let edit = p.root.join("src/main.rs");
    e.grant(&suggest(Access::Write(edit.clone()), "Edit"));
    assert_eq!(write(&e, "Edit", &edit), Decision::Allow);
    let outside = PathBuf::from("/etc/hostname");
    e.grant(&suggest(Access::Read(outside.clone()), "Read"));
    assert_eq!(read(&e, &outside), Decision::Allow);

    // An invalid grant is ignored rather than breaking the session.
    e.grant("Bash(");
    assert!(is_ask(&bash(&e, "cargo publish")));
}

#[test]
fn accept_edits_still_asks_for_files_that_decide_what_runs_or_what_the_model_is_told() {
    let p = project();
    let script = p.root.join("run.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let accept = engine(
        &p,
        PermissionMode::AcceptEdits,
        vec![rule("Edit(**)", RuleKind::Allow)],
    );
    for rel in [
        "OURO.md",
        "CLAUDE.md",
        "docs/AGENTS.md",
        ".envrc",
        ".gitattributes",
        ".gitignore",
        ".github/workflows/ci.yml",
        ".git/hooks/pre-commit",
        ".ouro/settings.json",
        ".claude/settings.json",
        "sub/.claude/commands/x.md",
        ".mcp.json",
        "package.json",
        "run.sh",
        "agents/AGENT_REVIEWER.md",
        ".husky/pre-commit",
        ".vscode/tasks.json",
        ".idea/workspace.xml",
        ".cargo/config.toml",
        ".devcontainer/devcontainer.json",
        "build.rs",
        "crates/x/build.rs",
        "tests/conftest.py",
        "Makefile",
        "sub/GNUmakefile",
        "setup.py",
        "noxfile.py",
        "justfile",
        ".npmrc",
        ".yarnrc.yml",
        ".pre-commit-config.yaml",
    ] {
        for tool in ["Edit", "Write"] {
            let d = write(&accept, tool, &p.root.join(rel));
            assert!(is_ask(&d), "{tool} {rel}: {d:?}");
        }
    }
    assert_eq!(
        write(&accept, "Edit", &p.root.join("src/main.rs")),
        Decision::Allow
    );
    for ordinary in [
        "agents/notes.md",
        "docs/AGENT_x.md",
        "src/build.rs.txt",
        "make.md",
    ] {
        assert_eq!(
            write(&accept, "Edit", &p.root.join(ordinary)),
            Decision::Allow,
            "{ordinary}"
        );
    }
    // A rule naming the file itself lets it through.
    let named = engine(
        &p,
        PermissionMode::AcceptEdits,
        vec![rule("Edit(CLAUDE.md)", RuleKind::Allow)],
    );
    assert_eq!(
        write(&named, "Edit", &p.root.join("CLAUDE.md")),
        Decision::Allow
    );
}

/// The protected list is configurable with the rule syntax: an `ask` rule adds paths that ask
/// even in acceptEdits, and only an allow rule naming a listed file lets it through.
#[test]
fn protected_files_are_extended_by_ask_rules_and_exempted_only_by_name() {
    use PermissionMode::AcceptEdits;
    let p = project();
    let script = p.root.join("scripts/deploy.sh");
    let makefile = p.root.join("Makefile");
    let plain = engine(&p, AcceptEdits, Vec::new());
    assert_eq!(write(&plain, "Edit", &script), Decision::Allow);
    assert!(is_ask(&write(&plain, "Edit", &makefile)));
    let asked = engine(
        &p,
        AcceptEdits,
        vec![rule("Edit(scripts/**)", RuleKind::Ask)],
    );
    assert!(is_ask(&write(&asked, "Edit", &script)));
    assert!(
        is_ask(&write(&asked, "Write", &script)),
        "Edit rules cover every editing tool"
    );
    let wildcard = engine(&p, AcceptEdits, vec![rule("Edit(**)", RuleKind::Allow)]);
    assert!(is_ask(&write(&wildcard, "Edit", &makefile)));
    let named = engine(
        &p,
        AcceptEdits,
        vec![rule("Edit(Makefile)", RuleKind::Allow)],
    );
    assert_eq!(write(&named, "Edit", &makefile), Decision::Allow);
}
