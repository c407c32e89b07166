//! `ouro bench --write-scenario DIR`: the tools session's generated project and scripted API
//! output, written to disk with the command that replays it, so that anyone can run the very
//! session the benchmark measures by hand: under a profiler, `strace`, `heaptrack`, or to
//! compare against another harness.

use std::path::Path;

use serde::Serialize;

use super::BenchError;
use super::fixture::Fixture;
use super::run::{PROMPT, session_flags};
use super::scenario::{self, Plan};

/// What was written, printed as JSON for scripts.
#[derive(Debug, Serialize)]
pub struct Written {
    /// The project to run `ouro` in.
    pub project: String,
    /// The mock API's scenario (`ouro mock-server --scenario`).
    pub scenario: String,
    /// The `ouro` arguments of the measured session.
    pub args: Vec<String>,
}

pub fn write(dir: &Path, plan: &Plan, files: usize) -> Result<Written, BenchError> {
    let project = dir.join("project");
    let occupied = std::fs::read_dir(&project).is_ok_and(|mut d| d.next().is_some())
        || std::fs::symlink_metadata(dir.join("scenario.json")).is_ok();
    if occupied {
        return Err(BenchError::Failed(format!(
            "{} is not empty (it holds a written session); give --write-scenario a new or empty folder",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&project)
        .map_err(|e| BenchError::io(format!("could not create {}", project.display()), e))?;
    let project = std::fs::canonicalize(&project)
        .map_err(|e| BenchError::io(format!("could not resolve {}", project.display()), e))?;
    let fixture = Fixture::generate(&project, files, plan.seed)
        .map_err(|e| BenchError::io("could not write the fixture tree", e))?;
    let generated = scenario::generate(plan, &fixture).scenario;
    let scenario = project.with_file_name("scenario.json");
    let json = serde_json::to_vec_pretty(&generated)
        .map_err(|e| BenchError::Failed(format!("could not encode the scenario: {e}")))?;
    std::fs::write(&scenario, json)
        .map_err(|e| BenchError::io(format!("could not write {}", scenario.display()), e))?;
    let mut args = vec!["-p".to_string(), PROMPT.to_string()];
    args.extend(session_flags());
    Ok(Written {
        project: project.display().to_string(),
        scenario: scenario.display().to_string(),
        args,
    })
}

/// The shell lines that replay the session.
pub fn instructions(written: &Written) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let args: Vec<String> = written.args.iter().map(|a| quote(a)).collect();
    format!(
        "ouro mock-server --scenario {} --port 8765 &\ncd {} && ANTHROPIC_BASE_URL=http://127.0.0.1:8765 ANTHROPIC_API_KEY=sk-ant-any ouro {}\n",
        quote(&written.scenario),
        quote(&written.project),
        args.join(" ")
    )
}
