//! Brains on the command line: `ouro brains` lists them, and `ouro --brain <slug> -p` answers
//! one prompt with the chosen one. An `ouro@…` slug only picks the model of ouro's own print
//! mode; a `claude@…` slug boots the claude-CLI supplier, acts on the prompt, prints the answer
//! and kills the process.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use super::claude::ClaudeBrain;
use super::slug::{self, Binary, BrainSpec};
use super::{BrainCli, BrainConfig, BrainError, BrainOutput, Mode, list_slugs};
use crate::cli::print::{InputFormat, OutputFormat};

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
pub fn native_model(slug: &str) -> Result<&'static str, BrainError> {
    let spec = slug::parse(slug)?;
    match spec.binary {
        Binary::Ouro => Ok(spec.model_id()),
        Binary::Claude => Err(BrainError::PrintOnly { slug: spec.slug }),
    }
}

/// The claude brain `--brain <slug>` asks for, or `None` when print mode runs on ouro's own
/// engine (no `--brain`, or an `ouro@…` slug).
pub fn claude_brain(
    slug: Option<&str>,
    input: InputFormat,
) -> Result<Option<BrainSpec>, BrainError> {
    let Some(slug) = slug else {
        return Ok(None);
    };
    let spec = slug::parse(slug)?;
    if spec.binary != Binary::Claude {
        return Ok(None);
    }
    if input == InputFormat::StreamJson {
        return Err(BrainError::StreamJsonInput { slug: spec.slug });
    }
    Ok(Some(spec))
}

/// Boots `spec` on the claude CLI in `cwd`, acts on `prompt` with the full tool set, prints the
/// answer in `format` and kills the process. Returns whether the answer was a success; an
/// answer that is an error is printed like one, anything else is returned.
pub async fn run(
    spec: BrainSpec,
    prompt: &str,
    format: OutputFormat,
    cwd: &Path,
) -> Result<bool, BrainError> {
    // A one-off answer continues no conversation, so its series lives and dies with the run.
    let state = std::env::temp_dir().join(format!("ouro-brain-{}", uuid::Uuid::new_v4()));
    let outcome = answer(spec, prompt, format, cwd, &state).await;
    if let Err(e) = std::fs::remove_dir_all(&state)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(dir = %state.display(), error = %e, "could not remove a brain's state");
    }
    match outcome? {
        Answer::Done(out) => {
            print_answer(&out, format);
            Ok(true)
        }
        Answer::Failed {
            message,
            api_error_status,
        } => {
            print_failure(&message, api_error_status, format);
            Ok(false)
        }
        Answer::Interrupted => {
            eprintln!("ouro: interrupted; the claude process was stopped");
            Ok(false)
        }
    }
}

enum Answer {
    Done(BrainOutput),
    Failed {
        message: String,
        api_error_status: Option<u16>,
    },
    Interrupted,
}

async fn answer(
    spec: BrainSpec,
    prompt: &str,
    format: OutputFormat,
    cwd: &Path,
    state: &Path,
) -> Result<Answer, BrainError> {
    let brain = ClaudeBrain::from_spec(spec, BrainConfig::new(cwd, state))?;
    if format == OutputFormat::StreamJson {
        // The CLI already speaks stream-json: its lines are the output, unchanged.
        brain.on_data(Arc::new(|bytes| {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(bytes);
            let _ = out.flush();
        }));
    }
    let acted = async {
        brain.boot(Mode::Dispatch).await?;
        brain.act(prompt).await
    };
    let outcome = tokio::select! {
        acted = acted => match acted {
            Ok(out) => Ok(Answer::Done(out)),
            Err(BrainError::TurnFailed { message, api_error_status }) => Ok(Answer::Failed {
                message,
                api_error_status,
            }),
            Err(e) => Err(e),
        },
        _ = tokio::signal::ctrl_c() => Ok(Answer::Interrupted),
    };
    brain.kill().await?;
    outcome
}

fn print_answer(out: &BrainOutput, format: OutputFormat) {
    match format {
        OutputFormat::Text => println!("{}", out.text),
        OutputFormat::Json => println!("{}", result_json(out)),
        OutputFormat::StreamJson => {}
    }
}

fn print_failure(message: &str, api_error_status: Option<u16>, format: OutputFormat) {
    match format {
        OutputFormat::Text => eprintln!("ouro: {message}"),
        OutputFormat::Json => println!(
            "{}",
            json!({
                "type": "result",
                "subtype": "error",
                "is_error": true,
                "result": message,
                "api_error_status": api_error_status,
            })
        ),
        OutputFormat::StreamJson => {}
    }
}

/// The answer as Claude Code's final `result` object, with this call's own usage and cost.
fn result_json(out: &BrainOutput) -> Value {
    let m = &out.metrics;
    json!({
        "type": "result",
        "subtype": "success",
        "is_error": false,
        "result": out.text,
        "session_id": out.series.exid,
        "duration_ms": u64::try_from(m.wall_time.as_millis()).unwrap_or(u64::MAX),
        "total_cost_usd": m.cost_usd,
        "usage": {
            "input_tokens": m.input_tokens,
            "output_tokens": m.output_tokens,
            "cache_creation_input_tokens": m.cache_write_tokens,
            "cache_read_input_tokens": m.cache_read_tokens,
        },
        "num_tool_calls": out.tool_calls.len(),
    })
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
    fn only_ouro_slugs_pick_a_native_model() {
        assert_eq!(
            native_model("ouro@anthropic/claude/sonnet/v4.5").unwrap(),
            "claude-sonnet-4-5"
        );
        let e = native_model("claude@anthropic/claude/sonnet/v4.5").unwrap_err();
        assert!(e.to_string().contains("-p"), "{e}");
        let e = native_model("ouro@anthropic/claude/nope").unwrap_err();
        assert!(
            e.to_string().contains("ouro@anthropic/claude/opus/v4.5"),
            "{e}"
        );
    }

    #[test]
    fn claude_slugs_take_the_claude_route_in_text_input_only() {
        assert_eq!(claude_brain(None, InputFormat::Text).unwrap(), None);
        assert_eq!(
            claude_brain(Some("ouro@anthropic/claude/haiku"), InputFormat::Text).unwrap(),
            None
        );
        let spec = claude_brain(Some("claude@anthropic/claude/haiku"), InputFormat::Text)
            .unwrap()
            .unwrap();
        assert_eq!(spec.binary, Binary::Claude);
        assert!(
            claude_brain(
                Some("claude@anthropic/claude/haiku"),
                InputFormat::StreamJson
            )
            .is_err()
        );
        assert!(claude_brain(Some("claude@x"), InputFormat::Text).is_err());
    }
}
