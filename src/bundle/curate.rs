//! `ouro cats --ai-curate "task"`: a brain (any slug) reads the file tree, may search it with
//! its read-only tools, and ranks the files the task needs, each with a relevance from 0 to 1
//! and a short reason. The answer is JSON checked against a schema; a malformed one is asked
//! again once, then it is an error. Files at or above the threshold are bundled, most relevant
//! first, within the token budget.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;

use super::BundleError;
use crate::brain::{BrainCli, BrainConfig, Mode};

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Ranking {
    pub files: Vec<Ranked>,
    /// How sure the brain is that these files are all the task needs (0 to 1); it may say
    /// nothing, and then the bundle claims no confidence.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Ranked {
    /// A path from the tree, as listed.
    pub path: String,
    /// 0: unrelated, 1: the task cannot be done without it.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub relevance: f64,
    /// One short sentence.
    pub why: String,
}

pub struct CurateOptions {
    pub task: String,
    pub brain: String,
    pub threshold: f64,
}

/// The ranking the brain gives for `task` over `candidates` (paths relative to `cwd`, each
/// with its estimated tokens), checked.
pub(super) async fn rank(
    cwd: &Path,
    candidates: &[(String, u64)],
    options: &CurateOptions,
) -> Result<Ranking, BundleError> {
    // The brain's series is thrown away: a ranking is one question, not a conversation.
    let state = crate::sys::keeper::scratch("curate");
    let brain = crate::brain::open(&options.brain, BrainConfig::new(cwd, &state))
        .map_err(|e| BundleError::Curate(e.to_string()))?;
    let spinner = Spinner::start();
    let result = ask_twice(brain.as_ref(), candidates, options).await;
    spinner.stop();
    let _ = brain.kill().await;
    let _ = std::fs::remove_dir_all(&state);
    result
}

async fn ask_twice(
    brain: &dyn BrainCli,
    candidates: &[(String, u64)],
    options: &CurateOptions,
) -> Result<Ranking, BundleError> {
    brain
        .boot(Mode::Dispatch)
        .await
        .map_err(|e| BundleError::Curate(e.to_string()))?;
    let mut prompt = first_prompt(&options.task, candidates);
    let mut last_problem = String::new();
    for _ in 0..2 {
        let answer = brain
            .ask(&prompt)
            .await
            .map_err(|e| BundleError::Curate(e.to_string()))?;
        match check(&answer.text, candidates) {
            Ok(ranked) => return Ok(ranked),
            Err(problem) => {
                prompt = format!(
                    "Your answer could not be used: {problem}\nAnswer again with only the JSON object described before, nothing else."
                );
                last_problem = problem;
            }
        }
    }
    Err(BundleError::Curate(format!(
        "the brain's ranking was malformed twice (last: {last_problem})"
    )))
}

fn first_prompt(task: &str, candidates: &[(String, u64)]) -> String {
    let tree: String = candidates
        .iter()
        .map(|(path, tokens)| format!("{path}\t{tokens}\n"))
        .collect();
    format!(
        "Pick the files someone needs to read to do this task, so they can be sent to a model.\n\n\
         Task: {task}\n\n\
         The files (path, then its size in tokens):\n{tree}\n\
         You may search and read them with your tools first. Then answer with only a JSON object, \
         no prose and no code fence: {{\"files\": [{{\"path\": \"<a path from the list>\", \
         \"relevance\": <0 to 1>, \"why\": \"<one short sentence>\"}}], \"confidence\": <0 to 1>}}. \
         List only files with some relevance; 1 means the task cannot be done without the file. \
         confidence is how sure you are that the files you list are all the task needs."
    )
}

/// The ranking in `answer`, or what is wrong with it.
fn check(answer: &str, candidates: &[(String, u64)]) -> Result<Ranking, String> {
    let start = answer.find('{').ok_or("it holds no JSON object")?;
    let end = answer.rfind('}').ok_or("it holds no JSON object")?;
    let value: serde_json::Value = serde_json::from_str(&answer[start..=end])
        .map_err(|e| format!("it is not valid JSON ({e})"))?;
    let schema = schemars::schema_for!(Ranking).to_value();
    let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
    if let Some(error) = validator.iter_errors(&value).next() {
        return Err(format!(
            "it does not match the schema: {error} at {}",
            error.instance_path()
        ));
    }
    let ranking: Ranking = serde_json::from_value(value).map_err(|e| e.to_string())?;
    for ranked in &ranking.files {
        if !candidates.iter().any(|(p, _)| *p == ranked.path) {
            return Err(format!("`{}` is not a path from the list", ranked.path));
        }
    }
    Ok(ranking)
}

/// The elapsed time on stderr while the brain works (only on a terminal).
struct Spinner {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Spinner {
    fn start() -> Spinner {
        if !std::io::stderr().is_terminal() {
            return Spinner { stop: None };
        }
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let started = Instant::now();
            let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            for frame in frames.iter().cycle() {
                eprint!(
                    "\r{frame} the brain is choosing files… {:.1} s",
                    started.elapsed().as_secs_f64()
                );
                let _ = std::io::stderr().flush();
                tokio::select! {
                    _ = &mut rx => break,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
            eprint!("\r\x1b[2K");
        });
        Spinner { stop: Some(tx) }
    }

    fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<(String, u64)> {
        vec![("src/a.rs".into(), 10), ("b.md".into(), 5)]
    }

    #[test]
    fn a_ranking_is_checked_against_the_schema_and_the_tree() {
        let ok =
            "Here: {\"files\": [{\"path\": \"src/a.rs\", \"relevance\": 0.9, \"why\": \"it\"}]}";
        let ranking = check(ok, &files()).unwrap();
        assert_eq!(ranking.files[0].path, "src/a.rs");
        assert_eq!(ranking.confidence, None);
        let sure = "{\"files\": [], \"confidence\": 0.6}";
        assert_eq!(check(sure, &files()).unwrap().confidence, Some(0.6));
        for bad in [
            "{\"files\": [], \"confidence\": 1.2}",
            "{\"files\": [], \"confidence\": \"high\"}",
            "no json",
            "{\"files\": [{\"path\": \"src/a.rs\", \"relevance\": 1.5, \"why\": \"x\"}]}",
            "{\"files\": [{\"path\": \"src/a.rs\"}]}",
            "{\"files\": [{\"path\": \"nope.rs\", \"relevance\": 0.5, \"why\": \"x\"}]}",
            "{\"files\": [1,",
        ] {
            assert!(check(bad, &files()).is_err(), "{bad}");
        }
    }
}
