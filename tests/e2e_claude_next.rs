//! End-to-end: what a Claude Code user reaches for next (issue 52, item 5): `--bare`,
//! `--disable-slash-commands`, `--agent NAME`, output styles and the status line, each as
//! Claude Code does it, against the mock Messages API.

use crate::common;
use crate::common::pty;

use common::{Sandbox, bodies, request_tool_results, server};
use serde_json::{Value, json};

fn system_text(body: &Value) -> String {
    body["system"].to_string()
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn hello() -> Value {
    json!({"turns": [{"content": [{"type": "text", "text": "hi"}]}]})
}

/// `--bare`: instruction files, hooks and MCP servers from settings and folders stay out;
/// without it they count.
#[tokio::test]
async fn bare_leaves_out_instructions_hooks_and_mcp_servers_of_the_settings() {
    let sb = Sandbox::new();
    sb.write("CLAUDE.md", "PROJECT-RULE-7: always answer in haiku.\n");
    std::fs::write(sb.home.path().join("OURO.md"), "USER-RULE-9\n").unwrap();
    let marker = sb.home.path().join("hook-ran");
    let settings = json!({
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": format!("touch {}", marker.display())}]}]},
        "mcpServers": {"absent": {"command": "/nonexistent/mcp-server"}}
    });
    std::fs::write(sb.home.path().join("settings.json"), settings.to_string()).unwrap();
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "bare"}]},
        {"content": [{"type": "text", "text": "full"}]}
    ]}))
    .await;
    let bare = sb
        .run(&mock.url(), &["-p", "--bare", "--trust-project", "hi"])
        .await;
    assert!(bare.status.success(), "{}", bare.debug());
    assert!(!marker.exists(), "a settings hook ran under --bare");
    assert!(
        !bare.stderr.contains("absent"),
        "a settings MCP server was started: {}",
        bare.debug()
    );
    let full = sb.run(&mock.url(), &["-p", "--trust-project", "hi"]).await;
    assert!(full.status.success(), "{}", full.debug());
    assert!(marker.exists(), "the hook runs without --bare");
    let sent = bodies(&mock);
    let (bare_system, full_system) = (system_text(&sent[0]), system_text(&sent[1]));
    for rule in ["PROJECT-RULE-7", "USER-RULE-9"] {
        assert!(!bare_system.contains(rule), "{rule} under --bare");
        assert!(full_system.contains(rule), "{rule} missing without --bare");
    }
}

/// `--disable-slash-commands`: no Skill tool and no `slash_commands` in `system/init`.
#[tokio::test]
async fn disable_slash_commands_offers_no_skills() {
    let sb = Sandbox::new();
    let skill = sb.home.path().join(".claude/skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Say hello\n---\nSay hello.\n",
    )
    .unwrap();
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "one"}]},
        {"content": [{"type": "text", "text": "two"}]}
    ]}))
    .await;
    let args = ["-p", "--output-format", "stream-json", "--verbose", "hi"];
    let with = sb.run(&mock.url(), &args).await;
    let mut off = args.to_vec();
    off.insert(1, "--disable-slash-commands");
    let without = sb.run(&mock.url(), &off).await;
    assert!(without.status.success(), "{}", without.debug());
    let init = |run: &common::Run| run.of_type("system", Some("init"))[0]["slash_commands"].clone();
    assert_eq!(init(&with), json!(["greet"]));
    assert_eq!(init(&without), json!([]));
    let sent = bodies(&mock);
    assert!(tool_names(&sent[0]).contains(&"Skill".to_string()));
    assert!(!tool_names(&sent[1]).contains(&"Skill".to_string()));
}

/// `--agent NAME`: the main thread runs as the definition — its prompt, tools and model — and
/// its `denied_commands` refuse a Bash call, telling the model which pattern did.
#[tokio::test]
async fn agent_runs_the_main_thread_as_that_definition() {
    let sb = Sandbox::new();
    let agents = sb.home.path().join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("guard.md"),
        "---\nname: guard\ndescription: Careful\nmodel: haiku\ntools:\n  - Read\n  - name: Bash\n    denied_commands: [\"rm .*\"]\n---\nYOU-ARE-THE-GUARD.\n",
    )
    .unwrap();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "rm -rf build"}}]},
        {"content": [{"type": "text", "text": "refused"}]}
    ]}))
    .await;
    let run = sb
        .run(&mock.url(), &["-p", "--agent", "guard", "clean up"])
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let sent = bodies(&mock);
    assert!(system_text(&sent[0]).contains("YOU-ARE-THE-GUARD."));
    assert!(
        sent[0]["model"]
            .as_str()
            .unwrap_or_default()
            .contains("haiku"),
        "{}",
        sent[0]["model"]
    );
    let mut tools = tool_names(&sent[0]);
    tools.sort();
    assert_eq!(tools, ["Bash", "Read"]);
    let results = request_tool_results(&sent[1]);
    assert_eq!(results[0]["is_error"], true, "{results:?}");
    assert!(
        results[0]["content"].to_string().contains("rm .*"),
        "{results:?}"
    );

    // Denied in every mode: bypassPermissions runs everything else unasked, not this.
    sb.write("build/out.bin", "keep me");
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "rm -rf build"}}]},
        {"content": [{"type": "text", "text": "refused again"}]}
    ]}))
    .await;
    let bypass = common::Run::from(
        sb.command(
            &mock.url(),
            &[
                "-p",
                "--agent",
                "guard",
                "--dangerously-skip-permissions",
                "clean up",
            ],
        )
        .env("OURO_ALLOW_ROOT_BYPASS", "1")
        .output()
        .await
        .unwrap(),
    );
    assert!(bypass.status.success(), "{}", bypass.debug());
    let results = request_tool_results(&bodies(&mock)[1]);
    assert_eq!(results[0]["is_error"], true, "{results:?}");
    assert!(
        sb.root().join("build/out.bin").exists(),
        "a denied command ran"
    );

    let unknown = sb
        .run(&mock.url(), &["-p", "--agent", "nobody", "hi"])
        .await;
    assert!(!unknown.status.success());
    assert!(
        unknown.stderr.contains("no agent named \"nobody\"") && unknown.stderr.contains("guard"),
        "{}",
        unknown.debug()
    );
}

/// `outputStyle`: a built-in style joins the system prompt and keeps the coding instructions;
/// a file's style without `keep-coding-instructions` replaces them; an unknown one is said.
#[tokio::test]
async fn an_output_style_changes_the_system_prompt() {
    let sb = Sandbox::new();
    sb.write(
        ".ouro/output-styles/terse.md",
        "---\ndescription: One line\n---\nTERSE-STYLE: answer in one line.\n",
    );
    let mock = server(json!({"turns": [
        {"content": [{"type": "text", "text": "a"}]},
        {"content": [{"type": "text", "text": "b"}]},
        {"content": [{"type": "text", "text": "c"}]}
    ]}))
    .await;
    for style in ["Explanatory", "terse", "no-such-style"] {
        sb.write(
            ".ouro/settings.local.json",
            &json!({"outputStyle": style}).to_string(),
        );
        let run = sb.run(&mock.url(), &["-p", "--trust-project", "hi"]).await;
        assert!(run.status.success(), "{}", run.debug());
        if style == "no-such-style" {
            assert!(
                run.stderr.contains("no-such-style") && run.stderr.contains("Explanatory"),
                "{}",
                run.debug()
            );
        }
    }
    let sent = bodies(&mock);
    let explanatory = system_text(&sent[0]);
    assert!(explanatory.contains("Explanatory output style"));
    assert!(explanatory.contains("How to work"));
    let terse = system_text(&sent[1]);
    assert!(terse.contains("TERSE-STYLE"));
    assert!(!terse.contains("How to work"), "{terse}");
    let default = system_text(&sent[2]);
    assert!(default.contains("How to work") && !default.contains("Output style"));
}

/// The status line: its command gets the session's JSON and its first line shows above the
/// prompt, again after a turn; `/output-style` lists the styles and switches one.
#[tokio::test(flavor = "multi_thread")]
async fn the_status_line_shows_above_each_prompt_and_output_style_switches() {
    let sb = Sandbox::new();
    let command = r#"input=$(cat); case "$input" in *'"hook_event_name":"Status"'*) echo "SL:ok-$(printf %s "$input" | grep -o '"output_style":{"name":"[A-Za-z]*"' | cut -d'"' -f6)";; *) echo "SL:bad";; esac"#;
    std::fs::write(
        sb.home.path().join("settings.json"),
        json!({"statusLine": {"type": "command", "command": command}}).to_string(),
    )
    .unwrap();
    let mock = server(hello()).await;
    let mut term = pty::Term::start(&sb, &mock.url(), pty::Options::default());
    term.expect("SL:ok-default");
    term.submit("/output-style");
    term.expect("Learning");
    term.submit("/output-style learning");
    term.expect("Output style: Learning");
    term.expect("SL:ok-Learning");
    term.submit("hello");
    term.expect("hi");
    term.expect("SL:ok-Learning");
    term.exit();
    let sent = bodies(&mock);
    assert!(system_text(&sent[0]).contains("Learning output style"));
    let saved = std::fs::read_to_string(sb.root().join(".ouro/settings.local.json")).unwrap();
    let saved: Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(saved["outputStyle"], "Learning");
}

/// Writes a plugin named `name` under `dir`: a command, an agent, a skill, an MCP server and
/// a prompt hook that touches `marker`.
fn write_plugin(dir: &std::path::Path, name: &str, marker: &std::path::Path) -> std::path::PathBuf {
    let root = dir.join(name);
    let files = [
        (
            ".claude-plugin/plugin.json".to_string(),
            json!({"name": name, "version": "0.3.0", "description": "a test plugin"}).to_string(),
        ),
        (
            "commands/deploy.md".into(),
            "---\ndescription: Ship it\n---\nDeploy $ARGUMENTS now.\n".into(),
        ),
        (
            "agents/checker.md".into(),
            "---\nname: checker\ndescription: Checks things\n---\nCheck.\n".into(),
        ),
        (
            "skills/stamp/SKILL.md".into(),
            "---\nname: stamp\ndescription: Stamp a file\n---\nStamp it.\n".into(),
        ),
        (
            ".mcp.json".into(),
            json!({"mcpServers": {"everything": {"command": "mcp-server-everything"}}}).to_string(),
        ),
        (
            "hooks/hooks.json".into(),
            json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                "command": format!("touch {}; test -d ${{CLAUDE_PLUGIN_ROOT}}/commands", marker.display())}]}]}})
            .to_string(),
        ),
    ];
    for (rel, text) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}

/// `--plugin-dir`: the plugin's command and skill are in `system/init`'s `slash_commands`, its
/// agent in `agents`, its hook runs, its MCP server's tools are offered; a malformed plugin beside it is named and skipped, the
/// good one still loads. A marketplace plugin the settings enable loads the same, and `/plugin`
/// lists both.
#[tokio::test(flavor = "multi_thread")]
async fn plugins_from_a_folder_and_a_local_marketplace() {
    let sb = Sandbox::new();
    let plugins = tempfile::tempdir().unwrap();
    let marker = sb.home.path().join("plugin-hook-ran");
    write_plugin(plugins.path(), "shipit", &marker);
    let broken = plugins.path().join("broken/.claude-plugin");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("plugin.json"),
        r#"{"name": ["not", "a", "string"]}"#,
    )
    .unwrap();
    let mock = server(hello()).await;
    let dir = plugins.path().display().to_string();
    // The first request waits for the plugin's MCP server.
    let run = sb
        .run_waiting_for_mcp(
            &mock.url(),
            &[
                "-p",
                "--plugin-dir",
                &dir,
                "--output-format",
                "stream-json",
                "--verbose",
                "hi",
            ],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let init = &run.of_type("system", Some("init"))[0];
    let commands = init["slash_commands"].to_string();
    assert!(
        commands.contains("deploy") && commands.contains("stamp"),
        "{init}"
    );
    assert!(init["agents"].to_string().contains("checker"), "{init}");
    assert!(marker.exists(), "the plugin's hook did not run");
    if common::skip::mcp_everything() {
        assert!(
            tool_names(&bodies(&mock)[0])
                .iter()
                .any(|t| t.starts_with("mcp__everything__")),
            "the plugin's MCP server offers no tool: {:?}",
            tool_names(&bodies(&mock)[0])
        );
    }
    assert!(
        run.stderr.contains("broken/.claude-plugin/plugin.json") && run.stderr.contains("`name`"),
        "{}",
        run.debug()
    );

    // The same plugin from a local marketplace, enabled in the user's settings.
    let market = tempfile::tempdir().unwrap();
    let market_marker = sb.home.path().join("market-hook-ran");
    write_plugin(&market.path().join("plugins"), "shipit", &market_marker);
    std::fs::create_dir_all(market.path().join(".claude-plugin")).unwrap();
    std::fs::write(
        market.path().join(".claude-plugin/marketplace.json"),
        json!({"name": "house", "plugins": [{"name": "shipit", "source": "./plugins/shipit", "description": "ships"}]}).to_string(),
    )
    .unwrap();
    let mut term = pty::Term::start(&sb, &mock.url(), pty::Options::default());
    term.submit(&format!(
        "/plugin marketplace add {}",
        market.path().display()
    ));
    term.expect("Added the marketplace house");
    term.submit("/plugin enable shipit@house");
    term.expect("Enabled shipit@house");
    term.exit();
    let mut term = pty::Term::start(&sb, &mock.url(), pty::Options::default());
    term.submit("/plugin");
    term.expect("shipit 0.3.0 (shipit@house)");
    term.submit("/help");
    term.expect("(plugin shipit)");
    term.exit();
}
