//! The rule engine: rules from every settings layer, the CLI and session grants, applied
//! under a permission mode.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use super::denials::FileDenials;
use super::dirs::AddedDirs;
use super::error::PermissionError;
use super::mode::PermissionMode;
use super::rules::{
    Applicable, CliPermissions, CompiledRule, RuleKind, SourcedRule, compile, rule_clause,
};
use super::scope::Scope;
use super::{
    Access, Confinement, Decision, PermissionPolicy, PermissionRequest, file_access, paths,
    shell_access, suggest,
};
use crate::settings::{LayeredSettings, SettingsSource};

/// Set to `1` to allow bypassPermissions when running as root.
pub const ROOT_BYPASS_ENV: &str = "OURO_ALLOW_ROOT_BYPASS";

/// Refuses a whole command before any rule, mode or hook is consulted: the reason told to the
/// model, or `None` to let the rules judge it (an `--agent` definition's `denied_commands`).
pub type CommandGuard = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

pub struct PermissionEngine {
    scope: Scope,
    rules: Vec<CompiledRule>,
    granted: RwLock<Vec<CompiledRule>>,
    guard: RwLock<Option<CommandGuard>>,
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
        let additional_dirs = AddedDirs::new(
            additional_dirs
                .iter()
                .map(|d| paths::resolve(&paths::lexical(&root, d)))
                .collect(),
        );
        let scope = Scope::new(root, home, mode, additional_dirs);
        let rules = rules
            .iter()
            .map(|r| compile(r, &scope.anchor()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PermissionEngine {
            scope,
            rules,
            granted: RwLock::new(Vec::new()),
            guard: RwLock::new(None),
        })
    }

    /// Rules from every settings layer and the flags; the mode from `--permission-mode`, else
    /// the settings' `defaultMode`, else `default`.
    pub fn from_settings(
        project_root: &Path,
        settings: &LayeredSettings,
        cli: &CliPermissions,
    ) -> Result<Self, PermissionError> {
        let (is_root, root_override) = root_facts();
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
        let protected: Vec<String> = settings
            .layers
            .iter()
            .flat_map(|(_, layer)| layer.permissions.protected_paths.iter().cloned())
            .collect();
        super::file_access::protect_also(project_root, &protected);
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
        dirs.extend(cli.add_dirs.iter().map(|d| project_root.join(d)));
        let mode = cli.mode.or(settings_mode).unwrap_or_default();
        check_bypass_allowed(mode, is_root, root_override)?;
        Self::new(project_root.to_path_buf(), mode, rules, dirs)
    }

    pub fn mode(&self) -> PermissionMode {
        self.scope.mode()
    }

    /// Puts `guard` in front of every command: what it refuses is denied in every mode
    /// (bypassPermissions included) and whatever a hook or a rule says.
    pub fn guard_commands(&self, guard: CommandGuard) {
        if let Ok(mut slot) = self.guard.write() {
            *slot = Some(guard);
        }
    }

    fn guarded(&self, request: &PermissionRequest<'_>) -> Option<String> {
        let Access::Execute(command) = request.access else {
            return None;
        };
        let guard = self.guard.read().ok()?.clone()?;
        guard(command)
    }

    /// Switches the mode for the rest of the session (Shift+Tab, the SDK's
    /// `set_permission_mode`). bypassPermissions is refused as root, as at startup.
    pub fn set_mode(&self, mode: PermissionMode) -> Result<(), PermissionError> {
        let (is_root, root_override) = root_facts();
        check_bypass_allowed(mode, is_root, root_override)?;
        self.scope.set_mode(mode);
        Ok(())
    }

    /// Lets the session work in one more directory (`/add-dir`), relative to the project root
    /// unless absolute. `Ok(None)` when it was already inside the session's directories.
    pub fn add_dir(&self, dir: &Path) -> Result<Option<PathBuf>, PermissionError> {
        let resolved = paths::resolve(&paths::lexical(&self.scope.root, dir));
        if !resolved.is_dir() {
            return Err(PermissionError::NotADirectory(resolved));
        }
        if resolved.starts_with(&self.scope.root)
            || !self.scope.additional_dirs.add(resolved.clone())
        {
            return Ok(None);
        }
        Ok(Some(resolved))
    }

    /// The deny rules on reading, for tools that walk directories.
    pub fn file_denials(&self) -> FileDenials {
        FileDenials::from_rules(self.rules.iter())
    }

    /// The directories besides the project root the session may work in, resolved; shared,
    /// so what `/add-dir` adds later shows in every holder.
    pub fn additional_dirs(&self) -> AddedDirs {
        self.scope.additional_dirs.clone()
    }

    /// The mode and every effective rule with its source, for `ouro permissions`.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Permission mode: {} ({})",
            self.scope.mode(),
            self.scope.mode().summary()
        );
        let _ = writeln!(out, "Project root: {}", self.scope.root.display());
        if !self.scope.additional_dirs.is_empty() {
            let dirs: Vec<String> = self
                .scope
                .additional_dirs
                .list()
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
    fn mode(&self) -> PermissionMode {
        PermissionEngine::mode(self)
    }

    fn decide(&self, request: &PermissionRequest<'_>) -> Decision {
        if let Some(refusal) = self.guarded(request) {
            return Decision::Deny(refusal);
        }
        let granted = self.grants();
        let all: Vec<&CompiledRule> = self.rules.iter().chain(granted.iter()).collect();
        self.decide_under(&Applicable::to(request, all), request)
    }

    /// In auto mode, a call that would ask goes to the reviewer unless the user must answer
    /// it: an ask rule catches it (judged again with ask rules turned into deny rules, which
    /// hold everywhere, it comes out denied), or it writes a file that configures what runs.
    fn reviewable(&self, request: &PermissionRequest<'_>) -> bool {
        if self.scope.mode() != PermissionMode::Auto {
            return false;
        }
        if let Access::Write(path) = request.access {
            let lexical = paths::lexical(&self.scope.root, path);
            let real = paths::real(&self.scope.root, path);
            if file_access::protection(&lexical).is_some()
                || file_access::protection(&real).is_some()
                || !self.scope.is_inside(&real)
            {
                return false;
            }
        }
        let granted = self.grants();
        let firm: Vec<CompiledRule> = self
            .rules
            .iter()
            .chain(granted.iter())
            .map(|rule| {
                let mut rule = rule.clone();
                if rule.kind == RuleKind::Ask {
                    rule.kind = RuleKind::Deny;
                }
                rule
            })
            .collect();
        let applicable = Applicable::to(request, firm.iter().collect());
        if let Access::Execute(command) = request.access {
            let base = request.cwd.unwrap_or(&self.scope.root);
            let analysis = super::bash::analyse(command);
            // A command that could hide a denied or asked-about one behind a wrapper or a
            // string of code is the user's to judge, as is one touching a protected file.
            if shell_access::hides_denied(&applicable, &analysis).is_some()
                || shell_access::touches_protected(&self.scope, base, &analysis)
            {
                return false;
            }
        }
        !matches!(self.decide_under(&applicable, request), Decision::Deny(_))
    }

    fn suggest_rule(&self, request: &PermissionRequest<'_>) -> String {
        suggest::rule_for(&self.scope, request)
    }

    fn confinement(&self, request: &PermissionRequest<'_>) -> Confinement {
        if self.scope.mode() == PermissionMode::BypassPermissions {
            return Confinement::Unconfined;
        }
        let Access::Execute(command) = request.access else {
            return Confinement::Approved;
        };
        // Judged again with every allow rule set aside: what passes now passed on its own.
        let granted = self.grants();
        let all: Vec<&CompiledRule> = self
            .rules
            .iter()
            .chain(granted.iter())
            .filter(|r| r.kind != RuleKind::Allow)
            .collect();
        let applicable = Applicable::to(request, all);
        let base = request.cwd.unwrap_or(&self.scope.root);
        match shell_access::decide(&self.scope, base, &applicable, command) {
            Decision::Allow => Confinement::ReadOnly,
            _ => Confinement::Approved,
        }
    }

    fn grant(&self, rule: &str) {
        let sourced = SourcedRule::new(rule, RuleKind::Allow, SettingsSource::Session);
        match compile(&sourced, &self.scope.anchor()) {
            Ok(compiled) => match self.granted.write() {
                Ok(mut g) => g.push(compiled),
                Err(poisoned) => poisoned.into_inner().push(compiled),
            },
            Err(e) => tracing::warn!("ignoring a session grant that is not a valid rule: {e}"),
        }
    }
}

/// Whether ouro runs as root, and whether `OURO_ALLOW_ROOT_BYPASS=1` says that is meant.
fn root_facts() -> (bool, bool) {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let is_root = unsafe { libc::geteuid() } == 0;
    let root_override = std::env::var(ROOT_BYPASS_ENV).is_ok_and(|v| v == "1");
    (is_root, root_override)
}

/// bypassPermissions as root puts the whole machine in the model's hands, so it needs an
/// explicit override (`OURO_ALLOW_ROOT_BYPASS=1`).
pub fn check_bypass_allowed(
    mode: PermissionMode,
    is_root: bool,
    root_override: bool,
) -> Result<(), PermissionError> {
    if mode == PermissionMode::BypassPermissions && is_root && !root_override {
        return Err(PermissionError::RootBypass);
    }
    Ok(())
}

impl PermissionEngine {
    fn decide_under(
        &self,
        applicable: &Applicable<'_>,
        request: &PermissionRequest<'_>,
    ) -> Decision {
        let decision = match request.access {
            Access::Read(path) => {
                file_access::decide(&self.scope, applicable, request.tool, path, false)
            }
            Access::Write(path) => {
                file_access::decide(&self.scope, applicable, request.tool, path, true)
            }
            Access::Execute(command) => {
                let base = request.cwd.unwrap_or(&self.scope.root);
                shell_access::decide(&self.scope, base, applicable, command)
            }
            // A tool that touches nothing outside ouro's own state runs unless a rule says no.
            Access::None => self.decide_by_tool_rules(applicable, request.tool, Decision::Allow),
            Access::External => self.decide_by_tool_rules(
                applicable,
                request.tool,
                Decision::Ask(format!(
                    "`{}` is a tool of an MCP server, outside ouro; it needs approval",
                    request.tool
                )),
            ),
        };
        settle(self.scope.mode(), decision)
    }

    /// A tool judged by the rules naming it alone: deny rules first, then the mode, ask
    /// rules, allow rules; `unruled` when no rule names it.
    fn decide_by_tool_rules(
        &self,
        applicable: &Applicable<'_>,
        tool: &str,
        unruled: Decision,
    ) -> Decision {
        if let Some(rule) = applicable.of(RuleKind::Deny).find(|r| r.is_whole_tool()) {
            return Decision::Deny(format!("`{tool}` {}", rule_clause(rule)));
        }
        if self.scope.mode() == PermissionMode::BypassPermissions {
            return Decision::Allow;
        }
        if let Some(rule) = applicable.of(RuleKind::Ask).find(|r| r.is_whole_tool()) {
            return Decision::Ask(format!("`{tool}` {}; it needs approval", rule_clause(rule)));
        }
        if applicable.of(RuleKind::Allow).any(|r| r.is_whole_tool()) {
            return Decision::Allow;
        }
        unruled
    }
}
