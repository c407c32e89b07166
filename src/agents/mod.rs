//! Agents: their definitions (one loader for sub-agents, personas and the foundry), the
//! `Agent` tool that runs a child engine with its own conversation, system prompt and tools,
//! and the foundry's instances, the tree a run starts in and what it changed.

pub mod changes;
pub mod definition;
pub mod instance;
pub mod persona;
mod spawn;
pub mod spec;
pub mod start;
mod tool;

pub use definition::AgentDef;
pub use spawn::Spawner;
pub use tool::{AgentTool, NAME};
