#!/usr/bin/env bash
# Fuzzing for longer than the test suite's fixed budgets, in a release build, N minutes each:
# - source level (tools/tests/fuzz_source.rs): mutants of stdlib/, examples/ and tests/ui/
#   through `check`, `build --emit tir` and `build --target spirv`; reproduce a failure with
#   TILEC_FUZZ_SEED=<seed> TILEC_FUZZ_COUNT=1 cargo test -p tilec --test fuzz_source -- --nocapture
# - differential (tests/tests/fuzz_kernels/): random kernels on the CPU, the SIMT form at
#   4-64 lanes and Vulkan, results compared; reproduce with
#   TILEC_FUZZ_SEED=<seed> TILEC_FUZZ_CASES=1 cargo test -p tilec-tests --test fuzz_kernels -- --nocapture
# Prints each failure with its seed.
# Usage: tools/fuzz.sh [--minutes N] [--seed S]   (defaults: 10 minutes, a seed from the clock)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=10
seed=$(( $(date +%s) * 1000 ))
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) minutes="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        *) echo "usage: tools/fuzz.sh [--minutes N] [--seed S]" >&2; exit 2 ;;
    esac
done
. tools/fix-dev-null.sh
fix_dev_null
cargo test --release -j"${TILEC_JOBS:-2}" -p tilec --test fuzz_source --no-run
cargo test --release -j"${TILEC_JOBS:-2}" -p tilec-tests --test fuzz_kernels --no-run
echo "fuzzing sources, then kernels, for $minutes minutes each from seed $seed"
set +e
TILEC_FUZZ_SEED="$seed" TILEC_FUZZ_SECONDS=$((minutes * 60)) \
    cargo test --release -j"${TILEC_JOBS:-2}" -p tilec --test fuzz_source -- --nocapture 2>&1 |
    grep -E "FUZZ FAILURE|fuzzed|panicked|overflow|SIGSEGV|SIGABRT"
status=${PIPESTATUS[0]}
TILEC_FUZZ_SEED="$seed" TILEC_FUZZ_SECONDS=$((minutes * 60)) \
    cargo test --release -j"${TILEC_JOBS:-2}" -p tilec-tests --test fuzz_kernels random -- --nocapture 2>&1 |
    grep -E "FUZZ FAILURE|^seed|fuzzed|panicked|SIGSEGV|SIGABRT"
kstatus=${PIPESTATUS[0]}
if [ "$kstatus" -ne 0 ]; then status=$kstatus; fi
set -e
# A crash of the whole test process (a stack overflow aborts it) leaves its seed here.
if [ "$status" -ne 0 ]; then
    echo "failed; the last seed run was $(cat "${TMPDIR:-/tmp}/tilec-fuzz-last-seed" 2>/dev/null || echo unknown)"
fi
exit "$status"
