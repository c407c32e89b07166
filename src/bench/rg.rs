//! `--compare-rg`: the Grep tool against ripgrep on the same tree and patterns. Both are timed
//! as a caller sees them: a Grep call (schema, checks, search, sorting, formatting) in process,
//! and `rg` from spawn to exit with its output read.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use super::BenchError;
use super::fixture::NEEDLE;
use super::measure::{Spread, ms};
use crate::tools::grep::GrepTool;
use crate::tools::{Progress, ToolContext, erase};

#[derive(Debug, Clone, Serialize)]
pub struct RgCase {
    pub pattern: String,
    /// `files_with_matches`, `content` or `count`.
    pub mode: String,
    pub(crate) grep_ms: Spread,
    pub(crate) rg_ms: Spread,
    /// Grep median / rg median.
    pub(crate) ratio: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RgReport {
    /// `rg --version`'s first line; `None` when rg is not on PATH.
    pub rg_version: Option<String>,
    pub cases: Vec<RgCase>,
    /// Sum of Grep medians / sum of rg medians.
    pub overall_ratio: Option<f64>,
}

struct Case {
    pattern: &'static str,
    mode: &'static str,
    case_insensitive: bool,
}

const CASES: &[Case] = &[
    Case {
        pattern: NEEDLE,
        mode: "files_with_matches",
        case_insensitive: false,
    },
    Case {
        pattern: r"fn compute_\d{4}7",
        mode: "content",
        case_insensitive: false,
    },
    Case {
        pattern: r"struct Item\d+",
        mode: "count",
        case_insensitive: false,
    },
    Case {
        pattern: "LAMBDA TREE",
        mode: "content",
        case_insensitive: true,
    },
    Case {
        pattern: r"(socket|quorum)\s+\w+er\b",
        mode: "files_with_matches",
        case_insensitive: false,
    },
];

/// Times every case `repeats` times (after one untimed call each) on the tree at `root`.
pub async fn compare(root: &Path, repeats: usize) -> Result<RgReport, BenchError> {
    let Some(rg_version) = rg_version() else {
        return Ok(RgReport {
            rg_version: None,
            cases: Vec::new(),
            overall_ratio: None,
        });
    };
    let mut cases = Vec::new();
    for case in CASES {
        let mut grep_times = Vec::new();
        let mut rg_times = Vec::new();
        for round in 0..=repeats {
            let grep = grep_once(root, case).await?;
            let rg = rg_once(root, case).await?;
            if round > 0 {
                grep_times.push(ms(grep));
                rg_times.push(ms(rg));
            }
        }
        let (Some(grep_ms), Some(rg_ms)) = (Spread::of(&grep_times), Spread::of(&rg_times)) else {
            continue;
        };
        cases.push(RgCase {
            pattern: case.pattern.to_string(),
            mode: case.mode.to_string(),
            grep_ms,
            rg_ms,
            ratio: grep_ms.ratio_to(&rg_ms),
        });
    }
    let grep_total: f64 = cases.iter().map(|c| c.grep_ms.median).sum();
    let rg_total: f64 = cases.iter().map(|c| c.rg_ms.median).sum();
    Ok(RgReport {
        rg_version: Some(rg_version),
        overall_ratio: (rg_total > 0.0).then(|| grep_total / rg_total),
        cases,
    })
}

fn rg_version() -> Option<String> {
    let output = Command::new("rg").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    output
        .status
        .success()
        .then(|| text.lines().next().unwrap_or("rg").to_string())
}

fn grep_input(case: &Case) -> Value {
    json!({
        "pattern": case.pattern,
        "output_mode": case.mode,
        "-i": case.case_insensitive,
    })
}

async fn grep_once(root: &Path, case: &Case) -> Result<Duration, BenchError> {
    let tool = erase(GrepTool);
    let ctx = ToolContext::new(root.to_path_buf());
    let input = grep_input(case);
    let started = Instant::now();
    tool.check_schema(&input).map_err(grep_failed)?;
    let call = tool.prepare(&input, &ctx).map_err(grep_failed)?;
    let output = call
        .run(&ctx, &Progress::none())
        .await
        .map_err(|e| grep_failed(e.to_string()))?;
    let elapsed = started.elapsed();
    if output.is_error {
        return Err(grep_failed(output.content));
    }
    Ok(elapsed)
}

fn grep_failed(message: String) -> BenchError {
    BenchError::Invalid(format!(
        "the Grep tool failed on the comparison tree: {message}"
    ))
}

/// ripgrep's flags for the same search as [`grep_input`].
fn rg_args(case: &Case) -> Vec<&'static str> {
    let mut args = match case.mode {
        "files_with_matches" => vec!["--files-with-matches"],
        "count" => vec!["--count"],
        _ => vec!["--line-number"],
    };
    if case.case_insensitive {
        args.push("--ignore-case");
    }
    args.extend(["--regexp", case.pattern]);
    args
}

async fn rg_once(root: &Path, case: &Case) -> Result<Duration, BenchError> {
    let args = rg_args(case);
    let root = root.to_path_buf();
    let timed = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let output = Command::new("rg")
            .args(&args)
            .arg(&root)
            .stdin(Stdio::null())
            .output()?;
        Ok::<_, std::io::Error>((started.elapsed(), output))
    })
    .await
    .map_err(|e| BenchError::Failed(format!("the rg timing task failed: {e}")))?
    .map_err(|e| BenchError::io("could not run rg", e))?;
    let (elapsed, output) = timed;
    // Exit code 1 means "no match", which is a valid search.
    if !matches!(output.status.code(), Some(0 | 1)) {
        return Err(BenchError::Failed(format!(
            "rg failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fixture::{Fixture, WorkDir};

    #[test]
    fn rg_flags_mirror_the_grep_input() {
        let case = &CASES[3];
        assert_eq!(
            rg_args(case),
            ["--line-number", "--ignore-case", "--regexp", "LAMBDA TREE"]
        );
        assert_eq!(grep_input(case)["-i"], true);
        assert_eq!(rg_args(&CASES[2])[0], "--count");
    }

    #[tokio::test]
    async fn every_case_is_a_valid_grep_call() {
        let dir = WorkDir::new("rg").unwrap();
        Fixture::generate(dir.path(), 80, 1).unwrap();
        for case in CASES {
            grep_once(dir.path(), case).await.unwrap();
        }
    }
}
