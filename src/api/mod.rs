//! The Anthropic Messages API client: wire types, the SSE stream, retries and prices.

pub mod answer;
pub mod body;
pub mod client;
pub mod media;
pub mod models;
pub mod pricing;
pub mod reasoning;
pub mod retry;
pub mod sse;
pub mod stream;
pub mod types;
