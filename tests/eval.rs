//! End-to-end: `ouro eval` with real processes (the CLI, the native brain it starts per
//! trial, the tests it runs in the sandbox) against the mock API: the shipped starter suite,
//! pass@k by hand, shards against one run, the judge's calibration, hidden tests, and the
//! outcomes an agent cannot be blamed for.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{Run, Sandbox, bodies, copy_tree, server};

const BRAIN: &str = "ouro@anthropic/claude/sonnet";

fn starter() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("evals/starter")
}

fn results(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

/// `(task, trial) -> status` of a results file.
fn statuses(results: &Value) -> Vec<(String, u64, String)> {
    results["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["task"].as_str().unwrap().to_string(),
                t["trial"].as_u64().unwrap(),
                t["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

async fn eval(sb: &Sandbox, url: &str, args: &[&str]) -> Run {
    let mut all = vec!["eval"];
    all.extend(args);
    // A build folder outside the trial, as CI sets one: a trial's builds must not follow it.
    let output = sb
        .command(url, &all)
        .env("CARGO_TARGET_DIR", env!("CARGO_TARGET_TMPDIR"))
        .output()
        .await
        .unwrap();
    let run = Run::from(output);
    assert!(run.status.success(), "{}", run.debug());
    run
}

/// `ouro eval run SUITE --brain BRAIN --out OUT EXTRA…`, which must succeed; with its results.
async fn run_suite(
    sb: &Sandbox,
    url: &str,
    suite: &Path,
    out: &Path,
    extra: &[&str],
) -> (Run, Value) {
    let (suite, out_arg) = (suite.display().to_string(), out.display().to_string());
    let mut args = vec![
        "run",
        suite.as_str(),
        "--brain",
        BRAIN,
        "--out",
        out_arg.as_str(),
    ];
    args.extend(extra);
    let run = eval(sb, url, &args).await;
    (run, results(out))
}

/// A task of a suite made here: a start of `files`, hidden tests, a reference change.
fn task(suite: &Path, id: &str, front: &str, files: &[(&str, &str)], tests: &[(&str, &str)]) {
    let dir = suite.join(id);
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(
        dir.join("task.md"),
        format!(
            "---\nid: {id}\nversion: \"1.0\"\n{front}\n---\nDo the task. Task token: EVAL-{id}\n"
        ),
    )
    .unwrap();
    let mut bundle = String::from("# Cats Bundle\n# Format: FULL\n\n");
    for (path, content) in files {
        bundle.push_str(&format!(
            "🐈 --- CATS_START_FILE: {path} ---\n```\n{content}\n```\n🐈 --- CATS_END_FILE: {path} ---\n\n"
        ));
    }
    std::fs::write(dir.join("context.cats.md"), bundle).unwrap();
    std::fs::write(
        dir.join("expected.dogs.md"),
        "🐕 --- DOGS_START_FILE: answer.txt ---\n```\nyes\n\n```\n🐕 --- DOGS_END_FILE: answer.txt ---\n",
    )
    .unwrap();
    for (path, content) in tests {
        std::fs::write(dir.join("tests").join(path), content).unwrap();
    }
}

/// A task whose hidden test wants `yes` in answer.txt.
fn answer_task(suite: &Path, id: &str) {
    let check = [("check.sh", "grep -qx yes answer.txt\n")];
    let front = "tests: sh tests/check.sh\ntimeout_s: 60";
    task(suite, id, front, &[("a.txt", "a")], &check);
}

/// The agent's pair of turns for task `id`: a Bash call, then a word.
fn agent_turns(id: &str, command: &str) -> Vec<Value> {
    vec![
        json!({"when_text": format!("DONE-{id}"), "content": [{"type": "text", "text": "done"}],
               "usage": {"input_tokens": 1000, "output_tokens": 100}}),
        json!({"when_text": format!("EVAL-{id}"), "content": [{"type": "tool_use", "name": "Bash",
               "input": {"command": format!("{command}; echo DONE-{id}")}}],
               "usage": {"input_tokens": 1000, "output_tokens": 100}}),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn the_starter_suite_gives_the_expected_outcome_per_task_with_the_mock_brain() {
    let scenario: Value =
        serde_json::from_str(&std::fs::read_to_string(starter().join("mock.json")).unwrap())
            .unwrap();
    let mock = server(scenario).await;
    let sb = Sandbox::new();
    let out = sb.root().join("out");
    let (run, got) = run_suite(&sb, &mock.url(), &starter(), &out, &["--no-judge"]).await;
    let out_arg = out.display().to_string();
    let expected: Vec<(String, u64, String)> = [
        ("py-dedupe-order", "failed"),
        ("py-median-even", "passed"),
        ("py-slugify", "passed"),
        ("rs-parse-duration", "passed"),
        ("rs-roman-numerals", "passed"),
        ("rs-stack-peek", "passed"),
        ("sh-backup-spaces", "passed"),
        ("sh-count-words", "passed"),
    ]
    .iter()
    .map(|(t, s)| (t.to_string(), 1, s.to_string()))
    .collect();
    assert_eq!(statuses(&got), expected, "{}", run.debug());
    assert_eq!(got["schema"], "ouro-eval/1");
    assert_eq!(got["summary"]["passed"], 7);
    assert_eq!(got["summary"]["pass_at_1"], 0.875);
    let trial = &got["trials"][1];
    assert_eq!(trial["tokens"]["input"], 2000, "{trial}");
    assert_eq!(trial["turns"], 2);
    assert_eq!(trial["tool_calls"], 1);
    assert!(trial["time_to_first_edit_s"].as_f64().unwrap() > 0.0);
    let artifact = out.join(trial["artifact"].as_str().unwrap());
    let bundle = std::fs::read_to_string(artifact).unwrap();
    assert!(bundle.contains("DOGS_START_FILE: stats.py"), "{bundle}");
    assert!(
        !bundle.contains("tests/"),
        "tests never reach an artifact: {bundle}"
    );
    assert!(out.join(trial["log"].as_str().unwrap()).exists());
    assert!(run.stdout.contains("pass@1 87.5%"), "{}", run.debug());

    let exported = eval(&sb, &mock.url(), &["export", &out_arg, "--swebench"]).await;
    let lines: Vec<Value> = exported
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 8, "{}", exported.debug());
    let median = lines
        .iter()
        .find(|l| l["instance_id"] == "py-median-even")
        .unwrap();
    assert_eq!(median["model_name_or_path"], BRAIN);
    let patch = median["model_patch"].as_str().unwrap();
    assert!(
        patch.starts_with("diff --git a/stats.py b/stats.py"),
        "{patch}"
    );
    assert!(!patch.contains("tests/"), "{patch}");

    let page = sb.root().join("report.html");
    let page_arg = page.display().to_string();
    eval(&sb, &mock.url(), &["report", &out_arg, "--html", &page_arg]).await;
    let html = std::fs::read_to_string(page).unwrap();
    assert!(html.contains("<svg") && html.contains("py-median-even"));
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "self-contained"
    );
}

/// `--trials 3` on a task solved once in three tries and one solved every time: pass@1,
/// pass@3 and pass^3 as computed by hand; and two shards merged are the whole run.
#[tokio::test(flavor = "multi_thread")]
async fn pass_at_k_is_the_unbiased_estimate_and_shards_merge_into_the_whole_run() {
    let sb = Sandbox::new();
    let suite = sb.root().join("suite");
    answer_task(&suite, "once");
    answer_task(&suite, "always");
    // The mock answers in the order trials ask: `once` is solved by the trial given `yes`.
    let turns = |once: [&str; 3]| {
        let mut turns = Vec::new();
        for answer in once {
            turns.extend(agent_turns("once", &format!("echo {answer} > answer.txt")));
            turns.extend(agent_turns("always", "echo yes > answer.txt"));
        }
        json!({"turns": turns})
    };
    let whole_mock = server(turns(["yes", "no", "no"])).await;
    let whole = sb.root().join("whole");
    let whole_arg = whole.display().to_string();
    let common = ["--no-judge", "--trials", "3", "--concurrency", "1"];
    let (_, got) = run_suite(&sb, &whole_mock.url(), &suite, &whole, &common).await;
    let summary = &got["summary"];
    // once: n=3 c=1 → pass@1 1/3, pass@3 1, pass^3 0; always: 1, 1, 1.
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-9;
    assert!(
        close(&summary["pass_at_1"], (1.0 / 3.0 + 1.0) / 2.0),
        "{summary}"
    );
    assert!(close(&summary["pass_at_k"], 1.0), "{summary}");
    assert!(close(&summary["pass_hat_k"], 0.5), "{summary}");
    assert_eq!(summary["k"], 3);

    // Shard 1/2 runs trial 2 of `once`, shard 2/2 then trials 1 and 3.
    let shard_mock = server(turns(["no", "yes", "no"])).await;
    let mut shard_dirs = Vec::new();
    for shard in ["1/2", "2/2"] {
        let dir = sb.root().join(format!("shard-{}", &shard[..1]));
        let mut extra = common.to_vec();
        extra.extend(["--shard", shard]);
        let (_, part) = run_suite(&sb, &shard_mock.url(), &suite, &dir, &extra).await;
        assert_eq!(part["trials"].as_array().unwrap().len(), 3);
        shard_dirs.push(dir.display().to_string());
    }
    let merged = sb.root().join("merged");
    let merged_arg = merged.display().to_string();
    eval(
        &sb,
        &whole_mock.url(),
        &[
            "merge",
            &shard_dirs[0],
            &shard_dirs[1],
            "--out",
            &merged_arg,
        ],
    )
    .await;
    let joined = results(&merged);
    assert_eq!(statuses(&joined), statuses(&got));
    for key in [
        "pass_at_1",
        "pass_at_k",
        "pass_hat_k",
        "passed",
        "trials",
        "tasks",
    ] {
        assert_eq!(joined["summary"][key], got["summary"][key], "{key}");
    }
    for t in joined["trials"].as_array().unwrap() {
        assert!(merged.join(t["artifact"].as_str().unwrap()).exists());
    }
    let compare = eval(
        &sb,
        &whole_mock.url(),
        &["compare", &whole_arg, &merged_arg],
    )
    .await;
    assert!(
        compare.stdout.contains("once") && compare.stdout.contains("same"),
        "{}",
        compare.debug()
    );
}

/// A judge that calls everything equivalent is caught by calibration: its verdicts are
/// reported as unreliable, and no disagreement is claimed from them.
#[tokio::test(flavor = "multi_thread")]
async fn an_always_equivalent_judge_is_caught_by_calibration() {
    let sb = Sandbox::new();
    let suite = sb.root().join("suite");
    answer_task(&suite, "t");
    // Judge requests come first in the list: they also carry the task's token.
    let mut turns: Vec<Value> = (0..3)
        .map(|_| {
            json!({"when_text": "<candidate_change>", "content": [
                {"type": "text", "text": "Looks the same to me.\nVERDICT: equivalent"}]})
        })
        .collect();
    // The agent commits its change: the trial's patch still holds it.
    turns.extend(agent_turns(
        "t",
        "echo no > answer.txt && git add -A && git -c user.name=a -c user.email=a@a commit -qm mine",
    ));
    let mock = server(json!({"turns": turns})).await;
    let out = sb.root().join("out");
    let (run, got) = run_suite(&sb, &mock.url(), &suite, &out, &[]).await;
    let calibration = &got["summary"]["judge_calibration"];
    assert_eq!(calibration["gold_vs_gold"], true, "{calibration}");
    assert_eq!(calibration["gold_vs_empty"], true);
    assert_eq!(calibration["reliable"], false);
    let trial = &got["trials"][0];
    assert_eq!(trial["status"], "failed");
    assert_eq!(trial["judge"]["equivalent"], true, "{trial}");
    assert_eq!(got["summary"]["disagreements"], json!([]));
    let patch = std::fs::read_to_string(out.join(trial["patch"].as_str().unwrap())).unwrap();
    assert!(patch.contains("+no"), "{patch}");
    assert!(run.stdout.contains("UNRELIABLE"), "{}", run.debug());
    // The judge saw the reference, never the hidden tests.
    for body in bodies(&mock) {
        assert!(!body.to_string().contains("grep -qx yes"), "{body}");
    }
}

/// Nothing under a task's `tests/` reaches the agent: not by reading the suite's folder
/// (denied, and masked in the sandbox), not in any request.
#[tokio::test(flavor = "multi_thread")]
async fn the_agent_cannot_read_the_hidden_tests() {
    let sb = Sandbox::new();
    let suite = sb.root().join("suite");
    let secret = "SECRET-ORACLE-42";
    task(
        &suite,
        "peek",
        "tests: sh tests/check.sh\ntimeout_s: 60",
        &[("a.txt", "a")],
        &[(
            "check.sh",
            &format!("# {secret}\ngrep -qx yes answer.txt\n"),
        )],
    );
    let hidden = suite.join("peek/tests/check.sh").display().to_string();
    // Read it (denied), then cat it from a shell (masked), then stop; the requests of a
    // trial carry more of these keys as it goes, and the first listed that matches answers.
    let cat = format!("cat {hidden} > leak.txt; ls tests; echo DONE-peek");
    let turns = vec![
        json!({"when_text": "DONE-peek", "content": [{"type": "text", "text": "done"}]}),
        json!({"when_text": "check.sh", "content": [{"type": "tool_use", "name": "Bash",
               "input": {"command": cat}}]}),
        json!({"when_text": "EVAL-peek", "content": [{"type": "tool_use", "name": "Read",
               "input": {"file_path": hidden}}]}),
    ];
    let mock = server(json!({"turns": turns})).await;
    let out = sb.root().join("out");
    let (_, got) = run_suite(&sb, &mock.url(), &suite, &out, &["--no-judge"]).await;
    assert_eq!(got["trials"][0]["status"], "failed", "{got}");
    for body in bodies(&mock) {
        assert!(
            !body.to_string().contains(secret),
            "a request carried the hidden tests: {body}"
        );
    }
    let artifact =
        std::fs::read_to_string(out.join(got["trials"][0]["artifact"].as_str().unwrap())).unwrap();
    assert!(!artifact.contains(secret), "{artifact}");
}

/// Outcomes that are not the agent's failure are told apart: a task that cannot be read is
/// an infra_error (the others run), a trial past its timeout is agent_timeout whatever its
/// tests say.
#[tokio::test(flavor = "multi_thread")]
async fn a_broken_task_is_an_infra_error_and_a_slow_trial_an_agent_timeout() {
    let sb = Sandbox::new();
    let suite = sb.root().join("suite");
    let check = [("check.sh", "true\n")];
    task(
        &suite,
        "slow",
        "tests: sh tests/check.sh\ntimeout_s: 2",
        &[("a.txt", "a")],
        &check,
    );
    task(
        &suite,
        "broken",
        "tests: sh tests/check.sh",
        &[("a.txt", "a")],
        &check,
    );
    std::fs::write(
        suite.join("broken/context.cats.md"),
        "🐈 --- CATS_START_FILE: ../escape.txt ---\n```\nx\n```\n🐈 --- CATS_END_FILE: ../escape.txt ---\n",
    )
    .unwrap();
    let mock = server(json!({"turns": [
        {"when_text": "EVAL-slow", "delay_ms": 1500, "delta_chunks": 8,
         "content": [{"type": "text", "text": "thinking very slowly about it"}]}
    ]}))
    .await;
    let out = sb.root().join("out");
    let (run, got) = run_suite(&sb, &mock.url(), &suite, &out, &["--no-judge"]).await;
    let by_task: std::collections::BTreeMap<String, String> =
        statuses(&got).into_iter().map(|(t, _, s)| (t, s)).collect();
    assert_eq!(by_task["broken"], "infra_error", "{got}");
    assert_eq!(by_task["slow"], "agent_timeout", "{got}");
    let broken = got["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == "broken")
        .unwrap();
    assert!(
        broken["error"]
            .as_str()
            .unwrap()
            .contains("leaves the tree"),
        "{broken}"
    );
    assert_eq!(got["summary"]["infra_errors"], 1);
    assert_eq!(got["summary"]["tasks"], 2);
    // Only the slow task is scored: a failure.
    assert_eq!(got["summary"]["pass_at_1"], 0.0);
    assert!(
        run.stdout.contains("infra errors (not scored)"),
        "{}",
        run.debug()
    );
    assert!(!sb.root().join("escape.txt").exists());
}

/// A Harbor task directory runs as it is with `--env host`: `environment/` (without its
/// Dockerfile) is the tree, `tests/test.sh` the verifier; one written for its image is an
/// infra_error that says why.
#[tokio::test(flavor = "multi_thread")]
async fn a_harbor_task_directory_runs_on_the_host() {
    let sb = Sandbox::new();
    let suite = sb.root().join("harbor");
    let hello = suite.join("hello");
    for (path, text) in [
        (
            "task.toml",
            "version = \"1.0\"\n[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 30.0\n",
        ),
        (
            "instruction.md",
            "Write hello.txt saying hello. Task token: EVAL-hello\n",
        ),
        ("environment/Dockerfile", "FROM ubuntu\n"),
        ("environment/README", "start\n"),
        ("tests/test.sh", "grep -qx hello hello.txt\n"),
        ("solution/solve.sh", "echo hello > hello.txt\n"),
    ] {
        let file = hello.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let image = suite.join("image");
    copy_tree(&hello, &image);
    std::fs::write(
        image.join("tests/test.sh"),
        "cd /app && grep -q hello hello.txt\n",
    )
    .unwrap();
    let mock = server(
        json!({"turns": agent_turns("hello", "test ! -e Dockerfile && echo hello > hello.txt")}),
    )
    .await;
    let out = sb.root().join("out");
    let extra = ["--no-judge", "--env", "host"];
    let (_, got) = run_suite(&sb, &mock.url(), &suite, &out, &extra).await;
    let trials = got["trials"].as_array().unwrap();
    let hello = trials.iter().find(|t| t["task"] == "hello").unwrap();
    assert_eq!(hello["status"], "passed", "{got}");
    let image = trials.iter().find(|t| t["task"] == "image").unwrap();
    assert_eq!(image["status"], "infra_error");
    assert!(image["error"].as_str().unwrap().contains("/app"), "{image}");

    // Without --env, a suite with images runs them where Docker answers; where it does not,
    // on the host, saying so. Asked for Docker that does not answer, the run stops and says
    // what to do.
    let (suite_arg, out_arg) = (suite.display().to_string(), out.display().to_string());
    let args = [
        "eval",
        "run",
        &suite_arg,
        "--brain",
        BRAIN,
        "--out",
        &out_arg,
        "--no-judge",
    ];
    let mock = server(
        json!({"turns": agent_turns("hello", "test ! -e Dockerfile && echo hello > hello.txt")}),
    )
    .await;
    let auto = Run::from(
        sb.command(&mock.url(), &args)
            .env("OURO_DOCKER", "false")
            .output()
            .await
            .unwrap(),
    );
    assert!(auto.status.success(), "{}", auto.debug());
    assert!(
        auto.stderr.contains("Docker does not answer") && auto.stderr.contains("on the host"),
        "{}",
        auto.debug()
    );
    assert_eq!(statuses(&results(&out)), statuses(&got));
    let mut docker_args = args.to_vec();
    docker_args.extend(["--env", "docker"]);
    let refused = Run::from(
        sb.command(&mock.url(), &docker_args)
            .env("OURO_DOCKER", "false")
            .output()
            .await
            .unwrap(),
    );
    assert!(!refused.status.success());
    assert!(
        refused.stderr.contains("Docker does not answer") && refused.stderr.contains("--env host"),
        "{}",
        refused.debug()
    );
}

/// `--env docker` with a real engine: the task's image is built, its WORKDIR is the tree (links
/// kept), the brain works in a container of its own, the tests arrive in `/tests` only after the
/// agent and whatever it left running, and their reward file decides. Needs a container engine and a base image, which CI
/// machines without a registry lack: `OURO_DOCKER=podman OURO_TEST_DOCKER_BASE=debian:bookworm
/// cargo test --test main -- --ignored docker_env`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a container engine and a base image (OURO_TEST_DOCKER_BASE)"]
async fn docker_env_runs_a_harbor_task_in_its_image() {
    let base = std::env::var("OURO_TEST_DOCKER_BASE").unwrap_or_else(|_| "debian:bookworm".into());
    let sb = Sandbox::new();
    let suite = sb.root().join("harbor");
    let task = suite.join("app");
    let dockerfile = format!(
        "FROM {base}\nWORKDIR /app\nCOPY greet.py /app/greet.py\nRUN ln -s greet.py /app/link.py && mkdir -p /app/sub && echo nested > /app/sub/Dockerfile\n"
    );
    let test_sh = "cd /app && mkdir -p /logs/verifier && if grep -qx hello hello.txt && test -L link.py && test -f sub/Dockerfile && test ! -e seen-tests; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n";
    for (path, text) in [
        (
            "task.toml",
            "version = \"1.0\"\n[agent]\ntimeout_sec = 120.0\n[verifier]\ntimeout_sec = 60.0\n",
        ),
        (
            "instruction.md",
            "Write /app/hello.txt saying hello. Task token: EVAL-app\n",
        ),
        ("environment/Dockerfile", dockerfile.as_str()),
        ("environment/greet.py", "print('hi')\n"),
        ("tests/test.sh", test_sh),
    ] {
        let file = task.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let mock = server(json!({"turns": agent_turns(
        "app",
        // A process left behind, in a session of its own, that would see the tests arrive:
        // none outlives the agent.
        "cd /app && echo hello > hello.txt && setsid sh -c 'for i in $(seq 300); do test -e /tests && touch /app/seen-tests; sleep 0.1; done' > /dev/null 2>&1 & true"
    )}))
    .await;
    let out = sb.root().join("out");
    let (_, got) = run_suite(
        &sb,
        &mock.url(),
        &suite,
        &out,
        &["--no-judge", "--env", "docker"],
    )
    .await;
    let trial = &got["trials"][0];
    assert_eq!(trial["status"], "passed", "{got}");
    let artifact = std::fs::read_to_string(out.join(trial["artifact"].as_str().unwrap())).unwrap();
    assert!(
        artifact.contains("hello.txt") && !artifact.contains("seen-tests"),
        "{artifact}"
    );
}

/// A Ray head for one test, stopped when it ends.
struct RayHead {
    address: String,
}

impl RayHead {
    fn start() -> RayHead {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = std::process::Command::new("ray")
            .args([
                "start",
                "--head",
                "--num-cpus=2",
                "--dashboard-host=127.0.0.1",
            ])
            .arg(format!("--dashboard-port={port}"))
            .arg("--disable-usage-stats")
            .output()
            .unwrap();
        assert!(started.status.success(), "ray start: {started:?}");
        RayHead {
            address: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for RayHead {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ray")
            .args(["stop", "--force"])
            .output();
    }
}

/// `--backend ray` against a real local Ray head (the suite and the binary shipped as the
/// jobs' package, one job per shard, results read back from the jobs' logs) gives the same
/// results as the local backend.
#[tokio::test(flavor = "multi_thread")]
async fn the_ray_backend_gives_the_same_results_as_the_local_one() {
    if !crate::common::skip::on_path("ray") {
        crate::common::skip::not_installed("ray (pip install \"ray[default]==2.60.0\")");
        return;
    }
    let sb = Sandbox::new();
    let suite = sb.root().join("suite");
    answer_task(&suite, "good");
    answer_task(&suite, "bad");
    let scenario = || {
        let mut turns = agent_turns("good", "echo yes > answer.txt");
        turns.extend(agent_turns("bad", "echo no > answer.txt"));
        json!({"turns": turns})
    };
    let local_mock = server(scenario()).await;
    let (_, a) = run_suite(
        &sb,
        &local_mock.url(),
        &suite,
        &sb.root().join("local"),
        &["--no-judge"],
    )
    .await;

    // A debug build is mostly debug info: the jobs get it stripped when binutils is here.
    let bin = tempfile::tempdir().unwrap();
    let shipped = bin.path().join("ouro");
    let stripped = std::process::Command::new("objcopy")
        .arg("--strip-debug")
        .arg(env!("CARGO_BIN_EXE_ouro"))
        .arg(&shipped)
        .status()
        .is_ok_and(|s| s.success());
    if !stripped {
        std::fs::copy(env!("CARGO_BIN_EXE_ouro"), &shipped).unwrap();
    }
    let head = RayHead::start();
    let ray_mock = server(scenario()).await;
    let remote = sb.root().join("remote");
    let shipped_arg = shipped.display().to_string();
    let extra = [
        "--no-judge",
        "--backend",
        "ray",
        "--ray-address",
        &head.address,
        "--ray-binary",
        &shipped_arg,
        "--concurrency",
        "2",
    ];
    let (run, b) = run_suite(&sb, &ray_mock.url(), &suite, &remote, &extra).await;
    assert_eq!(statuses(&b), statuses(&a), "{}", run.debug());
    for key in ["pass_at_1", "passed", "trials", "tasks", "infra_errors"] {
        assert_eq!(b["summary"][key], a["summary"][key], "{key}");
    }
    assert_eq!(b["suite"], a["suite"]);
    assert!(run.stderr.contains("Ray job"), "{}", run.debug());
    for t in b["trials"].as_array().unwrap() {
        assert!(remote.join(t["artifact"].as_str().unwrap()).exists(), "{t}");
    }
    assert_eq!(
        bodies(&ray_mock).len(),
        4,
        "the jobs' brains asked the mock"
    );
}

/// `--agent NAME` runs the trials as that definition: its `denied_commands` refuse a command
/// even though the trials allow whatever the mode would ask about.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_definitions_denied_commands_hold_in_its_trials() {
    let sb = Sandbox::new();
    let agents = sb.home.path().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("careful.md"),
        "---\nname: careful\ndescription: Careful\ntools:\n  - Read\n  - name: Bash\n    denied_commands: ['rm .*']\n---\nBe careful.",
    )
    .unwrap();
    let suite = sb.root().join("suite");
    let check = [("check.sh", "test -e a.txt && grep -qx yes answer.txt\n")];
    task(
        &suite,
        "t",
        "tests: sh tests/check.sh\ntimeout_s: 60",
        &[("a.txt", "a")],
        &check,
    );
    let mock = server(json!({"turns": [
        {"when_text": "DONE-t", "content": [{"type": "text", "text": "done"}]},
        {"when_text": "rm .*", "content": [{"type": "tool_use", "name": "Bash",
         "input": {"command": "echo yes > answer.txt; echo DONE-t"}}]},
        {"when_text": "EVAL-t", "content": [{"type": "tool_use", "name": "Bash",
         "input": {"command": "rm -f a.txt"}}]}
    ]}))
    .await;
    let out = sb.root().join("out");
    let extra = ["--no-judge", "--agent", "careful"];
    let (run, got) = run_suite(&sb, &mock.url(), &suite, &out, &extra).await;
    assert_eq!(got["trials"][0]["status"], "passed", "{}", run.debug());
    assert_eq!(got["agent"], "careful");
    let log = std::fs::read_to_string(out.join(got["trials"][0]["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("denied_commands pattern"), "{log}");
}

/// `--learn`: the first pass fails, reflect stores what the task taught, the second pass's
/// agent Recalls it and passes; learn.json has the change.
#[tokio::test(flavor = "multi_thread")]
async fn learn_reflects_on_the_first_pass_and_the_second_recalls_it() {
    let sb = Sandbox::new();
    let suite = sb.root().join("suite");
    answer_task(&suite, "learn");
    let ops = json!([{"op": "add_node", "type": "Fact", "id": "answer-word",
        "properties": {"name": "The answer word is yes", "description": "answer.txt must hold yes"}}]);
    let bash = |command: &str| json!([{"type": "tool_use", "name": "Bash", "input": {"command": command}}]);
    let turns = vec![
        json!({"when_text": "The user's prompt, quoted", "content": [{"type": "text", "text": ops.to_string()}]}),
        json!({"when_text": "DONE2-learn", "content": [{"type": "text", "text": "done"}]}),
        json!({"when_text": "The answer word is yes", "content": bash("echo yes > answer.txt; echo DONE2-learn")}),
        json!({"when_text": "DONE1-learn", "content": [{"type": "text", "text": "done"}]}),
        json!({"when_text": "\"name\":\"Recall\"", "content": [{"type": "tool_use", "name": "Recall",
               "input": {"query": "answer word"}}]}),
        json!({"when_text": "EVAL-learn", "content": bash("echo no > answer.txt; echo DONE1-learn")}),
    ];
    let mock = server(json!({"turns": turns})).await;
    let out = sb.root().join("out");
    let (run, second) = run_suite(&sb, &mock.url(), &suite, &out, &["--no-judge", "--learn"]).await;
    assert_eq!(second["trials"][0]["status"], "passed", "{}", run.debug());
    let first = results(&out.join("first-pass"));
    assert_eq!(first["trials"][0]["status"], "failed", "{first}");
    let learned: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("learn.json")).unwrap()).unwrap();
    assert_eq!(learned["first"]["pass_at_1"], 0.0, "{learned}");
    assert_eq!(learned["second"]["pass_at_1"], 1.0, "{learned}");
    assert_eq!(learned["pass_at_1_change"], 1.0, "{learned}");
    assert_eq!(learned["stored"], 1, "{learned}");
    assert!(
        run.stdout.contains("learning: pass@1 0.0% → 100.0%"),
        "{}",
        run.debug()
    );
    let recalled = bodies(&mock).iter().any(|b| {
        b.to_string().contains("shared memory") && b.to_string().contains("from tool output")
    });
    assert!(
        recalled,
        "the second pass's Recall did not return the memory"
    );
}

/// A run where no trial ran at all (every one an infra_error: here, a brain that does not
/// exist) measured nothing: it exits 2, so a script cannot take it for a finished evaluation.
#[tokio::test]
async fn a_run_where_no_trial_ran_exits_2() {
    let sb = Sandbox::new();
    let suite = sb.root().join("suite");
    task(
        &suite,
        "only",
        "tests: sh tests/check.sh",
        &[("a.txt", "a")],
        &[("check.sh", "true\n")],
    );
    let out = sb.root().join("out");
    let (suite, out) = (suite.display().to_string(), out.display().to_string());
    let run = Run::from(
        sb.command(
            "http://127.0.0.1:9",
            &[
                "eval",
                "run",
                &suite,
                "--brain",
                "nobody@nowhere/none",
                "--out",
                &out,
                "--no-judge",
            ],
        )
        .output()
        .await
        .unwrap(),
    );
    assert_eq!(run.status.code(), Some(2), "{}", run.debug());
    assert!(run.stderr.contains("no trial ran"), "{}", run.debug());
}
