"""The command center in a real browser (Debian's Chromium, driven by Playwright for Python)
against a real `ouro serve` and the mock Messages API.

Usage: python3 test_ui.py <ouro binary> <work dir> [screenshot.png]
Exit status 0 when every check passed; the first failed check is printed.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

from playwright.sync_api import expect, sync_playwright

OURO, WORK = sys.argv[1], sys.argv[2]
SCREENSHOT = sys.argv[3] if len(sys.argv) > 3 else None
HOME = os.path.join(WORK, "home")
PROJECT = os.path.join(WORK, "project")
CHROMIUM = os.environ.get("OURO_TEST_CHROMIUM", "/usr/bin/chromium")
LONG = " ".join(f"word{i}" for i in range(40))

os.makedirs(HOME, exist_ok=True)
os.makedirs(os.path.join(PROJECT, "agents"), exist_ok=True)
PROJECT = os.path.realpath(PROJECT)
with open(os.path.join(PROJECT, "README.md"), "w") as f:
    f.write("# Demo project\n")
with open(os.path.join(PROJECT, "agents", "AGENT_HELPER.md"), "w") as f:
    f.write("---\nname: helper\ndescription: Helps with files\ntools: Read, Write, Bash\n---\nYou help.\n")
with open(os.path.join(HOME, "settings.json"), "w") as f:
    json.dump({"trustedDirectories": [PROJECT]}, f)


def write(name):
    return {"type": "tool_use", "name": "Write",
            "input": {"file_path": os.path.join(PROJECT, name), "content": f"{name}\n"}}


scenario = {"turns": [
    {"expect_text": "first", "delay_ms": 40, "content": [
        {"type": "text", "text": "Let me **write** two files, `a.txt` and `b.txt`."}, write("a.txt")]},
    {"content": [write("b.txt")]},
    {"content": [{"type": "text", "text": "One written, one refused."}]},
    {"expect_text": "long", "hold_after_events": 4, "content": [{"type": "text", "text": LONG}]},
    {"expect_text": "reload", "delay_ms": 120, "content": [{"type": "text", "text": LONG}]},
    {"expect_text": "inbox", "content": [write("c.txt")]},
    {"delay_ms": 700, "content": [{"type": "text", "text": "Written from the inbox."}]},
    {"expect_text": "after", "content": [{"type": "text", "text": "Still here after the restart."}]},
]}
with open(os.path.join(WORK, "scenario.json"), "w") as f:
    json.dump(scenario, f)

env = dict(os.environ, OURO_HOME=HOME, HOME=HOME, ANTHROPIC_API_KEY="sk-ant-test-web-0000")
env.pop("OURO_LOG", None)
mock = subprocess.Popen([OURO, "mock-server", "--scenario", os.path.join(WORK, "scenario.json")],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
env["ANTHROPIC_BASE_URL"] = mock.stdout.readline().strip()
procs = [mock]

# The project's memory, for the Memory view.
memory_ops = [
    {"op": "add_node", "type": "Strategy", "id": "bisect",
     "properties": {"name": "Bisect regressions", "description": "git bisect run with the failing test"}},
    {"op": "add_node", "type": "Tool", "id": "git", "properties": {"name": "git", "description": "version control"}},
    {"op": "add_node", "type": "FailureCase", "id": "flaky", "properties": {"name": "Flaky timer test"}},
    {"op": "add_edge", "source": "bisect", "target": "git", "type": "USES"},
]
subprocess.run([OURO, "memory", "apply", "-"], input=json.dumps(memory_ops), text=True,
               env=env, cwd=PROJECT, check=True, capture_output=True)


def start_server(port="0"):
    server = subprocess.Popen([OURO, "serve", "--port", port, "--project", PROJECT],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=PROJECT)
    procs.append(server)
    url = server.stdout.readline().strip()
    assert url.startswith("ouro serve: "), url
    return server, url[len("ouro serve: "):]


def stop_server(server):
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=30) == 0, server.stderr.read()


def mark_stream(page):
    """Records every text the last assistant message shows, to prove it streamed."""
    page.evaluate("""() => {
        window.__seen = new Set();
        const target = document.getElementById('messages');
        new MutationObserver(() => {
            const all = target.querySelectorAll('.msg.assistant');
            if (all.length) window.__seen.add(all[all.length - 1].textContent);
        }).observe(target, {subtree: true, childList: true, characterData: true});
    }""")


def send(page, text):
    page.fill("#input", text)
    page.press("#input", "Enter")


def main():
    server, url = start_server()
    port = url.split(":")[2].split("/")[0]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        # A wrong token says what to do.
        page.goto(url.split("?")[0] + "?token=wrong")
        expect(page.locator("#banner-text")).to_contain_text("not this server's")
        expect(page.locator("#token-dialog")).to_be_visible()

        # The printed URL works, and the token leaves the address bar.
        page.goto(url)
        expect(page.locator("#project")).to_have_value(PROJECT)
        assert "token=" not in page.url, page.url

        # The Memory view: the newest memories drawn as SVG; a query centres the view on what
        # it recalls; clicking a neighbour centres on it and shows its details.
        expect(page.locator("#memory-graph svg g.node")).to_have_count(3)
        expect(page.locator("#memory-graph svg line")).to_have_count(1)
        page.fill("#memory-query", "bisect")
        page.press("#memory-query", "Enter")
        expect(page.locator("#memory-graph g.node.center")).to_have_attribute("data-id", "bisect")
        expect(page.locator("#memory-graph svg g.node")).to_have_count(2)
        expect(page.locator("#memory-detail")).to_contain_text("Bisect regressions")
        page.locator('#memory-graph g.node[data-id="git"]').click()
        expect(page.locator("#memory-graph g.node.center")).to_have_attribute("data-id", "git")
        expect(page.locator("#memory-detail")).to_contain_text("version control")

        # A session with a persona.
        page.click("#new-session")
        page.select_option("#persona", "HELPER")
        expect(page.locator("#persona-tools")).to_contain_text("Read, Write, Bash")
        page.click("#create")
        expect(page.locator("#input")).to_be_enabled()
        expect(page.locator("#session-title")).to_contain_text("HELPER")

        # Text in pieces, a tool call with its result, one permission allowed, one denied.
        mark_stream(page)
        send(page, "first: write the files")
        dialog = page.locator("#permission-dialog")
        expect(dialog).to_be_visible()
        expect(page.locator("#permission-input")).to_contain_text("a.txt")
        page.click("#allow")
        expect(page.locator("#permission-input")).to_contain_text("b.txt", timeout=30000)
        expect(dialog).to_be_visible()
        page.click("#deny")
        expect(page.locator(".msg.assistant").last).to_contain_text("One written, one refused.", timeout=30000)
        expect(page.locator("#input")).to_be_enabled()
        seen = page.evaluate("() => [...window.__seen]")
        raw = "Let me **write** two files, `a.txt` and `b.txt`."
        partial = [s for s in seen if s and raw.startswith(s) and s != raw]
        assert len(partial) >= 2, f"the answer did not arrive in pieces: {seen}"
        expect(page.locator("#activity li")).to_have_count(2)
        expect(page.locator("#activity li.error")).to_have_count(1)
        expect(page.locator("#activity li").first).to_contain_text("a.txt")
        expect(page.locator('#files li.changed[data-path="a.txt"]')).to_have_count(1)
        assert open(os.path.join(PROJECT, "a.txt")).read() == "a.txt\n"
        assert not os.path.exists(os.path.join(PROJECT, "b.txt"))
        expect(page.locator(".msg .badge").first).to_contain_text("$")

        # Interrupt a long turn.
        send(page, "long answer please")
        expect(page.locator("#interrupt")).to_be_visible()
        expect(page.locator("#input")).to_be_disabled()
        page.wait_for_function("() => document.querySelectorAll('.msg.assistant').length >= 3", timeout=30000)
        page.click("#interrupt")
        expect(page.locator("#input")).to_be_enabled(timeout=30000)
        expect(page.locator("#interrupt")).to_be_hidden()

        # Reload mid-turn: nothing missing, nothing twice.
        send(page, "reload test")
        page.wait_for_function("() => { const m = document.querySelectorAll('.msg.assistant'); return m.length && m[m.length-1].textContent.includes('word3'); }", timeout=30000)
        page.reload()
        expect(page.locator(".msg.assistant").last).to_contain_text("word39", timeout=30000)
        expect(page.locator("#input")).to_be_enabled(timeout=30000)
        texts = page.locator(".msg.assistant").all_text_contents()
        assert sum(1 for t in texts if t.startswith(LONG)) == 1, texts
        assert not any(t.count("word39") > 1 for t in texts), texts
        users = page.locator(".msg.user").all_text_contents()
        assert users.count("reload test") == 1, users

        # The Approvals inbox: a question parked in this session shows in a second tab (no
        # session open there); Allow there releases it, and this tab's dialog lets go of it.
        send(page, "inbox: write c.txt")
        expect(dialog).to_be_visible(timeout=30000)
        expect(page.locator("#permission-input")).to_contain_text("c.txt")
        inbox = context.new_page()
        inbox.on("pageerror", lambda e: errors.append(str(e)))
        inbox.goto(url.split("?")[0])
        expect(inbox.locator("#approvals-count")).to_have_text("1")
        item = inbox.locator("#approvals li")
        expect(item).to_have_count(1)
        expect(item).to_contain_text("Write")
        expect(item).to_contain_text("c.txt")
        expect(item.locator("button.open")).to_have_text("inbox: write c.txt")
        expect(inbox.locator(".msg")).to_have_count(0)
        expect(page.locator("#approvals-count")).to_have_text("1")
        assert not os.path.exists(os.path.join(PROJECT, "c.txt"))
        item.locator("button.allow").click()
        expect(inbox.locator("#approvals li")).to_have_count(0, timeout=30000)
        expect(inbox.locator("#approvals-count")).to_be_hidden()
        expect(inbox.locator("#approvals-empty")).to_be_visible()
        # Let go of while the turn still runs (its answer comes slowly), not by its end.
        expect(dialog).to_be_hidden(timeout=30000)
        assert page.locator("#interrupt").is_visible(), "the dialog closed only when the turn ended"
        expect(page.locator(".msg.assistant").last).to_contain_text("Written from the inbox.", timeout=30000)
        expect(page.locator("#approvals-count")).to_be_hidden()
        assert open(os.path.join(PROJECT, "c.txt")).read() == "c.txt\n"
        inbox.close()

        # Restart the server; the session comes back from the sidebar with its turns.
        stop_server(server)
        expect(page.locator("#banner-text")).to_contain_text("connection to ouro serve was lost", timeout=30000)
        server, url = start_server(port)
        page.goto(url)
        page.locator("#sessions li").first.click()
        expect(page.locator(".msg.user").first).to_have_text("first: write the files")
        expect(page.locator(".msg.assistant", has_text="One written, one refused.")).to_have_count(1)
        send(page, "after the restart")
        expect(page.locator(".msg.assistant").last).to_contain_text("Still here after the restart.", timeout=30000)
        if SCREENSHOT:
            page.screenshot(path=SCREENSHOT)
        assert not errors, errors
        browser.close()
    stop_server(server)


try:
    main()
    print("web ui: all checks passed")
finally:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
