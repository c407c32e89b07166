//! The allow rule offered as "yes, and don't ask again".

use std::path::Path;

use super::bash::{self, Part};
use super::rules::program_text;
use super::scope::Scope;
use super::shell_access::auto_allowed;
use super::{Access, PermissionRequest, paths};

/// Programs whose second word commonly names a script or task rather than an action, so the
/// third word is part of what the user approved (`npm run test`).
const RUNNERS: &[&str] = &["run", "run-script", "exec", "x"];

pub(crate) fn rule_for(scope: &Scope, request: &PermissionRequest<'_>) -> String {
    match request.access {
        Access::Execute(command) => command_rule(scope, command),
        Access::Write(path) => format!("Edit({})", rule_path(scope, &resolved(scope, path))),
        Access::Read(path) => {
            let target = resolved(scope, path);
            if scope.is_inside(&target) {
                return format!("Read({})", rule_path(scope, &target));
            }
            let dir = if target.is_dir() {
                target.as_path()
            } else {
                target.parent().unwrap_or(Path::new("/"))
            };
            format!("Read({}/**)", rule_path(scope, dir).trim_end_matches('/'))
        }
        Access::None | Access::External => request.tool.to_string(),
    }
}

fn resolved(scope: &Scope, path: &Path) -> std::path::PathBuf {
    paths::resolve(&paths::lexical(&scope.root, path))
}

/// A path in rule syntax: relative inside the project, `~/...` under home, `//...` otherwise.
fn rule_path(scope: &Scope, path: &Path) -> String {
    if let Ok(rel) = path.strip_prefix(&scope.root)
        && !rel.as_os_str().is_empty()
    {
        return globset::escape(&rel.to_string_lossy());
    }
    if let Some(rel) = scope
        .home
        .as_deref()
        .and_then(|h| path.strip_prefix(h).ok())
    {
        return format!("~/{}", globset::escape(&rel.to_string_lossy()));
    }
    format!("/{}", globset::escape(&path.to_string_lossy()))
}

/// `Bash(<program> <subcommand>:*)` for the first part that needs approval; the exact command
/// when that would be a guess (findings, flags or paths in second place, several parts).
fn command_rule(scope: &Scope, command: &str) -> String {
    let exact = format!("Bash({})", command.trim());
    let analysis = bash::analyse(command);
    if !analysis.findings.is_empty() {
        return exact;
    }
    let Some(part) = analysis
        .parts
        .iter()
        .find(|p| !auto_allowed(scope, &scope.root, p))
    else {
        return exact;
    };
    match prefix_words(part) {
        Some(words) => format!("Bash({}:*)", words.join(" ")),
        None if analysis.parts.len() == 1 => exact,
        None => format!("Bash({})", part.source.trim()),
    }
}

fn prefix_words(part: &Part) -> Option<Vec<String>> {
    let words = part.core_words();
    let program = program_text(words.first()?)?;
    let sub = words
        .get(1)
        .filter(|w| w.literal && is_subcommand(&w.text))?;
    let mut out = vec![program.to_string(), sub.text.clone()];
    if RUNNERS.contains(&sub.text.as_str())
        && let Some(task) = words.get(2).filter(|w| w.literal && is_subcommand(&w.text))
    {
        out.push(task.text.clone());
    }
    Some(out)
}

fn is_subcommand(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
}
