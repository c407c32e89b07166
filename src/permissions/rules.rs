//! Permission rules in Claude Code's syntax: `Read`, `Edit(src/**)`, `Read(//etc/**)`,
//! `Read(~/x/**)`, `Bash(git status)`, `Bash(npm run test:*)`, `Bash(*)`.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use super::Access;
use super::bash::{self, Part, Word};
use super::error::PermissionError;
use super::paths;
use crate::settings::SettingsSource;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleKind {
    Allow,
    Ask,
    Deny,
}

impl RuleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

/// A rule as written, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcedRule {
    pub rule: String,
    pub kind: RuleKind,
    pub source: SettingsSource,
}

impl SourcedRule {
    pub fn new(rule: impl Into<String>, kind: RuleKind, source: SettingsSource) -> Self {
        SourcedRule {
            rule: rule.into(),
            kind,
            source,
        }
    }
}

/// Permission flags as typed on the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CliPermissions {
    /// `--allowedTools`, each value maybe a comma- or space-separated list.
    pub allowed: Vec<String>,
    /// `--disallowedTools`, likewise.
    pub disallowed: Vec<String>,
    /// Rules that always ask (an `--agent` definition's command patterns ask for every Bash
    /// call, so they judge each one).
    pub ask: Vec<String>,
    /// `--permission-mode`.
    pub mode: Option<super::PermissionMode>,
    /// `--add-dir`: more directories the session may work in.
    pub add_dirs: Vec<std::path::PathBuf>,
}

impl CliPermissions {
    pub fn rules(&self) -> Vec<SourcedRule> {
        let list = |values: &[String], kind| {
            values
                .iter()
                .flat_map(|v| split_rule_list(v))
                .map(move |r| SourcedRule::new(r, kind, SettingsSource::Cli))
                .collect::<Vec<_>>()
        };
        let mut out = list(&self.allowed, RuleKind::Allow);
        out.extend(list(&self.disallowed, RuleKind::Deny));
        out.extend(list(&self.ask, RuleKind::Ask));
        out
    }
}

/// Splits `Bash(git status:*) Edit,Read` on commas and whitespace outside parentheses.
pub fn split_rule_list(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if depth == 0 && (c == ',' || c.is_whitespace()) => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Tools whose rule patterns are paths, and whether they read or write.
const READ_TOOLS: &[&str] = &["Read", "Glob", "Grep", "LS", "NotebookRead"];
const WRITE_TOOLS: &[&str] = &["Edit", "Write", "MultiEdit", "NotebookEdit"];

/// Where relative, `/`-rooted and `~` patterns are anchored.
pub(crate) struct Anchor<'a> {
    pub root: &'a Path,
    pub home: Option<&'a Path>,
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledRule {
    pub text: String,
    pub kind: RuleKind,
    pub source: SettingsSource,
    pub tool: String,
    pub spec: Spec,
}

#[derive(Debug, Clone)]
pub(crate) enum Spec {
    /// Every call of the tool.
    Any,
    Path(Box<PathPattern>),
    Command(CommandPattern),
}

#[derive(Debug, Clone)]
pub(crate) struct PathPattern {
    /// The pattern as written (anchored, `..` applied): what allow rules match. Not resolved
    /// through symlinks, so a link in the project cannot stretch a rule to its target.
    written: PathGlob,
    /// The same with its literal directories resolved through symlinks, when that differs:
    /// deny and ask rules also catch the real location.
    real: Option<PathGlob>,
}

#[derive(Debug, Clone)]
struct PathGlob {
    matcher: GlobMatcher,
    /// The directories before the first glob character: every match is beneath it.
    literal: PathBuf,
    /// How deep beneath `literal` a match can be; `None` when the pattern has `**`.
    depth: Option<usize>,
    /// `dir/**` also matches `dir` itself.
    base: Option<PathBuf>,
    /// No glob characters: the rule names one path.
    exact: bool,
}

impl PathGlob {
    fn new(rule: &str, literal: PathBuf, rest: &[String]) -> Result<Self, PermissionError> {
        let escaped = globset::escape(&literal.to_string_lossy());
        let glob = if rest.is_empty() {
            escaped
        } else {
            format!("{}/{}", escaped.trim_end_matches('/'), rest.join("/"))
        };
        let matcher = GlobBuilder::new(&glob)
            .literal_separator(true)
            .build()
            .map_err(|e| invalid(rule, format!("the path pattern is not a valid glob ({e})")))?
            .compile_matcher();
        let base = (rest.len() == 1 && rest[0] == "**").then(|| literal.clone());
        let depth = (!rest.iter().any(|r| r.contains("**"))).then_some(rest.len());
        Ok(PathGlob {
            matcher,
            literal,
            depth,
            base,
            exact: rest.is_empty(),
        })
    }

    fn matches(&self, path: &Path) -> bool {
        self.matcher.is_match(path) || self.base.as_deref() == Some(path)
    }
}

/// Where a path rule's matches can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reach<'a> {
    /// Every match is beneath this directory (or is this path).
    pub base: &'a Path,
    /// Everything beneath `base` matches (`secrets/**`, or a rule naming one path).
    pub whole: bool,
    /// How deep beneath `base` a match can be; `None` when the pattern has `**`.
    pub depth: Option<usize>,
}

#[derive(Debug, Clone)]
pub(crate) enum CommandPattern {
    /// The whole command line as written, and its words when it is one simple command.
    Exact {
        text: String,
        words: Option<Vec<String>>,
    },
    /// `prefix:*`: the command's first words.
    Prefix(Vec<String>),
}

fn invalid(rule: &str, reason: impl Into<String>) -> PermissionError {
    PermissionError::InvalidRule {
        rule: rule.to_string(),
        reason: reason.into(),
    }
}

pub(crate) fn compile(
    rule: &SourcedRule,
    anchor: &Anchor<'_>,
) -> Result<CompiledRule, PermissionError> {
    let text = rule.rule.trim();
    let (tool, spec_text) = match text.find('(') {
        None => (text, None),
        Some(open) => {
            let inner = text[open + 1..].strip_suffix(')').ok_or_else(|| {
                invalid(
                    text,
                    "a rule with `(` must end with `)`, like `Bash(npm test:*)`",
                )
            })?;
            (&text[..open], Some(inner.trim()))
        }
    };
    // `mcp__server__*` names every tool of one MCP server.
    let plain = match tool.strip_suffix("__*") {
        Some(server) if server.starts_with("mcp__") => server,
        _ => tool,
    };
    let valid_name = !plain.is_empty()
        && plain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_name {
        return Err(invalid(
            text,
            "expected a tool name such as `Bash`, `Read` or `Edit`, optionally followed by a pattern in parentheses",
        ));
    }
    let tool = canonical_tool(tool);
    let spec = match spec_text {
        None | Some("*") => Spec::Any,
        Some("") => {
            return Err(invalid(
                text,
                "the parentheses are empty; write the tool name alone to match every call",
            ));
        }
        Some(inner) if tool == "Bash" => Spec::Command(command_pattern(text, inner)?),
        Some(inner) if READ_TOOLS.contains(&tool) || WRITE_TOOLS.contains(&tool) => {
            Spec::Path(Box::new(path_pattern(text, inner, anchor)?))
        }
        Some(_) => {
            return Err(invalid(
                text,
                format!(
                    "ouro understands patterns only for Bash and the file tools ({}, {}); write `{tool}` alone to match every call",
                    READ_TOOLS.join(", "),
                    WRITE_TOOLS.join(", ")
                ),
            ));
        }
    };
    Ok(CompiledRule {
        text: text.to_string(),
        kind: rule.kind,
        source: rule.source,
        tool: tool.to_string(),
        spec,
    })
}

fn command_pattern(rule: &str, inner: &str) -> Result<CommandPattern, PermissionError> {
    let (body, prefix) = match inner.strip_suffix(":*") {
        Some(body) => (body.trim(), true),
        None => (inner, false),
    };
    let words = single_command_words(body);
    if prefix {
        let words = words.ok_or_else(|| {
            invalid(
                rule,
                "a `:*` prefix must be one plain command such as `npm run test`, without \
                 variables, substitutions, redirections or `&&`",
            )
        })?;
        return Ok(CommandPattern::Prefix(words));
    }
    Ok(CommandPattern::Exact {
        text: body.to_string(),
        words,
    })
}

/// The words of a rule's command when it is exactly one plain simple command; wrappers such
/// as `timeout 5` are dropped so the rule names the program that runs.
fn single_command_words(text: &str) -> Option<Vec<String>> {
    let analysis = bash::analyse(text);
    let [part] = analysis.parts.as_slice() else {
        return None;
    };
    if !analysis.findings.is_empty() || !part.assignments.is_empty() {
        return None;
    }
    let words = part.core_words();
    if words.is_empty() || !words.iter().all(|w| w.literal) {
        return None;
    }
    let mut out: Vec<String> = words.iter().map(|w| w.text.clone()).collect();
    out[0] = program_text(&words[0])?.to_string();
    Some(out)
}

/// How a program word is compared with rules: `/usr/bin/git` is `git`, `./build.sh` stays.
pub(crate) fn program_text(word: &Word) -> Option<&str> {
    if !word.literal || !word.bare {
        return None;
    }
    let text = word.text.as_str();
    Some(
        text.strip_prefix("/usr/bin/")
            .or_else(|| text.strip_prefix("/bin/"))
            .filter(|rest| !rest.contains('/'))
            .unwrap_or(text),
    )
}

fn path_pattern(
    rule: &str,
    inner: &str,
    anchor: &Anchor<'_>,
) -> Result<PathPattern, PermissionError> {
    let absolute = if let Some(rest) = inner.strip_prefix("//") {
        PathBuf::from("/").join(rest)
    } else if inner == "~" || inner.starts_with("~/") {
        paths::expand_home(inner, anchor.home)
            .ok_or_else(|| invalid(rule, "`~` cannot be used: the home directory is unknown"))?
    } else if let Some(rest) = inner.strip_prefix('/') {
        anchor.root.join(rest)
    } else {
        anchor.root.join(inner.strip_prefix("./").unwrap_or(inner))
    };
    let mut literal = PathBuf::from("/");
    let mut rest: Vec<String> = Vec::new();
    for component in absolute.components() {
        let text = component.as_os_str().to_string_lossy();
        if rest.is_empty() && !text.contains(['*', '?', '[', ']', '{', '}']) {
            literal.push(component);
        } else if component != std::path::Component::RootDir {
            rest.push(text.into_owned());
        }
    }
    let literal = paths::lexical(Path::new("/"), &literal);
    let real_literal = paths::resolve(&literal);
    let real = if real_literal == literal {
        None
    } else {
        Some(PathGlob::new(rule, real_literal, &rest)?)
    };
    Ok(PathPattern {
        written: PathGlob::new(rule, literal, &rest)?,
        real,
    })
}

/// A tool's name under its older spelling, as rules, hooks and tool lists may still write it:
/// Claude Code's sub-agent tool was `Task` before it was `Agent`.
pub fn canonical_tool(name: &str) -> &str {
    match name {
        "Task" => "Agent",
        other => other,
    }
}

impl CompiledRule {
    /// Whether this rule's tool covers the request: the same tool, `Read` for every reading
    /// tool, `Edit` for every editing tool, `Bash` for commands, `mcp__server` for its tools.
    pub(crate) fn covers_tool(&self, tool: &str, access: &Access) -> bool {
        if self.tool == tool {
            return true;
        }
        if self.tool.starts_with("mcp__")
            && tool
                .strip_prefix(self.tool.as_str())
                .is_some_and(|rest| rest.starts_with("__"))
        {
            return true;
        }
        // `mcp__server__*`: every tool of the server.
        if let Some(prefix) = self.tool.strip_suffix('*')
            && prefix.starts_with("mcp__")
            && prefix.ends_with("__")
            && tool.starts_with(prefix)
        {
            return true;
        }
        match access {
            Access::Read(_) => self.tool == "Read",
            Access::Write(_) => self.tool == "Edit",
            Access::Execute(_) => self.tool == "Bash",
            Access::None | Access::External => false,
        }
    }

    pub(crate) fn is_whole_tool(&self) -> bool {
        matches!(self.spec, Spec::Any)
    }

    /// For allow rules on file requests: whole-tool rules, and path rules as written.
    pub(crate) fn matches_path(&self, path: &Path) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Path(p) => p.written.matches(path),
            Spec::Command(_) => false,
        }
    }

    /// For allow rules on sensitive files: the rule names this very path, without globs.
    pub(crate) fn names_path(&self, path: &Path) -> bool {
        match &self.spec {
            Spec::Path(p) => p.written.exact && p.written.matches(path),
            _ => false,
        }
    }

    /// For deny and ask rules: also where the pattern's directories really are.
    pub(crate) fn catches_path(&self, path: &Path) -> bool {
        match &self.spec {
            Spec::Path(p) => {
                p.written.matches(path) || p.real.as_ref().is_some_and(|g| g.matches(path))
            }
            _ => self.matches_path(path),
        }
    }

    /// Where a path rule's matches lie, as written and where its directories really are.
    /// Empty for other rules.
    pub(crate) fn reach(&self) -> Vec<Reach<'_>> {
        let Spec::Path(p) = &self.spec else {
            return Vec::new();
        };
        [Some(&p.written), p.real.as_ref()]
            .into_iter()
            .flatten()
            .map(|g| Reach {
                base: g.literal.as_path(),
                whole: g.exact || g.base.is_some(),
                depth: g.depth,
            })
            .collect()
    }

    /// The whole command line, matched by `Bash`, `Bash(*)` or an exact rule.
    pub(crate) fn matches_command_line(&self, command: &str) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Command(CommandPattern::Exact { text, .. }) => text == command.trim(),
            _ => false,
        }
    }

    /// For allow rules: the part as it would run, written plainly (no environment prefix,
    /// no quoted or escaped program name).
    pub(crate) fn allows_part(&self, part: &Part) -> bool {
        if !part.assignments.is_empty() {
            return false;
        }
        let words = part.core_words();
        let Some(program) = words.first().and_then(program_text) else {
            return false;
        };
        let mut candidate: Vec<Option<&str>> = vec![Some(program)];
        candidate.extend(
            words[1..]
                .iter()
                .map(|w| w.literal.then_some(w.text.as_str())),
        );
        self.matches_words(&candidate)
    }

    /// For deny and ask rules: any spelling that runs the same program counts (`\rm`,
    /// `'r''m'`, `/bin/rm`, `FOO=1 rm`, `timeout 5 rm`).
    pub(crate) fn catches_part(&self, part: &Part) -> bool {
        let resolved = |words: &[Word]| -> Vec<Option<String>> {
            words
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    w.literal.then(|| {
                        if i == 0 {
                            w.text.rsplit('/').next().unwrap_or("").to_string()
                        } else {
                            w.text.clone()
                        }
                    })
                })
                .collect()
        };
        [resolved(part.core_words()), resolved(&part.words)]
            .iter()
            .any(|words| {
                let candidate: Vec<Option<&str>> = words.iter().map(|w| w.as_deref()).collect();
                self.matches_words(&candidate)
            })
            || self.glob_program_may_be(part)
            || self.words_appear_in_order(part)
    }

    /// The rule's words appear in the part in order, skipping whatever stands between them
    /// (global options: `git -C . push`, `git -P push`), and a word bash expands may be any
    /// of them (`git {push,origin}`, `git $_`).
    fn words_appear_in_order(&self, part: &Part) -> bool {
        let rule = match &self.spec {
            Spec::Command(CommandPattern::Prefix(words)) => words,
            Spec::Command(CommandPattern::Exact {
                words: Some(words), ..
            }) => words,
            _ => return false,
        };
        let words = part.core_words();
        let (Some(program), Some(first)) = (rule.first(), words.first()) else {
            return false;
        };
        if first.literal && first.text.rsplit('/').next() != Some(program.as_str()) {
            return false;
        }
        let mut wanted = rule[1..].iter().peekable();
        for word in &words[1..] {
            match wanted.peek() {
                None => break,
                Some(next) if !word.literal || word.text == **next => {
                    wanted.next();
                }
                Some(_) => {}
            }
        }
        wanted.peek().is_none()
    }

    /// A program spelled as a glob (`/bin/r[m]`, `/usr/bin/r?`) runs whatever file it
    /// matches: it counts as the rule's program when the pattern could name it.
    fn glob_program_may_be(&self, part: &Part) -> bool {
        let Some(first) = part.core_words().first().filter(|w| w.glob) else {
            return false;
        };
        let program = match &self.spec {
            Spec::Command(CommandPattern::Prefix(words)) => words.first(),
            Spec::Command(CommandPattern::Exact {
                words: Some(words), ..
            }) => words.first(),
            _ => None,
        };
        let Some(program) = program else {
            return false;
        };
        let name = first.text.rsplit('/').next().unwrap_or("");
        globset::Glob::new(name).map_or(true, |g| g.compile_matcher().is_match(program))
    }

    /// For deny rules: the rule's command appears later in the part, where a wrapper this
    /// engine does not know (`command rm`, `sudo rm`, `setsid rm`) may run it.
    pub(crate) fn may_run_in(&self, part: &Part) -> bool {
        let words: Vec<Option<&str>> = part
            .words
            .iter()
            .map(|w| w.literal.then(|| w.text.rsplit('/').next().unwrap_or("")))
            .collect();
        (1..words.len()).any(|start| {
            let mut candidate = words[start..].to_vec();
            // Later words keep their full text; only the program is compared by name.
            for (word, full) in candidate.iter_mut().zip(&part.words[start..]).skip(1) {
                *word = full.literal.then_some(full.text.as_str());
            }
            self.matches_words(&candidate)
        })
    }

    fn matches_words(&self, candidate: &[Option<&str>]) -> bool {
        let equal = |rule: &[String]| {
            rule.iter()
                .zip(candidate)
                .all(|(r, c)| c.is_some_and(|c| c == r))
        };
        match &self.spec {
            Spec::Any => true,
            Spec::Command(CommandPattern::Prefix(rule)) => {
                candidate.len() >= rule.len() && equal(rule)
            }
            Spec::Command(CommandPattern::Exact {
                words: Some(rule), ..
            }) => candidate.len() == rule.len() && equal(rule),
            _ => false,
        }
    }
}

/// The rules that apply to one request, in force at the moment it is judged.
pub(crate) struct Applicable<'a> {
    /// Rules whose tool covers the request.
    pub rules: Vec<&'a CompiledRule>,
    /// Every rule, for commands checked against file rules.
    pub all: Vec<&'a CompiledRule>,
}

impl<'a> Applicable<'a> {
    /// Of `all`, the rules whose tool covers `request`.
    pub(super) fn to(request: &super::PermissionRequest<'_>, all: Vec<&'a CompiledRule>) -> Self {
        Applicable {
            rules: all
                .iter()
                .copied()
                .filter(|r| r.covers_tool(request.tool, request.access))
                .collect(),
            all,
        }
    }

    pub(super) fn of(&self, kind: RuleKind) -> impl Iterator<Item = &'a CompiledRule> + '_ {
        self.rules.iter().copied().filter(move |r| r.kind == kind)
    }
}

/// "is denied by the rule `Bash(rm:*)` from project settings (.ouro/settings.json)".
pub(crate) fn rule_clause(rule: &CompiledRule) -> String {
    let verb = match rule.kind {
        RuleKind::Allow => "allowed",
        RuleKind::Ask => "set to ask",
        RuleKind::Deny => "denied",
    };
    format!(
        "is {verb} by the rule `{}` from {}",
        rule.text,
        rule.source.label()
    )
}
