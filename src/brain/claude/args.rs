//! The command lines and stdin messages the `claude` CLI is driven with.

use crate::brain::child::args::headless_args;

/// Headless mode with the verb's tools allowed (Claude Code offers all of its tools anyway).
pub fn dispatch_args(model_id: Option<&str>, tools: &[&str], resume: Option<&str>) -> Vec<String> {
    headless_args(&["--allowedTools"], tools, model_id, resume)
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
}
