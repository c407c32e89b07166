//! What ouro counts as a secret, and how it keeps secrets from the processes it starts. These
//! rules live here only: every process ouro starts (a brain, a Bash call, a hook, an MCP server,
//! a daemon clone) gets its environment through [`tool_env`] or [`brain_env`], and whatever
//! bundles or stores text checks it with [`find_in_text`].
//!
//! ## Environment
//! A variable is a secret by its name ([`is_secret_name`]: `*_TOKEN`, `*_PASSWORD`,
//! `DATABASE_URL`, `SSH_AUTH_SOCK`, …) or by its value (a URL with credentials in it). Secrets are
//! left out unless the user kept the name (settings `envPassthrough`, `--pass-env NAME`). A
//! brain keeps the API credentials it needs ([`BRAIN_CREDENTIALS`]); its own tools never see
//! them (ouro's Bash filters them again, and the claude CLI is told to with
//! `CLAUDE_CODE_SUBPROCESS_ENV_SCRUB`). The names kept travel to a brain in [`PASS_ENV`], so the
//! tools of an `ouro@` brain keep them too.
//!
//! ## Credentials in ouro's own memory
//! `/proc/<pid>/environ` shows the environment block a process started with, to every process
//! of the same user and to root, whatever the process did with its variables since. So ouro
//! makes itself non-dumpable (as ssh-agent does: its `/proc` files then belong to root), and
//! moves each credential out of that block: the variable gets a copy on the heap (so ouro and
//! the brains it starts still see it) and the original bytes are zeroed, so even root reading
//! `/proc/<pid>/environ` finds nothing. Tool processes never get the credentials at all.

use std::ffi::{CStr, OsStr, OsString};

/// The variables that hold credentials for the Messages API in ouro's own environment.
pub(crate) const CREDENTIALS: [&str; 2] = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"];

/// What a brain needs to reach the API: kept in a brain's environment, never in a tool's.
pub(crate) const BRAIN_CREDENTIALS: [&str; 3] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
];

/// The variable that carries the names the user kept to an `ouro@` brain, comma-separated.
pub(crate) const PASS_ENV: &str = "OURO_PASS_ENV";

/// Names a brain's starter keeps from the brain's tools although they do not look secret: the
/// variables a client forwarded to a clone in a zone (`--forward-env ANTHROPIC_BASE_URL`).
pub(crate) const SCRUB_ENV: &str = "OURO_SCRUB_ENV";

/// Tells the claude CLI to keep the API credentials from its tool processes (it needs
/// bubblewrap for that, and refuses to start without it).
const CLAUDE_SCRUB: &str = "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB";

/// Name endings that mark a secret (compared in upper case).
const SECRET_SUFFIXES: &[&str] = &[
    "_SECRET",
    "_SECRETS",
    "_PASSWORD",
    "_PASSWD",
    "_PWD",
    "_CREDENTIAL",
    "_CREDENTIALS",
    "_KEY",
    "_KEYS",
    "_TOKEN",
    "_TOKENS",
    "_PAT",
    "_JWT",
    "_DSN",
    "_WEBHOOK_URL",
    "_AUTH",
];

/// Whole names that are secrets: the bare forms of the endings, and well-known ones.
const SECRET_NAMES: &[&str] = &[
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIALS",
    "KEY",
    "TOKEN",
    "JWT",
    "DSN",
    "DATABASE_URL",
    "REDIS_URL",
    "PGPASSWORD",
    "MYSQL_PWD",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
];

/// Name beginnings that mark a secret.
const SECRET_PREFIXES: &[&str] = &["PRIVATE_KEY"];

/// Whether a variable of this name holds a secret, whatever its value.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str())
        || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
        || SECRET_PREFIXES.iter().any(|p| upper.starts_with(p))
}

/// Whether this variable is a secret, by its name or by credentials inside a URL value.
pub(crate) fn is_secret(name: &OsStr, value: &OsStr) -> bool {
    is_secret_name(&name.to_string_lossy()) || has_url_credentials(&value.to_string_lossy())
}

/// `scheme://user:pass@host/...` or `scheme://token@host`, anywhere in the value (a list of
/// URLs too).
pub(crate) fn has_url_credentials(value: &str) -> bool {
    value.match_indices("://").any(|(at, _)| {
        let scheme = value[..at]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .next()
            .unwrap_or_default();
        let rest = &value[at + 3..];
        let authority = rest
            .split(['/', '?', '#', ' ', ',', ';', '"', '\''])
            .next()
            .unwrap_or_default();
        !scheme.is_empty() && authority.contains('@')
    })
}

/// Variables an Agent SDK set for the session's commands (`update_environment_variables`).
/// ouro's own environment stays as it started (changing it while threads run is unsound);
/// every tool process gets these over it instead.
static SET_FOR_TOOLS: std::sync::Mutex<Vec<(OsString, OsString)>> =
    std::sync::Mutex::new(Vec::new());

/// Sets `vars` for every tool process started from now on, over what came before.
pub fn set_for_tools(vars: impl IntoIterator<Item = (String, String)>) {
    let mut set = crate::sys::sync::lock(&SET_FOR_TOOLS);
    for (name, value) in vars {
        let name = OsString::from(name);
        set.retain(|(n, _)| *n != name);
        set.push((name, value.into()));
    }
}

/// The environment of a tool process (Bash, a hook, an MCP server): `vars` without secrets,
/// except the names in `keep`, and what an SDK set for tools over them.
pub fn tool_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    keep: &[String],
) -> Vec<(OsString, OsString)> {
    let scrub: Vec<String> = std::env::var(SCRUB_ENV)
        .map(|names| names.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let mut env = without_secrets(vars, keep, &scrub);
    let set = crate::sys::sync::lock(&SET_FOR_TOOLS);
    if !set.is_empty() {
        env.retain(|(name, _)| !set.iter().any(|(n, _)| n == name));
        env.extend(set.iter().cloned());
    }
    env
}

/// `vars` without secrets and the names in `scrub`, except the names in `keep`.
fn without_secrets(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    keep: &[String],
    scrub: &[String],
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(name, value)| kept(name, keep) || !(is_secret(name, value) || kept(name, scrub)))
        .collect()
}

/// The environment of a brain: [`tool_env`], plus the API credentials, the names kept (also
/// listed in [`PASS_ENV`] for the brain's own tools), and the claude CLI told to keep the
/// credentials from its tools where it can.
pub fn brain_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    keep: &[String],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vars
        .into_iter()
        .filter(|(name, _)| name != CLAUDE_SCRUB && name != PASS_ENV)
        .filter(|(name, value)| {
            BRAIN_CREDENTIALS.iter().any(|c| name == c)
                || kept(name, keep)
                || !is_secret(name, value)
                // How the brain reaches the API, credentials in the URL or not.
                || (reaches_api(name) && !is_secret_name(&name.to_string_lossy()))
        })
        .collect();
    if !keep.is_empty() {
        env.push((PASS_ENV.into(), keep.join(",").into()));
    }
    if claude_can_scrub() {
        env.push((CLAUDE_SCRUB.into(), "1".into()));
    }
    env
}

/// The names kept for this process by the brain that started it ([`PASS_ENV`]).
pub fn inherited_keep() -> Vec<String> {
    std::env::var(PASS_ENV)
        .map(|names| {
            names
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// A proxy or the API's address: a brain needs it as set, even with credentials in its URL.
fn reaches_api(name: &OsStr) -> bool {
    let upper = name.to_string_lossy().to_ascii_uppercase();
    upper == "ANTHROPIC_BASE_URL" || upper.ends_with("_PROXY")
}

fn kept(name: &OsStr, keep: &[String]) -> bool {
    keep.iter().any(|k| OsStr::new(k) == name)
}

/// Whether the claude CLI can scrub its tool processes' environment here (it refuses to start
/// when told to without bubblewrap).
pub fn claude_can_scrub() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("bwrap").is_file()))
}

/// Text that looks like a secret, by content: a private key block (wherever it stands: after a
/// certificate, inside a JSON string) or a token of a known format. The byte range of the
/// first one in the text.
pub(crate) fn find_in_text(text: &str) -> Option<std::ops::Range<usize>> {
    let key = memchr::memmem::find_iter(text.as_bytes(), "-----BEGIN ").find_map(|at| {
        let label_end = text[at + 11..].find("-----")? + at + 11;
        if !text[at + 11..label_end].ends_with("PRIVATE KEY") {
            return None;
        }
        // To the end of the matching END line's dashes, or of the text when it is cut.
        let stop = text[label_end + 5..]
            .find("-----END ")
            .and_then(|e| {
                let from = label_end + 5 + e + 9;
                text[from..].find("-----").map(|d| from + d + 5)
            })
            .unwrap_or(text.len());
        Some(at..stop)
    });
    find_token(text)
        .into_iter()
        .chain(key)
        .min_by_key(|range| range.start)
}

/// Why a file is a secret by its name (an env file, a private key, a credentials file), if it
/// is.
pub fn secret_file(path: &std::path::Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    let lower = name.to_ascii_lowercase();
    // Templates of env files are meant to be shared.
    const SHARED_ENV: [&str; 4] = [".example", ".sample", ".template", ".dist"];
    if lower == ".env"
        || (lower.starts_with(".env.") && !SHARED_ENV.iter().any(|s| lower.ends_with(s)))
    {
        return Some("an environment file");
    }
    const SSH_KEYS: [&str; 6] = [
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_ed25519_sk",
    ];
    if SSH_KEYS.contains(&lower.as_str()) {
        return Some("an SSH private key");
    }
    const KEY_EXTENSIONS: [&str; 5] = [".pem", ".key", ".p12", ".pfx", ".jks"];
    if KEY_EXTENSIONS.iter().any(|e| lower.ends_with(e)) {
        return Some("a key or certificate store");
    }
    const CREDENTIAL_FILES: [&str; 6] = [
        ".netrc",
        ".pgpass",
        ".git-credentials",
        "credentials",
        "credentials.json",
        ".htpasswd",
    ];
    if CREDENTIAL_FILES.contains(&lower.as_str()) {
        return Some("a credentials file");
    }
    None
}

/// `text` with every secret [`find_in_text`] finds replaced by `[redacted]`.
pub fn redact(text: &str) -> std::borrow::Cow<'_, str> {
    let Some(mut range) = find_in_text(text) else {
        return text.into();
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        out.push_str(&rest[..range.start]);
        out.push_str("[redacted]");
        rest = &rest[range.end..];
        match find_in_text(rest) {
            Some(next) => range = next,
            None => break,
        }
    }
    out.push_str(rest);
    out.into()
}

/// The known token formats: each a fixed start (as a pattern: `xox[A-Za-z]-` is Slack's
/// `xoxb-`, `xoxp-`, …), then at least so many characters of `[A-Za-z0-9_-]`.
const TOKEN_FORMATS: &[(&str, usize)] = &[
    ("sk-ant-", 20),
    ("ghp_", 30),
    ("gho_", 30),
    ("ghs_", 30),
    ("ghu_", 30),
    ("github_pat_", 30),
    ("xox[A-Za-z]-", 10),
    ("AKIA", 16),
    ("ASIA", 16),
    ("glpat-", 20),
    ("sk_live_", 20),
    ("npm_", 36),
];

/// One pattern for every format, so a text is read once however many formats there are; the
/// formats' fixed starts let the search skip ahead to candidates (cats scans every file).
static TOKENS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    let alternatives: Vec<String> = TOKEN_FORMATS
        .iter()
        .map(|(start, body)| format!("{start}[A-Za-z0-9_-]{{{body},}}"))
        .collect();
    regex::Regex::new(&alternatives.join("|")).expect("the token formats are a valid pattern")
});

/// The first token of a known format in `text`.
fn find_token(text: &str) -> Option<std::ops::Range<usize>> {
    let body = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    let mut from = 0;
    while let Some(found) = TOKENS.find_at(text, from) {
        // A token starts a word: `XAKIA…` is not an AWS key id.
        if found.start() == 0 || !body(text.as_bytes()[found.start() - 1]) {
            return Some(found.range());
        }
        from = found.start() + 1;
    }
    None
}

/// Hides the credentials as the module says.
///
/// # Safety
/// Must run before any other thread exists: it changes the environment.
pub unsafe fn hide_credentials() {
    // SAFETY: prctl with PR_SET_DUMPABLE takes plain integers.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    for name in CREDENTIALS {
        let Some(value) = std::env::var_os(name) else {
            continue;
        };
        // SAFETY: single-threaded (the caller's promise), and the pointers come from environ.
        unsafe {
            let Some(original) = entry(name) else {
                continue;
            };
            // glibc's setenv stores a new "NAME=value" string and points environ at it.
            std::env::set_var(name, &value);
            if entry(name) == Some(original) {
                continue;
            }
            let bytes = CStr::from_ptr(original).to_bytes().len();
            std::ptr::write_bytes(original, 0, bytes);
        }
    }
}

/// The environ entry `NAME=...`, if there is one.
///
/// # Safety
/// No other thread may change the environment meanwhile.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe fn entry(name: &str) -> Option<*mut libc::c_char> {
    let prefix = format!("{name}=");
    // SAFETY: environ is a NULL-terminated array of NUL-terminated strings.
    unsafe {
        let mut at = libc::environ;
        while !at.is_null() && !(*at).is_null() {
            if CStr::from_ptr(*at)
                .to_bytes()
                .starts_with(prefix.as_bytes())
            {
                return Some(*at);
            }
            at = at.add(1);
        }
    }
    None
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
unsafe fn entry(_name: &str) -> Option<*mut libc::c_char> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(vars: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        vars.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(env: Vec<(OsString, OsString)>) -> Vec<String> {
        env.into_iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn forwarded_names_are_kept_from_tools_though_they_look_plain() {
        let vars = os(&[
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
            ("PATH", "/bin"),
            ("GITHUB_TOKEN", "x"),
        ]);
        let scrub = vec!["ANTHROPIC_BASE_URL".to_string()];
        assert_eq!(names(without_secrets(vars.clone(), &[], &scrub)), ["PATH"]);
        assert_eq!(
            names(without_secrets(
                vars,
                &["ANTHROPIC_BASE_URL".into()],
                &scrub
            )),
            ["ANTHROPIC_BASE_URL", "PATH"]
        );
    }

    #[test]
    fn secret_names() {
        for name in [
            "FOO_SECRET",
            "db_password",
            "LDAP_PASSWD",
            "MYSQL_ROOT_PWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AWS_CREDENTIAL",
            "ANTHROPIC_API_KEY",
            "SIGNING_KEYS",
            "GITHUB_TOKEN",
            "GITLAB_PAT",
            "SESSION_JWT",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
            "PRIVATE_KEY",
            "PRIVATE_KEY_PATH",
            "NPM_AUTH",
            "DATABASE_URL",
            "REDIS_URL",
            "PGPASSWORD",
            "MYSQL_PWD",
            "SSH_AUTH_SOCK",
            "TOKEN",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "PATH",
            "PWD",
            "OLDPWD",
            "KEYBOARD",
            "HOME",
            "TERM",
            "EDITOR",
            "AUTHOR",
            "XAUTHORITY",
            "ANTHROPIC_BASE_URL",
            "LANG",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn credentials_inside_urls() {
        assert!(has_url_credentials("redis://:pw@localhost:6379"));
        assert!(has_url_credentials("https://ghp_abc@github.com/o/r"));
        assert!(has_url_credentials("http://a.b/x https://u:p@c.d/"));
        assert!(!has_url_credentials("mailto:a@b.c"));
        assert!(!has_url_credentials("https://github.com/o/r?who=a@b"));
        assert!(!has_url_credentials("/usr/bin:/bin"));
    }

    #[test]
    fn tools_lose_secrets_and_keep_what_the_user_named() {
        let vars = os(&[
            ("PATH", "/bin"),
            ("FOO_SECRET", "x"),
            ("PGPASSWORD", "x"),
            ("ANTHROPIC_API_KEY", "k"),
            ("REMOTE", "https://u:p@h/"),
            ("KEEP_TOKEN", "x"),
            ("EDITOR", "vi"),
        ]);
        assert_eq!(
            names(tool_env(vars, &["KEEP_TOKEN".into()])),
            ["PATH", "KEEP_TOKEN", "EDITOR"]
        );
    }

    #[test]
    fn a_brain_keeps_its_credentials_and_passes_the_kept_names_on() {
        let vars = os(&[
            ("PATH", "/bin"),
            ("ANTHROPIC_API_KEY", "k"),
            ("CLAUDE_CODE_OAUTH_TOKEN", "t"),
            ("SLACK_WEBHOOK_URL", "https://hooks/x"),
            ("KEEP_TOKEN", "x"),
            (PASS_ENV, "SMUGGLED_TOKEN"),
            (CLAUDE_SCRUB, "0"),
        ]);
        let env = brain_env(vars, &["KEEP_TOKEN".into()]);
        let pass = env
            .iter()
            .find(|(k, _)| k == PASS_ENV)
            .map(|(_, v)| v.clone());
        assert_eq!(pass, Some(OsString::from("KEEP_TOKEN")));
        let names = names(env);
        assert_eq!(
            names[..4],
            [
                "PATH",
                "ANTHROPIC_API_KEY",
                "CLAUDE_CODE_OAUTH_TOKEN",
                "KEEP_TOKEN"
            ]
        );
        assert!(!names.contains(&"SLACK_WEBHOOK_URL".to_string()));
        assert_eq!(
            names.iter().filter(|n| *n == CLAUDE_SCRUB).count(),
            usize::from(claude_can_scrub())
        );
    }

    #[test]
    fn secret_files_by_name() {
        use std::path::Path;
        for secret in [
            ".env",
            "app/.env.production",
            ".ssh/id_rsa",
            "id_ed25519",
            "tls/server.pem",
            "a.key",
            "store.p12",
            ".netrc",
            ".aws/credentials",
            ".git-credentials",
        ] {
            assert!(secret_file(Path::new(secret)).is_some(), "{secret}");
        }
        for plain in [
            ".env.example",
            "id_rsa.pub",
            "src/main.rs",
            "keyboard.rs",
            ".envrc",
            "id_generator.py",
        ] {
            assert!(secret_file(Path::new(plain)).is_none(), "{plain}");
        }
    }

    #[test]
    fn secrets_in_text() {
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n";
        let text = format!("before\n{key}after");
        // The block ends with the END line's dashes; the line break after it stays.
        assert_eq!(find_in_text(&text), Some(7..7 + key.len() - 1));
        assert_eq!(redact(&text), "before\n[redacted]\nafter");
        for token in [
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "xoxb-1234567890-abcdefghij",
            "AKIAIOSFODNN7EXAMPLE",
        ] {
            let text = format!("token = \"{token}\";");
            assert_eq!(redact(&text), "token = \"[redacted]\";", "{token}");
        }
        for plain in [
            "a public key: -----BEGIN PUBLIC KEY-----\nabc\n-----END PUBLIC KEY-----\n",
            "ghp_short",
            "MAKIAIOSFODNN7EXAMPLE",
            "the sk-ant- prefix alone",
        ] {
            assert_eq!(find_in_text(plain), None, "{plain}");
        }
        assert_eq!(
            redact("ghp_abcdefghijklmnopqrstuvwxyz0123456789 and AKIAIOSFODNN7EXAMPLE"),
            "[redacted] and [redacted]"
        );
        assert_eq!(
            redact("AKIAIOSFODNN7EXAMPLE then ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            "[redacted] then [redacted]"
        );
        // After a certificate, and inside a JSON string with its newlines escaped.
        let chain = "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
        assert_eq!(
            redact(chain),
            "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n[redacted]\n"
        );
        let json = r#"{"private_key": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n", "x": 1}"#;
        assert_eq!(redact(json), r#"{"private_key": "[redacted]\n", "x": 1}"#);
        // A proxy with credentials still reaches a brain; a tool does not get it.
        let vars = os(&[("HTTPS_PROXY", "http://u:p@proxy:3128")]);
        assert_eq!(names(brain_env(vars.clone(), &[]))[0], "HTTPS_PROXY");
        assert!(tool_env(vars, &[]).is_empty());
    }
}
