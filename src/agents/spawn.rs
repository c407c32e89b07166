//! Running one sub-agent: a child engine in this process with its own conversation, system
//! prompt and tools, under the session's permission engine (its rules and mode bind the child,
//! which can only have fewer tools), asking through the same asker, stopped by the same Ctrl-C.
//! Its events are passed up marked with the Agent call; what it spends is billed to the
//! session.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::mpsc::unbounded_channel;

use super::definition::AgentDef;
use crate::api::client::Client;
use crate::api::models;
use crate::engine::prompt::ProjectContext;
use crate::engine::{Conversation, Engine, EngineConfig};
use crate::event::{Event, ResultKind};
use crate::exec::hooks::Hooks;
use crate::exec::{Asker, Executor};
use crate::permissions::PermissionPolicy;
use crate::session::Transcript;
use crate::tools::{Progress, ToolContext, ToolOutput, Toolbox};

/// What every sub-agent of a session is built from.
pub struct Spawner {
    pub client: Client,
    /// The session's settings: model, caching, thinking, retries, budgets.
    pub config: EngineConfig,
    pub context: ProjectContext,
    /// The session's tools, without Agent: sub-agents do not spawn sub-agents.
    pub toolbox: Toolbox,
    pub policy: Arc<dyn PermissionPolicy>,
    pub asker: Arc<dyn Asker>,
    pub hooks: Arc<Hooks>,
    /// Auto mode's reviewer, shared with the session (the child's prompt is not the user's
    /// words, so the child adds none).
    pub reviewer: Arc<crate::exec::review::Reviewer>,
    /// Where children's transcripts go (`<session>/subagents/`), when the session keeps one.
    pub transcripts: Option<PathBuf>,
}

/// One delegated task.
pub struct Task {
    pub prompt: String,
    /// The model asked for in the call, over the definition's.
    pub model: Option<String>,
}

impl Spawner {
    /// The tools `def` may use, of those the session has.
    fn toolbox_for(&self, def: &AgentDef) -> Toolbox {
        if def.tools.is_none() && def.disallowed.is_empty() {
            return self.toolbox.clone();
        }
        Toolbox::from(
            self.toolbox
                .all()
                .into_iter()
                .filter(|t| {
                    def.tools
                        .as_ref()
                        .is_none_or(|names| names.iter().any(|n| n == t.name()))
                        && !def.disallowed.iter().any(|n| n == t.name())
                })
                .collect::<Vec<_>>(),
        )
    }

    /// Runs `task` as agent `def` to its end. The report is the child's final answer with a
    /// line of what it took.
    pub async fn run(
        &self,
        def: &AgentDef,
        task: &Task,
        parent: &ToolContext,
        progress: &Progress,
    ) -> ToolOutput {
        let started = Instant::now();
        let agent_id = format!("agent-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        // Its own record of what it read (Edit needs a Read first), starting where Bash is.
        let ctx = ToolContext {
            cwd: Arc::new(Mutex::new(parent.current_dir())),
            files: Arc::default(),
            cancel: parent.cancel.clone(),
            ..parent.clone()
        };
        let (tx, mut rx) = unbounded_channel();
        let executor = Executor::new(
            self.toolbox_for(def),
            ctx,
            self.policy.clone(),
            self.asker.clone(),
            self.hooks.clone(),
            tx.clone(),
        );
        executor.set_reviewer(self.reviewer.clone());
        let mut config = self.config.clone();
        config.system_prompt = Some(def.prompt.clone());
        config.append_system_prompt = None;
        config.json_schema = None;
        config.structured = None;
        config.partial_messages = false;
        config.subagent = true;
        // Parallel agents each get what was left when they started: together they may pass
        // the budget by what they spend at once, and the session stops at its next check.
        if parent.budget_left_usd.is_some() {
            config.max_budget_usd = parent.budget_left_usd;
        }
        if let Some(model) = task.model.as_ref().or(def.model.as_ref()) {
            config.model = models::resolve(model);
        }
        let transcript = self.transcripts.as_ref().and_then(|dir| {
            let path = dir.join(format!("{agent_id}.jsonl"));
            Transcript::open(&path, &agent_id, &config.cwd, &config.model)
                .map_err(|e| tracing::warn!("no transcript for sub-agent {agent_id}: {e}"))
                .ok()
        });
        let conversation = Conversation {
            session_id: agent_id.clone(),
            history: Vec::new(),
            transcript,
        };
        let mut engine = Engine::new(
            self.client.clone(),
            executor,
            config,
            self.context.clone(),
            conversation,
            tx,
        );
        let running = engine.run(&task.prompt, &parent.cancel);
        tokio::pin!(running);
        let result = loop {
            tokio::select! {
                result = &mut running => break result,
                Some(event) = rx.recv() => pass_up(progress, event),
            }
        };
        while let Ok(event) = rx.try_recv() {
            pass_up(progress, event);
        }
        let tokens = result.usage.context_tokens() + result.usage.output_tokens;
        let footer = format!(
            "agentId: {agent_id} ({}) · {} requests · {tokens} tokens · {:.1} s",
            def.name,
            result.num_turns,
            started.elapsed().as_secs_f64()
        );
        let mut output = match result.kind {
            ResultKind::Success => ToolOutput::ok(format!("{}\n\n{footer}", result.text.trim())),
            _ => ToolOutput::error(format!(
                "The {} agent did not finish: {}\n\n{footer}",
                def.name, result.text
            )),
        };
        output.spent = result
            .model_usage
            .into_iter()
            .map(|(model, (usage, _))| (model, usage))
            .collect();
        output
    }
}

/// The child's start and end stay inside the call; the rest is shown under it.
fn pass_up(progress: &Progress, event: Event) {
    if !matches!(event, Event::Init(_) | Event::Result(_)) {
        progress.forward(event);
    }
}
