//! The integration tests, one binary: each module below was once its own test binary, and
//! each linked the whole crate. `common` holds the shared harness (the mock API, sandboxes,
//! PTYs, and the skip report).

#![allow(clippy::unwrap_used)] // a failed unwrap in a test is a failed test

mod common;

mod analyser_bypass;
mod architecture;
mod bash_safety;
#[cfg(feature = "mock")]
mod bench;
mod brain_claude;
#[cfg(feature = "mock")]
mod brain_claude_real;
#[cfg(feature = "mock")]
mod brain_ouro;
mod bundle;
#[cfg(feature = "mock")]
mod daemon;
#[cfg(feature = "mock")]
mod e2e_agents;
#[cfg(feature = "mock")]
mod e2e_auto;
#[cfg(feature = "mock")]
mod e2e_brain;
#[cfg(feature = "mock")]
mod e2e_cache;
#[cfg(feature = "mock")]
mod e2e_claude_next;
#[cfg(feature = "mock")]
mod e2e_cli;
#[cfg(feature = "mock")]
mod e2e_core;
#[cfg(feature = "mock")]
mod e2e_hooks;
#[cfg(feature = "mock")]
mod e2e_interrupt;
#[cfg(feature = "mock")]
mod e2e_loop;
#[cfg(feature = "mock")]
mod e2e_mcp;
#[cfg(feature = "mock")]
mod e2e_media;
#[cfg(feature = "mock")]
mod e2e_models;
#[cfg(feature = "mock")]
mod e2e_resume;
#[cfg(feature = "mock")]
mod e2e_rewind;
#[cfg(feature = "mock")]
mod e2e_sdk_lines;
#[cfg(feature = "mock")]
mod e2e_skills;
#[cfg(feature = "mock")]
mod e2e_stream;
#[cfg(feature = "mock")]
mod e2e_tools;
#[cfg(feature = "mock")]
mod eval;
mod executor;
#[cfg(feature = "mock")]
mod faults;
#[cfg(feature = "mock")]
mod foundry;
mod git_safety;
#[cfg(feature = "mock")]
mod ipc;
#[cfg(feature = "mock")]
mod keeper;
#[cfg(feature = "mock")]
mod memory;
#[cfg(feature = "mock")]
mod memory_embeddings;
mod mock_server;
mod permissions;
mod permissions_adversarial;
#[cfg(feature = "mock")]
mod repl;
#[cfg(feature = "mock")]
mod repl_keys;
#[cfg(feature = "mock")]
mod repl_mcp;
#[cfg(feature = "mock")]
mod repl_rewind;
#[cfg(feature = "mock")]
mod repl_tasks;
mod sandbox;
mod sandbox_masks;
#[cfg(feature = "mock")]
mod sdk_compare;
#[cfg(feature = "mock")]
mod sdk_python;
#[cfg(feature = "mock")]
mod sdk_typescript;
#[cfg(all(feature = "mock", feature = "serve"))]
mod serve;
#[cfg(all(feature = "mock", feature = "serve"))]
mod web_ui;
mod zones;
