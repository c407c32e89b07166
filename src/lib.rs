//! ouro: an AI coding-agent harness that talks to the Anthropic Messages API directly.
//!
//! The map, top to bottom (a module imports only its own layer or those below; the layers are
//! declared in `tests/architecture.rs` and drawn in `docs/architecture.md`):
//!
//! - [`cli`]: the binary's router: flags, print mode, headless mode, subcommands.
//! - [`bench`]: `ouro bench`, measuring the front ends.
//! - Front ends: [`repl`], [`serve`] (HTTP + SSE and the web page), [`daemon`] (clones and
//!   their relay), [`bundle`] (cats, dogs, worktrees), [`sdk`] (the Agent SDK protocol),
//!   [`agent`] (the Ouroboros IPC for supervisors that are not ouro).
//! - [`app`] assembles a session; [`brain`] runs one behind `BrainCli` (ouro's own engine or
//!   the claude CLI), with its parked permission questions.
//! - [`agents`]: sub-agents and personas; [`engine`]: the query loop; [`exec`]: the streaming
//!   executor and six-phase pipeline (with [`mcp`] and [`skills`] as tool sources);
//!   [`tools`]: the built-in tools.
//! - [`permissions`], [`checkpoint`], [`session`]: what may run, snapshots, transcripts.
//! - Wire types and settings: [`api`], [`event`], [`stream_json`], [`ui_event`], [`settings`],
//!   [`frontmatter`], and the scriptable [`mock`] API.
//! - [`sys`] and [`text`]: processes (one handle, the keeper), the sandbox, secrets, git,
//!   records, frames.

pub mod agent;
pub mod agents;
pub mod api;
pub mod app;
#[cfg(feature = "mock")]
pub mod bench;
pub mod brain;
pub mod bundle;
pub mod checkpoint;
pub mod cli;
pub mod daemon;
pub mod engine;
pub mod eval;
pub mod event;
pub mod exec;
pub mod frontmatter;
pub mod knowledge;
pub mod mcp;
pub mod memory;
#[cfg(feature = "mock")]
pub mod mock;
pub mod paws;
pub mod permissions;
pub mod plugins;
pub mod repl;
pub mod sdk;
#[cfg(feature = "serve")]
pub mod serve;
pub mod session;
pub mod settings;
pub mod skills;
pub mod stream_json;
pub mod sys;
pub mod text;
pub mod tools;
pub mod ui_event;
