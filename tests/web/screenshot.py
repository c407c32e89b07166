"""Takes docs/command-center.png: a real `ouro serve` in Debian's Chromium (Playwright for
Python), on a small project, answering through the mock Messages API — the scripted turns of a
believable fix (search, read, an edit approved in the dialog, the summary).

Usage: python3 tests/web/screenshot.py <ouro binary> <work dir> <out.png>
The project is made as <work dir>/acme-api; a work dir such as /home/dev reads naturally.
"""

import json
import os
import signal
import subprocess
import sys

from playwright.sync_api import expect, sync_playwright

OURO, WORK, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
HOME = os.path.join(WORK, ".ouro-shot")
PROJECT = os.path.realpath(os.path.join(WORK, "acme-api"))
CHROMIUM = os.environ.get("OURO_TEST_CHROMIUM", "/usr/bin/chromium")

FILES = {
    "README.md": "# acme-api\n\nThe Acme accounts service.\n",
    "pyproject.toml": "[project]\nname = \"acme-api\"\nversion = \"0.4.2\"\n",
    "app/__init__.py": "",
    "app/auth.py": (
        "from datetime import datetime, timezone\n\n\n"
        "class Token:\n    def __init__(self, user, expires_at):\n"
        "        self.user = user\n        self.expires_at = expires_at\n\n\n"
        "def is_valid(token, now=None):\n"
        "    now = now or datetime.now(timezone.utc)\n"
        "    return token.expires_at < now\n"
    ),
    "tests/test_auth.py": (
        "from datetime import datetime, timedelta, timezone\n\nfrom app.auth import Token, is_valid\n\n\n"
        "def test_expired_token_is_refused():\n"
        "    past = datetime.now(timezone.utc) - timedelta(minutes=5)\n"
        "    assert not is_valid(Token(\"ada\", past))\n"
    ),
}
for rel, text in FILES.items():
    path = os.path.join(PROJECT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
os.makedirs(HOME, exist_ok=True)
with open(os.path.join(HOME, "settings.json"), "w") as f:
    json.dump({"trustedDirectories": [PROJECT]}, f)

AUTH = os.path.join(PROJECT, "app/auth.py")
scenario = {"turns": [
    {"expect_text": "expired", "delay_ms": 15, "content": [
        {"type": "text", "text": "I'll find where tokens are checked."},
        {"type": "tool_use", "name": "Grep", "input": {"pattern": "expires_at", "path": PROJECT}}]},
    {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": AUTH}}]},
    {"delay_ms": 15, "content": [
        {"type": "text", "text": "Found it: `is_valid` treats a token as valid only **after** it has expired."},
        {"type": "tool_use", "name": "Edit", "input": {
            "file_path": AUTH, "old_string": "return token.expires_at < now",
            "new_string": "return token.expires_at > now"}}]},
    {"delay_ms": 15, "content": [{"type": "text", "text": (
        "Fixed `app/auth.py:13`. `is_valid` compared `expires_at < now`, so expired tokens "
        "passed and fresh ones were refused; it now checks `expires_at > now`.\n\n"
        "`tests/test_auth.py::test_expired_token_is_refused` covers the expired case; run "
        "`pytest tests/test_auth.py` to confirm, and consider a test for a token that expires "
        "exactly now.")}]},
]}
with open(os.path.join(WORK, "shot-scenario.json"), "w") as f:
    json.dump(scenario, f)

env = dict(os.environ, OURO_HOME=HOME, HOME=HOME, ANTHROPIC_API_KEY="sk-ant-shot-0000")
env.pop("OURO_LOG", None)
mock = subprocess.Popen([OURO, "mock-server", "--scenario", os.path.join(WORK, "shot-scenario.json")],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
env["ANTHROPIC_BASE_URL"] = mock.stdout.readline().strip()
server = subprocess.Popen([OURO, "serve", "--port", "0", "--project", PROJECT],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=PROJECT)
try:
    url = server.stdout.readline().strip()[len("ouro serve: "):]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
        page.goto(url)
        page.click("#new-session")
        page.click("#create")
        expect(page.locator("#input")).to_be_enabled()
        page.fill("#input", "The expired-token test fails: expired tokens get through. Fix it.")
        page.press("#input", "Enter")
        expect(page.locator("#permission-dialog")).to_be_visible(timeout=30000)
        page.click("#allow")
        expect(page.locator(".msg.assistant").last).to_contain_text("exactly now", timeout=30000)
        expect(page.locator("#input")).to_be_enabled()
        page.locator("#input").blur()
        page.screenshot(path=OUT)
        browser.close()
finally:
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=30)
    mock.kill()
