//! Print mode (`-p`): one prompt from the argument or stdin, or, with `--input-format
//! stream-json`, one turn per JSON line on stdin in a single live process, as Claude Code does.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

use super::Args;
use super::print::{self, InputFormat};
use crate::app::{self, Endpoint};
use crate::exec::NeverAsk;

/// Run print mode; returns whether the (last) run succeeded.
pub async fn run(args: &Args, cwd: &Path) -> anyhow::Result<bool> {
    // A claude@ brain answers through the claude CLI; an ouro@ one only picks the model.
    if let Some(spec) = super::brain::claude_brain(args.brain.as_deref(), args.input_format)? {
        let prompt = prompt_text(args)?;
        return Ok(super::brain::run(spec, &prompt, args.output_format, cwd).await?);
    }
    let single = match args.input_format {
        InputFormat::Text => Some(prompt_text(args)?),
        InputFormat::StreamJson => None,
    };
    let session = app::build(
        &args.options()?,
        cwd,
        Endpoint::from_env()?,
        Arc::new(NeverAsk),
    )?;
    if !session.ignored.is_empty() {
        eprintln!("{}", app::untrusted_notice(&session.ignored));
    }
    let mut engine = session.engine;
    let renderer = tokio::spawn(print::render(
        session.events,
        args.output_format,
        args.verbose,
    ));
    let interrupted = CancellationToken::new();
    let on_interrupt = interrupted.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    let mut success = true;
    if let Some(prompt) = single {
        success = !engine.run(&prompt, &interrupted).await.kind.is_error();
    } else {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        loop {
            let line = tokio::select! {
                _ = interrupted.cancelled() => break,
                line = lines.next_line() => line.context("could not read stdin")?,
            };
            let Some(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            match user_turn(&line) {
                Ok(prompt) => success = !engine.run(&prompt, &interrupted).await.kind.is_error(),
                Err(problem) => {
                    tracing::error!(%problem, "skipping a stdin line that is not a user message")
                }
            }
            if interrupted.is_cancelled() {
                break;
            }
        }
    }
    drop(engine);
    let _ = renderer.await;
    Ok(success)
}

fn prompt_text(args: &Args) -> anyhow::Result<String> {
    let prompt = match &args.prompt {
        Some(p) => p.clone(),
        None if !std::io::stdin().is_terminal() => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("could not read the prompt from stdin")?;
            text
        }
        None => String::new(),
    };
    if prompt.trim().is_empty() {
        bail!("no prompt given: pass it as an argument (ouro -p \"...\") or on stdin");
    }
    Ok(prompt)
}

/// The text of one stdin line `{"type":"user","message":{"role":"user","content":...}}`.
fn user_turn(line: &str) -> Result<String, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    if v.get("type").and_then(Value::as_str) != Some("user") {
        return Err("the line's type is not \"user\"".into());
    }
    let content = v
        .get("message")
        .and_then(|m| m.get("content"))
        .ok_or("the line has no message.content")?;
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return Err("message.content is neither text nor a list of blocks".into()),
    };
    if text.trim().is_empty() {
        return Err("the message has no text".into());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_lines_parse_in_both_content_shapes() {
        assert_eq!(
            user_turn(
                r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#
            ),
            Ok("hi".to_string())
        );
        assert_eq!(
            user_turn(r#"{"type":"user","message":{"role":"user","content":"yo"}}"#),
            Ok("yo".to_string())
        );
        assert!(user_turn(r#"{"type":"control"}"#).is_err());
        assert!(user_turn("nonsense").is_err());
    }
}
