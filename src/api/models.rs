//! The models ouro knows: each family's versions, oldest first, and the aliases that name a
//! family's newest model (`opus`, `sonnet`, `haiku`) wherever a model is chosen (`--model`,
//! `/model`, settings, `ANTHROPIC_MODEL`, brains).

use super::pricing::{self, Pricing};
use super::types::Usage;

/// One model a slug can name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelEntry {
    /// `opus`, `sonnet`, `haiku`, `fable`.
    pub family: &'static str,
    /// Written as in the slug, without the leading `v`: `4.5`, `5`.
    pub version: &'static str,
    /// The Messages API model id.
    pub model_id: &'static str,
}

impl ModelEntry {
    /// The model's prices, from ouro's one price list. Every model here has a row there (a
    /// test checks), so `None` would only mean an unpriced model, costed as 0.
    pub fn pricing(&self) -> Option<Pricing> {
        pricing::pricing(self.model_id)
    }

    /// What a request with this usage costs. `usage` is one request's usage; a turn that made
    /// several requests and only reports their sum is priced as if it were one.
    pub fn cost(&self, usage: &Usage) -> f64 {
        self.pricing().map_or(0.0, |p| p.cost(usage))
    }
}

const fn entry(family: &'static str, version: &'static str, model_id: &'static str) -> ModelEntry {
    ModelEntry {
        family,
        version,
        model_id,
    }
}

/// Every model a slug can name, grouped by family, each family oldest first.
pub const MODELS: &[ModelEntry] = &[
    entry("opus", "4.5", "claude-opus-4-5"),
    entry("opus", "4.6", "claude-opus-4-6"),
    entry("opus", "4.7", "claude-opus-4-7"),
    entry("opus", "4.8", "claude-opus-4-8"),
    entry("opus", "5", "claude-opus-5"),
    entry("opus", "5.5", "claude-opus-5-5"),
    entry("sonnet", "4.5", "claude-sonnet-4-5"),
    entry("sonnet", "4.6", "claude-sonnet-4-6"),
    entry("sonnet", "5", "claude-sonnet-5"),
    entry("sonnet", "5.5", "claude-sonnet-5-5"),
    entry("haiku", "4.5", "claude-haiku-4-5"),
    entry("haiku", "5.5", "claude-haiku-5-5"),
    entry("fable", "5", "claude-fable-5"),
    entry("fable", "5.1", "claude-fable-5-1"),
];

/// Family names in table order, each once.
pub fn families() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for m in MODELS {
        if !out.contains(&m.family) {
            out.push(m.family);
        }
    }
    out
}

/// The newest model of a family: what the family alias resolves to.
pub fn latest(family: &str) -> Option<&'static ModelEntry> {
    MODELS.iter().rev().find(|m| m.family == family)
}

/// The model of a family at a version (`version` without its `v`).
pub fn find(family: &str, version: &str) -> Option<&'static ModelEntry> {
    MODELS
        .iter()
        .find(|m| m.family == family && m.version == version)
}

/// The family ouro runs when nothing names a model.
const DEFAULT_FAMILY: &str = "sonnet";

/// The model ouro runs when nothing names one: the newest Sonnet.
pub fn default_model() -> &'static str {
    latest(DEFAULT_FAMILY).map_or("claude-sonnet-4-6", |m| m.model_id)
}

/// A family alias (`opus`, `sonnet`, `haiku`, `fable`, any case) as its newest model's id;
/// any other name unchanged.
pub fn resolve(name: &str) -> String {
    let trimmed = name.trim();
    let (base, suffix) = match trimmed.strip_suffix(LONG_CONTEXT_SUFFIX) {
        Some(base) => (base, LONG_CONTEXT_SUFFIX),
        None => (trimmed, ""),
    };
    match latest(&base.to_ascii_lowercase()) {
        Some(model) => format!("{}{suffix}", model.model_id),
        None => trimmed.to_string(),
    }
}

/// How a model thinks before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thinking {
    /// `thinking: {type: "adaptive"}`; `only` when a fixed budget is refused (400).
    Adaptive { only: bool },
    /// `thinking: {type: "enabled", budget_tokens: N}` only.
    Budget,
    /// No extended thinking.
    None,
}

/// What a model accepts beyond the basics: its kind of thinking and `output_config.effort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    pub thinking: Thinking,
    /// Takes `output_config.effort` (low, medium, high).
    pub effort: bool,
    /// Takes the `max` effort level too.
    pub max_effort: bool,
    /// Offers a 1M-token context window (model id suffix `[1m]`).
    pub(crate) long_context: bool,
}

const fn caps(thinking: Thinking, effort: bool, max_effort: bool) -> Capabilities {
    Capabilities {
        thinking,
        effort,
        max_effort,
        long_context: false,
    }
}

const fn long(c: Capabilities) -> Capabilities {
    Capabilities {
        long_context: true,
        ..c
    }
}

/// A model id with this suffix asks for the model's 1M-token context window.
pub(crate) const LONG_CONTEXT_SUFFIX: &str = "[1m]";
/// The beta the 1M-token window needs.
pub(crate) const LONG_CONTEXT_BETA: &str = "context-1m-2025-08-07";
const CONTEXT_WINDOW: u64 = 200_000;
const LONG_CONTEXT_WINDOW: u64 = 1_000_000;

/// The id the API takes: without the `[1m]` suffix.
pub fn api_model(model: &str) -> &str {
    model.strip_suffix(LONG_CONTEXT_SUFFIX).unwrap_or(model)
}

/// Whether `model` asks for a 1M-token window that the model offers.
pub(crate) fn wants_long_context(model: &str) -> bool {
    model.ends_with(LONG_CONTEXT_SUFFIX) && capabilities(api_model(model)).long_context
}

/// The beta header a request for `model` needs for its context window, if any.
pub fn context_beta(model: &str) -> Option<&'static str> {
    wants_long_context(model).then_some(LONG_CONTEXT_BETA)
}

/// The context window in tokens.
pub fn context_window(model: &str) -> u64 {
    if wants_long_context(model) {
        LONG_CONTEXT_WINDOW
    } else {
        CONTEXT_WINDOW
    }
}

const ADAPTIVE_ONLY: Thinking = Thinking::Adaptive { only: true };
const ADAPTIVE: Thinking = Thinking::Adaptive { only: false };

/// Model id prefixes, most specific first (as in the price list).
const CAPABILITIES: &[(&str, Capabilities)] = &[
    ("claude-fable-5", caps(ADAPTIVE_ONLY, true, true)),
    ("claude-opus-5", long(caps(ADAPTIVE_ONLY, true, true))),
    ("claude-opus-4-8", long(caps(ADAPTIVE_ONLY, true, true))),
    ("claude-opus-4-7", long(caps(ADAPTIVE_ONLY, true, true))),
    ("claude-opus-4-6", long(caps(ADAPTIVE, true, true))),
    ("claude-opus-4-5", caps(Thinking::Budget, true, false)),
    ("claude-opus-4", caps(Thinking::Budget, false, false)),
    ("claude-sonnet-5", long(caps(ADAPTIVE, true, false))),
    ("claude-sonnet-4-6", long(caps(ADAPTIVE, true, false))),
    (
        "claude-sonnet-4",
        long(caps(Thinking::Budget, false, false)),
    ),
    ("claude-3-7-sonnet", caps(Thinking::Budget, false, false)),
    ("claude-haiku-5", caps(ADAPTIVE, true, false)),
    ("claude-haiku-4-5", caps(Thinking::Budget, false, false)),
];

/// What `model` accepts; a model ouro does not know gets neither thinking nor effort, which
/// every model accepts.
pub fn capabilities(model: &str) -> Capabilities {
    pricing::by_model(CAPABILITIES, model)
        .copied()
        .unwrap_or(caps(Thinking::None, false, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_name_the_newest_model_of_their_family() {
        assert_eq!(resolve("sonnet"), latest("sonnet").unwrap().model_id);
        assert_eq!(resolve("Opus"), latest("opus").unwrap().model_id);
        assert_eq!(resolve("haiku"), "claude-haiku-5-5");
        assert_eq!(resolve("claude-opus-4-5"), "claude-opus-4-5");
        assert_eq!(resolve("my-proxy-model"), "my-proxy-model");
        assert_eq!(default_model(), resolve("sonnet"));
        assert_ne!(
            default_model(),
            "claude-sonnet-4-5",
            "within 30 days of end of life"
        );
    }

    #[test]
    fn every_listed_model_has_its_capabilities() {
        for model in MODELS {
            let c = capabilities(model.model_id);
            assert_ne!(c.thinking, Thinking::None, "{}", model.model_id);
        }
        assert_eq!(capabilities("claude-opus-4-5").thinking, Thinking::Budget);
        assert_eq!(capabilities("claude-opus-4-1").thinking, Thinking::Budget);
        assert_eq!(
            capabilities("claude-opus-4-7").thinking,
            Thinking::Adaptive { only: true }
        );
        assert_eq!(capabilities("claude-3-5-haiku").thinking, Thinking::None);
        assert!(!capabilities("claude-sonnet-5-5").max_effort);
    }

    #[test]
    fn the_long_context_window_is_asked_for_with_a_suffix() {
        assert_eq!(resolve("sonnet[1m]"), format!("{}[1m]", resolve("sonnet")));
        assert_eq!(api_model("claude-sonnet-5-5[1m]"), "claude-sonnet-5-5");
        assert_eq!(context_window("claude-sonnet-5-5[1m]"), 1_000_000);
        assert_eq!(context_window("claude-sonnet-5-5"), 200_000);
        // Only where the model offers it.
        assert_eq!(context_window("claude-haiku-5-5[1m]"), 200_000);
        assert!(!wants_long_context("claude-haiku-4-5[1m]"));
    }
}
