use std::path::Path;

use serde_json::json;

use super::*;

const FILE: &str = "agents/x.agent.md";

fn parse(text: &str) -> Result<Parsed, SpecError> {
    AgentSpec::parse(text, "fallback", Path::new(FILE))
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

fn entry(name: &str) -> ToolEntry {
    ToolEntry {
        name: name.into(),
        rule: None,
        allowed_commands: Vec::new(),
        denied_commands: Vec::new(),
    }
}

#[test]
fn a_claude_code_agent_file_loads_unchanged() {
    let text = r#"---
name: code-reviewer
description: >
  Reviews code. Use PROACTIVELY
  after every change.
tools: Read, Grep, Glob, Bash(git diff:*)
disallowedTools:
  - Write
  - Bash(rm:*)
model: sonnet
effort: high
permissionMode: acceptEdits
mcpServers:
  - github
  - slack:
      command: slack-mcp
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: ./check.sh
maxTurns: 12
skills: [review, lint]
initialPrompt: Review the last commit.
memory: project
background: true
isolation: worktree
color: blue
---
You are a senior reviewer.

Be terse.
"#;
    let Parsed { spec, warnings } = parse(text).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(spec.name, "code-reviewer");
    assert_eq!(
        spec.description,
        "Reviews code. Use PROACTIVELY after every change."
    );
    let mut diff = entry("Bash");
    diff.rule = Some("Bash(git diff:*)".into());
    assert_eq!(
        spec.tools,
        Some(vec![entry("Read"), entry("Grep"), entry("Glob"), diff])
    );
    assert_eq!(spec.disallowed_tools, ["Write", "Bash(rm:*)"]);
    assert_eq!(spec.model.as_deref(), Some("sonnet"));
    assert_eq!(spec.effort.as_deref(), Some("high"));
    assert_eq!(spec.permission_mode.as_deref(), Some("acceptEdits"));
    assert_eq!(
        spec.mcp_servers,
        Some(json!(["github", {"slack": {"command": "slack-mcp"}}]))
    );
    assert_eq!(
        spec.hooks,
        Some(
            json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}]})
        )
    );
    assert_eq!(spec.max_turns, Some(12));
    assert_eq!(spec.skills, Some(vec!["review".into(), "lint".into()]));
    assert_eq!(
        spec.initial_prompt.as_deref(),
        Some("Review the last commit.")
    );
    assert_eq!(spec.memory, Some(json!("project")));
    assert!(spec.background);
    assert_eq!(spec.isolation.as_deref(), Some("worktree"));
    assert_eq!(spec.color.as_deref(), Some("blue"));
    assert_eq!(spec.prompt, "You are a senior reviewer.\n\nBe terse.");
    assert_eq!(spec.source, Path::new(FILE));
    assert_eq!((spec.version, spec.author), (None, None));
    assert_eq!(spec.engine, Engine::default());
    assert!(spec.auto_approve_tools.is_empty());
    let def = parse(text).unwrap().spec.to_def();
    assert_eq!(
        def.tools,
        Some(vec![
            "Read".into(),
            "Grep".into(),
            "Glob".into(),
            "Bash".into()
        ])
    );
    assert_eq!(def.source, FILE);
}

#[test]
fn ouro_s_additions_the_engine_block_and_defaults() {
    let text = "---\nversion: 1.2\nauthor: Ada\nmodel: inherit\nengine:\n  temperature: 0.2\n  max_turns: 30\n  max_cost_usd: 1.5\n  timeout_s: 600\n  brain: ouro@claude-sonnet-4-5\n---\nBody.\n";
    let spec = parse(text).unwrap().spec;
    assert_eq!(spec.name, "fallback", "the file stem when there is no name");
    assert_eq!(spec.description, "The fallback agent");
    assert_eq!(spec.version.as_deref(), Some("1.2"));
    assert_eq!(spec.author.as_deref(), Some("Ada"));
    assert_eq!(spec.model, None, "inherit is the session's model");
    assert_eq!(spec.max_turns, Some(30));
    assert_eq!(
        spec.engine,
        Engine {
            temperature: Some(0.2),
            max_cost_usd: Some(1.5),
            timeout_s: Some(600),
            brain: Some("ouro@claude-sonnet-4-5".into()),
        }
    );
    assert!(!spec.background);
    assert_eq!(spec.tools, None, "no tools key: every tool");
    let spec = parse("---\nengine:\n  model: haiku\n---\nBody.")
        .unwrap()
        .spec;
    assert_eq!(spec.model.as_deref(), Some("haiku"));
    assert_eq!(
        parse("---\ntools: []\n---\nBody.").unwrap().spec.tools,
        Some(Vec::new())
    );
}

#[test]
fn persona_spellings_are_synonyms() {
    let spec = parse("---\nmax_turns: \"7\"\ndisallowed_tools: Write, Edit\nauto_approve_tools: [Bash(ls:*)]\nallowed_tools: [Read]\n---\nBody.")
        .unwrap()
        .spec;
    assert_eq!(spec.max_turns, Some(7));
    assert_eq!(spec.disallowed_tools, ["Write", "Edit"]);
    assert_eq!(spec.auto_approve_tools, ["Bash(ls:*)"]);
    assert_eq!(spec.tools, Some(vec![entry("Read")]));
    let spec = parse("---\nallowed-tools: Grep\n---\nBody.").unwrap().spec;
    assert_eq!(spec.tools, Some(vec![entry("Grep")]));
    let def = parse("---\ntools: Read, Write\ndisallowedTools: Write\n---\nBody.")
        .unwrap()
        .spec
        .to_def();
    assert_eq!(def.tools, Some(vec!["Read".to_string()]));
}

#[test]
fn one_setting_under_two_names_is_an_error_naming_both() {
    for (text, first, second) in [
        (
            "maxTurns: 3\nengine:\n  max_turns: 4",
            "maxTurns",
            "engine.max_turns",
        ),
        (
            "model: opus\nengine:\n  model: haiku",
            "model",
            "engine.model",
        ),
        (
            "disallowedTools: [a]\ndisallowed_tools: [b]",
            "disallowedTools",
            "disallowed_tools",
        ),
        ("tools: Read\nallowed-tools: Grep", "tools", "allowed-tools"),
        ("maxTurns: 3\nmax_turns: 3", "maxTurns", "max_turns"),
    ] {
        let err = error(&format!("---\n{text}\n---\nBody."));
        assert!(
            err.starts_with(FILE) && err.contains(first) && err.contains(second),
            "{err}"
        );
    }
    // A key with no value is not given.
    assert!(parse("---\nmodel:\nengine:\n  model: haiku\n---\nBody.").is_ok());
}

#[test]
fn a_wrong_type_names_the_file_the_key_and_what_was_expected() {
    assert_eq!(
        error("---\nmaxTurns: ten\n---\nBody."),
        "agents/x.agent.md: maxTurns must be a whole number above 0, not \"ten\""
    );
    for (front, wanted) in [
        (
            "max_turns: 0",
            "max_turns must be a whole number above 0, not 0",
        ),
        (
            "maxTurns: 2.5",
            "maxTurns must be a whole number above 0, not 2.5",
        ),
        (
            "maxTurns: 99999999999",
            "maxTurns must be a smaller whole number",
        ),
        ("model: [a, b]", "model must be text, not a list"),
        (
            "background: \"yes\"",
            "background must be true or false, not \"yes\"",
        ),
        (
            "isolation: container",
            "isolation must be \"worktree\", not \"container\"",
        ),
        (
            "engine: fast",
            "engine must be a map of engine settings, not \"fast\"",
        ),
        (
            "engine:\n  temperature: 3",
            "engine.temperature must be a number from 0 to 1, not 3",
        ),
        (
            "engine:\n  max_cost_usd: -1",
            "engine.max_cost_usd must be an amount of US dollars above 0",
        ),
        (
            "engine:\n  timeout_s: soon",
            "engine.timeout_s must be a whole number above 0",
        ),
        ("engine:\n  brain: gpt", "engine.brain must be a brain slug"),
        (
            "effort: extreme",
            "effort must be low, medium, high or max, not \"extreme\"",
        ),
        (
            "permissionMode: yolo",
            "permissionMode must be one of default, acceptEdits",
        ),
        (
            "memory: forever",
            "memory must be user, project, local or a map",
        ),
        (
            "hooks: [a]",
            "hooks must be a map from hook event to hooks, not a list",
        ),
        (
            "mcpServers: [github, 3]",
            "mcpServers[1] must be a server name or a definition, not 3",
        ),
        (
            "tools: 5",
            "tools must be a list of tools, or tool names separated by commas, not 5",
        ),
        ("tools: [Read, 5]", "tools[1] must be a tool name"),
        (
            "tools: [\"Bash(git diff\"]",
            "tools[0] must be a tool name, a rule such as Bash(git diff:*)",
        ),
        (
            "tools:\n  - allowed_commands: [ls]",
            "tools[0].name must be a tool name, not nothing",
        ),
        (
            "skills: {a: b}",
            "skills must be a list, or names separated by commas, not a map",
        ),
        (
            "disallowedTools: [Write, [x]]",
            "disallowedTools[1] must be a name, not a list",
        ),
    ] {
        let err = error(&format!("---\n{front}\n---\nBody."));
        assert!(err.starts_with(FILE), "{err}");
        assert!(err.contains(wanted), "{front}: {err}");
    }
    let err = error("---\nname: my agent\n---\nBody.");
    assert!(
        err.contains("\"my agent\"") && err.contains("letters, digits"),
        "{err}"
    );
    assert!(error("---\nname: x\n---\n  \n").contains("has no prompt"));
    let err = error("---\nname: [x\n---\nBody.");
    assert!(
        err.starts_with(FILE) && err.contains("of the front matter is not valid YAML"),
        "{err}"
    );
}

#[test]
fn an_unknown_key_is_a_warning_naming_file_and_key() {
    let parsed = parse("---\nmood: grumpy\nengine:\n  turbo: true\ntools:\n  - name: Bash\n    allowed_command: [ls]\n---\nBody.").unwrap();
    assert_eq!(
        parsed.warnings,
        [
            format!("{FILE}: unknown key \"tools[0].allowed_command\" is ignored"),
            format!("{FILE}: unknown key \"engine.turbo\" is ignored"),
            format!("{FILE}: unknown key \"mood\" is ignored"),
        ]
    );
}

#[test]
fn tools_objects_bound_bash_commands_and_denied_wins() {
    let text = r#"---
tools:
  - Read
  - name: Bash
    allowed_commands:
      - "git (status|diff)"
      - "git (log|push)( [-a-z]+)*"
    denied_commands: "git push.*--force.*"
---
Body."#;
    let spec = parse(text).unwrap().spec;
    let tools = spec.tools.as_ref().unwrap();
    assert_eq!(tools[1].name, "Bash");
    assert_eq!(tools[1].rule, None);
    assert_eq!(
        tools[1].allowed_commands,
        ["git (status|diff)", "git (log|push)( [-a-z]+)*"]
    );
    assert_eq!(tools[1].denied_commands, ["git push.*--force.*"]);
    let rules = spec.command_rules().unwrap();
    assert!(!rules.is_empty());
    assert_eq!(
        rules.allowed(),
        ["git (status|diff)", "git (log|push)( [-a-z]+)*"]
    );
    assert_eq!(rules.denied(), ["git push.*--force.*"]);
    let allowed = |p: &str| CommandVerdict::Allowed { pattern: p.into() };
    assert_eq!(rules.judge("git status"), allowed("git (status|diff)"));
    assert_eq!(rules.judge("  git diff \n"), allowed("git (status|diff)"));
    assert_eq!(
        rules.judge("git log --oneline"),
        allowed("git (log|push)( [-a-z]+)*")
    );
    assert_eq!(
        rules.judge("git push --force"),
        CommandVerdict::Denied {
            pattern: "git push.*--force.*".into()
        },
        "denied wins over an allowed pattern that matches too"
    );
    // The whole command must match: not a prefix, not one line of several.
    for command in [
        "git status; rm -rf /",
        "git status\nrm -rf /",
        "sudo git status",
        "ls",
    ] {
        assert_eq!(
            rules.judge(command),
            CommandVerdict::Unsettled,
            "{command:?}"
        );
    }
    // A pattern open at its end takes in no second command, nor code it cannot see.
    let rules =
        CommandRules::compile(&["cargo (build|test)( .*)?".into()], &["rm -rf .*".into()]).unwrap();
    let cargo = CommandVerdict::Allowed {
        pattern: "cargo (build|test)( .*)?".into(),
    };
    assert_eq!(rules.judge("cargo test --release"), cargo);
    assert_eq!(rules.judge("cargo build && cargo test"), cargo);
    // One command and its redirection, all in the line the pattern matched.
    assert_eq!(rules.judge("cargo test > out.txt"), cargo);
    for command in [
        "cargo test && true || touch pwned; touch pwned",
        "cargo test $(touch pwned)",
        "(cargo test)",
        "X=1 cargo test",
    ] {
        assert_eq!(
            rules.judge(command),
            CommandVerdict::Unsettled,
            "{command:?}"
        );
    }
    // A denied command anywhere in the line, or behind a wrapper, is refused.
    for command in [
        "true && rm -rf important",
        "touch n2; rm -rf important",
        "timeout 5 rm -rf important",
        "cargo test; rm -rf important",
        "echo $(rm -rf important)",
    ] {
        assert!(
            matches!(rules.judge(command), CommandVerdict::Denied { .. }),
            "{command:?}"
        );
    }
    // Code the analyser cannot see is never let through by a rule: a person decides.
    for command in [
        "bash -c 'rm -rf important'",
        "eval 'rm -rf important'",
        "echo 'rm -rf important' | sh",
        "$RM -rf important",
    ] {
        assert_eq!(rules.judge(command), CommandVerdict::Unseen, "{command:?}");
    }
    assert_eq!(
        rules.judge("cargo test | grep ok"),
        CommandVerdict::Unsettled,
        "grep matches no allowed pattern"
    );
    assert!(
        parse("---\ntools: Read\n---\nBody.")
            .unwrap()
            .spec
            .command_rules()
            .unwrap()
            .is_empty()
    );
    let err = error("---\ntools:\n  - name: Read\n    denied_commands: [x]\n---\nBody.");
    assert!(
        err.contains("tools[0].denied_commands") && err.contains("not to Read"),
        "{err}"
    );
    let rules = CommandRules::compile(&["ls( -l)?".into()], &[]).unwrap();
    assert_eq!(rules.judge("ls -l"), allowed("ls( -l)?"));
    // A call is judged by its command only when it is a Bash call.
    let call = json!({"command": "ls -l"});
    assert_eq!(rules.judge_call("Bash", &call), allowed("ls( -l)?"));
    assert_eq!(
        rules.judge_call("Monitor", &call),
        CommandVerdict::Unsettled
    );
    assert_eq!(
        rules.judge_call("Bash", &json!({"cmd": "ls -l"})),
        CommandVerdict::Unsettled
    );
}

#[test]
fn an_instance_with_command_patterns_asks_for_every_bash_call() {
    let with = |text: &str| {
        let spec = parse(text).unwrap().spec;
        crate::agents::instance::InstanceConfig::from_spec(&spec, "x")
    };
    let config = with("---\ntools:\n  - name: Bash\n    denied_commands: ['rm .*']\n---\nBody.");
    assert_eq!(config.ask_rules(), ["Bash"]);
    assert!(matches!(
        config.command_rules().unwrap().judge("rm -rf /"),
        CommandVerdict::Denied { .. }
    ));
    assert!(
        with("---\ntools: [Read, Bash]\n---\nBody.")
            .ask_rules()
            .is_empty()
    );
    // A mode that never asks would leave the patterns judging nothing.
    for mode in ["bypassPermissions", "auto"] {
        let config = with(&format!(
            "---\npermissionMode: {mode}\ntools:\n  - name: Bash\n    denied_commands: ['rm .*']\n---\nBody."
        ));
        let refused = config.command_rules().unwrap_err().to_string();
        assert!(refused.contains(mode), "{refused}");
    }
    let config = with("---\npermissionMode: bypassPermissions\n---\nBody.");
    assert!(config.command_rules().unwrap().is_empty());
}

#[test]
fn an_invalid_pattern_names_the_file_the_tool_and_the_pattern() {
    let err =
        error("---\ntools:\n  - name: Bash\n    allowed_commands: [\"git (status\"]\n---\nBody.");
    assert!(
        err.starts_with(FILE)
            && err.contains("Bash")
            && err.contains("\"git (status\"")
            && err.contains("unclosed group"),
        "{err}"
    );
    assert!(!err.contains('\n'), "one line: {err}");
    // Valid once wrapped in the anchors, but not on its own: it would anchor nothing.
    let err = error("---\ntools:\n  - name: Bash\n    allowed_commands: [\"ls)|(.*\"]\n---\nBody.");
    assert!(err.contains("ls)|(.*"), "{err}");
    let err = CommandRules::compile(&[], &["[".into()]).unwrap_err();
    assert_eq!(err.pattern, "[");
}

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
}

#[test]
fn load_all_layers_user_then_project_files_and_needs_trust() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let (home, root) = (home.path(), root.path());
    write(&home.join("claude"), "b.md", "Claude user.");
    write(&home.join("ouro"), "a.md", "Ouro user.");
    write(&home.join("ouro"), "notes.txt", "not an agent");
    write(
        &root.join(".claude/agents"),
        "c.md",
        "---\nmaxTurns: ten\n---\nBroken.",
    );
    write(
        &root.join(".claude/agents"),
        "d.agent.md",
        "Claude project.",
    );
    write(&root.join(".ouro/agents"), "e.md", "Ouro project.");
    write(&root.join("agents"), "AGENT_CODE_REVIEWER.md", "Persona.");
    write(&root.join("agents"), "notes.md", "not a persona");
    write(root, "release.agent.md", "---\nname: shipper\n---\nRoot.");
    write(root, "README.md", "not an agent");
    let user = [home.join("ouro"), home.join("claude")];
    let names = |found: &[Result<Parsed, SpecError>]| -> Vec<String> {
        found
            .iter()
            .map(|r| match r {
                Ok(p) => p.spec.name.clone(),
                Err(e) => format!("error: {e}"),
            })
            .collect()
    };
    assert_eq!(names(&load_all(&user, root, false)), ["a", "b"]);
    let trusted = load_all(&user, root, true);
    let found = names(&trusted);
    assert_eq!(found.len(), 7, "{found:?}");
    assert_eq!(found[..2], ["a", "b"]);
    assert!(
        found[2].starts_with("error: ")
            && found[2].contains("c.md")
            && found[2].contains("maxTurns"),
        "a broken file is an error naming it, and the rest still load: {found:?}"
    );
    assert_eq!(found[3..], ["d", "e", "code-reviewer", "shipper"]);
    let root_file = trusted[6].as_ref().unwrap();
    assert_eq!(root_file.spec.source, root.join("release.agent.md"));
}

#[test]
fn agent_md_files_at_the_root_and_load_file() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    write(
        root,
        "deploy.agent.md",
        "---\ndescription: Deploys\n---\nShip it.",
    );
    write(root, ".agent.md", "No name at all.");
    let found = load_all(&[], root, true);
    assert_eq!(found.len(), 1);
    let spec = &found[0].as_ref().unwrap().spec;
    assert_eq!(
        (spec.name.as_str(), spec.prompt.as_str()),
        ("deploy", "Ship it.")
    );
    let spec = load_file(&root.join("deploy.agent.md")).unwrap().spec;
    assert_eq!(spec.name, "deploy");
    write(root, "plain.md", "Plain.");
    assert_eq!(
        load_file(&root.join("plain.md")).unwrap().spec.name,
        "plain"
    );
    let err = load_file(&root.join("missing.agent.md"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("could not read") && err.contains("missing.agent.md"),
        "{err}"
    );
}

#[test]
fn a_link_out_of_the_project_is_skipped() {
    let outside = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.md", "Outside.");
    write(&root.path().join(".ouro/agents"), "inside.md", "Inside.");
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        root.path().join(".ouro/agents/linked.md"),
    )
    .unwrap();
    let found = load_all(&[], root.path(), true);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].as_ref().unwrap().spec.name, "inside");
}
