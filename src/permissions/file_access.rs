//! Decisions for file tools: paths are judged by what they resolve to.

use std::path::Path;

use super::mode::PermissionMode;
use super::rules::RuleKind;
use super::rules::{Applicable, rule_clause};
use super::scope::Scope;
use super::{Decision, paths};

pub(crate) fn decide(
    scope: &Scope,
    applicable: &Applicable<'_>,
    tool: &str,
    path: &Path,
    write: bool,
) -> Decision {
    let shown = path.display();
    if paths::is_unc(path) {
        return Decision::Deny(format!(
            "`{shown}` is a network share (UNC path); ouro does not read or write network paths"
        ));
    }
    let lexical = paths::lexical(&scope.root, path);
    let resolved = paths::real(&scope.root, path);
    if paths::is_device(&lexical, &resolved) {
        return Decision::Deny(format!(
            "`{shown}` is a device file; ouro does not read or write devices"
        ));
    }
    let target = if lexical == resolved {
        format!("`{}`", scope.display_path(&lexical))
    } else {
        format!(
            "`{}` (which resolves to `{}`)",
            scope.display_path(&lexical),
            resolved.display()
        )
    };
    // A deny rule holds for the path as named and for where it really leads.
    let named_or_real = |r: &&_| {
        let r: &super::rules::CompiledRule = r;
        r.catches_path(&lexical) || r.catches_path(&resolved)
    };
    if let Some(rule) = applicable.of(RuleKind::Deny).find(named_or_real) {
        return Decision::Deny(format!("`{tool}` on {target} {}", rule_clause(rule)));
    }
    if scope.mode == PermissionMode::BypassPermissions {
        return Decision::Allow;
    }
    if write && scope.mode == PermissionMode::Plan {
        return Decision::Deny(format!(
            "`{tool}` would change {target}, and plan mode runs nothing that changes files; \
             present the plan instead"
        ));
    }
    if let Some(rule) = applicable.of(RuleKind::Ask).find(named_or_real) {
        return Decision::Ask(format!(
            "`{tool}` on {target} {}; it needs approval",
            rule_clause(rule)
        ));
    }
    let inside = scope.is_inside(&resolved);
    // Allow rules are judged on the real target, so a symlink cannot borrow a rule.
    let mut allowing = applicable
        .of(RuleKind::Allow)
        .filter(|r| r.matches_path(&resolved));
    if !write {
        if inside || allowing.next().is_some() {
            return Decision::Allow;
        }
        return Decision::Ask(format!(
            "`{tool}` would read {target}, outside the project; it needs approval"
        ));
    }
    if inside {
        let protected = is_protected(scope, &lexical) || is_protected(scope, &resolved);
        if is_hard_linked(&resolved) {
            return Decision::Ask(format!(
                "`{tool}` would change {target}, a file with other hard links that may be \
                 outside the project; it needs approval"
            ));
        }
        if protected {
            // Only a rule naming the file itself lets it through, not `Edit(src/**)`.
            if applicable
                .of(RuleKind::Allow)
                .any(|r| r.names_path(&resolved))
            {
                return Decision::Allow;
            }
            return Decision::Ask(format!(
                "`{tool}` would change {target}: git runs programs named in repository config \
                 and hooks, and ouro settings grant permissions, so this always needs approval"
            ));
        }
        if scope.mode == PermissionMode::AcceptEdits || allowing.next().is_some() {
            return Decision::Allow;
        }
        return Decision::Ask(format!("`{tool}` would change {target}; it needs approval"));
    }
    // Outside the project only a rule naming the path lets a write through.
    if allowing.any(|r| !r.is_whole_tool()) {
        return Decision::Allow;
    }
    Decision::Ask(format!(
        "`{tool}` would change {target}, outside the project; writes outside the project always need approval"
    ))
}

/// Files that decide what runs without asking: a `.git` directory's config and hooks (the
/// auto-allowed `git status` runs `core.fsmonitor`), the project's ouro settings, and the
/// `HEAD` and `config` that make any directory a repository git discovers (`git -C dir
/// status` runs the fsmonitor of a `dir/config` next to `dir/HEAD`).
fn is_protected(scope: &Scope, path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str());
    let beside_head = || path.with_file_name("HEAD").exists();
    path.components().any(|c| c.as_os_str() == ".git")
        || path.starts_with(scope.root.join(".ouro"))
        || name == Some("HEAD")
        || (name == Some("config") && beside_head())
}

/// A regular file with more than one name: writing it changes every other name too.
fn is_hard_linked(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.nlink() > 1)
}
