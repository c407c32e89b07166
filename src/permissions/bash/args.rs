//! How the read-only grammars read a command's words: which are options, which long option a
//! word spells, and which words may name files.

use super::Word;

/// A literal option word: it starts with `-` and is not `-` alone (stdin). A word that is not
/// literal is never a flag here, because what it expands to is unknown; a grammar that must not
/// let an expansion act as an option checks `word.literal` itself (see [`may_be_flag`]).
pub(super) fn is_flag(word: &Word) -> bool {
    word.literal && word.text.starts_with('-') && word.text != "-"
}

/// Whether a word may act as an option once bash expanded it: a flag, or any word that is not
/// literal.
pub(super) fn may_be_flag(word: &Word) -> bool {
    !word.literal || is_flag(word)
}

/// Whether `text` is the long option `flag`, with a value, abbreviated (GNU getopt and git
/// accept any unique prefix, so `--outp=x` is `--output=x`) or extended (`--pre-glob`).
pub fn long_flag_is(text: &str, flag: &str) -> bool {
    let name = text.split_once('=').map_or(text, |(name, _)| name);
    name.starts_with("--") && name.len() > 2 && (flag.starts_with(name) || name.starts_with(flag))
}

/// The arguments that may name files: every operand and every flag value that looks like a
/// path. Arguments that are not literal are kept, so the caller can refuse to guess.
pub(super) fn path_arguments(args: &[Word], pattern_first: bool) -> Vec<Word> {
    let explicit_pattern = args.iter().any(|w| {
        let t = w.text.as_str();
        t == "-e" || t == "-f" || t.starts_with("--regexp") || t.starts_with("--file")
    });
    // Without knowing which flags take a value, the pattern is only known to be the first
    // operand when no flag comes before it (`grep -r root /etc` searches /etc).
    let mut skip_pattern = pattern_first && !explicit_pattern;
    let mut paths = Vec::new();
    let mut after_dashdash = false;
    for word in args {
        if !word.literal {
            paths.push(word.clone());
            continue;
        }
        let text = word.text.as_str();
        if !after_dashdash && text == "--" {
            after_dashdash = true;
            continue;
        }
        // A glob like `-*` may expand to any option; it is judged as the files it matches.
        if !after_dashdash && text.starts_with('-') && text != "-" && !word.glob {
            skip_pattern = false;
            for value in flag_values(text) {
                paths.push(Word {
                    text: value.to_string(),
                    ..word.clone()
                });
            }
            continue;
        }
        if skip_pattern {
            skip_pattern = false;
            continue;
        }
        paths.push(word.clone());
    }
    paths
}

/// The parts of a flag that may be a path. A long option's is after `=` (or from its first `/`
/// or `~`). A short option may take its value attached, and which letters take one is not
/// known here, so each tail of a cluster is one: `-fsh.txt` is `-f sh.txt`, or `-fs h.txt`.
fn flag_values(flag: &str) -> Vec<&str> {
    if flag.starts_with("--") {
        if let Some((_, value)) = flag.split_once('=') {
            return vec![value];
        }
        return flag
            .find(['/', '~'])
            .map(|at| &flag[at..])
            .into_iter()
            .collect();
    }
    flag.char_indices()
        .skip(2)
        .map(|(at, _)| &flag[at..])
        .collect()
}

/// Whether a short option cluster among `args` holds one of `letters` (`-la` holds `a`).
pub fn has_short(args: &[Word], letters: &str) -> bool {
    args.iter().any(|w| {
        w.text.starts_with('-')
            && !w.text.starts_with("--")
            && w.text[1..].contains(|c| letters.contains(c))
    })
}

/// Whether one of `args` spells one of the long options `names`, abbreviated or with a value.
pub fn has_long(args: &[Word], names: &[&str]) -> bool {
    args.iter()
        .any(|w| names.iter().any(|name| long_flag_is(&w.text, name)))
}
