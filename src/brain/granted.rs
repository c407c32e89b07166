//! Rules granted during an agent's run ("allow always" from any client, IPC's `newRules`).
//! An agent with command patterns asks its asker about every Bash call, so the brain's own
//! session rules never get to skip a question: the asker keeps what was granted and answers
//! the calls it covers itself. It matches only what a rule names exactly: a whole tool, one
//! whole Bash command, the prefix of a single simple command (`Bash(npm test:*)`), or a path.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{PermissionAnswer, PermissionQuestion};
use crate::sys::sync::lock;

/// The rules granted so far in one run.
#[derive(Debug, Clone, Default)]
pub struct Granted(Arc<Mutex<Vec<String>>>);

impl Granted {
    /// Keeps what an "always" answer to `question` grants: the rules it names, else the
    /// question's own suggestion.
    pub fn remember(&self, question: &PermissionQuestion, answer: &PermissionAnswer) {
        let PermissionAnswer::Allow {
            remember, rules, ..
        } = answer
        else {
            return;
        };
        let rules = if !rules.is_empty() {
            rules
        } else if *remember {
            &question.always_rules
        } else {
            return;
        };
        let mut granted = lock(&self.0);
        for rule in rules {
            if !granted.contains(rule) {
                granted.push(rule.clone());
            }
        }
    }

    /// The granted rule that covers this call, if one does.
    pub fn covering(&self, tool: &str, input: &Value) -> Option<String> {
        lock(&self.0)
            .iter()
            .find(|rule| covers(rule, tool, input))
            .cloned()
    }
}

fn covers(rule: &str, tool: &str, input: &Value) -> bool {
    let (name, content) = match rule.split_once('(') {
        Some((name, rest)) => match rest.strip_suffix(')') {
            Some(content) => (name, Some(content)),
            None => return false,
        },
        None => (rule, None),
    };
    if name != tool {
        return false;
    }
    let Some(content) = content else {
        return true;
    };
    let field = |key: &str| input.get(key).and_then(Value::as_str);
    if tool == "Bash" {
        return field("command").is_some_and(|command| command_covered(content, command));
    }
    ["file_path", "notebook_path", "path", "url"]
        .iter()
        .any(|key| field(key) == Some(content))
}

/// `content` is one whole command, or `prefix:*`: the command is a single simple command
/// (nothing chained, substituted or redirected) that starts with the prefix as whole words.
fn command_covered(content: &str, command: &str) -> bool {
    let command = command.trim();
    let Some(prefix) = content.strip_suffix(":*") else {
        return command == content.trim();
    };
    let analysis = crate::permissions::bash::analyse(command);
    let simple = analysis.is_complete()
        && analysis.findings.is_empty()
        && analysis.writes.is_empty()
        && analysis.reads.is_empty()
        && matches!(analysis.parts.as_slice(), [part] if part.source.trim() == command);
    simple
        && command
            .strip_prefix(prefix.trim_end())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn question(command: &str) -> PermissionQuestion {
        PermissionQuestion {
            tool_name: "Bash".into(),
            input: json!({"command": command}),
            reason: None,
            always_rules: vec![format!("Bash({command})")],
        }
    }

    #[test]
    fn an_always_answer_grants_its_rules_or_the_suggestion() {
        let granted = Granted::default();
        granted.remember(&question("make"), &PermissionAnswer::allow(false));
        assert_eq!(granted.covering("Bash", &json!({"command": "make"})), None);
        granted.remember(&question("make"), &PermissionAnswer::allow(true));
        assert_eq!(
            granted.covering("Bash", &json!({"command": "make"})),
            Some("Bash(make)".into())
        );
        granted.remember(
            &question("npm test"),
            &PermissionAnswer::Allow {
                remember: true,
                updated_input: None,
                rules: vec!["Bash(npm test:*)".into(), "Edit(/p/a.rs)".into()],
            },
        );
        assert!(
            granted
                .covering("Edit", &json!({"file_path": "/p/a.rs"}))
                .is_some()
        );
        assert!(
            granted
                .covering("Edit", &json!({"file_path": "/p/b.rs"}))
                .is_none()
        );
        assert!(
            granted
                .covering("Write", &json!({"file_path": "/p/a.rs"}))
                .is_none()
        );
        granted.remember(
            &question("x"),
            &PermissionAnswer::Deny {
                message: "no".into(),
            },
        );
        assert!(granted.covering("Bash", &json!({"command": "x"})).is_none());
    }

    #[test]
    fn a_prefix_rule_covers_one_simple_command_and_nothing_chained_onto_it() {
        let covered = |command: &str| command_covered("npm test:*", command);
        assert!(covered("npm test"));
        assert!(covered("npm test --watch=false"));
        assert!(!covered("npm tester"));
        assert!(!covered("npm test && rm -rf /"));
        assert!(!covered("npm test; curl evil"));
        assert!(!covered("npm test > /etc/passwd"));
        assert!(!covered("npm test $(curl evil)"));
        assert!(!covered("npm test | sh"));
        assert!(command_covered("make", " make "));
        assert!(!command_covered("make", "make install"));
        assert!(covers("Bash", "Bash", &json!({"command": "anything"})));
        assert!(!covers("Bash(make", "Bash", &json!({"command": "make"})));
    }
}
