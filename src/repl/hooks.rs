//! `/hooks`: every configured hook, by event, with the settings file it comes from.

use std::fmt::Write as _;

use super::Repl;

impl Repl {
    pub(super) fn hooks_list(&self) -> String {
        let (layered, ignored) = match crate::app::load_settings(&self.options, &self.cwd) {
            Ok(loaded) => loaded,
            Err(e) => return format!("The settings could not be read: {e}"),
        };
        let mut out = String::new();
        for (source, settings) in &layered.layers {
            for (event, groups) in settings.hooks.events() {
                for group in groups {
                    let matcher = match group.matcher.trim() {
                        "" | "*" => String::new(),
                        m => format!(" [{m}]"),
                    };
                    for hook in &group.hooks {
                        let timeout = hook
                            .timeout
                            .map(|s| format!(" (timeout {s} s)"))
                            .unwrap_or_default();
                        let _ = writeln!(
                            out,
                            "  {event}{matcher}: {}{timeout}  — {}",
                            hook.command,
                            source.label()
                        );
                    }
                }
            }
        }
        if out.is_empty() {
            out.push_str(&format!(
                "No hooks are configured. Add them under \"hooks\" in {}/settings.json or \
                 .ouro/settings.json, in Claude Code's format.\n",
                crate::settings::home_label()
            ));
        } else {
            out.insert_str(0, "Hooks, in the order they run:\n");
        }
        if !ignored.is_empty() {
            out.push_str(&crate::app::untrusted_notice(&ignored));
        }
        out.trim_end().to_string()
    }
}
