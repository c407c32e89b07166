//! The command-line front end: flags, session setup, print mode and the demo.

pub mod args;
#[cfg(feature = "mock")]
pub mod demo;
pub mod headless;
pub mod print;
pub mod setup;
pub mod stream_json;

pub use args::{Args, Command};
