//! What a `task:initialize` names, made ready: the agent (a definition file or an instance's
//! `config.json`, with its prompt), the tree it works in (a cats bundle's files written into a
//! fresh folder), and the brain it runs on.

use std::path::Path;

use super::IpcError;
use crate::agents::instance::InstanceConfig;

/// The agent a task runs as.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Agent {
    pub config: InstanceConfig,
    /// Appended to the brain's system prompt; may be empty.
    pub prompt: String,
    /// What in the definition was ignored (unknown keys).
    pub warnings: Vec<String>,
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> IpcError + use<> {
    let path = path.to_path_buf();
    move |source| IpcError::Io { what, path, source }
}

/// Loads `config_path`: a `.json` file is an instance's `config.json` (its prompt the
/// `system_prompt.md` beside it, when there is one), anything else a definition file whose
/// body is the prompt. `prompt_path`, when given, replaces that prompt.
pub(super) fn load_agent(
    config_path: &Path,
    prompt_path: Option<&Path>,
) -> Result<Agent, IpcError> {
    let mut agent = if config_path.extension().is_some_and(|e| e == "json") {
        let text = std::fs::read_to_string(config_path).map_err(io("read", config_path))?;
        let config = serde_json::from_str(&text).map_err(|source| IpcError::Config {
            path: config_path.to_path_buf(),
            source,
        })?;
        let beside = config_path.with_file_name("system_prompt.md");
        Agent {
            config,
            prompt: std::fs::read_to_string(beside).unwrap_or_default(),
            warnings: Vec::new(),
        }
    } else {
        let parsed = crate::agents::spec::load_file(config_path)?;
        Agent {
            config: InstanceConfig::from_spec(&parsed.spec, &parsed.spec.name),
            prompt: parsed.spec.prompt,
            warnings: parsed.warnings,
        }
    };
    if let Some(path) = prompt_path {
        agent.prompt = std::fs::read_to_string(path).map_err(io("read", path))?;
    }
    Ok(agent)
}

/// The brain an agent runs on: its definition's `engine.brain`, else ouro's own brain on its
/// model, else ouro's on Sonnet.
pub(super) fn brain_slug(config: &InstanceConfig) -> Result<String, IpcError> {
    crate::brain::slug::for_agent(config, None).map_err(|model| IpcError::UnknownModel {
        agent: config.name.clone(),
        model,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFINITION: &str = "---\nname: fixer\nmodel: sonnet\npermissionMode: default\nflavour: x\ntools:\n  - Read\n  - name: Bash\n    denied_commands: ['rm .*']\n---\nYou fix things.\n";

    #[test]
    fn a_definition_or_an_instance_config_loads_and_a_prompt_file_replaces_the_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("fixer.agent.md");
        std::fs::write(&file, DEFINITION).unwrap();
        let agent = load_agent(&file, None).unwrap();
        assert_eq!(agent.config.name, "fixer");
        assert_eq!(agent.config.denied_commands, ["rm .*"]);
        assert_eq!(agent.prompt, "You fix things.");
        assert!(
            agent.warnings.iter().any(|w| w.contains("flavour")),
            "{:?}",
            agent.warnings
        );
        assert_eq!(
            brain_slug(&agent.config).unwrap(),
            crate::brain::slug::for_model("ouro", "sonnet").unwrap()
        );

        let instance = dir.path().join("instance");
        std::fs::create_dir(&instance).unwrap();
        let json = instance.join("config.json");
        std::fs::write(&json, serde_json::to_vec(&agent.config).unwrap()).unwrap();
        let loaded = load_agent(&json, None).unwrap();
        assert_eq!(loaded.config, agent.config);
        assert_eq!(loaded.prompt, "", "no system_prompt.md beside it");
        std::fs::write(instance.join("system_prompt.md"), "Stored prompt.").unwrap();
        assert_eq!(load_agent(&json, None).unwrap().prompt, "Stored prompt.");
        let prompt = dir.path().join("prompt.md");
        std::fs::write(&prompt, "Given prompt.").unwrap();
        assert_eq!(
            load_agent(&json, Some(&prompt)).unwrap().prompt,
            "Given prompt."
        );
        assert_eq!(
            load_agent(&file, Some(&prompt)).unwrap().prompt,
            "Given prompt."
        );

        std::fs::write(&json, "{\"name\": 3}").unwrap();
        let err = load_agent(&json, None).unwrap_err().to_string();
        assert!(err.contains("config.json"), "{err}");
        let err = load_agent(&dir.path().join("none.md"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("none.md"), "{err}");
    }

    #[test]
    fn the_brain_is_the_definitions_else_ouro_on_its_model_else_ouro_on_sonnet() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.md");
        std::fs::write(
            &file,
            "---\nengine:\n  brain: claude@anthropic/claude/opus\n---\nP.",
        )
        .unwrap();
        let config = load_agent(&file, None).unwrap().config;
        assert_eq!(brain_slug(&config).unwrap(), "claude@anthropic/claude/opus");
        std::fs::write(&file, "---\nmodel: no-such-model\n---\nP.").unwrap();
        let config = load_agent(&file, None).unwrap().config;
        let err = brain_slug(&config).unwrap_err().to_string();
        assert!(
            err.contains("no-such-model") && err.contains("engine.brain"),
            "{err}"
        );
        std::fs::write(&file, "---\ndescription: d\n---\nP.").unwrap();
        let config = load_agent(&file, None).unwrap().config;
        assert_eq!(brain_slug(&config).unwrap(), "ouro@anthropic/claude/sonnet");
    }
}
