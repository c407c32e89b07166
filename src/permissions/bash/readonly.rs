//! The built-in knowledge of programs: which only read, which flags make them write, and which
//! wrapper commands (`timeout`, `nice`, `nohup`, `time`, `env`) just run another command.

use super::args::{has_long, has_short, is_flag, long_flag_is, path_arguments};
use super::{Effect, Word, git, grammar, sed};

/// The program a word names, if it is one ouro may know: a bare word, or a bare absolute path
/// in /bin or /usr/bin. `./cat`, `/tmp/cat`, `\cat` and `"$X"` name unknown programs.
pub(super) fn known_name(word: &Word) -> Option<&str> {
    if !word.bare || !word.literal || word.text.is_empty() {
        return None;
    }
    let text = word.text.as_str();
    let name = text
        .strip_prefix("/usr/bin/")
        .or_else(|| text.strip_prefix("/bin/"))
        .unwrap_or(text);
    (!name.contains('/')).then_some(name)
}

/// The last path component of a literal word: what the shell would run, for spotting
/// dangerous programs however they are spelled (`\eval`, `'sh'`, `/bin/sh`).
pub(crate) fn resolved_name(word: &Word) -> Option<&str> {
    if !word.literal {
        return None;
    }
    word.text.rsplit('/').next()
}

/// Where the wrapped command starts, and the `NAME=value` words `env` sets on the way.
pub(super) struct Stripped {
    pub core: usize,
    pub assignments: Vec<String>,
}

/// Skips wrapper commands; the core is the wrapper itself when it is used in a way not
/// understood here (so it stays unknown).
pub(super) fn strip_wrappers(words: &[Word]) -> Stripped {
    let mut core = 0;
    let mut assignments = Vec::new();
    while let Some(name) = words.get(core).and_then(known_name) {
        let args = &words[core + 1..];
        let skip = match name {
            "timeout" => timeout_args(args),
            "nice" => nice_args(args),
            "nohup" => Some(0),
            "time" => Some(usize::from(args.first().is_some_and(|w| w.text == "-p"))),
            "env" => env_args(args, &mut assignments),
            _ => None,
        };
        match skip {
            Some(n) if core + 1 + n < words.len() => core += 1 + n,
            _ => break,
        }
    }
    Stripped { core, assignments }
}

/// How many words of `timeout`'s own options and duration precede the command.
fn timeout_args(args: &[Word]) -> Option<usize> {
    let mut i = 0;
    while let Some(word) = args.get(i).filter(|w| is_flag(w)) {
        match word.text.as_str() {
            "--preserve-status" | "--foreground" | "-v" | "--verbose" => i += 1,
            "-s" | "-k" | "--signal" | "--kill-after" => i += 2,
            t if t.starts_with("--signal=")
                || t.starts_with("--kill-after=")
                || t.starts_with("-s")
                || t.starts_with("-k") =>
            {
                i += 1
            }
            _ => return None,
        }
    }
    // The duration.
    args.get(i).filter(|w| w.literal)?;
    Some(i + 1)
}

fn nice_args(args: &[Word]) -> Option<usize> {
    match args.first() {
        Some(w) if w.text == "-n" => Some(2),
        Some(w) if w.text.starts_with("--adjustment=") => Some(1),
        Some(w)
            if w.literal
                && w.text.len() > 1
                && w.text.starts_with('-')
                && w.text[1..]
                    .trim_start_matches(['n', '-'])
                    .bytes()
                    .all(|b| b.is_ascii_digit()) =>
        {
            Some(1)
        }
        Some(w) if is_flag(w) => None,
        _ => Some(0),
    }
}

fn env_args(args: &[Word], assignments: &mut Vec<String>) -> Option<usize> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        match text {
            "-i" | "--ignore-environment" | "-" => i += 1,
            "-u" | "--unset" => i += 2,
            "--" => {
                i += 1;
                break;
            }
            t if t.starts_with("--unset=") => i += 1,
            t if t.starts_with('-') => return None,
            t if is_assignment(t) => {
                assignments.push(t.to_string());
                i += 1;
            }
            _ => break,
        }
    }
    while let Some(word) = args.get(i).filter(|w| is_assignment(&w.text)) {
        assignments.push(word.text.clone());
        i += 1;
    }
    Some(i)
}

fn is_assignment(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Programs that read files named by their arguments and never write.
const FILE_READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "wc",
    "ls",
    "stat",
    "du",
    "df",
    "nl",
    "od",
    "hexdump",
    "strings",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "cut",
    "diff",
    "cmp",
    "file",
    "realpath",
    "readlink",
    "tac",
    "column",
    "paste",
    "comm",
    "join",
    "fold",
    "rev",
    "tree",
    "sort",
    "uniq",
    "find",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "jq",
    "tr",
    "expand",
    "unexpand",
    "fmt",
];

/// Programs whose first positional argument is a pattern or filter rather than a file.
const PATTERN_FIRST: &[&str] = &["grep", "egrep", "fgrep", "rg", "jq"];

/// Programs that read no files at all.
const PURE: &[&str] = &[
    "echo", "printf", "pwd", "true", "false", "whoami", "id", "uname", "basename", "dirname",
    "which", "type", "printenv", "seq", "nproc", "uptime", "arch", "groups", "test", "[", "[[",
];

/// Programs where only `--version` (or `-V`) is known to be harmless.
const VERSION_ONLY: &[&str] = &[
    "cargo", "rustc", "rustup", "node", "npm", "python", "python3", "go", "java", "gcc", "clang",
    "make", "pip", "pip3", "git",
];

pub(super) fn classify(words: &[Word]) -> Effect {
    let Some(program) = words.first().and_then(known_name) else {
        return Effect::Unknown;
    };
    let args = &words[1..];
    if VERSION_ONLY.contains(&program)
        && matches!(args, [only] if only.text == "--version" || only.text == "-V")
    {
        return Effect::ReadOnly { paths: Vec::new() };
    }
    match program {
        "git" => git::classify(args),
        "sed" => sed::classify(args),
        "cd" => change_directory(args),
        "env" | "nice" | "time" if args.is_empty() => Effect::ReadOnly { paths: Vec::new() },
        "date" => date(args),
        "hostname" if args.is_empty() => Effect::ReadOnly { paths: Vec::new() },
        "command"
            if args
                .first()
                .is_some_and(|w| w.text == "-v" || w.text == "-V") =>
        {
            Effect::ReadOnly { paths: Vec::new() }
        }
        "tee" => tee(args),
        "jq" => jq(args),
        p if PURE.contains(&p) => pure(p, args),
        // Following symlinks while recursing may lead anywhere; the paths checked are only
        // where the walk starts.
        p if FILE_READERS.contains(&p) && follows_symlinks(p, args) => Effect::Unknown,
        p if FILE_READERS.contains(&p) => file_reader(p, args),
        _ => Effect::Unknown,
    }
}

/// A reader is read-only with the options its grammar knows, and reads its operands.
fn file_reader(program: &str, args: &[Word]) -> Effect {
    if let Some(what) = writing_flag(program, args) {
        return Effect::Mutates(what.to_string());
    }
    if let Some(odd) = unknown_option(program, args) {
        return odd;
    }
    Effect::ReadOnly {
        paths: path_arguments(args, PATTERN_FIRST.contains(&program)),
    }
}

/// `Some` when a literal argument is not one of the program's known options. Words that
/// bash expands are left to the path checks, which never let them through unasked.
fn unknown_option(program: &str, args: &[Word]) -> Option<Effect> {
    let literal: Vec<Word> = args.iter().filter(|w| w.literal).cloned().collect();
    let checked = match program {
        "find" => grammar::check_find(&literal),
        _ => grammar::check(grammar::grammar(program)?, &literal),
    };
    checked.err().map(|word| {
        Effect::Mutates(format!(
            "uses `{}`, which is not an option ouro knows to be read-only for `{program}`",
            word.text
        ))
    })
}

/// Filters that reach outside the input: modules from disk, the environment.
const JQ_UNSAFE: &[&str] = &[
    "import",
    "include",
    "$ENV",
    "env",
    "input_filename",
    "$__loc__",
];

/// `jq`: its filter must not load modules or read the environment; `--arg(json) NAME VALUE`
/// takes two words.
fn jq(args: &[Word]) -> Effect {
    let mut rest = Vec::with_capacity(args.len());
    let mut i = 0;
    while let Some(word) = args.get(i) {
        if word.literal && matches!(word.text.as_str(), "--arg" | "--argjson") {
            i += 3;
            continue;
        }
        rest.push(word.clone());
        i += 1;
    }
    if let Some(filter) = rest
        .iter()
        .find(|w| !(w.literal && w.text.starts_with('-')))
        && JQ_UNSAFE.iter().any(|bad| filter.text.contains(bad))
    {
        return Effect::Mutates(
            "has a filter that loads modules or reads the environment".to_string(),
        );
    }
    file_reader("jq", &rest)
}

/// `test` operators whose operands are files: probing them reveals what exists (or how it is)
/// outside the project, so those paths are judged like a read's.
pub(super) const FILE_TESTS: &[&str] = &[
    "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-u", "-w", "-x", "-G", "-L",
    "-N", "-O", "-S", "-nt", "-ot", "-ef",
];

/// The operands of the file tests in a `test`/`[`/`[[` command's words.
fn tested_paths(args: &[Word]) -> Vec<Word> {
    let mut paths = Vec::new();
    for (i, word) in args.iter().enumerate() {
        if !(word.literal && FILE_TESTS.contains(&word.text.as_str())) {
            continue;
        }
        if matches!(word.text.as_str(), "-nt" | "-ot" | "-ef")
            && let Some(before) = i.checked_sub(1).and_then(|b| args.get(b))
        {
            paths.push(before.clone());
        }
        if let Some(after) = args.get(i + 1) {
            paths.push(after.clone());
        }
    }
    paths
}

fn pure(program: &str, args: &[Word]) -> Effect {
    // `echo $x` prints what a variable holds (a secret, or an arithmetic payload's result)
    // and `pwd $x` can be any option: such words ask, like paths that depend on variables.
    let expanded: Vec<Word> = args
        .iter()
        .filter(|w| !w.literal && w.text.contains(['$', '`']))
        .cloned()
        .collect();
    if !expanded.is_empty() {
        return Effect::ReadOnly { paths: expanded };
    }
    if !matches!(program, "test" | "[" | "[[")
        && let Some(odd) = unknown_option(program, args)
    {
        return odd;
    }
    // `test -v 'a[$(cmd)]'` evaluates the subscript.
    // An expanded word can be that operator too (`test "$_" ...` after `echo -v`).
    let evaluates = matches!(program, "test" | "[" | "[[")
        && args
            .iter()
            .any(|w| !w.literal || w.text == "-v" || w.text == "-R");
    // `printf -v 'a[$(cmd)]'` evaluates the subscript too, and any `-v` sets a variable.
    let assigns =
        program == "printf" && args.iter().any(|w| !w.literal || w.text.starts_with("-v"));
    if evaluates || assigns {
        return Effect::Unknown;
    }
    let paths = if matches!(program, "test" | "[" | "[[") {
        tested_paths(args)
    } else {
        Vec::new()
    };
    Effect::ReadOnly { paths }
}

fn date(args: &[Word]) -> Effect {
    let sets = args.iter().any(|w| {
        long_flag_is(&w.text, "--set")
            || (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('s'))
    });
    if sets {
        return Effect::Mutates("sets the system clock".into());
    }
    // `-f FILE` reads dates from a file, attached (`-f.env`) or not.
    let mut paths = path_arguments(args, false);
    for (i, word) in args.iter().enumerate() {
        if let Some(attached) = word.text.strip_prefix("-f").filter(|v| !v.is_empty()) {
            paths.push(Word {
                text: attached.to_string(),
                ..word.clone()
            });
        } else if word.text == "-f" || long_flag_is(&word.text, "--file") {
            paths.extend(args.get(i + 1).cloned());
        }
    }
    Effect::ReadOnly { paths }
}

fn tee(args: &[Word]) -> Effect {
    if tee_files(args).next().is_none() {
        Effect::ReadOnly { paths: Vec::new() }
    } else {
        Effect::Mutates("writes a file".into())
    }
}

/// The files `tee` writes: its operands, including option-like ones after `--`.
pub(super) fn tee_files(args: &[Word]) -> impl Iterator<Item = &Word> {
    let options_end = args
        .iter()
        .position(|w| w.text == "--")
        .unwrap_or(args.len());
    args.iter()
        .enumerate()
        .filter(move |(i, w)| {
            *i > options_end || (*i < options_end && !is_flag(w) && !w.is_harmless_sink())
        })
        .map(|(_, w)| w)
}

fn change_directory(args: &[Word]) -> Effect {
    let targets: Vec<&Word> = args
        .iter()
        .filter(|w| !(is_flag(w) && matches!(w.text.as_str(), "-P" | "-L" | "-e" | "-@")))
        .collect();
    match targets.as_slice() {
        [] => Effect::ChangesDirectory { target: None },
        [one] if one.text != "-" => Effect::ChangesDirectory {
            target: Some((*one).clone()),
        },
        _ => Effect::Unknown,
    }
}

/// A flag that makes an otherwise read-only program write or run other programs.
fn writing_flag(program: &str, args: &[Word]) -> Option<&'static str> {
    match program {
        "sort" if has_short(args, "o") || has_long(args, &["--output"]) => {
            Some("writes its output to a file")
        }
        "sort" if has_long(args, &["--compress-program"]) => Some("runs a compression program"),
        // `-R` makes tree write an HTML file in every directory.
        "tree" if has_short(args, "o") || has_short(args, "R") || has_long(args, &["--output"]) => {
            Some("writes its output to files")
        }
        "file" if has_short(args, "C") || has_long(args, &["--compile"]) => {
            Some("writes a compiled magic file")
        }
        "rg" if has_long(args, &["--pre"]) || has_long(args, &["--hostname-bin"]) => {
            Some("runs other programs on the files it searches")
        }
        "uniq" if operands(args) > 1 => Some("writes its output to a file"),
        "find" => find_action(args),
        _ => None,
    }
}

/// How many operands a command has: words that are not options, and every word after `--`.
fn operands(args: &[Word]) -> usize {
    let end = args
        .iter()
        .position(|w| w.literal && w.text == "--")
        .unwrap_or(args.len());
    args[..end].iter().filter(|w| !is_flag(w)).count() + args.len().saturating_sub(end + 1)
}

fn follows_symlinks(program: &str, args: &[Word]) -> bool {
    match program {
        "grep" | "egrep" | "fgrep" => {
            has_short(args, "R") || has_long(args, &["--dereference-recursive"])
        }
        "rg" => has_short(args, "L") || has_long(args, &["--follow"]),
        "tree" => has_short(args, "l"),
        "ls" => has_short(args, "L") || has_long(args, &["--dereference"]),
        "du" => has_short(args, "L") || has_long(args, &["--dereference"]),
        "find" => args
            .iter()
            .any(|w| matches!(w.text.as_str(), "-L" | "-follow")),
        _ => false,
    }
}

/// `find` primaries that run commands, delete or write files.
pub(super) fn find_action(args: &[Word]) -> Option<&'static str> {
    args.iter().find_map(|w| match w.text.as_str() {
        "-exec" | "-execdir" | "-ok" | "-okdir" => Some("runs a command for each file found"),
        "-delete" => Some("deletes the files it finds"),
        "-fprint" | "-fprint0" | "-fprintf" | "-fls" => Some("writes a file"),
        _ => None,
    })
}
