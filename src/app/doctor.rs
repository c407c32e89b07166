//! `ouro doctor` and `/doctor`: what this machine and configuration give ouro, each line with
//! what to do when it is missing.

use std::fmt::Write as _;
use std::path::Path;

use super::Options;

/// The report. `transcript`: `Some` inside a session (its transcript, if saved); `None` when
/// asked from the command line, where no session runs.
pub async fn report(
    options: &Options,
    cwd: &Path,
    base_url: &str,
    transcript: Option<Option<&Path>>,
) -> String {
    let mut out = String::new();
    let mut check = |ok: bool, what: String| {
        let _ = writeln!(out, "{} {what}", if ok { "✓" } else { "✗" });
    };
    let key = std::env::var("ANTHROPIC_API_KEY").is_ok_and(|k| !k.trim().is_empty());
    let token = std::env::var("ANTHROPIC_AUTH_TOKEN").is_ok_and(|k| !k.trim().is_empty());
    check(
        key || token,
        match (key, token) {
            (true, _) => "API key: ANTHROPIC_API_KEY is set".into(),
            (false, true) => "API key: ANTHROPIC_AUTH_TOKEN is set (sent as a Bearer token)".into(),
            _ => "API key: none; export ANTHROPIC_API_KEY".into(),
        },
    );
    crate::api::client::install_crypto();
    let reachable = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(5))
        .build()
        .map(|c| c.get(base_url).send());
    let reached = match reachable {
        Ok(request) => request.await.map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    check(
        reached.is_ok(),
        match &reached {
            Ok(()) => format!("API: {base_url} answers"),
            Err(e) => format!(
                "API: {base_url} cannot be reached ({e}); check ANTHROPIC_BASE_URL and the network"
            ),
        },
    );
    let support = crate::sys::sandbox::Support::detect();
    check(
        matches!(support, crate::sys::sandbox::Support::Landlock(_)),
        format!("Sandbox: {}", support.describe()),
    );
    let settings = super::load_settings(options, cwd);
    check(
        settings.is_ok(),
        match &settings {
            Ok(_) => "Settings: every file reads (unknown keys are named when they load)".into(),
            Err(e) => format!("Settings: {e}"),
        },
    );
    let git = std::process::Command::new("git").arg("--version").output();
    check(
        git.as_ref().is_ok_and(|o| o.status.success()),
        "git: found (status in the system prompt, /review)".into(),
    );
    if let Some(transcript) = transcript {
        check(
            transcript.is_some(),
            match transcript {
                Some(p) => format!("Transcript: {}", p.display()),
                None => "Transcript: this session is not saved".into(),
            },
        );
    }
    out
}
