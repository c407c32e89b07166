//! File deny rules as part of the wall, proved with real processes: whatever a Bash command
//! spells (another program, process substitution, /proc, a fresh namespace, an unmount), a
//! path denied for reading gives nothing away and a path denied for editing stays as it was,
//! in every mode the sandbox runs in, bypassPermissions included. The analyser is not asked:
//! each command is run as the permission phase would have allowed it. Skipped, with a notice,
//! where the kernel has no Landlock or no unprivileged user namespaces.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ouro::permissions::{
    Confinement, FileDenials, PermissionEngine, PermissionMode, RuleKind, SourcedRule,
};
use ouro::settings::SettingsSource;
use ouro::sys::sandbox::Support;
use ouro::tools::bash::{BashTool, PrivateTmp, SandboxConfig};
use ouro::tools::{Progress, ToolContext, erase};
use serde_json::json;

const SECRET: &str = "hunter2-secret-7731";
const ENV_SECRET: &str = "ENVSECRET-4417";
const PROD: &str = "prod: original\n";

struct Project {
    dir: tempfile::TempDir,
    denials: FileDenials,
}

fn project() -> Option<Project> {
    match Support::detect() {
        Support::Landlock(_) => {}
        other => {
            crate::common::skip::kernel_lacks(&other.describe());
            return None;
        }
    }
    if let Err(why) = ouro::sys::masks::support() {
        crate::common::skip::kernel_lacks(&format!("path masks: {why}"));
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let rules = ["Read(secrets/**)", "Read(**/.env)", "Edit(config/prod.yml)"]
        .map(|r| SourcedRule::new(r, RuleKind::Deny, SettingsSource::Project))
        .to_vec();
    let engine = PermissionEngine::new(root, PermissionMode::Default, rules, Vec::new()).unwrap();
    let project = Project {
        dir,
        denials: engine.file_denials(),
    };
    project.reset();
    Some(project)
}

impl Project {
    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// The project as the tests expect it before each command.
    fn reset(&self) {
        let root = self.root();
        for entry in std::fs::read_dir(&root).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path).unwrap();
            } else {
                std::fs::remove_file(&path).unwrap();
            }
        }
        for dir in ["secrets/nested", "config", "sub/deep", "src"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("secrets/key.txt"), format!("TOKEN={SECRET}\n")).unwrap();
        std::fs::write(root.join("secrets/nested/more.txt"), SECRET).unwrap();
        std::fs::write(root.join("sub/deep/.env"), format!("{ENV_SECRET}=1\n")).unwrap();
        std::fs::write(root.join(".env"), format!("{ENV_SECRET}=2\n")).unwrap();
        std::fs::write(root.join("config/prod.yml"), PROD).unwrap();
        std::fs::write(root.join("config/dev.yml"), "dev: true\n").unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    }

    async fn run(&self, confinement: Confinement, command: &str) -> String {
        self.run_with(confinement, SandboxConfig::default(), command)
            .await
    }

    async fn run_with(
        &self,
        confinement: Confinement,
        config: SandboxConfig,
        command: &str,
    ) -> String {
        let mut ctx = ToolContext::new(self.root());
        ctx.confinement = confinement;
        ctx.file_denials = self.denials.clone();
        ctx.sandbox = Arc::new(SandboxConfig {
            tmpdir: Some(Arc::new(PrivateTmp::create().unwrap())),
            ..config
        });
        let tool = erase(BashTool);
        let input = json!({ "command": command, "timeout": 20000 });
        let call = tool.prepare(&input, &ctx).unwrap();
        call.run(&ctx, &Progress::none()).await.unwrap().content
    }

    fn prod(&self) -> Option<String> {
        std::fs::read_to_string(self.root().join("config/prod.yml")).ok()
    }
}

/// Ways to read a file, each spelled so that a path-by-path check of the command line would
/// not see (or would not stop) what it reads.
const READS: &[&str] = &[
    "cat secrets/key.txt",
    "cat ./secrets/../secrets/key.txt",
    "cat \"$PWD/secrets/key.txt\"",
    "cd secrets && cat key.txt",
    "cd secrets/nested && cat ../key.txt more.txt",
    "cat secrets/*",
    "cat secrets/nested/*",
    "cat s?crets/key.txt",
    "cat $(printf 'c2VjcmV0cy9rZXkudHh0' | base64 -d)",
    "f=secrets; cat $f/key.txt",
    "cat \"$(echo secrets)/key.txt\"",
    "grep -r hunter2 .",
    "grep -ra TOKEN .",
    "grep -r ENVSECRET . ; grep -r ENVSECRET sub",
    "rg --no-ignore --hidden hunter2 . 2>/dev/null; rg -uuu ENVSECRET . 2>/dev/null; true",
    "find . -type f -exec cat {} +",
    "find . -name '*.txt' | xargs cat",
    "find . -name .env -exec cat {} \\;",
    "cat <(cat secrets/key.txt)",
    "cat < secrets/key.txt",
    "exec 3< secrets/key.txt; cat <&3",
    "while read -r l; do echo \"$l\"; done < secrets/key.txt",
    "tar cf - . 2>/dev/null | tar xOf - 2>/dev/null",
    "tar cf - secrets 2>/dev/null | tar xOf - 2>/dev/null",
    "python3 -c 'print(open(\"secrets/key.txt\").read())'",
    "python3 -c 'import os\nfor r,d,f in os.walk(\".\"):\n  for n in f:\n    try: print(open(os.path.join(r,n)).read())\n    except Exception as e: print(e)'",
    "perl -ne print secrets/key.txt",
    "awk '{print}' secrets/key.txt sub/deep/.env .env",
    "sed -n p secrets/key.txt",
    "head -c 200 secrets/key.txt; tail -n 5 .env",
    "dd if=secrets/key.txt 2>/dev/null",
    "od -An -c secrets/key.txt | tr -d ' \\n'; xxd -p .env 2>/dev/null | xxd -r -p",
    "base64 secrets/key.txt | base64 -d",
    "sh -c 'cat secrets/key.txt'",
    "bash -c 'cat sub/deep/.env'",
    "env cat secrets/key.txt",
    "exec cat secrets/key.txt",
    "cp secrets/key.txt /dev/stdout",
    "cat /proc/self/root$PWD/secrets/key.txt",
    "cat /proc/$$/root$PWD/secrets/key.txt",
    "cat /proc/$PPID/root$PWD/secrets/key.txt",
    "cat /proc/1/root$PWD/secrets/key.txt",
    "for p in /proc/[0-9]*; do cat $p/root$PWD/secrets/key.txt 2>/dev/null; done; true",
    "umount secrets 2>&1; cat secrets/key.txt",
    "umount -l secrets 2>&1; umount -l .env 2>&1; cat secrets/key.txt .env",
    "unshare -r -m sh -c 'umount -l secrets; cat secrets/key.txt' 2>&1",
    "unshare -r sh -c 'cat secrets/key.txt' 2>&1",
    "nsenter -t $PPID -m cat secrets/key.txt 2>&1",
    "mount --bind secrets src 2>&1; cat src/key.txt",
    "ls -la secrets; ls -la secrets/nested",
    "git init -q . 2>/dev/null; git add -A 2>&1; git grep -h hunter2 2>&1; git grep -h ENVSECRET 2>&1",
    "git init -q . 2>/dev/null; git -c core.pager=cat grep -O cat hunter2 2>&1",
];

/// Ways to change or remove a file, spelled past a path-by-path check.
const EDITS: &[&str] = &[
    "echo hacked > config/prod.yml",
    "echo hacked >> config/prod.yml",
    "printf hacked | tee config/prod.yml",
    "sed -i s/original/hacked/ config/prod.yml",
    "perl -pi -e s/original/hacked/ config/prod.yml",
    "python3 -c 'open(\"config/prod.yml\",\"w\").write(\"hacked\")'",
    "truncate -s 0 config/prod.yml",
    "dd if=/dev/zero of=config/prod.yml bs=1 count=4 conv=notrunc 2>&1",
    "cp config/dev.yml config/prod.yml",
    "cp /dev/null config/prod.yml",
    "install -m 644 config/dev.yml config/prod.yml",
    "rm -f config/prod.yml",
    "rm -rf config",
    "unlink config/prod.yml",
    "mv config/prod.yml config/old.yml",
    "mv config/dev.yml config/prod.yml",
    "ln -sf /etc/hostname config/prod.yml",
    "ln -f config/dev.yml config/prod.yml",
    "f=config/prod.yml; : > $f",
    "cd config && echo hacked > prod.yml",
    "echo hacked > \"$(echo Y29uZmlnL3Byb2QueW1s | base64 -d)\"",
    "umount config/prod.yml 2>&1; echo hacked > config/prod.yml",
    "unshare -r -m sh -c 'umount config/prod.yml; echo hacked > config/prod.yml' 2>&1",
    "mount -o remount,rw config/prod.yml 2>&1; echo hacked > config/prod.yml",
    "chmod 000 config/prod.yml",
];

#[tokio::test(flavor = "multi_thread")]
async fn a_path_denied_for_reading_gives_nothing_away_in_any_mode() {
    let Some(p) = project() else {
        return;
    };
    for confinement in [
        Confinement::ReadOnly,
        Confinement::Approved,
        Confinement::Unconfined,
    ] {
        for command in READS {
            p.reset();
            let out = p.run(confinement, command).await;
            assert!(
                !out.contains(SECRET) && !out.contains(ENV_SECRET),
                "{confinement:?}: `{command}` read a denied file:\n{out}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_path_denied_for_editing_stays_as_it_was_in_any_mode() {
    let Some(p) = project() else {
        return;
    };
    let mode = |p: &Project| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p.root().join("config/prod.yml"))
            .map(|m| m.permissions().mode())
            .ok()
    };
    let original_mode = mode(&p);
    for confinement in [Confinement::Approved, Confinement::Unconfined] {
        for command in EDITS {
            p.reset();
            let out = p.run(confinement, command).await;
            assert_eq!(
                p.prod().as_deref(),
                Some(PROD),
                "{confinement:?}: `{command}` changed a file denied for editing:\n{out}"
            );
            assert_eq!(
                mode(&p),
                original_mode,
                "{confinement:?}: `{command}`:\n{out}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn what_the_rules_do_not_name_stays_usable() {
    let Some(p) = project() else {
        return;
    };
    p.reset();
    let out = p
        .run(
            Confinement::ReadOnly,
            "cat config/dev.yml src/main.rs config/prod.yml",
        )
        .await;
    assert!(
        out.contains("dev: true") && out.contains("fn main") && out.contains("prod: original"),
        "{out}"
    );
    for confinement in [Confinement::Approved, Confinement::Unconfined] {
        p.reset();
        let out = p
            .run(
                confinement,
                "cat config/dev.yml src/main.rs && echo new > config/dev.yml && \
                 echo made > src/new.rs && cat config/prod.yml && ls secrets | wc -l",
            )
            .await;
        assert!(out.contains("dev: true"), "{confinement:?}:\n{out}");
        assert!(out.contains("fn main"), "{confinement:?}:\n{out}");
        assert!(
            out.contains("prod: original"),
            "{confinement:?}: readable:\n{out}"
        );
        assert_eq!(
            std::fs::read_to_string(p.root().join("src/new.rs")).unwrap(),
            "made\n"
        );
        assert_eq!(
            std::fs::read_to_string(p.root().join("config/dev.yml")).unwrap(),
            "new\n"
        );
    }
}

#[test]
fn deny_rules_are_found_on_disk_as_written_and_through_globs() {
    let Some(p) = project() else {
        return;
    };
    let found = p.denials.find().unwrap();
    let root = p.root();
    let rel = |paths: &[PathBuf]| -> Vec<String> {
        paths
            .iter()
            .map(|x| x.strip_prefix(&root).unwrap_or(x).display().to_string())
            .collect()
    };
    assert_eq!(
        rel(&found.hide),
        [".env", "secrets", "sub/deep/.env"],
        "{found:?}"
    );
    assert_eq!(rel(&found.freeze), ["config/prod.yml"]);
    assert!(Path::new(&root).join("secrets").exists());
}

/// Attacks spread over two calls: the first moves or changes what is around a denied path, the
/// second reads or writes it where it went.
const SEQUENCES: &[(&str, &str)] = &[
    ("mv config c2", "echo hacked > c2/prod.yml; cat c2/prod.yml"),
    ("mv config/prod.yml x.yml", "echo hacked > x.yml"),
    ("mv secrets s2", "cat s2/key.txt s2/nested/more.txt"),
    ("mv sub s2", "cat s2/deep/.env"),
    ("mv sub/deep sub/d2", "cat sub/d2/.env"),
    ("mkdir -p t && mv sub t/", "cat t/sub/deep/.env"),
    (
        "mv config config.old && mkdir config",
        "echo hacked > config/prod.yml; cat config.old/prod.yml",
    ),
    ("ln -s secrets link", "cat link/key.txt"),
    ("ln sub/deep/.env hard 2>&1", "cat hard"),
    ("cp -r secrets s3 2>&1", "cat s3/key.txt"),
    ("mount --bind secrets src 2>&1", "cat src/key.txt"),
    (
        "setsid sh -c 'sleep 1; cat secrets/key.txt > leak.txt' &",
        "sleep 2; cat leak.txt",
    ),
];

#[tokio::test(flavor = "multi_thread")]
async fn moving_what_holds_a_denied_path_does_not_uncover_it() {
    let Some(p) = project() else {
        return;
    };
    for confinement in [Confinement::Approved, Confinement::Unconfined] {
        for (first, second) in SEQUENCES {
            p.reset();
            let one = p.run(confinement, first).await;
            let two = p.run(confinement, second).await;
            assert!(
                !two.contains(SECRET) && !two.contains(ENV_SECRET) && !one.contains(SECRET),
                "{confinement:?}: `{first}` then `{second}` read a denied file:\n{one}\n{two}"
            );
            assert!(!two.contains("hacked\n") || !two.contains("prod"), "{two}");
            let prod = walk_for(&p.root(), "prod.yml");
            assert!(
                prod.iter()
                    .all(|f| std::fs::read_to_string(f).unwrap() == PROD),
                "{confinement:?}: `{first}` then `{second}` changed a denied file: {prod:?}"
            );
        }
    }
}

fn walk_for(root: &Path, name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                dirs.push(path);
            } else if entry.file_name() == name {
                out.push(path);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_outside_the_sandbox_by_settings_is_still_masked() {
    let Some(p) = project() else {
        return;
    };
    let config = SandboxConfig {
        excluded_commands: vec!["cat".into()],
        ..SandboxConfig::default()
    };
    let out = p
        .run_with(Confinement::Approved, config, "cat secrets/key.txt .env")
        .await;
    assert!(!out.contains(SECRET) && !out.contains(ENV_SECRET), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_to_the_root_caught_by_a_pattern_does_not_take_the_ground_away() {
    let Some(p) = project() else {
        return;
    };
    std::os::unix::fs::symlink("/", p.root().join("sub/.env")).unwrap();
    std::os::unix::fs::symlink(p.root(), p.root().join("src/.env")).unwrap();
    let out = p
        .run(Confinement::Approved, "cat src/main.rs; ls /usr | head -1")
        .await;
    assert!(out.contains("fn main"), "{out}");
    assert!(!out.contains(SECRET), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_path_that_cannot_be_looked_at_stops_the_command() {
    let Some(p) = project() else {
        return;
    };
    // A pattern that reaches further than the walk may look: the command is refused, not run
    // with the rule quietly dropped.
    let rules = vec![SourcedRule::new(
        "Read(**/*.secret)",
        RuleKind::Deny,
        SettingsSource::Project,
    )];
    let engine =
        PermissionEngine::new(p.root(), PermissionMode::Default, rules, Vec::new()).unwrap();
    let many = p.root().join("many");
    std::fs::create_dir(&many).unwrap();
    for i in 0..50_001 {
        std::fs::File::create(many.join(i.to_string())).unwrap();
    }
    let mut ctx = ToolContext::new(p.root());
    ctx.confinement = Confinement::Approved;
    ctx.file_denials = engine.file_denials();
    let tool = erase(BashTool);
    let call = tool
        .prepare(&json!({ "command": "echo ran > ran.txt" }), &ctx)
        .unwrap();
    let out = call.run(&ctx, &Progress::none()).await;
    let text = match out {
        Ok(out) => out.content,
        Err(e) => e.to_string(),
    };
    assert!(text.contains("too many files"), "{text}");
    assert!(!p.root().join("ran.txt").exists());
}
