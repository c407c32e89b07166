//! The system prompt a served turn appends to the brain's own: who and where (identity), the
//! project's context, the persona, the mode's instructions, in that order and within a budget
//! that cuts the persona first, then the context, never the identity or the mode.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use super::store::Mode;
use crate::sys::sync::lock;

/// About 16,000 tokens at about four characters a token.
pub(super) const BUDGET_CHARS: usize = 64_000;
/// How much of each context file goes in.
const CONTEXT_FILE_CHARS: usize = 4096;
const CONTEXT_FILES: &[&str] = &["README.md", "AGENTS.md"];

/// Files read for prompts, kept until their modification time changes.
#[derive(Default)]
pub(super) struct FileCache {
    files: Mutex<HashMap<PathBuf, (SystemTime, String)>>,
}

impl FileCache {
    /// A project file, read beneath `root` (a link out of the project is not followed).
    fn read(&self, root: &Path, path: &Path) -> Option<String> {
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
        if let Some((when, text)) = lock(&self.files).get(path)
            && *when == modified
        {
            return Some(text.clone());
        }
        let text = crate::sys::beneath::read_context(root, path)?;
        lock(&self.files).insert(path.to_path_buf(), (modified, text.clone()));
        Some(text)
    }
}

pub(super) struct Parts<'a> {
    pub project_root: &'a Path,
    pub mode: Mode,
    /// The persona's file, whole.
    pub persona: Option<&'a Path>,
    /// Whether the user trusts the project: its files are read only then.
    pub trusted: bool,
}

pub(super) fn build(parts: &Parts<'_>, cache: &FileCache, budget: usize) -> String {
    let identity = format!(
        "You are an agent of ouro serve, working in the project at {}.",
        parts.project_root.display()
    );
    let mode = parts.mode.instructions().to_string();
    let mut context = String::new();
    if parts.mode != Mode::Direct && parts.trusted {
        for name in CONTEXT_FILES {
            if let Some(text) = cache.read(parts.project_root, &parts.project_root.join(name)) {
                let (cut, _) = crate::text::prefix_chars(&text, CONTEXT_FILE_CHARS);
                context.push_str(&format!("# {name}\n\n{}\n\n", cut.trim_end()));
            }
        }
    }
    let persona = parts
        .persona
        .and_then(|p| cache.read(parts.project_root, p))
        .map(|t| format!("# Persona\n\n{}", t.trim_end()))
        .unwrap_or_default();
    let fixed = identity.chars().count() + mode.chars().count() + 8;
    let mut room = budget.saturating_sub(fixed);
    let context = fit(&context, &mut room);
    let persona = fit(&persona, &mut room);
    [identity, context, persona, mode]
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `text` cut to the room left, which it then uses up. The context is placed first so that
/// the persona is what a tight budget cuts.
fn fit(text: &str, room: &mut usize) -> String {
    let (cut, _) = crate::text::prefix_chars(text, *room);
    *room -= cut.chars().count();
    cut.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_cuts_keep_identity_and_mode() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("README.md"), "R".repeat(10_000)).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "agents here").unwrap();
        let persona = dir.path().join("AGENT_X.md");
        std::fs::write(&persona, "P".repeat(1000)).unwrap();
        let cache = FileCache::default();
        let parts = Parts {
            project_root: dir.path(),
            mode: Mode::Workbench,
            persona: Some(&persona),
            trusted: true,
        };
        let full = build(&parts, &cache, BUDGET_CHARS);
        let (i, r, a, p, m) = (
            full.find("You are").unwrap(),
            full.find("# README.md").unwrap(),
            full.find("agents here").unwrap(),
            full.find("# Persona").unwrap(),
            full.find("Mode: workbench").unwrap(),
        );
        assert!(i < r && r < a && a < p && p < m, "{full}");
        // The README is cut at 4 KB (the temporary path may hold an R of its own).
        assert!(full.contains(&"R".repeat(4096)) && !full.contains(&"R".repeat(4097)));
        let tight = build(&parts, &cache, 4300);
        assert!(tight.starts_with("You are") && tight.ends_with(Mode::Workbench.instructions()));
        assert!(!tight.contains("# Persona"), "the persona goes first");
        assert!(tight.contains("# README.md"), "then the context");
        assert!(tight.chars().count() <= 4300);
        let tighter = build(&parts, &cache, 1000);
        assert!(
            tighter.starts_with("You are") && tighter.ends_with(Mode::Workbench.instructions())
        );
        assert!(tighter.chars().count() <= 1000);
    }

    #[test]
    fn an_untrusted_project_or_a_link_out_of_it_adds_nothing() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("id_rsa");
        std::fs::write(&secret, "-----BEGIN OPENSSH PRIVATE KEY-----").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&secret, dir.path().join("README.md")).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "agents here").unwrap();
        let cache = FileCache::default();
        let mut parts = Parts {
            project_root: dir.path(),
            mode: Mode::Workbench,
            persona: None,
            trusted: true,
        };
        let built = build(&parts, &cache, BUDGET_CHARS);
        assert!(
            !built.contains("PRIVATE KEY") && !built.contains("# README.md"),
            "{built}"
        );
        assert!(built.contains("agents here"), "{built}");
        parts.trusted = false;
        let built = build(&parts, &cache, BUDGET_CHARS);
        assert!(!built.contains("agents here"), "{built}");
    }
}
