//! The arguments of `ouro memory …`.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Clone, Subcommand)]
pub enum MemoryAction {
    /// The newest memories first.
    List {
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        json: bool,
        /// Your own memory instead of this project's.
        #[arg(long)]
        user: bool,
    },
    /// Memories matching the words of QUERY, best first.
    Search {
        query: String,
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
        #[arg(long)]
        user: bool,
    },
    /// One memory and its relations.
    Show {
        id: String,
        /// Relations that are no longer true too, with when they ended.
        #[arg(long)]
        history: bool,
        #[arg(long)]
        json: bool,
        #[arg(long)]
        user: bool,
    },
    /// Deletes a memory and its relations, leaving no copy in the file.
    Forget {
        id: String,
        #[arg(long)]
        user: bool,
    },
    /// Adds (or updates) one memory.
    Add {
        /// Strategy, Tool, API, Library, CodePattern, FailureCase or Fact.
        #[arg(long = "type", value_name = "TYPE")]
        kind: String,
        #[arg(long)]
        id: String,
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "")]
        description: String,
        /// A file whose text is the memory's code snippet.
        #[arg(long, value_name = "FILE")]
        code: Option<PathBuf>,
        #[arg(long)]
        user: bool,
    },
    /// Applies a JSON array of graph operations (`-` reads stdin) as one transaction.
    Apply {
        file: PathBuf,
        #[arg(long)]
        user: bool,
    },
    /// Writes the whole graph: JSON (`ouro-memory/1`), or a MEMORY.md-style page.
    Export {
        #[arg(long)]
        markdown: bool,
        #[arg(long)]
        user: bool,
    },
    /// Reads an export (or an array of operations) into the store.
    Import {
        file: PathBuf,
        #[arg(long)]
        user: bool,
    },
    /// Gives every memory a vector in the model of `memory.embeddings` (semantic search).
    Embed {
        #[arg(long)]
        user: bool,
    },
    /// What the Recall tool would tell the model about QUERY.
    Recall {
        query: String,
        #[arg(long)]
        history: bool,
    },
}
