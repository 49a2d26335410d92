#!/usr/bin/env bash
# Benchmark (not a test): the stdlib's geqrf_batched, syevj_batched and gesvj_batched against
# NumPy's batched qr, eigh and svd on the same stacks (bench/factor_cpu.py). Builds
# target/release/tilec with the LLVM CPU backend unless TILEC=/path/to/tilec is given, and
# installs NumPy and SciPy in a virtual environment (PORTS_VENV, default
# ~/.cache/tilec-ports-venv). Extra arguments go to bench/factor_cpu.py. Run it on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/tilec-build.sh
bench_numpy_script bench/factor_cpu.py "$@"
