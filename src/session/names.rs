//! Session names (Claude Code's `--name` and `/rename`): `names.json` beside this directory's
//! transcripts, id to name, so a transcript stays exactly what the conversation wrote and a
//! rename never rewrites it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The names of one directory's sessions.
pub struct Names {
    path: PathBuf,
}

impl Names {
    /// The names of the sessions of working directory `cwd`.
    pub fn of(cwd: &Path) -> Option<Names> {
        super::project_dir(cwd).map(|dir| Names::at(&dir))
    }

    /// The names kept in the sessions folder `dir`.
    pub fn at(dir: &Path) -> Names {
        Names {
            path: dir.join("names.json"),
        }
    }

    /// Every named session's name, by id.
    pub fn all(&self) -> BTreeMap<String, String> {
        crate::sys::atomic::read_json(&self.path)
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Names session `id` (a blank name removes its name).
    pub fn set(&self, id: &str, name: &str) -> std::io::Result<()> {
        check(name).map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))?;
        let mut names = self.all();
        match name.trim() {
            "" => names.remove(id),
            name => names.insert(id.to_string(), name.to_string()),
        };
        let text = serde_json::to_vec_pretty(&names).unwrap_or_default();
        crate::sys::atomic::write_private(&self.path, &text)
    }

    /// The first of `ids` (most recently used first) named `name`.
    pub fn find<'a>(&self, name: &str, ids: impl IntoIterator<Item = &'a str>) -> Option<String> {
        let names = self.all();
        ids.into_iter()
            .find(|id| names.get(*id).is_some_and(|n| n == name))
            .map(str::to_string)
    }
}

/// How long a name may be: what a picker row shows.
const MAX_NAME: usize = 100;

/// Why `name` cannot name a session (a control character would redraw the terminal of
/// whoever lists the sessions), if it cannot.
pub fn check(name: &str) -> Result<(), String> {
    if name.chars().any(char::is_control) {
        return Err("a session name has no control characters (tabs, line breaks, escapes)".into());
    }
    if name.trim().chars().count() > MAX_NAME {
        return Err(format!("a session name is at most {MAX_NAME} characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_finds_its_newest_session_and_renames_replace_it() {
        let dir = tempfile::tempdir().unwrap();
        let names = Names::at(dir.path());
        names.set("a1", "feature-x").unwrap();
        names.set("b2", "feature-x").unwrap();
        assert_eq!(names.find("feature-x", ["b2", "a1"]).as_deref(), Some("b2"));
        assert_eq!(names.all().get("a1").map(String::as_str), Some("feature-x"));
        names.set("b2", "other").unwrap();
        assert_eq!(names.find("feature-x", ["b2", "a1"]).as_deref(), Some("a1"));
        names.set("a1", " ").unwrap();
        assert_eq!(names.all().get("a1"), None);
        for bad in ["a\x1b[2Jb", "tab\there", "line\nbreak", &"x".repeat(101)] {
            assert!(names.set("c3", bad).is_err(), "{bad:?}");
        }
        assert_eq!(names.all().get("c3"), None);
    }
}
