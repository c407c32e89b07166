//! How much a request asks the model to reason: `thinking` (adaptive, or a token budget on
//! models that only take that) and `output_config.effort`, chosen from what the user asked
//! for and what the model accepts (`models::capabilities`).

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};

use super::models::{self, Thinking};

/// The budget asked for on budget-only models when the user named none.
pub(crate) const DEFAULT_BUDGET: u32 = 16_000;
/// The API's smallest thinking budget.
pub(crate) const MIN_BUDGET: u32 = 1024;
/// Server-side context editing: the API clears old tool results once the context grows.
pub const CONTEXT_MANAGEMENT_BETA: &str = "context-management-2025-06-27";

/// The `context_management` field that clears old tool results (and, with thinking, old
/// thinking blocks) on the server.
pub fn context_management(thinking: bool) -> Value {
    let mut edits = Vec::new();
    if thinking {
        edits.push(json!({"type": "clear_thinking_20251015"}));
    }
    edits.push(json!({"type": "clear_tool_uses_20250919"}));
    json!({ "edits": edits })
}

/// Lets a budget-thinking model think between tool calls.
pub(crate) const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

/// `--thinking`: what the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThinkingChoice {
    /// The model's best: adaptive where it can, a budget where it only takes that.
    #[default]
    Auto,
    Off,
    Adaptive,
    /// A budget in tokens (adaptive-only models think adaptively instead).
    Budget(u32),
}

impl FromStr for ThinkingChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "auto" => Ok(ThinkingChoice::Auto),
            "off" | "none" | "disabled" => Ok(ThinkingChoice::Off),
            "adaptive" => Ok(ThinkingChoice::Adaptive),
            n => n.parse::<u32>().map(ThinkingChoice::Budget).map_err(|_| {
                format!(
                    "`{n}` is not a thinking setting; use off, adaptive, auto or a token budget \
                     such as 8000"
                )
            }),
        }
    }
}

/// `--effort`: how much effort the model spends on an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    Low,
    Medium,
    High,
    Max,
}

impl Effort {
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Max => "max",
        }
    }
}

impl fmt::Display for Effort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Effort {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "low" => Ok(Effort::Low),
            "medium" => Ok(Effort::Medium),
            "high" => Ok(Effort::High),
            "max" => Ok(Effort::Max),
            other => Err(format!(
                "`{other}` is not an effort level; use low, medium, high or max"
            )),
        }
    }
}

/// The request fields for one model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reasoning {
    pub thinking: Option<Value>,
    pub output_config: Option<Value>,
    /// Values for the `anthropic-beta` header.
    pub betas: Vec<&'static str>,
}

/// What to send `model` for the user's `choice` and `effort`; nothing the model would refuse.
pub fn reasoning(
    model: &str,
    choice: ThinkingChoice,
    effort: Option<Effort>,
    max_tokens: u32,
) -> Reasoning {
    let caps = models::capabilities(model);
    let thinking = match (caps.thinking, choice) {
        (_, ThinkingChoice::Off) | (Thinking::None, _) => None,
        (Thinking::Adaptive { .. }, _) => Some(json!({"type": "adaptive"})),
        (Thinking::Budget, ThinkingChoice::Budget(n)) => budget(n, max_tokens),
        (Thinking::Budget, _) => budget(DEFAULT_BUDGET, max_tokens),
    };
    let betas = if thinking.as_ref().is_some_and(|t| t["type"] == "enabled") {
        vec![INTERLEAVED_THINKING_BETA]
    } else {
        Vec::new()
    };
    let output_config = effort.filter(|_| caps.effort).map(|effort| {
        let effort = match effort {
            Effort::Max if !caps.max_effort => Effort::High,
            other => other,
        };
        json!({"effort": effort.as_str()})
    });
    Reasoning {
        thinking,
        output_config,
        betas,
    }
}

/// A budget the API accepts: at least 1024 tokens and below `max_tokens`.
fn budget(wanted: u32, max_tokens: u32) -> Option<Value> {
    let ceiling = max_tokens.checked_sub(1)?;
    if ceiling < MIN_BUDGET {
        return None;
    }
    let tokens = wanted.clamp(MIN_BUDGET, ceiling);
    Some(json!({"type": "enabled", "budget_tokens": tokens}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_model_gets_what_it_accepts() {
        let adaptive = reasoning(
            "claude-sonnet-5-5",
            ThinkingChoice::Auto,
            Some(Effort::Max),
            32_000,
        );
        assert_eq!(adaptive.thinking, Some(json!({"type": "adaptive"})));
        assert_eq!(adaptive.output_config, Some(json!({"effort": "high"})));
        assert!(adaptive.betas.is_empty());
        let opus = reasoning(
            "claude-opus-5-5",
            ThinkingChoice::Budget(5000),
            Some(Effort::Max),
            32_000,
        );
        assert_eq!(opus.thinking, Some(json!({"type": "adaptive"})));
        assert_eq!(opus.output_config, Some(json!({"effort": "max"})));
        let budget = reasoning(
            "claude-sonnet-4-5",
            ThinkingChoice::Auto,
            Some(Effort::High),
            32_000,
        );
        assert_eq!(
            budget.thinking,
            Some(json!({"type": "enabled", "budget_tokens": DEFAULT_BUDGET}))
        );
        assert_eq!(budget.output_config, None);
        assert_eq!(budget.betas, vec![INTERLEAVED_THINKING_BETA]);
        let small = reasoning(
            "claude-sonnet-4-5",
            ThinkingChoice::Budget(50_000),
            None,
            8_000,
        );
        assert_eq!(small.thinking.unwrap()["budget_tokens"], 7_999);
        let none = reasoning(
            "claude-3-5-haiku",
            ThinkingChoice::Adaptive,
            Some(Effort::Low),
            8_000,
        );
        assert_eq!(none, Reasoning::default());
        let off = reasoning("claude-sonnet-5-5", ThinkingChoice::Off, None, 8_000);
        assert_eq!(off.thinking, None);
    }

    #[test]
    fn choices_parse_and_say_what_is_valid() {
        assert_eq!(
            "8000".parse::<ThinkingChoice>(),
            Ok(ThinkingChoice::Budget(8000))
        );
        assert_eq!("off".parse::<ThinkingChoice>(), Ok(ThinkingChoice::Off));
        assert!(
            "lots"
                .parse::<ThinkingChoice>()
                .unwrap_err()
                .contains("adaptive")
        );
        assert_eq!("MAX".parse::<Effort>(), Ok(Effort::Max));
        assert!(
            "huge"
                .parse::<Effort>()
                .unwrap_err()
                .contains("low, medium")
        );
    }
}
