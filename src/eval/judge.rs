//! The second judge beside the tests: a model asked, in a plain Messages request with no
//! tools, whether a trial's change is equivalent to the task's reference change. Its answer's
//! last line is `VERDICT: equivalent` or `VERDICT: different`; anything else is unreadable.
//! Before its verdicts count, it is calibrated: the reference against itself must come out
//! equivalent, the reference against no change must not.

use serde_json::json;

use super::results::{Calibration, Judged};
use super::task::Task;
use crate::api::answer::text_answer;
use crate::api::client::Client;
use crate::api::retry::RetryPolicy;

const PROMPT: &str = include_str!("../../prompts/eval-judge.md");

/// The most bytes of one change the judge is shown.
const MAX_CHANGE_BYTES: usize = 200_000;

pub(super) struct Judge {
    client: Client,
    model: String,
}

/// Why a verdict could not be had.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct NoVerdict(pub String);

impl Judge {
    pub(super) fn new(client: Client, model: &str) -> Judge {
        Judge {
            client,
            // Resolved, so an alias (`sonnet`) is priced as the model it names.
            model: crate::api::models::resolve(model),
        }
    }

    /// Whether `candidate` (a dogs bundle; `None`: no change) is equivalent to the task's
    /// reference. A reference that shows any file under `tests/` is never sent.
    pub(super) async fn judge(
        &self,
        task: &Task,
        candidate: Option<&[u8]>,
    ) -> Result<Judged, NoVerdict> {
        let reference = reference(task)?;
        self.compare(task, &reference, candidate).await
    }

    /// Judges the reference against itself and against no change, on `task`.
    pub(super) async fn calibrate(&self, task: &Task) -> Calibration {
        let Ok(reference) = reference(task) else {
            return Calibration::default();
        };
        let same = self.compare(task, &reference, Some(&reference)).await;
        let empty = self.compare(task, &reference, None).await;
        let cost_usd = [&same, &empty]
            .iter()
            .filter_map(|j| j.as_ref().ok())
            .map(|j| j.cost_usd)
            .sum();
        let gold_vs_gold = same.ok().map(|j| j.equivalent);
        let gold_vs_empty = empty.ok().map(|j| j.equivalent);
        Calibration {
            reliable: gold_vs_gold == Some(true) && gold_vs_empty == Some(false),
            gold_vs_gold,
            gold_vs_empty,
            cost_usd,
        }
    }

    async fn compare(
        &self,
        task: &Task,
        reference: &[u8],
        candidate: Option<&[u8]>,
    ) -> Result<Judged, NoVerdict> {
        let shown = |bytes: &[u8]| {
            let text = String::from_utf8_lossy(bytes);
            match text.char_indices().nth(MAX_CHANGE_BYTES) {
                Some((cut, _)) => format!("{}\n[… cut: the change is longer]", &text[..cut]),
                None => text.into_owned(),
            }
        };
        let candidate = candidate.map_or_else(|| "(no change)".to_string(), shown);
        let message = format!(
            "<task id=\"{}\">\n{}\n</task>\n\n<reference_change>\n{}\n</reference_change>\n\n<candidate_change>\n{}\n</candidate_change>",
            task.id,
            task.instruction,
            shown(reference),
            candidate
        );
        let body = json!({
            "model": crate::api::models::api_model(&self.model),
            "max_tokens": 1024,
            "stream": true,
            "system": PROMPT.trim(),
            "messages": [{"role": "user", "content": message}],
        });
        let answer = text_answer(&self.client, &body, &RetryPolicy::default())
            .await
            .map_err(|e| NoVerdict(format!("the judge could not be asked: {e}")))?;
        let cost_usd =
            crate::api::pricing::pricing(&self.model).map_or(0.0, |p| p.cost(&answer.usage));
        let (equivalent, reason) = parse(&answer.text)
            .ok_or_else(|| NoVerdict(format!("unreadable verdict: {}", last_line(&answer.text))))?;
        Ok(Judged {
            equivalent,
            reason,
            cost_usd,
        })
    }
}

/// The task's reference change, unless it shows a hidden test.
fn reference(task: &Task) -> Result<Vec<u8>, NoVerdict> {
    let path = task
        .expected
        .as_ref()
        .ok_or_else(|| NoVerdict("the task has no expected.dogs.md".into()))?;
    let bytes = std::fs::read(path)
        .map_err(|e| NoVerdict(format!("cannot read {}: {e}", path.display())))?;
    if let Ok(crate::paws::parse::Reply::Changes { blocks, .. }) = crate::paws::parse::parse(&bytes)
        && blocks.iter().any(|b| b.path().starts_with(b"tests/"))
    {
        return Err(NoVerdict(
            "expected.dogs.md shows files under tests/, which no model may see".into(),
        ));
    }
    Ok(bytes)
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// `(equivalent, reason)` from an answer whose last line is the verdict.
fn parse(text: &str) -> Option<(bool, String)> {
    let verdict = last_line(text)
        .trim_matches('`')
        .trim()
        .strip_prefix("VERDICT:")?
        .trim()
        .to_ascii_lowercase();
    let equivalent = match verdict.as_str() {
        "equivalent" => true,
        "different" => false,
        _ => return None,
    };
    let reason: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .split_last()
        .map(|(_, rest)| rest.to_vec())
        .unwrap_or_default();
    Some((equivalent, crate::text::truncate(&reason.join(" "), 500)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_last_verdict_line_is_read() {
        assert_eq!(
            parse("Same fix.\n\nVERDICT: equivalent\n"),
            Some((true, "Same fix.".into()))
        );
        assert_eq!(
            parse("It misses a case.\nVERDICT: Different"),
            Some((false, "It misses a case.".into()))
        );
        assert_eq!(parse("`VERDICT: equivalent`"), Some((true, String::new())));
        assert_eq!(parse("VERDICT: equivalent\nbut actually no"), None);
        assert_eq!(parse("VERDICT: maybe"), None);
        assert_eq!(parse(""), None);
    }
}
