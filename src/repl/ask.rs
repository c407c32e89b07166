//! Permission questions in the REPL. The engine runs its turn while the main loop owns the
//! terminal, so the asker only forwards each question over a channel and waits; the main loop
//! shows it inline, reads the answer with the line editor and sends it back.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;

use super::render::diff_lines;
use super::style::Style;
use crate::exec::{AskAnswer, AskRequest, Asker};

/// The prompt the answer is typed at.
pub(super) fn answer_prompt(request: &AskRequest) -> &'static str {
    if request.suggested_rule.trim().is_empty() {
        "Allow? (y/n) › "
    } else {
        "Allow? (y/n/a) › "
    }
}

/// A question waiting for the user, with the way back to the tool call that asked.
pub(super) struct Pending {
    pub request: AskRequest,
    pub reply: oneshot::Sender<AskAnswer>,
}

impl Pending {
    /// The call stopped waiting (its turn was interrupted), so nobody needs the answer.
    pub(super) fn is_stale(&self) -> bool {
        self.reply.is_closed()
    }

    pub(super) fn answer(self, answer: AskAnswer) {
        // The call may have been cancelled meanwhile; then the answer has nowhere to go.
        let _ = self.reply.send(answer);
    }
}

pub(super) struct ReplAsker {
    questions: UnboundedSender<Pending>,
}

/// The asker to build the session with, and the receiving end for the main loop.
pub(super) fn channel() -> (Arc<ReplAsker>, UnboundedReceiver<Pending>) {
    let (questions, rx) = unbounded_channel();
    (Arc::new(ReplAsker { questions }), rx)
}

impl Asker for ReplAsker {
    fn ask(&self, request: AskRequest) -> BoxFuture<'_, AskAnswer> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            if self.questions.send(Pending { request, reply }).is_err() {
                return AskAnswer::Deny(None);
            }
            // The REPL went away without answering: refusing is the safe reading.
            answer.await.unwrap_or(AskAnswer::Deny(None))
        })
    }
}

/// The question block: what the call wants to do, why ouro asks, and the choices.
pub(super) fn question(style: Style, request: &AskRequest) -> String {
    let mut out = String::new();
    out.push_str(&style.yellow("╭ Permission needed"));
    out.push('\n');
    out.push_str(&format!("│ {}\n", style.bold(&request.summary)));
    if !request.reason.trim().is_empty() {
        out.push_str(&format!("│ {}\n", style.dim(request.reason.trim())));
    }
    // The change itself, so "yes" is an answer to what will happen, not to a path.
    if let Some(preview) = request.preview.as_deref().filter(|p| !p.trim().is_empty()) {
        for line in diff_lines(style, preview) {
            out.push_str(&format!("│{line}\n"));
        }
    }
    out.push_str("│ y  yes, this once\n");
    let no = "n  no (or `n, <message>` to tell the model what to do instead)";
    if is_edit(request) {
        // What "always" means for an edit is rarely "this one file": offer the session, and
        // the file's folder.
        let last = folder_rule(request).map(|rule| {
            format!(
                "d  yes, and don't ask again for edits in {} (saved to .ouro/settings.local.json)",
                style.bold(&rule)
            )
        });
        out.push_str(&format!("│ {no}\n"));
        let session = "a  yes, and allow every edit for the rest of this session (accept edits)";
        match last {
            Some(last) => {
                out.push_str(&format!("│ {session}\n"));
                out.push_str(&format!("╰ {last}\n"));
            }
            None => out.push_str(&format!("╰ {session}\n")),
        }
    } else if request.suggested_rule.trim().is_empty() {
        // Without a rule there is nothing to remember, so "always" is not offered.
        out.push_str(&format!("╰ {no}\n"));
    } else {
        out.push_str(&format!("│ {no}\n"));
        out.push_str(&format!(
            "╰ a  yes, and don't ask again for {} (saved to .ouro/settings.local.json)\n",
            style.bold(&request.suggested_rule)
        ));
    }
    out
}

/// A file edit: the tools whose "always" is offered as the session or a folder.
fn is_edit(request: &AskRequest) -> bool {
    matches!(
        request.tool.as_str(),
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit"
    ) && request.suggested_rule.starts_with("Edit(")
}

/// `Edit(src/**)` for an edit of a file in the project folder `src`; `None` for a file at the
/// project's top or outside it.
pub(super) fn folder_rule(request: &AskRequest) -> Option<String> {
    let path = request
        .suggested_rule
        .strip_prefix("Edit(")?
        .strip_suffix(')')?;
    if path.starts_with('/') || path.starts_with('~') {
        return None;
    }
    let (folder, _) = path.rsplit_once('/')?;
    Some(format!("Edit({folder}/**)"))
}

/// An answer to a question, where an edit's "always" may mean the whole session.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Choice {
    Answer(AskAnswer),
    /// Allow this call and switch the session to accept edits.
    AcceptEdits,
}

/// Reads a typed answer to `request`; `None` means it was not one of the choices.
pub(super) fn parse_choice(text: &str, request: &AskRequest) -> Option<Choice> {
    if is_edit(request) {
        match text.trim().to_lowercase().as_str() {
            "a" | "always" => return Some(Choice::AcceptEdits),
            "d" | "dir" => {
                return folder_rule(request).map(|r| Choice::Answer(AskAnswer::AllowRule(r)));
            }
            _ => {}
        }
    }
    parse_answer(text).map(Choice::Answer)
}

/// Reads a typed answer; `None` means it was not one of the choices.
pub(super) fn parse_answer(text: &str) -> Option<AskAnswer> {
    let text = text.trim();
    let word_end = text
        .find(|c: char| !c.is_alphabetic())
        .unwrap_or(text.len());
    let (word, rest) = text.split_at(word_end);
    let rest = rest.trim_start_matches([',', ':', ';', '-', ' ']).trim();
    match word.to_lowercase().as_str() {
        "y" | "yes" if rest.is_empty() => Some(AskAnswer::AllowOnce),
        "a" | "always" if rest.is_empty() => Some(AskAnswer::AllowAlways),
        "n" | "no" => Some(AskAnswer::Deny(
            (!rest.is_empty()).then(|| rest.to_string()),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(rule: &str) -> AskRequest {
        AskRequest {
            tool: "Bash".into(),
            tool_use_id: "toolu_1".into(),
            input: json!({"command": "rm -rf build"}),
            summary: "Bash: rm -rf build".into(),
            reason: "This command changes files.".into(),
            suggested_rule: rule.into(),
            preview: None,
        }
    }

    #[test]
    fn an_edit_s_always_is_the_session_or_its_folder() {
        let edit = |rule: &str| AskRequest {
            tool: "Write".into(),
            ..request(rule)
        };
        assert_eq!(
            folder_rule(&edit("Edit(src/deep/main.rs)")).as_deref(),
            Some("Edit(src/deep/**)")
        );
        assert_eq!(folder_rule(&edit("Edit(top.rs)")), None);
        assert_eq!(folder_rule(&edit("Edit(/etc/hosts)")), None);
        assert_eq!(folder_rule(&edit("Edit(~/x/y)")), None);
        let r = edit("Edit(src/a.rs)");
        assert_eq!(parse_choice("a", &r), Some(Choice::AcceptEdits));
        assert_eq!(
            parse_choice("d", &r),
            Some(Choice::Answer(AskAnswer::AllowRule("Edit(src/**)".into())))
        );
        // A command's "always" is its rule, as before.
        assert_eq!(
            parse_choice("a", &request("Bash(rm:*)")),
            Some(Choice::Answer(AskAnswer::AllowAlways))
        );
        assert_eq!(parse_choice("d", &request("Bash(rm:*)")), None);
    }

    #[test]
    fn answers_are_parsed() {
        assert_eq!(parse_answer("y"), Some(AskAnswer::AllowOnce));
        assert_eq!(parse_answer(" Yes "), Some(AskAnswer::AllowOnce));
        assert_eq!(parse_answer("a"), Some(AskAnswer::AllowAlways));
        assert_eq!(parse_answer("always"), Some(AskAnswer::AllowAlways));
        assert_eq!(parse_answer("n"), Some(AskAnswer::Deny(None)));
        assert_eq!(
            parse_answer("n, use git clean instead"),
            Some(AskAnswer::Deny(Some("use git clean instead".into())))
        );
        assert_eq!(
            parse_answer("no: stop"),
            Some(AskAnswer::Deny(Some("stop".into())))
        );
        assert_eq!(parse_answer(""), None);
        assert_eq!(parse_answer("yes please"), None);
        assert_eq!(parse_answer("maybe"), None);
    }

    #[test]
    fn question_names_action_reason_and_rule() {
        let text = question(Style::new(false), &request("Bash(rm:*)"));
        assert!(text.contains("Bash: rm -rf build"), "{text}");
        assert!(text.contains("This command changes files."), "{text}");
        assert!(text.contains("don't ask again for Bash(rm:*)"), "{text}");
        let text = question(Style::new(false), &request(""));
        assert!(!text.contains("don't ask again"), "{text}");
        assert!(text.contains("╰ n  no"), "{text}");
    }

    #[test]
    fn the_question_shows_the_change_in_colour() {
        let mut edit = request("");
        edit.preview = Some("@@ -1 +1 @@\n-old line\n+new line".into());
        let plain = question(Style::new(false), &edit);
        assert!(
            plain.contains("│    -old line") && plain.contains("│    +new line"),
            "{plain}"
        );
        let coloured = question(Style::new(true), &edit);
        assert!(coloured.contains("\u{1b}[32m    +new line"), "{coloured:?}");
    }

    #[tokio::test]
    async fn asker_forwards_the_question_and_returns_the_answer() {
        let (asker, mut rx) = channel();
        let waiting = tokio::spawn(async move { asker.ask(request("")).await });
        let pending = rx.recv().await.unwrap();
        assert_eq!(pending.request.summary, "Bash: rm -rf build");
        assert!(!pending.is_stale());
        pending.answer(AskAnswer::AllowAlways);
        assert_eq!(waiting.await.unwrap(), AskAnswer::AllowAlways);
    }

    #[tokio::test]
    async fn a_question_nobody_answers_is_a_denial() {
        let (asker, rx) = channel();
        drop(rx);
        assert_eq!(asker.ask(request("")).await, AskAnswer::Deny(None));
        let (asker, mut rx) = channel();
        let waiting = tokio::spawn(async move { asker.ask(request("")).await });
        drop(rx.recv().await.unwrap());
        assert_eq!(waiting.await.unwrap(), AskAnswer::Deny(None));
    }
}
