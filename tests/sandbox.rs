//! The OS sandbox under Bash, proved with real processes: whatever the analyser thought, a call
//! allowed only as read-only cannot write, connect or read outside the project, and an approved
//! call can write in the project but not elsewhere. Skipped, with a notice, on a kernel without
//! Landlock.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ouro::permissions::Confinement;
use ouro::sys::sandbox::Support;
use ouro::tools::bash::{BashTool, PrivateTmp, SandboxConfig};
use ouro::tools::{Progress, ToolContext, ToolOutput, erase};
use serde_json::json;

struct Rig {
    project: tempfile::TempDir,
    /// Stands for the user's home: outside the project.
    outside: tempfile::TempDir,
}

fn rig() -> Option<Rig> {
    match Support::detect() {
        Support::Landlock(_) => {}
        other => {
            crate::common::skip::kernel_lacks(&other.describe());
            return None;
        }
    }
    let rig = Rig {
        project: tempfile::tempdir().unwrap(),
        outside: tempfile::tempdir().unwrap(),
    };
    std::fs::write(rig.root().join("inside.txt"), "inside text\n").unwrap();
    std::fs::write(rig.outside().join("secret"), "outside secret\n").unwrap();
    Some(rig)
}

impl Rig {
    fn root(&self) -> PathBuf {
        self.project.path().canonicalize().unwrap()
    }

    fn outside(&self) -> PathBuf {
        self.outside.path().canonicalize().unwrap()
    }

    async fn run(&self, confinement: Confinement, command: &str) -> ToolOutput {
        let config = SandboxConfig {
            tmpdir: Some(Arc::new(PrivateTmp::create().unwrap())),
            ..SandboxConfig::default()
        };
        self.run_with(confinement, config, command).await
    }

    async fn run_with(
        &self,
        confinement: Confinement,
        config: SandboxConfig,
        command: &str,
    ) -> ToolOutput {
        let mut ctx = ToolContext::new(self.root());
        ctx.confinement = confinement;
        ctx.sandbox = Arc::new(config);
        let tool = erase(BashTool);
        let input = json!({ "command": command });
        tool.check_schema(&input).unwrap();
        let call = tool.prepare(&input, &ctx).unwrap();
        call.run(&ctx, &Progress::none()).await.unwrap()
    }
}

fn refused(out: &ToolOutput) -> bool {
    out.is_error
        && (out.content.contains("Permission denied")
            || out.content.contains("Operation not permitted")
            || out.content.contains("Read-only file system"))
}

fn quoted(p: &Path) -> String {
    format!("'{}'", p.display())
}

#[tokio::test]
async fn a_read_only_call_cannot_write_anywhere() {
    let Some(r) = rig() else { return };
    for target in [r.root().join("new.txt"), r.outside().join("new.txt")] {
        let out = r
            .run(
                Confinement::ReadOnly,
                &format!("echo payload > {}", quoted(&target)),
            )
            .await;
        assert!(refused(&out), "{target:?}: {out:?}");
        assert!(!target.exists(), "{target:?} was written");
    }
    let out = r
        .run(Confinement::ReadOnly, "rm inside.txt; mkdir d; touch t")
        .await;
    assert!(refused(&out), "{out:?}");
    assert!(r.root().join("inside.txt").exists());
    assert!(!r.root().join("d").exists() && !r.root().join("t").exists());
    let tmp = std::env::temp_dir().join(format!("ouro-sandbox-probe-{}", std::process::id()));
    let out = r
        .run(Confinement::ReadOnly, &format!("echo x > {}", quoted(&tmp)))
        .await;
    assert!(refused(&out), "{out:?}");
    assert!(!tmp.exists());
}

#[tokio::test]
async fn a_read_only_call_reads_the_project_and_the_system_but_nothing_else() {
    let Some(r) = rig() else { return };
    let out = r
        .run(
            Confinement::ReadOnly,
            "cat inside.txt && ls /usr/bin >/dev/null && echo ok",
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.content.contains("inside text") && out.content.contains("ok"));
    let out = r
        .run(
            Confinement::ReadOnly,
            &format!("cat {}", quoted(&r.outside().join("secret"))),
        )
        .await;
    assert!(refused(&out), "{out:?}");
    assert!(!out.content.contains("outside secret"));
    // Another process's environment.
    let out = r
        .run(
            Confinement::ReadOnly,
            &format!("cat /proc/{}/environ", std::process::id()),
        )
        .await;
    assert!(refused(&out), "{out:?}");
}

#[tokio::test]
async fn a_read_only_call_cannot_connect_or_listen() {
    let Some(r) = rig() else { return };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = r
        .run(
            Confinement::ReadOnly,
            &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
        )
        .await;
    assert!(refused(&out), "{out:?}");
    assert!(!out.content.contains("connected"));
    let out = r
        .run(
            Confinement::ReadOnly,
            "/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); print(\"listening\")' || true",
        )
        .await;
    assert!(!out.content.contains("listening"), "{out:?}");
}

#[tokio::test]
async fn a_read_only_call_cannot_signal_processes_outside() {
    let Some(r) = rig() else { return };
    let Support::Landlock(abi) = Support::detect() else {
        return;
    };
    if abi < 6 {
        crate::common::skip::kernel_lacks(&format!(
            "Landlock ABI 6 (signal scoping); it has ABI {abi}"
        ));
        return;
    }
    let out = r
        .run(
            Confinement::ReadOnly,
            &format!("kill -0 {}", std::process::id()),
        )
        .await;
    assert!(refused(&out), "{out:?}");
}

#[tokio::test]
async fn git_and_shell_basics_work_read_only() {
    let Some(r) = rig() else { return };
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(r.root())
            .env("HOME", r.outside())
            .output()
            .unwrap()
    };
    if git(&["init", "-q"]).status.success() {
        let out = r.run(Confinement::ReadOnly, "git status --short").await;
        assert!(!out.is_error, "{out:?}");
        assert!(out.content.contains("inside.txt"), "{out:?}");
    }
    let out = r
        .run(
            Confinement::ReadOnly,
            "cd sub 2>/dev/null; x=$(printf 'a\\nb\\n' | sort | wc -l); echo \"$x\" >/dev/null; echo $x",
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.content.trim(), "2");
}

#[tokio::test]
async fn an_approved_call_writes_in_the_project_and_its_temp_dir_only() {
    let Some(r) = rig() else { return };
    let out = r
        .run(
            Confinement::Approved,
            "mkdir -p build && echo built > build/out.txt && echo t > \"$TMPDIR/scratch\" && cat \"$TMPDIR/scratch\"",
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(r.root().join("build/out.txt")).unwrap(),
        "built\n"
    );
    let target = r.outside().join("planted");
    let out = r
        .run(
            Confinement::Approved,
            &format!("echo payload > {}", quoted(&target)),
        )
        .await;
    assert!(refused(&out), "{out:?}");
    assert!(!target.exists());
    // Reading outside is allowed once approved.
    let out = r
        .run(
            Confinement::Approved,
            &format!("cat {}", quoted(&r.outside().join("secret"))),
        )
        .await;
    assert!(out.content.contains("outside secret"), "{out:?}");
}

#[tokio::test]
async fn settings_widen_or_lift_the_sandbox() {
    let Some(r) = rig() else { return };
    let target = r.outside().join("allowed");
    let config = SandboxConfig {
        writable: vec![r.outside()],
        network: false,
        ..SandboxConfig::default()
    };
    let out = r
        .run_with(
            Confinement::Approved,
            config.clone(),
            &format!("echo ok > {}", quoted(&target)),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = r
        .run_with(
            Confinement::Approved,
            config,
            &format!("exec 3<>/dev/tcp/127.0.0.1/{port}"),
        )
        .await;
    assert!(refused(&out), "network off for approved calls: {out:?}");
    let outside = r.outside().join("unconfined");
    let out = r
        .run(
            Confinement::Unconfined,
            &format!("echo x > {}", quoted(&outside)),
        )
        .await;
    assert!(!out.is_error && outside.exists(), "{out:?}");
}

/// Landlock's network rules know TCP only; without network, UDP (DNS exfiltration included)
/// and Unix sockets (a daemon's socket outside the project) are closed too, by seccomp, for
/// read-only calls and for approved calls under `"network": false`. Each attempt is a real
/// process; a listener outside the sandbox would see anything that got through.
#[tokio::test]
async fn without_network_no_udp_or_unix_socket_gets_out() {
    let Some(r) = rig() else { return };
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let port = udp.local_addr().unwrap().port();
    let socket_path = r.outside().join("daemon.sock");
    let unix = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    unix.set_nonblocking(true).unwrap();
    let sock = socket_path.display();
    let attempts = [
        format!("echo leak > /dev/udp/127.0.0.1/{port}"),
        format!("exec 3<>/dev/udp/127.0.0.1/{port}; echo leak >&3"),
        format!("/usr/bin/python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'leak', ('127.0.0.1', {port}))\""),
        format!("/usr/bin/python3 -c \"import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b'leak', ('::ffff:127.0.0.1', {port}))\""),
        format!("/usr/bin/python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{sock}'); s.send(b'leak')\""),
        format!("/usr/bin/python3 -c \"import socket; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b'leak', '{sock}')\""),
        "/usr/bin/python3 -c \"import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\" && echo opened".to_string(),
        format!("getent hosts leak.example; nslookup leak.example 127.0.0.1 -port={port}"),
    ];
    let no_network = SandboxConfig {
        network: false,
        tmpdir: Some(Arc::new(PrivateTmp::create().unwrap())),
        ..SandboxConfig::default()
    };
    for command in &attempts {
        for (confinement, config) in [
            (Confinement::ReadOnly, SandboxConfig::default()),
            (Confinement::Approved, no_network.clone()),
        ] {
            let out = r.run_with(confinement, config, command).await;
            assert!(!out.content.contains("opened"), "{command}: {out:?}");
        }
    }
    let mut buf = [0u8; 64];
    assert!(udp.recv_from(&mut buf).is_err(), "a datagram got out");
    assert!(unix.accept().is_err(), "a Unix connection got out");
    // With network allowed, an approved call may still use them (the filter is no blanket).
    let with_network = SandboxConfig {
        tmpdir: Some(Arc::new(PrivateTmp::create().unwrap())),
        ..SandboxConfig::default()
    };
    r.run_with(
        Confinement::Approved,
        with_network,
        &format!("echo ok > /dev/udp/127.0.0.1/{port}"),
    )
    .await;
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        udp.recv_from(&mut buf).is_ok(),
        "network allowed, yet UDP was closed"
    );
}

/// A read-only call keeps no capability (run by root, it could otherwise set the clock, the
/// host name or the network's addresses) and opens no socket of any family, netlink and vsock
/// included; an approved call without network may still read the kernel's netlink.
#[tokio::test]
async fn a_read_only_call_holds_no_capability_and_opens_no_socket() {
    let Some(r) = rig() else { return };
    // The system's Python: a user's (pyenv, a venv) may live where a read-only call cannot read.
    if !Path::new("/usr/bin/python3").exists() {
        crate::common::skip::not_installed("the system's python3 (/usr/bin/python3)");
        return;
    }
    let out = r
        .run(
            Confinement::ReadOnly,
            "/usr/bin/python3 -c \"import socket; socket.sethostname(socket.gethostname()); print('renamed')\"",
        )
        .await;
    assert!(!out.content.contains("renamed"), "{out:?}");
    // SAFETY: geteuid only reads this process's credentials.
    if unsafe { libc::geteuid() } == 0 {
        // PR_CAPBSET_READ of CAP_SYS_ADMIN: 0 once the bounding set is empty.
        let out = r
            .run(
                Confinement::ReadOnly,
                "/usr/bin/python3 -c \"import ctypes; print('bounding', ctypes.CDLL(None).prctl(23, 21, 0, 0, 0))\"",
            )
            .await;
        assert!(out.content.contains("bounding 0"), "{out:?}");
    }
    let open = |family: &str| {
        format!(
            "/usr/bin/python3 -c \"import socket; socket.socket(socket.{family}); print('opened')\""
        )
    };
    for family in [
        "AF_NETLINK, socket.SOCK_RAW",
        "AF_VSOCK, socket.SOCK_STREAM",
        "AF_ALG, socket.SOCK_SEQPACKET",
    ] {
        let out = r.run(Confinement::ReadOnly, &open(family)).await;
        assert!(!out.content.contains("opened"), "{family}: {out:?}");
    }
    let no_network = SandboxConfig {
        network: false,
        tmpdir: Some(Arc::new(PrivateTmp::create().unwrap())),
        ..SandboxConfig::default()
    };
    let out = r
        .run_with(
            Confinement::Approved,
            no_network.clone(),
            &open("AF_NETLINK, socket.SOCK_RAW"),
        )
        .await;
    assert!(out.content.contains("opened"), "{out:?}");
    let out = r
        .run_with(
            Confinement::Approved,
            no_network,
            &open("AF_VSOCK, socket.SOCK_STREAM"),
        )
        .await;
    assert!(!out.content.contains("opened"), "{out:?}");
}

/// Landlock does not cover metadata: a read-only call must still change no file's mode,
/// owner, times or extended attributes, inside the project or outside.
#[tokio::test]
async fn a_read_only_call_changes_no_metadata_anywhere() {
    let Some(r) = rig() else { return };
    let inside = r.root().join("inside.txt");
    let outside = r.outside().join("secret");
    for target in [&inside, &outside] {
        let changed = try_metadata_changes(&r, Confinement::ReadOnly, target).await;
        assert!(
            changed.is_empty(),
            "{changed:?} changed {}",
            target.display()
        );
    }
}

#[tokio::test]
async fn an_approved_call_changes_metadata_only_where_it_may_write() {
    let Some(r) = rig() else { return };
    if let Err(why) = ouro::sys::masks::support() {
        crate::common::skip::kernel_lacks(&format!("mount namespaces: {why}"));
        return;
    }
    let outside = r.outside().join("secret");
    let changed = try_metadata_changes(&r, Confinement::Approved, &outside).await;
    assert!(
        changed.is_empty(),
        "{changed:?} changed {}",
        outside.display()
    );
    // Inside the project the same commands work, as a build or `git checkout` needs.
    let inside = r.root().join("inside.txt");
    let changed = try_metadata_changes(&r, Confinement::Approved, &inside).await;
    assert!(
        changed.len() >= 8,
        "only {changed:?} worked inside the project"
    );
}

/// Commands that change a file's mode, owner, times or attributes; returns those that changed
/// `target` (each is undone by the next check only in that it compares with the state before).
async fn try_metadata_changes(r: &Rig, confinement: Confinement, target: &Path) -> Vec<String> {
    let attempts = [
        "chmod 777 {}",
        "chmod u+x {}",
        "chmod -R 700 {}",
        "chown 65534 {}",
        "chgrp 65534 {}",
        "touch -d '2001-01-01' {}",
        "touch -m -d '2002-02-02' {}",
        "touch -a -d '2003-03-03' {}",
        "setfattr -n user.x -v 1 {}",
        "/usr/bin/python3 -c \"import os; os.chmod('{}', 0o777)\"",
        "/usr/bin/python3 -c \"import os; os.utime('{}', (0, 0))\"",
        "/usr/bin/python3 -c \"import os; os.setxattr('{}', 'user.x', b'1')\"",
        "/usr/bin/python3 -c \"import os; os.chown('{}', 65534, 65534)\"",
        "perl -e 'chmod 0700, \"{}\"'",
        "perl -e 'utime 1, 1, \"{}\"'",
        "find {} -exec chmod 0640 {} +",
    ];
    let stamp = |path: &Path| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).unwrap();
        (
            m.mode(),
            m.uid(),
            m.gid(),
            m.mtime(),
            m.mtime_nsec(),
            m.atime(),
            xattr_names(path),
        )
    };
    let mut changed = Vec::new();
    for attempt in attempts {
        let before = stamp(target);
        let command = attempt.replace("{}", &target.display().to_string());
        r.run(confinement, &command).await;
        if stamp(target) != before {
            changed.push(command);
        }
    }
    changed
}

fn xattr_names(path: &Path) -> Vec<u8> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import os,sys; print(','.join(os.listxattr(sys.argv[1])))",
        ])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .as_bytes()
        .to_vec()
}
