//! The `Agent` tool, with Claude Code's name and input: the model delegates a task to a
//! sub-agent and gets its report as the tool_result.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::definition::AgentDef;
use super::spawn::{Spawner, Task};
use crate::permissions::Access;
use crate::tools::{
    PreparedCall, Progress, SpecTool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

pub const NAME: &str = "Agent";

/// The agent used when the call names none.
const DEFAULT_AGENT: &str = "general-purpose";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AgentInput {
    /// A short (3-5 word) description of the task.
    description: String,
    /// The task for the agent to perform.
    prompt: String,
    /// The type of agent to use; general-purpose when omitted.
    #[serde(default)]
    subagent_type: Option<String>,
    /// A model for this agent (for example haiku, sonnet or opus).
    #[serde(default)]
    model: Option<String>,
}

pub struct AgentTool {
    spawner: Arc<Spawner>,
    agents: Vec<AgentDef>,
    spec: ToolSpec,
}

impl AgentTool {
    pub fn new(spawner: Arc<Spawner>, agents: Vec<AgentDef>) -> AgentTool {
        let mut description = include_str!("../../tools/Agent.md").to_string();
        for agent in &agents {
            let tools = match &agent.tools {
                None => "all tools".to_string(),
                Some(tools) => tools.join(", "),
            };
            description.push_str(&format!(
                "- {}: {} (Tools: {tools})\n",
                agent.name, agent.description
            ));
        }
        AgentTool {
            spawner,
            agents,
            spec: ToolSpec::derived::<AgentInput>(NAME, description),
        }
    }
}

impl SpecTool for AgentTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn summarize(&self, input: &Value) -> Option<String> {
        input["description"].as_str().map(str::to_string)
    }

    fn prepare(&self, input: &Value, _ctx: &ToolContext) -> Result<Box<dyn PreparedCall>, String> {
        let input: AgentInput =
            serde_json::from_value(input.clone()).map_err(|e| format!("{NAME}: {e}"))?;
        let wanted = input.subagent_type.as_deref().unwrap_or(DEFAULT_AGENT);
        let Some(def) = self.agents.iter().find(|a| a.name == wanted) else {
            let known: Vec<&str> = self.agents.iter().map(|a| a.name.as_str()).collect();
            return Err(format!(
                "There is no agent \"{wanted}\". Use one of: {}.",
                known.join(", ")
            ));
        };
        Ok(Box::new(AgentCall {
            spawner: self.spawner.clone(),
            def: def.clone(),
            description: input.description,
            task: Task {
                prompt: input.prompt,
                model: input.model,
            },
        }))
    }
}

struct AgentCall {
    spawner: Arc<Spawner>,
    def: AgentDef,
    description: String,
    task: Task,
}

impl PreparedCall for AgentCall {
    /// The call itself touches nothing; each of the agent's own calls is judged as it comes.
    fn access(&self, _ctx: &ToolContext) -> Access {
        Access::None
    }

    fn is_read_only(&self) -> bool {
        self.def.is_read_only()
    }

    fn is_concurrency_safe(&self) -> bool {
        self.def.is_read_only()
    }

    fn is_destructive(&self) -> bool {
        false
    }

    fn max_result_chars(&self) -> usize {
        100_000
    }

    fn summary(&self) -> String {
        format!("{} ({})", self.description, self.def.name)
    }

    fn preview(&self, _ctx: &ToolContext) -> Option<String> {
        None
    }

    fn run<'a>(
        self: Box<Self>,
        ctx: &'a ToolContext,
        progress: &'a Progress,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        // Even when interrupted the report comes back, so what the agent spent is billed.
        async move { Ok(self.spawner.run(&self.def, &self.task, ctx, progress).await) }.boxed()
    }
}
