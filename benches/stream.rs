//! SSE parsing throughput on a large stream shaped like the real API's: thousands of small
//! text and thinking deltas, tool inputs in short `input_json_delta` chunks, pings, arriving
//! in 4 KiB network chunks; and one message whose text is a single 50 MB delta. Parsed exactly
//! as the client does: `client::events` (SSE framing, serde into `StreamEvent`, the idle
//! watchdog), then the `Assembler`.

use std::convert::Infallible;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use serde_json::{Value, json};

use ouro::api::client::{StreamLimits, events};
use ouro::api::stream::{Assembled, Assembler};
use ouro::api::types::StreamEvent;

const TEXT_DELTAS: usize = 3000;
const THINKING_DELTAS: usize = 1000;
const TOOL_CALLS: usize = 25;
const NETWORK_CHUNK: usize = 4096;

fn event(out: &mut String, data: Value) {
    let kind = data["type"].as_str().unwrap_or("unknown").to_string();
    out.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
}

/// The whole SSE body of one long assistant message.
fn recorded_stream() -> String {
    let mut s = String::new();
    event(
        &mut s,
        json!({"type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 12000, "output_tokens": 1,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 11000}}}),
    );
    event(
        &mut s,
        json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "thinking", "thinking": ""}}),
    );
    for i in 0..THINKING_DELTAS {
        event(
            &mut s,
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": format!("step {i}: weigh \"it\" ")}}),
        );
    }
    event(
        &mut s,
        json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkA".repeat(20)}}),
    );
    event(&mut s, json!({"type": "content_block_stop", "index": 0}));
    event(
        &mut s,
        json!({"type": "content_block_start", "index": 1,
        "content_block": {"type": "text", "text": ""}}),
    );
    for i in 0..TEXT_DELTAS {
        if i % 500 == 0 {
            event(&mut s, json!({"type": "ping"}));
        }
        event(
            &mut s,
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "text_delta", "text": format!("word{i} `code`\n")}}),
        );
    }
    event(&mut s, json!({"type": "content_block_stop", "index": 1}));
    for t in 0..TOOL_CALLS {
        let index = t + 2;
        event(
            &mut s,
            json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": format!("toolu_{t:04}"),
                              "name": "Edit", "input": {}}}),
        );
        let input = json!({"file_path": format!("/project/src/module_{t}.rs"),
            "old_string": "fn main() {\n    println!(\"old\");\n}\n".repeat(8),
            "new_string": "fn main() {\n    println!(\"new\");\n}\n".repeat(8)})
        .to_string();
        let bytes: Vec<char> = input.chars().collect();
        for piece in bytes.chunks(30) {
            let partial: String = piece.iter().collect();
            event(
                &mut s,
                json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": partial}}),
            );
        }
        event(
            &mut s,
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        &mut s,
        json!({"type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": null},
        "usage": {"output_tokens": 9000}}),
    );
    event(&mut s, json!({"type": "message_stop"}));
    s
}

/// One message whose only text arrives as a single `text_delta` of `bytes` bytes.
fn one_huge_delta(bytes: usize) -> String {
    let mut s = String::new();
    event(
        &mut s,
        json!({"type": "message_start", "message": {"id": "msg_big", "model": "m",
        "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    );
    event(
        &mut s,
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    event(
        &mut s,
        json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": "word ".repeat(bytes / 5)}}),
    );
    event(&mut s, json!({"type": "content_block_stop", "index": 0}));
    event(
        &mut s,
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
    );
    event(&mut s, json!({"type": "message_stop"}));
    s
}

/// Frames, decodes and assembles the chunks the way the client does; returns the finished blocks.
fn parse(runtime: &tokio::runtime::Runtime, chunks: &[&[u8]]) -> usize {
    runtime.block_on(async {
        let bytes = futures::stream::iter(chunks.iter().copied().map(Ok::<&[u8], Infallible>));
        let limits = StreamLimits {
            max_event_bytes: 256 << 20,
            ..StreamLimits::default()
        };
        let mut events = Box::pin(events(bytes, limits, String::new()));
        let mut assembler = Assembler::new();
        let mut blocks = 0;
        while let Some(item) = events.next().await {
            let event = item.expect("the recorded stream is valid");
            blocks += assembler
                .push(event)
                .expect("the recorded stream follows the grammar")
                .iter()
                .filter(|a| matches!(a, Assembled::Block))
                .count();
        }
        assert!(assembler.complete, "the recorded stream ends the message");
        blocks
    })
}

fn sse(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let body = recorded_stream();
    let chunks: Vec<&[u8]> = body.as_bytes().chunks(NETWORK_CHUNK).collect();
    assert_eq!(parse(&runtime, &chunks), TOOL_CALLS + 2);
    let data: Vec<String> = body
        .split("\n\n")
        .filter_map(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(str::to_string)
        .collect();

    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("frame_decode_assemble", |b| {
        b.iter(|| parse(&runtime, black_box(&chunks)))
    });
    group.bench_function("decode_only", |b| {
        b.iter(|| {
            for d in &data {
                let parsed: StreamEvent = serde_json::from_str(black_box(d)).expect("valid JSON");
                black_box(parsed);
            }
        })
    });
    group.finish();

    // One 50 MB line: linear framing keeps this near the speed of many small events.
    let huge = one_huge_delta(50 << 20);
    let chunks: Vec<&[u8]> = huge.as_bytes().chunks(64 << 10).collect();
    let mut group = c.benchmark_group("sse_single_line");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(huge.len() as u64));
    group.bench_function("one_50mb_text_delta", |b| {
        b.iter(|| parse(&runtime, black_box(&chunks)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = sse
}
criterion_main!(benches);
