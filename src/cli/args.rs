//! Command-line flags, spelled as Claude Code spells them.

use clap::{Parser, Subcommand};

use super::print::{InputFormat, OutputFormat};
use crate::api::reasoning::{Effort, ThinkingChoice};
use crate::app::Options;
use crate::permissions::{CliPermissions, PermissionMode};

#[derive(Debug, Parser)]
#[command(
    name = "ouro",
    version,
    about = "A fast, transparent coding agent for your terminal.",
    args_conflicts_with_subcommands = true
)]
pub struct Args {
    /// The prompt. Without --print, opens the interactive session with it.
    pub prompt: Option<String>,

    /// Answer one prompt and exit (the prompt is the argument, or stdin).
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    #[arg(long, value_enum, default_value = "text")]
    pub output_format: OutputFormat,

    /// `stream-json`: read one user message per JSON line on stdin, answering each in turn.
    #[arg(long, value_enum, default_value = "text")]
    pub input_format: InputFormat,

    /// Model id, or opus, sonnet or haiku for the newest of each.
    #[arg(long)]
    pub model: Option<String>,

    /// How much effort the model spends: low, medium, high or max (models that take it).
    #[arg(long, value_name = "LEVEL")]
    pub effort: Option<Effort>,

    /// Move to this model once the model stays overloaded (three 529 answers in a row).
    #[arg(long, value_name = "MODEL")]
    pub fallback_model: Option<String>,

    /// Extended thinking: off, adaptive, auto (the default) or a token budget.
    #[arg(long, value_name = "MODE")]
    pub thinking: Option<ThinkingChoice>,

    /// Run on this brain, e.g. ouro@anthropic/claude/sonnet/v4.5 (`ouro brains` lists them).
    #[arg(long, value_name = "SLUG", conflicts_with = "model")]
    pub brain: Option<String>,

    /// Maximum API calls for this prompt.
    #[arg(long)]
    pub max_turns: Option<u32>,

    /// Stop once this prompt has cost this many US dollars.
    #[arg(long)]
    pub max_budget_usd: Option<f64>,

    /// Stop once this prompt has produced this many output tokens.
    #[arg(long)]
    pub max_output_tokens: Option<u64>,

    /// Retries for overloaded or failing API requests (default 10).
    #[arg(long)]
    pub max_retries: Option<u32>,

    /// Show each step on stderr (text output).
    #[arg(long)]
    pub verbose: bool,

    /// Resume the session with this id.
    #[arg(short = 'r', long)]
    pub resume: Option<String>,

    /// Continue the most recent session in this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_last: bool,

    #[command(flatten)]
    pub permissions: PermissionFlags,

    /// Trust this directory's own settings (allow rules, hooks, added directories) and
    /// instruction files for this run, without being asked.
    #[arg(long)]
    pub trust_project: bool,

    /// Only offer these tools to the model (comma or space separated).
    #[arg(long, value_name = "NAMES")]
    pub tools: Vec<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scripted example against the built-in mock API (no key needed).
    #[cfg(feature = "mock")]
    Demo,
    /// Serve the scriptable mock Messages API on loopback.
    #[cfg(feature = "mock")]
    MockServer {
        /// Scenario JSON file.
        #[arg(long)]
        scenario: std::path::PathBuf,
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// List the effective permission rules and where each came from.
    Permissions {
        #[command(flatten)]
        flags: PermissionFlags,
        /// Count this directory's own settings as trusted.
        #[arg(long)]
        trust_project: bool,
    },
    /// Measure tool throughput end to end against the built-in mock API.
    #[cfg(feature = "mock")]
    Bench(crate::bench::BenchArgs),
    /// List the brain slugs --brain takes, with their models and prices.
    Brains,
    /// The OS sandbox Bash runs in.
    Sandbox {
        #[command(subcommand)]
        action: SandboxAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum SandboxAction {
    /// Show what the kernel supports and the sandbox a Bash call here would get.
    Check,
}

/// The permission flags, shared by sessions and `ouro permissions`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PermissionFlags {
    /// Allow rules, e.g. "Bash(git status:*),Edit(src/**)"; repeat the flag or separate rules with commas or spaces.
    #[arg(long = "allowedTools", alias = "allowed-tools", value_name = "RULES")]
    pub allowed_tools: Vec<String>,

    /// Deny rules, same syntax as --allowedTools.
    #[arg(
        long = "disallowedTools",
        alias = "disallowed-tools",
        value_name = "RULES"
    )]
    pub disallowed_tools: Vec<String>,

    /// default, acceptEdits, plan, dontAsk or bypassPermissions.
    #[arg(long)]
    pub permission_mode: Option<String>,
}

impl PermissionFlags {
    /// The flags as the permission engine takes them.
    pub fn cli_permissions(&self) -> Result<CliPermissions, String> {
        let mode = self
            .permission_mode
            .as_deref()
            .map(str::parse::<PermissionMode>)
            .transpose()
            .map_err(|e| e.to_string())?;
        Ok(CliPermissions {
            allowed: self.allowed_tools.clone(),
            disallowed: self.disallowed_tools.clone(),
            mode,
        })
    }
}

impl Args {
    /// The session these flags ask for (persisted to a transcript).
    pub fn options(&self) -> anyhow::Result<Options> {
        Ok(Options {
            model: self.model_choice()?,
            max_turns: self.max_turns,
            max_budget_usd: self.max_budget_usd,
            max_output_tokens: self.max_output_tokens,
            max_retries: self.max_retries,
            permissions: self
                .permissions
                .cli_permissions()
                .map_err(anyhow::Error::msg)?,
            tools: self.tool_names(),
            resume: self.resume.clone(),
            continue_last: self.continue_last,
            persist: true,
            trust_project: self.trust_project,
            effort: self.effort,
            thinking: self.thinking,
            fallback_model: self.fallback_model.clone(),
            auto_compact_threshold: None,
        })
    }

    /// The model to run: `--model`, or the one an `ouro@…` `--brain` slug names.
    pub fn model_choice(&self) -> Result<Option<String>, crate::brain::BrainError> {
        match &self.brain {
            Some(slug) => crate::brain::catalogue::ouro_model(slug).map(|m| Some(m.to_string())),
            None => Ok(self.model.clone()),
        }
    }

    /// `--tools`, split on commas and spaces.
    pub fn tool_names(&self) -> Option<Vec<String>> {
        if self.tools.is_empty() {
            return None;
        }
        Some(
            self.tools
                .iter()
                .flat_map(|t| t.split([',', ' ']))
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_benchmark_session_flags_parse_to_its_session_options() {
        let mut argv = vec!["ouro".to_string(), "-p".to_string()];
        argv.extend(crate::bench::run::session_flags());
        let args = Args::try_parse_from(argv).unwrap();
        assert_eq!(
            args.permissions.permission_mode.as_deref(),
            Some("acceptEdits")
        );
        assert_eq!(
            args.permissions.allowed_tools,
            crate::bench::scenario::BASH_ALLOW_RULES
        );
        assert_eq!(args.max_retries, Some(0));
        let options = args.options().unwrap();
        let expected = crate::bench::run::session_options();
        assert_eq!(options.permissions, expected.permissions);
        assert_eq!(options.max_retries, expected.max_retries);
    }
}
