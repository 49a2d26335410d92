#!/usr/bin/env bash
# Runs every check of the project: formatting, clippy (warnings are errors) and all tests.
# Needs Rust and a C compiler (`cc`, which rustup's linker setup already requires); installs
# spirv-tools and Mesa's lavapipe (Vulkan on the CPU) with tools/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/install-deps.sh
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
jobs="${TILEC_JOBS:-2}"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -j"$jobs" -- -D warnings
cargo test --workspace -j"$jobs"
