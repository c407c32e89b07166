//! Decisions for shell commands, made on the bash analyser's output: every part of a command
//! line must be allowed on its own, and findings always need approval.

use std::path::{Path, PathBuf};

use super::bash::{self, Analysis, Effect, FindingKind, Part, Word};
use super::mode::PermissionMode;
use super::rules::RuleKind;
use super::rules::{Applicable, rule_clause};
use super::scope::Scope;
use super::{Access, Decision, paths};

/// Directory listings larger than this are not searched for symlinks; the glob asks instead.
const MAX_GLOB_DIR_ENTRIES: usize = 10_000;

/// `base` is the directory the command runs in: relative paths are judged from there.
pub(crate) fn decide(
    scope: &Scope,
    base: &Path,
    applicable: &Applicable<'_>,
    command: &str,
) -> Decision {
    let analysis = bash::analyse(command);
    let shown = bash::short(command);
    if let Some(denied) = deny(scope, base, applicable, command, &analysis) {
        return denied;
    }
    // A recursive search or a read of git's objects reaches files no argument names, so a
    // deny rule on files cannot be checked against it.
    if has_file_deny_rules(applicable)
        && let Some(part) = analysis.parts.iter().find(|p| reaches_unnamed_files(p))
    {
        return Decision::Ask(format!(
            "`{}` reads files it does not name (recursively or from git's history), and deny \
             rules on files are set; it needs approval",
            bash::short(&part.source)
        ));
    }
    if scope.mode() == PermissionMode::BypassPermissions {
        return match analysis.incomplete() {
            Some(finding) if has_deny_rules(applicable) => Decision::Ask(format!(
                "{}, so the deny rules cannot be checked; it needs approval",
                finding.what()
            )),
            _ => Decision::Allow,
        };
    }
    if scope.mode() == PermissionMode::Plan
        && let Some(what) = plan_blocker(&analysis)
    {
        return Decision::Deny(format!(
            "{what}, and plan mode runs nothing that could change anything; present the plan instead"
        ));
    }
    let asked = applicable.of(RuleKind::Ask).find(|r| {
        r.matches_command_line(command) || analysis.parts.iter().any(|p| r.catches_part(p))
    });
    if let Some(rule) = asked {
        return Decision::Ask(format!(
            "`{shown}` {}; it needs approval",
            rule_clause(rule)
        ));
    }
    if let Some(finding) = analysis.incomplete() {
        return Decision::Ask(finding.reason());
    }
    if let Some(reason) = hides_denied(applicable, &analysis) {
        return Decision::Ask(reason);
    }
    // A rule names a command, not the code an expansion or substitution hidden in its
    // arguments would run: those ask whatever the rules say.
    if let Some(finding) = analysis.findings.iter().find(|f| f.kind.hides_code()) {
        return Decision::Ask(finding.reason());
    }
    // A rule spelling out this very command line (or allowing every command) meant it.
    if applicable
        .of(RuleKind::Allow)
        .any(|r| r.matches_command_line(command))
    {
        return Decision::Allow;
    }
    if let Some(finding) = analysis.findings.first() {
        return Decision::Ask(finding.reason());
    }
    for part in &analysis.parts {
        if auto_allowed(scope, base, part) {
            continue;
        }
        if !applicable.of(RuleKind::Allow).any(|r| r.allows_part(part)) {
            return Decision::Ask(format!("{}; it needs approval", concern(scope, base, part)));
        }
        if let Some(reason) = beyond_rules(scope, base, part) {
            return Decision::Ask(reason);
        }
    }
    if let Some(read) = analysis.reads.iter().find(|w| !word_inside(scope, base, w)) {
        return Decision::Ask(format!(
            "`{shown}` reads `{}`, outside the project; it needs approval",
            read.text
        ));
    }
    Decision::Allow
}

/// Options that make a command write or read elsewhere, load configuration or run code, in
/// the programs people write prefix rules for (git, npm and friends, cargo, make, ...). An
/// allow rule names a command and its subcommand; it did not mean these.
const BEYOND_RULES_LONG: &[&str] = &[
    "--output",
    "--ext-diff",
    "--textconv",
    "--exec-path",
    "--upload-pack",
    "--receive-pack",
    "--open-files-in-pager",
    "--config-env",
    "--git-dir",
    "--work-tree",
    "--node-options",
    "--prefix",
    "--userconfig",
    "--globalconfig",
    "--script-shell",
    "--global",
    "--init-module",
    "--config",
    "--manifest-path",
    "--eval",
    "--makefile",
    "--file",
    "--directory",
    "--rcfile",
    "--init-file",
    "--pre",
    "--hostname-bin",
    "--compress-program",
    "--files0-from",
    "--exec",
];

/// Short options of that kind, per program.
fn beyond_rules_short(program: &str) -> &'static [char] {
    match program {
        "git" => &['c', 'C', 'O'],
        "npm" | "pnpm" | "yarn" | "npx" => &['g', 'c', 'C'],
        "cargo" => &['Z'],
        "make" | "gmake" => &['f', 'C', 'E'],
        "sort" => &['o', 'T'],
        _ => &[],
    }
}

/// Why an allow rule for `part`'s command does not cover this call, if it does not: an option
/// that writes, reads elsewhere or runs code, or an argument naming a path outside the project.
fn beyond_rules(scope: &Scope, base: &Path, part: &Part) -> Option<String> {
    let words = part.core_words();
    let program = words.first().and_then(|w| w.text.rsplit('/').next())?;
    let shown = bash::short(&part.source);
    let short = beyond_rules_short(program);
    if program == "make" || program == "gmake" {
        // `VAR=value` arguments override the makefile's variables: `SHELL`, `.SHELLFLAGS`
        // and the like run code.
        if let Some(word) = words.iter().skip(1).find(|w| w.text.contains('=')) {
            return Some(format!(
                "`{shown}` sets `{}`, and make variables can run code; an allow rule for the \
                 command does not cover that, so it needs approval",
                word.text
            ));
        }
    }
    let mut options_end = false;
    for word in words.iter().skip(1) {
        if !word.literal {
            return Some(format!(
                "`{shown}` passes `{}`, which bash expands into words no rule can have \
                 meant; it needs approval",
                word.text
            ));
        }
        let text = word.text.as_str();
        if text == "--" {
            options_end = true;
            continue;
        }
        let is_long = !options_end
            && BEYOND_RULES_LONG
                .iter()
                .any(|flag| super::bash::long_flag_is(text, flag));
        let is_short = !options_end
            && text.len() > 1
            && !text.starts_with("--")
            && text
                .strip_prefix('-')
                .is_some_and(|cluster| cluster.chars().any(|c| short.contains(&c)));
        if is_long || is_short {
            return Some(format!(
                "`{shown}` has `{text}`, which can write or read elsewhere or run code; an allow \
                 rule for the command does not cover it, so it needs approval"
            ));
        }
        // Any operand or option value may be a path; a relative one can lead out through a
        // symbolic link.
        let value = text.split_once('=').map_or(text, |(_, v)| v);
        let looks_like_path = !value.is_empty() && !value.starts_with('-');
        if looks_like_path {
            let path = Word {
                text: value.to_string(),
                ..word.clone()
            };
            if !word_inside(scope, base, &path) {
                return Some(format!(
                    "`{shown}` names `{value}`, outside the project; an allow rule for the \
                     command does not cover that, so it needs approval"
                ));
            }
        }
    }
    None
}

/// A deny rule matching any part, or a file deny rule matching a file the command reads or
/// writes, denies the whole command line.
fn deny(
    scope: &Scope,
    base: &Path,
    applicable: &Applicable<'_>,
    command: &str,
    analysis: &Analysis,
) -> Option<Decision> {
    for rule in applicable.of(RuleKind::Deny) {
        if rule.matches_command_line(command) {
            return Some(Decision::Deny(format!(
                "`{}` {}",
                bash::short(command),
                rule_clause(rule)
            )));
        }
        if let Some(part) = analysis.parts.iter().find(|p| rule.catches_part(p)) {
            return Some(Decision::Deny(format!(
                "`{}` {}",
                bash::short(&part.source),
                rule_clause(rule)
            )));
        }
    }
    let read_paths =
        analysis
            .reads
            .iter()
            .chain(analysis.parts.iter().flat_map(|p| match &p.effect {
                Effect::ReadOnly { paths } => paths.as_slice(),
                _ => &[],
            }));
    let checks = [
        (
            "reads",
            "Read",
            Access::Read(PathBuf::new()),
            read_paths.collect::<Vec<_>>(),
        ),
        (
            "writes",
            "Edit",
            Access::Write(PathBuf::new()),
            analysis.writes.iter().collect(),
        ),
    ];
    for (verb, tool, access, words) in checks {
        for word in words {
            let Some((lexical, resolved)) = word_path(scope, base, word) else {
                continue;
            };
            let hit = applicable.all.iter().find(|r| {
                r.kind == RuleKind::Deny
                    && !r.is_whole_tool()
                    && r.covers_tool(tool, &access)
                    && (r.catches_path(&lexical) || r.catches_path(&resolved))
            });
            if let Some(rule) = hit {
                return Some(Decision::Deny(format!(
                    "`{}` {verb} `{}`, which {}",
                    bash::short(command),
                    word.text,
                    rule_clause(rule)
                )));
            }
        }
    }
    None
}

/// With command deny rules in force, a command that runs code the analysis cannot see, or
/// that may run a denied command through an unknown wrapper, is never allowed by an allow
/// rule: `Bash` allows everything but `Bash(rm:*)` is denied, and `sh -c 'rm x'` is rm.
pub(crate) fn hides_denied(applicable: &Applicable<'_>, analysis: &Analysis) -> Option<String> {
    let deny_rules: Vec<_> = applicable.of(RuleKind::Deny).collect();
    if deny_rules.is_empty() {
        return None;
    }
    let hiding = analysis
        .findings
        .iter()
        .find(|f| f.kind.runs_unseen_commands());
    if let Some(finding) = hiding {
        return Some(format!(
            "{}, so the deny rules cannot be checked; it needs approval",
            finding.what()
        ));
    }
    for part in &analysis.parts {
        let shown = bash::short(&part.source);
        if part.core_words().first().is_some_and(|w| !w.literal) {
            return Some(format!(
                "`{shown}` runs a program named by an expansion, so the deny rules cannot be \
                 checked; it needs approval"
            ));
        }
        // Programs known to be read-only never run their arguments (`grep rm notes.txt`).
        let may_run = !matches!(part.effect, Effect::ReadOnly { .. });
        if let Some(rule) = deny_rules.iter().find(|r| may_run && r.may_run_in(part)) {
            return Some(format!(
                "`{shown}` may run a command that {}; it needs approval",
                rule_clause(rule)
            ));
        }
    }
    None
}

fn has_deny_rules(applicable: &Applicable<'_>) -> bool {
    applicable.of(RuleKind::Deny).next().is_some() || has_file_deny_rules(applicable)
}

fn has_file_deny_rules(applicable: &Applicable<'_>) -> bool {
    applicable
        .all
        .iter()
        .any(|r| r.kind == RuleKind::Deny && (r.tool == "Read" || r.tool == "Edit"))
}

/// Whether a part reads or lists files that none of its arguments names: recursive searches
/// and listings, and git commands that show the content of files from its object store.
fn reaches_unnamed_files(part: &Part) -> bool {
    let words = part.core_words();
    let Some(program) = words.first().and_then(|w| w.text.rsplit('/').next()) else {
        return false;
    };
    let args = &words[1..];
    // A glob or an expansion names files only bash knows.
    if args.iter().any(|w| w.glob || !w.literal) {
        return true;
    }
    let short = |letters: &str| bash::has_short(args, letters);
    let long = |names: &[&str]| bash::has_long(args, names);
    match program {
        "grep" | "egrep" | "fgrep" => {
            short("rRd") || long(&["--recursive", "--dereference-recursive", "--directories"])
        }
        // diff on directories compares every file in them.
        "rg" | "ag" | "ack" | "find" | "tree" | "diff" => true,
        "ls" => short("R") || long(&["--recursive"]),
        "du" => short("a") || long(&["--all"]),
        // Whatever global options come first (`git -C . grep`).
        "git" => args.iter().enumerate().any(|(i, w)| match w.text.as_str() {
            "grep" | "show" | "diff" | "cat-file" | "archive" | "format-patch" | "bundle" => true,
            "log" | "whatchanged" | "reflog" | "stash" => args
                .get(i + 1..)
                .is_some_and(|rest| !quiet_log_options(rest)),
            _ => false,
        }),
        _ => false,
    }
}

/// Options of `git log` that print no file's content: what commits, which files and how many
/// lines. Any other (`-p`, `-U3`, `--cc`, `--binary`, `-S`, ...) may print a diff, so it is
/// judged as reading the files it shows.
const QUIET_LOG_FLAGS: &[&str] = &[
    "--oneline",
    "--graph",
    "--all",
    "--stat",
    "--shortstat",
    "--numstat",
    "--name-only",
    "--name-status",
    "--summary",
    "--compact-summary",
    "--follow",
    "--first-parent",
    "--no-merges",
    "--merges",
    "--reverse",
    "--abbrev-commit",
    "--no-abbrev-commit",
    "--topo-order",
    "--date-order",
    "--author-date-order",
    "--left-right",
    "--cherry-pick",
    "--cherry-mark",
    "--cherry",
    "--no-patch",
    "-s",
    "--no-color",
    "--walk-reflogs",
    "-g",
    "--source",
    "--parents",
    "--children",
    "--boundary",
    "--simplify-by-decoration",
    "--full-history",
    "--no-walk",
    "--relative-date",
    "--no-notes",
    "--regexp-ignore-case",
    "-i",
    "--all-match",
    "--invert-grep",
    "-E",
    "-F",
    "--extended-regexp",
    "--fixed-strings",
    "--basic-regexp",
    "--count",
    "--ancestry-path",
    "--no-renames",
    "--no-decorate",
    "--mailmap",
    "--use-mailmap",
    "--no-mailmap",
    "-z",
    "--null",
    "--no-expand-tabs",
];

/// Options of `git log` that take a value after `=` and print no file's content.
const QUIET_LOG_VALUES: &[&str] = &[
    "--format",
    "--pretty",
    "--max-count",
    "--skip",
    "--since",
    "--after",
    "--until",
    "--before",
    "--author",
    "--committer",
    "--grep",
    "--date",
    "--abbrev",
    "--decorate",
    "--color",
    "--stat",
    "--dirstat",
    "--max-parents",
    "--min-parents",
    "--branches",
    "--tags",
    "--remotes",
    "--glob",
    "--exclude",
    "--encoding",
    "--diff-filter",
];

/// Whether every option in `args` (up to `--`; the rest are paths) is a quiet one.
fn quiet_log_options(args: &[Word]) -> bool {
    for word in args {
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        if !text.starts_with('-') || text == "-" {
            continue;
        }
        let name = text.split_once('=').map_or(text, |(name, _)| name);
        let counted =
            |digits: &str| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
        let quiet = QUIET_LOG_FLAGS.contains(&text)
            || (text.contains('=') && QUIET_LOG_VALUES.contains(&name))
            || matches!(text, "--pretty" | "--decorate" | "--color" | "--format")
            || text
                .strip_prefix("-n")
                .is_some_and(|n| n.is_empty() || counted(n))
            || text.strip_prefix('-').is_some_and(counted);
        if !quiet {
            return false;
        }
    }
    true
}

/// Why a command cannot run in plan mode, if it might change anything.
fn plan_blocker(analysis: &Analysis) -> Option<String> {
    if let Some(finding) = analysis.incomplete() {
        return Some(finding.what());
    }
    let changing = analysis.findings.iter().find(|f| {
        matches!(
            f.kind,
            FindingKind::WriteRedirect
                | FindingKind::Tee
                | FindingKind::FindAction
                | FindingKind::Eval
                | FindingKind::ShellString
                | FindingKind::Exec
                | FindingKind::Source
                | FindingKind::Xargs
                | FindingKind::HeredocToInterpreter
        )
    });
    if let Some(finding) = changing {
        return Some(finding.what());
    }
    analysis.parts.iter().find_map(|part| match &part.effect {
        Effect::Mutates(what) => Some(format!("`{}` {what}", bash::short(&part.source))),
        Effect::Unknown => Some(format!(
            "`{}` is not a command ouro knows to be read-only",
            bash::short(&part.source)
        )),
        _ => None,
    })
}

/// Read-only (or `cd`) and touching only paths inside the project.
pub(crate) fn auto_allowed(scope: &Scope, base: &Path, part: &Part) -> bool {
    if !part.assignments.is_empty() {
        return false;
    }
    match &part.effect {
        Effect::ReadOnly { paths } => paths.iter().all(|w| word_inside(scope, base, w)),
        Effect::ChangesDirectory { target: Some(dir) } => word_inside(scope, base, dir),
        _ => false,
    }
}

/// What about a part needs approval, as a clause: "`npm test` is not a command ...".
fn concern(scope: &Scope, base: &Path, part: &Part) -> String {
    let shown = bash::short(&part.source);
    match &part.effect {
        Effect::Mutates(what) => format!("`{shown}` {what}"),
        Effect::Unknown => format!("`{shown}` is not a command ouro knows to be read-only"),
        Effect::ReadOnly { paths } => match paths.iter().find(|w| !word_inside(scope, base, w)) {
            Some(w) if !w.literal => {
                format!(
                    "`{shown}` reads `{}`, a path that depends on variables",
                    w.text
                )
            }
            Some(w) if w.glob => format!(
                "`{shown}` reads `{}`, a pattern that may match files outside the project",
                w.text
            ),
            Some(w) => format!("`{shown}` reads `{}`, outside the project", w.text),
            None => format!("`{shown}` sets environment variables"),
        },
        Effect::ChangesDirectory { .. } => {
            format!("`{shown}` changes to a directory outside the project")
        }
    }
}

/// The path a literal word names, absolute against `base` (`.` and `..` removed
/// as written), and where it really leads.
fn word_path(scope: &Scope, base: &Path, word: &Word) -> Option<(PathBuf, PathBuf)> {
    let raw = word_raw_path(scope, word)?;
    Some((paths::lexical(base, &raw), paths::real(base, &raw)))
}

fn word_raw_path(scope: &Scope, word: &Word) -> Option<PathBuf> {
    if !word.literal {
        return None;
    }
    let text = word.text.as_str();
    if text.starts_with('~') {
        paths::expand_home(text, scope.home.as_deref())
    } else {
        Some(PathBuf::from(text))
    }
}

/// Whether a word, used as a path, surely stays inside the project.
pub(crate) fn word_inside(scope: &Scope, base: &Path, word: &Word) -> bool {
    let Some(raw) = word_raw_path(scope, word) else {
        return false;
    };
    if !word.glob {
        return scope.is_inside(&paths::real(base, &raw));
    }
    // A glob may match `..` (`.*`) or a symlink leading out (also when `..` follows it); only
    // a last-component glob over a directory without symlinks is judged safe.
    let components: Vec<String> = raw
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let is_glob = |c: &String| c.contains(['*', '?', '[']);
    let Some(first_glob) = components.iter().position(is_glob) else {
        return scope.is_inside(&paths::real(base, &raw));
    };
    if first_glob + 1 != components.len() || components[first_glob].starts_with('.') {
        return false;
    }
    let Some(dir) = raw.parent() else {
        return false;
    };
    let resolved = paths::real(base, dir);
    // A bare `*` hands the names it matches to the program as arguments: a file called
    // `-delete` or `--output=x` becomes an option.
    let names_become_options = components.len() == 1;
    scope.is_inside(&resolved) && !has_risky_entries(&resolved, names_become_options)
}

/// Whether the directory holds a symlink, or (when `dashes`) a name starting with `-`.
fn has_risky_entries(dir: &std::path::Path, dashes: bool) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut seen = 0;
    for entry in entries {
        seen += 1;
        if seen > MAX_GLOB_DIR_ENTRIES {
            return true;
        }
        let Ok(entry) = entry else {
            return true;
        };
        let is_link = entry.file_type().map(|t| t.is_symlink()).unwrap_or(true);
        if is_link || (dashes && entry.file_name().as_encoded_bytes().starts_with(b"-")) {
            return true;
        }
    }
    false
}

/// Auto mode: what the reviewer must never settle goes to the user. A command that may change
/// a file that configures what runs (a protected path, see [`super::file_access::protection`]):
/// a redirection to one, any argument naming one, or a redirection whose target is not a plain
/// word; one that changes git's configuration (`git config` other than reading it); and one
/// that writes outside the project and its added directories (a redirection there, or a
/// program that writes files naming a path there).
pub(crate) fn touches_protected(scope: &Scope, base: &Path, analysis: &Analysis) -> bool {
    if analysis.writes.iter().any(|w| !w.literal) {
        return true;
    }
    let named = analysis
        .writes
        .iter()
        .chain(analysis.parts.iter().flat_map(|p| p.words.iter().skip(1)))
        .filter(|w| w.literal);
    let protected = named.into_iter().any(|word| {
        let lexical = paths::lexical(base, Path::new(&word.text));
        let real = paths::real(&scope.root, &lexical);
        super::file_access::protection(&lexical).is_some()
            || super::file_access::protection(&real).is_some()
    });
    let home = scope.home.clone().or_else(dirs::home_dir);
    let outside = |word: &super::bash::Word| {
        // `~/x` is not literal (the shell expands it) but says where it leads.
        let named = match crate::settings::expand_home(&word.text, home.as_deref()) {
            Some(expanded) => expanded,
            None if word.literal => std::path::PathBuf::from(&word.text),
            None => return false,
        };
        let lexical = paths::lexical(base, &named);
        let real = paths::real(&scope.root, &lexical);
        !NOT_FILES.iter().any(|n| lexical == Path::new(n)) && !scope.is_inside(&real)
    };
    protected
        || analysis.writes.iter().any(outside)
        || analysis.parts.iter().any(|part| {
            let words = part.core_words();
            changes_git_config(words)
                || (writes_files(words) && words.iter().skip(1).any(|w| !is_flag(w) && outside(w)))
        })
}

/// Redirection targets that are not files.
const NOT_FILES: [&str; 3] = ["/dev/null", "/dev/stdout", "/dev/stderr"];

/// Programs whose path arguments they create, change or remove.
const FILE_WRITERS: [&str; 15] = [
    "touch", "rm", "rmdir", "mv", "cp", "tee", "mkdir", "ln", "chmod", "chown", "truncate",
    "install", "rsync", "dd", "sed",
];

fn is_flag(word: &super::bash::Word) -> bool {
    word.text.starts_with('-')
}

fn writes_files(words: &[super::bash::Word]) -> bool {
    let name = words.first().and_then(super::bash::resolved_name);
    match name {
        // `sed` writes only in place.
        Some("sed") => words.iter().any(|w| {
            w.text == "-i" || w.text.starts_with("-i") || w.text.starts_with("--in-place")
        }),
        Some(name) => FILE_WRITERS.contains(&name),
        None => false,
    }
}

/// `git [global options] config …` that is not a read.
fn changes_git_config(words: &[super::bash::Word]) -> bool {
    words.first().and_then(super::bash::resolved_name) == Some("git")
        && super::bash::git_changes_config(&words[1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asks_user(command: &str) -> bool {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let scope = Scope::new(
            root.clone(),
            None,
            super::super::PermissionMode::Auto,
            Default::default(),
        );
        touches_protected(&scope, &root, &super::super::bash::analyse(command))
    }

    #[test]
    fn git_config_writes_and_writes_outside_the_project_go_to_the_user() {
        for command in [
            "git config core.fsmonitor 'curl x | sh'",
            "git -C . config --local core.hooksPath .",
            "git config --unset core.pager",
            "touch /tmp/outside-the-project",
            "echo x > /tmp/outside-the-project",
            "cp a.txt ../elsewhere.txt",
            "sed -i s/a/b/ /etc/hosts",
            "rm -rf ~/important",
            "echo x > .envrc",
            "tee .git/hooks/pre-commit",
        ] {
            assert!(asks_user(command), "{command} went to the reviewer");
        }
        for command in [
            "git config --get core.bare",
            "git config --list",
            "git status",
            "touch built.txt",
            "echo x > /dev/null",
            "cat /etc/os-release",
            "sed s/a/b/ /etc/os-release",
            "python3 build.py",
        ] {
            assert!(!asks_user(command), "{command} was kept from the reviewer");
        }
    }
}
