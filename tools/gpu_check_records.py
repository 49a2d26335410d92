#!/usr/bin/env python3
"""Checks the records of a tools/gpu-check.sh run (used by tools/test-dist.sh on lavapipe, and
useful on the results a GPU machine sends back):

    python3 tools/gpu_check_records.py OUT_DIR PARTS [--peers-ran]

OUT_DIR holds gpu-check.jsonl and summary.md; PARTS is the comma list the run was given. Fails
(exit 1, naming the record) unless every record has a timestamp, each part of PARTS finished
(`part-done`) and succeeded, every result of tilec (smoke, bench) has a median time and an error
within its bound, every peer either succeeded or says why it did not run, and summary.md has a
line for each smoke and bench record. With --peers-ran, every peer must have run.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_check import TOL  # noqa: E402  (the bounds the check itself applies)


def main():
    out, parts = sys.argv[1], [p for p in sys.argv[2].split(",") if p]
    peers_ran = "--peers-ran" in sys.argv[3:]
    with open(os.path.join(out, "gpu-check.jsonl")) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    with open(os.path.join(out, "summary.md")) as f:
        summary = f.read()
    bad = []
    for r in recs:
        if "time" not in r:
            bad.append(("no timestamp", r))
    done = {r["name"]: r for r in recs if r.get("part") == "part-done"}
    for p in parts:
        if p not in done:
            bad.append((f"part {p} did not finish", None))
        elif not done[p]["ok"]:
            bad.append((f"part {p} failed", done[p]))
    results = [r for r in recs if r.get("part") in ("smoke", "bench")]
    if "bench" in parts and not any(r.get("part") == "bench" for r in results):
        bad.append(("no bench records", None))
    for r in results:
        if r.get("impl", "").startswith("tilec"):
            if not (r.get("ok") is True and r.get("median_ms") is not None
                    and r.get("max_rel_err") is not None and r["max_rel_err"] <= TOL[r["dtype"]] * 10):
                bad.append(("a tilec result without a time or within its bound", r))
        elif r.get("ok") is None:
            if peers_ran:
                bad.append(("a peer that did not run", r))
            elif not r.get("error"):
                bad.append(("a peer that did not run without saying why", r))
        elif r.get("ok") is not True:
            bad.append(("a peer with a wrong result", r))
        if f"| {r['part']} | {r['workload']} | {r['impl']}" not in summary:
            bad.append(("summary.md lacks a record", r))
    if not any(r.get("part") == "done" and r.get("ok") for r in recs):
        bad.append(("the run did not end with done, ok", None))
    for why, r in bad:
        print(f"gpu_check_records: {why}: {json.dumps(r)}", file=sys.stderr)
    n_peers = sum(1 for r in results if not r.get("impl", "").startswith("tilec") and r.get("ok") is True)
    print(f"gpu_check_records: {len(recs)} records, {len(results)} results ({n_peers} peers ran), "
          f"{len(bad)} problems")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
