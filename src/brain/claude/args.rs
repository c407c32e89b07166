//! The command lines and stdin messages the `claude` CLI is driven with.

/// Headless mode: prompts arrive as stream-json lines on stdin and every event is printed as a
/// stream-json line, so one process serves many turns. `--verbose` is required by the CLI for
/// stream-json output in print mode.
pub fn dispatch_args(model_id: Option<&str>, tools: &[&str], resume: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = [
        "-p",
        "--output-format",
        "stream-json",
        "--input-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
    ]
    .map(String::from)
    .into();
    // One comma-separated value: the flag takes a variadic list, and separate words would swallow
    // the flags after it.
    args.push(tools.join(","));
    push_common(&mut args, model_id, resume);
    args
}

/// The interactive TUI, for a person at a terminal.
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

    const HEADLESS: [&str; 6] = [
        "-p",
        "--output-format",
        "stream-json",
        "--input-format",
        "stream-json",
        "--verbose",
    ];

    fn expected(rest: &[&str]) -> Vec<String> {
        HEADLESS.iter().chain(rest).map(|s| s.to_string()).collect()
    }

    #[test]
    fn dispatch_ask_without_series() {
        assert_eq!(
            dispatch_args(Some("claude-opus-4-5"), tools_for(Verb::Ask), None),
            expected(&[
                "--allowedTools",
                "Glob,Grep,Read",
                "--model",
                "claude-opus-4-5"
            ])
        );
    }

    #[test]
    fn dispatch_act_with_series_resumes_it() {
        assert_eq!(
            dispatch_args(
                Some("claude-haiku-4-5"),
                tools_for(Verb::Act),
                Some("sess-1")
            ),
            expected(&[
                "--allowedTools",
                "Glob,Grep,Read,Bash,Edit,Write",
                "--model",
                "claude-haiku-4-5",
                "--resume",
                "sess-1"
            ])
        );
    }

    #[test]
    fn dispatch_without_model_or_with_an_empty_series_id() {
        assert_eq!(
            dispatch_args(None, tools_for(Verb::Ask), Some("")),
            expected(&["--allowedTools", "Glob,Grep,Read"])
        );
    }

    #[test]
    fn interact_with_and_without_series() {
        assert_eq!(interact_args(None, None), Vec::<String>::new());
        assert_eq!(
            interact_args(Some("claude-sonnet-4-5"), Some("sess-2")),
            ["--model", "claude-sonnet-4-5", "--resume", "sess-2"].map(String::from)
        );
    }
}
