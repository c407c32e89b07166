//! Which git invocations only read.

use super::args::{long_flag_is, may_be_flag, path_arguments};
use super::{Effect, Word};

/// Subcommands that only read, whatever their (non-writing) flags.
const READERS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "blame",
    "describe",
    "shortlog",
    "cat-file",
    "merge-base",
    "name-rev",
    "show-ref",
    "grep",
    "rev-list",
    "count-objects",
    "whatchanged",
    "annotate",
];

/// Flags of those subcommands that write files or run other programs.
const WRITING_FLAGS: &[&str] = &[
    "--output",
    "-O",
    "--open-files-in-pager",
    "--ext-diff",
    "--textconv",
    // Git in a submodule runs the filters that submodule's own configuration names, which
    // the overrides a read-only call gets do not reach.
    "--recurse-submodules",
    "--ignore-submodules",
];

/// `git branch` flags that only list.
const BRANCH_LISTING: &[&str] = &[
    "-a",
    "--all",
    "-r",
    "--remotes",
    "-v",
    "-vv",
    "--verbose",
    "-l",
    "--list",
    "--show-current",
    "--no-color",
    "--color",
    "--column",
    "--no-column",
    "-i",
    "--ignore-case",
    "--omit-empty",
];

/// `git branch` flags that only list and take a value (`--contains <commit>`).
const BRANCH_LISTING_WITH_VALUE: &[&str] = &[
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
    "--points-at",
    "--sort",
    "--format",
];

const CONFIG_READ: &[&str] = &["--get", "--get-all", "--get-regexp", "--list", "-l"];
/// Options that do not change what a `--local` read reads. `--global`, `--system` and
/// `--includes` are absent: they read files outside the project.
const CONFIG_NEUTRAL: &[&str] = &[
    "--local",
    "--worktree",
    "--show-origin",
    "--show-scope",
    "--null",
    "-z",
    "--name-only",
    "--no-includes",
];

pub(super) fn classify(args: &[Word]) -> Effect {
    let mut paths = Vec::new();
    let mut i = 0;
    // Global options before the subcommand.
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        match text {
            "--no-pager"
            | "-P"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--no-replace-objects" => i += 1,
            // Another directory may hold a repository the project ships, whose config runs
            // programs (an embedded bare repository): that needs approval.
            "-C" => return Effect::Unknown,
            t if t.starts_with("--git-dir") || t.starts_with("--work-tree") => {
                return Effect::Unknown;
            }
            // `-c` can set a pager, an fsmonitor hook or an alias: anything can run.
            t if t.starts_with('-') => return Effect::Unknown,
            _ => break,
        }
    }
    let Some(sub) = args.get(i).filter(|w| w.literal && w.bare) else {
        return Effect::Unknown;
    };
    let rest = &args[i + 1..];
    let reads_only = match sub.text.as_str() {
        s if READERS.contains(&s) => {
            if let Some(flag) = writing_flag(rest) {
                return Effect::Mutates(format!(
                    "has `{}`, which writes or runs programs",
                    flag.text
                ));
            }
            // Any operand or flag value may name a file: `git diff a b` compares two files
            // outside the repository as if `--no-index` were given, `git blame --contents f`
            // and `git grep -f f` read `f`.
            paths.extend(path_arguments(rest, false));
            true
        }
        "branch" => branch_lists(rest),
        "tag" => {
            rest.iter()
                .all(|w| !may_be_flag(w) || matches!(w.text.as_str(), "-l" | "--list" | "-n"))
                && (rest.is_empty() || rest.iter().any(|w| w.text == "-l" || w.text == "--list"))
        }
        "remote" => matches!(
            texts(rest).as_slice(),
            [] | ["-v"] | ["--verbose"] | ["get-url", _]
        ),
        "config" => {
            paths.extend(config_scope_paths(rest));
            config_reads(rest)
        }
        // These take `git log` and `git diff` options, `--output` included.
        "stash" | "reflog" | "worktree" => {
            let listing = match sub.text.as_str() {
                "stash" => matches!(texts(rest).first(), Some(&"list") | Some(&"show")),
                "worktree" => matches!(texts(rest).first(), Some(&"list")),
                _ => matches!(texts(rest).first(), None | Some(&"show")),
            };
            if let Some(flag) = writing_flag(rest).filter(|_| listing) {
                return Effect::Mutates(format!(
                    "has `{}`, which writes or runs programs",
                    flag.text
                ));
            }
            paths.extend(path_arguments(rest, false));
            listing
        }
        _ => return Effect::Unknown,
    };
    if reads_only {
        Effect::ReadOnly { paths }
    } else {
        Effect::Mutates(format!(
            "`git {}` with these arguments changes the repository",
            sub.text
        ))
    }
}

fn texts(words: &[Word]) -> Vec<&str> {
    words.iter().map(|w| w.text.as_str()).collect()
}

fn writing_flag(args: &[Word]) -> Option<&Word> {
    args.iter()
        .find(|w| WRITING_FLAGS.iter().any(|f| flag_is(&w.text, f)))
}

/// `--output` matches `--output=x` and abbreviations like `--outp` (git accepts unique
/// prefixes); `-O` matches `-Ovim` and any cluster holding the letter (`-iOvim`).
fn flag_is(text: &str, flag: &str) -> bool {
    if flag.starts_with("--") {
        return long_flag_is(text, flag);
    }
    match (text.strip_prefix('-'), flag.strip_prefix('-')) {
        (Some(cluster), Some(letter)) if !cluster.starts_with('-') => cluster.contains(letter),
        _ => false,
    }
}

fn branch_lists(args: &[Word]) -> bool {
    let listing = args.iter().any(|w| w.text == "-l" || w.text == "--list");
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if BRANCH_LISTING.contains(&text) {
            i += 1;
        } else if BRANCH_LISTING_WITH_VALUE.contains(&text) {
            i += 2;
        } else if BRANCH_LISTING_WITH_VALUE
            .iter()
            .any(|f| text.starts_with(f) && text[f.len()..].starts_with('='))
        {
            i += 1;
        } else if !may_be_flag(word) && listing {
            // A pattern for `--list`.
            i += 1;
        } else {
            return false;
        }
    }
    true
}

/// Without `--local` (or `--worktree`) a config read reads the user's and the system's
/// files too: they are named as paths it reads, so the call asks like any read outside.
fn config_scope_paths(args: &[Word]) -> Vec<Word> {
    let scoped = args
        .iter()
        .any(|w| w.literal && matches!(w.text.as_str(), "--local" | "--worktree"));
    if scoped {
        return Vec::new();
    }
    ["~/.gitconfig", "/etc/gitconfig"]
        .into_iter()
        .map(|p| Word {
            text: p.to_string(),
            literal: true,
            glob: false,
            bare: true,
        })
        .collect()
}

/// Whether `git` with `args` (what follows the program) changes git's configuration: its
/// `config` subcommand doing anything but a read, whatever global options come first.
pub(crate) fn changes_config(args: &[Word]) -> bool {
    let mut rest = args.iter();
    while let Some(word) = rest.next() {
        match word.text.as_str() {
            // Global options that take the next word.
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path" => {
                rest.next();
            }
            t if t.starts_with('-') => {}
            "config" => return !config_reads(rest.as_slice()),
            _ => return false,
        }
    }
    false
}

fn config_reads(args: &[Word]) -> bool {
    if matches!(texts(args).first(), Some(&"get") | Some(&"list")) {
        return args[1..]
            .iter()
            .all(|w| !may_be_flag(w) || CONFIG_NEUTRAL.contains(&w.text.as_str()));
    }
    let mut reads = false;
    for word in args.iter().filter(|w| may_be_flag(w)) {
        let text = word.text.as_str();
        if CONFIG_READ.contains(&text) {
            reads = true;
        } else if !CONFIG_NEUTRAL.contains(&text) {
            return false;
        }
    }
    reads
}
