//! Project commands: every `.ouro/commands/<name>.md` (or Claude Code's
//! `.claude/commands/<name>.md`; `.ouro`'s wins a name both have) becomes `/<name>`. The file is a prompt
//! template; `$ARGUMENTS` is replaced by what follows the command. An optional front matter
//! block (`---` lines) may give a `description:` for `/help`.

use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub(super) struct ProjectCommand {
    pub name: String,
    pub description: String,
    template: String,
}

/// The project's commands, sorted by name; none before the user trusts the project. Read on
/// every use, so a file added while the REPL runs is picked up without a restart; unreadable
/// files are skipped.
pub(super) fn load(project_root: &Path, trusted: bool) -> Vec<ProjectCommand> {
    let mut out: Vec<ProjectCommand> = Vec::new();
    if !trusted {
        return out;
    }
    for tool in [".ouro", ".claude"] {
        for command in load_dir(project_root, &project_root.join(tool).join("commands")) {
            if !out.iter().any(|c| c.name == command.name) {
                out.push(command);
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The commands in `dir`, each read beneath `root` (a link out of the project is skipped).
pub(super) fn load_dir(root: &Path, dir: &Path) -> Vec<ProjectCommand> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let path = e.path();
            if path.extension().and_then(|x| x.to_str()) != Some("md") {
                return None;
            }
            let name = path.file_stem()?.to_str()?.to_string();
            if !valid_name(&name) {
                return None;
            }
            let text = crate::sys::beneath::read_context(root, &path)?;
            let (front, body) = crate::frontmatter::split_or_warn(&text, &path)?;
            Some(ProjectCommand::new(name, &front, body))
        })
        .collect()
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':')
}

impl ProjectCommand {
    /// From a command file's text; front matter that is not YAML is an error.
    #[cfg(test)]
    pub(super) fn parse(
        name: String,
        text: &str,
    ) -> Result<ProjectCommand, crate::frontmatter::FrontMatterError> {
        let (front, body) = crate::frontmatter::split(text)?;
        Ok(ProjectCommand::new(name, &front, body))
    }

    fn new(name: String, front: &crate::frontmatter::FrontMatter, body: &str) -> ProjectCommand {
        let description = front.text("description").unwrap_or_else(|| {
            body.lines()
                .map(|l| l.trim().trim_start_matches('#').trim())
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .chars()
                .take(70)
                .collect()
        });
        ProjectCommand {
            name,
            description,
            template: body.trim().to_string(),
        }
    }

    /// The prompt to send. A template without `$ARGUMENTS` gets the arguments appended, so
    /// they are never silently dropped.
    pub(super) fn expand(&self, arguments: &str) -> String {
        let arguments = arguments.trim();
        if self.template.contains("$ARGUMENTS") {
            self.template.replace("$ARGUMENTS", arguments)
        } else if arguments.is_empty() {
            self.template.clone()
        } else {
            format!("{}\n\n{arguments}", self.template)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_substituted_or_appended() {
        let c = ProjectCommand::parse("fix".into(), "Fix issue $ARGUMENTS now.\n").unwrap();
        assert_eq!(c.expand(" 42 "), "Fix issue 42 now.");
        assert_eq!(c.description, "Fix issue $ARGUMENTS now.");
        let c = ProjectCommand::parse("review".into(), "# Review\nLook at the diff.").unwrap();
        assert_eq!(c.expand(""), "# Review\nLook at the diff.");
        assert_eq!(
            c.expand("src/a.rs"),
            "# Review\nLook at the diff.\n\nsrc/a.rs"
        );
        assert_eq!(c.description, "Review");
    }

    #[test]
    fn front_matter_gives_the_description_and_is_not_sent() {
        let c = ProjectCommand::parse(
            "t".into(),
            "---\ndescription: \"Run the tests\"\n---\nRun cargo test $ARGUMENTS\n",
        )
        .unwrap();
        assert_eq!(c.description, "Run the tests");
        assert_eq!(c.expand("--lib"), "Run cargo test --lib");
    }

    #[test]
    fn load_reads_markdown_files_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let commands = dir.path().join(".ouro").join("commands");
        std::fs::create_dir_all(&commands).unwrap();
        std::fs::write(commands.join("zeta.md"), "Z").unwrap();
        std::fs::write(commands.join("alpha.md"), "A $ARGUMENTS").unwrap();
        std::fs::write(commands.join("notes.txt"), "ignored").unwrap();
        std::fs::write(commands.join("bad name.md"), "ignored").unwrap();
        let names: Vec<String> = load(dir.path(), true).into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["alpha", "zeta"]);
        assert!(
            load(dir.path(), false).is_empty(),
            "not before the project is trusted"
        );
        assert!(load(&dir.path().join("missing"), true).is_empty());
        let claude = dir.path().join(".claude").join("commands");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::write(claude.join("zeta.md"), "from claude").unwrap();
        std::fs::write(claude.join("beta.md"), "B").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.md"), "a secret").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), claude.join("leak.md"))
            .unwrap();
        let loaded = load(dir.path(), true);
        let names: Vec<&str> = loaded.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["alpha", "beta", "zeta"],
            "a link out of the project is not read"
        );
        assert_eq!(loaded[2].expand(""), "Z", ".ouro wins a shared name");
    }
}
