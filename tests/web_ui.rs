//! The command center of `ouro serve` in a real headless browser: Debian's Chromium driven by
//! Playwright for Python (`tests/web/test_ui.py`), against a real server and the mock API.

use std::path::Path;

const CHROMIUM: &str = "/usr/bin/chromium";

fn browser_stack() -> bool {
    let chromium = std::env::var("OURO_TEST_CHROMIUM").unwrap_or_else(|_| CHROMIUM.into());
    let playwright = std::process::Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .output()
        .is_ok_and(|o| o.status.success());
    let found = Path::new(&chromium).is_file() && playwright;
    if !found {
        crate::common::skip::not_installed(
            "Chromium and Playwright for Python (apt-get install chromium; pip install playwright; .ci/run does)",
        );
    }
    found
}

#[tokio::test]
async fn the_command_center_works_in_a_real_browser() {
    if !browser_stack() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web/test_ui.py");
    let mut command = tokio::process::Command::new("python3");
    command
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_ouro"))
        .arg(work.path())
        .kill_on_drop(true);
    if let Ok(shot) = std::env::var("OURO_TEST_SCREENSHOT") {
        command.arg(shot);
    }
    let output = tokio::time::timeout(std::time::Duration::from_secs(300), command.output())
        .await
        .expect("the browser test finished within 5 minutes")
        .unwrap();
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
