#!/usr/bin/env bash
# The main job: factor 4096 random SPD matrices of 92x92 (f32) with the stdlib's
# potrf_batched on the CPU target, write the factor to target/demo/L.npy, and check it: the
# `residual` kernel of examples/cholesky.tile prints max |A - L L^T| / max |A| over the batch.
# With LLVM 16 installed (tools/install-deps.sh, or `apt-get install llvm-16-dev
# libpolly-16-dev`) tilec is built with it, its default CPU code generator; else with
# Cranelift alone. `tilec --version` (printed first) says which.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/fix-dev-null.sh
fix_dev_null
features=()
if [ -x "${LLVM_SYS_160_PREFIX:-/usr/lib/llvm-16}/bin/llvm-config" ]; then
    export LLVM_SYS_160_PREFIX="${LLVM_SYS_160_PREFIX:-/usr/lib/llvm-16}"
    features=(--features llvm)
fi
cargo build --release -j"${TILEC_JOBS:-2}" -p tilec ${features[@]+"${features[@]}"}
tilec=target/release/tilec
"$tilec" --version
mkdir -p target/demo
"$tilec" gen-spd --batch 4096 --n 92 --dtype f32 --seed 1 -o target/demo/spd.npy
"$tilec" run stdlib/linalg.tile --kernel potrf_batched \
    --arg A=target/demo/spd.npy --arg eps=1e-6 --out A=target/demo/L.npy --repeat 10
echo "factor written to target/demo/L.npy (lower triangle); checking it:"
"$tilec" run examples/cholesky.tile --kernel residual \
    --arg A=target/demo/spd.npy --arg L=target/demo/L.npy --out R=target/demo/residual.npy --print R
echo "R: the largest max|A - L L^T| / max|A| of the batch (f32 factors: 1e-7 to 1e-6)"
