//! The Bash commands an agent file bounds: `allowed_commands` and `denied_commands` of its
//! `Bash` tools entries, regular expressions each matching a whole command. A command line is
//! judged by the simple commands the bash analyser finds in it, not as one string: `cargo test
//! && rm -rf x` is two commands, and `( .*)?` in an allowed pattern must not take in the second.

use regex::Regex;

use crate::permissions::bash::FindingKind;

use super::{AgentSpec, SpecError, ToolEntry};

/// The compiled patterns of an agent's tools entries.
#[derive(Debug, Clone, Default)]
pub struct CommandRules {
    denied: Patterns,
    allowed: Patterns,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandVerdict {
    /// The command matches this denied pattern (as written).
    Denied { pattern: String },
    /// The command matches this allowed pattern and no denied one.
    Allowed { pattern: String },
    /// The command runs code the analyser cannot see (`sh -c`, `eval`, a script), so the
    /// denied patterns cannot be checked: a person decides, never a rule granted earlier.
    Unseen,
    /// No pattern matches: the session's permissions decide.
    Unsettled,
}

impl CommandRules {
    /// From patterns as written (an instance's stored config, or a definition's entries).
    pub fn compile(allowed: &[String], denied: &[String]) -> Result<CommandRules, PatternError> {
        Ok(CommandRules {
            denied: Patterns::compile(denied)?,
            allowed: Patterns::compile(allowed)?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.denied.written.is_empty() && self.allowed.written.is_empty()
    }

    /// Denied wins: a line whose text, or any simple command in it (as written, and without
    /// its wrappers: `timeout 5 rm x` is `rm x`), matches a denied pattern is Denied. A line is
    /// Allowed when it is one command an allowed pattern matches whole (its redirections in
    /// sight), or commands joined by `&&`, `;`, `|`... with no substitution, subshell or code the
    /// analyser cannot see, each matched by an allowed pattern. Anything else is Unsettled: the
    /// session's permissions decide (one that may hide a denied command is Unseen: a person
    /// decides).
    pub fn judge(&self, command: &str) -> CommandVerdict {
        // Whitespace around a command changes nothing it does, so it must not slip a command
        // past a denied pattern.
        let command = command.trim();
        if let Some(pattern) = self.denied.first_match(command) {
            return CommandVerdict::Denied { pattern };
        }
        let analysis = crate::permissions::bash::analyse(command);
        let commands: Vec<(String, String)> = analysis
            .parts
            .iter()
            .map(|part| {
                let core = part
                    .core_words()
                    .iter()
                    .map(|w| w.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                (part.source.trim().to_string(), core)
            })
            .collect();
        for (written, core) in &commands {
            if let Some(pattern) = self
                .denied
                .first_match(written)
                .or_else(|| self.denied.first_match(core))
            {
                return CommandVerdict::Denied { pattern };
            }
        }
        let unseen = analysis
            .findings
            .iter()
            .any(|f| f.kind.runs_unseen_commands())
            || analysis
                .parts
                .iter()
                .any(|p| p.core_words().first().is_some_and(|w| !w.literal));
        if unseen && !self.denied.written.is_empty() {
            return CommandVerdict::Unseen;
        }
        // One command whose whole line a pattern matches, with nothing in it but what the line
        // shows (a redirection, a variable for it): the pattern's author saw all of it.
        let shown = analysis.findings.iter().all(|f| {
            matches!(
                f.kind,
                FindingKind::WriteRedirect | FindingKind::Tee | FindingKind::EnvPrefix
            )
        });
        if commands.len() == 1
            && shown
            && let Some(pattern) = self.allowed.first_match(command)
        {
            return CommandVerdict::Allowed { pattern };
        }
        if !analysis.findings.is_empty() || commands.is_empty() {
            return CommandVerdict::Unsettled;
        }
        let mut first = None;
        for (written, _) in &commands {
            match self.allowed.first_match(written) {
                Some(pattern) => {
                    first.get_or_insert(pattern);
                }
                None => return CommandVerdict::Unsettled,
            }
        }
        first.map_or(CommandVerdict::Unsettled, |pattern| {
            CommandVerdict::Allowed { pattern }
        })
    }

    /// The verdict on one tool call: a Bash call's command judged, any other call Unsettled.
    pub fn judge_call(&self, tool_name: &str, input: &serde_json::Value) -> CommandVerdict {
        match input.get("command").and_then(|c| c.as_str()) {
            Some(command) if tool_name == "Bash" => self.judge(command),
            _ => CommandVerdict::Unsettled,
        }
    }

    /// What the model is told of a command that `pattern` denied, so it can change course.
    pub fn refusal(pattern: &str) -> String {
        format!(
            "The agent's definition refuses this command: it matches the denied_commands pattern `{pattern}`. Do something else."
        )
    }

    /// The denied patterns as written.
    pub fn denied(&self) -> &[String] {
        &self.denied.written
    }

    /// The allowed patterns as written.
    pub fn allowed(&self) -> &[String] {
        &self.allowed.written
    }
}

impl AgentSpec {
    /// Compiles the patterns of every tools entry; one that is not a regular expression is an
    /// error naming the file, the tool and the pattern.
    pub fn command_rules(&self) -> Result<CommandRules, SpecError> {
        let entries = self.tools.as_deref().unwrap_or_default();
        let all = |of: fn(&ToolEntry) -> &Vec<String>| -> Vec<String> {
            entries.iter().flat_map(|e| of(e).iter().cloned()).collect()
        };
        let allowed = all(|e| &e.allowed_commands);
        let denied = all(|e| &e.denied_commands);
        CommandRules::compile(&allowed, &denied).map_err(|e| SpecError::BadPattern {
            path: self.source.clone(),
            tool: entries
                .iter()
                .find(|t| {
                    t.allowed_commands.contains(&e.pattern)
                        || t.denied_commands.contains(&e.pattern)
                })
                .map_or_else(String::new, |t| t.name.clone()),
            pattern: e.pattern,
            reason: e.reason,
        })
    }
}

/// A command pattern that is not a regular expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("\"{pattern}\" is not a valid regular expression: {reason}")]
pub struct PatternError {
    pub pattern: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default)]
struct Patterns {
    written: Vec<String>,
    compiled: Vec<Regex>,
}

impl Patterns {
    fn compile(written: &[String]) -> Result<Patterns, PatternError> {
        let mut patterns = Patterns::default();
        for pattern in written {
            let bad = |e: regex::Error| PatternError {
                pattern: pattern.clone(),
                reason: reason(&e),
            };
            // Alone first: `a)|(b` compiles once wrapped, as `^(?:a)|(b)$`, which anchors
            // neither half.
            Regex::new(pattern).map_err(bad)?;
            // The whole command, so that `git status; rm -rf /` is not `git status`.
            let whole = Regex::new(&format!("^(?:{pattern})$")).map_err(bad)?;
            patterns.written.push(pattern.clone());
            patterns.compiled.push(whole);
        }
        Ok(patterns)
    }

    fn first_match(&self, command: &str) -> Option<String> {
        self.written
            .iter()
            .zip(&self.compiled)
            .find(|(_, regex)| regex.is_match(command))
            .map(|(written, _)| written.clone())
    }
}

/// The parser's own words, without the pattern and caret it draws above them.
fn reason(error: &regex::Error) -> String {
    let text = error.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(&text);
    last.trim().trim_start_matches("error: ").to_string()
}
