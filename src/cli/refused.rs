//! Claude Code 2.1.331 flags ouro does not have, each with why and what to use instead. They
//! are refused by name before anything else is read, never taken for a prompt or met with a
//! parser's generic error. (Flags ouro declares but cannot honour yet are in `args.rs`.)

/// `(flag, why)`; `--flag` and `--flag=value` are both refused.
pub const REFUSED: &[(&str, &str)] = &[
    (
        "--ax-screen-reader",
        "ouro's output is already plain lines of text, with no decorative borders to turn off",
    ),
    (
        "--bg",
        "ouro has no background sessions of that kind; `ouro daemon` keeps a clone's brain running behind a terminal you can close",
    ),
    (
        "--background",
        "ouro has no background sessions of that kind; `ouro daemon` keeps a clone's brain running behind a terminal you can close",
    ),
    ("--brief", "ouro has no SendUserMessage tool"),
    ("--chrome", "ouro has no browser integration"),
    ("--no-chrome", "ouro has no browser integration"),
    (
        "--cloud",
        "ouro runs on this machine only; it has no cloud sessions",
    ),
    (
        "--desktop",
        "there is no desktop app; `ouro serve` serves a web command center",
    ),
    (
        "--environment",
        "ouro runs on this machine only; it has no cloud environments",
    ),
    (
        "--exclude-dynamic-system-prompt-sections",
        "ouro's system prompt keeps per-machine facts at its end already, after the cached part",
    ),
    (
        "--file",
        "ouro downloads no files at start-up; mention a file with @path in the prompt",
    ),
    (
        "--forward-subagent-text",
        "a sub-agent's text stays inside its Agent call in ouro's stream-json",
    ),
    (
        "--from-pr",
        "ouro does not link sessions to pull requests; resume with --resume ID",
    ),
    (
        "--plugin-url",
        "ouro downloads no plugins; fetch it yourself and give the folder with --plugin-dir",
    ),
    ("--prompt-suggestions", "ouro makes no prompt suggestions"),
    (
        "--remote-control",
        "ouro has no remote control; `ouro serve` (HTTP + SSE) drives sessions from elsewhere",
    ),
    (
        "--remote-control-session-name-prefix",
        "ouro has no remote control; `ouro serve` (HTTP + SSE) drives sessions from elsewhere",
    ),
    (
        "--system-prompt-snapshot",
        "ouro builds the system prompt once per session already and reuses it verbatim",
    ),
    (
        "--teleport",
        "ouro runs on this machine only; it has no cloud sessions to teleport",
    ),
    (
        "--tmux",
        "ouro makes no tmux sessions; run `ouro --worktree` inside your own tmux",
    ),
];

/// The first refused flag among `args` (before a `--` that ends the flags), with why.
pub fn first_refused(args: &[String]) -> Option<(&'static str, &'static str)> {
    args.iter()
        .take_while(|a| a.as_str() != "--")
        .find_map(|arg| {
            let flag = arg.split_once('=').map_or(arg.as_str(), |(f, _)| f);
            REFUSED.iter().find(|(name, _)| *name == flag).copied()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn refused_flags_are_found_with_or_without_a_value() {
        assert_eq!(
            first_refused(&args(&["-p", "hi", "--tmux"])).unwrap().0,
            "--tmux"
        );
        assert_eq!(
            first_refused(&args(&["--tmux=classic"])).unwrap().0,
            "--tmux"
        );
        assert!(first_refused(&args(&["-p", "--", "--tmux"])).is_none());
        assert!(first_refused(&args(&["-p", "tell me about --tmuxes"])).is_none());
    }

    #[test]
    fn every_reason_is_a_sentence_of_its_own() {
        for (flag, why) in REFUSED {
            assert!(
                flag.starts_with("--") && !why.is_empty() && !why.ends_with('.'),
                "{flag}"
            );
        }
    }
}
