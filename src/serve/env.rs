//! The environment a served turn's processes get: the server's, without what looks like a
//! secret, plus a short allow-list. The brain gets the API credentials it needs; ouro as a
//! brain moves them out of its own environment before any tool process starts, so a tool
//! never sees them.

use std::ffi::OsString;

/// Names ending so are secrets.
const SECRET_SUFFIXES: &[&str] = &[
    "_SECRET",
    "_PASSWORD",
    "_CREDENTIAL",
    "_CREDENTIALS",
    "_KEY",
    "_TOKEN",
    "_API_KEY",
];
/// Whole names that are secrets.
const SECRET_NAMES: &[&str] = &[
    "DATABASE_URL",
    "REDIS_URL",
    "PGPASSWORD",
    "MYSQL_PWD",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
];
/// Kept whatever their names say.
const ALWAYS: &[&str] = &["PATH", "HOME", "USER", "SHELL", "TERM", "LANG"];
/// A brain needs these to reach the API.
const BRAIN_CREDENTIALS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
];

/// Whether the claude CLI can scrub its tool processes' environment here (it refuses to start
/// when told to without bubblewrap).
pub fn claude_can_scrub() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("bwrap").is_file()))
}

pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str()) || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

const SCRUB: &str = "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB";

/// `vars` without secrets, keeping [`ALWAYS`], the brain's credentials and `pass` (the
/// setting's names). With `scrub`, the claude CLI is told to keep the credentials from its
/// own tool processes (`CLAUDE_CODE_SUBPROCESS_ENV_SCRUB`, which needs bubblewrap), as ouro
/// always does.
pub fn filtered(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    pass: &[String],
    scrub: bool,
) -> Vec<(OsString, OsString)> {
    let told = scrub.then(|| (OsString::from(SCRUB), OsString::from("1")));
    vars.into_iter()
        .filter(|(name, _)| name != SCRUB)
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            ALWAYS.contains(&name.as_ref())
                || BRAIN_CREDENTIALS.contains(&name.as_ref())
                || pass.iter().any(|p| p == name.as_ref())
                || !is_secret(&name)
        })
        .chain(told)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(vars: &[(&str, &str)], pass: &[String]) -> Vec<String> {
        filtered(
            vars.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
            pass,
            true,
        )
        .into_iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect()
    }

    #[test]
    fn secrets_go_and_the_allow_list_stays() {
        let vars = [
            ("PATH", "/bin"),
            ("FOO_SECRET", "x"),
            ("db_password", "x"),
            ("AWS_ACCESS_KEY", "x"),
            ("GITHUB_TOKEN", "x"),
            ("MY_CREDENTIAL", "x"),
            ("DATABASE_URL", "x"),
            ("REDIS_URL", "x"),
            ("ANTHROPIC_API_KEY", "k"),
            ("ANTHROPIC_BASE_URL", "http://x"),
            ("EDITOR", "vi"),
            ("KEEP_TOKEN", "x"),
        ];
        assert_eq!(
            names(&vars, &["KEEP_TOKEN".into()]),
            [
                "PATH",
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_BASE_URL",
                "EDITOR",
                "KEEP_TOKEN",
                "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB"
            ]
        );
    }
}
