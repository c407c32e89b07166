//! `@path` in a message attaches that file (or a directory's listing), as in Claude Code: the
//! model gets the content with the message instead of having to ask for it.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

use crate::permissions::{Access, Decision, PermissionPolicy, PermissionRequest};

/// A mentioned file larger than this is not attached (the model can Read it in parts).
const MAX_ATTACHED_BYTES: u64 = 256 * 1024;
/// Entries listed for a mentioned directory.
const MAX_LISTED: usize = 200;

/// The mentions in `text` that name existing files or directories under `cwd`, each with what
/// is attached for it (or why nothing is). Only what a Read call would get without asking is
/// attached: a mention outside the project, or one a rule denies, is not read.
pub(super) fn attachments(text: &str, cwd: &Path, policy: &dyn PermissionPolicy) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split_whitespace() {
        let Some(mention) = word.strip_prefix('@') else {
            continue;
        };
        let mention = mention.trim_end_matches([',', '.', ';', ':', '!', '?', ')', '"', '\'']);
        if mention.is_empty() {
            continue;
        }
        let path = cwd.join(mention);
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let access = Access::Read(path.clone());
        let request = PermissionRequest {
            tool: "Read",
            access: &access,
            read_only: true,
            cwd: None,
        };
        if !matches!(policy.decide(&request), Decision::Allow) {
            out.push(format!(
                "<file path=\"{mention}\">(not attached: reading it needs permission; ask the assistant to Read it)</file>"
            ));
        } else if meta.is_dir() {
            out.push(listing(mention, &path));
        } else if !meta.is_file() {
            continue;
        } else if meta.len() > MAX_ATTACHED_BYTES {
            out.push(format!(
                "<file path=\"{mention}\">(not attached: {} bytes; Read it in parts)</file>",
                meta.len()
            ));
        } else if let Some(content) = read_capped(&path) {
            out.push(format!("<file path=\"{mention}\">\n{content}\n</file>"));
        }
    }
    out.dedup();
    out
}

/// A file's text, never more than the cap (its size may change after it was looked at).
fn read_capped(path: &Path) -> Option<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_ATTACHED_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    String::from_utf8(bytes).ok()
}

fn listing(mention: &str, dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if e.path().is_dir() {
                        format!("{name}/")
                    } else {
                        name
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut out = format!("<directory path=\"{mention}\">\n");
    for name in names.iter().take(MAX_LISTED) {
        let _ = writeln!(out, "{name}");
    }
    if names.len() > MAX_LISTED {
        let _ = writeln!(out, "… and {} more", names.len() - MAX_LISTED);
    }
    out.push_str("</directory>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentioned_files_and_directories_are_attached() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "fn a() {}").unwrap();
        std::fs::write(dir.path().join("big.txt"), vec![b'x'; 300 * 1024]).unwrap();
        let root = dir.path().canonicalize().unwrap();
        let engine = crate::permissions::PermissionEngine::new(
            root.clone(),
            crate::permissions::PermissionMode::Default,
            vec![crate::permissions::SourcedRule::new(
                "Read(secret/**)",
                crate::permissions::RuleKind::Deny,
                crate::settings::SettingsSource::Cli,
            )],
            Vec::new(),
        )
        .unwrap();
        std::fs::create_dir(root.join("secret")).unwrap();
        std::fs::write(root.join("secret/key"), "hunter2").unwrap();
        let got = attachments(
            "look at @src/a.rs, then @src and @big.txt; mail me@example.com @missing.rs @secret/key @/etc/hostname",
            &root,
            &engine,
        );
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(got[0], "<file path=\"src/a.rs\">\nfn a() {}\n</file>");
        assert_eq!(got[1], "<directory path=\"src\">\na.rs\n</directory>");
        assert!(got[2].contains("not attached: 307200 bytes"));
        assert!(got[3].contains("needs permission") && !got[3].contains("hunter2"));
        assert!(
            got[4].contains("needs permission"),
            "outside the project: {got:?}"
        );
    }
}
