//! One MCP server tool as ouro offers it: `mcp__<server>__<tool>` with the server's JSON
//! Schema (checked in phase 1 like a built-in tool's), run through the server's connection
//! with a time limit, and cancelled on the server when the user interrupts.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use super::connect::Client;
use super::limits::Limits;
use crate::api::types::ImageSource;
use crate::permissions::Access;
use crate::text::truncate;
use crate::tools::{
    PreparedCall, Progress, SpecTool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// Longest tool description passed on; some servers write essays.
const MAX_DESCRIPTION_CHARS: usize = 2048;
/// The API refuses larger images (5 MB of base64).
const MAX_IMAGE_BASE64: usize = 5 * 1024 * 1024;
/// The API's limit on tool names.
const MAX_NAME_CHARS: usize = 64;

/// The server a tool belongs to, as its calls need it.
pub(super) trait Remote: Send + Sync + 'static {
    fn server_name(&self) -> &str;
    fn limits(&self) -> &Limits;
    /// The live connection, started again if it died.
    fn connection(self: Arc<Self>) -> BoxFuture<'static, Result<Arc<Client>, String>>;
    /// A call failed at the transport.
    fn lost(&self, error: &str);
}

pub(super) struct McpTool {
    server: Arc<dyn Remote>,
    /// Named as the model calls it: `mcp__<server>__<tool>`.
    spec: ToolSpec,
    /// As the server knows it.
    remote: String,
    read_only: bool,
}

/// `mcp__<server>__<tool>`, with characters the API refuses replaced and the length capped.
pub(super) fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut name = format!("mcp__{}__{}", clean(server), clean(tool));
    name.truncate(MAX_NAME_CHARS);
    name
}

impl McpTool {
    /// The tool as listed by the server; `Err` says why it cannot be offered.
    pub(super) fn new(
        server: Arc<dyn Remote>,
        listed: &rmcp::model::Tool,
    ) -> Result<McpTool, String> {
        let schema = Value::Object((*listed.input_schema).clone());
        let description = listed
            .description
            .as_deref()
            .or(listed.title.as_deref())
            .unwrap_or("");
        let read_only = listed
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        Ok(McpTool {
            spec: ToolSpec::new(
                tool_name(server.server_name(), &listed.name),
                truncate(description, MAX_DESCRIPTION_CHARS),
                schema,
            )?,
            remote: listed.name.to_string(),
            read_only,
            server,
        })
    }
}

impl SpecTool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn summarize(&self, input: &Value) -> Option<String> {
        Some(summary(input))
    }

    fn prepare(&self, input: &Value, _ctx: &ToolContext) -> Result<Box<dyn PreparedCall>, String> {
        let Value::Object(arguments) = input else {
            return Err(format!("{} takes a JSON object", self.spec.name));
        };
        Ok(Box::new(McpCall {
            server: self.server.clone(),
            remote: self.remote.clone(),
            arguments: arguments.clone(),
            read_only: self.read_only,
        }))
    }
}

fn summary(input: &Value) -> String {
    truncate(&input.to_string(), 120)
}

struct McpCall {
    server: Arc<dyn Remote>,
    remote: String,
    arguments: serde_json::Map<String, Value>,
    /// The server's `readOnlyHint`: such calls may run in parallel. Permission still asks.
    read_only: bool,
}

impl PreparedCall for McpCall {
    fn access(&self, _ctx: &ToolContext) -> Access {
        Access::External
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn is_concurrency_safe(&self) -> bool {
        self.read_only
    }

    fn is_destructive(&self) -> bool {
        false
    }

    fn max_result_chars(&self) -> usize {
        self.server.limits().max_result_chars
    }

    fn summary(&self) -> String {
        summary(&Value::Object(self.arguments.clone()))
    }

    fn preview(&self, _ctx: &ToolContext) -> Option<String> {
        None
    }

    fn run<'a>(
        self: Box<Self>,
        ctx: &'a ToolContext,
        _progress: &'a Progress,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        async move {
            let client = match self.server.clone().connection().await {
                Ok(client) => client,
                Err(e) => {
                    return Ok(ToolOutput::error(format!(
                        "The MCP server \"{}\" is not available: {e}",
                        self.server.server_name()
                    )));
                }
            };
            let params =
                CallToolRequestParams::new(self.remote.clone()).with_arguments(self.arguments);
            let limit = self.server.limits().call_timeout;
            // Dropping the request future sends the server `notifications/cancelled`.
            let outcome = tokio::select! {
                outcome = client.call_tool(params) => outcome,
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
                () = tokio::time::sleep(limit) => {
                    return Ok(ToolOutput::error(format!(
                        "The MCP tool did not answer within {} s (MCP_TOOL_TIMEOUT) and was cancelled.",
                        limit.as_secs()
                    )));
                }
            };
            match outcome {
                Ok(result) => Ok(render(&serde_json::to_value(result).unwrap_or(Value::Null))),
                Err(e) => {
                    self.server.lost(&e.to_string());
                    Ok(ToolOutput::error(format!(
                        "The MCP server \"{}\" failed the call: {e}",
                        self.server.server_name()
                    )))
                }
            }
        }
        .boxed()
    }
}

/// A `tools/call` result as a tool_result: text as is, images the API reads passed on,
/// resources by their text or link, structured content as JSON when there is nothing else,
/// other media named.
pub(super) fn render(result: &Value) -> ToolOutput {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        let media_type = block["mimeType"].as_str().unwrap_or("unknown type");
        let data = block["data"].as_str().unwrap_or_default();
        let part = match block["type"].as_str() {
            Some("text") => block["text"].as_str().unwrap_or_default().to_string(),
            Some("image")
                if ImageSource::MEDIA_TYPES.contains(&media_type)
                    && data.len() <= MAX_IMAGE_BASE64
                    && crate::tools::image::base64_matches(media_type, data) =>
            {
                images.push(ImageSource::base64(media_type, data));
                continue;
            }
            Some(kind @ ("image" | "audio")) => format!(
                "[{kind} ({media_type}, {} bytes of base64) returned; the model cannot take it (images must be PNG, JPEG, GIF or WebP of at most 5 MB, their bytes of the type they claim)]",
                data.len()
            ),
            Some("resource") => {
                let resource = &block["resource"];
                match resource["text"].as_str() {
                    Some(text) => format!(
                        "[resource {}]\n{text}",
                        resource["uri"].as_str().unwrap_or("")
                    ),
                    None => format!(
                        "[binary resource {} ({})]",
                        resource["uri"].as_str().unwrap_or(""),
                        resource["mimeType"].as_str().unwrap_or("unknown type")
                    ),
                }
            }
            Some("resource_link") => format!(
                "[resource link: {} {}]",
                block["name"].as_str().unwrap_or(""),
                block["uri"].as_str().unwrap_or("")
            ),
            _ => block.to_string(),
        };
        parts.push(part);
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        parts.push(structured.to_string());
    }
    let text = match (parts.is_empty(), images.is_empty()) {
        (true, true) => "(no output)".to_string(),
        _ => parts.join("\n"),
    };
    let output = if result["isError"].as_bool() == Some(true) {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    };
    output.with_images(images)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_are_prefixed_cleaned_and_capped() {
        assert_eq!(tool_name("files", "read_file"), "mcp__files__read_file");
        assert_eq!(
            tool_name("my-srv", "get.thing/x"),
            "mcp__my-srv__get_thing_x"
        );
        assert_eq!(tool_name("s", &"x".repeat(100)).len(), MAX_NAME_CHARS);
    }

    #[test]
    fn results_become_tool_result_text() {
        let out = render(&json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBORw0KGgpyZXN0", "mimeType": "image/png"},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "A"}},
            {"type": "resource_link", "name": "b", "uri": "file:///b"}
        ]}));
        assert!(!out.is_error);
        assert_eq!(
            out.content,
            "hello\n[image (image/png, 4 bytes of base64) returned; the model cannot take it (images must be PNG, JPEG, GIF or WebP of at most 5 MB, their bytes of the type they claim)]\n[resource file:///a]\nA\n[resource link: b file:///b]"
        );
        assert_eq!(
            out.images,
            [ImageSource::base64("image/png", "iVBORw0KGgpyZXN0")]
        );
        let failed = render(&json!({"content": [{"type": "text", "text": "no"}], "isError": true}));
        assert!(failed.is_error);
        assert_eq!(
            render(&json!({"content": [], "structuredContent": {"n": 1}})).content,
            "{\"n\":1}"
        );
        assert_eq!(render(&json!({"content": []})).content, "(no output)");
    }
}
