//! The Anthropic Messages API: wire types, the streaming client, and a scriptable mock server.

pub mod client;
pub mod mock;
pub mod pricing;
pub mod retry;
pub mod stream;
pub mod types;
