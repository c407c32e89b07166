//! `POST /v1/embeddings`, OpenAI's shape, for memory's semantic search: each text's vector
//! counts its character trigrams hashed into 64 buckets, so texts that share spelling are
//! alike ("grep" and "ripgrep") while keyword search, which matches whole words, keeps them
//! apart. Like the real service it wants a bearer token (any) and answers 401 without one.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

const DIMENSIONS: usize = 64;

pub(super) fn answer(headers: &HeaderMap, body: &[u8]) -> Response {
    let error = |status: StatusCode, message: &str| {
        (
            status,
            axum::Json(json!({"error": {"message": message, "type": "invalid_request_error"}})),
        )
            .into_response()
    };
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer ") && v.len() > 7);
    if !authorized {
        return error(StatusCode::UNAUTHORIZED, "You didn't provide an API key.");
    }
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return error(StatusCode::BAD_REQUEST, "the body is not JSON");
    };
    let texts: Vec<&str> = match request.get("input") {
        Some(Value::String(text)) => vec![text.as_str()],
        Some(Value::Array(items)) => match items.iter().map(Value::as_str).collect() {
            Some(texts) => texts,
            None => return error(StatusCode::BAD_REQUEST, "input must hold strings"),
        },
        _ => return error(StatusCode::BAD_REQUEST, "input is missing"),
    };
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": vector(text)}))
        .collect();
    axum::Json(json!({"object": "list", "data": data, "model": request.get("model")}))
        .into_response()
}

fn vector(text: &str) -> Vec<f32> {
    let mut buckets = vec![0.0f32; DIMENSIONS];
    for word in text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let chars: Vec<char> = format!(" {word} ").chars().collect();
        for gram in chars.windows(3) {
            // FNV-1a: stable across runs and platforms.
            let mut hash: u32 = 0x811c_9dc5;
            for c in gram {
                for byte in c.to_string().bytes() {
                    hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
                }
            }
            buckets[hash as usize % DIMENSIONS] += 1.0;
        }
    }
    buckets
}
