//! The Skill tool: the model loads a skill's instructions when it decides to use it.

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::Skill;
use crate::permissions::Access;
use crate::tools::{
    PreparedCall, Progress, SpecTool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

pub const NAME: &str = "Skill";

/// Files of a skill's folder listed for the model, at most.
const MAX_LISTED: usize = 50;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SkillInput {
    /// The name of the skill to load.
    skill: String,
}

pub struct SkillTool {
    skills: Vec<Skill>,
    spec: ToolSpec,
}

impl SkillTool {
    /// `None` when there are no skills: the tool is then not offered.
    pub fn new(skills: Vec<Skill>) -> Option<SkillTool> {
        if skills.is_empty() {
            return None;
        }
        let mut description = include_str!("../../tools/Skill.md").to_string();
        for skill in &skills {
            description.push_str(&format!("- {}: {}\n", skill.name, skill.description));
        }
        Some(SkillTool {
            skills,
            spec: ToolSpec::derived::<SkillInput>(NAME, description),
        })
    }
}

impl SpecTool for SkillTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn summarize(&self, input: &Value) -> Option<String> {
        input["skill"].as_str().map(str::to_string)
    }

    fn prepare(&self, input: &Value, _ctx: &ToolContext) -> Result<Box<dyn PreparedCall>, String> {
        let input: SkillInput =
            serde_json::from_value(input.clone()).map_err(|e| format!("{NAME}: {e}"))?;
        let Some(skill) = self.skills.iter().find(|s| s.name == input.skill) else {
            let known: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            return Err(format!(
                "There is no skill \"{}\". The skills are: {}.",
                input.skill,
                known.join(", ")
            ));
        };
        Ok(Box::new(SkillCall {
            skill: skill.clone(),
        }))
    }
}

struct SkillCall {
    skill: Skill,
}

impl PreparedCall for SkillCall {
    /// A skill is part of the user's or a trusted project's configuration, like instructions.
    fn access(&self, _ctx: &ToolContext) -> Access {
        Access::None
    }

    fn is_read_only(&self) -> bool {
        true
    }

    fn is_concurrency_safe(&self) -> bool {
        true
    }

    fn is_destructive(&self) -> bool {
        false
    }

    fn max_result_chars(&self) -> usize {
        60_000
    }

    fn summary(&self) -> String {
        self.skill.name.clone()
    }

    fn preview(&self, _ctx: &ToolContext) -> Option<String> {
        None
    }

    fn run<'a>(
        self: Box<Self>,
        _ctx: &'a ToolContext,
        _progress: &'a Progress,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        async move {
            let dir = self.skill.dir.clone();
            let path = dir.join("SKILL.md");
            let text = tokio::fs::read_to_string(&path)
                .await
                .map_err(|e| ToolError::io(format!("cannot read {}", path.display()), e))?;
            // A file that stopped being valid YAML since it loaded is given whole.
            let body = crate::frontmatter::split(&text).map_or(text.as_str(), |(_, body)| body);
            let files = tokio::task::spawn_blocking(move || listing(&dir))
                .await
                .unwrap_or_default();
            let mut out = format!(
                "Skill \"{}\" (base directory: {})\n\n{}",
                self.skill.name,
                self.skill.dir.display(),
                body.trim()
            );
            if !files.is_empty() {
                out.push_str("\n\nFiles of this skill:\n");
                for file in files {
                    out.push_str(&format!("- {file}\n"));
                }
            }
            Ok(ToolOutput::ok(out))
        }
        .boxed()
    }
}

/// The skill's other files, absolute, sorted.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut files: Vec<String> = ignore::WalkBuilder::new(dir)
        .max_depth(Some(4))
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
        .filter(|p| p.file_name().is_none_or(|n| n != "SKILL.md"))
        .map(|p| p.display().to_string())
        .take(MAX_LISTED)
        .collect();
    files.sort();
    files
}
