//! One plain Messages request whose answer is text (no tools): auto mode's reviewer and the
//! eval judge ask this way. Errors the API says are worth retrying are retried under a
//! [`RetryPolicy`].

use futures::StreamExt;
use serde_json::Value;

use super::client::Client;
use super::retry::{RetryPolicy, Wait};
use super::stream::{Assembled, Assembler};
use super::types::{StopReason, Usage};

/// The model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct TextAnswer {
    pub text: String,
    /// It stopped at `max_tokens`.
    pub truncated: bool,
    pub usage: Usage,
}

/// Sends `body` (a Messages request with `"stream": true`) and gathers the answer's text;
/// retries under `retry` (none with `RetryPolicy { max_retries: 0, .. }`).
pub async fn text_answer(
    client: &Client,
    body: &Value,
    retry: &RetryPolicy,
) -> Result<TextAnswer, String> {
    let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
    let body = bytes.into();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let error = match client.stream(&body, &[], None).await {
            Ok(stream) => match gather(stream).await {
                Ok(answer) => return Ok(answer),
                Err(Failure::Api(e)) => e,
                Err(Failure::Other(why)) => return Err(why),
            },
            Err(e) => e,
        };
        if !error.is_retryable() || attempt > retry.max_retries {
            return Err(error.to_string());
        }
        match retry.delay(attempt, &error) {
            Wait::Retry(wait) => tokio::time::sleep(wait).await,
            Wait::TooLong(_) => return Err(error.to_string()),
        }
    }
}

enum Failure {
    Api(super::client::ApiError),
    Other(String),
}

async fn gather(
    stream: impl futures::Stream<Item = Result<super::types::StreamEvent, super::client::ApiError>>,
) -> Result<TextAnswer, Failure> {
    let mut stream = std::pin::pin!(stream);
    let mut assembler = Assembler::new();
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        let parts = assembler
            .push(event.map_err(Failure::Api)?)
            .map_err(Failure::Api)?;
        for part in parts {
            match part {
                Assembled::TextDelta(delta) => text.push_str(&delta),
                Assembled::ServerError(e) => return Err(Failure::Other(e.message)),
                _ => {}
            }
        }
    }
    Ok(TextAnswer {
        text,
        truncated: assembler.stop_reason == Some(StopReason::MaxTokens),
        usage: assembler.usage,
    })
}
