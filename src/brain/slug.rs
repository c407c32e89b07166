//! Brain slugs: `<binary>@<supplier>/<atom>`, e.g. `claude@anthropic/claude/opus/v4.5`.
//!
//! The supplier is the text between `@` and the next `/`; the atom is everything after that
//! `/` and names a model line, a family, and optionally a version (without one, the family's
//! newest model). Any slug the table does not know is an error that lists the valid ones, so a
//! typo is fixed by reading the message.

use std::fmt;

use crate::api::types::Usage;

use super::Verb;
use super::table::{self, BINARIES, MODEL_LINE, ModelEntry, SUPPLIERS};

/// The executable a brain runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binary {
    /// The `claude` CLI (Claude Code), driven as a child process.
    Claude,
    /// ouro itself: its engine in-process, or its REPL in a terminal.
    Ouro,
}

impl Binary {
    pub fn name(self) -> &'static str {
        match self {
            Binary::Claude => "claude",
            Binary::Ouro => "ouro",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Supplier {
    Anthropic,
}

impl Supplier {
    pub fn name(self) -> &'static str {
        match self {
            Supplier::Anthropic => "anthropic",
        }
    }
}

/// A resolved slug: everything needed to start a brain.
#[derive(Debug, Clone, PartialEq)]
pub struct BrainSpec {
    /// The slug as written, including a family alias if one was used.
    pub slug: String,
    pub binary: Binary,
    pub supplier: Supplier,
    pub model: &'static ModelEntry,
}

impl BrainSpec {
    pub fn model_id(&self) -> &'static str {
        self.model.model_id
    }

    pub fn tools(&self, verb: Verb) -> &'static [&'static str] {
        table::tools_for(verb)
    }

    /// USD cost of `usage` at this model's prices.
    pub fn cost(&self, usage: &Usage) -> f64 {
        self.model.cost(usage)
    }
}

/// A slug that does not name a brain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlugError {
    pub slug: String,
    pub problem: String,
}

impl fmt::Display for SlugError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not a brain slug: {}. Use one of: {}",
            self.slug,
            self.problem,
            list_slugs().join(", ")
        )
    }
}

impl std::error::Error for SlugError {}

/// Every slug the table accepts, for `ouro brains` and error messages.
pub fn list_slugs() -> Vec<String> {
    let atoms = table::atoms();
    let mut out = Vec::new();
    for binary in BINARIES {
        for supplier in SUPPLIERS {
            for atom in &atoms {
                out.push(format!("{binary}@{supplier}/{atom}"));
            }
        }
    }
    out
}

/// The slug of `binary` on the model an agent file or a `--model` flag names: a family
/// (`sonnet`, `opus`, `haiku`) or a model id (`claude-opus-4-5`); `None` for a model the table
/// does not know.
pub fn for_model(binary: &str, model: &str) -> Option<String> {
    let atoms = table::atoms();
    let family = format!("{MODEL_LINE}/{model}");
    if atoms.contains(&family) {
        return Some(format!("{binary}@{}/{family}", SUPPLIERS[0]));
    }
    atoms
        .into_iter()
        .filter(|atom| atom.matches('/').count() == 2)
        .map(|atom| format!("{binary}@{}/{atom}", SUPPLIERS[0]))
        .find(|slug| parse(slug).is_ok_and(|spec| spec.model_id() == model))
}

/// The brain a foundry agent runs on: `flag` (`--brain`), else its definition's `engine.brain`,
/// else ouro's own on its model, else ouro on Sonnet. `Err`: the model the table does not know.
pub fn for_agent(
    config: &crate::agents::instance::InstanceConfig,
    flag: Option<&str>,
) -> Result<String, String> {
    if let Some(slug) = flag.or(config.brain.as_deref()) {
        return Ok(slug.to_string());
    }
    match &config.model {
        Some(model) => for_model("ouro", model).ok_or_else(|| model.clone()),
        None => Ok("ouro@anthropic/claude/sonnet".into()),
    }
}

/// Resolves a slug against the config table.
pub fn parse(slug: &str) -> Result<BrainSpec, SlugError> {
    let err = |problem: String| SlugError {
        slug: slug.to_string(),
        problem,
    };
    let (binary, rest) = slug.split_once('@').ok_or_else(|| {
        err(
            "it has no '@' between the binary and the supplier (write <binary>@<supplier>/<atom>)"
                .into(),
        )
    })?;
    let (supplier, atom) = rest.split_once('/').ok_or_else(|| {
        err(format!(
            "it has no '/' after the supplier '{rest}' (write <binary>@<supplier>/<atom>)"
        ))
    })?;
    let binary = match binary {
        "claude" => Binary::Claude,
        "ouro" => Binary::Ouro,
        other => {
            return Err(err(format!(
                "unknown binary '{other}' (known: {})",
                BINARIES.join(", ")
            )));
        }
    };
    let supplier = match supplier {
        "anthropic" => Supplier::Anthropic,
        other => {
            return Err(err(format!(
                "unknown supplier '{other}' (known: {})",
                SUPPLIERS.join(", ")
            )));
        }
    };
    let model = resolve_atom(atom).ok_or_else(|| err(format!("unknown model '{atom}'")))?;
    Ok(BrainSpec {
        slug: slug.to_string(),
        binary,
        supplier,
        model,
    })
}

fn resolve_atom(atom: &str) -> Option<&'static ModelEntry> {
    let mut parts = atom.split('/');
    if parts.next()? != MODEL_LINE {
        return None;
    }
    let family = parts.next()?;
    let model = match parts.next() {
        None => table::latest(family)?,
        Some(version) => table::find(family, version.strip_prefix('v')?)?,
    };
    match parts.next() {
        None => Some(model),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_as_agent_files_name_it_has_a_slug() {
        assert_eq!(
            for_model("ouro", "haiku").as_deref(),
            Some("ouro@anthropic/claude/haiku")
        );
        let id = parse("ouro@anthropic/claude/opus/v4.5").unwrap().model_id();
        assert_eq!(
            for_model("claude", id).as_deref(),
            Some("claude@anthropic/claude/opus/v4.5")
        );
        assert_eq!(for_model("ouro", "gpt-9"), None);
    }

    #[test]
    fn valid_slugs_resolve_to_their_model() {
        let cases = [
            (
                "claude@anthropic/claude/opus/v4.5",
                Binary::Claude,
                "claude-opus-4-5",
            ),
            (
                "claude@anthropic/claude/sonnet/v4.5",
                Binary::Claude,
                "claude-sonnet-4-5",
            ),
            (
                "claude@anthropic/claude/haiku/v4.5",
                Binary::Claude,
                "claude-haiku-4-5",
            ),
            (
                "ouro@anthropic/claude/sonnet/v4.5",
                Binary::Ouro,
                "claude-sonnet-4-5",
            ),
            (
                "ouro@anthropic/claude/opus/v5",
                Binary::Ouro,
                "claude-opus-5",
            ),
            (
                "claude@anthropic/claude/fable/v5.1",
                Binary::Claude,
                "claude-fable-5-1",
            ),
        ];
        for (slug, binary, model) in cases {
            let spec = parse(slug).unwrap_or_else(|e| panic!("{slug}: {e}"));
            assert_eq!(spec.binary, binary, "{slug}");
            assert_eq!(spec.supplier, Supplier::Anthropic, "{slug}");
            assert_eq!(spec.model_id(), model, "{slug}");
            assert_eq!(spec.slug, slug);
        }
    }

    #[test]
    fn family_alias_means_the_latest_version() {
        let spec = parse("claude@anthropic/claude/haiku").unwrap();
        assert_eq!(spec.model_id(), table::latest("haiku").unwrap().model_id);
        let spec = parse("ouro@anthropic/claude/opus").unwrap();
        assert_eq!(spec.model_id(), table::latest("opus").unwrap().model_id);
    }

    #[test]
    fn invalid_slugs_say_what_is_wrong_and_list_the_valid_ones() {
        let cases = [
            ("claude/anthropic/claude/opus", "no '@'"),
            ("claude@anthropic", "no '/' after the supplier"),
            ("gemini@anthropic/claude/opus", "unknown binary 'gemini'"),
            ("claude@openai/claude/opus", "unknown supplier 'openai'"),
            (
                "claude@anthropic/claude/opus/v9.9",
                "unknown model 'claude/opus/v9.9'",
            ),
            ("claude@anthropic/claude/poet", "unknown model"),
            ("claude@anthropic/gpt/opus", "unknown model"),
            ("claude@anthropic/claude/opus/4.5", "unknown model"),
            ("claude@anthropic/claude/opus/v4.5/extra", "unknown model"),
            ("claude@anthropic/", "unknown model ''"),
            ("", "no '@'"),
        ];
        for (slug, problem) in cases {
            let e = parse(slug).expect_err(slug);
            let msg = e.to_string();
            assert!(msg.contains(problem), "{slug}: {msg}");
            assert!(
                msg.contains("claude@anthropic/claude/opus/v4.5"),
                "{slug}: {msg}"
            );
            assert!(msg.contains("ouro@anthropic/claude/haiku"), "{slug}: {msg}");
        }
    }

    #[test]
    fn every_listed_slug_parses_back() {
        let slugs = list_slugs();
        assert!(slugs.contains(&"claude@anthropic/claude/opus/v4.5".to_string()));
        assert!(slugs.contains(&"claude@anthropic/claude/haiku".to_string()));
        assert!(slugs.contains(&"ouro@anthropic/claude/sonnet/v4.5".to_string()));
        for slug in &slugs {
            parse(slug).unwrap_or_else(|e| panic!("{slug}: {e}"));
        }
    }

    #[test]
    fn tool_sets_follow_the_verb() {
        let spec = parse("claude@anthropic/claude/sonnet/v4.5").unwrap();
        assert_eq!(spec.tools(Verb::Ask), &["Glob", "Grep", "Read"]);
        assert_eq!(
            spec.tools(Verb::Act),
            &["Glob", "Grep", "Read", "Bash", "Edit", "Write"]
        );
    }
}
