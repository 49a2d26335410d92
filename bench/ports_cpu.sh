#!/usr/bin/env bash
# Benchmark (not a test): kernels ported to .tile (examples/, bench/ports/) against NumPy and
# SciPy on the same data, in one run, each result checked against a float64 reference first
# (bench/ports_cpu.py). Builds target/release/tilec with the LLVM CPU backend (LLVM 16:
# install-deps.sh) unless TILEC=/path/to/tilec is given, and installs NumPy and SciPy in a
# virtual environment (PORTS_VENV, default ~/.cache/tilec-ports-venv). Extra arguments go to
# bench/ports_cpu.py (`--before OLD_TILEC`, `--backends cranelift`, `--repeat N`, `--rounds N`,
# `--only word,..`). A few minutes a round on a 2-core VM; run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/tilec-build.sh
bench_numpy_script bench/ports_cpu.py "$@"
