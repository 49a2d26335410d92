#!/usr/bin/env bash
# Runs every check of the project: formatting, clippy (warnings are errors) and all tests,
# with and without the PTX backend. Needs Rust and a C compiler (`cc`, which rustup's linker
# setup already requires); tools/install-deps.sh installs the rest (spirv-tools, lavapipe,
# LLVM 16, ptxas).
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/fix-dev-null.sh
fix_dev_null
./tools/install-deps.sh
# The Vulkan tests run on lavapipe, which install-deps.sh provides: a missing device is an error.
export TILEC_REQUIRE_VULKAN=1
# The editor test runs Neovim from PyPI (install-deps.sh), found in Python's scripts folder.
PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
export PATH TILEC_REQUIRE_NVIM=1
export LLVM_SYS_160_PREFIX="${LLVM_SYS_160_PREFIX:-/usr/lib/llvm-16}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
jobs="${TILEC_JOBS:-2}"
cargo fmt --all -- --check
cargo fmt --manifest-path python/Cargo.toml -- --check
fix_dev_null
cargo test --workspace --no-run -j"$jobs"
fix_dev_null
cargo test -p tilec-tests --features ptx --test ptx --no-run -j"$jobs"
fix_dev_null
cargo clippy --workspace --all-targets -j"$jobs" -- -D warnings
fix_dev_null
cargo clippy -p tilec-codegen-ptx -p tilec-codegen-cpu -p tilec -p tilec-tests --all-targets --features tilec-tests/ptx -j"$jobs" -- -D warnings
fix_dev_null
cargo test --workspace -j"$jobs"
fix_dev_null
cargo test -p tilec-tests --features ptx --test ptx --test codegen --test cuda --test compile_cache --test prints -j"$jobs"
fix_dev_null
cargo test -p tilec --features ptx --lib --test tiered -j"$jobs"
# The same run tests with the LLVM CPU backend (`--backend llvm`) instead of Cranelift.
fix_dev_null
TILEC_TEST_CPU_BACKEND=llvm cargo test -p tilec-tests --features ptx -j"$jobs" \
    --test run --test stdlib --test tile_ops --test examples --test props --test simt
# The Python package (its own cargo workspace, built by maturin into target/): clippy, then its
# pytest suite against NumPy and SciPy, with the Dask example on a local cluster.
fix_dev_null
CARGO_TARGET_DIR="$PWD/target" cargo clippy --manifest-path python/Cargo.toml --all-targets -j"$jobs" -- -D warnings
# The self-contained bundle for GPU machines, and the GPU check's harness on lavapipe (its
# comparisons of every stdlib kernel and example with the CPU target and float64 references).
fix_dev_null
./tools/test-dist.sh
TILEC=target/debug/tilec ./tools/gpu-check.sh --targets vulkan --parts correctness --extents 1,17,92 >/dev/null
# The VS Code extension: its TextMate grammar on every .tile file (vscode-textmate, as VS Code
# tokenizes), and its .vsix package.
(cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error && node test/grammar.test.js &&
    npx vsce package --allow-missing-repository --skip-license -o tilec.vsix >/dev/null)

