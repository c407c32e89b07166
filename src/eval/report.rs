//! Reading runs back: `report` (a run as text), `compare` (two runs task by task) and `merge`
//! (shards into one run, whose summary is computed again from all their trials).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::EvalError;
use super::results::{Calibration, Results, Status, Trial};

pub fn load(dir: &Path) -> Result<Results, EvalError> {
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path).map_err(|source| EvalError::Io {
        action: "read",
        path: path.clone(),
        source,
    })?;
    let results: Results = serde_json::from_str(&text)
        .map_err(|e| EvalError::Usage(format!("{} is not a results file: {e}", path.display())))?;
    if results.schema != super::results::SCHEMA {
        return Err(EvalError::Usage(format!(
            "{} has schema {}, this ouro reads {}",
            path.display(),
            results.schema,
            super::results::SCHEMA
        )));
    }
    Ok(results)
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:.1}%", v * 100.0))
}

fn secs(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1} s"))
}

fn status_word(status: Status) -> &'static str {
    match status {
        Status::Passed => "passed",
        Status::Failed => "failed",
        Status::AgentTimeout => "agent_timeout",
        Status::BudgetExceeded => "budget_exceeded",
        Status::InfraError => "infra_error",
    }
}

/// Per task: (passed, scored, statuses in trial order).
pub fn per_task(results: &Results) -> BTreeMap<String, (usize, usize, Vec<Status>)> {
    let mut out: BTreeMap<String, (usize, usize, Vec<Status>)> = BTreeMap::new();
    for t in &results.trials {
        let row = out.entry(t.task.clone()).or_default();
        row.0 += usize::from(t.status == Status::Passed);
        row.1 += usize::from(t.status.scored());
        row.2.push(t.status);
    }
    out
}

/// A run as text.
pub fn text(results: &Results) -> String {
    let s = &results.summary;
    let mut out = String::new();
    let _ = writeln!(out, "suite {}  brain {}", results.suite, results.brain);
    let _ = writeln!(
        out,
        "{} tasks, {} trials (k = {}), {} passed, {} infra errors",
        s.tasks, s.trials, s.k, s.passed, s.infra_errors
    );
    let ci = s.pass_at_1_ci95.map_or_else(String::new, |[lo, hi]| {
        format!(" (95% CI {}–{})", pct(Some(lo)), pct(Some(hi)))
    });
    let _ = writeln!(
        out,
        "pass@1 {}{ci}  pass@{k} {}  pass^{k} {}",
        pct(s.pass_at_1),
        pct(s.pass_at_k),
        pct(s.pass_hat_k),
        k = s.k
    );
    let _ = writeln!(
        out,
        "cost ${:.4} (per solved {})  wall p50 {}  p90 {}",
        s.cost_usd,
        s.cost_per_solved_usd
            .map_or_else(|| "-".into(), |c| format!("${c:.4}")),
        secs(s.wall_p50_s),
        secs(s.wall_p90_s)
    );
    let _ = writeln!(
        out,
        "judge: {}",
        calibration_text(s.judge_calibration.as_ref())
    );
    let _ = writeln!(out, "\n{:<28} {:>7}  trials", "task", "passed");
    for (task, (passed, scored, statuses)) in per_task(results) {
        let words: Vec<&str> = statuses.iter().map(|s| status_word(*s)).collect();
        let _ = writeln!(
            out,
            "{task:<28} {:>7}  {}",
            format!("{passed}/{scored}"),
            words.join(" ")
        );
    }
    if !s.disagreements.is_empty() {
        let _ = writeln!(
            out,
            "\ntests and judge disagree on: {}",
            s.disagreements.join(", ")
        );
    }
    let unchanged: Vec<String> = results
        .trials
        .iter()
        .filter(|t| t.passed_unchanged)
        .map(|t| format!("{} #{}", t.task, t.trial))
        .collect();
    if !unchanged.is_empty() {
        let _ = writeln!(
            out,
            "\npassed with no change made (the tests pass on the tree as it was, so they may not test the task): {}",
            unchanged.join(", ")
        );
    }
    trials_and_why(
        &mut out,
        "the judge gave no verdict on:",
        results
            .trials
            .iter()
            .filter_map(|t| Some((t, t.judge_error.as_deref()?))),
    );
    trials_and_why(
        &mut out,
        "infra errors (not scored):",
        results
            .trials
            .iter()
            .filter(|t| t.status == Status::InfraError)
            .map(|t| (t, t.error.as_deref().unwrap_or("?"))),
    );
    out
}

/// `heading`, then a line for each trial with why it is listed; nothing when none is.
fn trials_and_why<'a>(
    out: &mut String,
    heading: &str,
    trials: impl Iterator<Item = (&'a Trial, &'a str)>,
) {
    let mut trials = trials.peekable();
    if trials.peek().is_none() {
        return;
    }
    let _ = writeln!(out, "\n{heading}");
    for (t, why) in trials {
        let _ = writeln!(out, "  {} #{}: {why}", t.task, t.trial);
    }
}

fn calibration_text(c: Option<&Calibration>) -> String {
    match c {
        None => "not asked (--no-judge)".into(),
        Some(c) if c.reliable => "calibrated (reference ≡ itself, reference ≢ no change)".into(),
        Some(c) => format!(
            "UNRELIABLE, its verdicts are not used (reference vs itself: {}, vs no change: {})",
            verdict(c.gold_vs_gold),
            verdict(c.gold_vs_empty)
        ),
    }
}

fn verdict(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "equivalent",
        Some(false) => "different",
        None => "no verdict",
    }
}

/// Two runs task by task: each one's pass rate and the change.
pub fn compare(a: &Results, b: &Results) -> String {
    let (ta, tb) = (per_task(a), per_task(b));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "A: {} ({})\nB: {} ({})\n",
        a.brain, a.suite, b.brain, b.suite
    );
    let _ = writeln!(out, "{:<28} {:>9} {:>9}  change", "task", "A", "B");
    let rate = |row: Option<&(usize, usize, Vec<Status>)>| {
        row.filter(|r| r.1 > 0).map(|r| r.0 as f64 / r.1 as f64)
    };
    let tasks: std::collections::BTreeSet<&String> = ta.keys().chain(tb.keys()).collect();
    for task in tasks {
        let (ra, rb) = (rate(ta.get(task)), rate(tb.get(task)));
        let change = match (ra, rb) {
            (Some(x), Some(y)) if y > x => "better",
            (Some(x), Some(y)) if y < x => "worse",
            (Some(_), Some(_)) => "same",
            _ => "not comparable",
        };
        let _ = writeln!(out, "{task:<28} {:>9} {:>9}  {change}", pct(ra), pct(rb));
    }
    let _ = writeln!(
        out,
        "\npass@1 {} → {}   cost ${:.4} → ${:.4}",
        pct(a.summary.pass_at_1),
        pct(b.summary.pass_at_1),
        a.summary.cost_usd,
        b.summary.cost_usd
    );
    out
}

/// Shards into one run in `out`: their trials (each trial once), artifacts and logs.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Results, EvalError> {
    let runs: Vec<Results> = dirs.iter().map(|d| load(d)).collect::<Result<_, _>>()?;
    let first = runs
        .first()
        .ok_or_else(|| EvalError::Usage("merge needs at least one results directory".into()))?;
    if let Some(other) = runs
        .iter()
        .find(|r| r.suite != first.suite || r.brain != first.brain || r.agent != first.agent)
    {
        return Err(EvalError::Usage(format!(
            "these are not shards of one run: {} on {} and {} on {}",
            first.brain, first.suite, other.brain, other.suite
        )));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut trials = Vec::new();
    for (run, dir) in runs.iter().zip(dirs) {
        for t in &run.trials {
            if seen.insert((t.task.clone(), t.trial)) {
                for rel in [&t.artifact, &t.log].into_iter().flatten() {
                    let (from, to) = (dir.join(rel), out.join(rel));
                    if from != to && from.exists() {
                        if let Some(parent) = to.parent() {
                            let _ = std::fs::create_dir_all(parent);
                        }
                        std::fs::copy(&from, &to).map_err(|source| EvalError::Io {
                            action: "copy",
                            path: from.clone(),
                            source,
                        })?;
                    }
                }
                trials.push(t.clone());
            }
        }
    }
    let calibrations: Vec<&Calibration> = runs
        .iter()
        .filter_map(|r| r.summary.judge_calibration.as_ref())
        .collect();
    let calibration = calibrations.first().map(|c| Calibration {
        reliable: calibrations.iter().all(|c| c.reliable),
        // Each shard asked its own.
        cost_usd: calibrations.iter().map(|c| c.cost_usd).sum(),
        ..(*c).clone()
    });
    let k = runs.iter().map(|r| r.summary.k).max().unwrap_or(1);
    let results = Results::new(
        first.suite.clone(),
        first.brain.clone(),
        first.agent.clone(),
        k,
        trials,
        calibration,
    );
    super::write_results(out, &results)?;
    Ok(results)
}

/// SWE-bench's predictions JSONL: per task, the patch of its first passing trial (else its
/// first trial with a patch), as `{instance_id, model_name_or_path, model_patch}`.
pub fn swebench(results: &Results, dir: &Path) -> Result<String, EvalError> {
    let mut out = String::new();
    for task in per_task(results).keys() {
        let trials: Vec<&Trial> = results
            .trials
            .iter()
            .filter(|t| &t.task == task && t.patch.is_some())
            .collect();
        let Some(chosen) = trials
            .iter()
            .find(|t| t.status == Status::Passed)
            .or_else(|| trials.first())
        else {
            continue;
        };
        let rel = chosen.patch.as_deref().unwrap_or_default();
        let patch = std::fs::read_to_string(dir.join(rel)).map_err(|source| EvalError::Io {
            action: "read",
            path: dir.join(rel),
            source,
        })?;
        let line = serde_json::json!({
            "instance_id": task,
            "model_name_or_path": results.brain,
            "model_patch": patch,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    Ok(out)
}
