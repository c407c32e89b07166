"""The Agent SDK's query() on ouro and on the real claude CLI, on the same scripted answer.

    cargo build --release && python3 benches/sdk_query.py [runs] [cli ...]

Starts `ouro mock-server` with a one-line answer, then for each CLI (default: the release ouro
and `claude` from PATH) runs query() `runs` times in a fresh Python process, and prints the
median wall time of one query() and the CLI process's peak RSS, measured by GNU time in a
second round (a child forked from Python would count Python's own pages). Needs
`pip install claude-agent-sdk` and /usr/bin/time.
"""

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURO = os.path.join(ROOT, "target", "release", "ouro")

ONE = r"""
import anyio, json, sys, time
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
cli, runs, url, home, cwd = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "k", "HOME": home, "OURO_HOME": home,
       "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
async def main():
    times = []
    for _ in range(runs):
        opts = ClaudeAgentOptions(cli_path=cli, cwd=cwd, env=env)
        start = time.perf_counter()
        result = None
        async for m in query(prompt="hi", options=opts):
            if isinstance(m, ResultMessage):
                result = m.result
        times.append(time.perf_counter() - start)
        assert result == "Hello from the mock", result
    print(json.dumps({"times": times}))
anyio.run(main)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_rss(cli, url, home, cwd, work):
    """MiB: the largest of three runs under GNU time."""
    log = os.path.join(work, "rss.log")
    wrapper = os.path.join(work, "timed-cli")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec /usr/bin/time -f %M -a -o "{log}" "{cli}" "$@"\n')
    os.chmod(wrapper, 0o755)
    subprocess.run(
        [sys.executable, "-c", ONE, wrapper, "3", url, home, cwd],
        capture_output=True,
        check=True,
    )
    with open(log) as f:
        kib = [int(line) for line in f if line.strip().isdigit()]
    os.remove(log)
    return max(kib) / 1024


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    clis = sys.argv[2:] or [OURO, shutil.which("claude") or "claude"]
    work = tempfile.mkdtemp(prefix="ouro-sdk-bench-")
    scenario = os.path.join(work, "scenario.json")
    answer = {"content": [{"type": "text", "text": "Hello from the mock"}]}
    with open(scenario, "w") as f:
        json.dump({"turns": [answer] * (runs * len(clis) + 8)}, f)
    port = free_port()
    mock = subprocess.Popen(
        [OURO, "mock-server", "--scenario", scenario, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        url = f"http://127.0.0.1:{port}"
        print(f"SDK query() on a one-line scripted answer, median of {runs} runs")
        for cli in clis:
            home = tempfile.mkdtemp(dir=work)
            cwd = tempfile.mkdtemp(dir=work)
            out = subprocess.run(
                [sys.executable, "-c", ONE, cli, str(runs), url, home, cwd],
                capture_output=True,
                text=True,
            )
            if out.returncode != 0:
                print(f"{cli}: failed\n{out.stderr[-2000:]}")
                continue
            measured = json.loads(out.stdout.strip().splitlines()[-1])
            median = statistics.median(measured["times"]) * 1000
            print(f"{cli}: {median:.0f} ms per query(), peak RSS {peak_rss(cli, url, home, cwd, work):.1f} MiB")
    finally:
        mock.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
