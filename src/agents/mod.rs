//! Sub-agents: the `Agent` tool runs a child engine with its own conversation, system prompt
//! and tools, defined by the built-ins, agent files and `--agents`.

pub mod definition;
pub mod persona;
mod spawn;
mod tool;

pub use definition::AgentDef;
pub use spawn::Spawner;
pub use tool::{AgentTool, NAME};
