//! Tests whose dependency is absent (the real `claude` CLI, an MCP server from npm, a kernel
//! feature) skip loudly instead of passing silently: each skip prints its reason as it happens,
//! and one summary line after libtest's own counts says how many tests skipped and why.
//!
//! Under `OURO_TEST_REQUIRE_ALL=1` (set by `.ci/run`, which installs every dependency) a skip
//! is a failure, so CI can never pass by skipping.

use std::io::Write;
use std::sync::{Mutex, Once};

static SKIPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());
static SUMMARY: Once = Once::new();

/// Records that the calling test skips because a program or package it drives is not
/// installed; the test then returns early. Panics instead when skips are not allowed (CI, which
/// installs them all).
pub(crate) fn not_installed(what: &str) {
    if std::env::var_os("OURO_TEST_REQUIRE_ALL").is_some_and(|v| v == "1") {
        panic!(
            "{} cannot run: {what} is not installed (OURO_TEST_REQUIRE_ALL=1 forbids skipping)",
            test_name()
        );
    }
    record(&format!("{what} is not installed"));
}

/// Records that the calling test skips because this kernel lacks what it tests (nothing an
/// install step can bring, so CI skips it too, counted).
pub(crate) fn kernel_lacks(what: &str) {
    record(&format!("this kernel lacks {what}"));
}

/// Records that the calling test skips because it could not mount the small disk it fills.
/// Root may always mount one: as root (CI) under `OURO_TEST_REQUIRE_ALL=1` this is a failure.
pub(crate) fn cannot_mount(what: &str) {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root && std::env::var_os("OURO_TEST_REQUIRE_ALL").is_some_and(|v| v == "1") {
        panic!(
            "{} cannot run: root could not mount {what} (OURO_TEST_REQUIRE_ALL=1 forbids skipping)",
            test_name()
        );
    }
    record(&format!("{what} could not be mounted"));
}

/// Records that the calling test skips because it needs root (to act as another user); CI
/// runs as root, where under `OURO_TEST_REQUIRE_ALL=1` this cannot happen.
pub(crate) fn needs_root(what: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return false;
    }
    record(&format!("only root can {what}"));
    true
}

fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string()
}

fn record(reason: &str) {
    let test = test_name();
    // libtest captures `eprintln!` of passing tests; a direct write to stderr is not captured,
    // so the reason shows in a plain `cargo test`.
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
    SKIPPED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push(format!("{test}: {reason}"));
    SUMMARY.call_once(|| {
        // SAFETY: `summary` is a plain `extern "C" fn()` with no preconditions; atexit runs it
        // once when libtest exits the process, after its own result lines.
        unsafe {
            libc::atexit(summary);
        }
    });
}

extern "C" fn summary() {
    let skipped = SKIPPED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut err = std::io::stderr();
    let _ = writeln!(err, "\n{} test(s) skipped:", skipped.len());
    for line in skipped.iter() {
        let _ = writeln!(err, "  {line}");
    }
}

/// Whether `program` is on PATH.
pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

/// Whether the MCP test server from npm is on PATH (a counted skip, or a failure in CI, if not).
pub(crate) fn mcp_everything() -> bool {
    let found = on_path("mcp-server-everything");
    if !found {
        not_installed(
            "mcp-server-everything (npm install -g @modelcontextprotocol/server-everything; .ci/run does)",
        );
    }
    found
}
