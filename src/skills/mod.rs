//! Skills: folders with a `SKILL.md` (front matter `name`, `description`; the body is the
//! instructions) in `~/.claude/skills/`, `~/.ouro/skills/`, and a trusted project's
//! `.claude/skills/` and `.ouro/skills/`. Only names and descriptions are in the prompt (in
//! the Skill tool's description); the body is loaded when the model calls Skill.

mod tool;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use tool::{NAME, SkillTool};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The folder holding SKILL.md.
    pub dir: PathBuf,
}

/// Every skill: the user's, then a trusted project's (a later one replaces an earlier one
/// of the same name), sorted by name.
pub fn load(user_dirs: &[PathBuf], root: &Path, trusted: bool) -> Vec<Skill> {
    let mut dirs = user_dirs.to_vec();
    if trusted {
        dirs.push(root.join(".claude/skills"));
        dirs.push(root.join(".ouro/skills"));
    }
    let mut by_name = BTreeMap::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if let Some(skill) = read(root, &entry.path()) {
                by_name.insert(skill.name.clone(), skill);
            }
        }
    }
    by_name.into_values().collect()
}

/// The skill in `dir`, its file read beneath `root` (a link out of the project is skipped).
fn read(root: &Path, dir: &Path) -> Option<Skill> {
    let file = dir.join("SKILL.md");
    let text = crate::sys::beneath::read_context(root, &file)?;
    let (front, _) = crate::frontmatter::split_or_warn(&text, &file)?;
    let folder = dir.file_name()?.to_str()?.to_string();
    let description = front.text("description")?;
    Some(Skill {
        name: front.text("name").unwrap_or(folder),
        description,
        dir: dir.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_need_a_description_and_the_project_needs_trust() {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let make = |dir: &Path, text: &str| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("SKILL.md"), text).unwrap();
        };
        make(
            &home.path().join("skills/pdf"),
            "---\ndescription: PDFs\n---\nUse pdftotext.",
        );
        make(&home.path().join("skills/bare"), "no front matter");
        make(
            &root.path().join(".claude/skills/deploy"),
            "---\nname: ship\ndescription: Deploys\n---\nRun make deploy.",
        );
        let user = [home.path().join("skills")];
        let names = |skills: Vec<Skill>| skills.into_iter().map(|s| s.name).collect::<Vec<_>>();
        assert_eq!(names(load(&user, root.path(), false)), ["pdf"]);
        assert_eq!(names(load(&user, root.path(), true)), ["pdf", "ship"]);
    }
}
