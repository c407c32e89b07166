//! The command lines `ouro` itself is driven with as a brain.

/// Headless mode, the same protocol Claude Code speaks: prompts arrive as stream-json lines on
/// stdin and every event is printed as a stream-json line, so one process serves many turns.
/// Print mode cannot ask for permission, so the verb's tools are both the only ones offered
/// (`--tools`) and allowed outright (`--allowedTools`).
pub fn dispatch_args(model_id: Option<&str>, tools: &[&str], resume: Option<&str>) -> Vec<String> {
    let tools = tools.join(",");
    let mut args: Vec<String> = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        &tools,
        "--tools",
        &tools,
    ]
    .map(String::from)
    .into();
    push_common(&mut args, model_id, resume);
    args
}

/// The REPL, for a person at a terminal.
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
    use crate::brain::Verb;
    use crate::brain::table::tools_for;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    const HEADLESS: [&str; 6] = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
    ];

    #[test]
    fn dispatch_ask_offers_and_allows_only_the_read_only_tools() {
        let mut expected = HEADLESS.to_vec();
        expected.extend([
            "--allowedTools",
            "Glob,Grep,Read",
            "--tools",
            "Glob,Grep,Read",
            "--model",
            "claude-sonnet-4-5",
        ]);
        assert_eq!(
            dispatch_args(Some("claude-sonnet-4-5"), tools_for(Verb::Ask), None),
            strings(&expected)
        );
    }

    #[test]
    fn dispatch_act_with_a_series_resumes_it() {
        let mut expected = HEADLESS.to_vec();
        expected.extend([
            "--allowedTools",
            "Glob,Grep,Read,Bash,Edit,Write",
            "--tools",
            "Glob,Grep,Read,Bash,Edit,Write",
            "--model",
            "claude-opus-4-5",
            "--resume",
            "sess-1",
        ]);
        assert_eq!(
            dispatch_args(
                Some("claude-opus-4-5"),
                tools_for(Verb::Act),
                Some("sess-1")
            ),
            strings(&expected)
        );
    }

    #[test]
    fn an_empty_series_id_is_not_resumed() {
        let args = dispatch_args(None, tools_for(Verb::Ask), Some(""));
        assert!(!args.contains(&"--resume".to_string()), "{args:?}");
        assert!(!args.contains(&"--model".to_string()), "{args:?}");
    }

    #[test]
    fn interact_runs_the_repl_with_and_without_a_series() {
        assert_eq!(interact_args(None, None), Vec::<String>::new());
        assert_eq!(
            interact_args(Some("claude-haiku-4-5"), Some("sess-2")),
            strings(&["--model", "claude-haiku-4-5", "--resume", "sess-2"])
        );
    }
}
