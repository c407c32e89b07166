//! What each model costs, in USD per million tokens, and how much context it has.

use super::types::Usage;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

impl Pricing {
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_creation_input_tokens as f64 * self.cache_write
            + usage.cache_read_input_tokens as f64 * self.cache_read)
            / 1_000_000.0
    }
}

const fn p(input: f64, output: f64) -> Pricing {
    Pricing {
        input,
        output,
        cache_write: input * 1.25,
        cache_read: input * 0.1,
    }
}

/// Model id prefixes, most specific first.
const TABLE: &[(&str, Pricing)] = &[
    ("claude-opus-4-5", p(5.0, 25.0)),
    ("claude-opus-4-1", p(15.0, 75.0)),
    ("claude-opus-4", p(15.0, 75.0)),
    ("claude-sonnet-4", p(3.0, 15.0)),
    ("claude-3-7-sonnet", p(3.0, 15.0)),
    ("claude-3-5-sonnet", p(3.0, 15.0)),
    ("claude-haiku-4-5", p(1.0, 5.0)),
    ("claude-3-5-haiku", p(0.8, 4.0)),
    ("claude-3-haiku", p(0.25, 1.25)),
];

/// Pricing for a model id (dated ids like `claude-sonnet-4-5-20250929` match their family);
/// `None` for models ouro does not know, whose cost is then reported as 0.
pub fn pricing(model: &str) -> Option<Pricing> {
    TABLE
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|(_, p)| *p)
}

/// The context window in tokens.
pub fn context_window(model: &str) -> u64 {
    if model.contains("[1m]") {
        1_000_000
    } else {
        200_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_are_priced_by_family() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_creation_input_tokens: 1_000_000,
            cache_read_input_tokens: 1_000_000,
        };
        let c = pricing("claude-sonnet-4-5-20250929").unwrap().cost(&usage);
        assert!((c - (3.0 + 15.0 + 3.75 + 0.3)).abs() < 1e-9, "{c}");
        assert_eq!(pricing("claude-opus-4-5").unwrap().input, 5.0);
        assert_eq!(pricing("claude-opus-4-1-20250805").unwrap().input, 15.0);
        assert!(pricing("gpt-5").is_none());
    }
}
