#!/usr/bin/env bash
# Runs every check of the project: formatting, clippy (warnings are errors) and all tests,
# with and without the PTX backend. Needs Rust and a C compiler (`cc`, which rustup's linker
# setup already requires); tools/install-deps.sh installs the rest (spirv-tools, lavapipe,
# LLVM 16, ptxas).
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/install-deps.sh
# The Vulkan tests run on lavapipe, which install-deps.sh provides: a missing device is an error.
export TILEC_REQUIRE_VULKAN=1
export LLVM_SYS_160_PREFIX="${LLVM_SYS_160_PREFIX:-/usr/lib/llvm-16}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
jobs="${TILEC_JOBS:-2}"
# The test builds come first: on a fresh target directory, `cargo test` right after the
# clippy runs has failed in cargo's rustc target-info probe (rustc read another rustc's error
# text as its input, and cargo cached that failure in target/.rustc_info.json); built first,
# they do not. Build steps are still retried once without that cache; tests run once.
twice() {
    "$@" || {
        echo "tools/test.sh: retrying once without target/.rustc_info.json: $*" >&2
        rm -f target/.rustc_info.json
        "$@"
    }
}
cargo fmt --all -- --check
twice cargo test --workspace --no-run -j"$jobs"
twice cargo test -p tilec-tests --features ptx --test ptx --no-run -j"$jobs"
twice cargo clippy --workspace --all-targets -j"$jobs" -- -D warnings
twice cargo clippy -p tilec-codegen-ptx -p tilec -p tilec-tests --all-targets --features tilec-tests/ptx -j"$jobs" -- -D warnings
cargo test --workspace -j"$jobs"
cargo test -p tilec-tests --features ptx --test ptx -j"$jobs"
