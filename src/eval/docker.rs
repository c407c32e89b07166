//! `--env docker`: a Harbor task in its own image. The image is built once per task and run
//! (Docker's layer cache makes the next run's build quick), its working directory is copied
//! out once as the task's starting tree, and each trial's tree (a copy of it, a git repository
//! as on the host) is mounted back over that directory in a container of the trial's own. The
//! brain runs in the container (`docker exec`; this ouro mounted read-only, or the image's own
//! `claude`), then the tests, put in `/tests` only once the agent has finished, as Harbor
//! does; their reward file lands in `/logs/verifier`, a folder of the trial's that is mounted.
//! `OURO_DOCKER` names another client that takes the same commands (podman).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// Where this ouro is mounted in a trial's container.
const OURO_INSIDE: &str = "/opt/ouro/ouro";
/// Where the hidden tests go once the agent has finished (Harbor's place for them).
pub(super) const TESTS_INSIDE: &str = "/tests";
/// Where the trial's logs folder is mounted (Harbor's `/logs/verifier/reward.txt` lands there).
const LOGS_INSIDE: &str = "/logs";
/// What a trial's container runs while the brain and the tests are exec'd into it: nothing,
/// until it is removed (every image with a shell has it, busybox's too).
const IDLE: [&str; 3] = ["tail", "-f", "/dev/null"];
/// On every image and container ouro makes: `docker image prune --filter label=ouro.eval`.
const LABEL: &str = "ouro.eval=1";
/// The variables a brain in a container gets from the brain's environment: its API settings
/// (the rest of this machine's environment, PATH and HOME first, would be wrong in there).
const PASSED_PREFIXES: &[&str] = &["ANTHROPIC_", "CLAUDE_CODE_"];

/// The container client.
#[derive(Debug, Clone)]
pub(super) struct Docker {
    program: OsString,
}

/// A task's built image and the directory its tree is in.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Image {
    pub(super) id: String,
    pub(super) workdir: String,
}

impl Docker {
    pub(super) fn from_env() -> Docker {
        Docker {
            program: std::env::var_os("OURO_DOCKER")
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| "docker".into()),
        }
    }

    /// `Ok` when the engine answers; else why not.
    pub(super) async fn check(&self) -> Result<(), String> {
        self.run(["version", "--format", "{{.Server.Version}}"])
            .await
            .map(drop)
            .map_err(|why| format!("Docker does not answer ({why})"))
    }

    /// Builds `context` (a folder with a Dockerfile) and copies its image's working directory
    /// out to `tree`.
    pub(super) async fn prepare(
        &self,
        context: &Path,
        scratch: &Path,
        tree: &Path,
    ) -> Result<Image, String> {
        let iid = scratch.join("image-id");
        self.run([
            OsStr::new("build"),
            OsStr::new("--label"),
            OsStr::new(LABEL),
            OsStr::new("--iidfile"),
            iid.as_os_str(),
            context.as_os_str(),
        ])
        .await
        .map_err(|why| format!("the task's image did not build: {why}"))?;
        let id = std::fs::read_to_string(&iid)
            .map_err(|e| format!("the image build left no id: {e}"))?
            .trim()
            .to_string();
        let workdir = self
            .run([
                "image",
                "inspect",
                "--format",
                "{{.Config.WorkingDir}}",
                &id,
            ])
            .await?;
        if !workdir.starts_with('/') || workdir.trim_end_matches('/').is_empty() {
            return Err(
                "the task's image sets no WORKDIR: ouro mounts each trial's tree there, so the Dockerfile must name one (such as /app)".into(),
            );
        }
        // Never started: the command only stands in for an image that names none.
        let created = self
            .run([
                "create",
                "--label",
                LABEL,
                "--entrypoint",
                IDLE[0],
                &id,
                IDLE[1],
                IDLE[2],
            ])
            .await?;
        std::fs::create_dir_all(tree)
            .map_err(|e| format!("cannot make {}: {e}", tree.display()))?;
        let from = format!("{created}:{workdir}/.");
        let copied = self
            .run([OsStr::new("cp"), OsStr::new(&from), tree.as_os_str()])
            .await;
        let _ = self.run(["rm", "-f", &created]).await;
        copied.map_err(|why| format!("cannot copy {workdir} out of the task's image: {why}"))?;
        Ok(Image { id, workdir })
    }

    /// Starts trial `name`'s container with `tree` over the image's working directory and
    /// `logs` at `/logs`.
    pub(super) async fn start(
        &self,
        image: &Image,
        tree: &Path,
        logs: &Path,
    ) -> Result<Container, String> {
        let name = format!(
            "ouro-eval-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        std::fs::create_dir_all(logs)
            .map_err(|e| format!("cannot make {}: {e}", logs.display()))?;
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this ouro: {e}"))?;
        let mount = |from: &Path, to: &str, ro: bool| {
            let mut arg = OsString::from(from);
            arg.push(format!(":{to}{}", if ro { ":ro" } else { "" }));
            arg
        };
        let mut args: Vec<OsString> = ["run", "-d", "--name", &name, "--label", LABEL]
            .iter()
            .map(OsString::from)
            .collect();
        // The brain in there must reach the API: an API on this machine's loopback is reached
        // over the host's network.
        if api_is_local() {
            args.extend(["--network".into(), "host".into()]);
        }
        for (from, to, ro) in [
            (tree, image.workdir.as_str(), false),
            (logs, LOGS_INSIDE, false),
            (exe.as_path(), OURO_INSIDE, true),
        ] {
            args.extend(["-v".into(), mount(from, to, ro)]);
        }
        args.extend(
            ["--entrypoint", IDLE[0], &image.id, IDLE[1], IDLE[2]]
                .iter()
                .map(OsString::from),
        );
        // Removed when dropped, also when it was made but did not start.
        let container = Container {
            docker: self.clone(),
            name,
            workdir: image.workdir.clone(),
            removed: false,
        };
        self.run(&args)
            .await
            .map_err(|why| format!("the trial's container did not start: {why}"))?;
        Ok(container)
    }

    /// Runs the client with `args`: its standard output, trimmed, or why it failed.
    async fn run<I, S>(&self, args: I) -> Result<String, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = tokio::process::Command::new(&self.program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| format!("cannot run {}: {e}", self.program.to_string_lossy()))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(last_lines(&out.stderr))
        }
    }
}

/// Whether `ANTHROPIC_BASE_URL` names this machine.
fn api_is_local() -> bool {
    std::env::var("ANTHROPIC_BASE_URL")
        .ok()
        .and_then(|url| reqwest::Url::parse(&url).ok())
        .and_then(|url| url.host_str().map(str::to_string))
        .is_some_and(|host| {
            host == "localhost"
                || host == "[::1]"
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        })
}

/// The end of a failed command's error output, enough to say why.
fn last_lines(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
    if tail.is_empty() {
        "it failed and said nothing".into()
    } else {
        tail
    }
}

/// A trial's running container; removed when dropped.
pub(super) struct Container {
    docker: Docker,
    name: String,
    pub(super) workdir: String,
    removed: bool,
}

impl Container {
    /// A script that runs the brain's program in the container with the API settings of
    /// `env`: the brain's `program` for this trial.
    pub(super) fn brain_program(
        &self,
        dir: &Path,
        slug: &str,
        env: &[(OsString, OsString)],
    ) -> Result<PathBuf, String> {
        let inside = if slug.starts_with("claude@") {
            "claude"
        } else {
            OURO_INSIDE
        };
        let mut script = format!(
            "#!/bin/sh\nexec {} exec -i -w {}",
            quote(&self.docker.program.to_string_lossy()),
            quote(&self.workdir)
        );
        for (key, _) in env {
            let key = key.to_string_lossy();
            if PASSED_PREFIXES.iter().any(|p| key.starts_with(p)) {
                script.push_str(&format!(" -e {}", quote(&key)));
            }
        }
        script.push_str(&format!(" {} {inside} \"$@\"\n", quote(&self.name)));
        let path = dir.join("brain-in-container");
        std::fs::write(&path, script)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot make {} runnable: {e}", path.display()))?;
        Ok(path)
    }

    /// Puts the hidden `tests` in `/tests` and runs `command` in the working directory: exit 0
    /// passes; cut off (failed) at `limit`.
    pub(super) async fn verify(
        &self,
        tests: Option<&Path>,
        command: &str,
        limit: Duration,
    ) -> Result<bool, String> {
        if let Some(tests) = tests {
            self.docker
                .run(["exec", &self.name, "mkdir", "-p", TESTS_INSIDE])
                .await?;
            let mut from = tests.as_os_str().to_owned();
            from.push("/.");
            let to = format!("{}:{TESTS_INSIDE}", self.name);
            self.docker
                .run([OsStr::new("cp"), from.as_os_str(), OsStr::new(&to)])
                .await
                .map_err(|why| format!("cannot copy the task's tests in: {why}"))?;
        }
        let mut child = tokio::process::Command::new(&self.docker.program)
            .args(["exec", "-w", &self.workdir, &self.name, "sh", "-c", command])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run the tests: {e}"))?;
        match tokio::time::timeout(limit, child.wait()).await {
            Ok(Ok(status)) => Ok(status.success()),
            Ok(Err(e)) => Err(format!("the tests could not be waited for: {e}")),
            // The container, and the tests with it, go when the trial ends.
            Err(_) => Ok(false),
        }
    }

    /// Hands what the container made in the mounted folders back to this user (the container
    /// runs as root), then removes it without blocking the runtime.
    pub(super) async fn finish(mut self) {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        if uid != 0 {
            let owner = format!("{uid}:{gid}");
            let _ = self
                .docker
                .run([
                    "exec",
                    &self.name,
                    "chown",
                    "-R",
                    &owner,
                    &self.workdir,
                    LOGS_INSIDE,
                ])
                .await;
        }
        for args in REMOVE {
            let _ = self
                .docker
                .run(args.iter().chain([&self.name.as_str()]))
                .await;
        }
        self.removed = true;
    }
}

/// Removing a container: killed first (its idle command is PID 1, which ignores the SIGTERM
/// a plain stop sends, so a client that stops before removing would wait out its timeout).
const REMOVE: [&[&str]; 2] = [&["kill"], &["rm", "-f"]];

/// A container whose trial ended early is removed here, briefly blocking.
impl Drop for Container {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        for args in REMOVE {
            let _ = std::process::Command::new(&self.docker.program)
                .args(args.iter().chain([&self.name.as_str()]))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

use crate::text::shell_quote as quote;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_brain_runs_in_the_container_with_the_api_settings_only() {
        let dir = tempfile::tempdir().unwrap();
        let container = Container {
            // `true rm -f …` when dropped: nothing to remove here.
            docker: Docker {
                program: "true".into(),
            },
            name: "ouro-eval-1".into(),
            workdir: "/my app".into(),
            removed: false,
        };
        let env: Vec<(OsString, OsString)> = [
            ("ANTHROPIC_API_KEY", "k"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:1"),
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
        ]
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let path = container
            .brain_program(dir.path(), "ouro@anthropic/claude/sonnet", &env)
            .unwrap();
        let script = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            script,
            "#!/bin/sh\nexec 'true' exec -i -w '/my app' -e 'ANTHROPIC_API_KEY' -e 'ANTHROPIC_BASE_URL' 'ouro-eval-1' /opt/ouro/ouro \"$@\"\n"
        );
        let claude = container
            .brain_program(dir.path(), "claude@anthropic/claude/sonnet", &[])
            .unwrap();
        assert!(
            std::fs::read_to_string(claude)
                .unwrap()
                .ends_with(" 'ouro-eval-1' claude \"$@\"\n")
        );
    }

    #[test]
    fn a_failure_says_its_last_lines() {
        assert_eq!(last_lines(b""), "it failed and said nothing");
        assert_eq!(
            last_lines(b"step 1\n\nstep 2\nerror: no such file\n"),
            "step 1 | step 2 | error: no such file"
        );
    }
}
