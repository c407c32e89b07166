//! Thin layers over the operating system that several parts of ouro share.

pub mod process;
pub mod sandbox;
