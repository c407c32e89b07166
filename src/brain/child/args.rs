//! The command-line shape shared by every stream-json CLI brain: `claude` and `ouro` take the
//! same headless and interactive flags.

/// Headless mode: prompts arrive as stream-json lines on stdin and every event is printed as a
/// stream-json line, so one process serves many turns (`--verbose` is required by Claude Code
/// for stream-json output in print mode). Each of `tool_flags` gets the verb's tools as ONE
/// comma-separated value: the flags take lists, and separate words would swallow what follows.
pub fn headless_args(
    tool_flags: &[&str],
    tools: &[&str],
    model_id: Option<&str>,
    resume: Option<&str>,
) -> Vec<String> {
    let mut args: Vec<String> = [
        "-p",
        "--output-format",
        "stream-json",
        "--input-format",
        "stream-json",
        "--verbose",
    ]
    .map(String::from)
    .into();
    let tools = tools.join(",");
    for flag in tool_flags {
        args.push(flag.to_string());
        args.push(tools.clone());
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
    fn interact_with_and_without_a_series() {
        assert_eq!(interact_args(None, None), Vec::<String>::new());
        assert_eq!(
            interact_args(Some("claude-haiku-4-5"), Some("sess-2")),
            ["--model", "claude-haiku-4-5", "--resume", "sess-2"].map(String::from)
        );
    }
}
