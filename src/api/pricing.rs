//! What each model costs, in USD per million tokens, and how much context it has.
//!
//! This is ouro's one price list: the engine prices every response with it and the brain table
//! (`brain::table`) prices its slugs with it. Rates are Anthropic's published prices, with
//! 5-minute cache writes.

use super::types::Usage;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
    /// A higher band that applies to a whole request once its prompt passes a length.
    pub long_prompt: Option<LongPrompt>,
}

/// The rates of a long-prompt band, and where it starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LongPrompt {
    /// Prompt tokens (input + cache reads + cache writes) above which this band applies.
    pub threshold: u64,
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

impl Pricing {
    /// What one request with this usage costs. A sum over several requests is priced as if it
    /// were one, which only matters when a long-prompt band exists.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let (input, output, cache_write, cache_read) = match self.long_prompt {
            Some(band) if usage.context_tokens() > band.threshold => {
                (band.input, band.output, band.cache_write, band.cache_read)
            }
            _ => (self.input, self.output, self.cache_write, self.cache_read),
        };
        (usage.input_tokens as f64 * input
            + usage.output_tokens as f64 * output
            + usage.cache_creation_input_tokens as f64 * cache_write
            + usage.cache_read_input_tokens as f64 * cache_read)
            / 1_000_000.0
    }
}

/// Rates where cache writes cost 1.25× and cache reads 0.1× the input price.
const fn p(input: f64, output: f64) -> Pricing {
    rates(input, output, input * 1.25, input * 0.1)
}

const fn rates(input: f64, output: f64, cache_write: f64, cache_read: f64) -> Pricing {
    Pricing {
        input,
        output,
        cache_write,
        cache_read,
        long_prompt: None,
    }
}

/// Model id prefixes, most specific first: `claude-opus-4` must not catch `claude-opus-4-5`.
const TABLE: &[(&str, Pricing)] = &[
    ("claude-opus-5-5", rates(4.0, 20.0, 5.0, 0.20)),
    ("claude-opus-5", rates(5.0, 25.0, 6.25, 0.50)),
    ("claude-opus-4-8", p(5.0, 25.0)),
    ("claude-opus-4-7", p(5.0, 25.0)),
    ("claude-opus-4-6", p(5.0, 25.0)),
    ("claude-opus-4-5", p(5.0, 25.0)),
    ("claude-opus-4-1", p(15.0, 75.0)),
    ("claude-opus-4", p(15.0, 75.0)),
    ("claude-sonnet-5-5", rates(2.0, 10.0, 2.50, 0.10)),
    ("claude-sonnet-5", rates(2.0, 10.0, 2.50, 0.20)),
    ("claude-sonnet-4-6", p(3.0, 15.0)),
    ("claude-sonnet-4-5", p(3.0, 15.0)),
    ("claude-sonnet-4", p(3.0, 15.0)),
    ("claude-3-7-sonnet", p(3.0, 15.0)),
    ("claude-3-5-sonnet", p(3.0, 15.0)),
    (
        "claude-haiku-5-5",
        Pricing {
            long_prompt: Some(LongPrompt {
                threshold: 100_000,
                input: 0.50,
                output: 2.50,
                cache_write: 0.625,
                cache_read: 0.05,
            }),
            ..rates(0.10, 0.50, 0.125, 0.01)
        },
    ),
    ("claude-haiku-4-5", p(1.0, 5.0)),
    ("claude-3-5-haiku", p(0.8, 4.0)),
    ("claude-3-haiku", p(0.25, 1.25)),
    ("claude-fable-5-1", rates(10.0, 50.0, 12.50, 0.25)),
    ("claude-fable-5", rates(10.0, 50.0, 12.50, 1.0)),
];

/// Pricing for a model id (dated ids like `claude-sonnet-4-5-20250929` and suffixed ones like
/// `claude-opus-4-6[1m]` match their model); `None` for models ouro does not know, whose cost
/// is then reported as 0.
pub fn pricing(model: &str) -> Option<Pricing> {
    by_model(TABLE, model).copied()
}

/// The row of a table keyed by model id prefix, most specific first, that `model` falls
/// under: the prefix is the whole id, or followed by a date (`-20250929`) or a variant
/// (`[1m]`).
pub(super) fn by_model<'t, T>(table: &'t [(&str, T)], model: &str) -> Option<&'t T> {
    table
        .iter()
        .find(|(prefix, _)| {
            model
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '[']))
        })
        .map(|(_, row)| row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, write: u64, read: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_creation_input_tokens: write,
            cache_read_input_tokens: read,
        }
    }

    const MILLION_EACH: Usage = Usage {
        input_tokens: 1_000_000,
        output_tokens: 1_000_000,
        cache_creation_input_tokens: 1_000_000,
        cache_read_input_tokens: 1_000_000,
    };

    #[test]
    fn known_models_are_priced_by_family() {
        let c = pricing("claude-sonnet-4-5-20250929")
            .unwrap()
            .cost(&MILLION_EACH);
        assert!((c - (3.0 + 15.0 + 3.75 + 0.3)).abs() < 1e-9, "{c}");
        assert_eq!(pricing("claude-opus-4-5").unwrap().input, 5.0);
        assert_eq!(pricing("claude-opus-4-1-20250805").unwrap().input, 15.0);
        assert_eq!(pricing("claude-opus-4-20250514").unwrap().input, 15.0);
        assert!(pricing("gpt-5").is_none());
    }

    #[test]
    fn newer_models_are_not_caught_by_an_older_prefix() {
        for model in ["claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8[1m]"] {
            let c = pricing(model)
                .unwrap()
                .cost(&usage(1_000_000, 1_000_000, 0, 0));
            assert!((c - 30.0).abs() < 1e-9, "{model}: {c}");
        }
        assert_eq!(pricing("claude-opus-5-5").unwrap().input, 4.0);
        assert_eq!(pricing("claude-opus-5").unwrap().input, 5.0);
        assert_eq!(pricing("claude-sonnet-5-5").unwrap().cache_read, 0.10);
        assert_eq!(pricing("claude-fable-5-1").unwrap().cache_read, 0.25);
        assert_eq!(pricing("claude-fable-5").unwrap().cache_read, 1.0);
        // A prefix matches whole version parts only: a made-up 4.50 is not Opus 4.5.
        assert_eq!(pricing("claude-opus-4-50").unwrap().input, 15.0);
        assert!(pricing("claude-opus-55").is_none());
    }

    #[test]
    fn every_row_is_reachable() {
        for (prefix, rates) in TABLE {
            assert_eq!(pricing(prefix), Some(*rates), "{prefix} is shadowed");
        }
    }

    #[test]
    fn cost_uses_all_four_rates() {
        let opus = pricing("claude-opus-4-5").unwrap();
        let c = opus.cost(&MILLION_EACH);
        assert!((c - (5.0 + 25.0 + 6.25 + 0.5)).abs() < 1e-9, "{c}");
        // The recorded multi-turn capture: 1723 input + 7 output tokens on an Opus-priced model.
        let c = opus.cost(&usage(1723, 7, 0, 0));
        assert!((c - 0.00879).abs() < 1e-12, "{c}");
    }

    #[test]
    fn long_prompts_switch_the_whole_request_to_the_higher_band() {
        let haiku = pricing("claude-haiku-5-5").unwrap();
        let short = haiku.cost(&usage(100_000, 1_000_000, 0, 0));
        assert!((short - (0.01 + 0.5)).abs() < 1e-9, "{short}");
        let long = haiku.cost(&usage(50_000, 1_000_000, 0, 50_001));
        let expected = (50_000.0 * 0.5 + 1_000_000.0 * 2.5 + 50_001.0 * 0.05) / 1e6;
        assert!((long - expected).abs() < 1e-9, "{long}");
    }
}
