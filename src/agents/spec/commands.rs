//! The Bash commands an agent file bounds: `allowed_commands` and `denied_commands` of its
//! `Bash` tools entries, regular expressions each matching a whole command.

use regex::Regex;

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

    /// Denied wins: a command matching any denied pattern is Denied, else one matching an
    /// allowed pattern is Allowed, else Unsettled.
    pub fn judge(&self, command: &str) -> CommandVerdict {
        // Whitespace around a command changes nothing it does, so it must not slip a command
        // past a denied pattern.
        let command = command.trim();
        if let Some(pattern) = self.denied.first_match(command) {
            return CommandVerdict::Denied { pattern };
        }
        match self.allowed.first_match(command) {
            Some(pattern) => CommandVerdict::Allowed { pattern },
            None => CommandVerdict::Unsettled,
        }
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
