//! The user's own `ssh`, as zones use it: a target parsed so no part of it can pass for an
//! option, and every command through one master connection per zone (ControlMaster), so a
//! check, an install and every relayed stream share one TCP connection and one login.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::super::{DaemonError, Paths};
use super::{Probe, Zone};

/// `OURO_SSH_COMMAND` replaces `ssh` (words split on spaces), as `GIT_SSH_COMMAND` does for
/// git: another config file (`ssh -F FILE`), a wrapper.
pub(super) const SSH_COMMAND_ENV: &str = "OURO_SSH_COMMAND";
/// How long a check's ssh may take, login included.
const CHECK_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a copy's end may take once everything was written.
const COPY_DRAIN: Duration = Duration::from_secs(600);
/// How long an idle master connection stays up after its last stream.
const PERSIST: &str = "ControlPersist=600";

/// Where a zone is: `ssh://[user@]host[:port]`, or a `Host` alias of the user's ssh config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Url {
        user: Option<String>,
        host: String,
        port: Option<u16>,
    },
    Alias(String),
}

impl Target {
    pub fn parse(text: &str) -> Result<Target, String> {
        let bad = |why: &str| {
            format!(
                "{text:?} is not a zone target ({why}): give ssh://[user@]host[:port] or a Host alias from ~/.ssh/config"
            )
        };
        let Some(rest) = text.strip_prefix("ssh://") else {
            if !word(text) {
                return Err(bad(
                    "an alias is letters, digits, '.', '_' and '-', not starting with '-'",
                ));
            }
            return Ok(Target::Alias(text.to_string()));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((user, hostport)) => (Some(user), hostport),
            None => (None, rest),
        };
        if user.is_some_and(|u| !word(u)) {
            return Err(bad("the user name"));
        }
        let (host, port) = if let Some(bracketed) = hostport.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| bad("an unclosed '['"))?;
            (host, after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (hostport, None),
            }
        };
        let port = port
            .map(|p| {
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| bad("the port"))
            })
            .transpose()?;
        let host_ok = !host.is_empty()
            && !host.starts_with('-')
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-_:%".contains(c));
        if !host_ok {
            return Err(bad("the host"));
        }
        Ok(Target::Url {
            user: user.map(str::to_string),
            host: host.to_string(),
            port,
        })
    }

    /// The ssh arguments naming the destination.
    fn args(&self) -> Vec<String> {
        match self {
            Target::Alias(alias) => vec![alias.clone()],
            Target::Url { user, host, port } => {
                let mut args = Vec::new();
                if let Some(port) = port {
                    args.extend(["-p".to_string(), port.to_string()]);
                }
                if let Some(user) = user {
                    args.extend(["-l".to_string(), user.clone()]);
                }
                args.push(host.clone());
                args
            }
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Alias(alias) => f.write_str(alias),
            Target::Url { user, host, port } => {
                f.write_str("ssh://")?;
                if let Some(user) = user {
                    write!(f, "{user}@")?;
                }
                if host.contains(':') {
                    write!(f, "[{host}]")?;
                } else {
                    f.write_str(host)?;
                }
                if let Some(port) = port {
                    write!(f, ":{port}")?;
                }
                Ok(())
            }
        }
    }
}

/// A user name or alias: no shell or option meaning.
fn word(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with('-')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// `ssh` for `zone`, running `remote` (one shell command line) on the host through the zone's
/// master connection (made by the first command that needs it).
pub(crate) fn command(
    paths: &Paths,
    zone: &Zone,
    remote: &str,
) -> Result<tokio::process::Command, DaemonError> {
    let (program, args) = argv(paths, zone, remote, false)?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).kill_on_drop(true);
    Ok(cmd)
}

/// The program and arguments of ssh running `remote` on the zone's host; with `tty`, in a
/// terminal there (`ssh -tt`, as a user's interactive login), else without one (`-T`).
pub(crate) fn argv(
    paths: &Paths,
    zone: &Zone,
    remote: &str,
    tty: bool,
) -> Result<(String, Vec<String>), DaemonError> {
    let target = Target::parse(&zone.target).map_err(DaemonError::Client)?;
    let dir = paths.zone_sockets()?;
    let (program, mut args) = ssh_words();
    args.push(if tty { "-tt" } else { "-T" }.into());
    // Keepalives find a dead link within a minute, for a copy and a relayed turn alike.
    for option in [
        "BatchMode=yes",
        "ConnectTimeout=15",
        "ServerAliveInterval=15",
        "ServerAliveCountMax=4",
        "ControlMaster=auto",
        PERSIST,
        // Forwards are made by the master (`-O forward` passes only the socket names): a
        // socket file a dead master left behind must not stop the next one binding it.
        "StreamLocalBindUnlink=yes",
    ] {
        args.extend(["-o".into(), option.into()]);
    }
    args.push("-o".into());
    args.push(format!(
        "ControlPath={}",
        control_path(&dir, &zone.name).display()
    ));
    args.extend(target.args());
    args.push("--".into());
    args.push(remote.into());
    Ok((program, args))
}

/// The zone's control socket: named by a short digest of the zone's name, since a socket path
/// has room for about 100 bytes and ssh adds a 17-byte suffix while it makes the master.
fn control_path(dir: &Path, zone: &str) -> std::path::PathBuf {
    dir.join(format!("{}.ssh", short_digest(zone)))
}

/// Twelve hex digits of `text`'s digest: a short file name for a socket.
pub(super) fn short_digest(text: &str) -> String {
    use sha1::{Digest, Sha1};
    let digest = Sha1::digest(text.as_bytes());
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// Forwards the far socket `remote` to `local` through the zone's master connection (which
/// must be up: the command that asked for `remote` made it). A stale `local` is replaced.
pub(super) async fn forward(
    paths: &Paths,
    zone: &Zone,
    local: &Path,
    remote: &Path,
) -> Result<(), String> {
    let target = Target::parse(&zone.target)?;
    let dir = paths.zone_sockets().map_err(|e| e.to_string())?;
    let (program, first) = ssh_words();
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(first)
        .args(["-o", "BatchMode=yes", "-o", "StreamLocalBindUnlink=yes"])
        .arg("-o")
        .arg(format!(
            "ControlPath={}",
            control_path(&dir, &zone.name).display()
        ))
        .args(["-O", "forward", "-L"])
        .arg(format!("{}:{}", local.display(), remote.display()))
        .args(target.args())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(CHECK_TIMEOUT, cmd.output())
        .await
        .map_err(|_| format!("no answer within {} s", CHECK_TIMEOUT.as_secs()))?
        .map_err(|e| e.to_string())?;
    if output.status.success() {
        Ok(())
    } else {
        Err(or_unknown(last_line(&output.stderr)))
    }
}

/// The ssh program and its first arguments: `OURO_SSH_COMMAND`'s words, else `ssh`.
fn ssh_words() -> (String, Vec<String>) {
    let ssh = std::env::var(SSH_COMMAND_ENV).unwrap_or_default();
    let mut words = ssh.split_whitespace().map(str::to_string);
    (
        words.next().unwrap_or_else(|| "ssh".into()),
        words.collect(),
    )
}

pub(crate) enum ProbeError {
    /// ssh itself failed (exit 255): the host, the network, the login. ssh's reason.
    Unreachable(String),
    /// The host answered but runs no ouro that can say what it is.
    NoOuro(String),
}

/// Runs `remote` on the zone's host: (exit code, stdout, stderr's last line). `None` as the
/// code: killed by a signal or timed out. With `input`, that file is streamed to the remote's
/// stdin first: a copy takes as long as the link needs, so only a write that makes no progress
/// for `CHECK_TIMEOUT` ends it, never the size of the file.
async fn run(
    paths: &Paths,
    zone: &Zone,
    remote: &str,
    input: Option<&Path>,
) -> Result<(Option<i32>, String, String), DaemonError> {
    let mut cmd = command(paths, zone, remote)?;
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| {
        DaemonError::Client(format!(
            "could not run ssh ({e}); zones use your own OpenSSH client: install it (`ssh` on PATH) or set {SSH_COMMAND_ENV}"
        ))
    })?;
    if let (Some(file), Some(stdin)) = (input, child.stdin.take()) {
        // stdout and stderr are read only after the copy: the remote prints one line at its
        // end, and ssh's warnings fit a pipe's buffer.
        if let Err(reason) = stream(file, stdin).await {
            let said = drain_stderr(&mut child).await;
            let why = if said.is_empty() {
                reason
            } else {
                format!("{reason} ({said})")
            };
            return Ok((None, String::new(), why));
        }
    }
    // After a copy, ssh may still hold a window's worth to send: a dead link is found by the
    // keepalives, not by this limit.
    let limit = if input.is_some() {
        COPY_DRAIN
    } else {
        CHECK_TIMEOUT
    };
    let output = match tokio::time::timeout(limit, child.wait_with_output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(DaemonError::Client(format!("ssh failed: {e}"))),
        Err(_) => {
            return Ok((
                None,
                String::new(),
                format!("no answer within {} s", limit.as_secs()),
            ));
        }
    };
    Ok((
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        last_line(&output.stderr),
    ))
}

/// Copies `file` into ssh's stdin, then closes it; why not, as a sentence.
async fn stream(file: &Path, mut stdin: tokio::process::ChildStdin) -> Result<(), String> {
    let mut source = tokio::fs::File::open(file)
        .await
        .map_err(|e| format!("could not read {}: {e}", file.display()))?;
    // Small writes, so a stalled link is told from a slow one within `CHECK_TIMEOUT`.
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = source
            .read(&mut chunk)
            .await
            .map_err(|e| format!("could not read {}: {e}", file.display()))?;
        if n == 0 {
            return stdin
                .shutdown()
                .await
                .map_err(|e| format!("the copy was cut off: {e}"));
        }
        match tokio::time::timeout(CHECK_TIMEOUT, stdin.write_all(&chunk[..n])).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("the copy was cut off: {e}")),
            Err(_) => {
                return Err(format!(
                    "the copy made no progress for {} s",
                    CHECK_TIMEOUT.as_secs()
                ));
            }
        }
    }
}

/// What ssh said on stderr when a copy failed (it has exited or is killed on drop).
async fn drain_stderr(child: &mut tokio::process::Child) -> String {
    let _ = child.start_kill();
    let mut text = Vec::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = tokio::time::timeout(Duration::from_secs(2), stderr.read_to_end(&mut text)).await;
    }
    last_line(&text)
}

fn last_line(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// What the zone's ouro says it is.
pub(crate) async fn probe(paths: &Paths, zone: &Zone) -> Result<Probe, ProbeError> {
    let remote = format!("{} daemon probe", zone.remote_ouro());
    let (code, stdout, reason) = run(paths, zone, &remote, None)
        .await
        .map_err(|e| ProbeError::Unreachable(e.to_string()))?;
    match code {
        Some(0) => stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Probe>(l).ok())
            .ok_or_else(|| {
                ProbeError::NoOuro("it printed no probe: an ouro too old to be a zone".into())
            }),
        Some(255) | None => Err(ProbeError::Unreachable(or_unknown(reason))),
        Some(127) => Err(ProbeError::NoOuro(or_unknown(reason))),
        Some(code) => Err(ProbeError::NoOuro(format!(
            "it exited with {code}: {}; an ouro too old to be a zone",
            or_unknown(reason)
        ))),
    }
}

fn or_unknown(reason: String) -> String {
    if reason.is_empty() {
        "ssh gave no reason".into()
    } else {
        reason
    }
}

/// The host's (os, arch) as Rust names them (`linux`, `x86_64`).
pub(crate) async fn platform(paths: &Paths, zone: &Zone) -> Result<(String, String), DaemonError> {
    let (code, stdout, reason) = run(paths, zone, "uname -sm", None).await?;
    if code != Some(0) {
        return Err(DaemonError::Client(format!(
            "the zone {} cannot be reached: {}",
            zone.name,
            or_unknown(reason)
        )));
    }
    let mut words = stdout.split_whitespace();
    let os = match words.next().unwrap_or_default() {
        "Darwin" => "macos".to_string(),
        other => other.to_lowercase(),
    };
    let arch = match words.next().unwrap_or_default() {
        "arm64" => "aarch64".to_string(),
        other => other.to_string(),
    };
    Ok((os, arch))
}

/// Copies `exe` to `$OURO_HOME/bin/ouro` on the host (`~/.ouro/bin/ouro` without it), through
/// ssh's stdin and a rename, so a running ouro there is never half-overwritten; the path.
pub(crate) async fn copy_binary(
    paths: &Paths,
    zone: &Zone,
    exe: &Path,
) -> Result<String, DaemonError> {
    let size = std::fs::metadata(exe)
        .map_err(|source| DaemonError::Io {
            action: "read",
            path: exe.to_path_buf(),
            source,
        })?
        .len();
    // The size is checked before the rename: a copy cut off (ssh killed, the link gone) ends
    // the far `cat` as if the file were whole, and must not replace a working ouro.
    let script = format!(
        r#"d="${{OURO_HOME:-$HOME/.ouro}}/bin" && mkdir -p "$d" && cat > "$d/ouro.new" && [ $(wc -c < "$d/ouro.new") -eq {size} ] && chmod 755 "$d/ouro.new" && mv -f "$d/ouro.new" "$d/ouro" && echo "$d/ouro" || {{ rm -f "$d/ouro.new"; echo "the copy arrived incomplete" >&2; exit 1; }}"#
    );
    let (code, stdout, reason) = run(paths, zone, &script, Some(exe)).await?;
    let path = stdout.lines().last().unwrap_or("").trim().to_string();
    if code != Some(0) || !path.starts_with('/') {
        return Err(DaemonError::Client(format!(
            "could not copy ouro to the zone {}: {}",
            zone.name,
            or_unknown(reason)
        )));
    }
    Ok(path)
}

/// Runs the shell `script` on the zone's host; its stdout, or why it failed.
pub(super) async fn script(
    paths: &Paths,
    zone: &Zone,
    script: &str,
) -> Result<String, DaemonError> {
    let (code, stdout, reason) = run(paths, zone, script, None).await?;
    if code != Some(0) {
        return Err(DaemonError::Client(format!(
            "a command on the zone {} failed: {}",
            zone.name,
            or_unknown(reason)
        )));
    }
    Ok(stdout)
}

/// Ends the zone's master connection, if one is up (best effort).
pub(crate) fn close_master(paths: &Paths, name: &str) {
    let Ok(dir) = paths.zone_sockets() else {
        return;
    };
    remove_forwards(&dir, name);
    let path = control_path(&dir, name);
    if !path.exists() {
        return;
    }
    let (program, first) = ssh_words();
    let _ = std::process::Command::new(program)
        .args(first)
        .arg("-o")
        .arg(format!("ControlPath={}", path.display()))
        .args(["-O", "exit", "zone"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Removes the sockets the master of zone `name` forwarded (`<zone digest>.….fwd`): with the
/// master gone they answer no more.
fn remove_forwards(dir: &Path, name: &str) {
    let prefix = format!("{}.", short_digest(name));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let file = file.to_string_lossy();
        if file.starts_with(&prefix) && file.ends_with(".fwd") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_nothing_in_them_passes_for_an_option() {
        assert_eq!(
            Target::parse("ssh://me@build.example.com:2222").unwrap(),
            Target::Url {
                user: Some("me".into()),
                host: "build.example.com".into(),
                port: Some(2222)
            }
        );
        assert_eq!(
            Target::parse("ssh://[::1]:22").unwrap().to_string(),
            "ssh://[::1]:22"
        );
        assert_eq!(
            Target::parse("devbox").unwrap(),
            Target::Alias("devbox".into())
        );
        assert_eq!(
            Target::parse("ssh://host").unwrap().args(),
            vec!["host".to_string()]
        );
        for bad in [
            "-oProxyCommand=sh",
            "ssh://-oProxyCommand=x",
            "ssh://-l@host",
            "ssh://me@host:0",
            "ssh://me@host:99999",
            "ssh://host;rm",
            "ssh://",
            "dev box",
            "",
            "ssh://[::1",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad} parsed");
        }
    }
}
