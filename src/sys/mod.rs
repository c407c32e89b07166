//! Thin layers over the operating system that several parts of ouro share.

pub mod atomic;
pub mod beneath;
pub mod clock;
pub mod disk;
pub mod flock;
pub mod frame;
pub mod git;
pub mod heap;
pub mod job;
pub mod keeper;
pub mod leftover;
pub mod masks;
pub(crate) mod os_serde;
pub mod process;
pub mod sandbox;
pub mod seccomp;
pub mod secrets;
pub mod shutdown;
pub mod sync;
