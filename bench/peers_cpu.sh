#!/usr/bin/env bash
# Benchmark (not a test): tilec's stdlib kernels on the CPU target against the CPU peers people
# would pick instead (NumPy/SciPy with OpenBLAS, Quadrants, Warp), in one run, on the same .npy
# inputs, every result checked against a float64 reference. Prints one line per measurement
# and a markdown table with each peer's time over tilec's. See bench/README.md.
#
# Installs the peers in a virtual environment (PEERS_VENV, default ~/.cache/tilec-peers-venv)
# and writes the inputs (about 1.2 GB, PEERS_DATA, default bench/data/peers) once.
# TILEC=/path/to/tilec benchmarks that binary instead of building target/release/tilec.
# Extra arguments go to bench/peers_cpu.py (`--only potrf,trsm`, `--no-f64`, `--repeat N`,
# `--before OLD_TILEC` to time an earlier build beside it, `--backends cranelift` for one CPU
# backend). The build has the `ptx` feature, for the LLVM CPU backend (LLVM 16: install-deps.sh).
# Takes about 5 minutes on a 2-core VM; run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${PEERS_VENV:-$HOME/.cache/tilec-peers-venv}
data=${PEERS_DATA:-bench/data/peers}
if ! "$venv/bin/python" -c 'import numpy, scipy, quadrants, warp, threadpoolctl' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet numpy scipy quadrants warp-lang threadpoolctl
fi
mkdir -p "$data"
if [ ! -f "$data/manifest.json" ]; then
    "$venv/bin/python" bench/peers/gen_inputs.py --out "$data"
fi
. bench/tilec-build.sh
bench_tilec
PEERS_DATA=$data "$venv/bin/python" bench/peers/anchors.py info
"$venv/bin/python" bench/peers_cpu.py --tilec "$tilec" --data "$data" "$@"
