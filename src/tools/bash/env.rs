//! The Bash child's environment: ours, minus anything that looks like a secret the model has no
//! business seeing, unless the user let it through by name.

use std::ffi::OsString;

/// Variable name endings that mark a secret.
const SECRET_SUFFIXES: &[&str] = &[
    "_KEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_CREDENTIAL",
    "_CREDENTIALS",
];

/// The environment for the child: ours without anything that looks like a secret, except the
/// names the user let through.
pub fn child_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    passthrough: &[String],
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(name, value)| {
            let name = name.to_string_lossy();
            passthrough.iter().any(|p| *p == name) || !is_secret(&name, &value.to_string_lossy())
        })
        .collect()
}

fn is_secret(name: &str, value: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_SUFFIXES
        .iter()
        .any(|s| upper.ends_with(s) || upper == s[1..])
        || has_url_credentials(value)
}

/// `scheme://user:pass@host/...` or `scheme://token@host`.
fn has_url_credentials(value: &str) -> bool {
    let Some(at) = value.find("://") else {
        return false;
    };
    let scheme = &value[..at];
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return false;
    }
    let rest = &value[at + 3..];
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority.contains('@')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_detection() {
        assert!(is_secret("ANTHROPIC_API_KEY", "x"));
        assert!(is_secret("aws_secret", "x"));
        assert!(is_secret("GOOGLE_APPLICATION_CREDENTIALS", "x"));
        assert!(is_secret("TOKEN", "x"));
        assert!(is_secret("REDIS", "redis://:pw@localhost:6379"));
        assert!(is_secret("REMOTE", "https://ghp_abc@github.com/o/r"));
        assert!(!is_secret("KEYBOARD", "us"));
        assert!(!is_secret("PATH", "/usr/bin:/bin"));
        assert!(!is_secret("MAILTO", "mailto:a@b.c"));
    }
}
