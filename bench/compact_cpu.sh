#!/usr/bin/env bash
# Benchmark (not a test): the stdlib's potrf_compact_batched (matrices stored batch-interleaved)
# against Intel MKL's mkl_?potrf_compact on the same packed stacks and potrf_batched on the
# usual layout (bench/compact_cpu.py). Builds target/release/tilec with the LLVM CPU backend
# unless TILEC=/path/to/tilec is given, and installs NumPy and SciPy (and, with
# BENCH_STRONG_PEERS=1, the mkl wheel) in a virtual environment (PORTS_VENV, default
# ~/.cache/tilec-ports-venv). Extra arguments go to bench/compact_cpu.py. Run it on an idle
# machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/tilec-build.sh
bench_numpy_script bench/compact_cpu.py "$@"
