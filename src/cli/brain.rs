//! `ouro --brain claude@… -p`: print mode answered by the claude-CLI supplier. It boots the
//! brain, acts on the prompt, prints the answer in the chosen output format and kills the
//! process. (An `ouro@…` slug only picks the model of ouro's own print mode.)

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::print::{InputFormat, OutputFormat};
use crate::api::types::Usage;
use crate::brain::claude::ClaudeBrain;
use crate::brain::slug::{self, Binary, BrainSpec};
use crate::brain::{BrainCli, BrainConfig, BrainError, BrainOutput, BrainTerminal, Mode};
use crate::stream_json::wire::{Line, ResultLine, ResultUsage};

/// The claude brain `--brain <slug>` asks for, or `None` when print mode runs on ouro's own
/// engine (no `--brain`, or an `ouro@…` slug).
pub(crate) fn claude_brain(
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
            to_text(&ResultLine {
                subtype: "error_during_execution".into(),
                is_error: true,
                result: Some(message.to_string()),
                errors: Some(vec![message.to_string()]),
                api_error_status,
                ..ResultLine::default()
            })
        ),
        OutputFormat::StreamJson => {}
    }
}

/// The answer as Claude Code's final `result` object, with this call's own usage and cost.
fn result_json(out: &BrainOutput) -> String {
    let m = &out.metrics;
    to_text(&ResultLine {
        subtype: "success".into(),
        result: Some(out.text.clone()),
        session_id: out.series.exid.clone(),
        duration_ms: u64::try_from(m.wall_time.as_millis()).unwrap_or(u64::MAX),
        total_cost_usd: Some(m.cost_usd),
        usage: Some(Box::new(ResultUsage {
            counts: Usage {
                input_tokens: m.input_tokens,
                output_tokens: m.output_tokens,
                cache_creation_input_tokens: m.cache_write_tokens,
                cache_read_input_tokens: m.cache_read_tokens,
            },
            ..Default::default()
        })),
        num_tool_calls: Some(out.tool_calls.len()),
        ..ResultLine::default()
    })
}

fn to_text(result: &ResultLine) -> String {
    serde_json::to_string(&Line::Result(result.clone())).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

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
