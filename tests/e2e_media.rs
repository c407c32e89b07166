//! End-to-end: pictures reach the model. Read on an image file sends it as an image block in
//! the tool_result, and the transcript keeps it for a resumed session.

use crate::common;

use common::{Sandbox, bodies, request_tool_results, server};
use serde_json::json;

/// The smallest valid PNG: one transparent pixel.
const PIXEL_PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

#[tokio::test]
async fn read_sends_an_image_file_as_a_picture_and_resume_keeps_it() {
    let sb = Sandbox::new();
    let shot = sb.root().join("shot.png");
    std::fs::write(&shot, PIXEL_PNG).unwrap();
    let mock = server(json!({"turns": [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": shot}}]},
        {"content": [{"type": "text", "text": "one pixel"}]},
        {"content": [{"type": "text", "text": "still one pixel"}]}
    ]}))
    .await;
    let run = sb
        .run(
            &mock.url(),
            &["-p", "--output-format", "json", "look at shot.png"],
        )
        .await;
    assert!(run.status.success(), "{}", run.debug());
    let results = request_tool_results(&bodies(&mock)[1]);
    let blocks = results[0]["content"].as_array().expect("content blocks");
    assert_eq!(blocks[0]["type"], "text");
    assert!(blocks[0]["text"].as_str().unwrap().contains("image/png"));
    let data = base64_of(PIXEL_PNG);
    assert_eq!(
        blocks[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}})
    );

    let session = run.result()["session_id"].as_str().unwrap().to_string();
    let again = sb
        .run(&mock.url(), &["-p", "--resume", &session, "and now?"])
        .await;
    assert!(again.status.success(), "{}", again.debug());
    let results = request_tool_results(&bodies(&mock)[2]);
    assert_eq!(results[0]["content"][1]["source"]["data"], data);
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
