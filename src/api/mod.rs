//! The Anthropic Messages API: wire types, the streaming client, and a scriptable mock server.

pub mod types;
