//! Read on a picture: PNG, JPEG, GIF and WebP files go to the model as an image block, as in
//! Claude Code, so it can look at a screenshot or a diagram. Known by their first bytes, not
//! their names.

use std::io::Read as _;
use std::path::Path;

use base64::Engine as _;

use super::ToolOutput;
use crate::api::types::ImageSource;

/// The API takes images of at most 5 MB of base64, which is 3.75 MB of file.
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024 / 4 * 3;

/// Whether base64 `data` really holds a `media_type` picture: the API refuses a request whose
/// image does not match its declared type, and the image would stay in the history.
pub fn base64_matches(media_type: &str, data: &str) -> bool {
    let head = data.get(..16).unwrap_or(data);
    base64::engine::general_purpose::STANDARD
        .decode(head)
        .ok()
        .is_some_and(|bytes| self::media_type(&bytes) == Some(media_type))
}

/// The image type of a file that starts with `head`.
pub fn media_type(head: &[u8]) -> Option<&'static str> {
    match head {
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => Some("image/webp"),
        _ => None,
    }
}

/// The picture at `path` as a tool result, or why it cannot be sent.
pub fn read(path: &Path, media_type: &str, size: u64) -> Result<ToolOutput, String> {
    if size > MAX_IMAGE_BYTES {
        return Err(format!(
            "{} is a {media_type} image of {size} bytes; the model takes images of at most \
             {MAX_IMAGE_BYTES} bytes. Make a smaller copy with Bash (for example `convert in.png \
             -resize 50% /tmp/small.png`) and Read that.",
            path.display()
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_IMAGE_BYTES).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok(ToolOutput::ok(format!(
        "{} ({media_type}, {} bytes):",
        path.display(),
        bytes.len()
    ))
    .with_images(vec![ImageSource::base64(media_type, data)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pictures_are_known_by_their_first_bytes() {
        assert_eq!(media_type(b"\x89PNG\r\n\x1a\n"), Some("image/png"));
        assert_eq!(media_type(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(media_type(b"GIF89a"), Some("image/gif"));
        assert_eq!(media_type(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(media_type(b"RIFF\x10\0\0\0WAVE"), None);
        assert_eq!(media_type(b"fn main() {}"), None);
        assert_eq!(media_type(b""), None);
        assert!(base64_matches("image/png", "iVBORw0KGgpyZXN0"));
        assert!(!base64_matches("image/jpeg", "iVBORw0KGgpyZXN0"));
        assert!(!base64_matches("image/png", "not base64 at all!"));
        assert!(!base64_matches("image/png", ""));
    }

    #[test]
    fn an_image_becomes_a_base64_block_and_a_huge_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("a.png");
        std::fs::write(&small, b"\x89PNG\r\n\x1a\nrest").unwrap();
        let out = read(&small, "image/png", 12).unwrap();
        assert!(
            out.content.contains("image/png, 12 bytes"),
            "{}",
            out.content
        );
        assert_eq!(
            out.images,
            [ImageSource::base64("image/png", "iVBORw0KGgpyZXN0")]
        );
        let err = read(&small, "image/png", MAX_IMAGE_BYTES + 1).unwrap_err();
        assert!(err.contains("smaller copy"), "{err}");
    }
}
