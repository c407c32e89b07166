//! The rule engine: rules from every settings layer, the CLI and session grants, applied
//! under a permission mode.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{RwLock, RwLockReadGuard};

use super::error::PermissionError;
use super::mode::{PermissionMode, check_bypass_allowed};
use super::rules::{Anchor, CliPermissions, CompiledRule, RuleKind, SourcedRule, compile};
use super::{
    Access, Decision, PermissionPolicy, PermissionRequest, file_access, paths, shell_access,
    suggest,
};
use crate::settings::{LayeredSettings, SettingsSource};

/// Set to `1` to allow bypassPermissions when running as root.
pub const ROOT_BYPASS_ENV: &str = "OURO_ALLOW_ROOT_BYPASS";

pub struct PermissionEngine {
    pub(crate) root: PathBuf,
    pub(crate) home: Option<PathBuf>,
    pub(crate) mode: PermissionMode,
    pub(crate) additional_dirs: Vec<PathBuf>,
    rules: Vec<CompiledRule>,
    granted: RwLock<Vec<CompiledRule>>,
}

impl PermissionEngine {
    pub fn new(
        project_root: PathBuf,
        mode: PermissionMode,
        rules: Vec<SourcedRule>,
        additional_dirs: Vec<PathBuf>,
    ) -> Result<Self, PermissionError> {
        let home = dirs::home_dir().map(|h| paths::resolve(&paths::lexical(Path::new("/"), &h)));
        let root = paths::resolve(&paths::lexical(
            &std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            &project_root,
        ));
        let additional_dirs = additional_dirs
            .iter()
            .map(|d| paths::resolve(&paths::lexical(&root, d)))
            .collect();
        let anchor = Anchor {
            root: &root,
            home: home.as_deref(),
        };
        let rules = rules
            .iter()
            .map(|r| compile(r, &anchor))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PermissionEngine {
            root,
            home,
            mode,
            additional_dirs,
            rules,
            granted: RwLock::new(Vec::new()),
        })
    }

    /// Rules from every settings layer and the flags; the mode from `--permission-mode`, else
    /// the settings' `defaultMode`, else `default`.
    pub fn from_settings(
        project_root: &Path,
        settings: &LayeredSettings,
        cli: &CliPermissions,
    ) -> Result<Self, PermissionError> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let is_root = unsafe { libc::geteuid() } == 0;
        let root_override = std::env::var(ROOT_BYPASS_ENV).is_ok_and(|v| v == "1");
        Self::from_settings_as(project_root, settings, cli, is_root, root_override)
    }

    /// `from_settings` with the root check's inputs given, so it can be tested.
    pub fn from_settings_as(
        project_root: &Path,
        settings: &LayeredSettings,
        cli: &CliPermissions,
        is_root: bool,
        root_override: bool,
    ) -> Result<Self, PermissionError> {
        let mut rules = Vec::new();
        let mut settings_mode = None;
        let mut dirs = Vec::new();
        let home = dirs::home_dir();
        for (source, layer) in &settings.layers {
            let p = &layer.permissions;
            for (list, kind) in [
                (&p.allow, RuleKind::Allow),
                (&p.ask, RuleKind::Ask),
                (&p.deny, RuleKind::Deny),
            ] {
                rules.extend(
                    list.iter()
                        .map(|r| SourcedRule::new(r.clone(), kind, *source)),
                );
            }
            if let Some(mode) = &p.default_mode {
                let parsed = mode.parse::<PermissionMode>().map_err(|_| {
                    PermissionError::UnknownSettingsMode {
                        given: mode.clone(),
                        source_label: source.label().to_string(),
                    }
                })?;
                settings_mode = Some(parsed);
            }
            for dir in &p.additional_directories {
                dirs.push(
                    paths::expand_home(dir, home.as_deref()).unwrap_or_else(|| PathBuf::from(dir)),
                );
            }
        }
        rules.extend(cli.rules());
        let mode = cli.mode.or(settings_mode).unwrap_or_default();
        check_bypass_allowed(mode, is_root, root_override)?;
        Self::new(project_root.to_path_buf(), mode, rules, dirs)
    }

    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// The mode and every effective rule with its source, for `ouro permissions`.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Permission mode: {} ({})",
            self.mode,
            self.mode.summary()
        );
        let _ = writeln!(out, "Project root: {}", self.root.display());
        if !self.additional_dirs.is_empty() {
            let dirs: Vec<String> = self
                .additional_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            let _ = writeln!(out, "Additional directories: {}", dirs.join(", "));
        }
        let granted = self.grants();
        for kind in [RuleKind::Allow, RuleKind::Ask, RuleKind::Deny] {
            let _ = writeln!(out, "\n{} rules:", kind.as_str());
            let mut any = false;
            for rule in self
                .rules
                .iter()
                .chain(granted.iter())
                .filter(|r| r.kind == kind)
            {
                any = true;
                let _ = writeln!(out, "  {}  [{}]", rule.text, rule.source.label());
            }
            if !any {
                let _ = writeln!(out, "  (none)");
            }
        }
        out
    }

    fn grants(&self) -> RwLockReadGuard<'_, Vec<CompiledRule>> {
        match self.granted.read() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Whether a resolved path is inside the project root or an added directory.
    pub(crate) fn is_inside(&self, resolved: &Path) -> bool {
        resolved.starts_with(&self.root)
            || self.additional_dirs.iter().any(|d| resolved.starts_with(d))
    }

    /// A path for messages: relative to the project root when inside it.
    pub(crate) fn display_path(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
            _ => path.display().to_string(),
        }
    }
}

/// The rules that apply to one request, in force at the moment it is judged.
pub(crate) struct Applicable<'a> {
    /// Rules whose tool covers the request.
    pub rules: Vec<&'a CompiledRule>,
    /// Every rule, for commands checked against file rules.
    pub all: Vec<&'a CompiledRule>,
}

impl<'a> Applicable<'a> {
    pub fn of(&self, kind: RuleKind) -> impl Iterator<Item = &'a CompiledRule> + '_ {
        self.rules.iter().copied().filter(move |r| r.kind == kind)
    }
}

/// "is denied by the rule `Bash(rm:*)` from project settings (.ouro/settings.json)".
pub(crate) fn rule_clause(rule: &CompiledRule) -> String {
    let verb = match rule.kind {
        RuleKind::Allow => "allowed",
        RuleKind::Ask => "set to ask",
        RuleKind::Deny => "denied",
    };
    format!(
        "is {verb} by the rule `{}` from {}",
        rule.text,
        rule.source.label()
    )
}

/// Whatever would ask is denied in dontAsk mode.
pub(crate) fn settle(mode: PermissionMode, decision: Decision) -> Decision {
    match decision {
        Decision::Ask(reason) if mode == PermissionMode::DontAsk => Decision::Deny(format!(
            "{reason} (dontAsk mode denies whatever would need approval)"
        )),
        other => other,
    }
}

impl PermissionPolicy for PermissionEngine {
    fn decide(&self, request: &PermissionRequest<'_>) -> Decision {
        let granted = self.grants();
        let all: Vec<&CompiledRule> = self.rules.iter().chain(granted.iter()).collect();
        let applicable = Applicable {
            rules: all
                .iter()
                .copied()
                .filter(|r| r.covers_tool(request.tool, request.access))
                .collect(),
            all,
        };
        let decision = match request.access {
            Access::Read(path) => file_access::decide(self, &applicable, request.tool, path, false),
            Access::Write(path) => file_access::decide(self, &applicable, request.tool, path, true),
            Access::Execute(command) => {
                let base = request.cwd.unwrap_or(&self.root);
                shell_access::decide(self, base, &applicable, command)
            }
            Access::None => self.decide_plain_tool(&applicable, request.tool),
        };
        settle(self.mode, decision)
    }

    fn suggest_rule(&self, request: &PermissionRequest<'_>) -> String {
        suggest::rule_for(self, request)
    }

    fn grant(&self, rule: &str) {
        let anchor = Anchor {
            root: &self.root,
            home: self.home.as_deref(),
        };
        let sourced = SourcedRule::new(rule, RuleKind::Allow, SettingsSource::Session);
        match compile(&sourced, &anchor) {
            Ok(compiled) => match self.granted.write() {
                Ok(mut g) => g.push(compiled),
                Err(poisoned) => poisoned.into_inner().push(compiled),
            },
            Err(e) => tracing::warn!("ignoring a session grant that is not a valid rule: {e}"),
        }
    }
}

impl PermissionEngine {
    /// A tool that touches nothing outside ouro's own state: only rules naming it matter.
    fn decide_plain_tool(&self, applicable: &Applicable<'_>, tool: &str) -> Decision {
        if let Some(rule) = applicable.of(RuleKind::Deny).find(|r| r.is_whole_tool()) {
            return Decision::Deny(format!("`{tool}` {}", rule_clause(rule)));
        }
        if self.mode == PermissionMode::BypassPermissions {
            return Decision::Allow;
        }
        if let Some(rule) = applicable.of(RuleKind::Ask).find(|r| r.is_whole_tool()) {
            return Decision::Ask(format!("`{tool}` {}; it needs approval", rule_clause(rule)));
        }
        Decision::Allow
    }
}
