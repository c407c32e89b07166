//! Print mode (`-p`): one prompt from the argument or stdin, or, with `--input-format
//! stream-json`, one turn per JSON line on stdin in a single live process, as Claude Code does.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio_util::sync::CancellationToken;

use super::Args;
use super::print::{self, InputFormat};
use crate::app::{self, Endpoint};
use crate::exec::{Asker, NeverAsk};
use crate::sdk;

/// Run print mode; returns how it ended (whether the last run succeeded, or the signal that
/// stopped it). With JSON output, a run that
/// cannot start still answers with a JSON error result on stdout, as programs expect one.
pub async fn run(args: &Args, cwd: &Path) -> anyhow::Result<Exit> {
    match run_session(args, cwd).await {
        Err(e) if args.output_format != print::OutputFormat::Text => {
            let text = crate::text::error_chain(e.chain());
            let result = crate::event::Event::Result(crate::event::RunResult::not_started(&text));
            let _ = crate::stream_json::write::write_line(&result, "", &mut std::io::stdout());
            eprintln!("ouro: {text}");
            Ok(Exit::Failure)
        }
        outcome => outcome,
    }
}

async fn run_session(args: &Args, cwd: &Path) -> anyhow::Result<Exit> {
    args.refuse_unsupported()?;
    // A claude@ brain answers through the claude CLI; an ouro@ one only picks the model.
    if let Some(spec) = super::brain::claude_brain(args.brain.as_deref(), args.input_format)? {
        let prompt = prompt_text(args)?;
        let success = super::brain::run(spec, &prompt, args.output_format, cwd).await?;
        return Ok(if success {
            Exit::Success
        } else {
            Exit::Failure
        });
    }
    crate::sys::shutdown::become_subreaper();
    let single = match args.input_format {
        InputFormat::Text => Some(prompt_text(args)?),
        InputFormat::StreamJson => None,
    };
    let outgoing = Arc::new(sdk::Outgoing::default());
    let asker: Arc<dyn Asker> = match args.permission_prompt_tool.as_deref() {
        None => Arc::new(NeverAsk),
        Some("stdio") if args.input_format == InputFormat::StreamJson => Arc::new(sdk::SdkAsker {
            outgoing: outgoing.clone(),
        }),
        Some("stdio") => bail!(
            "--permission-prompt-tool stdio needs --input-format stream-json: the answers come on stdin"
        ),
        Some(other) => bail!(
            "--permission-prompt-tool {other}: ouro asks only over stdio (the Agent SDK's can_use_tool); an MCP tool as the permission prompt is not supported"
        ),
    };
    let mut options = args.options()?;
    let stdin = match args.input_format {
        InputFormat::StreamJson => {
            options.sdk_mcp = Some(crate::mcp::SdkLink(outgoing.clone()));
            let stdin = sdk::FirstLine::read().await;
            if let Some(request) = stdin.initialize() {
                sdk::init::apply(&request, &mut options).map_err(anyhow::Error::msg)?;
            }
            Some(stdin)
        }
        InputFormat::Text => None,
    };
    let session = app::build(&options, cwd, Endpoint::from_env()?, asker)?;
    if !session.ignored.is_empty() {
        eprintln!("{}", app::untrusted_notice(&session.ignored));
    }
    let mut engine = session.engine;
    let memory = session.memory;
    let model = engine.config().model.clone();
    if crate::api::pricing::pricing(&model).is_none() {
        eprintln!(
            "ouro: {model} is not a model ouro knows a price for; its cost is reported as 0 but is unknown (`ouro brains` lists the known models)"
        );
    }
    let renderer = tokio::spawn(print::render(
        session.events,
        args.output_format,
        args.verbose,
    ));
    let interrupted = CancellationToken::new();
    // SIGINT, SIGTERM and SIGHUP end the turn as Ctrl-C does; the exit status then says which.
    let received = crate::sys::shutdown::watch(interrupted.clone());
    let mut success = true;
    if let Some(prompt) = single {
        success = !engine.run(&prompt, &interrupted).await.kind.is_error();
        if let Some(memory) = &memory
            && !interrupted.is_cancelled()
        {
            app::memory::reflect_and_keep(&mut engine, memory).await;
        }
    } else if let Some(stdin) = stdin {
        // One turn per user line; the SDK's control requests are answered as they come.
        let controls = Arc::new(sdk::Controls::new(
            session.permissions.clone(),
            interrupted.clone(),
            outgoing,
            &engine,
            session.mcp.clone(),
        ));
        let (turns_tx, mut turns) = tokio::sync::mpsc::channel(16);
        let reader = tokio::spawn(sdk::read_stdin(stdin, turns_tx, controls.clone()));
        let mut skipped = false;
        let mut last_failed = false;
        loop {
            let item = tokio::select! {
                _ = interrupted.cancelled() => break,
                item = turns.recv() => item,
            };
            let Some(item) = item else { break };
            match item {
                Ok((prompt, turn)) => {
                    if let Some(model) = controls.take_model() {
                        engine.set_model(model);
                    }
                    if args.replay_user_messages {
                        let id = prompt.uuid.unwrap_or_else(crate::session::new_session_id);
                        engine.replay_prompt(&prompt.text, id);
                    }
                    if let Some(blocks) = prompt.blocks {
                        engine.prompt_content(blocks);
                    }
                    controls.start_turn(&turn);
                    // As Claude Code: the exit status is the last turn's (1 after an error
                    // result, which the SDKs raise as the process's error).
                    last_failed = engine.run(&prompt.text, &turn).await.kind.is_error();
                    controls.turn_ended(&engine);
                    if let Some(memory) = &memory
                        && !turn.is_cancelled()
                    {
                        app::memory::reflect_and_keep(&mut engine, memory).await;
                    }
                    // A driver that keeps this process warm leaves the conversation free
                    // between turns for a CLI to continue.
                    engine.let_go_of_transcript();
                }
                Err(problem) => {
                    // Said plainly, and the exit status says it too: a script must notice.
                    eprintln!(
                        "ouro: {problem} (expected {{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":...}}}})"
                    );
                    skipped = true;
                }
            }
            if interrupted.is_cancelled() {
                break;
            }
        }
        reader.abort();
        success &= !skipped && !last_failed;
    }
    engine.end_session("other").await;
    drop(engine);
    let _ = renderer.await;
    if let Some(code) = received.exit_code() {
        // What the session's commands left running (in the background, or re-parented to
        // ouro as their subreaper) ends with it.
        crate::sys::shutdown::end_descendants();
        return Ok(Exit::Signal(code));
    }
    Ok(if success {
        Exit::Success
    } else {
        Exit::Failure
    })
}

/// How a print-mode or SDK session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Success,
    Failure,
    /// Ended by this signal: 128 + its number.
    Signal(i32),
}

/// How long piped stdin may stay silent, when a prompt argument was given too, before ouro goes
/// on without it: a harness may leave stdin open without meaning to send anything.
const PIPED_WAIT: Duration = Duration::from_secs(3);

/// The prompt: the argument, what was piped on stdin, or both (`cat log | ouro -p "explain"`
/// sends the argument, a blank line, then the piped text, as Claude Code does).
fn prompt_text(args: &Args) -> anyhow::Result<String> {
    let piped = if std::io::stdin().is_terminal() {
        None
    } else {
        read_piped(args.prompt.is_some())?
    };
    let prompt = match (&args.prompt, piped) {
        (Some(p), Some(extra)) if !extra.trim().is_empty() => format!("{p}\n\n{extra}"),
        (Some(p), _) => p.clone(),
        (None, piped) => piped.unwrap_or_default(),
    };
    if prompt.trim().is_empty() {
        bail!("no prompt given: pass it as an argument (ouro -p \"...\") or on stdin");
    }
    Ok(prompt)
}

/// All of stdin. With `brief`, gives up (returns `None`) when nothing at all arrives within
/// [`PIPED_WAIT`]; once data flows it is read to the end. Waits with `poll` rather than on a
/// reading thread: a session's first request waits for this, and a thread costs more than the
/// read of an empty or closed stdin.
fn read_piped(brief: bool) -> anyhow::Result<Option<String>> {
    let timeout_ms = if brief {
        i32::try_from(PIPED_WAIT.as_millis()).unwrap_or(i32::MAX)
    } else {
        -1
    };
    let mut fd = libc::pollfd {
        fd: libc::STDIN_FILENO,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd, for the duration of the call.
        let ready = unsafe { libc::poll(&mut fd, 1, timeout_ms) };
        match ready {
            0 => {
                tracing::debug!("stdin stayed silent; going on with the prompt argument alone");
                return Ok(None);
            }
            n if n > 0 => break,
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e).context("could not wait for stdin");
                }
            }
        }
    }
    // A closed descriptor 0 has nothing to give.
    if fd.revents & libc::POLLNVAL != 0 {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut bytes)
        .context("could not read the prompt from stdin")?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}
