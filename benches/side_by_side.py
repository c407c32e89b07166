"""ouro against Claude Code on the same scripted API output, with the lab floor: the same
HTTP requests made by curl. Each figure is the median of 5 runs after a warm-up, from spawn
to exit, in a fresh home, against `ouro mock-server` on loopback.

    cargo build --release && python3 benches/side_by_side.py   # needs `claude` and `curl`
"""

import json, os, subprocess, sys, time, statistics, shutil, tempfile
OURO_DIR = os.getcwd()
OURO = os.environ.get("OURO", "target/release/ouro")
WORK = tempfile.mkdtemp(prefix="ouro-sbs-")
root = os.path.join(WORK, "proj")
shutil.rmtree(root, ignore_errors=True); os.makedirs(root + "/src")
for i in range(50):
    open(f"{root}/src/f{i}.rs", "w").write("".join(f"fn compute_{i}_{j}() -> u32 {{ {j} }}\n" for j in range(40)))
subprocess.run(["git", "init", "-q", root])
SCEN = os.path.join(WORK, "scenario.json")
OURO = os.path.abspath(OURO)

def hello():
    return {"turns": [{"content": [{"type": "text", "text": "Hello there."}]}]}
def tools():
    turns = []
    for t in range(10):
        c = []
        for k in range(5):
            kind = (t * 5 + k) % 3
            if kind == 0: c.append({"type": "tool_use", "name": "Read", "input": {"file_path": f"{root}/src/f{(t*5+k)%50}.rs"}})
            elif kind == 1: c.append({"type": "tool_use", "name": "Grep", "input": {"pattern": f"compute_{t}_1", "path": root}})
            else: c.append({"type": "tool_use", "name": "Glob", "input": {"pattern": "src/*.rs", "path": root}})
        turns.append({"content": c})
    turns.append({"content": [{"type": "text", "text": "Done."}]})
    return {"turns": turns}
def run(cmd, scenario, env_extra, runs=5, rss=None):
    """The median wall time of `runs` runs after a warm-up; with `rss` (a list), the peak RSS in
    KiB of each measured run (GNU time's %M) is appended to it."""
    times = []
    for r in range(runs + 1):
        json.dump(scenario, open(SCEN, "w"))
        mock = subprocess.Popen([OURO, "mock-server", "--scenario", SCEN], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = mock.stdout.readline().strip()
        home = os.path.join(WORK, f"home{r}"); shutil.rmtree(home, ignore_errors=True); os.makedirs(home)
        env = dict(os.environ, ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-ant-x", OURO_HOME=home, HOME=home, **env_extra)
        measure = os.path.join(WORK, "rss")
        wrap = ["/usr/bin/time", "-f", "%M", "-o", measure] if rss is not None else []
        t = time.perf_counter()
        p = subprocess.run(wrap + cmd(url), env=env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        dt = time.perf_counter() - t
        if rss is not None and r > 0:
            rss.append(int(open(measure).read().split()[-1]))
        mock.kill(); mock.wait()
        if p.returncode != 0: print("FAILED", cmd(url)[:3], p.stdout[-300:], p.stderr[-300:]); return None
        if r > 0: times.append(dt)
    return statistics.median(times)
def curl_floor(n):
    def cmd(url):
        body = json.dumps({"model": "claude-sonnet-5-5", "max_tokens": 1024, "stream": True, "messages": [{"role": "user", "content": "hi"}]})
        script = " && ".join([f"curl -s -N -o /dev/null -H 'x-api-key: k' -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' -d '{body}' {url}/v1/messages"] * n)
        return ["sh", "-c", script]
    return cmd
rows = []
for name, scen, n in [("hello session (one answer)", hello(), 1), ("tools session (50 read-only calls, 11 requests)", tools(), 11)]:
    o = run(lambda u: [OURO, "-p", "go"], scen, {})
    c = run(lambda u: ["claude", "-p", "go", "--allowedTools", "Read,Grep,Glob"], scen, {})
    f = run(curl_floor(n), scen, {})
    rows.append((name, o, c, f))
    print(name, f"ouro {o*1000:.0f} ms", f"claude {c*1000:.0f} ms" if c else "claude failed", f"curl floor {f*1000:.0f} ms", f"ratio {c/o:.1f}x" if c else "", flush=True)

# Peak memory of the tools session, in separate runs (GNU time itself adds to the wall time).
ouro_rss, claude_rss = [], []
run(lambda u: [OURO, "-p", "go"], tools(), {}, rss=ouro_rss)
run(lambda u: ["claude", "-p", "go", "--allowedTools", "Read,Grep,Glob"], tools(), {}, rss=claude_rss)
if ouro_rss and claude_rss:
    o, c = statistics.median(ouro_rss) / 1024, statistics.median(claude_rss) / 1024
    print(f"peak RSS, tools session ouro {o:.1f} MiB claude {c:.0f} MiB ratio {c/o:.0f}x less", flush=True)

shutil.rmtree(WORK, ignore_errors=True)
