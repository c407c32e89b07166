//! What a server offers besides tools: prompts, which become slash commands
//! (`/mcp__<server>__<prompt> args`), and resources, which a message attaches with
//! `@<server>:<uri>`. Both are listed when the server connects.

use serde_json::{Map, Value};

use super::tool::tool_name;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptInfo {
    /// The slash command, without the slash: `mcp__<server>__<prompt>`.
    pub command: String,
    pub server: String,
    /// As the server knows it.
    pub name: String,
    pub description: String,
    pub arguments: Vec<PromptArgument>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArgument {
    pub name: String,
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    pub server: String,
    pub uri: String,
    pub name: String,
    pub description: String,
}

impl PromptInfo {
    pub fn new(server: &str, listed: &rmcp::model::Prompt) -> PromptInfo {
        PromptInfo {
            command: tool_name(server, &listed.name),
            server: server.to_string(),
            name: listed.name.clone(),
            description: listed
                .description
                .clone()
                .or_else(|| listed.title.clone())
                .unwrap_or_default(),
            arguments: listed
                .arguments
                .iter()
                .flatten()
                .map(|a| PromptArgument {
                    name: a.name.clone(),
                    required: a.required.unwrap_or(false),
                })
                .collect(),
        }
    }

    /// `/mcp__s__p <needed> [optional]`.
    pub fn usage(&self) -> String {
        let mut usage = format!("/{}", self.command);
        for a in &self.arguments {
            if a.required {
                usage.push_str(&format!(" <{}>", a.name));
            } else {
                usage.push_str(&format!(" [{}]", a.name));
            }
        }
        usage
    }

    /// The words typed after the command fill the arguments in order, as in Claude Code; the
    /// last argument takes the rest of the line, so it may hold spaces.
    pub(crate) fn arguments_from(&self, line: &str) -> Result<Map<String, Value>, String> {
        let mut rest = line.trim();
        let mut out = Map::new();
        for (i, argument) in self.arguments.iter().enumerate() {
            if rest.is_empty() {
                if argument.required {
                    return Err(format!(
                        "/{} needs its argument `{}`: {}",
                        self.command,
                        argument.name,
                        self.usage()
                    ));
                }
                continue;
            }
            let word = if i + 1 == self.arguments.len() {
                std::mem::take(&mut rest)
            } else {
                let (word, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                rest = tail.trim_start();
                word
            };
            out.insert(argument.name.clone(), Value::String(word.to_string()));
        }
        Ok(out)
    }
}

impl ResourceInfo {
    pub fn new(server: &str, listed: &rmcp::model::Resource) -> ResourceInfo {
        ResourceInfo {
            server: server.to_string(),
            uri: listed.uri.clone(),
            name: listed.name.clone(),
            description: listed.description.clone().unwrap_or_default(),
        }
    }

    /// How a message mentions it.
    pub fn mention(&self) -> String {
        format!("@{}:{}", self.server, self.uri)
    }
}

/// A `prompts/get` result as the text of the user's message: each message's text in order,
/// embedded resources with their text, anything else named.
pub(crate) fn render_prompt(result: &Value) -> String {
    let parts: Vec<String> = result["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|message| render_content(&message["content"]))
        .filter(|part| !part.is_empty())
        .collect();
    parts.join("\n\n")
}

/// A `resources/read` result as an attachment.
pub(crate) fn render_resource(server: &str, uri: &str, result: &Value) -> String {
    let parts: Vec<String> = result["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| match c["text"].as_str() {
            Some(text) => text.to_string(),
            None => format!(
                "(binary content, {}, not attached)",
                c["mimeType"].as_str().unwrap_or("unknown type")
            ),
        })
        .collect();
    format!(
        "<resource server=\"{server}\" uri=\"{uri}\">\n{}\n</resource>",
        parts.join("\n")
    )
}

fn render_content(content: &Value) -> String {
    match content["type"].as_str() {
        Some("text") => content["text"].as_str().unwrap_or_default().to_string(),
        Some("resource") => {
            let resource = &content["resource"];
            let uri = resource["uri"].as_str().unwrap_or_default();
            match resource["text"].as_str() {
                Some(text) => format!("<resource uri=\"{uri}\">\n{text}\n</resource>"),
                None => format!("(binary resource {uri} not attached)"),
            }
        }
        Some(kind) => format!("({kind} content from the server not attached)"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn prompt(arguments: &[(&str, bool)]) -> PromptInfo {
        PromptInfo {
            command: "mcp__s__review".into(),
            server: "s".into(),
            name: "review".into(),
            description: String::new(),
            arguments: arguments
                .iter()
                .map(|(name, required)| PromptArgument {
                    name: name.to_string(),
                    required: *required,
                })
                .collect(),
        }
    }

    #[test]
    fn words_fill_arguments_in_order_and_the_last_takes_the_rest() {
        let p = prompt(&[("file", true), ("focus", false)]);
        let args = p
            .arguments_from("  src/a.rs  error handling please ")
            .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"file": "src/a.rs", "focus": "error handling please"})
        );
        let args = p.arguments_from("src/a.rs").unwrap();
        assert_eq!(Value::Object(args), json!({"file": "src/a.rs"}));
        let err = p.arguments_from("").unwrap_err();
        assert!(err.contains("`file`"), "{err}");
        assert!(err.contains("/mcp__s__review <file> [focus]"), "{err}");
        assert!(prompt(&[]).arguments_from("ignored").unwrap().is_empty());
    }

    #[test]
    fn prompt_and_resource_results_become_text() {
        let prompt = render_prompt(&json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Review this"}},
            {"role": "user", "content": {"type": "resource", "resource": {"uri": "x://1", "text": "body"}}},
            {"role": "user", "content": {"type": "image", "data": "", "mimeType": "image/png"}}
        ]}));
        assert_eq!(
            prompt,
            "Review this\n\n<resource uri=\"x://1\">\nbody\n</resource>\n\n(image content from the server not attached)"
        );
        let resource = render_resource(
            "s",
            "x://2",
            &json!({"contents": [{"uri": "x://2", "text": "hello"}, {"uri": "x://2", "blob": "AA==", "mimeType": "image/png"}]}),
        );
        assert_eq!(
            resource,
            "<resource server=\"s\" uri=\"x://2\">\nhello\n(binary content, image/png, not attached)\n</resource>"
        );
    }
}
