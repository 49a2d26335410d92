#!/usr/bin/env bash
# Benchmark (not a test): the small-matrix examples (examples/mpm_stress.tile, kalman.tile,
# gauss_newton.tile; language §3.6) on the CPU target against NumPy's batched linalg, Quadrants
# (`qd.svd` per particle) and Warp (`wp.svd3` per thread), in one run, on the same data, every
# result checked against a float64 reference first (bench/small_mats_cpu.py). Installs the peers
# in the virtual environment of bench/peers_cpu.sh (PEERS_VENV, default
# ~/.cache/tilec-peers-venv); TILEC=/path/to/tilec benchmarks that binary instead of building
# target/release/tilec with the LLVM CPU backend. Extra arguments go to the script (`--only
# mpm`, `--repeat N`, `--peers numpy`). A few minutes on a 2-core VM; run it on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${PEERS_VENV:-$HOME/.cache/tilec-peers-venv}
if ! "$venv/bin/python" -c 'import numpy, scipy, quadrants, warp' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet numpy scipy quadrants warp-lang threadpoolctl
fi
. bench/tilec-build.sh
bench_tilec
"$venv/bin/python" -c 'import importlib.metadata as m
print("peers:  " + ", ".join(f"{p} {m.version(p)}" for p in ("numpy", "quadrants", "warp-lang")))'
"$venv/bin/python" bench/small_mats_cpu.py --tilec "$tilec" "$@"
