//! What the secret-scrubbing tests share: secret variables to start ouro with, and what the
//! fake `claude` (tests/fixtures/fake_claude.py) saw of them.

use serde_json::Value;

/// The names in the environment of each start of the fake `claude` logged in `log`.
pub(crate) fn fake_claude_envs(log: &std::path::Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| serde_json::from_value(v.get("env")?.clone()).ok())
        .collect()
}

/// The environment every brain and tool gets: no secret by name or by value, the API
/// credentials for the brain, and what the user passed by name.
pub(crate) fn assert_no_secrets(envs: &[Vec<String>], passed: Option<&str>) {
    assert!(!envs.is_empty(), "the brain never started");
    for env in envs {
        for secret in [
            "FOO_SECRET",
            "PGPASSWORD",
            "SLACK_WEBHOOK_URL",
            "WITH_CREDENTIALS",
        ] {
            assert!(!env.iter().any(|n| n == secret), "{secret} in {env:?}");
        }
        assert!(env.iter().any(|n| n == "ANTHROPIC_API_KEY"), "{env:?}");
        assert!(env.iter().any(|n| n == "PLAIN_VALUE"), "{env:?}");
        if let Some(passed) = passed {
            assert!(env.iter().any(|n| n == passed), "{passed} not in {env:?}");
        }
    }
}

/// Secrets by name and by value, one variable the user passes by name, and a plain one.
pub(crate) const SECRET_ENV: [(&str, &str); 6] = [
    ("FOO_SECRET", "hunter2"),
    ("PGPASSWORD", "pg"),
    ("SLACK_WEBHOOK_URL", "https://hooks.example/T000/B000"),
    ("WITH_CREDENTIALS", "postgres://me:pw@db.example/app"),
    ("KEEP_TOKEN", "kept"),
    ("PLAIN_VALUE", "plain"),
];
