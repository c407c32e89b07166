#!/usr/bin/env python3
"""Writes benches/symbol-order.txt: the functions a session runs, which build.rs has the linker
place together at the start of the binary's text.

Why: the kernel maps a binary's text into a process 64 KB at a time around each page it runs.
Left in the compiler's order, the ~2.5 MB of functions a print-mode session runs are spread over
nearly all of the ~10 MB of text, and all of it counts in the session's memory. Placed together
they cost about 2.5 MB, and start-up takes fewer page faults.

The list names functions by their mangled symbols. A name changes when the function is renamed
or moved, or when a dependency changes (Cargo.lock): such names are then simply not found and
their functions stay where the compiler put them, so a stale list costs memory, never
correctness. Local copies of a function are named with a number LLVM gives them in order
(`name.2152`), so new code anywhere can renumber some: 76 of 6,231 names moved in a change to
dogs and the bench, and that cost 2.5 MiB. Run this again after changing dependencies, and
before measuring memory after a change (`ouro bench` shows the peak RSS):

    cargo build --release && python3 benches/symbol_order.py target/release/ouro

The names must come from the release build itself: Cargo hashes the profile into them, so a
build with other profile settings (debug info, say) names every function differently.

It runs the sessions `ouro bench` measures (the tools session, as text and as stream-json, and a
one-answer session) under valgrind's callgrind against the built-in mock API, and keeps every
function that ran, in the order callgrind first reports them.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "symbol-order.txt")


def bench_session(binary, work, name):
    """The session `ouro bench` measures: its project and scripted API output."""
    out = subprocess.run([binary, "bench", "--write-scenario", os.path.join(work, name),
                          "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def callgrind(binary, work, name, session, extra):
    mock = subprocess.Popen([binary, "mock-server", "--scenario", session["scenario"],
                             "--port", "0"], stdout=subprocess.PIPE, text=True)
    url = mock.stdout.readline().strip()
    out = os.path.join(work, "callgrind." + name)
    env = dict(os.environ, ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-ant-any",
               OURO_HOME=os.path.join(work, "home-" + name))
    try:
        subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=no",
                        "--callgrind-out-file=" + out, binary] + session["args"] + extra,
                       cwd=session["project"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        mock.terminate()
        mock.wait()
    return out


def executed(path):
    names, order, seen = {}, [], set()
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^(fn|cfn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if not m:
                continue
            kind, ident, name = m.groups()
            if name:
                names[ident] = name
            name = names.get(ident)
            if kind == "fn" and name and name not in seen:
                seen.add(name)
                order.append(name)
    return order


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: symbol_order.py target/release/ouro")
    binary = os.path.abspath(sys.argv[1])
    text = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True,
                          check=True).stdout
    defined = {p[2] for p in (l.split() for l in text.splitlines())
               if len(p) == 3 and p[1] in "tTwW"}
    if not defined:
        sys.exit(f"{binary} has no symbol table: build it with the release profile of Cargo.toml")
    work = tempfile.mkdtemp(prefix="ouro-order-")
    try:
        tools = bench_session(binary, work, "tools")
        stream = bench_session(binary, work, "stream")
        hello = dict(bench_session(binary, work, "hello"), args=["-p", "hi"])
        hello["scenario"] = os.path.join(work, "hello.json")
        with open(hello["scenario"], "w") as f:
            json.dump({"turns": [{"content": [{"type": "text", "text": "Hello."}]}]}, f)
        runs = [
            callgrind(binary, work, "hello", hello, []),
            callgrind(binary, work, "tools", tools, []),
            callgrind(binary, work, "stream", stream, ["--output-format", "stream-json",
                                                       "--verbose"]),
        ]
        order, seen = [], set()
        for path in runs:
            for name in executed(path):
                if name in defined and name not in seen:
                    seen.add(name)
                    order.append(name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(OUT, "w") as f:
        f.write("\n".join(order) + "\n")
    print(f"{OUT}: {len(order)} functions")


if __name__ == "__main__":
    main()
