//! The brain config table: which binaries and suppliers exist, which models each slug may name,
//! what those models cost, and which tools each verb may use.
//!
//! The models and their prices come from `api::models` and `api::pricing`, ouro's one list of
//! each; the newest model of a family is what the family alias (`claude/opus`) means.

use super::Verb;
pub use crate::api::models::{MODELS, ModelEntry, families, find, latest};
use crate::tools::Tool;
use crate::tools::bash::BashTool;
use crate::tools::edit::EditTool;
use crate::tools::glob::GlobTool;
use crate::tools::grep::GrepTool;
use crate::tools::read::ReadTool;
use crate::tools::write::WriteTool;

/// Executables a brain can run as.
pub(crate) const BINARIES: &[&str] = &["claude", "ouro"];

/// Who serves the model behind a brain.
pub(crate) const SUPPLIERS: &[&str] = &["anthropic"];

/// The first segment of every atom: the model line the supplier sells.
pub(crate) const MODEL_LINE: &str = "claude";

/// Read-only tools: an `ask` can look around but change nothing. (The claude CLI's tools
/// have the same names as ouro's.)
pub(crate) const ASK_TOOLS: &[&str] = &[GlobTool::NAME, GrepTool::NAME, ReadTool::NAME];

/// Everything `ask` has plus the tools that change files or run commands.
pub(crate) const ACT_TOOLS: &[&str] = &[
    GlobTool::NAME,
    GrepTool::NAME,
    ReadTool::NAME,
    BashTool::NAME,
    EditTool::NAME,
    WriteTool::NAME,
];

/// The tool set a verb runs with.
pub fn tools_for(verb: Verb) -> &'static [&'static str] {
    match verb {
        Verb::Ask => ASK_TOOLS,
        Verb::Act => ACT_TOOLS,
    }
}

/// Every atom the table accepts: each family alias, then each versioned model.
pub(crate) fn atoms() -> Vec<String> {
    let mut out = Vec::new();
    for family in families() {
        out.push(format!("{MODEL_LINE}/{family}"));
        for m in MODELS.iter().filter(|m| m.family == family) {
            out.push(format!("{MODEL_LINE}/{family}/v{}", m.version));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::types::Usage;

    fn usage(input: u64, output: u64, write: u64, read: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_creation_input_tokens: write,
            cache_read_input_tokens: read,
        }
    }

    #[test]
    fn aliases_resolve_to_the_newest_version() {
        assert_eq!(latest("opus").unwrap().model_id, "claude-opus-5-5");
        assert_eq!(latest("haiku").unwrap().model_id, "claude-haiku-5-5");
        assert!(latest("gpt").is_none());
    }

    #[test]
    fn model_ids_are_unique_and_versions_ascend() {
        for (i, a) in MODELS.iter().enumerate() {
            for b in &MODELS[i + 1..] {
                assert_ne!(a.model_id, b.model_id);
            }
        }
        for family in families() {
            let versions: Vec<f64> = MODELS
                .iter()
                .filter(|m| m.family == family)
                .map(|m| m.version.parse().unwrap())
                .collect();
            assert!(
                versions.windows(2).all(|w| w[0] < w[1]),
                "{family}: {versions:?}"
            );
        }
    }

    #[test]
    fn every_model_has_its_own_price_row() {
        for m in MODELS {
            let p = m
                .pricing()
                .unwrap_or_else(|| panic!("{} is unpriced", m.model_id));
            assert!(p.input > 0.0 && p.output > p.input, "{}: {p:?}", m.model_id);
        }
        // The rows the family prefixes would get wrong.
        assert_eq!(find("opus", "4.7").unwrap().pricing().unwrap().input, 5.0);
        assert_eq!(find("opus", "5.5").unwrap().pricing().unwrap().input, 4.0);
    }

    #[test]
    fn cost_follows_the_price_list() {
        let opus = find("opus", "4.5").unwrap();
        let c = opus.cost(&usage(1_000_000, 1_000_000, 1_000_000, 1_000_000));
        assert!((c - (5.0 + 25.0 + 6.25 + 0.5)).abs() < 1e-9, "{c}");
        let haiku = find("haiku", "5.5").unwrap();
        let long = haiku.cost(&usage(50_000, 1_000_000, 0, 50_001));
        let expected = (50_000.0 * 0.5 + 1_000_000.0 * 2.5 + 50_001.0 * 0.05) / 1e6;
        assert!((long - expected).abs() < 1e-9, "{long}");
    }

    #[test]
    fn act_extends_ask() {
        assert!(ASK_TOOLS.iter().all(|t| ACT_TOOLS.contains(t)));
        for t in ["Bash", "Edit", "Write"] {
            assert!(ACT_TOOLS.contains(&t) && !ASK_TOOLS.contains(&t));
        }
    }
}
