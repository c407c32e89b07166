//! The brains a user can pick: the table `ouro brains` and `/brain` print, and the model an
//! `ouro@…` slug gives ouro's own engine.

use std::fmt::Write as _;

use super::slug::{self, Binary, BrainSpec};
use super::{BrainError, list_slugs};

/// Every slug with the model it runs and that model's prices, one per line.
pub fn catalogue() -> String {
    let rows: Vec<(String, BrainSpec)> = list_slugs()
        .into_iter()
        .filter_map(|s| slug::parse(&s).ok().map(|spec| (s, spec)))
        .collect();
    let width = rows.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
    let mut out = format!(
        "{:width$}  {:18} {:>7} {:>7} {:>12} {:>11}\n",
        "SLUG", "MODEL", "INPUT", "OUTPUT", "CACHE WRITE", "CACHE READ"
    );
    for (slug, spec) in &rows {
        let _ = write!(out, "{slug:width$}  {:18}", spec.model_id());
        match spec.model.pricing() {
            Some(p) => {
                let _ = write!(
                    out,
                    " {:>7} {:>7} {:>12} {:>11}",
                    usd(p.input),
                    usd(p.output),
                    usd(p.cache_write),
                    usd(p.cache_read)
                );
                if let Some(band) = p.long_prompt {
                    let _ = write!(
                        out,
                        "  (over {} prompt tokens: {} / {} / {} / {})",
                        band.threshold,
                        usd(band.input),
                        usd(band.output),
                        usd(band.cache_write),
                        usd(band.cache_read)
                    );
                }
            }
            None => out.push_str("  (no price known; its cost is reported as 0)"),
        }
        out.push('\n');
    }
    out.push_str(
        "\nPrices are USD per million tokens. A slug without a version means its family's \
         newest model. Run one with: ouro --brain <slug> -p \"...\"\n",
    );
    out
}

/// A price with two decimals, or three when the third one matters (0.125).
fn usd(per_million: f64) -> String {
    let three = format!("{per_million:.3}");
    match three.strip_suffix('0') {
        Some(two) => two.to_string(),
        None => three,
    }
}

/// The model `--brain <slug>` gives ouro's own engine. A `claude@…` slug has none: it runs the
/// claude CLI, which ouro drives from print mode only.
pub fn ouro_model(slug: &str) -> Result<&'static str, BrainError> {
    let spec = slug::parse(slug)?;
    match spec.binary {
        Binary::Ouro => Ok(spec.model_id()),
        Binary::Claude => Err(BrainError::PrintOnly { slug: spec.slug }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::pricing::Pricing;

    fn row_prices(p: &Pricing) -> [String; 4] {
        [
            usd(p.input),
            usd(p.output),
            usd(p.cache_write),
            usd(p.cache_read),
        ]
    }

    #[test]
    fn prices_keep_the_digits_that_matter() {
        assert_eq!(usd(20.0), "20.00");
        assert_eq!(usd(0.125), "0.125");
        assert_eq!(usd(0.01), "0.01");
        assert_eq!(usd(6.25), "6.25");
    }

    #[test]
    fn the_catalogue_lists_every_slug_with_its_model_and_prices() {
        let text = catalogue();
        for slug in list_slugs() {
            let spec = slug::parse(&slug).unwrap();
            let line = text
                .lines()
                .find(|l| l.split_whitespace().next() == Some(slug.as_str()))
                .unwrap_or_else(|| panic!("{slug} is missing:\n{text}"));
            assert!(line.contains(spec.model_id()), "{line}");
            for price in row_prices(&spec.model.pricing().unwrap()) {
                assert!(line.contains(&price), "{line} lacks {price}");
            }
        }
        let haiku = text
            .lines()
            .find(|l| l.starts_with("ouro@anthropic/claude/haiku/v5.5 "))
            .unwrap();
        assert!(haiku.contains("over 100000 prompt tokens"), "{haiku}");
    }

    #[test]
    fn only_ouro_slugs_pick_a_ouro_model() {
        assert_eq!(
            ouro_model("ouro@anthropic/claude/sonnet/v4.5").unwrap(),
            "claude-sonnet-4-5"
        );
        let e = ouro_model("claude@anthropic/claude/sonnet/v4.5").unwrap_err();
        assert!(e.to_string().contains("-p"), "{e}");
        let e = ouro_model("ouro@anthropic/claude/nope").unwrap_err();
        assert!(
            e.to_string().contains("ouro@anthropic/claude/opus/v4.5"),
            "{e}"
        );
    }
}
