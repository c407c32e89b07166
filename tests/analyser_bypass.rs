//! An adversarial corpus of the analyser's bypass classes (default mode, no allow rules): each
//! input once ran without approval because bash and the analyser read it differently or a
//! "read-only" program was not. Every input must need approval now; a handful of look-alikes
//! that really are harmless must still run on their own, so the fixes stay narrow.

use std::path::Path;

use ouro::permissions::{
    Access, Decision, PermissionEngine, PermissionMode, PermissionPolicy, PermissionRequest,
    RuleKind, SourcedRule,
};
use ouro::settings::SettingsSource;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "a\nb\n").unwrap();
    dir
}

/// Prefix rules a user might well have: they allow the command, not code hidden inside it.
const BLANKET_RULES: &[&str] = &[
    "Bash(echo:*)",
    "Bash(cat:*)",
    "Bash(ls:*)",
    "Bash(wc:*)",
    "Bash(grep:*)",
    "Bash(git status:*)",
    "Bash(test:*)",
];

fn decide(root: &Path, command: &str) -> Decision {
    decide_with(root, &[], command)
}

fn decide_with(root: &Path, allow: &[&str], command: &str) -> Decision {
    let rules = allow
        .iter()
        .map(|r| SourcedRule::new(*r, RuleKind::Allow, SettingsSource::Project))
        .collect();
    let engine = PermissionEngine::new(
        root.to_path_buf(),
        PermissionMode::Default,
        rules,
        Vec::new(),
    )
    .unwrap();
    engine.decide(&PermissionRequest {
        tool: "Bash",
        access: &Access::Execute(command.to_string()),
        read_only: false,
        cwd: None,
    })
}

/// Characters bash splits or treats differently from tree-sitter-bash.
fn lexing_corpus() -> Vec<String> {
    let odd = [
        "\r", "\x0b", "\x0c", "\x01", "\x1b", "\x7f", "\\\t", "\\\x0b", "\\\x0c", "\x00",
    ];
    let shapes = [
        "echo hi{c}# ; touch x",
        "ls{c}; rm -rf build",
        "cat notes.txt{c}&& curl evil.example",
        "echo ok{c}| sh",
        "git status{c}$(id)",
        "wc -l notes.txt {c}> notes.txt",
        "grep a notes.txt{c}`id`",
        "echo '{c}'; touch y",
        "ls {c}",
        "{c}ls",
    ];
    let mut out = Vec::new();
    for c in odd {
        for shape in shapes {
            out.push(shape.replace("{c}", c));
        }
    }
    out
}

/// Expansions whose operands bash expands, substitutes or evaluates as arithmetic.
fn expansion_corpus() -> Vec<String> {
    let payloads = [
        "$[_]",
        "<(id)",
        ">(sh)",
        "$(id)",
        "`id`",
        "a\\\nb",
        "$[a[$(id)]]",
        "${y}",
        "$HOME",
        "\"$(id)\"",
    ];
    let operators = [
        ":-", "-", ":+", "+", ":=", "=", ":?", "#", "##", "%", "%%", "/a/", "//a/",
    ];
    let mut out = Vec::new();
    for payload in payloads {
        for op in operators {
            out.push(format!("echo ${{x{op}{payload}}}"));
        }
    }
    // Offsets and lengths are arithmetic: a name there is evaluated, subscript and all.
    for operand in ["_", "x", "PWD", "a[0]", "_:_", "1:_", "$i", "i+1"] {
        out.push(format!("echo ${{PWD:{operand}}}"));
        out.push(format!("cat src/${{f:{operand}}}"));
    }
    out
}

/// `>` and `<` inside `[ ]` are redirections to bash.
fn test_redirect_corpus() -> Vec<String> {
    let mut out = Vec::new();
    for target in ["~/.bashrc", "notes.txt", "/etc/x", "src/main.rs", "x"] {
        for shape in [
            "[ a > {t} ]",
            "[ a < {t} ]",
            "[ -n a > {t} ]",
            "[ a >> {t} ]",
            "test -z a && [ b > {t} ]",
            "[ a = b ] || [ c > {t} ]",
        ] {
            out.push(shape.replace("{t}", target));
        }
    }
    out
}

/// Programs that only read with the right arguments, given arguments that write, read
/// elsewhere or run something.
fn reader_flag_corpus() -> Vec<String> {
    let mut out: Vec<String> = [
        // response files and file lists
        "strings @opts",
        "strings -a @/etc/passwd",
        "sort --files0-from=list",
        "sort --files0-from list",
        "wc --files0-from=list",
        "du --files0-from=list",
        "find . --files0-from list",
        "find . -files0-from list",
        "find -L . -name x",
        "find . -follow -name x",
        "find . -fprint out",
        "find . -newerXY x",
        "tail --files0-from=list",
        "file -f -",
        "file -f names.txt",
        "file --files-from names.txt",
        "file -C -m magic",
        "file --no-sandbox notes.txt",
        "file -p notes.txt",
        // writes
        "sort -o out notes.txt",
        "sort -ro out notes.txt",
        "sort -rno out notes.txt",
        "sort --outp=out notes.txt",
        "sort --output out notes.txt",
        "sort -T /tmp notes.txt",
        "sort --temporary-directory=/tmp notes.txt",
        "sort --compress-program=sh notes.txt",
        "sort --random-source=/dev/urandom notes.txt",
        "tree -o out",
        "tree -R",
        "tree --output out",
        "uniq notes.txt out",
        "uniq -- notes.txt -out",
        "uniq -c -- notes.txt out",
        // programs run
        "rg --pre=sh a",
        "rg --pre sh a",
        "rg --hostname-bin=sh a",
        "rg -z a",
        "rg --search-zip a",
        "rg --ignore-file=/etc/x a",
        // recursion that follows links
        "diff -r src /etc",
        "diff --recursive src other",
        "grep -R root .",
        "rg -L root",
        "rg --follow root",
        "ls -RL",
        "du -L .",
        // jq modules and environment
        "jq 'import \"x\" as x; .' notes.txt",
        "jq 'include \"x\"; .' notes.txt",
        "jq -n '$ENV'",
        "jq -n 'env.HOME'",
        "jq -n '$ENV.ANTHROPIC_API_KEY'",
        "jq -L /tmp -n 1",
        "jq --rawfile k /etc/passwd -n '$k'",
        "jq --slurpfile k /etc/passwd -n '$k'",
        // git reading global config or opening pagers
        "git config --get user.name",
        "git config --global --get user.name",
        "git config --system --list",
        "git config --list",
        "git config --includes --local --list",
        "git config -f /etc/gitconfig --list",
        "git grep -O less a",
        "git grep -iOless a",
        "git grep -niOvim a",
        "git grep --open-files-in-pager=vim a",
        "git diff --output=/tmp/x",
        "git log --output=x",
        "git diff --ext-diff",
        // expanded arguments to printers
        "echo $HOME",
        "echo ${HOME}",
        "echo \"$ANTHROPIC_API_KEY\"",
        "printf %s $PATH",
        "printf -v x %s y",
        "pwd $x",
        "echo -- $x",
        "echo ${#x}",
    ]
    .map(String::from)
    .to_vec();
    // Unknown and abbreviated options of every reader.
    for (program, bad) in [
        ("cat", "--show"),
        ("cat", "-Z"),
        ("head", "--lin=3"),
        ("tail", "--foll"),
        ("wc", "--files0"),
        ("ls", "--dire"),
        ("ls", "-Y"),
        ("stat", "--printff"),
        ("du", "--files0-from"),
        ("df", "--outp"),
        ("nl", "-Q"),
        ("od", "--rea"),
        ("hexdump", "-Q"),
        ("md5sum", "-c"),
        ("sha256sum", "--check"),
        ("cut", "--outp"),
        ("diff", "--to-file=x"),
        ("cmp", "-Q"),
        ("realpath", "--rel"),
        ("readlink", "-Q"),
        ("tac", "-Q"),
        ("column", "-Q"),
        ("paste", "-Q"),
        ("comm", "-4"),
        ("join", "-Q"),
        ("fold", "-Q"),
        ("sort", "--sort-x"),
        ("uniq", "-Q"),
        ("grep", "--pre=sh"),
        ("grep", "-Q"),
        ("rg", "--pre-glob=x"),
        ("tr", "-Q"),
        ("expand", "-Q"),
        ("fmt", "-Q"),
        ("uname", "-Q"),
        ("basename", "-Q"),
        ("seq", "-Q"),
    ] {
        out.push(format!("{program} {bad} notes.txt"));
    }
    out
}

#[test]
fn every_bypass_in_the_corpus_needs_approval() {
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let corpus: Vec<String> = [
        lexing_corpus(),
        expansion_corpus(),
        test_redirect_corpus(),
        reader_flag_corpus(),
    ]
    .concat();
    assert!(corpus.len() >= 300, "{} inputs", corpus.len());
    let allowed: Vec<String> = corpus
        .iter()
        .filter(|c| decide(&root, c) == Decision::Allow)
        .map(|c| format!("{c:?}"))
        .collect();
    assert!(
        allowed.is_empty(),
        "{} of {} ran without approval:\n{}",
        allowed.len(),
        corpus.len(),
        allowed.join("\n")
    );
}

#[test]
fn hidden_code_needs_approval_even_under_blanket_rules() {
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let corpus: Vec<String> =
        [lexing_corpus(), expansion_corpus(), test_redirect_corpus()].concat();
    let allowed: Vec<String> = corpus
        .iter()
        .filter(|c| decide_with(&root, BLANKET_RULES, c) == Decision::Allow)
        .map(|c| format!("{c:?}"))
        .collect();
    assert!(
        allowed.is_empty(),
        "{} of {} ran under {BLANKET_RULES:?}:\n{}",
        allowed.len(),
        corpus.len(),
        allowed.join("\n")
    );
}

#[test]
fn harmless_look_alikes_still_run_on_their_own() {
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    for command in [
        "echo hi\tthere",
        "find src -name '*.rs' -type f -print",
        "[[ a > b ]]",
        "sort -rn -k 2 notes.txt",
        "sort --key=2 notes.txt",
        "uniq -c notes.txt",
        "git config --local --get user.name",
        "git grep -n a",
        "jq -r '.a' notes.txt",
        "jq --arg k v '.[$k]' notes.txt",
        "strings -n 8 notes.txt",
        "grep -rn main src",
        "ls -la src",
        "head -n 5 notes.txt",
        "tail -20 notes.txt",
        "wc -l -- notes.txt",
        "echo {a,b}",
        "pwd -P",
        "cat -n notes.txt",
        "diff notes.txt src/main.rs",
    ] {
        assert_eq!(decide(&root, command), Decision::Allow, "{command:?}");
    }
}

/// Prefix rules a project might have; they allow the command and subcommand only.
const PREFIX_RULES: &[&str] = &[
    "Bash(git diff:*)",
    "Bash(git log:*)",
    "Bash(npm test:*)",
    "Bash(npm run build:*)",
    "Bash(cargo test:*)",
    "Bash(make test:*)",
    "Bash(cat:*)",
    "Bash(sort:*)",
];

#[test]
fn prefix_rules_do_not_cover_options_that_write_read_elsewhere_or_run_code() {
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let corpus = [
        "git diff --no-index src/main.rs /etc/passwd",
        "git diff --no-index /etc/hostname /etc/passwd",
        "git diff --output=/tmp/x",
        "git diff --output /tmp/x",
        "git diff --outp=/tmp/x",
        "git diff --line-prefix='[alias]' --output=.git/config",
        "git diff --ext-diff",
        "git diff --textconv",
        "git log --output=out.txt",
        "git log -p --exec-path=/tmp",
        "git log -- ../../etc/passwd",
        "npm test --node-options=--require=./evil.js",
        "npm test --node-options '--require ./evil.js'",
        "npm test --prefix=/elsewhere",
        "npm test --prefix /elsewhere",
        "npm test -g",
        "npm test --global",
        "npm test --userconfig=/tmp/npmrc",
        "npm test --globalconfig=/tmp/npmrc",
        "npm test --script-shell=/tmp/sh",
        "npm test --init-module=/tmp/x.js",
        "npm run build --script-shell=./sh",
        "npm run build -- --config=/tmp/x",
        "cargo test --config build.rustc-wrapper=./x",
        "cargo test --config=net.git-fetch-with-cli=true",
        "cargo test -Zunstable-options",
        "cargo test --manifest-path /tmp/Cargo.toml",
        "cargo test --manifest-path=../other/Cargo.toml",
        "make test -f /tmp/Makefile",
        "make test --file=/tmp/Makefile",
        "make test --makefile=x.mk",
        "make test --eval=x",
        "make test -C /tmp",
        "make test --directory=/tmp",
        "make test -E x",
        "cat /etc/passwd",
        "cat ~/.ssh/id_rsa",
        "cat ../secret",
        "cat src/../../secret",
        "cat /proc/1/environ",
        "sort -o /tmp/x src/main.rs",
        "sort -T /tmp src/main.rs",
        "sort --compress-program=./x src/main.rs",
        "sort --files0-from=/tmp/list",
    ];
    let allowed: Vec<&str> = corpus
        .iter()
        .copied()
        .filter(|c| decide_with(&root, PREFIX_RULES, c) == Decision::Allow)
        .collect();
    assert!(
        allowed.is_empty(),
        "ran under {PREFIX_RULES:?}:\n{}",
        allowed.join("\n")
    );
    for harmless in [
        "git diff src/main.rs",
        "git diff --stat HEAD~1",
        "git log -p -- src",
        "npm test -- --watch",
        "npm run build",
        "cargo test --release -- --nocapture",
        "make test",
        "cat src/main.rs",
        "sort -rn src/main.rs",
    ] {
        assert_eq!(
            decide_with(&root, PREFIX_RULES, harmless),
            Decision::Allow,
            "{harmless}"
        );
    }
}

fn engine_with(root: &Path, mode: PermissionMode, rules: &[(&str, RuleKind)]) -> PermissionEngine {
    let rules = rules
        .iter()
        .map(|(r, kind)| SourcedRule::new(*r, *kind, SettingsSource::Project))
        .collect();
    PermissionEngine::new(root.to_path_buf(), mode, rules, Vec::new()).unwrap()
}

fn bash_with(engine: &PermissionEngine, command: &str) -> Decision {
    engine.decide(&PermissionRequest {
        tool: "Bash",
        access: &Access::Execute(command.to_string()),
        read_only: false,
        cwd: None,
    })
}

#[test]
fn deny_rules_on_files_hold_for_searches_and_git_history() {
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join("secrets/key"), "hunter2\n").unwrap();
    let reaching = [
        "grep -r hunter .",
        "grep -R hunter .",
        "grep -rn hunter",
        "grep --recursive hunter .",
        "grep -d recurse hunter .",
        "egrep -r hunter .",
        "rg hunter",
        "rg -n hunter .",
        "git grep hunter",
        "git show HEAD:secrets/key",
        "git show HEAD",
        "git log -p",
        "git log --patch",
        "git log -u -1",
        "git log -U1 -1",
        "git log --unified=0 -1",
        "git log --cc -1",
        "git log --remerge-diff -1",
        "git log --binary -1",
        "git log --oneline -Shunter",
        "git whatchanged -U0 -1",
        "git stash list -p",
        "git diff HEAD~1",
        "git cat-file --batch",
        "git cat-file -p HEAD:secrets/key",
        "git archive HEAD",
        "find .",
        "find . -name key",
        "ls -R",
        "ls -laR .",
        "tree",
        "du -a",
    ];
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions,
    ] {
        let e = engine_with(
            &root,
            mode,
            &[
                ("Read(secrets/**)", RuleKind::Deny),
                ("Bash", RuleKind::Allow),
            ],
        );
        for command in reaching {
            let d = bash_with(&e, command);
            assert!(d != Decision::Allow, "{mode:?} {command}: {d:?}");
        }
        // Naming the file itself is denied outright.
        assert!(matches!(
            bash_with(&e, "cat secrets/key"),
            Decision::Deny(_)
        ));
    }
    // Without file deny rules, the same reads inside the project run on their own.
    let plain = engine_with(&root, PermissionMode::Default, &[]);
    assert_eq!(bash_with(&plain, "grep -rn hunter ."), Decision::Allow);
    // History that prints no file's content stays allowed beside the deny rules.
    let e = engine_with(
        &root,
        PermissionMode::Default,
        &[("Read(secrets/**)", RuleKind::Deny)],
    );
    for quiet in [
        "git log --oneline -5",
        "git log --stat -n 3 --format=%H",
        "git log --name-only --since=2.weeks -- src",
        "git log -10 --graph --decorate --all",
    ] {
        assert_eq!(bash_with(&e, quiet), Decision::Allow, "{quiet}");
    }
}

#[test]
fn command_deny_rules_catch_globbed_and_absolute_spellings() {
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let e = engine_with(
        &root,
        PermissionMode::BypassPermissions,
        &[("Bash(rm:*)", RuleKind::Deny), ("Bash", RuleKind::Allow)],
    );
    for command in [
        "rm -rf src",
        "/bin/rm -rf src",
        "/usr/bin/rm -rf src",
        "/bin/r[m] -rf src",
        "/usr/bin/r? -rf src",
        "/bin/r* -rf src",
        "r[m] -rf src",
        "\\rm -rf src",
        "'r''m' -rf src",
        "ls && /bin/r[m] src",
    ] {
        let d = bash_with(&e, command);
        assert!(d != Decision::Allow, "{command}: {d:?}");
    }
    for command in [
        "/bin/r[m] -rf src",
        "/usr/bin/r? -rf src",
        "/bin/r* -rf src",
    ] {
        let d = bash_with(&e, command);
        assert!(matches!(d, Decision::Deny(_)), "{command}: {d:?}");
    }
    assert_eq!(bash_with(&e, "/bin/l[s] src"), Decision::Allow);
}

async fn run_tool(
    tool: std::sync::Arc<dyn ouro::tools::DynTool>,
    ctx: &ouro::tools::ToolContext,
    input: serde_json::Value,
) -> String {
    tool.check_schema(&input).unwrap();
    let call = tool.prepare(&input, ctx).unwrap();
    call.run(ctx, &ouro::tools::Progress::none())
        .await
        .unwrap()
        .content
}

#[tokio::test]
async fn grep_and_glob_skip_what_deny_rules_forbid() {
    use ouro::tools::erase;
    use ouro::tools::glob::GlobTool;
    use ouro::tools::grep::GrepTool;
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("secrets/deep")).unwrap();
    std::fs::write(root.join("secrets/key"), "hunter2\n").unwrap();
    std::fs::write(root.join("secrets/deep/more"), "hunter3\n").unwrap();
    std::fs::write(root.join(".env"), "TOKEN=hunter4\n").unwrap();
    std::fs::write(root.join("open.txt"), "hunter5\n").unwrap();
    std::os::unix::fs::symlink(root.join("secrets/key"), root.join("alias")).unwrap();
    let e = engine_with(
        &root,
        PermissionMode::Default,
        &[
            ("Read(secrets/**)", RuleKind::Deny),
            ("Read(.env)", RuleKind::Deny),
        ],
    );
    let mut ctx = ouro::tools::ToolContext::new(root.clone());
    ctx.file_denials = e.file_denials();
    for mode in ["content", "files_with_matches", "count"] {
        let out = run_tool(
            erase(GrepTool),
            &ctx,
            serde_json::json!({"pattern": "hunter", "output_mode": mode, "-n": true}),
        )
        .await;
        assert!(out.contains("open.txt"), "{mode}: {out}");
        for hidden in ["hunter2", "hunter3", "hunter4", "secrets", ".env", "alias"] {
            assert!(!out.contains(hidden), "{mode} showed {hidden}: {out}");
        }
    }
    let out = run_tool(
        erase(GlobTool),
        &ctx,
        serde_json::json!({"pattern": "**/*"}),
    )
    .await;
    assert!(out.contains("open.txt"), "{out}");
    assert!(!out.contains("secrets") && !out.contains(".env"), "{out}");
}

/// Inputs an adversarial review found running unasked, each with the rules in force.
#[test]
fn the_review_probes_need_approval() {
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    let no_rules: &[(&str, RuleKind)] = &[];
    let push_denied: &[(&str, RuleKind)] = &[
        ("Bash", RuleKind::Allow),
        ("Bash(git push:*)", RuleKind::Deny),
    ];
    let diff_allowed: &[(&str, RuleKind)] = &[("Bash(git diff:*)", RuleKind::Allow)];
    let cat_allowed: &[(&str, RuleKind)] = &[("Bash(cat:*)", RuleKind::Allow)];
    let make_allowed: &[(&str, RuleKind)] = &[("Bash(make test:*)", RuleKind::Allow)];
    let secrets_denied: &[(&str, RuleKind)] = &[
        ("Bash", RuleKind::Allow),
        ("Read(secrets/**)", RuleKind::Deny),
        ("Read(config/**)", RuleKind::Deny),
        ("Read(.env)", RuleKind::Deny),
    ];
    let cases: &[(&[(&str, RuleKind)], &str)] = &[
        // Here-documents bash ends elsewhere than the parser.
        (no_rules, "cat <<E\"OF\"\nEOF\ntouch pwned\nE\"OF\""),
        (no_rules, "cat <<E'OF'\nEOF\ntouch pwned\nE'OF'"),
        (no_rules, "cat <<EOF;\nEOF\ntouch pwned\nEOF;"),
        (no_rules, "cat <<EOF|cat\nEOF\ntouch pwned\nEOF|cat"),
        (no_rules, "cat <<EOF&&true\nEOF\ntouch pwned\nEOF&&true"),
        (
            no_rules,
            "cat <<EOF>/dev/null\nEOF\ntouch pwned\nEOF>/dev/null",
        ),
        (
            no_rules,
            "cat <<-EOF\n  EOF\necho '\nEOF\ntouch pwned\necho '",
        ),
        (
            no_rules,
            "cat <<EOF\n  EOF\necho '\nEOF\ntouch pwned\necho '",
        ),
        (
            no_rules,
            "cat <<\"EO\"F\nEO\necho '\nEOF\ntouch pwned\necho '",
        ),
        (
            no_rules,
            "cat <<'EOF'X\nEOF\necho '\nEOFX\ntouch pwned\necho '",
        ),
        // Substitutions the parser keeps as text.
        (no_rules, "[[ x =~ <(touch pwned) ]]"),
        (no_rules, "[[ x =~ >(touch pwned) ]]"),
        (no_rules, "[[ x =~ a<(touch pwned) ]]"),
        (no_rules, "[[ x =~ (a|<(touch pwned)) ]]"),
        (
            no_rules,
            "echo -- 'a[$(touch pwned)]'; cat <<EOF\nx $[_]\nEOF",
        ),
        (
            no_rules,
            "echo -- 'a[$(touch pwned)]'; cat <<EOF\nx$[_]y\nEOF",
        ),
        // Repositories elsewhere, whose config may run programs.
        (no_rules, "git -C fixture status"),
        (no_rules, "git --git-dir=fixture status"),
        (no_rules, "git --work-tree=. --git-dir=fixture status"),
        // Deny rules past global options and expansions.
        (push_denied, "git -P push origin HEAD:refs/heads/b"),
        (push_denied, "git --no-pager push origin HEAD:refs/heads/c"),
        (push_denied, "git {push,origin,HEAD:refs/heads/d}"),
        (push_denied, "git -c x.y=z push origin HEAD:refs/heads/e"),
        (push_denied, "git -C . push origin HEAD:refs/heads/f"),
        (
            push_denied,
            "git -C . --literal-pathspecs push origin HEAD:refs/heads/g",
        ),
        (push_denied, "echo -- push; git $_ origin HEAD"),
        // Prefix rules and what bash expands.
        (diff_allowed, "git diff {--output=pwned_brace.txt,}"),
        (
            diff_allowed,
            "echo -- --output=pwned_us.txt; git diff HEAD $_",
        ),
        (
            diff_allowed,
            "git diff --no-index {/etc/hostname,/dev/null}",
        ),
        (cat_allowed, "cat $HOME/.ssh/id_rsa"),
        (cat_allowed, "cat ~/.ssh/id_rsa"),
        (make_allowed, "make test '.SHELLFLAGS=-c touch pwned'"),
        (make_allowed, "make test SHELL=/tmp/evil"),
        // Deny rules on files, read around.
        (secrets_denied, "cat config/p*"),
        (secrets_denied, "git -C . grep -h hunter"),
        (secrets_denied, "git -C . show HEAD:secrets/key"),
        (secrets_denied, "diff -N src ."),
        (secrets_denied, "date -f.env"),
        (secrets_denied, "date -f .env"),
        (secrets_denied, "cat $PWD/secrets/key"),
        (secrets_denied, "head secrets/*"),
    ];
    let mut ran = Vec::new();
    for (rules, command) in cases {
        for mode in [
            PermissionMode::Default,
            PermissionMode::Plan,
            PermissionMode::BypassPermissions,
        ] {
            // bypassPermissions runs everything but what deny rules name.
            let denies = rules.iter().any(|(_, kind)| *kind == RuleKind::Deny);
            if mode == PermissionMode::BypassPermissions && !denies {
                continue;
            }
            let e = engine_with(&root, mode, rules);
            if bash_with(&e, command) == Decision::Allow {
                ran.push(format!("{mode:?} {rules:?}: {command:?}"));
            }
        }
    }
    assert!(ran.is_empty(), "ran unasked:\n{}", ran.join("\n"));
    // What the fixes must not stop.
    let plain = engine_with(&root, PermissionMode::Default, no_rules);
    for command in [
        "cat <<'EOF'\nhello\nEOF",
        "cat <<EOF\nhello\nEOF",
        "cat <<-EOF\n\thello\n\tEOF",
        "git status",
        "git diff --stat",
    ] {
        assert_eq!(bash_with(&plain, command), Decision::Allow, "{command:?}");
    }
}

/// `test`, `[` and `[[` probe files: on paths outside the project they are an existence (or
/// permission, age, type) oracle, so they need approval as reads there do; inside the project
/// they still run on their own.
#[test]
fn file_tests_outside_the_project_need_approval() {
    let dir = project();
    let root = dir.path();
    let operators = [
        "-e", "-f", "-d", "-r", "-w", "-x", "-s", "-L", "-h", "-p", "-S", "-b", "-c", "-g", "-u",
        "-k", "-O", "-G", "-N",
    ];
    let outside = [
        "/etc/shadow",
        "~/.ssh/id_rsa",
        "../sibling/secret",
        "/root/.aws/credentials",
    ];
    let mut asked = 0;
    for op in operators {
        for path in outside {
            for command in [
                format!("test {op} {path}"),
                format!("[ {op} {path} ]"),
                format!("[[ {op} {path} ]]"),
                format!("[ {op} {path} ] && echo yes"),
                format!("if [[ ! {op} {path} ]]; then echo no; fi"),
            ] {
                assert!(
                    !matches!(decide(root, &command), Decision::Allow),
                    "{command} ran on its own"
                );
                asked += 1;
            }
        }
        for command in [
            format!("test {op} notes.txt"),
            format!("[ {op} src/main.rs ]"),
            format!("[[ {op} src ]]"),
        ] {
            assert_eq!(decide(root, &command), Decision::Allow, "{command}");
        }
    }
    for command in [
        "[ notes.txt -nt /etc/passwd ]",
        "[[ /etc/passwd -ot notes.txt ]]",
        "test notes.txt -ef /etc/hosts",
    ] {
        assert!(
            !matches!(decide(root, command), Decision::Allow),
            "{command}"
        );
        asked += 1;
    }
    assert!(asked >= 380, "{asked}");
    assert_eq!(
        decide(root, "[ notes.txt -nt src/main.rs ]"),
        Decision::Allow
    );
    assert_eq!(decide(root, "[ \"a\" = \"b\" ]"), Decision::Allow);
}
