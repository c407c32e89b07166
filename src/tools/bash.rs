//! Bash: runs a shell command in the session's working directory, in its own process group,
//! with secrets scrubbed from its environment and its output streamed as it arrives.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{Progress, Tool, ToolContext, ToolError, ToolOutput};
use crate::event::ToolDisplay;
use crate::permissions::bash::is_read_only_command;
use crate::permissions::{Access, Confinement, FileDenials, protected_in_project};
use crate::sys::process::{Launch, SpawnError};
use crate::sys::sandbox::Support;
use crate::text::HeadTail;

mod confine;
mod stream;

pub use confine::{PrivateTmp, SandboxConfig, quiet_warnings};
use stream::read_output;

pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub(crate) const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output kept for the model; longer output loses its middle.
const MAX_OUTPUT_CHARS: usize = 30_000;
/// Between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(1);
/// How long output is still collected once the shell is gone. Background jobs (`server &`)
/// may hold the pipes open for ever; waiting for them would hang the call.
const DRAIN_GRACE: Duration = Duration::from_millis(250);

pub struct BashTool;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The shell command to run.
    pub command: String,
    /// Milliseconds to wait before the command is killed (default 120000, at most 600000).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// A few words saying what the command does, shown to the user.
    #[serde(default)]
    pub description: Option<String>,
}

impl Tool for BashTool {
    type Input = BashInput;

    const NAME: &'static str = "Bash";

    fn description(&self) -> &'static str {
        include_str!("../../tools/Bash.md")
    }

    fn validate(&self, input: &BashInput, _ctx: &ToolContext) -> Result<(), String> {
        if input.command.trim().is_empty() {
            return Err("The command is empty; put the shell command to run in `command`.".into());
        }
        match input.timeout {
            Some(ms) if ms == 0 || ms > MAX_TIMEOUT_MS => Err(format!(
                "timeout must be between 1 and {MAX_TIMEOUT_MS} milliseconds (10 minutes); \
                 {ms} is out of range. Omit it for the default of {DEFAULT_TIMEOUT_MS} ms."
            )),
            _ => Ok(()),
        }
    }

    fn access(&self, input: &BashInput, _ctx: &ToolContext) -> Access {
        Access::Execute(input.command.clone())
    }

    fn is_read_only(&self, input: &BashInput) -> bool {
        is_read_only_command(&input.command)
    }

    fn is_concurrency_safe(&self, input: &BashInput) -> bool {
        is_read_only_command(&input.command)
    }

    fn max_result_chars(&self) -> usize {
        MAX_OUTPUT_CHARS
    }

    fn summary(&self, input: &BashInput) -> String {
        input.command.clone()
    }

    async fn call(
        &self,
        input: BashInput,
        ctx: &ToolContext,
        progress: &Progress,
    ) -> Result<ToolOutput, ToolError> {
        let mut notes = Vec::new();
        let mut cwd = ctx.current_dir();
        if !cwd.is_dir() {
            let fallback = if ctx.start_dir.is_dir() {
                &ctx.start_dir
            } else {
                &ctx.project_root
            };
            if !fallback.is_dir() {
                return Err(ToolError::Invalid(format!(
                    "The working directory {} and the project directory {} no longer exist (deleted or moved during the session), so the command did not run. Check with the user before going on.",
                    cwd.display(),
                    ctx.project_root.display()
                )));
            }
            notes.push(format!(
                "The working directory {} no longer exists; the command ran in {} instead.",
                cwd.display(),
                fallback.display()
            ));
            cwd.clone_from(fallback);
            ctx.set_current_dir(cwd.clone());
        }
        let timeout_ms = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
        let shell = Shell {
            command: &input.command,
            cwd: &cwd,
            env: crate::sys::secrets::tool_env(std::env::vars_os(), &ctx.env_passthrough),
            timeout: Duration::from_millis(timeout_ms),
            max_chars: MAX_OUTPUT_CHARS,
            sandbox: Sandboxing::of(ctx),
        };
        let reviewed = ctx.confinement == Confinement::Reviewed;
        let protected_before = reviewed.then(|| protected_in_project(&ctx.project_root));
        let run = shell.run(&ctx.cancel, progress).await?;
        let mut is_error = false;
        if let Some(before) = protected_before {
            for made in protected_in_project(&ctx.project_root) {
                if before.contains(&made) {
                    continue;
                }
                let removed = if made.is_dir() {
                    std::fs::remove_dir_all(&made)
                } else {
                    std::fs::remove_file(&made)
                };
                is_error = true;
                notes.push(match removed {
                    Ok(()) => format!(
                        "The command created {}, a protected file only the user may add (it runs programs or instructs agents later); it was removed. Ask the user to create it.",
                        made.display()
                    ),
                    Err(e) => format!(
                        "The command created {}, a protected file only the user may add, and it could not be removed ({e}). Tell the user.",
                        made.display()
                    ),
                });
            }
        }
        if let Some(dir) = run.final_dir {
            // Commands are judged by the permission engine as if they start inside the project,
            // so a `cd` that leaves it must not carry over to the next, unjudged, command.
            if dir.starts_with(&ctx.project_root) {
                ctx.set_current_dir(dir);
            } else {
                notes.push(format!(
                    "The working directory was reset to {} because the command left the project.",
                    ctx.start_dir.display()
                ));
                ctx.set_current_dir(ctx.start_dir.clone());
            }
        }
        let code = run.status.and_then(|s| s.code()).filter(|_| !run.timed_out);
        if run.timed_out {
            is_error = true;
            notes.push(format!(
                "Command timed out after {timeout_ms} ms and was killed."
            ));
        } else if let Some(status) = run.status {
            if let Some(code) = status.code().filter(|&c| c != 0) {
                is_error = true;
                notes.push(format!("Exit code {code}"));
            } else if let Some(signal) = status.signal() {
                is_error = true;
                notes.push(format!("Killed by signal {signal}"));
            }
        }
        let output = run.output.trim_end();
        let mut content = output.to_string();
        for note in notes {
            if !content.is_empty() {
                content.push('\n');
            }
            content.push_str(&note);
        }
        if content.is_empty() {
            content = "(no output)".into();
        }
        let output = if is_error {
            ToolOutput::error(content)
        } else {
            ToolOutput::ok(content)
        };
        Ok(output.with_display(ToolDisplay::Exit { code }))
    }
}

/// One command run, separated from the tool so tests can give it an environment of their own.
struct Shell<'a> {
    command: &'a str,
    cwd: &'a Path,
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
    max_chars: usize,
    sandbox: Sandboxing<'a>,
}

/// What decides the call's OS sandbox.
struct Sandboxing<'a> {
    config: &'a SandboxConfig,
    confinement: Confinement,
    project_root: &'a Path,
    denials: &'a FileDenials,
}

impl<'a> Sandboxing<'a> {
    fn of(ctx: &'a ToolContext) -> Self {
        Sandboxing {
            config: &ctx.sandbox,
            confinement: ctx.confinement,
            project_root: &ctx.project_root,
            denials: &ctx.file_denials,
        }
    }

    /// Confines `launch` (the child confines itself before it runs bash). Nothing runs when
    /// the sandbox cannot be built.
    fn apply(&self, launch: &mut Launch, line: &str, cwd_file: &Path) -> Result<(), ToolError> {
        let plan = self.config.plan(
            self.confinement,
            self.project_root,
            line,
            cwd_file,
            self.denials,
        );
        if let Some(why) = plan.refused {
            return Err(ToolError::Invalid(why));
        }
        if let Some(tmpdir) = &plan.tmpdir {
            launch.env("TMPDIR", tmpdir);
        }
        let Some(policy) = plan.policy else {
            return Ok(());
        };
        if self.confinement == Confinement::ReadOnly {
            // Git treats an unreadable ~/.gitconfig as fatal; a read-only call gets none, and
            // runs nothing the repository's config names.
            launch.env("GIT_CONFIG_GLOBAL", "/dev/null");
            for (key, value) in crate::sys::git::safety_env(self.project_root) {
                launch.env(key, value);
            }
        }
        if matches!(Support::detect(), Support::Landlock(_)) {
            launch.policy = Some(policy);
        } else {
            confine::warn_unsupported(&Support::detect().describe());
        }
        Ok(())
    }
}

struct ShellRun {
    /// stdout and stderr interleaved as they arrived, middle elided past the cap.
    output: String,
    /// `None` when the shell was killed for its timeout.
    status: Option<ExitStatus>,
    timed_out: bool,
    /// Where the shell ended up, when it exited on its own.
    final_dir: Option<PathBuf>,
}

enum Ending {
    Exited(std::io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

impl Shell<'_> {
    async fn run(
        self,
        cancel: &CancellationToken,
        progress: &Progress,
    ) -> Result<ShellRun, ToolError> {
        let cwd_file =
            CwdFile::new().map_err(|e| ToolError::io("could not create a temp file", e))?;
        let mut launch = Launch::new("bash", self.cwd);
        launch.arg("-c").arg(script(self.command, &cwd_file.path));
        launch.env = self.env;
        self.sandbox
            .apply(&mut launch, self.command, &cwd_file.path)?;
        let spawned = launch.spawn().await.map_err(|e| match e {
            SpawnError::Sandbox(why) => ToolError::Invalid(format!(
                "The command was not run: {why}. Run `ouro sandbox check` to see what this \
                 machine supports."
            )),
            SpawnError::Io(e) => ToolError::io("could not start bash", e),
        })?;
        let mut group = spawned.process;
        let (stdout, stderr) = (Some(spawned.stdout), Some(spawned.stderr));
        let mut kept = HeadTail::new(self.max_chars);
        let ending = {
            let reading = read_output(stdout, stderr, &mut kept, progress);
            tokio::pin!(reading);
            let deadline = tokio::time::sleep(self.timeout);
            tokio::pin!(deadline);
            let mut reading_done = false;
            let ending = loop {
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => break Ending::Cancelled,
                    _ = &mut deadline => break Ending::TimedOut,
                    () = &mut reading, if !reading_done => reading_done = true,
                    status = group.wait() => break Ending::Exited(status),
                }
            };
            if !matches!(ending, Ending::Exited(_)) {
                group.terminate(KILL_GRACE).await;
            }
            if !reading_done {
                let _ = tokio::time::timeout(DRAIN_GRACE, &mut reading).await;
            }
            ending
        };
        let (status, timed_out) = match ending {
            Ending::Cancelled => return Err(ToolError::Cancelled),
            Ending::TimedOut => (None, true),
            Ending::Exited(status) => (
                Some(status.map_err(|e| ToolError::io("could not wait for bash", e))?),
                false,
            ),
        };
        let final_dir = if timed_out { None } else { cwd_file.read() };
        Ok(ShellRun {
            output: kept.finish(),
            status,
            timed_out,
            final_dir,
        })
    }
}

/// The command, preceded by an exit trap that records the final directory (so a `cd` carries
/// over to the next call) and exits with the command's own status.
fn script(command: &str, cwd_file: &Path) -> String {
    let target = cwd_file.to_string_lossy().replace('\'', r"'\''");
    format!(
        "__ouro_exit() {{ __ouro_status=$?; pwd -P >| '{target}' 2>/dev/null; exit $__ouro_status; }}\n\
         trap __ouro_exit EXIT\n\
         {command}\n"
    )
}

/// A temporary file the shell writes its final directory to; removed on drop.
struct CwdFile {
    path: PathBuf,
}

impl CwdFile {
    /// Created empty, so a sandbox rule can name it before the shell writes to it.
    fn new() -> std::io::Result<Self> {
        let path = crate::sys::keeper::scratch("cwd");
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        Ok(CwdFile { path })
    }

    fn read(&self) -> Option<PathBuf> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        let dir = PathBuf::from(text.trim_end_matches('\n'));
        (dir.is_absolute() && dir.is_dir()).then_some(dir)
    }
}

impl Drop for CwdFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::event::Event;

    async fn run(
        ctx: &ToolContext,
        command: &str,
        timeout: Option<u64>,
    ) -> Result<ToolOutput, ToolError> {
        let input = BashInput {
            command: command.to_string(),
            timeout,
            description: None,
        };
        BashTool.validate(&input, ctx).map_err(ToolError::Invalid)?;
        BashTool.call(input, ctx, &Progress::none()).await
    }

    /// The shell's mechanics under the sandbox of an approved call (tests/sandbox.rs covers
    /// the confinement itself).
    fn context() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut ctx = ToolContext::new(root);
        ctx.confinement = Confinement::Approved;
        (dir, ctx)
    }

    /// Dead, or a zombie nobody reaped yet (containers often lack a reaping init).
    fn gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z')),
        }
    }

    async fn wait_gone(pid: i32) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if gone(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    async fn read_pid(path: &Path) -> i32 {
        let start = Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(path)
                && let Ok(pid) = text.trim().parse()
            {
                return pid;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "no pid file");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn exit(code: i32) -> ToolDisplay {
        ToolDisplay::Exit { code: Some(code) }
    }

    #[tokio::test]
    async fn output_and_exit_code() {
        let (_d, ctx) = context();
        let out = run(&ctx, "echo hello; exit 3", None).await.unwrap();
        assert_eq!(
            out,
            ToolOutput::error("hello\nExit code 3").with_display(exit(3))
        );
        let out = run(&ctx, "echo fine", None).await.unwrap();
        assert_eq!(out, ToolOutput::ok("fine").with_display(exit(0)));
    }

    #[tokio::test]
    async fn stderr_is_included() {
        let (_d, ctx) = context();
        let out = run(&ctx, "echo to-out; echo to-err >&2", None)
            .await
            .unwrap();
        assert!(out.content.contains("to-out"), "{}", out.content);
        assert!(out.content.contains("to-err"), "{}", out.content);
        assert!(!out.is_error);
    }

    #[tokio::test]
    async fn empty_output() {
        let (_d, ctx) = context();
        assert_eq!(
            run(&ctx, "true", None).await.unwrap(),
            ToolOutput::ok("(no output)").with_display(exit(0))
        );
        assert_eq!(
            run(&ctx, "false", None).await.unwrap(),
            ToolOutput::error("Exit code 1").with_display(exit(1))
        );
    }

    #[tokio::test]
    async fn cd_persists_and_keeps_the_exit_code() {
        let (_d, ctx) = context();
        let out = run(&ctx, "mkdir -p 'a b/c' && cd 'a b/c' && exit 4", None)
            .await
            .unwrap();
        assert_eq!(out, ToolOutput::error("Exit code 4").with_display(exit(4)));
        let expected = ctx.project_root.join("a b/c");
        assert_eq!(ctx.current_dir(), expected);
        let out = run(&ctx, "pwd -P", None).await.unwrap();
        assert_eq!(out.content, expected.to_str().unwrap());
        run(&ctx, "cd ..", None).await.unwrap();
        assert_eq!(ctx.current_dir(), ctx.project_root.join("a b"));
    }

    #[tokio::test]
    async fn leaving_the_project_resets_the_directory_to_where_the_session_started() {
        let (_d, mut ctx) = context();
        let start = ctx.project_root.join("pkg");
        std::fs::create_dir_all(&start).unwrap();
        ctx.start_in(start.clone());
        let out = run(&ctx, "cd /", None).await.unwrap();
        assert!(out.content.contains("reset"), "{out:?}");
        assert_eq!(ctx.current_dir(), start);
    }

    #[tokio::test]
    async fn a_vanished_directory_falls_back_to_the_project_root() {
        let (_d, ctx) = context();
        ctx.set_current_dir(ctx.project_root.join("missing"));
        let out = run(&ctx, "pwd -P", None).await.unwrap();
        assert!(
            out.content.starts_with(ctx.project_root.to_str().unwrap()),
            "{}",
            out.content
        );
        assert!(out.content.contains("no longer exists"), "{}", out.content);
    }

    #[tokio::test]
    async fn a_vanished_project_stops_the_command_with_a_sentence() {
        let (dir, ctx) = context();
        ctx.set_current_dir(ctx.project_root.join("missing"));
        std::fs::remove_dir_all(dir.path()).unwrap();
        let err = run(&ctx, "pwd", None).await.unwrap_err().to_string();
        assert!(
            err.contains("no longer exist") && err.contains("did not run"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let (_d, ctx) = context();
        let pid_file = ctx.project_root.join("pid");
        let command = format!("sleep 60 & echo $! > '{}'; wait", pid_file.display());
        let out = run(&ctx, &command, Some(1_000)).await.unwrap();
        assert!(out.is_error);
        assert!(
            out.content.contains("timed out after 1000 ms"),
            "{}",
            out.content
        );
        let pid = read_pid(&pid_file).await;
        assert!(
            wait_gone(pid).await,
            "the command's child sleep {pid} survived"
        );
    }

    #[tokio::test]
    async fn cancellation_kills_the_whole_group() {
        let (_d, ctx) = context();
        let pid_file = ctx.project_root.join("pid");
        let command = format!("sleep 60 & echo $! > '{}'; wait", pid_file.display());
        let call = tokio::spawn({
            let ctx = ctx.clone();
            async move { run(&ctx, &command, None).await }
        });
        let pid = read_pid(&pid_file).await;
        assert!(!gone(pid));
        ctx.cancel.cancel();
        let result = call.await.unwrap();
        assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
        assert!(
            wait_gone(pid).await,
            "the command's child sleep {pid} survived"
        );
    }

    #[tokio::test]
    async fn huge_output_loses_its_middle() {
        let (_d, ctx) = context();
        let out = run(&ctx, "seq 1 200000", None).await.unwrap();
        assert!(
            out.content.starts_with("1\n2\n3\n"),
            "{}",
            &out.content[..20]
        );
        assert!(out.content.ends_with("199999\n200000"));
        assert!(out.content.chars().count() <= MAX_OUTPUT_CHARS);
        // `seq 1 200000` prints 1,288,895 bytes (the result drops the last newline); the note
        // counts exactly what is not shown.
        let (head, rest) = out.content.split_once("\n\n[... ").unwrap();
        let (note, tail) = rest.split_once(" ...]\n\n").unwrap();
        let bytes: usize = note.split(" bytes").next().unwrap().parse().unwrap();
        assert_eq!(head.len() + bytes + tail.len(), 1_288_894, "{note}");
    }

    #[tokio::test]
    async fn output_streams_to_progress() {
        let (_d, ctx) = context();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let input = BashInput {
            command: "echo one; sleep 0.2; echo two >&2".into(),
            timeout: None,
            description: None,
        };
        BashTool
            .call(input, &ctx, &Progress::new("call-1", Some(tx)))
            .await
            .unwrap();
        let mut streamed = String::new();
        while let Ok(Event::ToolProgress { id, chunk }) = rx.try_recv() {
            assert_eq!(id, "call-1");
            streamed.push_str(&chunk);
        }
        assert_eq!(streamed, "one\ntwo\n");
    }

    #[tokio::test]
    async fn secrets_are_scrubbed_unless_passed_through() {
        let (_d, ctx) = context();
        let vars = [
            ("MY_API_KEY", "k"),
            ("GH_TOKEN", "t"),
            ("DB_PASSWORD", "p"),
            ("DATABASE_URL", "postgres://user:pw@db.example/app"),
            ("HOMEPAGE", "https://example.com/a@b"),
            ("PLAIN", "ok"),
            ("ALLOWED_TOKEN", "yes"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let shell = Shell {
            command: r#"echo "${MY_API_KEY-unset} ${GH_TOKEN-unset} ${DB_PASSWORD-unset} ${DATABASE_URL-unset} $HOMEPAGE $PLAIN $ALLOWED_TOKEN""#,
            cwd: &ctx.project_root,
            env: crate::sys::secrets::tool_env(vars, &["ALLOWED_TOKEN".to_string()]),
            timeout: Duration::from_secs(60),
            max_chars: 1000,
            sandbox: Sandboxing::of(&ctx),
        };
        let run = shell.run(&ctx.cancel, &Progress::none()).await.unwrap();
        assert_eq!(
            run.output,
            "unset unset unset unset https://example.com/a@b ok yes\n"
        );
    }

    #[test]
    fn bad_timeouts_and_empty_commands_are_refused() {
        let (_d, ctx) = context();
        let input = |command: &str, timeout| BashInput {
            command: command.into(),
            timeout,
            description: None,
        };
        let err = BashTool
            .validate(&input("ls", Some(600_001)), &ctx)
            .unwrap_err();
        assert!(err.contains("between 1 and 600000"), "{err}");
        assert!(BashTool.validate(&input("ls", Some(0)), &ctx).is_err());
        assert!(BashTool.validate(&input("ls", Some(600_000)), &ctx).is_ok());
        assert!(BashTool.validate(&input("  ", None), &ctx).is_err());
    }
}
