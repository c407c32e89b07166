//! What the prompt offers while typing. Typing `/` lists the matching commands under the line
//! with what each does (Right arrow takes the first, Tab completes); Tab after `@` completes
//! a path, as in Claude Code.

use std::path::{Path, PathBuf};

use rustyline::completion::Pair;
use rustyline::hint::Hint;

/// Commands listed under the line at most; the rest are counted.
const LISTED: usize = 8;
/// Paths offered for one Tab at most.
const PATHS: usize = 500;

/// A command the prompt can offer: its name with the slash, and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Command {
    pub name: String,
    pub about: String,
}

/// The hint under a `/` being typed: the rest of the first match on the line, then the list.
pub(super) struct CommandHint {
    display: String,
    rest: String,
}

impl Hint for CommandHint {
    fn display(&self) -> &str {
        &self.display
    }

    fn completion(&self) -> Option<&str> {
        (!self.rest.is_empty()).then_some(self.rest.as_str())
    }
}

pub(super) struct Offers {
    pub commands: Vec<Command>,
    /// MCP resources as mentioned, without the `@`: `server:uri`.
    pub resources: Vec<String>,
    /// Where relative `@` paths start.
    pub cwd: PathBuf,
}

impl Offers {
    /// The commands matching a `/` word being typed at the end of the line.
    pub(super) fn hint(&self, line: &str, pos: usize) -> Option<CommandHint> {
        if pos != line.len() || !line.starts_with('/') || line.contains(char::is_whitespace) {
            return None;
        }
        let matching: Vec<&Command> = self
            .commands
            .iter()
            .filter(|c| c.name.starts_with(line))
            .collect();
        let first = matching.first()?;
        let rest = first.name.get(line.len()..).unwrap_or_default().to_string();
        let width = matching
            .iter()
            .take(LISTED)
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(0);
        let mut display = rest.clone();
        for command in matching.iter().take(LISTED) {
            display.push_str(&format!("\n  {:width$}  {}", command.name, command.about));
        }
        if matching.len() > LISTED {
            display.push_str(&format!(
                "\n  … {} more (keep typing, or Tab)",
                matching.len() - LISTED
            ));
        }
        Some(CommandHint { display, rest })
    }

    /// Tab: a command name when the line is a `/` word, a path or MCP resource after `@`; the start of the
    /// replaced text and the candidates.
    pub(super) fn complete(&self, line: &str, pos: usize) -> (usize, Vec<Pair>) {
        let head = line.get(..pos).unwrap_or(line);
        if head.starts_with('/') && !head.contains(char::is_whitespace) {
            let found = self
                .commands
                .iter()
                .filter(|c| c.name.starts_with(head))
                .map(|c| Pair {
                    display: c.name.clone(),
                    replacement: format!("{} ", c.name),
                })
                .collect();
            return (0, found);
        }
        let start = head
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        match head[start..].strip_prefix('@') {
            Some(typed) => {
                let mut found = paths(&self.cwd, typed);
                found.extend(
                    self.resources
                        .iter()
                        .filter(|r| r.starts_with(typed))
                        .map(|r| Pair {
                            display: r.clone(),
                            replacement: format!("@{r} "),
                        }),
                );
                (start, found)
            }
            None => (0, Vec::new()),
        }
    }
}

/// The entries of the directory `typed` names whose names start as its last part does. A
/// directory completes with `/` so Tab can go on into it; a file with a space, as it is done.
fn paths(cwd: &Path, typed: &str) -> Vec<Pair> {
    let (dir, prefix) = match typed.rfind('/') {
        Some(i) => typed.split_at(i + 1),
        None => ("", typed),
    };
    let base = match dir.strip_prefix("~/") {
        Some(rest) => match dirs::home_dir() {
            Some(home) => home.join(rest),
            None => return Vec::new(),
        },
        None => cwd.join(dir),
    };
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut found: Vec<(String, bool)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let hidden_unasked = name.starts_with('.') && !prefix.starts_with('.');
            // A mention ends at whitespace, so such a name could not be mentioned.
            if hidden_unasked || !name.starts_with(prefix) || name.contains(char::is_whitespace) {
                return None;
            }
            let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
            Some((name, is_dir))
        })
        .take(PATHS)
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|(name, is_dir)| {
            let tail = if is_dir { "/" } else { " " };
            Pair {
                display: if is_dir {
                    format!("{name}/")
                } else {
                    name.clone()
                },
                replacement: format!("@{dir}{name}{tail}"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offers(cwd: &Path) -> Offers {
        let command = |name: &str, about: &str| Command {
            name: name.into(),
            about: about.into(),
        };
        Offers {
            commands: vec![
                command("/help", "List the commands"),
                command("/history", "Past prompts"),
                command("/cost", "Tokens and USD"),
            ],
            resources: vec!["docs:note://readme".into(), "docs:note://todo".into()],
            cwd: cwd.to_path_buf(),
        }
    }

    #[test]
    fn typing_a_slash_lists_the_matching_commands_with_what_they_do() {
        let o = offers(Path::new("/"));
        let hint = o.hint("/h", 2).unwrap();
        assert_eq!(hint.completion(), Some("elp"));
        assert_eq!(
            hint.display(),
            "elp\n  /help     List the commands\n  /history  Past prompts"
        );
        assert_eq!(o.hint("/help", 5).unwrap().completion(), None);
        assert!(o.hint("/x", 2).is_none());
        assert!(o.hint("/help me", 8).is_none());
        assert!(o.hint("/h", 1).is_none(), "only with the cursor at the end");
        assert!(o.hint("hi", 2).is_none());
    }

    #[test]
    fn a_long_list_is_cut_and_counted() {
        let mut o = offers(Path::new("/"));
        o.commands = (0..12)
            .map(|i| Command {
                name: format!("/c{i:02}"),
                about: String::new(),
            })
            .collect();
        let hint = o.hint("/", 1).unwrap();
        assert_eq!(hint.display().lines().count(), 1 + LISTED + 1);
        assert!(hint.display().ends_with("… 4 more (keep typing, or Tab)"));
    }

    #[test]
    fn tab_completes_commands_and_mentioned_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/.hidden"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        let o = offers(dir.path());

        let (start, found) = o.complete("/h", 2);
        assert_eq!(start, 0);
        let names: Vec<&str> = found.iter().map(|p| p.display.as_str()).collect();
        assert_eq!(names, ["/help", "/history"]);

        let line = "look at @src/";
        let (start, found) = o.complete(line, line.len());
        assert_eq!(start, 8);
        let offered: Vec<(&str, &str)> = found
            .iter()
            .map(|p| (p.display.as_str(), p.replacement.as_str()))
            .collect();
        assert_eq!(
            offered,
            [("deep/", "@src/deep/"), ("main.rs", "@src/main.rs ")]
        );
        let (_, found) = o.complete("@src/.h", 7);
        assert_eq!(found.len(), 1, "hidden files when asked for");
        let (_, found) = o.complete("see @R", 6);
        assert_eq!(found[0].replacement, "@README.md ");
        assert!(o.complete("plain words", 11).1.is_empty());
        assert!(o.complete("@nowhere/x", 10).1.is_empty());
    }

    #[test]
    fn tab_after_at_offers_mcp_resources() {
        let o = offers(Path::new("/nonexistent"));
        let line = "see @docs:note://r";
        let (start, found) = o.complete(line, line.len());
        assert_eq!(start, 4);
        let offered: Vec<(&str, &str)> = found
            .iter()
            .map(|p| (p.display.as_str(), p.replacement.as_str()))
            .collect();
        assert_eq!(offered, [("docs:note://readme", "@docs:note://readme ")]);
        let (_, found) = o.complete("@do", 3);
        assert_eq!(found.len(), 2);
    }
}
