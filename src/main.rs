//! The `ouro` binary: parse flags, pick a front end, run. Errors become `anyhow` chains only
//! at this edge and in the CLI front ends; modules below them return typed errors.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;

use ouro::cli::args::SandboxAction;
use ouro::cli::{Args, Command, headless};
use ouro::permissions::PermissionEngine;

fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == ouro::sys::keeper::ARG)
    {
        ouro::sys::keeper::run();
    }
    ouro::sys::keeper::enable();
    // glibc gives every thread that allocates its own malloc arena; with tokio's workers that is
    // megabytes of mostly empty heap for a process that allocates little. Two arenas suffice.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
    // SAFETY: no other thread exists yet.
    unsafe {
        ouro::sys::secrets::hide_credentials();
    }
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some((flag, why)) = ouro::cli::refused::first_refused(&argv) {
        eprintln!("ouro: {flag} is a Claude Code flag ouro does not have: {why}.");
        return ExitCode::FAILURE;
    }
    let mut args = Args::parse();
    args.take_trailing_prompt();
    // `-d` (Claude Code's --debug) names the filter; otherwise OURO_LOG does.
    if (args.debug_to_stderr || args.debug_file.is_some()) && args.debug.is_none() {
        args.debug = Some("debug".into());
    }
    let filter = match &args.debug {
        Some(filter) => tracing_subscriber::EnvFilter::try_new(filter)
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("debug")),
        None => tracing_subscriber::EnvFilter::try_from_env("OURO_LOG")
            // rmcp logs a server's failure as an error itself; ouro reports it in its own words.
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error,rmcp=off")),
    };
    match &args.debug_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path);
            match file {
                Ok(file) => tracing_subscriber::fmt()
                    .with_env_filter(filter)
                    .with_ansi(false)
                    .with_writer(std::sync::Mutex::new(file))
                    .init(),
                Err(e) => {
                    eprintln!(
                        "ouro: --debug-file {}: cannot write there ({e}); give a file in a folder that exists",
                        path.display()
                    );
                    return ExitCode::FAILURE;
                }
            }
        }
        None => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init(),
    }
    // Print mode drives its session from one thread: its work is a sequence (prompt, request,
    // tool calls whose files and processes go to the blocking pool), and worker threads cost a
    // session more than they give it: starting them, and a hand-off between threads at every
    // step of its first request.
    let single = args.is_headless() && args.command.is_none();
    let runtime = match runtime(single) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ouro: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ouro: {}", ouro::text::error_chain(e.chain()));
            ExitCode::FAILURE
        }
    }
}

/// At most this many async workers: they carry the engine's tasks and the calls' bookkeeping,
/// while files and processes are worked on the blocking pool.
const MAX_WORKERS: usize = 4;

/// The async runtime: with `single`, the calling thread alone (and the blocking pool);
/// otherwise one worker per CPU this process may run on, up to [`MAX_WORKERS`].
/// Tokio's default, one per CPU the cgroup allows, reads cgroup files at every start and, on a
/// 64-thread workstation, starts 64 threads before the first request.
fn runtime(single: bool) -> std::io::Result<tokio::runtime::Runtime> {
    if single {
        return tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
    }
    // SAFETY: an all-zero cpu_set_t is an empty set; sched_getaffinity fills it, and CPU_COUNT
    // only reads it.
    let cpus = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            usize::try_from(libc::CPU_COUNT(&set)).unwrap_or(1)
        } else {
            1
        }
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cpus.clamp(1, MAX_WORKERS))
        .enable_all()
        .build()
}

async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .context("cannot read the current directory")?;
    // `--worktree [NAME]`: the session runs inside that worktree, as its project root.
    if let Some(name) = &args.worktree {
        let worktrees = ouro::checkpoint::worktree::Worktrees::of(&cwd)
            .map_err(|e| anyhow::anyhow!("--worktree: {e}; run it inside the repository"))?;
        let name = Some(name.as_str()).filter(|n| !n.is_empty());
        let worktree = worktrees.start(name, None).map_err(|e| match name {
            Some(n) if n.contains(char::is_whitespace) => anyhow::anyhow!(
                "{e}. --worktree takes the next word as its name, as Claude Code's does: give the prompt first (`ouro \"{n}\" --worktree`) or name it (`--worktree=NAME`)"
            ),
            _ => e.into(),
        })?;
        eprintln!(
            "ouro: working in worktree {} (branch {}) at {}",
            worktree.id,
            worktree.branch,
            worktree.path.display()
        );
        std::env::set_current_dir(&worktree.path)
            .with_context(|| format!("cannot enter {}", worktree.path.display()))?;
        cwd = worktree.path.canonicalize()?;
    }
    match &args.command {
        Some(Command::Cats(cats)) => {
            let mut paths = cats.paths.clone();
            if paths.is_empty() {
                paths.push(".".into());
            }
            let options = ouro::bundle::CatsOptions {
                paths,
                include: cats.include.clone(),
                exclude: cats.exclude.clone(),
                max_tokens: cats.max_tokens,
                count_with_api: cats.count_tokens == Some(ouro::cli::args::CountTokens::Api),
                instructions: !cats.no_instructions,
                task: cats.task.clone(),
            };
            let curate = cats
                .ai_curate
                .clone()
                .map(|task| ouro::bundle::CurateOptions {
                    task,
                    brain: cats.brain.clone(),
                    threshold: cats.threshold,
                });
            let code = ouro::bundle::cats::run(&cwd, options, &cats.output, curate).await?;
            return Ok(exit_code(code));
        }
        Some(Command::Worktree { action }) => {
            use ouro::cli::args::WorktreeAction as W;
            let worktrees = ouro::checkpoint::worktree::Worktrees::of(&cwd)?;
            let message = match action {
                W::Start { name, branch } => {
                    let m = worktrees.start(name.as_deref(), branch.as_deref())?;
                    format!(
                        "worktree {} on branch {} at {}",
                        m.id,
                        m.branch,
                        m.path.display()
                    )
                }
                W::List => ouro::checkpoint::worktree::table(&worktrees.list()),
                W::Rewind { id, to } => worktrees.rewind(id, to)?,
                W::Merge { id, squash } => worktrees.merge(id, *squash)?,
                W::Archive { id } => worktrees.archive(id)?,
            };
            println!("{}", message.trim_end());
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Dogs(dogs)) => {
            let options = ouro::bundle::DogsOptions {
                bundle: dogs.bundle.clone().unwrap_or_default(),
                recover: dogs.recover,
                rollback: dogs.rollback,
                dir: cwd.join(&dogs.dir),
                yes: dogs.yes,
                dry_run: dogs.dry_run,
                verify: dogs.verify.clone(),
                revert_on_fail: dogs.revert_on_fail,
                manifest: dogs.manifest.as_ref().map(|m| cwd.join(m)),
                force: dogs.force,
                interactive: dogs.interactive,
                feedback: dogs.feedback.as_ref().map(|f| cwd.join(f)),
                worktree: dogs.worktree.clone(),
                yes_protected: dogs.yes_protected,
            };
            // Exit 1 says the verification failed or there was nothing to apply; anything that
            // stopped dogs before it applied (a bundle that cannot be read, no terminal to
            // confirm on) is a refusal, as a rejected bundle is: 2.
            return Ok(match ouro::bundle::dogs::run(&options) {
                Ok(code) => exit_code(code),
                Err(e) => {
                    eprintln!("ouro dogs: {e}");
                    ExitCode::from(2)
                }
            });
        }
        _ => {}
    }
    if let Some(Command::Memory { action }) = &args.command {
        memory_command(action, &ouro::app::project_root(&cwd)).await?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(Command::Eval { action }) = &args.command {
        let command = eval_command(action.clone(), &cwd)?;
        return Ok(exit_code(ouro::eval::main(command, &cwd).await?));
    }
    // `ouro agent ipc` runs its task here, not in the daemon.
    if let Some(Command::Agent {
        action: ouro::cli::daemon::AgentAction::Ipc { schema },
    }) = &args.command
    {
        if *schema {
            println!(
                "{}",
                serde_json::to_string_pretty(&ouro::agent::ipc::messages::schema())?
            );
            return Ok(ExitCode::SUCCESS);
        }
        return Ok(exit_code(ouro::agent::ipc::run_stdio().await));
    }
    if let Some(command) = args.command.as_ref().and_then(daemon_command) {
        return Ok(exit_code(ouro::daemon::command::run(command, &cwd).await?));
    }
    match &args.command {
        #[cfg(feature = "mock")]
        Some(Command::Demo) => return Ok(exit(ouro::cli::demo::run().await?)),
        #[cfg(feature = "mock")]
        Some(Command::Bench(bench)) => return Ok(exit(ouro::bench::run(bench).await?)),
        #[cfg(feature = "mock")]
        Some(Command::MockServer { scenario, port }) => {
            use ouro::mock::{MockServer, Scenario};
            let scenario = Scenario::from_file(scenario)?;
            let server = MockServer::start_on(
                std::net::SocketAddr::from(([127, 0, 0, 1], *port)),
                scenario,
            )
            .await?;
            println!("{}", server.url());
            eprintln!(
                "mock Messages API listening; set ANTHROPIC_BASE_URL={} (Ctrl-C stops)",
                server.url()
            );
            tokio::signal::ctrl_c().await?;
            server.shutdown().await;
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Sandbox {
            action: SandboxAction::Check,
        }) => {
            print!("{}", ouro::cli::sandbox::check(&cwd).await?);
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Mcp { action }) => {
            print!("{}", ouro::cli::mcp::run(action.clone(), &cwd).await?);
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Rewind(rewind)) => {
            print!("{}", ouro::cli::rewind::run(rewind, &cwd).await?);
            return Ok(ExitCode::SUCCESS);
        }
        #[cfg(feature = "serve")]
        Some(Command::Serve(serve)) => {
            let options = ouro::serve::ServeOptions {
                host: serve.host.clone(),
                port: serve.port,
                projects: serve.projects.clone(),
                token_file: serve.token_file.clone(),
                allow_origin: serve.allow_origin.clone(),
                permission_timeout: std::time::Duration::from_secs(serve.permission_timeout),
                pass_env: serve.pass_env.clone(),
                default_brain: serve.brain.clone(),
            };
            // The inbox also shows the daemon's agents' questions (none while no daemon runs).
            let elsewhere: Vec<std::sync::Arc<dyn ouro::brain::parked::Elsewhere>> =
                match ouro::daemon::Paths::current() {
                    Ok(paths) => vec![std::sync::Arc::new(
                        ouro::daemon::client::DaemonQuestions::new(paths),
                    )],
                    Err(_) => Vec::new(),
                };
            ouro::serve::run(options, elsewhere).await?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::AutoMode {
            action: ouro::cli::AutoModeAction::Defaults,
        }) => {
            println!("{}", ouro::exec::review::defaults_json());
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Doctor) => {
            let options = args.options()?;
            let base = std::env::var("ANTHROPIC_BASE_URL")
                .ok()
                .filter(|b| !b.trim().is_empty())
                .unwrap_or_else(|| ouro::api::client::DEFAULT_BASE_URL.to_string());
            let report = ouro::app::doctor::report(&options, &cwd, &base, None).await;
            print!("{report}");
            // A script checking the setup must notice a failed line.
            return Ok(if report.contains('✗') {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            });
        }
        Some(command) if command.refusal().is_some() => {
            if let Some((name, why)) = command.refusal() {
                eprintln!("ouro: `{name}` is a Claude Code command ouro does not have: {why}.");
            }
            return Ok(ExitCode::FAILURE);
        }
        Some(Command::Brains) => {
            print!("{}", ouro::brain::catalogue::catalogue());
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Permissions {
            flags,
            trust_project,
        }) => {
            let options = ouro::app::Options {
                permissions: flags.cli_permissions().map_err(anyhow::Error::msg)?,
                trust_project: *trust_project,
                ..Default::default()
            };
            let (layered, ignored) = ouro::app::load_settings(&options, &cwd)?;
            let root = ouro::app::project_root(&cwd);
            let engine = PermissionEngine::from_settings(&root, &layered, &options.permissions)?;
            print!("{}", engine.describe());
            if !ignored.is_empty() {
                println!("\n{}", ouro::app::untrusted_notice(&ignored));
            }
            return Ok(ExitCode::SUCCESS);
        }
        // The daemon's and the bundle's commands, run above.
        Some(_) | None => {}
    }
    if !args.is_headless() {
        let options = args.options()?;
        if let Some(code) =
            ouro::repl::run(options, args.brain.clone(), args.prompt.clone(), &cwd).await?
        {
            // A line editor may still wait for a key on another thread, which the runtime
            // would wait for on the way out.
            std::process::exit(code);
        }
        return Ok(ExitCode::SUCCESS);
    }
    Ok(match headless::run(&args, &cwd).await? {
        headless::Exit::Success => ExitCode::SUCCESS,
        headless::Exit::Failure => ExitCode::FAILURE,
        headless::Exit::Signal(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
    })
}

#[cfg(feature = "mock")]
fn exit(success: bool) -> ExitCode {
    if success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `ouro memory …`, handed to the memory front end.
async fn memory_command(
    action: &ouro::cli::memory::MemoryAction,
    root: &std::path::Path,
) -> anyhow::Result<()> {
    use ouro::cli::memory::MemoryAction as A;
    use ouro::memory as m;
    match action {
        A::List { limit, json, user } => m::list(root, *user, *limit, *json)?,
        A::Search {
            query,
            limit,
            json,
            user,
        } => m::search(root, *user, query, *limit, *json).await?,
        A::Show {
            id,
            history,
            json,
            user,
        } => m::show(root, *user, id, *history, *json)?,
        A::Forget { id, user } => m::forget(root, *user, id)?,
        A::Add {
            kind,
            id,
            name,
            description,
            code,
            user,
        } => {
            m::add(
                root,
                *user,
                &m::NewMemory {
                    kind,
                    id,
                    name,
                    description,
                    code: code.as_deref(),
                },
            )
            .await?
        }
        A::Apply { file, user } => m::apply_file(root, *user, file).await?,
        A::Export { markdown, user } => m::export(root, *user, *markdown)?,
        A::Import { file, user } => m::import(root, *user, file).await?,
        A::Embed { user } => m::embed(root, *user).await?,
        A::Recall { query, history } => m::recall(root, query, *history).await?,
    }
    Ok(())
}

/// `ouro eval …` as the eval front end takes it.
fn eval_command(
    action: ouro::cli::eval::EvalAction,
    cwd: &std::path::Path,
) -> anyhow::Result<ouro::eval::EvalCommand> {
    use ouro::cli::eval::EvalAction as A;
    use ouro::eval::EvalCommand as C;
    Ok(match action {
        A::Run {
            suite,
            brain,
            agent,
            trials,
            concurrency,
            shard,
            out,
            no_judge,
            judge_model,
            permission_mode,
            env,
            backend,
            ray_address,
            ray_binary,
            learn,
        } => C::Run(ouro::eval::RunOptions {
            suite: cwd.join(suite),
            brain,
            agent,
            trials,
            concurrency,
            shard: shard
                .as_deref()
                .map(ouro::eval::run::parse_shard)
                .transpose()?,
            out: out.map_or_else(|| ouro::eval::run::default_out(cwd), |o| cwd.join(o)),
            judge: !no_judge,
            judge_model,
            permission_mode,
            ray: (backend == ouro::cli::eval::EvalBackend::Ray).then(|| {
                ray_address
                    .or_else(|| std::env::var("RAY_ADDRESS").ok())
                    .unwrap_or_else(|| "http://127.0.0.1:8265".into())
            }),
            ray_binary: ray_binary.map(|b| cwd.join(b)),
            learn,
            memory_file: None,
            env: match env {
                None => ouro::eval::run::Env::Auto,
                Some(ouro::cli::eval::EvalEnv::Host) => ouro::eval::run::Env::Host,
                Some(ouro::cli::eval::EvalEnv::Docker) => ouro::eval::run::Env::Docker,
            },
        }),
        A::Merge { dirs, out } => C::Merge {
            dirs: dirs.iter().map(|d| cwd.join(d)).collect(),
            out: cwd.join(out),
        },
        A::Report { dir, html } => C::Report {
            dir: cwd.join(dir),
            html: html.map(|h| cwd.join(h)),
        },
        A::Export { dir, out, .. } => C::ExportSwebench {
            dir: cwd.join(dir),
            out: out.map(|o| cwd.join(o)),
        },
        A::Compare { a, b } => C::Compare {
            a: cwd.join(a),
            b: cwd.join(b),
        },
    })
}

fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// The daemon's side of `ouro agent`; `None` for `ipc`, which runs in this process.
fn agent_command(
    action: ouro::cli::daemon::AgentAction,
) -> Option<ouro::daemon::client::agent::AgentCommand> {
    use ouro::cli::daemon::AgentAction as A;
    use ouro::daemon::client::agent::AgentCommand as C;
    Some(match action {
        A::List { json } => C::List { json },
        A::Create { name, from } => C::Create { name, from },
        A::Rm { name } => C::Rm { name },
        A::Run {
            name,
            task,
            dir,
            context,
            worktree,
            brain,
            detach,
        } => C::Run {
            name,
            task,
            at: ouro::agents::start::StartAt {
                dir,
                context,
                worktree,
            },
            brain,
            detach,
        },
        A::Logs { name, follow } => C::Logs { name, follow },
        A::Stop { name } => C::Stop { name },
        A::Pending { json } => C::Pending { json },
        A::Approve { id, always } => C::Approve { id, always },
        A::Deny { id, message } => C::Deny { id, message },
        A::Ipc { .. } => return None,
    })
}

/// The daemon's commands, from their flags.
fn daemon_command(command: &Command) -> Option<ouro::daemon::command::Command> {
    use ouro::brain::Verb;
    use ouro::cli::daemon::{CloneAction, DaemonAction, DispatchArgs, DispatchFormat, ZoneAction};
    use ouro::daemon::command::Command as D;
    use ouro::daemon::command::ZoneCommand as Z;
    let dispatch = |args: &DispatchArgs, verb| D::Dispatch {
        name: args.name.clone(),
        verb,
        prompt: args.prompt.clone(),
        stream_json: args.output_format == DispatchFormat::StreamJson,
    };
    Some(match command {
        Command::Daemon { action } => match action {
            DaemonAction::Start => D::Start,
            DaemonAction::Stop => D::Stop,
            DaemonAction::Status => D::Status,
            DaemonAction::Run => D::Run,
            DaemonAction::Bridge => D::Bridge,
            DaemonAction::Socket => D::Socket,
            DaemonAction::Probe => D::Probe,
        },
        Command::Zone { action } => D::Zone(match action.clone() {
            ZoneAction::Add {
                name,
                target,
                no_check,
            } => Z::Add {
                name,
                target,
                no_check,
            },
            ZoneAction::List => Z::List,
            ZoneAction::Check { name } => Z::Check { name },
            ZoneAction::Install { name } => Z::Install { name },
            ZoneAction::Rm { name } => Z::Rm { name },
        }),
        Command::Clone { action } => match action {
            CloneAction::New {
                name,
                brain,
                dir,
                permission_mode,
                pass_env,
                zone,
                forward_env,
            } => D::CloneNew {
                name: name.clone(),
                brain: brain.clone(),
                dir: dir.clone(),
                permission_mode: permission_mode.clone(),
                pass_env: pass_env.clone(),
                zone: zone.clone(),
                forward_env: forward_env.clone(),
            },
            CloneAction::List => D::CloneList,
            CloneAction::Rm { name } => D::CloneRm { name: name.clone() },
        },
        Command::Ask(args) => dispatch(args, Verb::Ask),
        Command::Act(args) => dispatch(args, Verb::Act),
        Command::Watch { name } => D::Watch { name: name.clone() },
        Command::Talk { name, detach_keys } => D::Talk {
            name: name.clone(),
            detach_keys: detach_keys.clone(),
        },
        Command::Agent { action } => D::Agent(agent_command(action.clone())?),
        Command::Agents { json } => {
            D::Agent(ouro::daemon::client::agent::AgentCommand::Agents { json: *json })
        }
        _ => return None,
    })
}
