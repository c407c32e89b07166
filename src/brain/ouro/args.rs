//! The command lines `ouro` itself is driven with as a brain.

use crate::brain::child::args::headless_args;

/// Headless mode. Print mode cannot ask for permission, so the verb's tools are both the only
/// ones offered (`--tools`) and allowed outright (`--allowedTools`).
pub fn dispatch_args(model_id: Option<&str>, tools: &[&str], resume: Option<&str>) -> Vec<String> {
    headless_args(&["--allowedTools", "--tools"], tools, model_id, resume)
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
        "--output-format",
        "stream-json",
        "--input-format",
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
}
