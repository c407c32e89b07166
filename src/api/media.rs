//! Images on the wire: an `image` block's source, and a tool_result's content, which is text
//! and, when a tool returns pictures (a screenshot from an MCP server, an image Read), images.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Where an image's bytes are, as the API takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageSource {
    Base64 { media_type: String, data: String },
    Url { url: String },
}

impl ImageSource {
    /// The image types the API reads.
    pub const MEDIA_TYPES: [&'static str; 4] =
        ["image/png", "image/jpeg", "image/gif", "image/webp"];

    pub fn base64(media_type: impl Into<String>, data: impl Into<String>) -> ImageSource {
        ImageSource::Base64 {
            media_type: media_type.into(),
            data: data.into(),
        }
    }
}

/// A tool_result's content: sent as a plain string when it is only text, as text and image
/// blocks otherwise. It reads as its text (`Deref<Target = str>`), which is what everything but
/// the request needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResultContent {
    pub text: String,
    pub images: Vec<ImageSource>,
}

impl std::ops::Deref for ResultContent {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

impl From<String> for ResultContent {
    fn from(text: String) -> ResultContent {
        ResultContent {
            text,
            images: Vec::new(),
        }
    }
}

impl From<&str> for ResultContent {
    fn from(text: &str) -> ResultContent {
        ResultContent::from(text.to_string())
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutBlock<'a> {
    Text { text: &'a str },
    Image { source: &'a ImageSource },
}

impl Serialize for ResultContent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.images.is_empty() {
            return s.serialize_str(&self.text);
        }
        let text = (!self.text.is_empty()).then_some(OutBlock::Text { text: &self.text });
        let blocks: Vec<OutBlock<'_>> = text
            .into_iter()
            .chain(self.images.iter().map(|source| OutBlock::Image { source }))
            .collect();
        blocks.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ResultContent {
    /// A string, or a list of blocks: text blocks joined by newlines, images kept, other
    /// blocks (documents, search results) dropped.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ResultContent, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Blocks(Vec<Value>),
        }
        Ok(match Raw::deserialize(d)? {
            Raw::Text(text) => ResultContent::from(text),
            Raw::Blocks(blocks) => {
                let mut texts = Vec::new();
                let mut images = Vec::new();
                for block in blocks {
                    match block["type"].as_str() {
                        Some("text") => {
                            texts.push(block["text"].as_str().unwrap_or_default().to_string());
                        }
                        Some("image") => {
                            if let Ok(source) = serde_json::from_value(block["source"].clone()) {
                                images.push(source);
                            }
                        }
                        _ => {}
                    }
                }
                ResultContent {
                    text: texts.join("\n"),
                    images,
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_only_is_a_string_and_images_make_blocks() {
        let plain = ResultContent::from("out");
        assert_eq!(serde_json::to_value(&plain).unwrap(), json!("out"));
        let shot = ResultContent {
            text: "a screenshot".into(),
            images: vec![ImageSource::base64("image/png", "iVBO")],
        };
        let wire = serde_json::to_value(&shot).unwrap();
        assert_eq!(
            wire,
            json!([
                {"type": "text", "text": "a screenshot"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}
            ])
        );
        let back: ResultContent = serde_json::from_value(wire).unwrap();
        assert_eq!(back, shot);
        let only_image = ResultContent {
            text: String::new(),
            images: vec![ImageSource::Url {
                url: "https://x/y.png".into(),
            }],
        };
        let wire = serde_json::to_value(&only_image).unwrap();
        assert_eq!(wire.as_array().unwrap().len(), 1);
        assert_eq!(
            serde_json::from_value::<ResultContent>(wire).unwrap(),
            only_image
        );
    }
}
