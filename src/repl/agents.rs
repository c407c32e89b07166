//! `/agents`: the sub-agents the model can launch, with where each is defined.

use super::Repl;
use crate::agents::definition;
use crate::app;

impl Repl {
    /// Whether the files this project brings (commands, agents) count: the user trusts it.
    pub(super) fn project_trusted(&self) -> bool {
        let root = app::project_root(&self.cwd);
        self.options.trust_project || crate::settings::trusted(&root)
    }

    /// The project's and the user's own slash commands (none with `--disable-slash-commands`).
    pub(super) fn custom_commands(&self) -> Vec<super::commands::ProjectCommand> {
        if self.options.disable_slash_commands {
            return Vec::new();
        }
        let mut commands =
            super::commands::load(&app::project_root(&self.cwd), self.project_trusted());
        for plugin in &self.plugins {
            for mut command in super::commands::load_dir(&plugin.root, &plugin.commands_dir()) {
                if commands.iter().any(|c| c.name == command.name) {
                    continue;
                }
                command.description = format!("{} (plugin {})", command.description, plugin.name)
                    .trim_start()
                    .to_string();
                commands.push(command);
            }
        }
        commands.sort_by(|a, b| a.name.cmp(&b.name));
        commands
    }

    pub(super) fn agents_list(&self) -> String {
        let root = app::project_root(&self.cwd);
        let trusted = self.project_trusted();
        let flag = self
            .options
            .agents
            .as_deref()
            .and_then(|json| definition::from_flag(json).ok())
            .unwrap_or_default();
        let defs = definition::load(&crate::settings::user_dirs("agents"), &root, trusted, flag);
        let style = self.ui.render.style();
        let mut out = String::from("Agents (the model launches them with the Agent tool):\n");
        for def in &defs {
            let tools = match &def.tools {
                None => "all tools".to_string(),
                Some(tools) => tools.join(", "),
            };
            let model = def.model.as_deref().unwrap_or("the session's model");
            out.push_str(&format!(
                "  {}  {}\n    {tools} · {model} · {}\n",
                style.bold(&def.name),
                def.description,
                style.dim(&def.source)
            ));
        }
        out.push_str(&style.dim(&format!(
            "Add one as a Markdown file with name, description, tools and model in its front \
             matter, in .ouro/agents/ or .claude/agents/ (or {}/agents/).",
            crate::settings::home_label()
        )));
        out
    }
}
