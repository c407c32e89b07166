//! The command-line front end: flags, print mode (ouro's engine or a claude@ brain) and the
//! demo. Sessions are assembled by `app`.

pub mod args;
pub mod brain;
pub mod daemon;
#[cfg(feature = "mock")]
pub mod demo;
pub mod eval;
pub mod headless;
pub mod mcp;
pub mod memory;
pub mod print;
pub mod refused;
pub mod rewind;
pub mod sandbox;

pub use args::{Args, AutoModeAction, Command};
