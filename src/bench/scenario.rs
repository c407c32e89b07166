//! The generated mock conversation: turns of tool calls on the fixture tree, every call valid
//! (real paths, Edits of files read in an earlier turn, read-only shell commands), then a final
//! text turn.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::{Value, json};

use super::fixture::{EDITS_PER_FILE, FileKind, Fixture, NEEDLE, Rng};
use crate::mock::{MockBlock, Scenario, Turn};
use crate::tools::Tool;
use crate::tools::bash::BashTool;
use crate::tools::edit::EditTool;
use crate::tools::glob::GlobTool;
use crate::tools::grep::GrepTool;
use crate::tools::read::ReadTool;

/// The shell commands the scenario runs; all read-only, so the analyser lets them run in
/// parallel, and each is allowed by one of [`BASH_ALLOW_RULES`].
pub const BASH_ALLOW_RULES: &[&str] = &["Bash(ls:*)", "Bash(cat:*)", "Bash(wc:*)"];

/// The text the last turn answers with.
pub(crate) const FINAL_TEXT: &str = "Done: the benchmark scenario is complete.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    Read,
    Grep,
    Glob,
    Edit,
    Bash,
}

impl ToolKind {
    pub fn name(self) -> &'static str {
        match self {
            ToolKind::Read => "read",
            ToolKind::Grep => "grep",
            ToolKind::Glob => "glob",
            ToolKind::Edit => "edit",
            ToolKind::Bash => "bash",
        }
    }
}

/// The tool kinds a scenario cycles through, e.g. `read,grep,glob,edit,bash`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix(pub Vec<ToolKind>);

impl FromStr for Mix {
    type Err = String;

    fn from_str(s: &str) -> Result<Mix, String> {
        let kinds = s
            .split([',', ' '])
            .filter(|w| !w.is_empty())
            .map(|w| match w.to_ascii_lowercase().as_str() {
                "read" => Ok(ToolKind::Read),
                "grep" => Ok(ToolKind::Grep),
                "glob" => Ok(ToolKind::Glob),
                "edit" => Ok(ToolKind::Edit),
                "bash" => Ok(ToolKind::Bash),
                other => Err(format!(
                    "`{other}` is not a benchmark tool; use read, grep, glob, edit or bash"
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if kinds.is_empty() {
            return Err("the mix is empty; list tools such as read,grep,glob,edit,bash".into());
        }
        Ok(Mix(kinds))
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|k| k.name()).collect();
        f.write_str(&names.join(","))
    }
}

/// The shape of a generated conversation.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Turns with tool calls; one text turn follows them.
    pub turns: usize,
    pub(crate) calls_per_turn: usize,
    pub mix: Mix,
    pub seed: u64,
}

impl Plan {
    /// The same conversation with no tool turns: one answer (the hello session).
    pub fn hello(&self) -> Plan {
        Plan {
            turns: 0,
            ..self.clone()
        }
    }
}

/// A scenario and what it asks of the engine.
#[derive(Debug, Clone)]
pub struct Generated {
    pub scenario: Scenario,
    /// Tool calls in the whole scenario.
    pub calls: usize,
    /// Edits that had no file read in an earlier turn yet and became Reads.
    #[cfg(test)]
    pub(crate) edits_replaced: usize,
}

/// Builds the scenario for `plan` on `fixture`. Deterministic for a given seed and tree.
pub fn generate(plan: &Plan, fixture: &Fixture) -> Generated {
    let mut builder = Generator {
        rng: Rng::new(plan.seed),
        fixture,
        read_before: Vec::new(),
        read_now: Vec::new(),
        edits_done: vec![0; fixture.files.len()],
        edits_replaced: 0,
    };
    let mut turns = Vec::with_capacity(plan.turns + 1);
    let mut calls = 0;
    for t in 0..plan.turns {
        let mut kinds: Vec<ToolKind> = (0..plan.calls_per_turn)
            .map(|j| plan.mix.0[(t * plan.calls_per_turn + j) % plan.mix.0.len()])
            .collect();
        builder.rng.shuffle(&mut kinds);
        let mut content = vec![MockBlock::Text {
            text: format!("Step {}: looking at the project.", t + 1),
        }];
        let mut edited_now = HashSet::new();
        for kind in kinds {
            let (name, input) = builder.call(kind, &mut edited_now);
            content.push(MockBlock::ToolUse {
                id: None,
                name: name.to_string(),
                input: Some(input),
                raw_input: None,
            });
            calls += 1;
        }
        turns.push(Turn {
            content,
            ..Turn::default()
        });
        let read_now = std::mem::take(&mut builder.read_now);
        builder.read_before.extend(read_now);
    }
    turns.push(Turn::text(FINAL_TEXT));
    Generated {
        scenario: Scenario::new(turns),
        calls,
        #[cfg(test)]
        edits_replaced: builder.edits_replaced,
    }
}

struct Generator<'a> {
    rng: Rng,
    fixture: &'a Fixture,
    /// Files read whole in earlier turns: the ones an Edit may change.
    read_before: Vec<usize>,
    read_now: Vec<usize>,
    edits_done: Vec<usize>,
    edits_replaced: usize,
}

impl Generator<'_> {
    fn call(&mut self, kind: ToolKind, edited_now: &mut HashSet<usize>) -> (&'static str, Value) {
        match kind {
            ToolKind::Read => self.read(),
            ToolKind::Grep => (GrepTool::NAME, self.grep()),
            ToolKind::Glob => (GlobTool::NAME, self.glob()),
            ToolKind::Bash => (BashTool::NAME, self.bash()),
            ToolKind::Edit => match self.edit(edited_now) {
                Some(input) => (EditTool::NAME, input),
                None => {
                    self.edits_replaced += 1;
                    self.read()
                }
            },
        }
    }

    fn file_path(&self, index: usize) -> String {
        self.fixture
            .path(&self.fixture.files[index])
            .to_string_lossy()
            .into_owned()
    }

    /// Prefers Rust files (the ones with marker lines), so later Edits have something to change.
    fn read(&mut self) -> (&'static str, Value) {
        let files = &self.fixture.files;
        let mut index = self.rng.below(files.len());
        for _ in 0..4 {
            if files[index].kind == FileKind::Rust {
                break;
            }
            index = self.rng.below(files.len());
        }
        self.read_now.push(index);
        (
            ReadTool::NAME,
            json!({ "file_path": self.file_path(index) }),
        )
    }

    fn edit(&mut self, edited_now: &mut HashSet<usize>) -> Option<Value> {
        let candidates: Vec<usize> = self
            .read_before
            .iter()
            .copied()
            .filter(|&i| {
                self.fixture.files[i].kind == FileKind::Rust
                    && self.edits_done[i] < EDITS_PER_FILE
                    && !edited_now.contains(&i)
            })
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let index = *self.rng.pick(&candidates);
        let k = self.edits_done[index];
        self.edits_done[index] += 1;
        edited_now.insert(index);
        let (old, new) = self.fixture.files[index].marker_edit(k);
        Some(json!({
            "file_path": self.file_path(index),
            "old_string": old,
            "new_string": new,
        }))
    }

    fn grep(&mut self) -> Value {
        let dir = self.rng.pick(&self.fixture.dirs).clone();
        let word = *self.rng.pick(&["lambda", "socket", "quorum", "ledger"]);
        match self.rng.below(5) {
            0 => json!({ "pattern": NEEDLE }),
            1 => json!({ "pattern": r"fn compute_\d{4}7", "output_mode": "content" }),
            2 => json!({ "pattern": r"struct Item\d+", "path": dir, "output_mode": "count" }),
            3 => json!({ "pattern": word.to_uppercase(), "-i": true, "glob": "*.md",
                         "output_mode": "content", "head_limit": 20 }),
            _ => {
                json!({ "pattern": format!("{word} {}", self.rng.pick(&["tree", "cache", "token"])),
                         "path": dir, "output_mode": "content", "-C": 1 })
            }
        }
    }

    fn glob(&mut self) -> Value {
        let dir = self.rng.pick(&self.fixture.dirs).clone();
        match self.rng.below(4) {
            0 => json!({ "pattern": "**/*.md" }),
            1 => json!({ "pattern": "*.rs", "path": dir }),
            2 => json!({ "pattern": format!("**/file_00{}*", self.rng.below(10)) }),
            _ => json!({ "pattern": format!("{dir}/**/*.txt") }),
        }
    }

    fn bash(&mut self) -> Value {
        let file = self.rng.below(self.fixture.files.len());
        let rel = self.fixture.files[file].rel.clone();
        let dir = self.rng.pick(&self.fixture.dirs).clone();
        let command = match self.rng.below(3) {
            0 => format!("ls {dir}"),
            1 => format!("wc -l {rel}"),
            _ => format!("cat {rel}"),
        };
        json!({ "command": command, "description": "Look at the fixture" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fixture::WorkDir;

    fn setup(files: usize) -> (WorkDir, Fixture) {
        let dir = WorkDir::new("scenario").unwrap();
        let fixture = Fixture::generate(dir.path(), files, 5).unwrap();
        (dir, fixture)
    }

    fn plan(turns: usize, calls: usize, mix: &str) -> Plan {
        Plan {
            turns,
            calls_per_turn: calls,
            mix: mix.parse().unwrap(),
            seed: 9,
        }
    }

    fn tool_uses(turn: &Turn) -> Vec<(String, Value)> {
        turn.content
            .iter()
            .filter_map(|b| match b {
                MockBlock::ToolUse { name, input, .. } => Some((name.clone(), input.clone()?)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn mix_parses_and_rejects() {
        let mix: Mix = "read, Grep,glob".parse().unwrap();
        assert_eq!(mix.0, [ToolKind::Read, ToolKind::Grep, ToolKind::Glob]);
        assert_eq!(mix.to_string(), "read,grep,glob");
        assert!(Mix::from_str("read,write").unwrap_err().contains("`write`"));
        assert!(Mix::from_str(" , ").unwrap_err().contains("empty"));
    }

    #[test]
    fn shape_follows_the_plan_and_is_repeatable() {
        let (_dir, fixture) = setup(200);
        let p = plan(6, 5, "read,grep,glob,edit,bash");
        let a = generate(&p, &fixture);
        let b = generate(&p, &fixture);
        assert_eq!(a.scenario, b.scenario);
        assert_eq!(a.scenario.turns.len(), 7);
        assert_eq!(a.calls, 30);
        for turn in &a.scenario.turns[..6] {
            assert_eq!(tool_uses(turn).len(), 5);
        }
        assert!(tool_uses(&a.scenario.turns[6]).is_empty());
        a.scenario.check().unwrap();
    }

    #[test]
    fn edits_follow_a_read_in_an_earlier_turn_and_match_once() {
        let (_dir, fixture) = setup(60);
        let g = generate(&plan(12, 4, "read,edit"), &fixture);
        let mut read_earlier: HashSet<String> = HashSet::new();
        let mut edits = 0;
        for turn in &g.scenario.turns {
            let mut read_now = Vec::new();
            for (name, input) in tool_uses(turn) {
                let path = input["file_path"].as_str().unwrap().to_string();
                if name == "Edit" {
                    assert!(read_earlier.contains(&path), "edit of unread {path}");
                    let text = std::fs::read_to_string(&path).unwrap();
                    let old = input["old_string"].as_str().unwrap();
                    assert_eq!(text.matches(old).count(), 1);
                    std::fs::write(
                        &path,
                        text.replace(old, input["new_string"].as_str().unwrap()),
                    )
                    .unwrap();
                    edits += 1;
                } else {
                    assert_eq!(name, "Read");
                    read_now.push(path);
                }
            }
            read_earlier.extend(read_now);
        }
        assert!(edits > 10, "only {edits} edits");
        assert!(
            g.edits_replaced >= 2,
            "the first turn has nothing to edit yet"
        );
    }

    #[test]
    fn paths_and_commands_name_real_files() {
        let (dir, fixture) = setup(120);
        let g = generate(&plan(10, 5, "grep,glob,bash"), &fixture);
        for turn in &g.scenario.turns {
            for (name, input) in tool_uses(turn) {
                if let Some(path) = input.get("path").and_then(Value::as_str) {
                    assert!(dir.path().join(path).is_dir(), "{name} path {path}");
                }
                if name == "Bash" {
                    let command = input["command"].as_str().unwrap();
                    let target = command.rsplit(' ').next().unwrap();
                    assert!(dir.path().join(target).exists(), "{command}");
                    assert!(crate::permissions::bash::is_read_only_command(command));
                }
            }
        }
    }
}
