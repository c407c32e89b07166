//! Slash commands: the built-in ones, the project's `.ouro/commands/*.md`, and `/help`.
//! Only `/compact` and project commands talk to the model; the others work offline.

use tokio_util::sync::CancellationToken;

use super::Repl;
use super::commands::ProjectCommand;
use super::complete::Command;
use super::style::Style;
use crate::api::pricing;
use crate::brain;
use crate::engine::Costs;
use crate::session::{self, Transcript};

/// Built-in commands: name, argument hint, what it does.
const BUILTIN: &[(&str, &str, &str)] = &[
    ("help", "", "List the commands"),
    (
        "clear",
        "",
        "Start a new session (the current one stays on disk)",
    ),
    (
        "compact",
        " [focus]",
        "Summarise the conversation so far to free context",
    ),
    ("cost", "", "Tokens and USD per model for this session"),
    (
        "model",
        " [name]",
        "Show the model, or switch to another one",
    ),
    (
        "resume",
        " [id|name]",
        "List recent sessions of this directory, or load one",
    ),
    (
        "rename",
        " <name>",
        "Name this session (`--resume NAME` finds it)",
    ),
    (
        "permissions",
        "",
        "The permission mode and every effective rule",
    ),
    (
        "brain",
        " [slug]",
        "List the brains, or switch to an ouro@ one",
    ),
    (
        "status",
        "",
        "Session, model, permission mode, project and transcript",
    ),
    ("context", "", "How full the context window is, by part"),
    (
        "config",
        "",
        "The settings in force and the files they came from",
    ),
    (
        "doctor",
        "",
        "Check the key, the API, the sandbox, settings and git",
    ),
    (
        "export",
        " [file]",
        "Write the conversation to a Markdown file",
    ),
    (
        "memory",
        "",
        "Edit the project's memory file (OURO.md) in $EDITOR; `/memory graph [QUERY]` shows the knowledge graph",
    ),
    ("init", "", "Have the model write OURO.md for this project"),
    (
        "review",
        " [focus]",
        "Have the model review the current git diff",
    ),
    (
        "add-dir",
        " <path>",
        "Let the session work in one more directory",
    ),
    ("todos", "", "The task list the model keeps"),
    (
        "rewind",
        "",
        "Go back to before a prompt: code, conversation or both (Esc Esc)",
    ),
    (
        "hooks",
        "",
        "The configured hooks and where each comes from",
    ),
    ("agents", "", "The sub-agents the model can use"),
    (
        "plugin",
        " [enable|disable NAME@MARKETPLACE | marketplace add PATH]",
        "The plugins and marketplaces; turn a plugin on or off",
    ),
    (
        "output-style",
        " [name]",
        "List the output styles, or switch to one",
    ),
    ("mcp", "", "MCP servers: status, tools, prompts, last error"),
    ("exit", "", "Quit (Ctrl-D works too)"),
];

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Slash {
    Help,
    Clear,
    Compact(Option<String>),
    Cost,
    Model(Option<String>),
    Resume(Option<String>),
    Rename(Option<String>),
    Permissions,
    Brain(Option<String>),
    Status,
    Context,
    Config,
    Doctor,
    Export(Option<String>),
    /// `/memory` edits OURO.md; `/memory graph [QUERY]` shows the knowledge graph.
    Memory(Option<String>),
    Init,
    Review(Option<String>),
    AddDir(Option<String>),
    Todos,
    Rewind,
    Hooks,
    Agents,
    OutputStyle(Option<String>),
    Plugin(Option<String>),
    Mcp,
    /// A server's prompt (`mcp__<server>__<prompt>`) with the typed arguments.
    McpPrompt(String, String),
    Exit,
    Project(ProjectCommand, String),
    Unknown(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    Continue,
    Exit,
}

/// The command a line names, or `None` when the line is a message for the model. A first word
/// with a second slash (`/usr/bin is slow`) is a path, hence a message.
pub(super) fn parse(line: &str, project: Vec<ProjectCommand>) -> Option<Slash> {
    let rest = line.trim().strip_prefix('/')?;
    let (name, argument) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let argument = argument.trim();
    let optional = (!argument.is_empty()).then(|| argument.to_string());
    Some(match name {
        "help" => Slash::Help,
        "clear" => Slash::Clear,
        "compact" => Slash::Compact(optional),
        "cost" => Slash::Cost,
        "model" => Slash::Model(optional),
        "resume" => Slash::Resume(optional),
        "rename" => Slash::Rename(optional),
        "permissions" => Slash::Permissions,
        "brain" => Slash::Brain(optional),
        "status" => Slash::Status,
        "context" => Slash::Context,
        "config" => Slash::Config,
        "doctor" => Slash::Doctor,
        "export" => Slash::Export(optional),
        "memory" => Slash::Memory(optional),
        "init" => Slash::Init,
        "review" => Slash::Review(optional),
        "add-dir" => Slash::AddDir(optional),
        "mcp" => Slash::Mcp,
        "todos" => Slash::Todos,
        "rewind" | "checkpoint" => Slash::Rewind,
        "hooks" => Slash::Hooks,
        "agents" => Slash::Agents,
        "output-style" => Slash::OutputStyle(optional),
        "plugin" | "plugins" => Slash::Plugin(optional),
        "exit" | "quit" => Slash::Exit,
        other => match project.into_iter().find(|c| c.name == other) {
            Some(command) => Slash::Project(command, argument.to_string()),
            None if other.starts_with("mcp__") => {
                Slash::McpPrompt(other.to_string(), argument.to_string())
            }
            None => Slash::Unknown(other.to_string()),
        },
    })
}

/// Every command with a line on what it does.
/// One line for a command that does not exist: the closest one, if one is close.
fn unknown_command(name: &str, project: &[ProjectCommand]) -> String {
    let names = BUILTIN
        .iter()
        .map(|(n, _, _)| n.to_string())
        .chain(project.iter().map(|c| c.name.clone()));
    let closest = names
        .map(|n| (crate::text::edit_distance(name, &n), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 3))
        .min();
    match closest {
        Some((_, n)) => {
            format!("Unknown command /{name}. Did you mean /{n}? (/help lists them all)")
        }
        None => format!("Unknown command /{name}; /help lists the commands."),
    }
}

pub(super) fn help(style: Style, project: &[ProjectCommand]) -> String {
    let mut out = String::from("Commands:\n");
    for (name, argument, what) in BUILTIN {
        let left = format!("/{name}{argument}");
        out.push_str(&format!(
            "  {}  {}\n",
            style.bold(&format!("{left:<18}")),
            what
        ));
    }
    let project: Vec<&ProjectCommand> = project.iter().filter(|c| !is_builtin(&c.name)).collect();
    if !project.is_empty() {
        out.push_str("Project commands (.ouro/commands):\n");
        for c in project {
            let left = format!("/{} [args]", c.name);
            out.push_str(&format!(
                "  {}  {}\n",
                style.bold(&format!("{left:<18}")),
                c.description
            ));
        }
    }
    out.push_str(
        "End a line with \\ to continue on the next one; Esc or Ctrl-C interrupts a turn.",
    );
    out
}

fn is_builtin(name: &str) -> bool {
    BUILTIN.iter().any(|(n, _, _)| *n == name)
}

/// The commands offered as `/` is typed, each with what it does.
pub(super) fn completions(project: &[ProjectCommand]) -> Vec<Command> {
    BUILTIN
        .iter()
        .map(|(name, argument, about)| Command {
            name: format!("/{name}"),
            about: match argument.trim() {
                "" => about.to_string(),
                argument => format!("{argument}  {about}"),
            },
        })
        .chain(
            project
                .iter()
                .filter(|c| !is_builtin(&c.name))
                .map(|c| Command {
                    name: format!("/{}", c.name),
                    about: c.description.clone(),
                }),
        )
        .collect()
}

/// `/cost`: per model, tokens in (with cache reads and writes) and out, and USD.
pub(super) fn cost_report(costs: &Costs) -> String {
    if costs.by_model.is_empty() {
        return "No API calls in this session yet: 0 tokens, $0.0000.".to_string();
    }
    let mut out = String::from("Session cost:\n");
    for (model, (usage, usd)) in &costs.by_model {
        out.push_str(&format!(
            "  {model}: {} in (+{} cache read, +{} cache write) / {} out · ${usd:.4}\n",
            usage.input_tokens,
            usage.cache_read_input_tokens,
            usage.cache_creation_input_tokens,
            usage.output_tokens
        ));
    }
    if costs.by_model.len() > 1 {
        out.push_str(&format!("  total: ${:.4}\n", costs.total_usd()));
    }
    if !costs.unpriced.is_empty() {
        out.push_str(&format!(
            "  ouro has no price for {}, so it counts as $0.\n",
            costs.unpriced.join(", ")
        ));
    }
    out
}

/// `/cost`'s line for auto mode's reviewer, once it has made a request (ouro's own).
fn reviewer_cost(reviewer: &crate::exec::review::Reviewer) -> String {
    let (requests, usage, usd) = reviewer.spent();
    if requests == 0 {
        return String::new();
    }
    format!(
        "  auto mode reviewer ({}): {requests} requests, {} in (+{} cache read, +{} cache write) / {} out · ${usd:.4} (not in the total above)\n",
        reviewer.model(),
        usage.input_tokens,
        usage.cache_read_input_tokens,
        usage.cache_creation_input_tokens,
        usage.output_tokens
    )
}

impl Repl {
    pub(super) async fn slash(&mut self, command: Slash) -> Flow {
        let style = self.ui.render.style();
        match command {
            Slash::Help => {
                let text = help(style, &self.custom_commands());
                self.ui.render.print(&text);
            }
            Slash::Clear => self.clear().await,
            Slash::Compact(focus) => self.compact(focus.as_deref()).await,
            Slash::Cost => {
                self.settle_reflect(true).await;
                let mut text = cost_report(self.engine.costs());
                if let Some(reviewer) = self.engine.executor().reviewer() {
                    text.push_str(&reviewer_cost(reviewer));
                }
                self.ui.render.print(&text);
            }
            Slash::Model(name) => self.model(name),
            Slash::Resume(None) => self.pick_session().await,
            Slash::Resume(Some(id)) => {
                self.settle_reflect(true).await;
                self.resume(&id);
            }
            Slash::Rename(name) => self.rename(name.as_deref()),
            Slash::Permissions => {
                let text = self.ui.permissions.describe();
                self.ui.render.print(text.trim_end());
            }
            Slash::Brain(slug) => self.brain(slug.as_deref()),
            Slash::Status => self.status(),
            Slash::Context => self.context(),
            Slash::Config => self.config(),
            Slash::Doctor => self.doctor().await,
            Slash::Export(file) => self.export(file.as_deref()),
            Slash::Memory(None) => self.memory(),
            Slash::Memory(Some(rest)) => match rest.split_once(char::is_whitespace) {
                Some(("graph", query)) => self.memory_graph(query.trim()).await,
                None if rest == "graph" => self.memory_graph("").await,
                _ => self.fail(
                    "/memory takes no argument, or `graph [QUERY]` to show the knowledge graph.",
                ),
            },
            Slash::Init => self.prompt(super::workspace::INIT_PROMPT).await,
            Slash::Review(focus) => {
                let mut prompt = super::workspace::REVIEW_PROMPT.to_string();
                if let Some(focus) = focus {
                    prompt.push_str(&format!(" Focus on: {focus}"));
                }
                self.prompt(&prompt).await;
            }
            Slash::AddDir(dir) => self.add_dir(dir.as_deref()),
            Slash::Mcp => self.mcp_status().await,
            Slash::Todos => {
                let text = match crate::tools::todo::latest(self.engine.history()) {
                    Some(todos) => super::render::todos::checklist(&todos, style),
                    None => "No task list yet: the model makes one for work of several steps."
                        .to_string(),
                };
                self.ui.render.print(&text);
            }
            Slash::Rewind => self.rewind().await,
            Slash::Hooks => {
                let text = self.hooks_list();
                self.ui.render.print(&text);
            }
            Slash::OutputStyle(name) => {
                let text = self.output_style(name);
                self.ui.render.print(&text);
            }
            Slash::Plugin(argument) => {
                let text = self.plugin(argument);
                self.ui.render.print(&text);
            }
            Slash::Agents => {
                let text = self.agents_list();
                self.ui.render.print(&text);
            }
            Slash::McpPrompt(command, arguments) => self.mcp_prompt(&command, &arguments).await,
            Slash::Exit => return Flow::Exit,
            Slash::Project(command, arguments) => {
                let prompt = command.expand(&arguments);
                let typed = format!("/{} {arguments}", command.name);
                self.prompt_as(&prompt, typed.trim_end()).await;
            }
            Slash::Unknown(name) => {
                let project = self.custom_commands();
                let text = unknown_command(&name, &project);
                self.ui.render.print(&text);
            }
        }
        Flow::Continue
    }

    async fn clear(&mut self) {
        self.settle_reflect(true).await;
        self.engine.end_session("clear").await;
        let id = session::new_session_id();
        let model = self.engine.config().model.clone();
        let transcript = match session::project_dir(&self.cwd) {
            Some(dir) => {
                match Transcript::open(&dir.join(format!("{id}.jsonl")), &id, &self.cwd, &model) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        self.fail(&format!("The new session will not be saved: {e}"));
                        None
                    }
                }
            }
            None => None,
        };
        let previous = self.engine.session_id().to_string();
        self.engine.reset(id.clone(), transcript).await;
        self.ui.render.print(&format!(
            "Started a new session {id}. The previous one is kept: /resume {previous}"
        ));
    }

    async fn compact(&mut self, focus: Option<&str>) {
        let cancel = CancellationToken::new();
        let result = self
            .ui
            .drive(self.engine.compact_now(focus, &cancel), &cancel)
            .await;
        if let Err(e) = result {
            self.fail(&format!("Nothing was compacted: {e}."));
        }
    }

    fn model(&mut self, name: Option<String>) {
        let Some(name) = name.map(|n| crate::api::models::resolve(&n)) else {
            let text = format!(
                "Model: {}. Switch with /model <name>: an id, or opus, sonnet or haiku for the newest of each.",
                self.engine.config().model
            );
            self.ui.render.print(&text);
            return;
        };
        self.engine.set_model(name.clone());
        self.ui.render.set_model(&name);
        let mut text = format!("Model set to {name}.");
        if pricing::pricing(&name).is_none() {
            text.push_str(" ouro has no price for it, so its cost will show as unknown.");
        }
        self.options.model = Some(name);
        // The latest choice wins when `/resume` rebuilds the session.
        self.brain = None;
        self.ui.render.print(&text);
    }

    /// An `ouro@` brain runs on this engine and only picks the model, so switching to one
    /// works here; a `claude@` brain runs the claude CLI, which only print mode drives.
    fn brain(&mut self, slug: Option<&str>) {
        let Some(slug) = slug else {
            let current = match &self.brain {
                Some(slug) => format!("This session runs on the brain {slug}."),
                None => format!(
                    "This session runs on ouro's engine with {}.",
                    self.engine.config().model
                ),
            };
            let text = format!(
                "{}{current}\nSwitch with /brain <slug> (ouro@ slugs; claude@ ones need print mode).",
                brain::catalogue::catalogue()
            );
            self.ui.render.print(&text);
            return;
        };
        match brain::catalogue::ouro_model(slug) {
            Ok(model) => {
                self.engine.set_model(model);
                self.ui.render.set_model(model);
                self.brain = Some(slug.to_string());
                self.options.model = Some(model.to_string());
                let text = format!("Switched to the brain {slug} (model {model}).");
                self.ui.render.print(&text);
            }
            Err(e) => self.fail(&format!("{e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::types::Usage;

    #[test]
    fn lines_are_parsed_into_commands() {
        assert_eq!(parse("/help", vec![]), Some(Slash::Help));
        assert_eq!(parse("  /cost  ", vec![]), Some(Slash::Cost));
        assert_eq!(
            parse("/compact keep the API notes", vec![]),
            Some(Slash::Compact(Some("keep the API notes".into())))
        );
        assert_eq!(parse("/model", vec![]), Some(Slash::Model(None)));
        assert_eq!(parse("/quit", vec![]), Some(Slash::Exit));
        assert_eq!(
            parse("/nope x", vec![]),
            Some(Slash::Unknown("nope".into()))
        );
        assert_eq!(parse("hello /help", vec![]), None);
        assert_eq!(parse("/usr/bin is slow", vec![]), None);
        assert_eq!(parse("/", vec![]), None);
    }

    #[test]
    fn project_commands_are_found_and_builtins_win() {
        let fix = ProjectCommand::parse("fix".into(), "Fix $ARGUMENTS").unwrap();
        let help_override = ProjectCommand::parse("help".into(), "mine").unwrap();
        let project = vec![fix.clone(), help_override];
        assert_eq!(
            parse("/fix issue 7", project.clone()),
            Some(Slash::Project(fix, "issue 7".into()))
        );
        assert_eq!(parse("/help", project.clone()), Some(Slash::Help));
        let text = help(Style::new(false), &project);
        assert!(text.contains("/fix [args]"), "{text}");
        assert!(!text.contains("mine"), "{text}");
        let offered = completions(&project);
        assert!(offered.iter().any(|c| c.name == "/fix"));
        assert_eq!(
            offered.iter().filter(|c| c.name == "/help").count(),
            1,
            "a project command a built-in shadows is not offered"
        );
    }

    #[test]
    fn an_unknown_command_is_one_line_naming_the_closest() {
        assert_eq!(
            unknown_command("cots", &[]),
            "Unknown command /cost. Did you mean /cost? (/help lists them all)"
                .replace("/cost.", "/cots.")
        );
        assert_eq!(
            unknown_command("xyzzy", &[]),
            "Unknown command /xyzzy; /help lists the commands."
        );
    }

    #[test]
    fn help_lists_every_builtin() {
        let text = help(Style::new(false), &[]);
        for (name, _, _) in BUILTIN {
            assert!(
                text.contains(&format!("/{name}")),
                "{name} missing from {text}"
            );
        }
    }

    #[test]
    fn cost_report_shows_tokens_and_dollars_per_model() {
        let mut costs = Costs::default();
        assert!(cost_report(&costs).contains("$0.0000"));
        costs.record(
            "claude-sonnet-4-5",
            &Usage {
                input_tokens: 1000,
                output_tokens: 200,
                ..Usage::default()
            },
        );
        let text = cost_report(&costs);
        assert!(
            text.contains(
                "claude-sonnet-4-5: 1000 in (+0 cache read, +0 cache write) / 200 out · $0.0060"
            ),
            "{text}"
        );
        assert!(!text.contains("total"), "{text}");
        costs.record("mystery-model", &Usage::default());
        let text = cost_report(&costs);
        assert!(text.contains("total: $0.0060"), "{text}");
        assert!(text.contains("no price for mystery-model"), "{text}");
    }
}
