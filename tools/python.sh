#!/usr/bin/env bash
# Builds the `tilec` Python package (python/: PyO3 + maturin, one abi3 wheel for CPython 3.9+)
# and installs it into a virtual environment, target/python-venv, with what its tests and
# examples use (NumPy, SciPy, pytest, Dask with distributed). Idempotent: only what is missing
# is installed; the extension is rebuilt by cargo when sources changed.
#
#   tools/python.sh            build and install (debug profile: fast to build; kernels are
#                              JIT-compiled by Cranelift either way, so they run at full speed)
#   tools/python.sh --release  the same with the release profile
#   tools/python.sh --test     build, install, then run python/tests with pytest
#   tools/python.sh --wheel    also write the wheel to target/wheels/
#   tools/python.sh --ptx      with the PTX backend (target="cuda") and the LLVM CPU backend
#                              (backend="llvm"); needs LLVM 16 (install-deps.sh)
#
# Then: target/python-venv/bin/python -c 'import tilec; print(tilec.linalg)'
set -euo pipefail
cd "$(dirname "$0")/.."
profile=dev
test=0
wheel=0
features=()
for a in "$@"; do
    case "$a" in
    --release) profile=release ;;
    --test) test=1 ;;
    --wheel) wheel=1 ;;
    --ptx) features=(--features ptx); export LLVM_SYS_160_PREFIX="${LLVM_SYS_160_PREFIX:-/usr/lib/llvm-16}" ;;
    *) echo "usage: tools/python.sh [--release] [--test] [--wheel] [--ptx]" >&2; exit 2 ;;
    esac
done
venv=target/python-venv
if [ ! -x "$venv/bin/python" ]; then
    # Debian's python3 needs python3-venv for this; install-deps.sh installs it.
    python3 -m venv "$venv"
fi
py="$venv/bin/python"
missing=()
for m in maturin numpy scipy pytest dask distributed; do
    "$py" -c "import $m" >/dev/null 2>&1 || missing+=("$m")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing into $venv: ${missing[*]}"
    # Dask and distributed as one requirement, which pins them to the same version (a plain
    # `distributed` let pip pair dask 2026.11.0 with distributed 2021.4.1, which fails to import).
    pkgs=()
    for m in "${missing[@]}"; do
        case "$m" in
            dask | distributed) pkgs+=("dask[array,distributed]") ;;
            *) pkgs+=("$m") ;;
        esac
    done
    "$py" -m pip install --quiet --disable-pip-version-check "${pkgs[@]}"
fi
# The extension shares the main workspace's target folder (its lock file starts as a copy of the
# workspace's, and its profiles are the same), so the tilec crates are not built twice.
export CARGO_TARGET_DIR="$PWD/target"
VIRTUAL_ENV="$PWD/$venv" PATH="$PWD/$venv/bin:$PATH" \
    "$venv/bin/maturin" develop --quiet -m python/Cargo.toml --profile "$profile" -j "${TILEC_JOBS:-2}" ${features[@]+"${features[@]}"} >/dev/null
if [ "$wheel" = 1 ]; then
    "$venv/bin/maturin" build --quiet -m python/Cargo.toml --profile "$profile" -j "${TILEC_JOBS:-2}" ${features[@]+"${features[@]}"} -o target/wheels
fi
if [ "$test" = 1 ]; then
    "$py" -m pytest -q python/tests
fi
