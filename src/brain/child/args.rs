//! The command-line shape shared by every stream-json CLI brain: `claude` and `ouro` take the
//! same headless and interactive flags.

use crate::brain::turn::TurnOptions;

/// Print mode with stream-json both ways (`--verbose` is required by Claude Code for
/// stream-json output in print mode).
const HEADLESS: [&str; 6] = [
    "-p",
    "--output-format",
    "stream-json",
    "--input-format",
    "stream-json",
    "--verbose",
];

/// Headless mode: prompts arrive as stream-json lines on stdin and every event is printed as a
/// stream-json line, so one process serves many turns. Each of `tool_flags` gets the verb's tools as ONE
/// comma-separated value: the flags take lists, and separate words would swallow what follows.
pub(crate) fn headless_args(
    tool_flags: &[&str],
    tools: &[&str],
    model_id: Option<&str>,
    resume: Option<&str>,
) -> Vec<String> {
    let mut args: Vec<String> = HEADLESS.map(String::from).into();
    let tools = tools.join(",");
    for flag in tool_flags {
        args.push(flag.to_string());
        args.push(tools.clone());
    }
    push_common(&mut args, model_id, resume);
    args
}

/// A served turn (`BrainCli::turn`): stream-json both ways with partial messages (for
/// `chat:delta`), undecided calls put to the driver over the control protocol, and the turn's
/// options as the flags both CLIs take.
pub(crate) fn served_args(
    options: &TurnOptions,
    model_id: Option<&str>,
    resume: Option<&str>,
) -> Vec<String> {
    let mut args: Vec<String> = HEADLESS
        .iter()
        .chain(&[
            "--include-partial-messages",
            "--permission-prompt-tool",
            "stdio",
        ])
        .map(|a| a.to_string())
        .collect();
    let mut flag = |name: &str, value: String| {
        args.push(name.to_string());
        args.push(value);
    };
    if let Some(mode) = &options.permission_mode {
        flag("--permission-mode", mode.clone());
    }
    if let Some(tools) = &options.tools {
        flag("--tools", tools.join(","));
    }
    if !options.allowed_tools.is_empty() {
        flag("--allowedTools", options.allowed_tools.join(","));
    }
    if !options.disallowed_tools.is_empty() {
        flag("--disallowedTools", options.disallowed_tools.join(","));
    }
    // Both CLIs take settings as JSON text; ask rules have no flag of their own.
    let mut settings = match &options.settings {
        Some(serde_json::Value::Object(map)) => map.clone(),
        _ => serde_json::Map::new(),
    };
    if !options.ask_rules.is_empty() {
        let permissions = settings
            .entry("permissions")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(permissions) = permissions.as_object_mut() {
            permissions.insert("ask".into(), serde_json::json!(options.ask_rules));
        }
    }
    if !settings.is_empty() {
        flag(
            "--settings",
            serde_json::Value::Object(settings).to_string(),
        );
    }
    if let Some(turns) = options.max_turns {
        flag("--max-turns", turns.to_string());
    }
    if let Some(usd) = options.max_budget_usd {
        flag("--max-budget-usd", usd.to_string());
    }
    if let Some(text) = options
        .append_system_prompt
        .as_ref()
        .filter(|t| !t.is_empty())
    {
        flag("--append-system-prompt", text.clone());
    }
    push_common(&mut args, model_id, resume);
    args
}

/// The interactive program (Claude Code's TUI, ouro's REPL), for a person at a terminal.
pub fn interact_args(model_id: Option<&str>, resume: Option<&str>) -> Vec<String> {
    let mut args = Vec::new();
    push_common(&mut args, model_id, resume);
    args
}

fn push_common(args: &mut Vec<String>, model_id: Option<&str>, resume: Option<&str>) {
    if let Some(model) = model_id {
        args.extend(["--model".to_string(), model.to_string()]);
    }
    if let Some(exid) = resume.filter(|id| !id.is_empty()) {
        args.extend(["--resume".to_string(), exid.to_string()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_series_id_is_not_resumed_and_no_model_means_no_flag() {
        let args = headless_args(&["--allowedTools"], &["Read"], None, Some(""));
        assert!(!args.contains(&"--resume".to_string()), "{args:?}");
        assert!(!args.contains(&"--model".to_string()), "{args:?}");
    }

    #[test]
    fn served_turn_options_become_the_flags_both_clis_take() {
        let options = TurnOptions {
            permission_mode: Some("acceptEdits".into()),
            tools: Some(vec!["Read".into(), "Bash".into()]),
            disallowed_tools: vec!["Bash(rm:*)".into()],
            allowed_tools: vec!["Bash(ls:*)".into(), "Read".into()],
            ask_rules: vec!["Bash".into()],
            max_turns: Some(25),
            max_budget_usd: Some(0.5),
            append_system_prompt: Some("Be brief.".into()),
            resume: None,
            settings: Some(serde_json::json!({"sandbox": {"network": false}})),
        };
        let args = served_args(&options, Some("claude-sonnet-4-5"), Some("s-1"));
        let after = |flag: &str| {
            let at = args.iter().position(|a| a == flag).unwrap();
            args[at + 1].as_str()
        };
        assert_eq!(after("--permission-prompt-tool"), "stdio");
        assert_eq!(after("--permission-mode"), "acceptEdits");
        assert_eq!(after("--tools"), "Read,Bash");
        assert_eq!(after("--allowedTools"), "Bash(ls:*),Read");
        assert_eq!(after("--disallowedTools"), "Bash(rm:*)");
        assert_eq!(after("--max-turns"), "25");
        assert_eq!(after("--max-budget-usd"), "0.5");
        assert_eq!(
            after("--settings"),
            r#"{"permissions":{"ask":["Bash"]},"sandbox":{"network":false}}"#
        );
        assert_eq!(after("--append-system-prompt"), "Be brief.");
        assert_eq!(after("--resume"), "s-1");
        assert!(args.contains(&"--include-partial-messages".to_string()));
        let bare = served_args(&TurnOptions::default(), None, None);
        assert!(!bare.contains(&"--tools".to_string()), "{bare:?}");
        assert!(!bare.contains(&"--resume".to_string()), "{bare:?}");
        assert!(!bare.contains(&"--settings".to_string()), "{bare:?}");
    }

    #[test]
    fn interact_with_and_without_a_series() {
        assert_eq!(interact_args(None, None), Vec::<String>::new());
        assert_eq!(
            interact_args(Some("claude-haiku-4-5"), Some("sess-2")),
            ["--model", "claude-haiku-4-5", "--resume", "sess-2"].map(String::from)
        );
    }
}
