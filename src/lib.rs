//! ouro: an AI coding-agent harness that talks to the Anthropic Messages API directly.
//!
//! Data flows one way: a front end (`cli`, `repl`, `bench`) builds its session in `app`,
//! `engine` asks the model through `api`, the model's tool_use blocks go to `exec`, which runs
//! each call through the six-phase pipeline into a `tools` implementation, guarded by
//! `permissions`; every step is an `event::Event`. `tests/architecture.rs` keeps the imports
//! between modules one-way.

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
pub mod event;
pub mod exec;
pub mod frontmatter;
pub mod mcp;
#[cfg(feature = "mock")]
pub mod mock;
pub mod permissions;
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
