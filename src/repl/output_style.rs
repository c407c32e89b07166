//! `/output-style`: the output styles, the one in force marked; `/output-style NAME` switches
//! to one from the next request on and keeps the choice in `.ouro/settings.local.json`
//! (`outputStyle`), as Claude Code keeps it in its local settings.

use std::fmt::Write as _;

use super::Repl;
use crate::app::{self, output_style};

impl Repl {
    pub(super) fn output_style(&mut self, name: Option<String>) -> String {
        let root = app::project_root(&self.cwd);
        let styles = output_style::all(&root, self.project_trusted());
        let current = self.engine.config().init_meta.output_style.clone();
        let Some(name) = name else {
            let mut out = String::from("Output styles (/output-style NAME switches):\n");
            for style in &styles {
                let mark = if style.name.eq_ignore_ascii_case(&current) {
                    "●"
                } else {
                    " "
                };
                let from = style
                    .source
                    .as_ref()
                    .map(|p| format!("  ({})", p.display()))
                    .unwrap_or_default();
                let _ = writeln!(out, "  {mark} {} — {}{from}", style.name, style.description);
            }
            return out.trim_end().to_string();
        };
        let Some(style) = output_style::find(&styles, &name) else {
            let names: Vec<&str> = styles.iter().map(|s| s.name.as_str()).collect();
            return format!(
                "There is no output style {name:?}; the styles are: {}. Add your own as a Markdown file in .claude/output-styles/ or ~/.claude/output-styles/.",
                names.join(", ")
            );
        };
        let mut options = self.options.clone();
        options.system_prompt.clone_from(&self.base_system_prompt);
        let (replace, append) = output_style::with_flags(style, &options);
        self.engine.set_output_style(&style.name, replace, append);
        let path = crate::settings::local_settings_path(&root);
        let value = serde_json::Value::String(style.name.clone());
        match crate::settings::set_path(&path, &["outputStyle"], value) {
            Ok(()) => format!(
                "Output style: {} from the next request on (saved to .ouro/settings.local.json).",
                style.name
            ),
            Err(e) => format!(
                "Output style: {} for this session; it could not be saved: {e}",
                style.name
            ),
        }
    }
}
