//! `--agent NAME` (or the `agent` setting): the session's main thread runs as that agent
//! definition, as Claude Code's does — its prompt as the system prompt, its tools, model,
//! effort, permission mode, turn and cost limits — and its Bash command patterns judge every
//! Bash call: a denied one is refused by the permission engine itself, in every mode and
//! whatever a hook says; then an allowed one runs unasked; anything else is asked as usual.
//! Flags the user gave win over the definition.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::{AppError, Options};
use crate::agents::instance::InstanceConfig;
use crate::agents::spec::{CommandRules, CommandVerdict};
use crate::exec::{AskAnswer, AskRequest, Asker};
use crate::permissions::CommandGuard;

/// A session's options as an agent definition makes them.
pub(super) struct Applied {
    pub options: Options,
    /// Runs the definition's `allowed_commands` unasked (the given asker when it has none).
    pub asker: Arc<dyn Asker>,
    /// Refuses what its `denied_commands` match, put in front of every rule, mode and hook.
    pub guard: Option<CommandGuard>,
}

/// `options` with the definition of agent `name` (named by `given_by`: the flag or the
/// setting) applied.
pub(super) fn apply(
    options: &Options,
    name: &str,
    given_by: &str,
    cwd: &Path,
    asker: Arc<dyn Asker>,
) -> Result<Applied, AppError> {
    let invalid = |reason: String| AppError::Agent(format!("{given_by}: {reason}"));
    let definitions = super::agent_definitions(cwd);
    let known: Vec<String> = definitions
        .iter()
        .flatten()
        .map(|p| p.spec.name.clone())
        .collect();
    let Some(parsed) = definitions
        .into_iter()
        .flatten()
        .find(|p| p.spec.name == name)
    else {
        return Err(invalid(if known.is_empty() {
            format!(
                "there is no agent named {name:?}: no agent definitions were found (.claude/agents/, .ouro/agents/, ~/.claude/agents/, ~/.ouro/agents/; a project's count once it is trusted)"
            )
        } else {
            format!(
                "there is no agent named {name:?}; the agents are: {}",
                known.join(", ")
            )
        }));
    };
    let spec = parsed.spec;
    let config = InstanceConfig::from_spec(&spec, name);
    let rules = config
        .command_rules()
        .map_err(|e| invalid(format!("{}: {e}", spec.source.display())))?;
    let mut out = options.clone();
    if out.system_prompt.is_none() && !spec.prompt.trim().is_empty() {
        out.system_prompt = Some(spec.prompt.clone());
    }
    out.tools = match (out.tools.take(), config.tools) {
        (Some(given), Some(own)) => Some(given.into_iter().filter(|t| own.contains(t)).collect()),
        (given, own) => given.or(own),
    };
    out.permissions.allowed.extend(config.allowed_rules);
    out.permissions.disallowed.extend(config.disallowed_tools);
    if out.model.is_none() {
        out.model = config
            .model
            .filter(|m| m != "inherit")
            .map(|m| crate::api::models::resolve(&m));
    }
    if out.effort.is_none()
        && let Some(effort) = &spec.effort
    {
        out.effort = Some(effort.parse().map_err(|reason: String| {
            invalid(format!("{}: effort: {reason}", spec.source.display()))
        })?);
    }
    if out.permissions.mode.is_none()
        && let Some(mode) = &config.permission_mode
    {
        out.permissions.mode =
            Some(mode.parse().map_err(|e: crate::permissions::UnknownMode| {
                invalid(format!("{}: permissionMode: {e}", spec.source.display()))
            })?);
    }
    out.max_turns = out.max_turns.or(config.max_turns);
    out.max_budget_usd = out.max_budget_usd.or(config.max_cost_usd);
    if rules.is_empty() {
        return Ok(Applied {
            options: out,
            asker,
            guard: None,
        });
    }
    // Every Bash call is asked, so that the allowed patterns see each one.
    out.permissions.ask.push("Bash".into());
    let rules = Arc::new(rules);
    let denied = rules.clone();
    Ok(Applied {
        options: out,
        asker: Arc::new(Patterns {
            rules,
            inner: asker,
        }),
        guard: Some(Arc::new(move |command: &str| match denied.judge(command) {
            CommandVerdict::Denied { pattern } => Some(CommandRules::refusal(&pattern)),
            _ => None,
        })),
    })
}

/// An asker that runs what the agent's allowed patterns match without asking (what its denied
/// ones match never reaches an asker: the command guard refuses it first).
struct Patterns {
    rules: Arc<CommandRules>,
    inner: Arc<dyn Asker>,
}

impl Asker for Patterns {
    fn ask(&self, request: AskRequest) -> BoxFuture<'_, AskAnswer> {
        match self.rules.judge_call(&request.tool, &request.input) {
            CommandVerdict::Allowed { .. } => Box::pin(async { AskAnswer::AllowOnce }),
            _ => self.inner.ask(request),
        }
    }
}
