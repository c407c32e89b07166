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

use super::harbor::TESTS_INSIDE;
use super::task::Image;

/// Where this ouro is mounted in a trial's container.
const OURO_INSIDE: &str = "/opt/ouro/ouro";
/// Where the trial's logs folder is mounted (Harbor's `/logs/verifier/reward.txt` lands there).
const LOGS_INSIDE: &str = "/logs";
/// On every image and container ouro makes: `docker image prune --filter label=ouro.eval=1`.
const LABEL: &str = "ouro.eval=1";
/// The variables a brain in a container gets from the brain's environment: its API settings
/// and proxies (the rest of this machine's environment, PATH and HOME first, would be wrong
/// in there).
const PASSED_PREFIXES: &[&str] = &["ANTHROPIC_", "CLAUDE_CODE_"];
const PASSED_NAMES: &[&str] = &[
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
];
/// Says what this machine has (a bubblewrap to scrub with), not what the image has.
const NOT_PASSED: &[&str] = &["CLAUDE_CODE_SUBPROCESS_ENV_SCRUB"];
/// How long a container outlives its trial's limits at most: it ends (and is removed) by
/// itself even when ouro is killed before it could remove it.
const LIFETIME_MARGIN: Duration = Duration::from_secs(900);
/// How long a client command may take (a build: `BUILD_LIMIT`), so a stuck engine cannot hang
/// a run.
const LIMIT: Duration = Duration::from_secs(120);
const BUILD_LIMIT: Duration = Duration::from_secs(3600);
/// The repository is the trial's, mounted from this machine: git in the container (root, or
/// another user) must not refuse it as owned by someone else.
const SAFE_GIT: [&str; 3] = [
    "GIT_CONFIG_COUNT=1",
    "GIT_CONFIG_KEY_0=safe.directory",
    "GIT_CONFIG_VALUE_0=*",
];

/// The container client.
#[derive(Debug, Clone)]
pub(super) struct Docker {
    program: OsString,
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
        if !cfg!(target_os = "linux") {
            return Err("ouro runs in a task's container only from a Linux machine (it mounts itself there)".into());
        }
        self.run_for(
            ["version", "--format", "{{.Server.Version}}"],
            Duration::from_secs(20),
        )
        .await
        .map(drop)
        .map_err(|why| format!("Docker does not answer ({why})"))
    }

    /// Builds `context` (a folder with a Dockerfile) and copies its image's working directory
    /// out to `tree`; its trials will mount `ouro`.
    pub(super) async fn prepare(
        &self,
        context: &Path,
        scratch: &Path,
        tree: &Path,
        ouro: &Path,
    ) -> Result<Image, String> {
        let iid = scratch.join("image-id");
        self.run_for(
            [
                OsStr::new("build"),
                OsStr::new("--label"),
                OsStr::new(LABEL),
                OsStr::new("--iidfile"),
                iid.as_os_str(),
                context.as_os_str(),
            ],
            BUILD_LIMIT,
        )
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
                "sleep",
                &id,
                "1",
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
        Ok(Image {
            id,
            workdir,
            ouro: ouro.to_path_buf(),
        })
    }

    /// Starts a trial's container with `tree` over the image's working directory and `logs` at
    /// `/logs`; it ends by itself after `lifetime` and the margin.
    pub(super) async fn start(
        &self,
        image: &Image,
        tree: &Path,
        logs: &Path,
        lifetime: Duration,
    ) -> Result<Container, String> {
        let name = format!(
            "ouro-eval-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        std::fs::create_dir_all(logs)
            .map_err(|e| format!("cannot make {}: {e}", logs.display()))?;
        let mut args: Vec<OsString> = [
            "run",
            "-d",
            "--rm",
            "--name",
            &name,
            "--label",
            LABEL,
            // Mounts from any folder of this machine, also where SELinux labels them.
            "--security-opt",
            "label=disable",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        for var in SAFE_GIT {
            args.extend(["-e".into(), var.into()]);
        }
        // The brain in there must reach the API: an API on this machine's loopback is reached
        // over the host's network.
        if api_is_local() {
            args.extend(["--network".into(), "host".into()]);
        }
        for (from, to, ro) in [
            (tree, image.workdir.as_str(), false),
            (logs, LOGS_INSIDE, false),
            (image.ouro.as_path(), OURO_INSIDE, true),
        ] {
            args.extend(["-v".into(), mount(from, to, ro)?]);
        }
        let seconds = (lifetime + LIFETIME_MARGIN).as_secs().to_string();
        args.extend(
            ["--entrypoint", "sleep", &image.id, &seconds]
                .iter()
                .map(OsString::from),
        );
        // Removed when dropped, also when it was made but did not start.
        let mut container = Container {
            docker: self.clone(),
            name,
            workdir: image.workdir.clone(),
            logs: logs.to_path_buf(),
            hand_back: false,
            removed: false,
        };
        self.run(&args)
            .await
            .map_err(|why| format!("the trial's container did not start: {why}"))?;
        container.hand_back = container.makes_files_of_another_owner().await;
        Ok(container)
    }

    /// Runs the client with `args` (at most [`LIMIT`]): its standard output, trimmed, or why it
    /// failed.
    async fn run<I, S>(&self, args: I) -> Result<String, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_for(args, LIMIT).await
    }

    async fn run_for<I, S>(&self, args: I, limit: Duration) -> Result<String, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let running = tokio::process::Command::new(&self.program)
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(limit, running)
            .await
            .map_err(|_| format!("it did not answer in {} s", limit.as_secs()))?
            .map_err(|e| format!("cannot run {}: {e}", self.program.to_string_lossy()))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(last_lines(&out.stderr))
        }
    }
}

/// `-v FROM:TO[:ro]`; a path with a `:` cannot be said that way.
fn mount(from: &Path, to: &str, ro: bool) -> Result<OsString, String> {
    if from.as_os_str().as_encoded_bytes().contains(&b':') || to.contains(':') {
        return Err(format!(
            "{} cannot be mounted in a container (its path has a `:`): set TMPDIR to a folder without one",
            from.display()
        ));
    }
    let mut arg = OsString::from(from);
    arg.push(format!(":{to}{}", if ro { ":ro" } else { "" }));
    Ok(arg)
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
    /// The trial's folder mounted at `/logs`.
    logs: PathBuf,
    /// What the container makes belongs to another user here (a root container of a rootful
    /// engine, and this ouro not root): it is handed back before this machine reads it.
    hand_back: bool,
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
            let passed = PASSED_PREFIXES.iter().any(|p| key.starts_with(p))
                || PASSED_NAMES.contains(&key.as_ref());
            if passed && !NOT_PASSED.contains(&key.as_ref()) {
                script.push_str(&format!(" -e {}", quote(&key)));
            }
        }
        script.push_str(&format!(" {} {inside} \"$@\"\n", quote(&self.name)));
        let path = dir.join("brain-in-container");
        std::fs::write(&path, script)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot make {}: {e}", path.display()))?;
        Ok(path)
    }

    /// Ends every process in the container but its idle one: killing the `docker exec` client
    /// of the brain or the tests leaves theirs running in there.
    pub(super) async fn stop_processes(&self) {
        let _ = self
            .docker
            .run(["exec", "-u", "0", &self.name, "sh", "-c", "kill -KILL -1"])
            .await;
    }

    /// Whether a file the container makes in a mounted folder belongs to someone else here.
    async fn makes_files_of_another_owner(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        let probe = format!("{LOGS_INSIDE}/.owner");
        if self
            .docker
            .run(["exec", &self.name, "touch", &probe])
            .await
            .is_err()
        {
            return uid != 0;
        }
        let made = self.logs.join(".owner");
        let other = std::fs::metadata(&made).is_ok_and(|m| m.uid() != uid);
        let _ = self
            .docker
            .run(["exec", "-u", "0", &self.name, "rm", "-f", &probe])
            .await;
        other
    }

    /// Gives what the container made in the tree and the logs to this user, so the change can
    /// be read and the trial's folder removed.
    pub(super) async fn hand_back(&self) {
        if !self.hand_back {
            return;
        }
        // SAFETY: getuid and getgid cannot fail.
        let owner = unsafe { format!("{}:{}", libc::getuid(), libc::getgid()) };
        let _ = self
            .docker
            .run([
                "exec",
                "-u",
                "0",
                &self.name,
                "chown",
                "-R",
                &owner,
                &self.workdir,
                LOGS_INSIDE,
            ])
            .await;
    }

    /// Puts the hidden `tests` in `/tests` and runs `command` in the working directory: passed
    /// when the reward file it writes says so, else when it exits 0; failed when cut off at
    /// `limit`, whatever it wrote.
    pub(super) async fn verify(
        &self,
        tests: Option<&Path>,
        command: &str,
        limit: Duration,
    ) -> Result<bool, String> {
        // A reward is the tests' alone: none the agent left counts.
        let verifier = format!("{LOGS_INSIDE}/verifier");
        self.docker
            .run(["exec", "-u", "0", &self.name, "rm", "-rf", &verifier])
            .await?;
        if let Some(tests) = tests {
            self.docker
                .run(["exec", "-u", "0", &self.name, "mkdir", "-p", TESTS_INSIDE])
                .await?;
            let mut from = tests.as_os_str().to_owned();
            from.push("/.");
            let to = format!("{}:{}", self.name, TESTS_INSIDE);
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
        let exited = match tokio::time::timeout(limit, child.wait()).await {
            Ok(Ok(status)) => Some(status.success()),
            Ok(Err(e)) => return Err(format!("the tests could not be waited for: {e}")),
            Err(_) => {
                self.stop_processes().await;
                None
            }
        };
        self.hand_back().await;
        Ok(super::harbor::verdict(&self.logs.join("verifier"), exited))
    }

    /// Removes the container without blocking the runtime.
    pub(super) async fn finish(mut self) {
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
            logs: dir.path().into(),
            hand_back: false,
            removed: false,
        };
        let env: Vec<(OsString, OsString)> = [
            ("ANTHROPIC_API_KEY", "k"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:1"),
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
            ("CLAUDE_CODE_SUBPROCESS_ENV_SCRUB", "1"),
            ("HTTPS_PROXY", "http://proxy:3128"),
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
            "#!/bin/sh\nexec 'true' exec -i -w '/my app' -e 'ANTHROPIC_API_KEY' -e 'ANTHROPIC_BASE_URL' -e 'HTTPS_PROXY' 'ouro-eval-1' /opt/ouro/ouro \"$@\"\n"
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
    fn a_path_with_a_colon_is_refused_saying_what_to_do() {
        assert_eq!(
            mount(Path::new("/tmp/t"), "/app", true).unwrap(),
            OsString::from("/tmp/t:/app:ro")
        );
        let refused = mount(Path::new("/tmp/a:b"), "/app", false).unwrap_err();
        assert!(refused.contains("TMPDIR"), "{refused}");
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
