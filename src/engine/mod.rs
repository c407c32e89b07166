//! The query loop: owns the conversation, asks the model, hands tool calls to the executor and
//! emits every step as an `Event`.

mod call;
pub mod checkpoints;
pub mod compact;
mod history;
mod hooks;
pub mod prompt;
mod query;
pub mod reflect;
pub(crate) mod repair;
mod run;
pub mod structured;

use std::collections::BTreeMap;
use std::path::PathBuf;

use tokio::sync::mpsc::UnboundedSender;

use crate::api::body::Sent;
use crate::api::client::Client;
use crate::api::pricing;
use crate::api::reasoning::{Effort, ThinkingChoice};
use crate::api::retry::RetryPolicy;
use crate::api::types::{
    CacheControl, ContentBlock, EncodedTools, Message, SystemBlock, ToolDefinition, Usage,
};
use crate::event::Event;
use crate::exec::Executor;
use crate::session::Transcript;
use history::History;

pub(crate) const DEFAULT_MAX_TOKENS: u32 = 32_000;
/// How many times in a row a reply cut by max_tokens is continued.
pub(crate) const MAX_CONTINUATIONS: u32 = 3;

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub model: String,
    pub max_tokens: u32,
    /// API calls allowed per run.
    pub max_turns: Option<u32>,
    pub max_budget_usd: Option<f64>,
    /// Output tokens allowed per run.
    pub max_output_tokens: Option<u64>,
    /// Share of the context window after which the history is compacted before sending.
    pub auto_compact_threshold: f64,
    pub retry: RetryPolicy,
    /// Cache breakpoints on the tools, the system prompt and the conversation (settings
    /// `promptCaching`, or `DISABLE_PROMPT_CACHING=1`).
    pub prompt_caching: bool,
    /// `--thinking`: how the model may reason before answering.
    pub thinking: ThinkingChoice,
    /// `--effort`, sent to models that take it.
    pub effort: Option<Effort>,
    /// `--fallback-model`: where a call goes once the model stays overloaded.
    pub fallback_model: Option<String>,
    /// Server-side context editing (settings `contextEditing`), off unless asked for.
    pub context_editing: bool,
    /// `--betas`: beta features every request asks for (the `anthropic-beta` header).
    pub betas: Vec<String>,
    /// `--system-prompt`: replaces ouro's own instructions.
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`: added after them.
    pub append_system_prompt: Option<String>,
    /// `--include-partial-messages`: emit every raw stream event too.
    pub partial_messages: bool,
    /// `--json-schema`: the final answer must be JSON matching it.
    pub json_schema: Option<serde_json::Value>,
    /// With `json_schema`: what the StructuredOutput tool was given; an accepted answer ends
    /// the run.
    pub structured: Option<crate::tools::structured_output::Slot>,
    /// A sub-agent's engine: its end is SubagentStop, and the session's own events
    /// (SessionStart, UserPromptSubmit) are not its to fire.
    pub subagent: bool,
    pub cwd: PathBuf,
    /// What `system/init` reports beyond the engine's own facts.
    pub init_meta: crate::event::InitMeta,
}

impl EngineConfig {
    pub fn new(model: impl Into<String>, cwd: PathBuf) -> Self {
        EngineConfig {
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            max_turns: None,
            max_budget_usd: None,
            max_output_tokens: None,
            auto_compact_threshold: 0.85,
            retry: RetryPolicy::default(),
            prompt_caching: true,
            thinking: ThinkingChoice::Auto,
            effort: None,
            fallback_model: None,
            context_editing: false,
            betas: Vec::new(),
            system_prompt: None,
            append_system_prompt: None,
            partial_messages: false,
            json_schema: None,
            structured: None,
            subagent: false,
            cwd,
            init_meta: crate::event::InitMeta::default(),
        }
    }
}

/// Token and dollar totals for the whole session, per model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Costs {
    pub by_model: BTreeMap<String, (Usage, f64)>,
    /// Models used that have no pricing entry (their cost counts as 0).
    pub unpriced: Vec<String>,
}

impl Costs {
    /// Record one response; returns its cost in USD.
    pub fn record(&mut self, model: &str, usage: &Usage) -> f64 {
        let cost = match pricing::pricing(model) {
            Some(p) => p.cost(usage),
            None => {
                if !self.unpriced.iter().any(|m| m == model) {
                    self.unpriced.push(model.to_string());
                }
                0.0
            }
        };
        let entry = self.by_model.entry(model.to_string()).or_default();
        entry.0.add(usage);
        entry.1 += cost;
        cost
    }

    pub fn total_usd(&self) -> f64 {
        // An empty float sum is -0.0, which JSON would show as such.
        self.by_model.values().map(|(_, c)| c).sum::<f64>() + 0.0
    }
}

pub struct Engine {
    client: Client,
    executor: Executor,
    config: EngineConfig,
    context: prompt::ProjectContext,
    system: Vec<SystemBlock>,
    /// The executor's tools as the API takes them; rebuilt only when MCP servers come or go.
    tools: EncodedTools,
    /// The executor's tool generation `tools` was built from; MCP servers change it.
    tools_generation: u64,
    /// Whether the first run has waited for MCP servers still connecting (and SessionStart
    /// hooks have run).
    tools_settled: bool,
    /// The JSON size of `system` and `tools`, which every request carries.
    prompt_bytes: u64,
    history: History,
    transcript: Option<Transcript>,
    session_id: String,
    events: UnboundedSender<Event>,
    costs: Costs,
    /// The message that carried the newest cache breakpoint in the last request.
    cache_mark: Option<usize>,
    /// The id the next prompt's message goes by (an Agent SDK's `uuid`).
    prompt_id: Option<String>,
    /// What the user typed for the next prompt, when the prompt holds more (attached files,
    /// a command's template): only this is shown to auto mode's reviewer as the user's words.
    typed: Option<String>,
    /// The next prompt's message as given, when it holds more than text.
    prompt_blocks: Option<Vec<ContentBlock>>,
    /// The next prompt's echo, sent once its turn's init is out.
    replay: Option<Event>,
    /// A transcript or checkpoint write the disk refused: the run stops at its next gate.
    lost_write: Option<String>,
    /// Carried by the turn's first request: the prompt's checkpoint waits until that request
    /// is on its way rather than compete with sending it.
    request_sent: Option<Sent>,
}

/// The conversation an engine starts with: new and empty, or loaded by `--resume`.
pub struct Conversation {
    pub session_id: String,
    pub history: Vec<Message>,
    /// Where new messages are appended; `None` keeps the session in memory only.
    pub transcript: Option<Transcript>,
}

impl Engine {
    pub fn new(
        client: Client,
        executor: Executor,
        config: EngineConfig,
        context: prompt::ProjectContext,
        conversation: Conversation,
        events: UnboundedSender<Event>,
    ) -> Self {
        let system = system_blocks(&context, &config);
        let tools = encoded_tools(&executor, config.prompt_caching);
        let tools_generation = executor.toolbox().generation();
        let prompt_bytes = prompt_len(&system, &tools);
        Engine {
            client,
            executor,
            config,
            context,
            system,
            tools,
            tools_generation,
            tools_settled: false,
            prompt_bytes,
            history: History::new(conversation.history),
            transcript: conversation.transcript,
            session_id: conversation.session_id,
            events,
            costs: Costs::default(),
            cache_mark: None,
            prompt_id: None,
            typed: None,
            prompt_blocks: None,
            replay: None,
            lost_write: None,
            request_sent: None,
        }
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    pub fn history(&self) -> &[Message] {
        self.history.messages()
    }

    /// Tokens the next request will carry, as compaction judges them (the last measurement
    /// plus an estimate of what came since): (system prompt and tools, messages).
    pub fn context_use(&self) -> (u64, u64) {
        let prompt = history::estimate_tokens(self.prompt_bytes as usize);
        let total = self.estimated_context_tokens();
        (prompt, total.saturating_sub(prompt))
    }

    pub fn transcript_path(&self) -> Option<&std::path::Path> {
        self.transcript.as_ref().map(Transcript::path)
    }

    pub fn costs(&self) -> &Costs {
        &self.costs
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// Rebuilds the tool list when MCP servers came or went; `report` says so in an event.
    fn refresh_tools(&mut self, report: bool) {
        let generation = self.executor.toolbox().generation();
        if generation == self.tools_generation {
            return;
        }
        self.tools_generation = generation;
        let tools = encoded_tools(&self.executor, self.config.prompt_caching);
        let changed = tools.names() != self.tools.names();
        self.tools = tools;
        self.prompt_bytes = prompt_len(&self.system, &self.tools);
        if report && changed {
            self.emit(Event::ToolsChanged {
                tools: self.tools.names().to_vec(),
                mcp_servers: self.executor.toolbox().servers(),
            });
        }
    }

    /// Another output style from the next request on (`/output-style`): its name, and the
    /// system prompt it makes (`replace` stands in for ouro's own instructions, `append`
    /// follows them).
    pub fn set_output_style(
        &mut self,
        name: &str,
        replace: Option<String>,
        append: Option<String>,
    ) {
        name.clone_into(&mut self.config.init_meta.output_style);
        self.config.system_prompt = replace;
        self.config.append_system_prompt = append;
        self.system = system_blocks(&self.context, &self.config);
        self.prompt_bytes = prompt_len(&self.system, &self.tools);
    }

    pub fn set_model(&mut self, model: impl Into<String>) {
        self.config.model = model.into();
        self.system = system_blocks(&self.context, &self.config);
        self.prompt_bytes = prompt_len(&self.system, &self.tools);
    }

    /// Lets go of the transcript (and so of the conversation's lock), to hand it back with
    /// [`Engine::set_transcript`] or to load the same conversation afresh.
    /// Lets go of the conversation while this process waits for its next prompt (a
    /// long-lived stream-json process); the next [`Engine::run`] takes it back.
    pub fn let_go_of_transcript(&mut self) {
        if let Some(t) = self.transcript.as_mut()
            && let Err(e) = t.let_go()
        {
            tracing::warn!(error = %e, "could not let go of the conversation between turns");
        }
    }

    pub fn take_transcript(&mut self) -> Option<Transcript> {
        self.transcript.take()
    }

    pub fn set_transcript(&mut self, transcript: Option<Transcript>) {
        self.transcript = transcript;
    }

    /// Start a new, empty session (`/clear`).
    pub async fn reset(&mut self, session_id: String, transcript: Option<Transcript>) {
        // A turn cut short before its first request must not hold its prompt's checkpoint.
        self.request_sent = None;
        self.save_checkpoints();
        if let Some(checkpoints) = &self.executor.context().checkpoints {
            checkpoints.start_session(&session_id).await;
        }
        self.session_id = session_id;
        self.transcript = transcript;
        self.history.clear();
        self.cache_mark = None;
        self.costs = Costs::default();
    }

    fn emit(&self, event: Event) {
        let _ = self.events.send(event);
    }

    fn persist<F>(&mut self, write: F)
    where
        F: FnOnce(&mut Transcript) -> Result<(), crate::session::TranscriptError>,
    {
        if let Some(t) = self.transcript.as_mut()
            && let Err(e) = write(t)
        {
            tracing::error!(error = %e, "transcript write failed");
            self.lost_write.get_or_insert_with(|| e.to_string());
        }
    }
}

/// The JSON size of what every request carries besides the messages.
fn prompt_len(system: &[SystemBlock], tools: &EncodedTools) -> u64 {
    history::json_len(system) + tools.len()
}

/// The system prompt, with its cache breakpoint only when caching is on.
fn system_blocks(context: &prompt::ProjectContext, config: &EngineConfig) -> Vec<SystemBlock> {
    let mut blocks = prompt::system_prompt(
        context,
        &config.model,
        config.system_prompt.as_deref(),
        config.append_system_prompt.as_deref(),
    );
    if !config.prompt_caching {
        blocks.iter_mut().for_each(|b| b.cache_control = None);
    }
    blocks
}

/// Tool definitions sorted by name, with a cache breakpoint after the last, so the prompt
/// prefix stays byte-identical from request to request.
fn encoded_tools(executor: &Executor, caching: bool) -> EncodedTools {
    let all = executor.tools();
    let mut tools: Vec<ToolDefinition<'_>> = all
        .iter()
        .map(|t| ToolDefinition {
            name: t.name(),
            description: t.description(),
            input_schema: t.input_schema(),
            cache_control: None,
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(b.name));
    if caching && let Some(last) = tools.last_mut() {
        last.cache_control = Some(CacheControl::ephemeral());
    }
    EncodedTools::new(&tools)
}
