//! Shell command analysis on the tree-sitter-bash AST.
//!
//! A command line is split into its simple commands (across `&&`, `||`, `;`, `|`, `&`,
//! newlines and nested substitutions), each classified as read-only, mutating or unknown, plus
//! findings: constructs that always need the user's approval whatever the allow rules say.

mod analyse;
mod args;

pub use args::{has_long, has_short, long_flag_is};
mod git;
mod grammar;
mod parse;
mod readonly;
mod sed;

pub use analyse::analyse;
pub(crate) use git::changes_config as git_changes_config;
pub(crate) use readonly::resolved_name;

/// Longer command lines are not parsed at all; they always need approval.
pub(crate) const MAX_COMMAND_LEN: usize = 32 * 1024;

/// Whether a command only reads (and so may run in parallel with other reads): it parsed
/// completely, has no findings, and every part is a known read-only command.
pub fn is_read_only_command(command: &str) -> bool {
    analyse(command).is_read_only()
}

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// Quotes and escapes removed when `literal`; the source text otherwise.
    pub text: String,
    /// The shell passes exactly `text` (pathname globbing aside): no expansion, substitution
    /// or brace expansion.
    pub literal: bool,
    /// Written as a plain word without quotes, backslashes or glob characters: the only form
    /// that can name a known program.
    pub bare: bool,
    /// Contains unquoted glob characters (`*`, `?`, `[`).
    pub glob: bool,
}

impl Word {
    fn literal(text: &str) -> Self {
        Word {
            text: text.to_string(),
            literal: true,
            bare: true,
            glob: false,
        }
    }

    fn quoted(text: String) -> Self {
        Word {
            text,
            literal: true,
            bare: false,
            glob: false,
        }
    }

    fn dynamic(raw: &str) -> Self {
        Word {
            text: raw.to_string(),
            literal: false,
            bare: false,
            glob: false,
        }
    }

    /// An unquoted word: backslashes escape the next character, a line continuation vanishes.
    fn unquoted(raw: &str) -> Self {
        let mut text = String::with_capacity(raw.len());
        let mut escaped = false;
        let mut glob = false;
        let mut brace = false;
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    escaped = true;
                    match chars.next() {
                        Some('\n') | None => {}
                        Some(next) => text.push(next),
                    }
                }
                '*' | '?' | '[' => {
                    glob = true;
                    text.push(c);
                }
                '{' => {
                    brace = true;
                    text.push(c);
                }
                _ => text.push(c),
            }
        }
        Word {
            text,
            literal: !brace,
            bare: !escaped && !glob && !brace,
            glob,
        }
    }

    /// Adjacent pieces forming one word, like `'r''m'` or `a"$b"`.
    fn join(parts: Vec<Word>) -> Self {
        if let [single] = parts.as_slice() {
            return single.clone();
        }
        Word {
            text: parts.iter().map(|p| p.text.as_str()).collect(),
            literal: parts.iter().all(|p| p.literal),
            bare: false,
            glob: parts.iter().any(|p| p.glob),
        }
    }

    /// Writing here changes no file.
    fn is_harmless_sink(&self) -> bool {
        if !self.literal || self.glob {
            return false;
        }
        let t = self.text.as_str();
        matches!(t, "/dev/null" | "/dev/stdout" | "/dev/stderr")
            || t.strip_prefix("/dev/fd/")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }
}

/// What one simple command does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Only reads; `paths` are the arguments that may name files it reads.
    ReadOnly { paths: Vec<Word> },
    /// `cd`: changes the shell's directory for later commands.
    ChangesDirectory { target: Option<Word> },
    /// Changes something; the text says what, e.g. "writes its output to a file".
    Mutates(String),
    /// Not a command ouro knows.
    Unknown,
}

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// As written.
    pub source: String,
    /// Environment set for this command: `NAME=value` prefixes and `env NAME=value`.
    pub assignments: Vec<String>,
    /// Program and arguments, wrappers (`timeout 5`, `nice`, `nohup`, `time`, `env`) included.
    pub words: Vec<Word>,
    /// Index in `words` of the program that actually runs once wrappers are stripped.
    pub core: usize,
    pub effect: Effect,
}

impl Part {
    /// The program and arguments once wrappers are stripped.
    pub fn core_words(&self) -> &[Word] {
        self.words.get(self.core..).unwrap_or(&[])
    }

    /// The known program name (`/usr/bin/cat` is `cat`); `None` for `./cat`, `\cat`, `"$X"`.
    pub fn program(&self) -> Option<&str> {
        self.core_words().first().and_then(readonly::known_name)
    }

    pub fn is_read_only(&self) -> bool {
        self.assignments.is_empty() && matches!(self.effect, Effect::ReadOnly { .. })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindingKind {
    CommandSubstitution,
    ProcessSubstitution,
    Arithmetic,
    Subshell,
    CommandGroup,
    FunctionDefinition,
    Assignment,
    EnvPrefix,
    Eval,
    ShellString,
    Exec,
    Source,
    WriteRedirect,
    Tee,
    CdThenRun,
    FindAction,
    Xargs,
    HeredocToInterpreter,
    Unsupported(String),
    ParseError,
    TooLong(usize),
    TooDeep,
    /// Characters bash and the parser read differently (`\r`, `\v`, `\f`, ...).
    Lexing,
    /// `>` or `<` inside `[ ... ]`: bash redirects there, the parser sees a comparison.
    RedirectInTest,
    /// A here-document bash ends elsewhere than the parser: text it runs looks like data.
    HeredocMismatch,
}

impl FindingKind {
    /// The analysis could not see the whole command.
    pub(crate) fn is_incomplete(&self) -> bool {
        matches!(
            self,
            FindingKind::ParseError
                | FindingKind::TooLong(_)
                | FindingKind::TooDeep
                | FindingKind::Lexing
                | FindingKind::HeredocMismatch
        )
    }

    /// Code runs that the command's words do not show: a rule for the command cannot have
    /// meant it.
    pub(crate) fn hides_code(&self) -> bool {
        matches!(
            self,
            FindingKind::CommandSubstitution
                | FindingKind::ProcessSubstitution
                | FindingKind::Arithmetic
                | FindingKind::Lexing
                | FindingKind::RedirectInTest
                | FindingKind::HeredocMismatch
                | FindingKind::Unsupported(_)
        )
    }

    /// Commands run that the analysis cannot see (a string given to a shell, a script, what
    /// `xargs` or `find -exec` build): a rule about commands cannot be checked against them.
    pub fn runs_unseen_commands(&self) -> bool {
        matches!(
            self,
            FindingKind::Eval
                | FindingKind::ShellString
                | FindingKind::Exec
                | FindingKind::Source
                | FindingKind::Xargs
                | FindingKind::FindAction
                | FindingKind::HeredocToInterpreter
        )
    }

    fn describe(&self) -> String {
        let text = match self {
            FindingKind::CommandSubstitution => "runs a command substitution",
            FindingKind::ProcessSubstitution => "runs a process substitution",
            FindingKind::Arithmetic => {
                "uses arithmetic evaluation, which can run commands hidden in variables"
            }
            FindingKind::Subshell => "runs commands in a subshell",
            FindingKind::CommandGroup => "groups commands in braces",
            FindingKind::FunctionDefinition => "defines a shell function",
            FindingKind::Assignment => "sets shell variables",
            FindingKind::EnvPrefix => "sets environment variables for the command",
            FindingKind::Eval => "evaluates text as shell code",
            FindingKind::ShellString => "runs a string as a shell script",
            FindingKind::Exec => "replaces the shell with another program",
            FindingKind::Source => "runs a script file",
            FindingKind::WriteRedirect | FindingKind::Tee => "writes a file",
            FindingKind::CdThenRun => "changes directory and then runs more commands",
            FindingKind::FindAction => "makes find run commands, delete files or write files",
            FindingKind::Xargs => "runs commands built from its input",
            FindingKind::HeredocToInterpreter => {
                "runs a script it reads on its standard input (a here-document, a file or \
                 a pipe)"
            }
            FindingKind::Unsupported(kind) => {
                return format!("uses shell syntax ouro does not analyse ({kind})");
            }
            FindingKind::ParseError => {
                "could not be parsed completely, so what it would do is unknown"
            }
            FindingKind::TooLong(len) => {
                return format!(
                    "is too long to analyse ({len} bytes; the limit is {MAX_COMMAND_LEN})"
                );
            }
            FindingKind::TooDeep => "is nested too deeply to analyse",
            FindingKind::Lexing => {
                "contains control characters (carriage return, vertical tab, form feed, or a \
                 backslash before a tab) that bash reads differently from the analyser"
            }
            FindingKind::HeredocMismatch => {
                "has a here-document whose end bash finds elsewhere than the analyser, so \
                 what runs is unknown"
            }
            FindingKind::RedirectInTest => {
                "has `>` or `<` inside `[ ]`, which bash treats as a redirection that writes or \
                 reads a file"
            }
        };
        text.to_string()
    }
}

/// A construct that needs the user's approval, whatever the allow rules say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    /// The source text it was found in.
    pub(crate) snippet: String,
}

impl Finding {
    fn new(kind: FindingKind, snippet: &str) -> Self {
        Finding {
            kind,
            snippet: snippet.to_string(),
        }
    }

    /// "`tee pwned.txt` writes a file".
    pub fn what(&self) -> String {
        format!("`{}` {}", short(&self.snippet), self.kind.describe())
    }

    /// "`tee pwned.txt` writes a file; it needs approval".
    pub fn reason(&self) -> String {
        format!("{}; it needs approval", self.what())
    }
}

/// A command line, analysed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Analysis {
    pub parts: Vec<Part>,
    pub findings: Vec<Finding>,
    /// Files read through `<`.
    pub reads: Vec<Word>,
    /// Files written through `>`, `>>`, `&>`, `>|` or `tee`.
    pub writes: Vec<Word>,
}

impl Analysis {
    /// The first finding that means part of the command was not analysed.
    pub fn incomplete(&self) -> Option<&Finding> {
        self.findings.iter().find(|f| f.kind.is_incomplete())
    }

    pub fn is_complete(&self) -> bool {
        self.incomplete().is_none()
    }

    pub fn is_read_only(&self) -> bool {
        self.findings.is_empty()
            && !self.parts.is_empty()
            && self.parts.iter().all(Part::is_read_only)
    }
}

/// A snippet short enough for a one-line reason.
pub fn short(text: &str) -> String {
    const MAX: usize = 80;
    let first_line = text.trim().lines().next().unwrap_or("");
    let (head, _) = crate::text::prefix_chars(first_line, MAX);
    if head.len() < text.trim().len() {
        format!("{head}…")
    } else {
        head.to_string()
    }
}
