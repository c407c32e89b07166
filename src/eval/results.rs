//! `results.json` (schema `ouro-eval/1`, documented in `docs/eval.md`): every trial of a run and
//! the summary computed from them. A summary is always computed again from the trials, so
//! merged shards and a whole run give the same numbers.

use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "ouro-eval/1";

/// A trial's outcome: a fixed taxonomy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Failed,
    /// It ran past the task's `timeout_s`, whatever its tests say (scored as a failure).
    AgentTimeout,
    /// It spent the task's `budget_usd` (scored as a failure).
    BudgetExceeded,
    /// The task, the environment, the verifier or the API broke: not scored.
    InfraError,
}

impl Status {
    pub fn scored(self) -> bool {
        self != Status::InfraError
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    pub equivalent: bool,
    pub reason: String,
    pub cost_usd: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub task: String,
    /// 1..K: the same number in a shard as in the whole run.
    pub trial: u32,
    pub status: Status,
    pub tests_passed: Option<bool>,
    pub judge: Option<Judged>,
    pub cost_usd: f64,
    pub tokens: Tokens,
    pub wall_s: f64,
    pub time_to_first_edit_s: Option<f64>,
    pub turns: u32,
    pub tool_calls: u32,
    /// The trial's change as a dogs bundle, relative to the results' directory.
    pub artifact: Option<String>,
    /// Its events, relative to the results' directory.
    pub log: Option<String>,
    /// The same change as a git patch (for `export --swebench`), relative to the directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// Why it is an `infra_error`, timed out or over budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why the judge gave no verdict, when it was asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_error: Option<String>,
    /// Passed with no change made: the task's tests pass on the tree as it was, so they may
    /// not test the task (the report says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub passed_unchanged: bool,
}

impl Trial {
    /// A trial that could not be run, and why.
    pub fn infra(task: &str, n: u32, why: &str) -> Trial {
        Trial {
            task: task.to_string(),
            trial: n,
            status: Status::InfraError,
            tests_passed: None,
            judge: None,
            cost_usd: 0.0,
            tokens: Tokens::default(),
            wall_s: 0.0,
            time_to_first_edit_s: None,
            turns: 0,
            tool_calls: 0,
            artifact: None,
            log: None,
            patch: None,
            error: Some(why.to_string()),
            judge_error: None,
            passed_unchanged: false,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The judge's verdict on the reference against itself (must be equivalent).
    pub gold_vs_gold: Option<bool>,
    /// On the reference against no change (must not be equivalent).
    pub gold_vs_empty: Option<bool>,
    pub reliable: bool,
    /// What asking the judge those two questions cost (in the run's `cost_usd` too).
    #[serde(default)]
    pub cost_usd: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub tasks: usize,
    pub trials: usize,
    pub passed: usize,
    /// Trials per task asked for.
    pub k: u32,
    pub pass_at_1: Option<f64>,
    pub pass_at_k: Option<f64>,
    /// All k trials pass.
    pub pass_hat_k: Option<f64>,
    /// 95% confidence interval of pass@1 across tasks (normal approximation).
    pub pass_at_1_ci95: Option<[f64; 2]>,
    pub cost_usd: f64,
    pub cost_per_solved_usd: Option<f64>,
    pub wall_p50_s: Option<f64>,
    pub wall_p90_s: Option<f64>,
    pub infra_errors: usize,
    pub judge_calibration: Option<Calibration>,
    /// Tasks where the tests and a reliable judge disagree on some trial.
    pub disagreements: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub schema: String,
    pub suite: String,
    pub brain: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// `I/N` when this is one shard of a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    pub trials: Vec<Trial>,
    pub summary: Summary,
}

impl Results {
    /// Trials in the order of a whole run (task, then trial number), summary computed.
    pub fn new(
        suite: String,
        brain: String,
        agent: Option<String>,
        k: u32,
        mut trials: Vec<Trial>,
        calibration: Option<Calibration>,
    ) -> Results {
        trials.sort_by(|a, b| (&a.task, a.trial).cmp(&(&b.task, b.trial)));
        let summary = summarise(&trials, k, calibration);
        Results {
            schema: SCHEMA.into(),
            suite,
            brain,
            agent,
            shard: None,
            trials,
            summary,
        }
    }
}

/// n choose k as a float (exact enough for the small n of trials).
fn choose(n: u32, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

/// The unbiased estimator of pass@k from n trials of which c passed.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> f64 {
    if n - c < k {
        return 1.0;
    }
    1.0 - choose(n - c, k) / choose(n, k)
}

/// The unbiased estimator of pass^k: k trials drawn from the n all pass.
pub fn pass_hat_k(n: u32, c: u32, k: u32) -> f64 {
    choose(c, k) / choose(n, k)
}

fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * (sorted.len() - 1) as f64).round() as usize;
    sorted.get(rank.min(sorted.len() - 1)).copied()
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn summarise(trials: &[Trial], k: u32, calibration: Option<Calibration>) -> Summary {
    let mut tasks: Vec<&str> = trials.iter().map(|t| t.task.as_str()).collect();
    tasks.dedup();
    let (mut at_1, mut at_k, mut hat_k) = (Vec::new(), Vec::new(), Vec::new());
    let reliable = calibration.as_ref().is_some_and(|c| c.reliable);
    let mut disagreements = Vec::new();
    for task in &tasks {
        let scored: Vec<&Trial> = trials
            .iter()
            .filter(|t| t.task == *task && t.status.scored())
            .collect();
        let n = scored.len() as u32;
        if n == 0 {
            continue;
        }
        let c = scored.iter().filter(|t| t.status == Status::Passed).count() as u32;
        // Fewer scored trials than asked for: the estimate is over what there is.
        let k = k.clamp(1, n);
        at_1.push(pass_at_k(n, c, 1));
        at_k.push(pass_at_k(n, c, k));
        hat_k.push(pass_hat_k(n, c, k));
        let disagree = scored
            .iter()
            .any(|t| matches!((&t.judge, t.tests_passed), (Some(j), Some(p)) if j.equivalent != p));
        if reliable && disagree {
            disagreements.push(task.to_string());
        }
    }
    let pass_at_1 = mean(&at_1);
    let ci = pass_at_1.filter(|_| at_1.len() > 1).map(|m| {
        let var = at_1.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (at_1.len() - 1) as f64;
        let half = 1.96 * (var / at_1.len() as f64).sqrt();
        [(m - half).max(0.0), (m + half).min(1.0)]
    });
    let passed = trials.iter().filter(|t| t.status == Status::Passed).count();
    let cost_usd: f64 = trials
        .iter()
        .map(|t| t.cost_usd + t.judge.as_ref().map_or(0.0, |j| j.cost_usd))
        .sum::<f64>()
        + calibration.as_ref().map_or(0.0, |c| c.cost_usd);
    let mut walls: Vec<f64> = trials
        .iter()
        .filter(|t| t.status.scored())
        .map(|t| t.wall_s)
        .collect();
    walls.sort_by(f64::total_cmp);
    Summary {
        tasks: tasks.len(),
        trials: trials.len(),
        passed,
        k,
        pass_at_1,
        pass_at_k: mean(&at_k),
        pass_hat_k: mean(&hat_k),
        pass_at_1_ci95: ci,
        cost_usd,
        cost_per_solved_usd: (passed > 0).then(|| cost_usd / passed as f64),
        wall_p50_s: percentile(&walls, 0.5),
        wall_p90_s: percentile(&walls, 0.9),
        infra_errors: trials
            .iter()
            .filter(|t| t.status == Status::InfraError)
            .count(),
        judge_calibration: calibration,
        disagreements,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn trial(task: &str, n: u32, status: Status) -> Trial {
        Trial {
            task: task.into(),
            trial: n,
            status,
            tests_passed: Some(status == Status::Passed),
            judge: None,
            cost_usd: 0.1,
            tokens: Tokens::default(),
            wall_s: f64::from(n),
            time_to_first_edit_s: None,
            turns: 1,
            tool_calls: 1,
            artifact: None,
            log: None,
            patch: None,
            error: None,
            judge_error: None,
            passed_unchanged: false,
        }
    }

    #[test]
    fn the_estimators_match_their_definitions() {
        // 3 trials, 1 passed: pass@1 = 1/3, pass@3 = 1, pass^3 = 0; pass@2 = 1 - C(2,2)/C(3,2).
        assert!((pass_at_k(3, 1, 1) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(pass_at_k(3, 1, 3), 1.0);
        assert!((pass_at_k(3, 1, 2) - (1.0 - 1.0 / 3.0)).abs() < 1e-12);
        assert_eq!(pass_hat_k(3, 1, 3), 0.0);
        assert!((pass_hat_k(3, 2, 2) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(pass_hat_k(3, 3, 3), 1.0);
        assert_eq!(pass_at_k(3, 0, 3), 0.0);
    }

    #[test]
    fn infra_errors_are_left_out_and_a_task_with_only_them_is_not_scored() {
        use Status::*;
        let trials = vec![
            trial("a", 1, Passed),
            trial("a", 2, Failed),
            trial("a", 3, InfraError),
            trial("b", 1, AgentTimeout),
            trial("b", 2, Passed),
            trial("b", 3, Passed),
            trial("c", 1, InfraError),
        ];
        let r = Results::new("s".into(), "b".into(), None, 3, trials, None);
        let s = &r.summary;
        assert_eq!((s.tasks, s.trials, s.passed, s.infra_errors), (3, 7, 3, 2));
        // a: n=2 c=1 → pass@1 1/2, k=2: pass@2 1, pass^2 0; b: n=3 c=2 → 2/3, 1, 0.
        assert!((s.pass_at_1.unwrap() - (0.5 + 2.0 / 3.0) / 2.0).abs() < 1e-12);
        assert_eq!(s.pass_at_k, Some(1.0));
        assert_eq!(s.pass_hat_k, Some(0.0));
        assert!((s.cost_usd - 0.7).abs() < 1e-9);
        assert!((s.cost_per_solved_usd.unwrap() - 0.7 / 3.0).abs() < 1e-9);
        let [lo, hi] = s.pass_at_1_ci95.unwrap();
        assert!(lo <= s.pass_at_1.unwrap() && s.pass_at_1.unwrap() <= hi);
    }
}
