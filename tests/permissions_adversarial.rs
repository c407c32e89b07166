//! Adversarial probes of the permission engine: commands and file accesses that write, delete,
//! run code, reach the network or read outside the project must never be allowed without the
//! user's say-so, neither with no rules nor with typical narrow allow rules.

use std::path::Path;

use ouro::permissions::{
    Access, Decision, PermissionEngine, PermissionMode, PermissionPolicy, PermissionRequest,
    RuleKind, SourcedRule,
};
use ouro::settings::SettingsSource;

/// A project with sources, a symlink to /etc inside `links/`, and files whose names look like
/// options (what a bare `*` would hand to a program as flags).
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::create_dir_all(root.join("links")).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("links/escape")).unwrap();
    std::fs::create_dir_all(root.join("dashed")).unwrap();
    std::fs::write(root.join("dashed/-delete"), "").unwrap();
    std::fs::write(root.join("dashed/--output=pwned"), "").unwrap();
    dir
}

fn engine(root: &Path, mode: PermissionMode, allow: &[&str]) -> PermissionEngine {
    let rules = allow
        .iter()
        .map(|r| SourcedRule::new(*r, RuleKind::Allow, SettingsSource::Project))
        .collect();
    PermissionEngine::new(root.to_path_buf(), mode, rules, Vec::new()).unwrap()
}

fn decide(engine: &PermissionEngine, tool: &str, access: Access) -> Decision {
    engine.decide(&PermissionRequest {
        tool,
        access: &access,
        read_only: false,
        cwd: None,
    })
}

fn bash(engine: &PermissionEngine, command: &str) -> Decision {
    decide(engine, "Bash", Access::Execute(command.to_string()))
}

const TYPICAL_RULES: &[&str] = &[
    "Bash(git status:*)",
    "Bash(npm test:*)",
    "Bash(ls:*)",
    "Edit(src/**)",
];

/// Each of these writes, deletes, runs code or reads outside the project.
const NEVER_ALLOWED: &[&str] = &[
    // Array subscripts in `printf -v` are evaluated, running the substitution.
    "printf -v 'a[$(touch pwned)]' x",
    "printf -v a x",
    // git pagers, hooks and output files.
    "git -c core.pager='touch pwned' log",
    "git --exec-path=/tmp status",
    "git log --output=/tmp/pwned",
    "git diff --output /tmp/pwned",
    "git stash show --output=/tmp/pwned",
    "git stash list --output=/tmp/pwned",
    "git stash show --ext-diff",
    "git reflog show --output=/tmp/pwned",
    "git reflog --output=/tmp/pwned",
    // git grep accepts unique abbreviations of long options.
    "git grep --open=sh x",
    "git grep --open-files=sh x",
    // Outside a repository, or with a path outside it, `git diff` compares any two files.
    "git diff /etc/passwd /etc/hostname",
    "git diff -- /etc/passwd src/main.rs",
    "git blame --contents /etc/passwd src/main.rs",
    "git blame --contents=/etc/passwd src/main.rs",
    "git grep -f /etc/passwd",
    "git -C /etc status",
    "git --git-dir=/etc/x log",
    // Writing flags, also abbreviated (GNU getopt accepts unique prefixes).
    "sort -o out.txt src/main.rs",
    "sort -uo out.txt src/main.rs",
    "sort --outp=out.txt src/main.rs",
    "sort --o=out.txt src/main.rs",
    "sort --compress-prog=sh src/main.rs",
    "date --se='2020-01-01'",
    "date -s 2020-01-01",
    "tree -o out.txt",
    "tree --output out.txt",
    "file -C -m src/main.rs",
    "file --comp -m src/main.rs",
    "rg --pre=sh x",
    "rg --pre sh x",
    "uniq src/main.rs out.txt",
    "find . -fprint out.txt",
    "find . -delete",
    "find . -exec rm {} ;",
    "sed -n 'w out.txt' src/main.rs",
    "sed -i s/a/b/ src/main.rs",
    "sed 's/a/b/e' src/main.rs",
    "cd dashed && find *",
    // Wrappers and indirection.
    "env -S 'sh -c id'",
    "env sh -c id",
    "/usr/bin/env bash -c id",
    "timeout 5 bash -c id",
    "nice -n 5 sh -c id",
    "command rm x",
    "builtin eval id",
    "exec rm x",
    "xargs rm < src/main.rs",
    "awk 'BEGIN{system(\"id\")}'",
    "python3 -c 'import os'",
    "\\rm x",
    "'rm' x",
    "r''m x",
    "$'rm' x",
    // Redirections, substitutions, here-documents.
    "cat src/main.rs > out.txt",
    "cat src/main.rs >| out.txt",
    "cat src/main.rs &> out.txt",
    "cat src/main.rs >& out.txt",
    "cat src/main.rs <> out.txt",
    "echo x | tee out.txt",
    "echo x | tee -a out.txt",
    "echo x | tee -- -a",
    "echo x | tee /dev/null -- -p",
    "cat <(touch pwned)",
    "echo $(touch pwned)",
    "echo `touch pwned`",
    "echo $((a[$(touch pwned)]))",
    "[[ -v 'a[$(touch pwned)]' ]]",
    "test -v 'a[$(touch pwned)]'",
    // `$_` is the last argument of the previous command: here the operator `-v`.
    "echo -v; test \"$_\" 'a[$(touch pwned)]'",
    "echo -v; [ \"$_\" 'a[$(touch pwned)]' ]",
    "echo -v; [ $_ 'a[$(touch pwned)]' ]",
    "echo -v; [ ! \"$_\" 'a[$(touch pwned)]' ]",
    "echo -v; [ x = x -a \"$_\" 'a[$(touch pwned)]' ]",
    "echo -v; printf \"$_\" 'a[$(touch pwned)]' x",
    "bash <<< 'touch pwned'",
    "sh <<EOF\ntouch pwned\nEOF",
    "cat <<EOF\n$(touch pwned)\nEOF",
    "ls\ntouch pwned",
    "ls # comment\ntouch pwned",
    "ls \\\n; touch pwned",
    "ls;touch pwned",
    "ls&touch pwned",
    "ls|sh",
    // Here-documents whose end bash finds elsewhere than a parser might.
    "cat <<E\\OF\nx\nEOF\ntouch pwned",
    "cat <<'EOF'\nx\nEOF\ntouch pwned",
    "cat <<-EOF\n\tx\n\tEOF\ntouch pwned",
    "cat <<\"EOF\"\nx\nEOF\ntouch pwned",
    "cat <<EOF; touch pwned\nx\nEOF",
    "cat <<EOF && touch pwned\nx\nEOF",
    "cat <<A <<B\nx\nA\ny\nB\ntouch pwned",
    "cat <<''\nx\n\ntouch pwned",
    "cat <<EOF\n${x:=$(touch pwned)}\nEOF",
    "cat <<EOF\n`touch pwned`\nEOF",
    "cat <<A <<B\nx\nA\n`touch pwned`\nB",
    "cat <<'A' <<B\n`x`\nA\n`touch pwned`\nB",
    "cat <<A; cat <<B\nx\nA\n`touch pwned`\nB",
    "cat <<A | cat\n`touch pwned`\nA",
    "cat <<A\nx $(\n`touch pwned`\n)\nA",
    "cat <<\\EOF\nx\nEOF\ntouch pwned",
    "echo $[a[$(touch pwned)]]",
    // Comments and words containing `#`.
    "ls # \\\ntouch pwned",
    "ls x#$(touch pwned)",
    "ls x#`touch pwned`",
    "ls ${x#$(touch pwned)}",
    "ls \\#; touch pwned",
    "ls ${x/$(touch pwned)/y}",
    "ls ${x//a/$(touch pwned)}",
    "ls ${x/#`touch pwned`/y}",
    "ls ${x:-$(touch pwned)}",
    "ls ${x:+`touch pwned`}",
    "ls ${x%`touch pwned`}",
    "ls ${x%%$(touch pwned)}",
    "ls ${x:$(touch pwned)}",
    "ls ${x:1:$(touch pwned)}",
    "ls ${x^$(touch pwned)}",
    "ls ${x,,$(touch pwned)}",
    "ls \"${x#`touch pwned`}\"",
    "ls ${#x[$(touch pwned)]}",
    "ls ${x[`touch pwned`]}",
    "ls \"`touch pwned`\"",
    "ls ${x:?`touch pwned`}",
    "[[ $x == $(touch pwned) ]]",
    "[[ x =~ `touch pwned` ]]",
    "[[ -n ${x#$(touch pwned)} ]]",
    "[[ x == ${x/a/`touch pwned`} ]]",
    "case x in $(touch pwned)) ls;; esac",
    "case `touch pwned` in x) ls;; esac",
    "for f in `touch pwned`; do ls; done",
    "cat < `touch pwned`",
    "cat < $(touch pwned)",
    "ls x`touch pwned`",
    "cat <<< `touch pwned`",
    "ls $x`touch pwned`",
    "ls ~`touch pwned`",
    "ls {a,`touch pwned`}",
    "ls [`touch pwned`]",
    "ls *`touch pwned`",
    "ls $'a'`touch pwned`",
    "ls -- `touch pwned`",
    "ls --color=`touch pwned`",
    "ls -I`touch pwned`",
    "cd `touch pwned`",
    "echo `touch pwned`",
    "printf %s `touch pwned`",
    "[ `touch pwned` ]",
    "test `touch pwned`",
    "ls 2>`touch pwned`",
    "ls >&`touch pwned`",
    "ls 2>/dev/null`touch pwned`",
    "git status `touch pwned`",
    "git status --porcelain=`touch pwned`",
    "npm test `touch pwned`",
    "ls\t;\ttouch pwned",
    // Reads outside the project.
    "cat /etc/passwd",
    "cat ~/.ssh/id_rsa",
    "cat ~root/.ssh/id_rsa",
    "cat //etc/passwd",
    "cat src/../../../etc/passwd",
    "cat links/escape/passwd",
    "cat links/escape/../etc/passwd",
    "cat links/*",
    "cat {/etc/passwd,src/main.rs}",
    "cat $'/etc/passwd'",
    "cat $HOME/.bashrc",
    "cat < /etc/passwd",
    "grep -f /etc/passwd src/main.rs",
    "grep -r root /etc",
    "grep --file=/etc/passwd src/main.rs",
    "diff --from-file=/etc/passwd src/main.rs",
    "jq --rawfile a /etc/passwd -n '$a'",
    "du -sh /",
    "cd / && cat etc/passwd",
    "cd links/escape && cat passwd",
    // Recursive reads that follow the symlink out of the project.
    "grep -R root .",
    "grep --dereference-recursive root .",
    "rg -L root",
    "rg --follow root",
    "tree -l",
    "du -L .",
    "find -L . -type f",
    "find . -follow",
    // Paths that leave through a symlink after `..` or a glob.
    "cat links/*/../passwd",
    "cat links/escape/../etc/*",
    "cat ./*/escape/../etc/passwd",
    "cat ~/../../etc/passwd",
    "cat ~+/../x",
    "cat ~-/x",
    // sed scripts that write, read or run.
    "sed 'e id' src/main.rs",
    "sed '1e id' src/main.rs",
    "sed 's/x/y/w out.txt' src/main.rs",
    "sed 'W out.txt' src/main.rs",
    "sed 'r /etc/passwd' src/main.rs",
    "sed 'R /etc/passwd' src/main.rs",
    "sed -n '/x/{w out.txt\n}' src/main.rs",
    "sed -E 's/a/b/;e id' src/main.rs",
    "sed --in-pl=.bak s/a/b/ src/main.rs",
    "sed -f script.sed src/main.rs",
    "sed -n p /etc/passwd",
    "sed 's/a/b/gw out.txt' src/main.rs",
    "sed 's/a/b/2w out.txt' src/main.rs",
    "sed 's,a,b,w out.txt' src/main.rs",
    "sed 's/a/b/;w out.txt' src/main.rs",
    "sed '/x/w out.txt' src/main.rs",
    "sed 'y/abc/xyz/;w out.txt' src/main.rs",
    "sed '$!N;e id' src/main.rs",
    "sed -n '1~2w out.txt' src/main.rs",
    "sed '0,/x/w out.txt' src/main.rs",
    "sed '{e id\n}' src/main.rs",
    "sed 'Q;e id' src/main.rs",
    "sed 'v;e id' src/main.rs",
    "sed 's/x/y/I;W out.txt' src/main.rs",
    "sed 's/a/b/ew' src/main.rs",
    "sed 'b;w out.txt' src/main.rs",
    "sed ':a;w out.txt' src/main.rs",
    "sed 'T x;e id' src/main.rs",
    "sed '#n\nw out.txt' src/main.rs",
    "sed 'c\\\nx\ne id' src/main.rs",
    "sed 'a\\\nx\ne id' src/main.rs",
    "sed 'a x\ne id' src/main.rs",
    "sed 's/a/\\\n/;e id' src/main.rs",
    "sed 's/[/]/x/;e id' src/main.rs",
    "sed 's/a/b/w' src/main.rs",
    "sed -e p -e 'w out.txt' src/main.rs",
    "sed --expression='w out.txt' src/main.rs",
    "sed -ne 'w out.txt' src/main.rs",
    "sed -n -- 'w out.txt' src/main.rs",
    "sed -s -n 'w out.txt' src/main.rs",
    "sed -E -n '/(a)/w out.txt' src/main.rs",
    "sed 's/a/b/;s/c/d/w out.txt' src/main.rs",
    "sed -n '/a/,/b/{/c/w out.txt\n}' src/main.rs",
    "sed -z 'e id' src/main.rs",
    "sed '1!G;h;$!d;e id' src/main.rs",
    "sed 'l;e id' src/main.rs",
    "sed 'l 5;e id' src/main.rs",
    "sed 'q5;e id' src/main.rs",
    "sed 'r out.txt' src/main.rs",
    "sed '\\,x,w out.txt' src/main.rs",
    "sed '\\%x%e id' src/main.rs",
    "sed 's/a/b/ ; w out.txt' src/main.rs",
    "sed '/a/I,+3w out.txt' src/main.rs",
    "sed '/a/!w out.txt' src/main.rs",
    "sed '/a/ !w out.txt' src/main.rs",
    // More shell forms.
    "ls | xargs rm",
    "echo rm x | sh",
    "printf x >> ~/.bashrc",
    "cat src/main.rs 1>out.txt",
    "cat src/main.rs 2>out.txt",
    "exec >out.txt",
    "{ cat src/main.rs; } > out.txt",
    "(cat src/main.rs) > out.txt",
    "cat src/main.rs | tee >(rm x)",
    "true && rm x",
    "! rm x",
    "if true; then rm x; fi",
    "case x in x) rm y;; esac",
    "for i in 1; do rm x; done",
    "f() { rm x; }; f",
    "select x in a; do rm y; done",
    // A loop variable is an assignment: PATH now finds the project's programs first.
    "for PATH in ./bin; do cat src/main.rs; done",
    "for LD_PRELOAD in ./x.so; do ls; done",
    "select IFS in x; do ls; done",
    "for BASH_ENV in ./x; do ls; done",
    // Git in a submodule runs the filters of the submodule's own configuration.
    "git diff --ignore-submodules=none",
    "git grep --recurse-submodules x",
    "git log -p --submodule=diff --ignore-submodules=none",
    "coproc rm x",
    "time rm x",
    "rm x & wait",
    "alias ls=rm; ls x",
    "hash -p /bin/rm ls; ls x",
    "echo ${x:=$(rm y)}",
    "echo ${x@P}",
    "echo \"${x/a/$(rm y)}\"",
    "cat \"$(echo /etc/passwd)\"",
    "pushd / && cat etc/passwd",
    "head -n1 -- /etc/passwd",
    "stat /etc/shadow",
    "date -f /etc/shadow",
    "date --file=/etc/shadow",
    "cat src/main.rs >/dev/stdout/../../tmp/x",
    "tee /dev/fd/3 3>out.txt",
    // Network.
    "cat < /dev/tcp/example.com/80",
    "echo x > /dev/tcp/example.com/80",
    "curl https://example.com",
    "git status && curl https://example.com",
];

/// Allow rules with a prefix must not stretch past their command.
const PREFIX_BYPASSES: &[&str] = &[
    "git status; rm x",
    "git status && rm x",
    "git status || rm x",
    "git status | sh",
    "git status $(rm x)",
    "git status `rm x`",
    "git status\nrm x",
    "git statusx",
    "git status > out.txt",
    "git  status ; rm x",
    "'git' status ; rm x",
    "npm test; rm x",
    "npm test && curl https://example.com",
    "FOO=1 npm test",
    "npm test <(rm x)",
    "ls; rm x",
    "ls > out.txt",
    "ls -la /etc > /dev/null; rm x",
];

#[test]
fn dangerous_commands_are_never_allowed_in_default_mode() {
    let dir = project();
    let no_rules = engine(dir.path(), PermissionMode::Default, &[]);
    let typical = engine(dir.path(), PermissionMode::Default, TYPICAL_RULES);
    let mut allowed = Vec::new();
    for command in NEVER_ALLOWED.iter().chain(PREFIX_BYPASSES) {
        for (label, engine) in [("no rules", &no_rules), ("typical rules", &typical)] {
            if bash(engine, command) == Decision::Allow {
                allowed.push(format!("{command:?} ({label})"));
            }
        }
    }
    assert!(allowed.is_empty(), "allowed: {allowed:#?}");
}

#[test]
fn dangerous_commands_are_never_allowed_in_accept_edits_or_plan_mode() {
    let dir = project();
    let mut allowed = Vec::new();
    for mode in [PermissionMode::AcceptEdits, PermissionMode::Plan] {
        let engine = engine(dir.path(), mode, TYPICAL_RULES);
        for command in NEVER_ALLOWED.iter().chain(PREFIX_BYPASSES) {
            if bash(&engine, command) == Decision::Allow {
                allowed.push(format!("{command:?} ({mode:?})"));
            }
        }
    }
    assert!(allowed.is_empty(), "allowed: {allowed:#?}");
}

#[test]
fn safe_reads_stay_allowed() {
    let dir = project();
    let engine = engine(dir.path(), PermissionMode::Default, &[]);
    for command in [
        "cat src/main.rs",
        "git status",
        "git diff",
        "git diff HEAD~1 -- src/main.rs",
        "git log --oneline -5",
        "git stash list",
        "git blame src/main.rs",
        "sort src/main.rs",
        "ls src/*",
        "for f in a b; do ls src; done",
        "cat src/main.rs | grep fn",
    ] {
        assert_eq!(bash(&engine, command), Decision::Allow, "{command}");
    }
}

#[test]
fn globs_cannot_smuggle_options_through_file_names() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("-delete"), "").unwrap();
    std::fs::write(root.join("--output=pwned"), "").unwrap();
    std::fs::write(root.join("a.txt"), "").unwrap();
    let engine = engine(root, PermissionMode::Default, &[]);
    // `find *` becomes `find --output=pwned -delete a.txt`: it deletes everything.
    for command in [
        "find *",
        "sort *",
        "sort ?*",
        "cat *",
        "git diff *",
        "tree [-]*",
    ] {
        assert_ne!(bash(&engine, command), Decision::Allow, "{command}");
    }
}

#[test]
fn parent_dirs_after_a_symlink_are_resolved_from_where_it_leads() {
    let dir = project();
    let engine = engine(dir.path(), PermissionMode::AcceptEdits, &["Edit(links/**)"]);
    // `links/escape/..` is `/`, so this is /etc/passwd, not links/etc/passwd.
    let sneaky = dir.path().join("links/escape/../etc/passwd");
    for (tool, access) in [
        ("Read", Access::Read(sneaky.clone())),
        ("Write", Access::Write(sneaky.clone())),
        ("Edit", Access::Write(sneaky)),
        ("Read", Access::Read("links/escape/../etc/shadow".into())),
    ] {
        let decision = decide(&engine, tool, access.clone());
        assert_ne!(decision, Decision::Allow, "{tool} {access:?}");
    }
}

#[test]
fn file_tools_stay_inside_the_project() {
    let dir = project();
    let engine = engine(dir.path(), PermissionMode::AcceptEdits, TYPICAL_RULES);
    for path in [
        "/etc/passwd",
        "../outside.txt",
        "src/../../outside.txt",
        "links/escape/passwd",
        "links/escape/",
        "src/new/dir/../../../../outside.txt",
        "//etc/passwd",
        "/dev/sda",
        "links/escape/./passwd",
        "links//escape/passwd",
        "links/escape/../etc/passwd",
        "src//..//..//outside.txt",
        "links/./escape/../etc/hostname",
    ] {
        let write = decide(&engine, "Write", Access::Write(dir.path().join(path)));
        assert_ne!(write, Decision::Allow, "Write {path}");
        let read = decide(&engine, "Read", Access::Read(dir.path().join(path)));
        assert_ne!(read, Decision::Allow, "Read {path}");
    }
}

#[test]
fn accept_edits_does_not_reach_files_that_run_code_or_grant_permissions() {
    let dir = project();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    let engine = engine(dir.path(), PermissionMode::AcceptEdits, TYPICAL_RULES);
    // With core.fsmonitor or core.pager in .git/config, the auto-allowed `git status` runs
    // any program; project settings can allow every command.
    for path in [
        ".git/config",
        ".git/hooks/pre-commit",
        "vendor/lib/.git/config",
        ".ouro/settings.json",
        ".ouro/settings.local.json",
    ] {
        let write = decide(&engine, "Write", Access::Write(dir.path().join(path)));
        assert_ne!(write, Decision::Allow, "Write {path}");
    }
    let normal = decide(&engine, "Write", Access::Write(dir.path().join("notes.md")));
    assert_eq!(normal, Decision::Allow);
}

#[test]
fn accept_edits_does_not_write_through_hard_links() {
    let dir = project();
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("bashrc");
    std::fs::write(&outside, "").unwrap();
    std::fs::hard_link(&outside, dir.path().join("src/linked.rs")).unwrap();
    let engine = engine(dir.path(), PermissionMode::AcceptEdits, TYPICAL_RULES);
    // The same inode as a file outside the project: writing it changes that file.
    let write = decide(
        &engine,
        "Edit",
        Access::Write(dir.path().join("src/linked.rs")),
    );
    assert_ne!(write, Decision::Allow);
    let plain = decide(
        &engine,
        "Edit",
        Access::Write(dir.path().join("src/main.rs")),
    );
    assert_eq!(plain, Decision::Allow);
}

#[test]
fn a_blanket_allow_does_not_run_a_denied_command_hidden_in_another() {
    let dir = project();
    let rules = vec![
        SourcedRule::new("Bash", RuleKind::Allow, SettingsSource::Project),
        SourcedRule::new("Bash(rm:*)", RuleKind::Deny, SettingsSource::Project),
    ];
    let engine = PermissionEngine::new(
        dir.path().to_path_buf(),
        PermissionMode::Default,
        rules,
        Vec::new(),
    )
    .unwrap();
    for command in [
        "sh -c 'rm -rf src'",
        "bash -c \"rm -rf src\"",
        "eval 'rm -rf src'",
        "command rm -rf src",
        "builtin command rm -rf src",
        "exec rm -rf src",
        "xargs rm -rf < list.txt",
        "find . -exec rm {} +",
        "sudo rm -rf src",
        "setsid rm -rf src",
        "stdbuf -o0 rm -rf src",
        "bash <<< 'rm -rf src'",
        "python3 -c 'import shutil; shutil.rmtree(\"src\")' && rm x",
        "echo 'rm -rf src' | sh",
        "printf 'rm -rf src' | bash -s",
        "echo rm src | env sh",
        "sh < script.sh",
        "bash -e script.sh",
        "sh -o errexit script.sh",
        "cat list | xargs sh",
    ] {
        assert_ne!(bash(&engine, command), Decision::Allow, "{command}");
    }
    assert_eq!(bash(&engine, "npm run build"), Decision::Allow);
    assert_eq!(bash(&engine, "grep -n rm src/main.rs"), Decision::Allow);
    assert_eq!(bash(&engine, "cat src/main.rs | grep rm"), Decision::Allow);
}

#[test]
fn a_value_stuck_to_a_short_option_is_a_path_too() {
    let dir = project();
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("pw.txt")).unwrap();
    let engine = engine(dir.path(), PermissionMode::Default, &[]);
    for command in [
        "grep -fpw.txt src/main.rs",
        "hexdump -fpw.txt src/main.rs",
        "grep -ofpw.txt src/main.rs",
    ] {
        assert_ne!(bash(&engine, command), Decision::Allow, "{command}");
    }
    assert_eq!(bash(&engine, "head -n5 src/main.rs"), Decision::Allow);
}

#[test]
fn rules_and_accept_edits_do_not_plant_a_git_repository() {
    let dir = project();
    std::fs::create_dir_all(dir.path().join("src/evil")).unwrap();
    std::fs::write(dir.path().join("src/evil/HEAD"), "ref: refs/heads/main\n").unwrap();
    // A directory with HEAD, config, objects/ and refs/ is a repository to git; its
    // core.fsmonitor runs on the auto-allowed `git -C src/evil status`.
    for mode in [PermissionMode::Default, PermissionMode::AcceptEdits] {
        let engine = engine(dir.path(), mode, TYPICAL_RULES);
        for path in ["src/evil/config", "src/other/HEAD", "HEAD"] {
            let write = decide(&engine, "Write", Access::Write(dir.path().join(path)));
            assert_ne!(write, Decision::Allow, "{mode:?} Write {path}");
        }
        let plain = decide(
            &engine,
            "Write",
            Access::Write(dir.path().join("src/config")),
        );
        assert_eq!(plain, Decision::Allow, "{mode:?}");
    }
}

#[test]
fn relative_paths_are_judged_from_the_directory_the_shell_is_in() {
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let e = engine(&root, PermissionMode::Default, &[]);
    let in_links = root.join("links");
    let from = |cwd: &Path, command: &str| {
        e.decide(&PermissionRequest {
            tool: "Bash",
            access: &Access::Execute(command.to_string()),
            read_only: true,
            cwd: Some(cwd),
        })
    };
    // After an allowed `cd links`, `escape/passwd` is /etc/passwd, not <root>/escape/passwd.
    assert_ne!(from(&in_links, "cat escape/passwd"), Decision::Allow);
    assert_ne!(
        from(&in_links, "cat ../links/escape/hosts"),
        Decision::Allow
    );
    assert_eq!(from(&root, "cat src/main.rs"), Decision::Allow);
    assert_eq!(from(&root.join("src"), "cat main.rs"), Decision::Allow);
    assert_ne!(
        from(&root.join("src"), "cat ../../outside.txt"),
        Decision::Allow
    );
}
