//! `/resume`: the directory's recent sessions in a picker (or a list, off a terminal), and
//! loading one by id or unique id prefix.

use std::io::IsTerminal;

use super::Repl;
use crate::app;
use crate::session;
use crate::session::transcript::Transcript;

/// How many sessions `/resume` offers.
const RECENT_SESSIONS: usize = 10;

struct SessionRow {
    id: String,
    label: String,
    current: bool,
}

impl Repl {
    /// `/resume` without an id: a picker on a terminal (arrow keys, Enter loads, Esc keeps
    /// the current session), else the list to pick from with `/resume <id>`.
    pub(super) async fn pick_session(&mut self) {
        let rows = self.recent_sessions();
        if rows.is_empty() {
            self.ui
                .render
                .print("There are no saved sessions for this directory yet.");
            return;
        }
        let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        if !interactive {
            let mut out = String::from("Recent sessions in this directory (newest first):\n");
            for row in &rows {
                out.push_str(&format!("  {}  {}\n", row.id, row.label));
            }
            out.push_str("Load one with /resume <id>.");
            self.ui.render.print(&out);
            return;
        }
        // The newest session that is not this one: resuming is for going back to another.
        let first_other = rows.iter().position(|r| !r.current).unwrap_or(0);
        let labels: Vec<String> = rows
            .iter()
            .map(|r| format!("{}  {}", short_id(&r.id), r.label))
            .collect();
        let picked = tokio::task::spawn_blocking(move || {
            dialoguer::Select::new()
                .with_prompt("Resume which session? (↑/↓, Enter loads, Esc keeps this one)")
                .items(&labels)
                .default(first_other)
                .report(false)
                .interact_opt()
        })
        .await;
        match picked {
            Ok(Ok(Some(i))) => match rows.get(i) {
                Some(row) if row.current => self.ui.render.print("That is this session."),
                Some(row) => {
                    let id = row.id.clone();
                    self.settle_reflect(true).await;
                    self.resume(&id);
                }
                None => {}
            },
            Ok(Ok(None)) => self.ui.render.print("Kept the current session."),
            Ok(Err(e)) => self.fail(&format!(
                "The session picker failed ({e}); use /resume <id>."
            )),
            Err(_) => self.fail("The session picker stopped; use /resume <id>."),
        }
    }

    /// The directory's newest sessions, each labelled with when it was last used and its
    /// first prompt.
    fn recent_sessions(&self) -> Vec<SessionRow> {
        let style = self.ui.render.style();
        let names = session::names::Names::of(&self.cwd)
            .map(|n| n.all())
            .unwrap_or_default();
        session::list(&self.cwd)
            .into_iter()
            .take(RECENT_SESSIONS)
            .map(|info| {
                let when = chrono::DateTime::<chrono::Local>::from(info.modified)
                    .format("%Y-%m-%d %H:%M")
                    .to_string();
                let first = session::transcript::first_prompt(&info.path)
                    .map(|t| preview(&t))
                    .unwrap_or_default();
                let named = names
                    .get(&info.id)
                    .map(|n| format!("[{n}] "))
                    .unwrap_or_default();
                let current = info.id == self.engine.session_id();
                let mark = if current {
                    style.dim(" (current)")
                } else {
                    String::new()
                };
                SessionRow {
                    label: format!("{when}  {named}{first}{mark}"),
                    id: info.id,
                    current,
                }
            })
            .collect()
    }

    /// `/rename NAME`: what `/resume` shows for this session and `--resume NAME` finds.
    pub(super) fn rename(&mut self, name: Option<&str>) {
        let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
            self.ui.render.print("Give the name: /rename <name>");
            return;
        };
        let id = self.engine.session_id().to_string();
        let said = match session::names::Names::of(&self.cwd).map(|n| n.set(&id, name)) {
            Some(Ok(())) => format!(
                "This session is now called {name:?}; `ouro --resume {name:?}` comes back to it."
            ),
            Some(Err(e)) => format!("Could not name this session: {e}"),
            None => "Could not name this session: ouro has no home folder (set OURO_HOME)".into(),
        };
        self.ui.render.print(&said);
    }

    pub(super) fn resume(&mut self, id: &str) {
        // A unique prefix of a listed id is enough, as with git hashes.
        let id = match session::resolve(&self.cwd, id) {
            Ok(id) => id,
            Err(matching) => {
                self.fail(&format!(
                    "{id} starts {} sessions; give more of the id.",
                    matching.len()
                ));
                return;
            }
        };
        // Loading the conversation this session already writes: its lock must be free first.
        let released = (id == self.engine.session_id())
            .then(|| self.engine.take_transcript())
            .flatten()
            .map(|t| t.path().to_path_buf());
        self.options.resume = Some(id);
        self.options.continue_last = false;
        // A mode chosen with Shift+Tab carries over, as directories added with /add-dir do.
        self.options.permissions.mode = Some(self.ui.permissions.mode());
        let built = app::build(
            &self.options,
            &self.cwd,
            self.endpoint.clone(),
            self.asker.clone(),
        );
        self.options.resume = None;
        match built {
            Ok(session) => {
                self.engine = session.engine;
                self.memory = session.memory;
                self.ui.events = session.events;
                self.ui.permissions = session.permissions;
                self.mcp = session.mcp;
                self.plugins = session.plugins;
                self.base_system_prompt = session.base_system_prompt;
                self.ui.render.set_model(&self.engine.config().model);
                let text = format!(
                    "Resumed session {}. The last exchange was:",
                    self.engine.session_id()
                );
                self.ui.render.print(&text);
                let executor = self.engine.executor();
                self.ui
                    .render
                    .last_exchange(self.engine.history(), |name, input| {
                        executor.summarize(name, input)
                    });
            }
            Err(e) => {
                if let Some(path) = released {
                    let (id, model) = (self.engine.session_id(), &self.engine.config().model);
                    let again = Transcript::open(&path, id, &self.cwd, model).ok();
                    self.engine.set_transcript(again);
                }
                self.fail(&format!("{e:#}"));
            }
        }
    }
}

/// The first 8 characters of an id: enough to tell sessions apart in the picker.
fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn preview(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    crate::text::truncate(line, 60)
}
