//! The harness every test module shares.

#![allow(dead_code)]

#[cfg(feature = "mock")]
mod harness;
#[cfg(feature = "mock")]
pub(crate) mod pty;
pub(crate) mod secrets;
pub(crate) mod skip;

#[cfg(feature = "mock")]
pub(crate) use harness::*;
