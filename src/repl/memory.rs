//! Memory in the REPL: the reflect step after each turn (in `auto` it runs while the next
//! prompt is typed; in `ask` the proposals are shown and each kept, edited or dropped), and
//! `/memory graph`.

use super::Repl;
use super::editor::Input;
use crate::app::memory::keep;
use crate::engine::reflect::Reflected;
use crate::knowledge::recall::{self, Reach};
use crate::knowledge::reflect::Mode;
use crate::knowledge::{Operation, ops::Properties};

/// Newest memories `/memory graph` shows without a query.
const GRAPH_NODES: usize = 20;

impl Repl {
    /// Starts the reflect step on the turn that just ended; `ask` waits for it and asks now.
    pub(super) async fn reflect_after_turn(&mut self) {
        let Some(memory) = self.memory.clone() else {
            return;
        };
        self.settle_reflect(true).await;
        let commit = crate::app::memory::head_commit(&memory.root);
        let Some(request) = self
            .engine
            .reflect_request(&memory.model, &memory.store, commit)
        else {
            return;
        };
        self.reflecting = Some(tokio::spawn(request));
        if memory.mode == Mode::Ask {
            self.settle_reflect(true).await;
        }
    }

    /// Takes a finished reflect (or, with `wait`, waits for a running one): keeps its
    /// proposals, or asks about each in `ask`; its cost joins the session's.
    pub(super) async fn settle_reflect(&mut self, wait: bool) {
        let Some(handle) = self.reflecting.take() else {
            return;
        };
        if !wait && !handle.is_finished() {
            self.reflecting = Some(handle);
            return;
        }
        let Some(memory) = self.memory.clone() else {
            return;
        };
        let done = match handle.await {
            Ok(done) => done,
            Err(e) => {
                self.fail(&format!("The reflect step failed: {e}"));
                return;
            }
        };
        let (chosen, mode) = match memory.mode {
            Mode::Ask if done.proposal.error.is_none() && !done.proposal.operations.is_empty() => {
                (self.choose(&done).await, "ask")
            }
            _ => (done.proposal.operations.clone(), "auto"),
        };
        let (stored, error) = keep(&memory, &done, &chosen).await;
        self.engine.reflected(&done, mode, stored, error);
        while let Ok(event) = self.ui.events.try_recv() {
            self.ui.render.event(&event);
        }
    }

    /// Shows each proposed memory and reads whether to keep, edit or drop it; relations are
    /// kept when both their ends are.
    async fn choose(&mut self, done: &Reflected) -> Vec<Operation> {
        let title = self.ui.render.style().bold(&format!(
            "Memory: {} proposed from this turn. Keep each? y (yes), n (no), e (edit)",
            done.proposal.operations.len()
        ));
        self.ui.render.print(&title);
        let mut kept = Vec::new();
        let mut dropped: Vec<String> = Vec::new();
        for op in &done.proposal.operations {
            match op {
                Operation::AddNode {
                    kind,
                    id,
                    properties,
                } => {
                    let shown = format!(
                        "  {} \"{}\": {}",
                        kind.as_str(),
                        properties.name,
                        properties.description
                    );
                    self.ui.render.print(&shown);
                    match self.read_answer("  keep? [y/n/e] ").await.as_str() {
                        "y" | "yes" | "" => kept.push(op.clone()),
                        "e" | "edit" => {
                            let properties = self.edit(properties).await;
                            kept.push(Operation::AddNode {
                                kind: *kind,
                                id: id.clone(),
                                properties,
                            });
                        }
                        _ => dropped.push(id.clone()),
                    }
                }
                Operation::AddEdge { source, target, .. }
                | Operation::InvalidateEdge { source, target, .. } => {
                    if !dropped.contains(source) && !dropped.contains(target) {
                        kept.push(op.clone());
                    }
                }
            }
        }
        kept
    }

    async fn read_answer(&mut self, prompt: &str) -> String {
        match self.ui.editor.read(prompt).await {
            Ok(Input::Line(line)) => line.trim().to_lowercase(),
            _ => "n".into(),
        }
    }

    async fn edit(&mut self, old: &Properties) -> Properties {
        let mut read = async |prompt: &str, text: &str| match self
            .ui
            .editor
            .read_with(prompt, (text.to_string(), String::new()))
            .await
        {
            Ok(Input::Line(line)) if !line.trim().is_empty() => line.trim().to_string(),
            _ => text.to_string(),
        };
        let name = read("  name: ", &old.name).await;
        let description = read("  description: ", &old.description).await;
        Properties {
            name,
            description,
            code_snippet: old.code_snippet.clone(),
        }
    }

    /// `/memory graph [QUERY]`: the neighbourhood of what matches QUERY, or the newest
    /// memories and their relations.
    pub(super) async fn memory_graph(&mut self, query: &str) {
        let root = crate::app::project_root(&self.cwd);
        let stores = crate::knowledge::stores(&root, self.project_trusted());
        let embedder = self.embedder.as_deref().filter(|_| !query.is_empty());
        let vector = crate::knowledge::embed::query_vector(embedder, query).await;
        let found = recall::gather(&stores, |store, label| {
            if query.is_empty() {
                recall::newest(store, label, GRAPH_NODES)
            } else {
                recall::walk(store, label, query, vector.semantic(), Reach::default())
            }
        });
        let found = match found {
            Ok(found) => found,
            Err(e) => return self.fail(&e.to_string()),
        };
        let shown = if query.is_empty() {
            "everything"
        } else {
            query
        };
        let text = recall::render(shown, &found, crate::knowledge::now()) + &vector.unavailable;
        self.ui.render.print(text.trim_end());
    }
}
