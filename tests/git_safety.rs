//! A repository's own programs never run from ouro's git: neither the `git status` ouro runs
//! for the system prompt of a trusted project, nor read-only git commands the analyser lets
//! through. Each case configures a driver or hook the way a cloned repository (or an approved
//! write to `.git/config`) could, and every command is run against it: the program would leave
//! a marker file (outside the sandbox, for ouro's own git) or print a marker (inside it).

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use ouro::engine::prompt::ProjectContext;
use ouro::permissions::Confinement;
use ouro::tools::bash::{BashTool, SandboxConfig};
use ouro::tools::{Progress, ToolContext, erase};
use serde_json::json;

const MARK: &str = "REPO-PROGRAM-RAN";

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The program a case installs: it leaves `marker` and prints the mark.
fn program(marker: &Path) -> String {
    format!("sh -c 'touch {}; echo {MARK} >&2; cat'", marker.display())
}

/// A repository with one committed file, changed since (racily, so git must look inside),
/// with the case applied.
fn repository(case: &str, marker: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "."]);
    git(root, &["config", "user.email", "a@b"]);
    git(root, &["config", "user.name", "a"]);
    std::fs::write(root.join("f.txt"), "hello\n").unwrap();
    git(root, &["add", "f.txt"]);
    git(root, &["commit", "-qm", "init"]);
    let run = program(marker);
    let config = |key: &str, value: &str| git(root, &["config", key, value]);
    match case {
        "filter process, work-tree attributes" => {
            std::fs::write(root.join(".gitattributes"), "* filter=evil\n").unwrap();
            config("filter.evil.process", &run);
        }
        "filter clean, work-tree attributes" => {
            std::fs::write(root.join(".gitattributes"), "* filter=evil\n").unwrap();
            config("filter.evil.clean", &run);
            config("filter.evil.smudge", &run);
        }
        "filter clean, info/attributes" => {
            std::fs::write(root.join(".git/info/attributes"), "* filter=evil\n").unwrap();
            config("filter.evil.clean", &run);
        }
        "textconv, work-tree attributes" => {
            std::fs::write(root.join(".gitattributes"), "* diff=evil\n").unwrap();
            config("diff.evil.textconv", &run);
        }
        "textconv, info/attributes" => {
            std::fs::write(root.join(".git/info/attributes"), "* diff=evil\n").unwrap();
            config("diff.evil.textconv", &run);
        }
        "diff command, info/attributes" => {
            std::fs::write(root.join(".git/info/attributes"), "* diff=evil\n").unwrap();
            config("diff.evil.command", &run);
        }
        "external diff" => config("diff.external", &run),
        "fsmonitor" => config("core.fsmonitor", &run),
        "filter through an included config" => {
            std::fs::write(root.join(".git/info/attributes"), "* filter=evil\n").unwrap();
            std::fs::write(
                root.join(".git/extra.cfg"),
                format!("[filter \"evil\"]\n\tclean = {run}\n"),
            )
            .unwrap();
            config("include.path", "extra.cfg");
        }
        other => panic!("unknown case {other}"),
    }
    // Changed, with the old size and time: git has to read the file to know.
    std::fs::write(root.join("f.txt"), "hellp\n").unwrap();
    dir
}

const CASES: &[&str] = &[
    "filter process, work-tree attributes",
    "filter clean, work-tree attributes",
    "filter clean, info/attributes",
    "textconv, work-tree attributes",
    "textconv, info/attributes",
    "diff command, info/attributes",
    "external diff",
    "fsmonitor",
    "filter through an included config",
];

#[test]
fn the_status_for_the_system_prompt_runs_no_repository_program() {
    for case in CASES {
        let outside = tempfile::tempdir().unwrap();
        let marker = outside.path().join("ran");
        let repo = repository(case, &marker);
        let root = repo.path().canonicalize().unwrap();
        let context = ProjectContext::gather_in(&root, &root, true);
        assert!(
            context.environment().contains("f.txt"),
            "{case}: the status is still read: {}",
            context.environment()
        );
        assert!(
            !marker.exists(),
            "{case}: ouro's git status ran the repository's program"
        );
    }
}

#[tokio::test]
async fn read_only_git_commands_run_no_repository_program() {
    const COMMANDS: &[&str] = &[
        "git status",
        "git status --short",
        "git diff",
        "git diff --stat",
        "git diff HEAD",
        "git log -p",
        "git show HEAD",
        "git blame f.txt",
    ];
    let mut runs = 0;
    for case in CASES {
        let outside = tempfile::tempdir().unwrap();
        let marker = outside.path().join("ran");
        let repo = repository(case, &marker);
        let root = repo.path().canonicalize().unwrap();
        for command in COMMANDS {
            let mut ctx = ToolContext::new(root.clone());
            ctx.confinement = Confinement::ReadOnly;
            ctx.sandbox = Arc::new(SandboxConfig::default());
            let tool = erase(BashTool);
            let input = json!({ "command": command });
            let call = tool.prepare(&input, &ctx).unwrap();
            let out = call.run(&ctx, &Progress::none()).await.unwrap();
            assert!(
                !out.content.contains(MARK),
                "{case}: `{command}` ran the repository's program: {}",
                out.content
            );
            assert!(!marker.exists(), "{case}: `{command}` left the marker");
            runs += 1;
        }
    }
    assert_eq!(runs, CASES.len() * COMMANDS.len());
}
