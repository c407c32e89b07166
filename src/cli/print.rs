//! Print mode: run one prompt and write the outcome as text, one JSON object, or stream-json.

use std::io::Write;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::api::types::{ContentBlock, StopReason};
use crate::event::{Event, RunResult, ToolStatus};
use crate::stream_json::write as stream_json;
use crate::text::truncate;

/// Longest key argument shown on a call's line.
const MAX_KEY_CHARS: usize = 120;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    Text,
    #[value(name = "stream-json")]
    StreamJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    #[value(name = "stream-json")]
    StreamJson,
}

/// Render events until the engine hangs up. Returns the run's result, if one arrived.
pub async fn render(
    mut events: UnboundedReceiver<Event>,
    format: OutputFormat,
    verbose: bool,
) -> Option<RunResult> {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut session_id = String::new();
    let mut last = None;
    let mut said = None;
    // The error of the last retry: the same one again is a short line, not the whole sentence.
    let mut last_retry: Option<String> = None;
    while let Some(event) = events.recv().await {
        if let Event::Init(info) = &event {
            session_id.clone_from(&info.session_id);
        }
        match format {
            OutputFormat::StreamJson => {
                let mut out = std::io::BufWriter::new(stdout.lock());
                if stream_json::write_line(&event, &session_id, &mut out).unwrap_or(false) {
                    let _ = out.flush();
                }
            }
            OutputFormat::Json => {
                if matches!(event, Event::Result(_)) {
                    let mut out = std::io::BufWriter::new(stdout.lock());
                    let _ = stream_json::write_line(&event, &session_id, &mut out);
                    let _ = out.flush();
                }
            }
            OutputFormat::Text => {
                // What keeps a run waiting or changes its course is said even without
                // --verbose: a silent retry loop looks like a hang.
                let always = matches!(
                    event,
                    Event::ApiRetry(_)
                        | Event::StreamCut { .. }
                        | Event::ModelFallback { .. }
                        | Event::Notice(_)
                );
                if let Event::ApiRetry(r) = &event {
                    let message = r.message.trim_end_matches('.').to_string();
                    let wait = r.retry_delay_ms as f64 / 1000.0;
                    let line = if last_retry.as_deref() == Some(message.as_str()) {
                        format!(
                            "· the same again; retry {}/{} in {wait:.1} s",
                            r.attempt, r.max_retries
                        )
                    } else {
                        format!(
                            "· {message}; retry {}/{} in {wait:.1} s",
                            r.attempt, r.max_retries
                        )
                    };
                    let _ = writeln!(stderr.lock(), "{line}");
                    last_retry = Some(message);
                } else if verbose || always {
                    narrate(&event, &mut said, &mut stderr.lock());
                }
                if let Event::Result(r) = &event {
                    if r.kind.is_error() {
                        let _ = writeln!(stderr.lock(), "ouro: {}", r.text);
                    } else {
                        let mut out = stdout.lock();
                        let _ = writeln!(out, "{}", r.text);
                        let _ = out.flush();
                    }
                }
            }
        }
        if let Event::Result(r) = event {
            last = Some(r);
        }
    }
    last
}

/// One line per step on stderr, for `--verbose` text runs and the demo. `pending` holds the
/// model's latest text until it is known not to be the final answer.
pub(crate) fn narrate(event: &Event, pending: &mut Option<String>, out: &mut impl Write) {
    let before_a_call = matches!(
        event,
        Event::ToolStarted { .. }
            | Event::MessageDone {
                stop_reason: Some(StopReason::ToolUse),
                ..
            }
    );
    if before_a_call && let Some(text) = pending.take() {
        let _ = writeln!(out, "✻ {}", truncate(&text, MAX_KEY_CHARS * 4));
    }
    let _ = match event {
        Event::ApiRetry(r) => writeln!(
            out,
            "· {}; retry {}/{} in {:.1} s",
            r.message.trim_end_matches('.'),
            r.attempt,
            r.max_retries,
            r.retry_delay_ms as f64 / 1000.0
        ),
        Event::ToolStarted { name, summary, .. } => {
            writeln!(out, "● {name} {}", truncate(summary, MAX_KEY_CHARS))
        }
        // A denial was already said by its own line.
        Event::ToolFinished {
            status: ToolStatus::Denied,
            ..
        } => Ok(()),
        // Named, so results of parallel calls (and of calls refused before they started)
        // say which call they belong to.
        Event::ToolFinished {
            name,
            result: ContentBlock::ToolResult {
                content, is_error, ..
            },
            elapsed,
            ..
        } => {
            let first = content.lines().next().unwrap_or("");
            let mark = if *is_error { "✗" } else { "⎿" };
            writeln!(
                out,
                "  {mark} {name}: {} ({} lines, {} ms)",
                truncate(first, 100),
                content.lines().count(),
                elapsed.as_millis()
            )
        }
        // What the model says between its tool calls is shown once a call follows it; the
        // final answer goes to stdout instead.
        Event::AssistantBlock { block, .. } => {
            if let ContentBlock::Text { text } = block.as_ref()
                && !text.trim().is_empty()
            {
                pending
                    .get_or_insert_with(String::new)
                    .push_str(text.trim());
            }
            Ok(())
        }
        Event::Result(_) => {
            *pending = None;
            Ok(())
        }
        Event::PermissionDenied(d) => writeln!(out, "  ✗ denied: {}", d.reason),
        Event::ModelFallback { from, to, reason } => {
            writeln!(out, "· {from} is overloaded ({reason}); switched to {to}")
        }
        Event::StreamCut {
            error, kept_blocks, ..
        } => writeln!(
            out,
            "· the response stream broke ({error}); kept {kept_blocks} finished blocks, asking the model to continue"
        ),
        Event::CompactBoundary(c) => writeln!(
            out,
            "· compacted {} earlier messages into a summary",
            c.messages_summarised
        ),
        Event::Notice(text) => writeln!(out, "· {text}"),
        _ => Ok(()),
    };
}
