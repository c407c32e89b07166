//! `ouro eval run --learn`: the suite twice, with memory's reflect step on every trial of the
//! first pass, and the second pass's agents able to Recall what it stored — the design's
//! "strategic learning", measured: the change in pass rate and cost.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::EvalError;
use super::results::{Results, Summary};
use crate::knowledge::reflect::{self, Turn};
use crate::knowledge::{Origin, Provenance, Store};
use crate::ui_event::UiEvent;

pub(super) use crate::knowledge::MEMORY_FILE_ENV;

/// What the two passes did, as `learn.json` keeps it.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Learned {
    pub(super) first: Summary,
    pub(super) second: Summary,
    /// Memories and relations stored after the first pass.
    pub(super) stored: usize,
    pub(super) reflect_cost_usd: f64,
    /// Reflect requests that failed or stayed malformed.
    pub(super) reflect_errors: usize,
    /// Pass@1 of the second pass less the first's (percentage points / 100).
    pub(super) pass_at_1_change: Option<f64>,
    /// Cost of the second pass less the first's.
    pub(super) cost_change_usd: f64,
}

/// Reflects on every trial of `first` (its log, its outcome) into the memory at `store`.
pub(super) async fn reflect_on(
    first: &Results,
    dir: &Path,
    instructions: &HashMap<String, String>,
    store: &Path,
    model: &str,
    embedder: Option<std::sync::Arc<crate::knowledge::embed::Embedder>>,
) -> Result<(usize, f64, usize), EvalError> {
    let client = crate::app::Endpoint::from_env()
        .map_err(|_| {
            EvalError::Usage(
                "--learn needs an API key for its reflect step: set ANTHROPIC_API_KEY".into(),
            )
        })?
        .client()
        .map_err(|e| EvalError::Usage(format!("the reflect step's API client: {e}")))?;
    let mut memory = Store::open(store)
        .map_err(|e| EvalError::Usage(format!("cannot open the run's memory: {e}")))?;
    let (mut stored, mut cost, mut errors) = (0, 0.0, 0);
    for trial in &first.trials {
        let Some(log) = &trial.log else { continue };
        let Some(instruction) = instructions.get(&trial.task) else {
            continue;
        };
        let passed = trial.status == super::results::Status::Passed;
        let turn = turn_of(instruction, &dir.join(log), passed);
        let known = memory.search(&turn.prompt, 10).unwrap_or_default();
        let proposal = reflect::propose(&client, model, &turn, &known).await;
        cost +=
            crate::api::pricing::pricing(&proposal.model).map_or(0.0, |p| p.cost(&proposal.usage));
        if proposal.error.is_some() {
            errors += 1;
            continue;
        }
        let provenance = Provenance {
            session: Some(format!("eval {}-{}", trial.task, trial.trial)),
            turn: Some(1),
            commit: None,
        };
        match memory.apply(&proposal.operations, Origin::ToolOutput, &provenance) {
            Ok(applied) => stored += applied.total(),
            Err(_) => errors += 1,
        }
    }
    // The second pass's Recall seeds by meaning too when the user's settings name a model.
    if let Some(embedder) = embedder
        && let Err(e) = crate::knowledge::embed::backfill(&mut memory, &embedder, None).await
    {
        eprintln!(
            "ouro eval: the learned memories have no vectors, so the second pass recalls them by keywords: {e}"
        );
    }
    Ok((stored, cost, errors))
}

/// A trial's log (its UI events) as reflect reads a turn: the task's instruction, the calls
/// with their results, the last answer, and whether the tests passed.
pub(super) fn turn_of(instruction: &str, log: &Path, passed: bool) -> Turn {
    let mut turn = Turn {
        prompt: instruction.to_string(),
        number: 1,
        ..Turn::default()
    };
    let mut at: HashMap<String, usize> = HashMap::new();
    let text = std::fs::read_to_string(log).unwrap_or_default();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<UiEvent>(line) else {
            continue;
        };
        match event {
            UiEvent::ToolStart {
                tool_use_id,
                name,
                input,
                ..
            } => {
                at.insert(tool_use_id, turn.calls.len());
                turn.calls.push((name, input, String::new(), false));
            }
            UiEvent::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } => {
                if let Some(call) = at.get(&tool_use_id).and_then(|i| turn.calls.get_mut(*i)) {
                    call.2 = content;
                    call.3 = is_error;
                }
            }
            UiEvent::ChatComplete { text, .. } if !text.trim().is_empty() => turn.answer = text,
            _ => {}
        }
    }
    turn.answer.push_str(if passed {
        "\n\n[The task's hidden tests passed.]"
    } else {
        "\n\n[The task's hidden tests failed.]"
    });
    turn
}

/// Both passes' summaries and the change between them.
pub(super) fn compare(
    first: &Results,
    second: &Results,
    (stored, reflect_cost_usd, reflect_errors): (usize, f64, usize),
) -> Learned {
    let (a, b) = (first.summary.clone(), second.summary.clone());
    Learned {
        pass_at_1_change: a.pass_at_1.zip(b.pass_at_1).map(|(a, b)| b - a),
        cost_change_usd: b.cost_usd - a.cost_usd,
        first: a,
        second: b,
        stored,
        reflect_cost_usd,
        reflect_errors,
    }
}

/// The lines `ouro eval run --learn` ends with.
pub(super) fn text(learned: &Learned) -> String {
    let pct = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{:.1}%", v * 100.0));
    format!(
        "learning: pass@1 {} → {} ({}), cost ${:.4} → ${:.4} ({:+.4}); {} memories and relations stored by reflect (${:.4}{})\n",
        pct(learned.first.pass_at_1),
        pct(learned.second.pass_at_1),
        learned
            .pass_at_1_change
            .map_or("n/a".into(), |c| format!("{:+.1} points", c * 100.0)),
        learned.first.cost_usd,
        learned.second.cost_usd,
        learned.cost_change_usd,
        learned.stored,
        learned.reflect_cost_usd,
        if learned.reflect_errors > 0 {
            format!(", {} reflect requests failed", learned.reflect_errors)
        } else {
            String::new()
        }
    )
}

/// Where the first pass of `out` goes.
pub(super) fn first_dir(out: &Path) -> PathBuf {
    out.join("first-pass")
}

/// The instruction of each task of a suite, by id.
pub(super) fn instructions(suite: &Path) -> HashMap<String, String> {
    super::suite::load_suite(suite, true)
        .unwrap_or_default()
        .into_iter()
        .filter_map(Result::ok)
        .map(|task| (task.id.clone(), task.instruction.clone()))
        .collect()
}
