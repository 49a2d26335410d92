#!/usr/bin/env python3
"""Latency of the editor loop: `tilec check stdlib/linalg.tile`, and the language server's
round trip from an edit (`didChange` with the whole stdlib/linalg.tile) to its
`publishDiagnostics`, over stdio as an editor talks to it. Prints medians and the goals of
issue 9 (check under 50 ms, edit to diagnostics under 100 ms).

    python3 bench/lsp_latency.py [--tilec target/release/tilec] [--rounds 20]
"""
import argparse
import json
import os
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def send(p, msg):
    body = json.dumps(msg).encode()
    p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    p.stdin.flush()


def recv(p):
    length = 0
    while True:
        line = p.stdout.readline()
        if not line:
            raise EOFError("the server closed its output")
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(p.stdout.read(length))


def wait_for(p, pred):
    while True:
        m = recv(p)
        if pred(m):
            return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilec", default=os.path.join(ROOT, "target/release/tilec"))
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    path = os.path.join(ROOT, "stdlib/linalg.tile")
    text = open(path).read()

    checks = []
    for _ in range(a.rounds):
        t = time.perf_counter()
        subprocess.run([a.tilec, "check", path], check=True, capture_output=True)
        checks.append((time.perf_counter() - t) * 1e3)

    p = subprocess.Popen([a.tilec, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    send(p, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "processId": None, "rootUri": None}})
    wait_for(p, lambda m: m.get("id") == 1)
    send(p, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
    uri = "file://" + path
    send(p, {"jsonrpc": "2.0", "method": "textDocument/didOpen",
             "params": {"textDocument": {"uri": uri, "languageId": "tile", "version": 1, "text": text}}})
    wait_for(p, lambda m: m.get("method") == "textDocument/publishDiagnostics")
    trips = []
    for v in range(2, a.rounds + 2):
        # Alternate an edit with an error and the original text: both must be analysed.
        edited = text if v % 2 else text.replace("let nb = cdiv(N, TS);", "let nb = cdiv(N, TSS);", 1)
        t = time.perf_counter()
        send(p, {"jsonrpc": "2.0", "method": "textDocument/didChange",
                 "params": {"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": edited}]}})
        m = wait_for(p, lambda m: m.get("method") == "textDocument/publishDiagnostics"
                     and m["params"].get("version") == v)
        trips.append((time.perf_counter() - t) * 1e3)
        assert (len(m["params"]["diagnostics"]) > 0) == (v % 2 == 0), m
    send(p, {"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    wait_for(p, lambda m: m.get("id") == 2)
    send(p, {"jsonrpc": "2.0", "method": "exit"})
    p.wait(timeout=10)

    c, r = statistics.median(checks), statistics.median(trips)
    print(f"tilec check stdlib/linalg.tile: median {c:.1f} ms over {a.rounds} runs (goal < 50 ms: {'met' if c < 50 else 'missed'})")
    print(f"lsp edit -> diagnostics on stdlib/linalg.tile: median {r:.1f} ms, max {max(trips):.1f} ms "
          f"(goal < 100 ms: {'met' if r < 100 else 'missed'})")


if __name__ == "__main__":
    main()
