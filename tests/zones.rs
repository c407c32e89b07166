//! Zones against a real OpenSSH server: Debian's `sshd`, started here on a loopback port with
//! throwaway host and user keys, reached through the user's own `ssh` (pointed at a config file
//! by `OURO_SSH_COMMAND`). The far side's ouro home is the server's `SetEnv OURO_HOME`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use ouro::daemon::frame::{self, Frame, Header};

use crate::common::{Run, Sandbox, skip};

const SSHD: &str = "/usr/sbin/sshd";
/// The scripted stand-in for the claude CLI the far daemon runs for `claude@` clones (set by
/// the server for every login, as a user's profile would).
const FAKE_CLAUDE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_claude.py");

pub(crate) struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    server: tokio::process::Child,
}

impl Sshd {
    /// A server on a free loopback port, or `None` (a counted skip) without OpenSSH.
    pub(crate) async fn start() -> Option<Sshd> {
        Sshd::configured("").await
    }

    /// [`Sshd::start`] with `extra` lines in the server's config.
    async fn configured(extra: &str) -> Option<Sshd> {
        if !Path::new(SSHD).exists() || which("ssh").is_none() || which("ssh-keygen").is_none() {
            skip::not_installed("OpenSSH (openssh-server, openssh-client)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        for key in ["host_key", "user_key"] {
            let status = std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(key))
                .status()
                .unwrap();
            assert!(status.success());
        }
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // sshd run by root wants its privilege-separation folder.
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let remote = d.join("remote");
        for sub in ["run", "tmp"] {
            std::fs::create_dir_all(remote.join(sub)).unwrap();
        }
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
                 AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nUsePAM no\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
                 PermitRootLogin prohibit-password\nSetEnv OURO_HOME={r}/home XDG_RUNTIME_DIR={r}/run TMPDIR={r}/tmp OURO_CLAUDE_BIN={fake}\n{extra}",
                d = d.display(),
                r = remote.display(),
                fake = FAKE_CLAUDE
            ),
        )
        .unwrap();
        std::fs::write(
            d.join("ssh_config"),
            format!(
                "Host zonehost\n  HostName 127.0.0.1\n  Port {port}\n\
                 Host *\n  User {user}\n  IdentityFile {d}/user_key\n  IdentitiesOnly yes\n\
                 UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n",
                user = whoami(),
                d = d.display()
            ),
        )
        .unwrap();
        let server = listen(&d, port).await;
        Some(Sshd { dir, port, server })
    }

    /// Stops taking new connections (the ones up stay up, as when a host's sshd restarts).
    async fn stop_listening(&mut self) {
        let _ = self.server.kill().await;
    }

    /// Takes new connections again, on the same port.
    async fn listen_again(&mut self) {
        self.server = listen(&self.path(), self.port).await;
    }

    fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// The ssh command line ouro is told to use.
    pub(crate) fn ssh_command(&self) -> String {
        format!("ssh -F {}", self.path().join("ssh_config").display())
    }

    /// The far side's ouro home.
    pub(crate) fn remote_home(&self) -> PathBuf {
        self.path().join("remote/home")
    }

    pub(crate) fn target(&self) -> String {
        format!("ssh://127.0.0.1:{}", self.port)
    }

    pub(crate) async fn ouro(&self, sb: &Sandbox, args: &[&str]) -> Run {
        Run::from(
            self.local(sb, "http://127.0.0.1:9", args)
                .output()
                .await
                .unwrap(),
        )
    }

    /// `ouro ARGS` in `sb` against the API at `url`, with this server's ssh.
    fn local(&self, sb: &Sandbox, url: &str, args: &[&str]) -> tokio::process::Command {
        let mut cmd = sb.command(url, args);
        cmd.env("OURO_SSH_COMMAND", self.ssh_command());
        cmd
    }

    /// The zone `box` on this server, with this ouro installed there.
    async fn installed_zone(&self, sb: &Sandbox) {
        for args in [
            vec!["zone", "add", "box", &self.target(), "--no-check"],
            vec!["zone", "install", "box"],
        ] {
            let run = self.ouro(sb, &args).await;
            assert!(run.status.success(), "{}", run.debug());
        }
    }

    /// `clone new web` in the zone `box`, working in `sb`'s project, with the API's address
    /// and key forwarded from this shell.
    async fn zone_clone(&self, sb: &Sandbox, url: &str) -> Run {
        let root = sb.root().display().to_string();
        let args = [
            "clone",
            "new",
            "web",
            "--zone",
            "box",
            "--dir",
            &root,
            "--forward-env",
            "ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY",
        ];
        let made = Run::from(self.local(sb, url, &args).output().await.unwrap());
        assert!(made.status.success(), "{}", made.debug());
        made
    }

    /// Stops both daemons and ends the master connections.
    async fn finish(&self, sb: &Sandbox, url: &str) {
        let _ = self.local(sb, url, &["daemon", "stop"]).output().await;
        let mut far = sb.command(url, &["daemon", "stop"]);
        far.env("OURO_HOME", self.remote_home())
            .env("XDG_RUNTIME_DIR", self.path().join("remote/run"));
        let _ = far.output().await;
        end_masters(sb);
    }
}

/// Ends the zones' master connections (`ssh: …/run/zones/NAME.ssh [mux]`, kept for
/// ControlPersist) with the test instead of minutes later.
fn end_masters(sb: &Sandbox) {
    let _ = std::process::Command::new("pkill")
        .arg("-f")
        .arg(sb.home.path().join("run/zones"))
        .status();
}

/// sshd on `port` with the config in `d`, once it listens.
async fn listen(d: &Path, port: u16) -> tokio::process::Child {
    let server = tokio::process::Command::new(SSHD)
        .args(["-D", "-e", "-f"])
        .arg(d.join("sshd_config"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "sshd did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(program))
            .find(|p| p.exists())
    })
}

fn whoami() -> String {
    let out = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_zone_is_added_checked_installed_and_removed_over_real_ssh() {
    let Some(sshd) = Sshd::start().await else {
        return;
    };
    let sb = Sandbox::new();
    let target = sshd.target();
    let added = sshd.ouro(&sb, &["zone", "add", "box", &target]).await;
    assert!(added.status.success(), "{}", added.debug());
    assert!(
        added.stdout.contains("ouro zone install box"),
        "the host has no ouro yet: {}",
        added.debug()
    );
    let check = sshd.ouro(&sb, &["zone", "check", "box"]).await;
    assert!(!check.status.success(), "{}", check.debug());
    assert!(
        check.stderr.contains("ouro zone install box"),
        "{}",
        check.debug()
    );

    let installed = sshd.ouro(&sb, &["zone", "install", "box"]).await;
    assert!(installed.status.success(), "{}", installed.debug());
    let remote_ouro = sshd.remote_home().join("bin/ouro");
    assert!(remote_ouro.exists(), "{}", installed.debug());
    assert!(
        installed.stdout.contains("daemon protocol"),
        "{}",
        installed.debug()
    );
    // A copy cut off on the way (here: an ssh wrapper that passes on only 100 kB) fails and
    // leaves the working ouro there as it was.
    let whole = std::fs::metadata(&remote_ouro).unwrap().len();
    let cut = sshd.path().join("cut-ssh.sh");
    std::fs::write(&cut, "#!/bin/sh\nhead -c 100000 | ssh \"$@\"\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cut, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut cutting = sb.command("http://127.0.0.1:9", &["zone", "install", "box"]);
    cutting.env(
        "OURO_SSH_COMMAND",
        format!(
            "{} -F {}",
            cut.display(),
            sshd.path().join("ssh_config").display()
        ),
    );
    let failed = Run::from(cutting.output().await.unwrap());
    assert!(!failed.status.success(), "{}", failed.debug());
    assert!(
        failed.stderr.contains("could not copy ouro"),
        "{}",
        failed.debug()
    );
    assert_eq!(std::fs::metadata(&remote_ouro).unwrap().len(), whole);
    assert!(!sshd.remote_home().join("bin/ouro.new").exists());

    let check = sshd.ouro(&sb, &["zone", "check", "box"]).await;
    assert!(check.status.success(), "{}", check.debug());
    let listed = sshd.ouro(&sb, &["zone", "list"]).await;
    assert!(
        listed.stdout.contains("box") && listed.stdout.contains(&remote_ouro.display().to_string()),
        "{}",
        listed.debug()
    );

    // An alias of the user's ssh config is a target too.
    let alias = sshd
        .ouro(&sb, &["zone", "add", "aliased", "zonehost"])
        .await;
    assert!(alias.status.success(), "{}", alias.debug());

    // An unreachable host is refused with ssh's reason, unless --no-check.
    let refused = sshd
        .ouro(&sb, &["zone", "add", "far", "ssh://127.0.0.1:1"])
        .await;
    assert!(!refused.status.success(), "{}", refused.debug());
    assert!(
        refused.stderr.contains("cannot be reached") && refused.stderr.contains("refused"),
        "{}",
        refused.debug()
    );
    let forced = sshd
        .ouro(
            &sb,
            &["zone", "add", "far", "ssh://127.0.0.1:1", "--no-check"],
        )
        .await;
    assert!(forced.status.success(), "{}", forced.debug());
    let check = sshd.ouro(&sb, &["zone", "check", "far"]).await;
    assert!(
        !check.status.success() && check.stderr.contains("cannot be reached"),
        "{}",
        check.debug()
    );

    // A target that would be an ssh option is refused before ssh runs.
    let option = sshd
        .ouro(&sb, &["zone", "add", "evil", "-oProxyCommand=touch /tmp/x"])
        .await;
    assert!(!option.status.success(), "{}", option.debug());

    let removed = sshd.ouro(&sb, &["zone", "rm", "box"]).await;
    assert!(removed.status.success(), "{}", removed.debug());
    let listed = sshd.ouro(&sb, &["zone", "list"]).await;
    assert!(!listed.stdout.contains("box\t"), "{}", listed.debug());
    let zones = std::fs::metadata(sb.home.path().join("zones.json")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(zones.permissions().mode() & 0o777, 0o600);
    end_masters(&sb);
}

/// `ouro daemon bridge` on the far side carries the daemon's own frames: a hello and a status
/// request sent into ssh reach the remote daemon (started on demand), whose home is the far one.
#[tokio::test(flavor = "multi_thread")]
async fn the_bridge_carries_the_daemons_frames_over_ssh() {
    let Some(sshd) = Sshd::start().await else {
        return;
    };
    let sb = Sandbox::new();
    sshd.installed_zone(&sb).await;
    let remote_ouro = sshd.remote_home().join("bin/ouro");

    let ask = |request: Header| {
        let sshd = &sshd;
        let remote_ouro = remote_ouro.clone();
        async move {
            let mut words = sshd.ssh_command();
            words.push_str(" -T zonehost --");
            let mut words = words.split_whitespace();
            let mut ssh = tokio::process::Command::new(words.next().unwrap());
            ssh.args(words)
                .arg(format!("{} daemon bridge", remote_ouro.display()))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .kill_on_drop(true);
            let mut child = ssh.spawn().unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let mut stdout = child.stdout.take().unwrap();
            let hello = Header::Hello {
                protocol: 1,
                version: "test".into(),
            };
            for header in [hello, request] {
                frame::write(
                    &mut stdin,
                    &Frame {
                        header,
                        payload: Vec::new(),
                    },
                )
                .await
                .unwrap();
            }
            let welcome = frame::read(&mut stdout).await.unwrap().unwrap();
            assert!(
                matches!(welcome.header, Header::Welcome { .. }),
                "{welcome:?}"
            );
            frame::read(&mut stdout).await.unwrap().unwrap().header
        }
    };
    match ask(Header::Status).await {
        Header::StatusReport { home, pid, .. } => {
            assert_eq!(home, sshd.remote_home());
            assert!(pid > 0);
        }
        other => panic!("expected a status report, got {other:?}"),
    }
    let stopped = ask(Header::Stop).await;
    assert!(matches!(stopped, Header::Ok { .. }), "{stopped:?}");
    end_masters(&sb);
}

/// A clone in a zone: made there through the local daemon with the API's address and key
/// forwarded from this shell, asked through the relay (the mock API answers the far brain),
/// listed with its zone, and removed there; the forwarded key reaches no file on either side.
#[tokio::test(flavor = "multi_thread")]
async fn a_clone_in_a_zone_answers_ask_through_the_relay() {
    let Some(sshd) = Sshd::start().await else {
        return;
    };
    let sb = Sandbox::new();
    sshd.installed_zone(&sb).await;
    let mock = crate::common::server(serde_json::json!({"turns": [
        {"content": [{"type": "text", "text": "an answer from the zone"}]},
        {"content": [{"type": "text", "text": "the same conversation"}]}
    ]}))
    .await;
    let url = mock.url();
    let run = |args: &'static [&'static str]| {
        let mut cmd = sshd.local(&sb, &url, args);
        async move { Run::from(cmd.output().await.unwrap()) }
    };
    let made = sshd.zone_clone(&sb, &url).await;
    assert!(made.stdout.contains("zone box"), "{}", made.debug());
    assert!(
        sshd.remote_home()
            .join("daemon/clones/web/clone.json")
            .exists()
    );

    let asked = run(&["ask", "web", "hello over there"]).await;
    assert!(asked.status.success(), "{}", asked.debug());
    assert!(
        asked.stdout.contains("an answer from the zone"),
        "{}",
        asked.debug()
    );
    // The far daemon's socket is forwarded here through the master: no bridge process.
    assert!(
        forwarded_sockets(&sb) == 1,
        "no forwarded socket in {}",
        sb.home.path().join("run/zones").display()
    );
    let again = run(&["ask", "web", "and again"]).await;
    assert!(
        again.stdout.contains("the same conversation"),
        "{}",
        again.debug()
    );
    let requests = crate::common::bodies(&mock);
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].to_string().contains("hello over there"),
        "the second turn continues the first's conversation"
    );

    let listed = run(&["clone", "list"]).await;
    assert!(
        listed.stdout.contains("ZONE")
            && listed
                .stdout
                .lines()
                .any(|l| l.starts_with("web") && l.contains("box")),
        "{}",
        listed.debug()
    );
    for home in [sb.home.path(), sshd.remote_home().as_path()] {
        assert!(
            !contains_anywhere(home, crate::common::API_KEY.as_bytes()),
            "the forwarded key reached a file under {}",
            home.display()
        );
    }

    let removed = run(&["clone", "rm", "web"]).await;
    assert!(removed.status.success(), "{}", removed.debug());
    assert!(!sshd.remote_home().join("daemon/clones/web").exists());
    let listed = run(&["clone", "list"]).await;
    assert!(!listed.stdout.contains("web"), "{}", listed.debug());
    sshd.finish(&sb, &url).await;
}

/// How many forwarded daemon sockets the zones' folder holds.
fn forwarded_sockets(sb: &Sandbox) -> usize {
    std::fs::read_dir(sb.home.path().join("run/zones"))
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".fwd"))
                .count()
        })
        .unwrap_or(0)
}

/// A host whose sshd refuses socket forwarding is reached through `ouro daemon bridge`: the
/// forward is tried once, its stream closed at once, and every stream after goes the other way.
#[tokio::test(flavor = "multi_thread")]
async fn a_host_that_refuses_socket_forwarding_is_reached_through_the_bridge() {
    let Some(sshd) = Sshd::configured("AllowStreamLocalForwarding no\n").await else {
        return;
    };
    let sb = Sandbox::new();
    sshd.installed_zone(&sb).await;
    let mock = crate::common::server(serde_json::json!({"turns": [
        {"content": [{"type": "text", "text": "bridged answer"}]},
        {"content": [{"type": "text", "text": "bridged again"}]}
    ]}))
    .await;
    let url = mock.url();
    sshd.zone_clone(&sb, &url).await;
    for (question, answer) in [("one", "bridged answer"), ("two", "bridged again")] {
        let asked = Run::from(
            sshd.local(&sb, &url, &["ask", "web", question])
                .output()
                .await
                .unwrap(),
        );
        assert!(asked.status.success(), "{}", asked.debug());
        assert!(asked.stdout.contains(answer), "{}", asked.debug());
    }
    // The forward was made (ssh makes it here without asking the host): only its streams
    // were refused.
    assert_eq!(forwarded_sockets(&sb), 1);
    sshd.finish(&sb, &url).await;
}

fn contains_anywhere(dir: &Path, needle: &[u8]) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            contains_anywhere(&path, needle)
        } else {
            std::fs::read(&path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
        }
    })
}

/// Killing the zone's ssh in the middle of a turn loses nothing: the local daemon reconnects
/// with backoff and follows the far clone again, the asking client gets the turn's answer
/// (the far brain went on meanwhile), and the next `ask` continues the same conversation.
#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_link_mid_turn_reconnects_and_loses_nothing() {
    let Some(sshd) = Sshd::start().await else {
        return;
    };
    let sb = Sandbox::new();
    sshd.installed_zone(&sb).await;
    let mock = crate::common::server(serde_json::json!({"turns": [
        {"content": [{"type": "text", "text": "finished far away"}], "hold_after_events": 2},
        {"content": [{"type": "text", "text": "picked up again"}]}
    ]}))
    .await;
    let url = mock.url();
    sshd.zone_clone(&sb, &url).await;

    let mut asking = sshd
        .local(&sb, &url, &["ask", "web", "a long question"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while crate::common::bodies(&mock).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the far brain never asked the API"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    end_masters(&sb);
    // The client hears the link dropped and that its daemon reconnected…
    let mut stderr = asking.stderr.take().unwrap();
    let mut said = String::new();
    while !said.contains("reconnected to the zone box") {
        use tokio::io::AsyncReadExt;
        let mut chunk = [0u8; 1024];
        let read = tokio::time::timeout_at(deadline, stderr.read(&mut chunk))
            .await
            .unwrap_or_else(|_| panic!("the client was never told: {said:?}"))
            .unwrap();
        assert!(read > 0, "the client ended: {said:?}");
        said.push_str(&String::from_utf8_lossy(&chunk[..read]));
    }
    // …and once it follows the far turn again, that turn may finish.
    assert!(said.contains("reconnecting"), "{said}");
    mock.release();
    let rest = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest).await;
        rest
    });
    let cut = Run::from(asking.wait_with_output().await.unwrap());
    let said = said + &rest.await.unwrap();
    assert!(cut.status.success(), "{said}{}", cut.debug());
    assert!(
        cut.stdout.contains("finished far away"),
        "{said}{}",
        cut.debug()
    );

    let again = Run::from(
        sshd.local(&sb, &url, &["ask", "web", "are you there?"])
            .output()
            .await
            .unwrap(),
    );
    assert!(again.status.success(), "{}", again.debug());
    assert!(
        again.stdout.contains("picked up again"),
        "{}",
        again.debug()
    );
    let requests = crate::common::bodies(&mock);
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].to_string().contains("finished far away"),
        "the turn cut off here was finished there: {}",
        requests[1]
    );
    sshd.finish(&sb, &url).await;
}

/// While the link is down the far turn goes on to its end; once the link is back, a `watch`
/// through the zone is sent the events it missed (the text streamed in the gap) and the cut-off
/// `ask` gets the turn's answer — not "it ended unseen".
#[tokio::test(flavor = "multi_thread")]
async fn the_events_of_a_gap_reach_the_clients_once_the_link_is_back() {
    let Some(mut sshd) = Sshd::start().await else {
        return;
    };
    let sb = Sandbox::new();
    sshd.installed_zone(&sb).await;
    // Four events: the message's start, the first block's and its first delta; then held.
    let mock = crate::common::server(serde_json::json!({"turns": [
        {"content": [
            {"type": "text", "text": "before the gap."},
            {"type": "text", "text": "streamed while the link was down"}
        ], "hold_after_events": 4}
    ]}))
    .await;
    let url = mock.url();
    sshd.zone_clone(&sb, &url).await;
    let mut watch = sshd
        .local(&sb, &url, &["watch", "web"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut watched = watch.stdout.take().unwrap();
    let mut said = watch.stderr.take().unwrap();
    let mut seen = String::new();
    // The watcher follows before the turn starts.
    read_until(&mut said, &mut String::new(), "watching").await;
    let asking = sshd
        .local(&sb, &url, &["ask", "web", "a question over a bad link"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    mock.wait_held(1).await;
    read_until(&mut watched, &mut seen, "befor").await;

    // The link drops and cannot be made again until the far turn has ended.
    sshd.stop_listening().await;
    end_masters(&sb);
    mock.release();
    let mut far = sb.command(&url, &["clone", "list"]);
    far.env("OURO_HOME", sshd.remote_home())
        .env("XDG_RUNTIME_DIR", sshd.path().join("remote/run"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let listed = Run::from(far.output().await.unwrap());
        let line = listed
            .stdout
            .lines()
            .find(|l| l.starts_with("web"))
            .unwrap_or_default()
            .to_string();
        if !line.is_empty() && !line.contains("busy") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the far turn never ended: {}",
            listed.debug()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sshd.listen_again().await;

    read_until(&mut watched, &mut seen, "streamed while the link was down").await;
    let asked = Run::from(asking.wait_with_output().await.unwrap());
    assert!(asked.status.success(), "{}", asked.debug());
    assert!(
        asked.stdout.contains("streamed while the link was down"),
        "{}",
        asked.debug()
    );
    assert_eq!(crate::common::bodies(&mock).len(), 1);
    let _ = watch.kill().await;
    sshd.finish(&sb, &url).await;
}

/// Reads `from` into `seen` until it holds `needle` (a minute at most).
async fn read_until(
    from: &mut (impl tokio::io::AsyncRead + Unpin),
    seen: &mut String,
    needle: &str,
) {
    use tokio::io::AsyncReadExt;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !seen.contains(needle) {
        let mut chunk = [0u8; 4096];
        let read = tokio::time::timeout_at(deadline, from.read(&mut chunk))
            .await
            .unwrap_or_else(|_| panic!("{needle:?} never came: {seen:?}"))
            .unwrap();
        assert!(read > 0, "the output ended before {needle:?}: {seen:?}");
        seen.push_str(&String::from_utf8_lossy(&chunk[..read]));
    }
}

/// `talk` through a zone: keys reach the far brain's own UI and its output comes back, a
/// watcher attaching late (through the zone too) is drawn the screen as it is, a resize
/// reaches the brain, and the detach keys end the talk.
#[tokio::test(flavor = "multi_thread")]
async fn talk_through_a_zone_relays_keys_the_screen_a_resize_and_detach() {
    use crate::common::pty::{Options, Term};
    let Some(sshd) = Sshd::start().await else {
        return;
    };
    let sb = Sandbox::new();
    sshd.installed_zone(&sb).await;
    let url = "http://127.0.0.1:9";
    let root = sb.root().display().to_string();
    let args = [
        "clone",
        "new",
        "web",
        "--zone",
        "box",
        "--dir",
        &root,
        "--brain",
        "claude@anthropic/claude/sonnet",
    ];
    let made = Run::from(sshd.local(&sb, url, &args).output().await.unwrap());
    assert!(made.status.success(), "{}", made.debug());
    let ssh = sshd.ssh_command();
    let env = [("OURO_SSH_COMMAND", ssh.as_str())];
    let talk = || {
        Term::start(
            &sb,
            url,
            Options {
                args: &["talk", "web"],
                env: &env,
                ..Options::default()
            },
        )
    };
    let mut term = talk();
    term.expect("FAKE CLAUDE TUI ready");
    term.line("hello brain");
    term.expect("got: hello brain");
    // A watcher attaching late, through the zone too, is drawn the screen as it is.
    let mut watch = sshd
        .local(&sb, url, &["watch", "web"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = String::new();
    let mut out = watch.stdout.take().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !seen.contains("got: hello brain") {
        use tokio::io::AsyncReadExt;
        let mut chunk = [0u8; 4096];
        let read = tokio::time::timeout_at(deadline, out.read(&mut chunk))
            .await
            .unwrap_or_else(|_| panic!("the watcher never saw the screen: {seen:?}"))
            .unwrap();
        assert!(read > 0, "the watcher ended: {seen:?}");
        seen.push_str(&String::from_utf8_lossy(&chunk[..read]));
    }
    term.resize(100, 30);
    term.expect("size: 100x30");
    term.send("\x10\x11");
    term.expect("detached from web");
    assert!(term.wait_exit().success(), "{}", term.text());
    let _ = watch.kill().await;
    sshd.finish(&sb, url).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bench_relay_through_a_zone_reports_it_beside_plain_ssh_and_leaves_nothing_there() {
    let Some(sshd) = Sshd::start().await else {
        return;
    };
    let sb = Sandbox::new();
    sshd.installed_zone(&sb).await;
    let args = [
        "bench",
        "--turns",
        "1",
        "--calls-per-turn",
        "1",
        "--files",
        "10",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--json",
        "--relay",
        "--zone",
        "box",
    ];
    let run = sshd.ouro(&sb, &args).await;
    assert!(run.status.success(), "{}", run.debug());
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let zone = &report["relay_zone"];
    assert_eq!(zone["zone"], "box", "{zone}");
    for key in [
        "zone_p50_ms",
        "zone_p99_ms",
        "ssh_p50_ms",
        "ssh_p99_ms",
        "zone_mb_per_sec",
        "ssh_mb_per_sec",
    ] {
        assert!(zone[key].as_f64().unwrap() > 0.0, "{key} in {zone}");
    }
    assert!(zone["overhead_p99_ms"].is_f64(), "{zone}");
    let targets = report["targets"].as_array().unwrap();
    assert!(
        targets.iter().any(|t| t["name"]
            .as_str()
            .unwrap_or("")
            .contains("zone box relay overhead")),
        "{targets:?}"
    );
    // The scratch daemon and its folder are gone from the host; the user's zone is as it was.
    let tmp = sshd.path().join("remote/tmp");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left on the host: {left:?}");
    let listed = sshd.ouro(&sb, &["zone", "list"]).await;
    assert!(
        listed.stdout.contains("/remote/home/bin/ouro"),
        "{}",
        listed.debug()
    );
    end_masters(&sb);
}

/// A question the far brain waits on when the link drops is not lost: the acting client is
/// told its daemon reconnected, `ouro agent pending` here lists the question through the zone,
/// `ouro agent approve` answers it there, and the client gets the turn's answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_question_waiting_when_the_link_drops_is_answered_from_here() {
    let Some(sshd) = Sshd::start().await else {
        return;
    };
    let sb = Sandbox::new();
    sshd.installed_zone(&sb).await;
    let mock = crate::common::server(serde_json::json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Bash",
                      "input": {"command": "touch made-in-zone.txt"}}]},
        {"content": [{"type": "text", "text": "Made it far away."}]}
    ]}))
    .await;
    let url = mock.url();
    sshd.zone_clone(&sb, &url).await;
    let mut acting = sshd
        .local(&sb, &url, &["act", "web", "make the file"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = acting.stderr.take().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut said = String::new();
    let mut read_until = async |said: &mut String, text: &str| {
        use tokio::io::AsyncReadExt;
        while !said.contains(text) {
            let mut chunk = [0u8; 1024];
            let read = tokio::time::timeout_at(deadline, stderr.read(&mut chunk))
                .await
                .unwrap_or_else(|_| panic!("never saw {text:?}: {said:?}"))
                .unwrap();
            assert!(read > 0, "the client ended before {text:?}: {said:?}");
            said.push_str(&String::from_utf8_lossy(&chunk[..read]));
        }
    };
    read_until(&mut said, "web wants to run Bash(touch made-in-zone.txt)").await;
    end_masters(&sb);
    read_until(&mut said, "reconnected to the zone box").await;

    let pending = sshd.ouro(&sb, &["agent", "pending", "--json"]).await;
    assert!(pending.status.success(), "{}", pending.debug());
    let questions: serde_json::Value = serde_json::from_str(&pending.stdout).unwrap();
    let question = questions
        .as_array()
        .and_then(|q| q.iter().find(|q| q["agent"] == "web"))
        .unwrap_or_else(|| panic!("{}", pending.debug()))
        .clone();
    assert_eq!(question["tool"], "Bash", "{question}");
    let id = question["id"].as_str().unwrap();
    let approved = sshd.ouro(&sb, &["agent", "approve", id]).await;
    assert!(approved.status.success(), "{}", approved.debug());
    assert!(approved.stdout.contains("zone box"), "{}", approved.debug());

    read_until(&mut said, "allowed").await;
    let rest = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest).await;
        rest
    });
    let done = Run::from(acting.wait_with_output().await.unwrap());
    let said = said + &rest.await.unwrap();
    assert!(done.status.success(), "{said}{}", done.debug());
    assert!(
        done.stdout.contains("Made it far away."),
        "{said}{}",
        done.debug()
    );
    assert_eq!(
        said.matches("wants to run").count(),
        1,
        "asked once: {said}"
    );
    assert!(sb.root().join("made-in-zone.txt").exists());
    sshd.finish(&sb, &url).await;
}
