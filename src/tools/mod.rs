//! The `Tool` trait, its type-erased form used by the executor, and the built-in tool pool.

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::api::types::{ImageSource, Usage};
use crate::event::{Event, ToolDisplay};
use crate::permissions::{Access, Confinement, FileDenials};

pub mod bash;
pub mod diff;
pub mod edit;
pub(crate) mod file_state;
pub mod glob;
pub mod grep;
pub mod image;
pub(crate) mod memo;
pub mod paths;
pub mod pool;
pub mod read;
pub mod recall;
pub mod structured_output;
pub mod todo;
pub mod toolbox;
pub mod write;

pub use file_state::FileStates;
pub use toolbox::{ServerStatus, ToolSource, Toolbox};

/// What a tool call produced. `content` is the text of the `tool_result` the model sees.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    /// Pictures for the model (an MCP screenshot, an image file Read), after the text.
    pub images: Vec<ImageSource>,
    /// Tokens a sub-agent spent on the API for this call, per model: billed to the session.
    pub spent: Vec<(String, Usage)>,
    /// Facts for displays (lines read, a diff, an exit code); the model never sees them.
    pub display: Option<ToolDisplay>,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
            spent: Vec::new(),
            display: None,
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
            spent: Vec::new(),
            display: None,
        }
    }

    pub fn with_images(mut self, images: Vec<ImageSource>) -> Self {
        self.images = images;
        self
    }

    pub(crate) fn with_display(mut self, display: ToolDisplay) -> Self {
        self.display = Some(display);
        self
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The model asked for something that cannot be done; it can fix its call and retry.
    #[error("{0}")]
    Invalid(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the call was cancelled by the user")]
    Cancelled,
}

impl ToolError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ToolError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Session state every tool call can see.
#[derive(Clone)]
pub struct ToolContext {
    /// The project root: where ouro was started.
    pub project_root: PathBuf,
    /// Where the session started (inside the project); Bash returns here when a `cd` left
    /// the project.
    pub(crate) start_dir: PathBuf,
    /// Bash's working directory; a `cd` in one call carries over to the next.
    pub cwd: Arc<Mutex<PathBuf>>,
    /// What was read, for the stale-read checks of Edit and Write.
    pub files: Arc<FileStates>,
    /// Cancelled when the user aborts the turn.
    pub cancel: CancellationToken,
    /// Names of secret-looking environment variables the user allowed Bash to see.
    pub env_passthrough: Arc<Vec<String>>,
    /// How the OS sandbox confines a shell command (the session's settings).
    pub sandbox: Arc<bash::SandboxConfig>,
    /// How much this call was allowed to do; set by the permission phase for each call.
    pub confinement: Confinement,
    /// Files the user's deny rules forbid reading or editing: walks skip the first, and
    /// Bash's sandbox masks both.
    pub file_denials: FileDenials,
    /// What the run may still spend (USD) as this batch starts, under `--max-budget-usd`: a
    /// sub-agent gets no more.
    pub budget_left_usd: Option<f64>,
    /// Snapshots the project before each call that may write; `None` when the session keeps no
    /// checkpoints.
    pub checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
}

impl ToolContext {
    pub fn new(project_root: PathBuf) -> Self {
        ToolContext {
            cwd: Arc::new(Mutex::new(project_root.clone())),
            start_dir: project_root.clone(),
            project_root,
            files: Arc::new(FileStates::default()),
            cancel: CancellationToken::new(),
            env_passthrough: Arc::new(Vec::new()),
            sandbox: Arc::new(bash::SandboxConfig::default()),
            confinement: Confinement::default(),
            file_denials: FileDenials::default(),
            budget_left_usd: None,
            checkpoints: None,
        }
    }

    /// The session starts in `dir` (the directory ouro was started in, below the root).
    pub fn start_in(&mut self, dir: PathBuf) {
        self.set_current_dir(dir.clone());
        self.start_dir = dir;
    }

    /// Bash's current working directory.
    pub fn current_dir(&self) -> PathBuf {
        crate::sys::sync::lock(&self.cwd).clone()
    }

    pub fn set_current_dir(&self, dir: PathBuf) {
        *crate::sys::sync::lock(&self.cwd) = dir;
    }
}

/// Where a running tool reports partial output.
#[derive(Clone)]
pub struct Progress {
    id: String,
    tx: Option<UnboundedSender<Event>>,
}

impl Progress {
    pub fn new(id: impl Into<String>, tx: Option<UnboundedSender<Event>>) -> Self {
        Progress { id: id.into(), tx }
    }

    /// A sink that drops everything (tests, benchmarks).
    pub fn none() -> Self {
        Progress {
            id: String::new(),
            tx: None,
        }
    }

    /// Passes on an event of a sub-agent this call runs.
    pub fn forward(&self, event: Event) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Event::Child {
                parent_tool_use_id: self.id.clone(),
                event: Box::new(event),
            });
        }
    }

    pub fn emit(&self, chunk: impl Into<String>) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Event::ToolProgress {
                id: self.id.clone(),
                chunk: chunk.into(),
            });
        }
    }
}

/// A built-in tool. The defaults fail closed: a tool is neither read-only nor safe to run in
/// parallel unless it says so for the given input.
pub trait Tool: Send + Sync + 'static {
    type Input: DeserializeOwned + JsonSchema + Send + Sync + 'static;

    /// The name the model calls the tool by; rules and hooks match it too.
    const NAME: &'static str;

    /// The model-facing description (from `tools/<Name>.md`).
    fn description(&self) -> &'static str;

    /// Semantic checks after the schema passed (file exists, old_string present, ...).
    /// An `Err` is shown to the model as an `is_error` tool_result.
    fn validate(&self, _input: &Self::Input, _ctx: &ToolContext) -> Result<(), String> {
        Ok(())
    }

    /// What this call would touch, for the permission engine.
    fn access(&self, input: &Self::Input, ctx: &ToolContext) -> Access;

    fn is_read_only(&self, _input: &Self::Input) -> bool {
        false
    }

    fn is_concurrency_safe(&self, _input: &Self::Input) -> bool {
        false
    }

    fn is_destructive(&self, _input: &Self::Input) -> bool {
        false
    }

    /// Results longer than this are cut before the model sees them.
    fn max_result_chars(&self) -> usize {
        30_000
    }

    /// The call's key argument, for one-line displays (`Read src/main.rs`).
    fn summary(&self, input: &Self::Input) -> String;

    /// What the call would change, shown before it is approved (a diff). Must not change
    /// anything: it runs before permission is given.
    fn preview(&self, _input: &Self::Input, _ctx: &ToolContext) -> Option<String> {
        None
    }

    /// Phase 5: the only place a tool may have side effects.
    fn call(
        &self,
        input: Self::Input,
        ctx: &ToolContext,
        progress: &Progress,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// A tool with its input type erased, as the executor holds it.
pub trait DynTool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn input_schema(&self) -> &Value;
    /// The one-line summary of a call with this input, if the input is valid (for displays of
    /// calls that are not running, such as a resumed conversation's).
    fn summarize(&self, input: &Value) -> Option<String>;
    /// Phase 1: the raw input against the JSON Schema; the error lists every failing path.
    fn check_schema(&self, input: &Value) -> Result<(), String>;
    /// Phase 2: typed input plus the tool's own semantic checks.
    fn prepare(&self, input: &Value, ctx: &ToolContext) -> Result<Box<dyn PreparedCall>, String>;
}

/// A call whose input passed phases 1 and 2.
pub trait PreparedCall: Send + Sync {
    fn access(&self, ctx: &ToolContext) -> Access;
    fn is_read_only(&self) -> bool;
    fn is_concurrency_safe(&self) -> bool;
    fn is_destructive(&self) -> bool;
    fn max_result_chars(&self) -> usize;
    fn summary(&self) -> String;
    fn preview(&self, ctx: &ToolContext) -> Option<String>;
    fn run<'a>(
        self: Box<Self>,
        ctx: &'a ToolContext,
        progress: &'a Progress,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

struct Erased<T: Tool> {
    tool: Arc<T>,
    schema: Value,
    /// Compiled on the first call: start-up needs only the schema, for the request.
    validator: OnceLock<jsonschema::Validator>,
}

/// Compiles a schema known to be valid (derived from a type, or checked before).
fn compile(schema: &Value) -> jsonschema::Validator {
    jsonschema::validator_for(schema).expect("a derived or checked JSON Schema is valid")
}

struct Prepared<T: Tool> {
    tool: Arc<T>,
    input: T::Input,
}

/// Phase 1 for any tool: the input against its schema; the error lists every failing path.
pub(crate) fn check_against(
    validator: &jsonschema::Validator,
    tool: &str,
    input: &Value,
) -> Result<(), String> {
    let problems: Vec<String> = validator
        .iter_errors(input)
        .map(|e| {
            let path = e.instance_path().to_string();
            let at = if path.is_empty() {
                "(root)".to_string()
            } else {
                path
            };
            format!("- {at}: {e}")
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{tool} was called with input that does not match its schema:\n{}",
            problems.join("\n")
        ))
    }
}

/// A tool's face to the model when it is not a typed built-in (Agent, Skill, an MCP tool):
/// its name, description and input schema, with the schema compiled for phase 1.
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub schema: Value,
    validator: OnceLock<jsonschema::Validator>,
}

impl ToolSpec {
    /// `Err` says why the schema is not valid JSON Schema.
    pub fn new(name: String, description: String, schema: Value) -> Result<ToolSpec, String> {
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| format!("its input schema is not valid JSON Schema ({e})"))?;
        Ok(ToolSpec {
            name,
            description,
            schema,
            validator: OnceLock::from(validator),
        })
    }

    /// With the schema derived from `T` (valid by construction: compiled on first use).
    pub fn derived<T: JsonSchema>(name: &str, description: String) -> ToolSpec {
        ToolSpec {
            name: name.to_string(),
            description,
            schema: schemars::schema_for!(T).to_value(),
            validator: OnceLock::new(),
        }
    }

    /// Phase 1 for this tool.
    pub fn check(&self, input: &Value) -> Result<(), String> {
        let validator = self.validator.get_or_init(|| compile(&self.schema));
        check_against(validator, &self.name, input)
    }
}

/// A tool described by a [`ToolSpec`] rather than typed input: the spec answers for its name,
/// description and schema check, the tool for the rest.
pub trait SpecTool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    fn summarize(&self, input: &Value) -> Option<String>;
    fn prepare(&self, input: &Value, ctx: &ToolContext) -> Result<Box<dyn PreparedCall>, String>;
}

impl<T: SpecTool> DynTool for T {
    fn name(&self) -> &str {
        &self.spec().name
    }

    fn description(&self) -> &str {
        &self.spec().description
    }

    fn input_schema(&self) -> &Value {
        &self.spec().schema
    }

    fn summarize(&self, input: &Value) -> Option<String> {
        SpecTool::summarize(self, input)
    }

    fn check_schema(&self, input: &Value) -> Result<(), String> {
        self.spec().check(input)
    }

    fn prepare(&self, input: &Value, ctx: &ToolContext) -> Result<Box<dyn PreparedCall>, String> {
        SpecTool::prepare(self, input, ctx)
    }
}

/// Wrap a typed tool for the pool. Its derived schema becomes a validator on the first call
/// (that panics only if the schema is invalid, a programming error caught by the tests of every
/// built-in tool).
pub fn erase<T: Tool>(tool: T) -> Arc<dyn DynTool> {
    let schema = schemars::schema_for!(T::Input).to_value();
    Arc::new(Erased {
        tool: Arc::new(tool),
        schema,
        validator: OnceLock::new(),
    })
}

impl<T: Tool> DynTool for Erased<T> {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        self.tool.description()
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn summarize(&self, input: &Value) -> Option<String> {
        let typed: T::Input = serde_json::from_value(input.clone()).ok()?;
        Some(self.tool.summary(&typed))
    }

    fn check_schema(&self, input: &Value) -> Result<(), String> {
        let validator = self.validator.get_or_init(|| compile(&self.schema));
        check_against(validator, T::NAME, input)
    }

    fn prepare(&self, input: &Value, ctx: &ToolContext) -> Result<Box<dyn PreparedCall>, String> {
        let typed: T::Input = serde_json::from_value(input.clone())
            .map_err(|e| format!("{} input is invalid: {e}", T::NAME))?;
        self.tool.validate(&typed, ctx)?;
        Ok(Box::new(Prepared {
            tool: self.tool.clone(),
            input: typed,
        }))
    }
}

impl<T: Tool> PreparedCall for Prepared<T> {
    fn access(&self, ctx: &ToolContext) -> Access {
        self.tool.access(&self.input, ctx)
    }

    fn is_read_only(&self) -> bool {
        self.tool.is_read_only(&self.input)
    }

    fn is_concurrency_safe(&self) -> bool {
        self.tool.is_concurrency_safe(&self.input)
    }

    fn is_destructive(&self) -> bool {
        self.tool.is_destructive(&self.input)
    }

    fn max_result_chars(&self) -> usize {
        self.tool.max_result_chars()
    }

    fn summary(&self) -> String {
        self.tool.summary(&self.input)
    }

    fn preview(&self, ctx: &ToolContext) -> Option<String> {
        self.tool.preview(&self.input, ctx)
    }

    fn run<'a>(
        self: Box<Self>,
        ctx: &'a ToolContext,
        progress: &'a Progress,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let Prepared { tool, input } = *self;
        Box::pin(async move { tool.call(input, ctx, progress).await })
    }
}
