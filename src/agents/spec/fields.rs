//! The front matter's values as typed settings. Each getter takes the keys it reads out of the
//! map, so what is left at the end is what no getter knows: the unknown keys.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use serde_json::{Map, Value};

use super::{SpecError, ToolEntry};
use crate::permissions::split_rule_list;

/// The only tool whose entries may bound its commands.
const BASH: &str = "Bash";
const TOOL_ENTRY: &str =
    "a tool name, a rule such as Bash(git diff:*), or {name, allowed_commands, denied_commands}";
const MEMORY_SCOPES: &[&str] = &["user", "project", "local"];

pub(super) struct Fields<'a> {
    path: &'a Path,
    /// The top level's keys, and the `engine` block's as `engine.<key>`.
    map: BTreeMap<String, Value>,
    /// Unknown keys inside tools entries, met while reading them.
    warnings: Vec<String>,
}

impl<'a> Fields<'a> {
    pub(super) fn new(path: &'a Path, mut map: BTreeMap<String, Value>) -> Result<Self, SpecError> {
        let engine = map.remove("engine");
        let mut fields = Fields {
            path,
            map,
            warnings: Vec::new(),
        };
        match engine {
            None | Some(Value::Null) => {}
            Some(Value::Object(engine)) => fields
                .map
                .extend(engine.into_iter().map(|(k, v)| (format!("engine.{k}"), v))),
            Some(other) => {
                return Err(fields.invalid("engine", "a map of engine settings", &other));
            }
        }
        Ok(fields)
    }

    /// Tools entries' unknown keys, then every key no getter took.
    pub(super) fn into_warnings(mut self) -> Vec<String> {
        let shown = self.path.display();
        self.warnings.extend(
            self.map
                .keys()
                .map(|key| format!("{shown}: unknown key \"{key}\" is ignored")),
        );
        self.warnings
    }

    fn invalid(
        &self,
        key: impl Into<String>,
        expected: impl Into<String>,
        found: &Value,
    ) -> SpecError {
        SpecError::Invalid {
            path: self.path.to_path_buf(),
            key: key.into(),
            expected: expected.into(),
            found: shown(found),
        }
    }

    /// The one value given for a setting that goes by `names`. A key with no value counts as
    /// absent, so that an empty `model:` does not clash with `engine.model`.
    fn take(&mut self, names: &[&'static str]) -> Result<Option<(&'static str, Value)>, SpecError> {
        let mut given = names
            .iter()
            .filter_map(|&name| Some((name, self.map.remove(name)?)))
            .filter(|(_, value)| !value.is_null())
            .collect::<Vec<_>>()
            .into_iter();
        match (given.next(), given.next()) {
            (Some((first, _)), Some((second, _))) => Err(SpecError::TwoNames {
                path: self.path.to_path_buf(),
                first,
                second,
            }),
            (one, _) => Ok(one),
        }
    }

    /// Text, trimmed (a folded YAML block ends in a newline); a plain number is its text.
    pub(super) fn text(&mut self, names: &[&'static str]) -> Result<Option<String>, SpecError> {
        let Some((key, value)) = self.take(names)? else {
            return Ok(None);
        };
        let text = match &value {
            Value::String(text) => text.trim().to_string(),
            Value::Number(n) => n.to_string(),
            _ => return Err(self.invalid(key, "text", &value)),
        };
        Ok((!text.is_empty()).then_some(text))
    }

    /// Text that `T` must accept, e.g. an effort level.
    pub(super) fn parsed<T: FromStr>(
        &mut self,
        key: &'static str,
        expected: &str,
    ) -> Result<Option<T>, SpecError> {
        let Some(text) = self.text(&[key])? else {
            return Ok(None);
        };
        text.parse()
            .map(Some)
            .map_err(|_| self.invalid(key, expected, &Value::String(text)))
    }

    /// A YAML list of names, or names separated by commas as Claude Code writes them.
    pub(super) fn list(
        &mut self,
        names: &[&'static str],
    ) -> Result<Option<Vec<String>>, SpecError> {
        let Some((key, value)) = self.take(names)? else {
            return Ok(None);
        };
        match value {
            Value::String(text) => Ok(Some(split_rule_list(&text))),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(text) if !text.trim().is_empty() => Ok(text.trim().to_string()),
                    _ => Err(self.invalid(format!("{key}[{i}]"), "a name", item)),
                })
                .collect::<Result<_, _>>()
                .map(Some),
            other => Err(self.invalid(key, "a list, or names separated by commas", &other)),
        }
    }

    pub(super) fn tools(
        &mut self,
        names: &[&'static str],
    ) -> Result<Option<Vec<ToolEntry>>, SpecError> {
        let Some((key, value)) = self.take(names)? else {
            return Ok(None);
        };
        let mut entries = Vec::new();
        match value {
            Value::String(text) => {
                for item in split_rule_list(&text) {
                    entries.push(self.rule_entry(key, &item)?);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    let at = format!("{key}[{i}]");
                    entries.push(match item {
                        Value::String(text) => self.rule_entry(&at, &text)?,
                        Value::Object(entry) => self.object_entry(&at, entry)?,
                        other => return Err(self.invalid(at, TOOL_ENTRY, &other)),
                    });
                }
            }
            other => {
                return Err(self.invalid(
                    key,
                    "a list of tools, or tool names separated by commas",
                    &other,
                ));
            }
        }
        Ok(Some(entries))
    }

    /// `Read`, or a rule such as `Bash(git diff:*)` naming the tool before its `(`.
    fn rule_entry(&self, key: &str, text: &str) -> Result<ToolEntry, SpecError> {
        let text = text.trim();
        let name = match text.split_once('(') {
            Some((name, _)) if text.ends_with(')') => name.trim(),
            Some(_) => "",
            None => text,
        };
        if name.is_empty() {
            return Err(self.invalid(key, TOOL_ENTRY, &Value::String(text.to_string())));
        }
        Ok(ToolEntry {
            name: name.to_string(),
            rule: text.contains('(').then(|| text.to_string()),
            allowed_commands: Vec::new(),
            denied_commands: Vec::new(),
        })
    }

    fn object_entry(
        &mut self,
        key: &str,
        mut entry: Map<String, Value>,
    ) -> Result<ToolEntry, SpecError> {
        let name = match entry.remove("name") {
            Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_string(),
            other => {
                return Err(self.invalid(
                    format!("{key}.name"),
                    "a tool name",
                    &other.unwrap_or(Value::Null),
                ));
            }
        };
        let allowed_commands =
            self.patterns(key, "allowed_commands", entry.remove("allowed_commands"))?;
        let denied_commands =
            self.patterns(key, "denied_commands", entry.remove("denied_commands"))?;
        // Patterns on another tool would bound nothing and only look like a safeguard.
        let bounded = [
            ("allowed_commands", &allowed_commands),
            ("denied_commands", &denied_commands),
        ]
        .into_iter()
        .find(|(_, patterns)| !patterns.is_empty());
        if let Some((field, _)) = bounded
            && name != BASH
        {
            return Err(SpecError::NotBash {
                path: self.path.to_path_buf(),
                key: format!("{key}.{field}"),
                tool: name,
            });
        }
        let shown = self.path.display();
        self.warnings.extend(
            entry
                .keys()
                .map(|k| format!("{shown}: unknown key \"{key}.{k}\" is ignored")),
        );
        Ok(ToolEntry {
            name,
            rule: None,
            allowed_commands,
            denied_commands,
        })
    }

    fn patterns(
        &self,
        key: &str,
        field: &str,
        value: Option<Value>,
    ) -> Result<Vec<String>, SpecError> {
        match value {
            None | Some(Value::Null) => Ok(Vec::new()),
            // A regular expression may hold commas, so a string is one pattern, never a list.
            Some(Value::String(pattern)) => Ok(vec![pattern]),
            Some(Value::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(pattern) => Ok(pattern),
                    other => Err(self.invalid(
                        format!("{key}.{field}[{i}]"),
                        "a regular expression",
                        &other,
                    )),
                })
                .collect(),
            Some(other) => Err(self.invalid(
                format!("{key}.{field}"),
                "a regular expression or a list of them",
                &other,
            )),
        }
    }

    pub(super) fn flag(&mut self, key: &'static str) -> Result<Option<bool>, SpecError> {
        match self.take(&[key])? {
            None => Ok(None),
            Some((_, Value::Bool(flag))) => Ok(Some(flag)),
            Some((key, other)) => Err(self.invalid(key, "true or false", &other)),
        }
    }

    /// A whole number above 0 that fits `T`; a quoted one (`"7"`) counts, as persona files had it.
    pub(super) fn whole<T: TryFrom<u64>>(
        &mut self,
        names: &[&'static str],
    ) -> Result<Option<T>, SpecError> {
        let Some((key, value)) = self.take(names)? else {
            return Ok(None);
        };
        let n = match &value {
            Value::Number(n) => n.as_u64(),
            Value::String(text) => text.trim().parse::<u64>().ok(),
            _ => None,
        };
        match n.filter(|n| *n > 0) {
            Some(n) => T::try_from(n)
                .map(Some)
                .map_err(|_| self.invalid(key, "a smaller whole number", &value)),
            None => Err(self.invalid(key, "a whole number above 0", &value)),
        }
    }

    fn number(
        &mut self,
        key: &'static str,
        expected: &str,
        fits: impl Fn(f64) -> bool,
    ) -> Result<Option<f64>, SpecError> {
        let Some((key, value)) = self.take(&[key])? else {
            return Ok(None);
        };
        let n = match &value {
            Value::Number(n) => n.as_f64(),
            Value::String(text) => text.trim().parse::<f64>().ok(),
            _ => None,
        };
        n.filter(|n| n.is_finite() && fits(*n))
            .map(Some)
            .ok_or_else(|| self.invalid(key, expected, &value))
    }

    /// The range the Messages API takes.
    pub(super) fn temperature(&mut self) -> Result<Option<f64>, SpecError> {
        self.number("engine.temperature", "a number from 0 to 1", |t| {
            (0.0..=1.0).contains(&t)
        })
    }

    pub(super) fn cost(&mut self) -> Result<Option<f64>, SpecError> {
        self.number(
            "engine.max_cost_usd",
            "an amount of US dollars above 0",
            |c| c > 0.0,
        )
    }

    /// `<binary>@<model>`: its shape is checked here (agents sit below the brains); the slug is
    /// resolved by whoever starts the brain, whose error lists the valid ones.
    pub(super) fn brain(&mut self) -> Result<Option<String>, SpecError> {
        let Some(slug) = self.text(&["engine.brain"])? else {
            return Ok(None);
        };
        match slug.split_once('@') {
            Some((binary, model)) if matches!(binary, "ouro" | "claude") && !model.is_empty() => {
                Ok(Some(slug))
            }
            _ => Err(self.invalid(
                "engine.brain",
                "a brain slug such as ouro@anthropic/claude/sonnet or claude@anthropic/claude/opus",
                &Value::String(slug),
            )),
        }
    }

    pub(super) fn isolation(&mut self) -> Result<Option<String>, SpecError> {
        match self.text(&["isolation"])? {
            Some(isolation) if isolation != "worktree" => {
                Err(self.invalid("isolation", "\"worktree\"", &Value::String(isolation)))
            }
            isolation => Ok(isolation),
        }
    }

    pub(super) fn map(
        &mut self,
        key: &'static str,
        expected: &str,
    ) -> Result<Option<Value>, SpecError> {
        match self.take(&[key])? {
            None => Ok(None),
            Some((_, value @ Value::Object(_))) => Ok(Some(value)),
            Some((key, other)) => Err(self.invalid(key, expected, &other)),
        }
    }

    /// Claude Code's list of server names and inline `{name: config}` definitions, or a map.
    pub(super) fn mcp_servers(&mut self) -> Result<Option<Value>, SpecError> {
        match self.take(&["mcpServers"])? {
            None => Ok(None),
            Some((_, value @ Value::Object(_))) => Ok(Some(value)),
            Some((key, Value::Array(servers))) => {
                if let Some((i, bad)) = servers
                    .iter()
                    .enumerate()
                    .find(|(_, s)| !(s.is_string() || s.is_object()))
                {
                    return Err(self.invalid(
                        format!("{key}[{i}]"),
                        "a server name or a definition",
                        bad,
                    ));
                }
                Ok(Some(Value::Array(servers)))
            }
            Some((key, other)) => {
                Err(self.invalid(key, "a list of server names or definitions", &other))
            }
        }
    }

    /// Claude Code's scopes, or a map of settings.
    pub(super) fn memory(&mut self) -> Result<Option<Value>, SpecError> {
        match self.take(&["memory"])? {
            None => Ok(None),
            Some((_, value @ Value::Object(_))) => Ok(Some(value)),
            Some((_, Value::String(scope))) if MEMORY_SCOPES.contains(&scope.trim()) => {
                Ok(Some(Value::String(scope.trim().to_string())))
            }
            Some((key, other)) => Err(self.invalid(key, "user, project, local or a map", &other)),
        }
    }
}

/// A value as an error message shows what was found.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{:?}", crate::text::truncate(text, 80)),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a map".into(),
        Value::Null => "nothing".into(),
        other => other.to_string(),
    }
}
