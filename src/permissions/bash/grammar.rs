//! The options each read-only program is known to take. A program is read-only only with these:
//! an unknown option, an abbreviated long option, or a word that might expand into an option
//! needs approval, because one flag (`sort -o`, `wc --files0-from`, `strings @file`) is enough
//! to make a reader write, read elsewhere or run something.

use super::Word;
use super::args::is_flag;

/// One program's known options.
pub(super) struct Grammar {
    /// Short options without a value; they may be clustered (`-la`).
    pub flags: &'static str,
    /// Short options that take a value, attached (`-n5`) or as the next word (`-n 5`).
    pub(crate) with_value: &'static str,
    /// Long options without a value, spelled out in full.
    pub long: &'static [&'static str],
    /// Long options with a value (`--lines=5` or `--lines 5`).
    pub(crate) long_with_value: &'static [&'static str],
    /// `-5` style numeric options (head, tail, fmt, seq's negative numbers).
    pub(crate) numeric: bool,
    /// GNU binutils read further arguments from `@file`.
    pub(crate) response_files: bool,
}

const NONE: Grammar = Grammar {
    flags: "",
    with_value: "",
    long: &[],
    long_with_value: &[],
    numeric: false,
    response_files: false,
};

/// Everything GNU programs accept.
const COMMON_LONG: &[&str] = &["--help", "--version"];

const CHECKSUMS: Grammar = Grammar {
    flags: "btz",
    long: &["--binary", "--tag", "--text", "--zero"],
    ..NONE
};

const GREP: Grammar = Grammar {
    flags: "EFGPiyvwxcLloqsbHhnTZzUarRI",
    with_value: "efmABCdD",
    long: &[
        "--extended-regexp",
        "--fixed-strings",
        "--basic-regexp",
        "--perl-regexp",
        "--ignore-case",
        "--no-ignore-case",
        "--word-regexp",
        "--line-regexp",
        "--invert-match",
        "--count",
        "--color",
        "--colour",
        "--files-without-match",
        "--files-with-matches",
        "--only-matching",
        "--quiet",
        "--silent",
        "--no-messages",
        "--byte-offset",
        "--with-filename",
        "--no-filename",
        "--line-number",
        "--initial-tab",
        "--null",
        "--null-data",
        "--text",
        "--recursive",
        "--dereference-recursive",
        "--binary",
        "--line-buffered",
    ],
    long_with_value: &[
        "--regexp",
        "--file",
        "--max-count",
        "--after-context",
        "--before-context",
        "--context",
        "--color",
        "--colour",
        "--binary-files",
        "--devices",
        "--directories",
        "--exclude",
        "--exclude-dir",
        "--include",
        "--label",
    ],
    ..NONE
};

/// The known options of `program`, for the programs ouro judges by their arguments.
pub(super) fn grammar(program: &str) -> Option<&'static Grammar> {
    Some(match program {
        "cat" => &Grammar {
            flags: "AbeEnstTuv",
            long: &[
                "--show-all",
                "--number-nonblank",
                "--show-ends",
                "--number",
                "--squeeze-blank",
                "--show-tabs",
                "--show-nonprinting",
            ],
            ..NONE
        },
        "head" => &Grammar {
            flags: "qvz",
            with_value: "cn",
            long: &["--quiet", "--silent", "--verbose", "--zero-terminated"],
            long_with_value: &["--bytes", "--lines"],
            numeric: true,
            ..NONE
        },
        "tail" => &Grammar {
            flags: "fFqvz",
            with_value: "cns",
            long: &[
                "--follow",
                "--retry",
                "--quiet",
                "--silent",
                "--verbose",
                "--zero-terminated",
            ],
            long_with_value: &[
                "--bytes",
                "--lines",
                "--follow",
                "--pid",
                "--sleep-interval",
                "--max-unchanged-stats",
            ],
            numeric: true,
            ..NONE
        },
        "wc" => &Grammar {
            flags: "clmwL",
            long: &[
                "--bytes",
                "--chars",
                "--lines",
                "--words",
                "--max-line-length",
            ],
            long_with_value: &["--total"],
            ..NONE
        },
        "ls" => &Grammar {
            flags: "aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ1",
            with_value: "ITw",
            long: &[
                "--all",
                "--almost-all",
                "--author",
                "--escape",
                "--ignore-backups",
                "--classify",
                "--directory",
                "--human-readable",
                "--si",
                "--inode",
                "--literal",
                "--numeric-uid-gid",
                "--recursive",
                "--reverse",
                "--size",
                "--group-directories-first",
                "--no-group",
                "--hide-control-chars",
                "--show-control-chars",
                "--quote-name",
                "--full-time",
                "--dereference",
                "--dereference-command-line",
                "--context",
                "--zero",
                "--color",
            ],
            long_with_value: &[
                "--color",
                "--block-size",
                "--format",
                "--hide",
                "--ignore",
                "--indicator-style",
                "--quoting-style",
                "--sort",
                "--time",
                "--time-style",
                "--width",
                "--tabsize",
            ],
            ..NONE
        },
        "stat" => &Grammar {
            flags: "LfZt",
            with_value: "c",
            long: &["--dereference", "--file-system", "--terse"],
            long_with_value: &["--format", "--printf", "--cached"],
            ..NONE
        },
        "du" => &Grammar {
            flags: "0abcDhHkLlmPsSx",
            with_value: "BdtX",
            long: &[
                "--null",
                "--all",
                "--apparent-size",
                "--bytes",
                "--total",
                "--dereference-args",
                "--human-readable",
                "--inodes",
                "--si",
                "--summarize",
                "--separate-dirs",
                "--one-file-system",
                "--count-links",
                "--dereference",
                "--no-dereference",
            ],
            long_with_value: &[
                "--block-size",
                "--max-depth",
                "--threshold",
                "--time",
                "--time-style",
                "--exclude",
                "--exclude-from",
            ],
            ..NONE
        },
        "df" => &Grammar {
            flags: "ahHiklPTx",
            with_value: "Bt",
            long: &[
                "--all",
                "--human-readable",
                "--si",
                "--inodes",
                "--local",
                "--portability",
                "--print-type",
                "--total",
                "--no-sync",
            ],
            long_with_value: &["--block-size", "--output", "--type", "--exclude-type"],
            ..NONE
        },
        "nl" => &Grammar {
            flags: "p",
            with_value: "bdfhilnsvw",
            long: &["--no-renumber"],
            long_with_value: &[
                "--body-numbering",
                "--section-delimiter",
                "--footer-numbering",
                "--header-numbering",
                "--line-increment",
                "--join-blank-lines",
                "--number-format",
                "--number-separator",
                "--starting-line-number",
                "--number-width",
            ],
            ..NONE
        },
        "od" => &Grammar {
            flags: "bcdfilosvx",
            with_value: "AjNtSw",
            long: &["--output-duplicates", "--traditional"],
            long_with_value: &[
                "--address-radix",
                "--skip-bytes",
                "--read-bytes",
                "--format",
                "--strings",
                "--width",
                "--endian",
            ],
            ..NONE
        },
        "hexdump" => &Grammar {
            flags: "bcCdovx",
            with_value: "enfsL",
            ..NONE
        },
        "strings" => &Grammar {
            flags: "adfw",
            with_value: "nteSsU",
            long: &[
                "--all",
                "--data",
                "--print-file-name",
                "--include-all-whitespace",
            ],
            long_with_value: &[
                "--bytes",
                "--radix",
                "--encoding",
                "--output-separator",
                "--unicode",
            ],
            numeric: true,
            response_files: true,
        },
        "md5sum" | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" => &CHECKSUMS,
        "b2sum" => &Grammar {
            with_value: "l",
            long_with_value: &["--length"],
            ..CHECKSUMS
        },
        "cksum" => &Grammar {
            with_value: "al",
            long: &["--raw", "--tag", "--untagged", "--base64"],
            long_with_value: &["--algorithm", "--length"],
            ..NONE
        },
        "cut" => &Grammar {
            flags: "nsz",
            with_value: "bcdf",
            long: &["--complement", "--only-delimited", "--zero-terminated"],
            long_with_value: &[
                "--bytes",
                "--characters",
                "--delimiter",
                "--fields",
                "--output-delimiter",
            ],
            ..NONE
        },
        // No -r: recursing follows symbolic links out of the project.
        "diff" => &Grammar {
            flags: "abBdeEiNpqstTuwyZ",
            with_value: "CUDFIxXSW",
            long: &[
                "--brief",
                "--report-identical-files",
                "--ignore-case",
                "--ignore-all-space",
                "--ignore-space-change",
                "--ignore-blank-lines",
                "--ignore-tab-expansion",
                "--ignore-trailing-space",
                "--text",
                "--strip-trailing-cr",
                "--minimal",
                "--new-file",
                "--speed-large-files",
                "--suppress-common-lines",
                "--side-by-side",
                "--expand-tabs",
                "--initial-tab",
                "--suppress-blank-empty",
                "--color",
                "--normal",
                // Optional values: given only as `--unified=5`, never as the next word.
                "--unified",
                "--context",
            ],
            long_with_value: &[
                "--unified",
                "--context",
                "--label",
                "--ignore-matching-lines",
                "--show-function-line",
                "--width",
                "--tabsize",
                "--color",
            ],
            ..NONE
        },
        "cmp" => &Grammar {
            flags: "bls",
            with_value: "in",
            long: &["--print-bytes", "--verbose", "--quiet", "--silent"],
            long_with_value: &["--ignore-initial", "--bytes"],
            ..NONE
        },
        // No -C (compiles a magic file), -f (reads names from a file), -m (another magic
        // file), -p (rewrites access times) or --no-sandbox.
        "file" => &Grammar {
            flags: "bchiklLNrsSz0",
            with_value: "eFP",
            long: &[
                "--brief",
                "--dereference",
                "--no-dereference",
                "--keep-going",
                "--list",
                "--mime",
                "--mime-type",
                "--mime-encoding",
                "--no-pad",
                "--raw",
                "--special-files",
                "--uncompress",
                "--uncompress-noreport",
                "--print0",
            ],
            long_with_value: &["--exclude", "--separator", "--parameter"],
            ..NONE
        },
        "realpath" => &Grammar {
            flags: "eLmPqsz",
            long: &[
                "--canonicalize-existing",
                "--canonicalize-missing",
                "--logical",
                "--physical",
                "--quiet",
                "--strip",
                "--no-symlinks",
                "--zero",
            ],
            long_with_value: &["--relative-to", "--relative-base"],
            ..NONE
        },
        "readlink" => &Grammar {
            flags: "efmnqsvz",
            long: &[
                "--canonicalize",
                "--canonicalize-existing",
                "--canonicalize-missing",
                "--no-newline",
                "--quiet",
                "--silent",
                "--verbose",
                "--zero",
            ],
            ..NONE
        },
        "tac" => &Grammar {
            flags: "br",
            with_value: "s",
            long: &["--before", "--regex"],
            long_with_value: &["--separator"],
            ..NONE
        },
        "column" => &Grammar {
            flags: "tnexJ",
            with_value: "sco",
            long: &["--table", "--fillrows", "--json"],
            long_with_value: &["--separator", "--output-separator", "--output-width"],
            ..NONE
        },
        "paste" => &Grammar {
            flags: "sz",
            with_value: "d",
            long: &["--serial", "--zero-terminated"],
            long_with_value: &["--delimiters"],
            ..NONE
        },
        "comm" => &Grammar {
            flags: "123z",
            long: &[
                "--check-order",
                "--nocheck-order",
                "--total",
                "--zero-terminated",
            ],
            long_with_value: &["--output-delimiter"],
            ..NONE
        },
        "join" => &Grammar {
            flags: "iz",
            with_value: "aejot12v",
            long: &[
                "--ignore-case",
                "--check-order",
                "--nocheck-order",
                "--header",
                "--zero-terminated",
            ],
            ..NONE
        },
        "fold" => &Grammar {
            flags: "bs",
            with_value: "w",
            long: &["--bytes", "--spaces"],
            long_with_value: &["--width"],
            ..NONE
        },
        "rev" => &NONE,
        // No -o (writes a file) or -R (writes an HTML file into every directory).
        "tree" => &Grammar {
            flags: "adlfFgiqNQpuhDvrtUxCAS",
            with_value: "LPIH",
            long: &[
                "--noreport",
                "--dirsfirst",
                "--du",
                "--prune",
                "--matchdirs",
            ],
            long_with_value: &["--filelimit", "--sort", "--charset", "--timefmt"],
            ..NONE
        },
        // No -o (writes), -T (writes temp files there), --compress-program (runs a program)
        // or --files0-from (reads names from a file).
        "sort" => &Grammar {
            flags: "bcCdfgiMhnRrsuVz",
            with_value: "ktS",
            long: &[
                "--ignore-leading-blanks",
                "--dictionary-order",
                "--ignore-case",
                "--general-numeric-sort",
                "--ignore-nonprinting",
                "--month-sort",
                "--human-numeric-sort",
                "--numeric-sort",
                "--random-sort",
                "--reverse",
                "--version-sort",
                "--check",
                "--merge",
                "--stable",
                "--unique",
                "--zero-terminated",
                "--debug",
            ],
            long_with_value: &[
                "--key",
                "--field-separator",
                "--buffer-size",
                "--parallel",
                "--sort",
                "--check",
            ],
            ..NONE
        },
        "uniq" => &Grammar {
            flags: "cdDiuz",
            with_value: "fsw",
            long: &[
                "--count",
                "--repeated",
                "--ignore-case",
                "--unique",
                "--zero-terminated",
            ],
            long_with_value: &[
                "--skip-fields",
                "--skip-chars",
                "--check-chars",
                "--all-repeated",
                "--group",
            ],
            ..NONE
        },
        "grep" | "egrep" | "fgrep" => &GREP,
        // No --pre or --hostname-bin (run programs), -z (runs decompressors) or
        // --ignore-file (reads rules from anywhere).
        "rg" => &Grammar {
            flags: "iSsvwxcloqnNHhLuUFP0abp",
            with_value: "efmgtTABCMjrE",
            long: &[
                "--ignore-case",
                "--smart-case",
                "--case-sensitive",
                "--invert-match",
                "--word-regexp",
                "--line-regexp",
                "--count",
                "--count-matches",
                "--files",
                "--files-with-matches",
                "--files-without-match",
                "--only-matching",
                "--quiet",
                "--line-number",
                "--no-line-number",
                "--with-filename",
                "--no-filename",
                "--follow",
                "--hidden",
                "--no-ignore",
                "--no-ignore-vcs",
                "--fixed-strings",
                "--pcre2",
                "--json",
                "--vimgrep",
                "--heading",
                "--no-heading",
                "--null",
                "--text",
                "--stats",
                "--pretty",
                "--column",
                "--no-messages",
                "--trim",
            ],
            long_with_value: &[
                "--regexp",
                "--file",
                "--max-count",
                "--glob",
                "--iglob",
                "--type",
                "--type-not",
                "--context",
                "--after-context",
                "--before-context",
                "--max-columns",
                "--max-depth",
                "--threads",
                "--sort",
                "--sortr",
                "--color",
                "--colors",
                "--replace",
                "--encoding",
            ],
            ..NONE
        },
        // No -L (a library path for `import`), --rawfile/--slurpfile (read files by name);
        // `--arg name value` is handled by the caller.
        "jq" => &Grammar {
            flags: "rjacnesSCMR",
            with_value: "f",
            long: &[
                "--raw-output",
                "--join-output",
                "--ascii-output",
                "--compact-output",
                "--null-input",
                "--exit-status",
                "--slurp",
                "--sort-keys",
                "--color-output",
                "--monochrome-output",
                "--tab",
                "--raw-input",
                "--seq",
                "--stream",
            ],
            long_with_value: &["--indent", "--from-file"],
            ..NONE
        },
        "tr" => &Grammar {
            flags: "cCdst",
            long: &[
                "--complement",
                "--delete",
                "--squeeze-repeats",
                "--truncate-set1",
            ],
            ..NONE
        },
        "expand" | "unexpand" => &Grammar {
            flags: "ia",
            with_value: "t",
            long: &["--initial", "--all", "--first-only"],
            long_with_value: &["--tabs"],
            numeric: true,
            ..NONE
        },
        "fmt" => &Grammar {
            flags: "cstu",
            with_value: "pgw",
            long: &[
                "--crown-margin",
                "--split-only",
                "--tagged-paragraph",
                "--uniform-spacing",
            ],
            long_with_value: &["--prefix", "--goal", "--width"],
            numeric: true,
            ..NONE
        },
        "echo" => &Grammar {
            flags: "neE",
            ..NONE
        },
        "pwd" => &Grammar {
            flags: "LP",
            ..NONE
        },
        "printf" | "true" | "false" | "arch" | "groups" | "whoami" => &NONE,
        "id" => &Grammar {
            flags: "gGnruzZ",
            long: &[
                "--group",
                "--groups",
                "--name",
                "--real",
                "--user",
                "--zero",
                "--context",
            ],
            ..NONE
        },
        "uname" => &Grammar {
            flags: "asnrvmpio",
            long: &[
                "--all",
                "--kernel-name",
                "--nodename",
                "--kernel-release",
                "--kernel-version",
                "--machine",
                "--processor",
                "--hardware-platform",
                "--operating-system",
            ],
            ..NONE
        },
        "basename" => &Grammar {
            flags: "az",
            with_value: "s",
            long: &["--multiple", "--zero"],
            long_with_value: &["--suffix"],
            ..NONE
        },
        "dirname" => &Grammar {
            flags: "z",
            long: &["--zero"],
            ..NONE
        },
        "which" => &Grammar {
            flags: "as",
            ..NONE
        },
        "type" => &Grammar {
            flags: "aftpP",
            ..NONE
        },
        "printenv" => &Grammar {
            flags: "0",
            long: &["--null"],
            ..NONE
        },
        "seq" => &Grammar {
            flags: "w",
            with_value: "fs",
            long: &["--equal-width"],
            long_with_value: &["--format", "--separator"],
            numeric: true,
            ..NONE
        },
        "nproc" => &Grammar {
            long: &["--all"],
            long_with_value: &["--ignore"],
            ..NONE
        },
        "uptime" => &Grammar {
            flags: "ps",
            long: &["--pretty", "--since"],
            ..NONE
        },
        _ => return None,
    })
}

/// `find`'s options and tests that only read. Actions that run, delete or write (`-exec`,
/// `-delete`, `-fprint`), `-files0-from` and link following (`-L`, `-follow`) are absent.
const FIND_PRIMARIES: &[&str] = &[
    "-H",
    "-P",
    "-D",
    "-O",
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-regextype",
    "-type",
    "-xtype",
    "-maxdepth",
    "-mindepth",
    "-size",
    "-empty",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-newer",
    "-anewer",
    "-cnewer",
    "-used",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-nouser",
    "-nogroup",
    "-links",
    "-inum",
    "-samefile",
    "-lname",
    "-ilname",
    "-readable",
    "-writable",
    "-executable",
    "-fstype",
    "-depth",
    "-xdev",
    "-mount",
    "-noleaf",
    "-daystart",
    "-prune",
    "-quit",
    "-true",
    "-false",
    "-print",
    "-print0",
    "-printf",
    "-ls",
    "-not",
    "-a",
    "-and",
    "-o",
    "-or",
    "--help",
    "--version",
];

/// Checks `find`'s words; the first primary it does not know, if any.
pub(super) fn check_find(args: &[Word]) -> Result<(), &Word> {
    match args.iter().find(|w| {
        w.literal && w.text.starts_with('-') && !FIND_PRIMARIES.contains(&w.text.as_str())
    }) {
        Some(word) => Err(word),
        None => Ok(()),
    }
}

/// Checks `args` against `grammar`; the word that does not fit, if any.
pub(super) fn check<'a>(grammar: &Grammar, args: &'a [Word]) -> Result<(), &'a Word> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        i += 1;
        let text = word.text.as_str();
        if word.literal && text == "--" {
            return Ok(());
        }
        if grammar.response_files && text.starts_with('@') {
            return Err(word);
        }
        // An expansion may become any option; a glob may match a file named like one.
        if !word.literal || (word.glob && text.starts_with('-')) {
            return Err(word);
        }
        if !is_flag(word) {
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, _)) => (name, true),
                None => (long, false),
            };
            let name = format!("--{name}");
            let with_value = grammar.long_with_value.contains(&name.as_str());
            let plain = grammar.long.contains(&name.as_str()) || COMMON_LONG.contains(&&*name);
            match (plain, with_value, attached) {
                (_, true, true) => {}
                (true, _, false) => {}
                (false, true, false) => i += 1,
                _ => return Err(word),
            }
            continue;
        }
        let letters = &text[1..];
        if grammar.numeric && letters.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        for (at, letter) in letters.char_indices() {
            if grammar.with_value.contains(letter) {
                if at + letter.len_utf8() == letters.len() {
                    i += 1;
                }
                break;
            }
            if !grammar.flags.contains(letter) {
                return Err(word);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::unquoted).collect()
    }

    fn fits(program: &str, line: &str) -> bool {
        let args = words(line);
        check(grammar(program).unwrap(), &args).is_ok()
    }

    #[test]
    fn known_options_in_every_spelling_fit() {
        assert!(fits("ls", "-la --color=auto src"));
        assert!(fits("head", "-n 5 -q file"));
        assert!(fits("head", "-n5 -20 file"));
        assert!(fits("sort", "-k 2 -t , -rn --key=3 file"));
        assert!(fits("grep", "-rn --include=lib.rs -e foo src"));
        assert!(fits("wc", "-l -- -o"));
        assert!(fits("cat", "--version"));
    }

    #[test]
    fn unknown_abbreviated_or_dangerous_options_do_not() {
        for (program, line) in [
            ("sort", "-o out file"),
            ("sort", "-ro out file"),
            ("sort", "--outp=f file"),
            ("sort", "--files0-from=list"),
            ("sort", "--compress-program=sh"),
            ("wc", "--files0-from=list"),
            ("du", "--files0-from=list"),
            ("tail", "--files0-from list"),
            ("file", "-f -"),
            ("file", "-C"),
            ("strings", "@opts"),
            ("tree", "-o out"),
            ("tree", "-R"),
            ("diff", "-r a b"),
            ("rg", "--pre=sh x"),
            ("rg", "--pre sh x"),
            ("jq", "-L lib ."),
            ("cat", "--show"),
            ("ls", "--dire"),
        ] {
            assert!(!fits(program, line), "{program} {line}");
        }
    }

    #[test]
    fn expanded_words_may_be_options_before_the_double_dash() {
        let mut args = words("-l");
        args.push(Word::dynamic("$x"));
        assert!(check(grammar("wc").unwrap(), &args).is_err());
        let mut after = words("-l --");
        after.push(Word::dynamic("$x"));
        assert!(check(grammar("wc").unwrap(), &after).is_ok());
    }
}
