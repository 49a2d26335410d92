#!/usr/bin/env bash
# Benchmark (not a test): the stdlib's getrf_batched + getrs_batched against NumPy's batched
# solve and SciPy's lu_factor/lu_solve on the same stacks (bench/lu_cpu.py). Builds
# target/release/tilec with the LLVM CPU backend unless TILEC=/path/to/tilec is given, and
# installs NumPy and SciPy in a virtual environment (PORTS_VENV, default
# ~/.cache/tilec-ports-venv). Extra arguments go to bench/lu_cpu.py. Run it on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/tilec-build.sh
bench_numpy_script bench/lu_cpu.py "$@"
