//! The harness every test module shares.

#![allow(dead_code)]

#[cfg(feature = "mock")]
mod harness;
#[cfg(feature = "mock")]
pub mod pty;
pub mod secrets;
pub mod skip;

#[cfg(feature = "mock")]
pub use harness::*;
