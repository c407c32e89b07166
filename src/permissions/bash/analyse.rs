//! From the parsed simple commands to parts with effects, and the findings that depend on
//! which program runs (eval, `sh -c`, xargs, tee, ...).

use super::parse::{self, RawCommand};
use super::readonly::{self, resolved_name};
use super::{Analysis, Effect, Finding, FindingKind, Part, Word};

/// Shells that run a string given with `-c`.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox",
];

/// Programs that run a script fed on standard input.
const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "csh",
    "tcsh",
    "ash",
    "busybox",
    "python",
    "python2",
    "python3",
    "pypy",
    "pypy3",
    "node",
    "nodejs",
    "deno",
    "bun",
    "ruby",
    "perl",
    "php",
    "lua",
    "luajit",
    "R",
    "Rscript",
    "osascript",
    "pwsh",
    "powershell",
    "tclsh",
    "wish",
    "expect",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sqlite3",
    "psql",
    "mysql",
    "irb",
    "ghci",
    "julia",
    "scala",
    "groovy",
    "jshell",
    "swift",
    "env",
    "xargs",
    "sudo",
];

/// Splits a command line into parts and findings. Never panics; input the parser could not
/// fully understand yields a finding that makes the whole command need approval.
pub fn analyse(command: &str) -> Analysis {
    let parsed = parse::parse(command);
    let mut findings = parsed.findings;
    let mut writes = parsed.writes;
    let mut parts = Vec::with_capacity(parsed.commands.len());
    for raw in parsed.commands {
        let part = classify(raw, &mut findings, &mut writes);
        parts.push(part);
    }
    let changes_directory = parts
        .iter()
        .any(|p| matches!(p.effect, Effect::ChangesDirectory { .. }));
    if changes_directory && parts.len() > 1 {
        findings.push(Finding::new(FindingKind::CdThenRun, command));
    }
    Analysis {
        parts,
        findings,
        reads: parsed.reads,
        writes,
    }
}

fn classify(raw: RawCommand, findings: &mut Vec<Finding>, writes: &mut Vec<Word>) -> Part {
    let stripped = readonly::strip_wrappers(&raw.words);
    let mut assignments = raw.assignments;
    assignments.extend(stripped.assignments);
    let core = stripped.core;
    let core_words = raw.words.get(core..).unwrap_or(&[]);
    let effect = readonly::classify(core_words);
    if !assignments.is_empty() {
        findings.push(Finding::new(FindingKind::EnvPrefix, &raw.source));
    }
    let name = core_words.first().and_then(resolved_name).unwrap_or("");
    let args = core_words.get(1..).unwrap_or(&[]);
    let kind = match name {
        "eval" => Some(FindingKind::Eval),
        "exec" => Some(FindingKind::Exec),
        "source" | "." => Some(FindingKind::Source),
        "xargs" => Some(FindingKind::Xargs),
        n if SHELLS.contains(&n) && runs_string(args) => Some(FindingKind::ShellString),
        // `sh build.sh` is `source build.sh` in a child shell.
        n if SHELLS.contains(&n) && runs_file(args) => Some(FindingKind::Source),
        "find" => readonly::find_action(args).map(|_| FindingKind::FindAction),
        "tee" if matches!(effect, Effect::Mutates(_)) => {
            writes.extend(readonly::tee_files(args).cloned());
            Some(FindingKind::Tee)
        }
        _ => None,
    };
    if let Some(kind) = kind {
        findings.push(Finding::new(kind, &raw.source));
    }
    if raw.fed_script && is_interpreter(name) {
        findings.push(Finding::new(FindingKind::HeredocToInterpreter, &raw.source));
    }
    Part {
        source: raw.source,
        assignments,
        words: raw.words,
        core,
        effect,
    }
}

/// `-c`, alone or in a cluster like `-ec`, before the first operand.
fn runs_string(args: &[Word]) -> bool {
    for word in args {
        let text = word.text.as_str();
        if !word.literal {
            return true;
        }
        if text == "--" || !text.starts_with('-') {
            return false;
        }
        if !text.starts_with("--") && text.contains('c') {
            return true;
        }
    }
    false
}

/// A first operand: the script file a shell runs (its own options come before it).
fn runs_file(args: &[Word]) -> bool {
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if !word.literal || text == "--" {
            return words.next().is_some() || !word.literal;
        }
        if !text.starts_with(['-', '+']) {
            return true;
        }
        // `-o OPTION` and `-O OPTION` take the next word.
        if matches!(text, "-o" | "+o" | "-O" | "+O") {
            words.next();
        }
    }
    false
}

fn is_interpreter(name: &str) -> bool {
    INTERPRETERS.contains(&name)
        || ["python", "pypy", "node", "ruby", "perl", "php", "lua"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
}
