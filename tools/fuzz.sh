#!/usr/bin/env bash
# Source-level fuzzing for longer than the test suite's fixed budget (tools/tests/fuzz_source.rs):
# mutants of stdlib/, examples/ and tests/ui/ through `check`, `build --emit tir` and
# `build --target spirv`, in a release build, for N minutes. Prints each failure with its seed;
# reproduce one with
#   TILEC_FUZZ_SEED=<seed> TILEC_FUZZ_COUNT=1 cargo test -p tilec --test fuzz_source -- --nocapture
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
echo "fuzzing for $minutes minutes from seed $seed"
set +e
TILEC_FUZZ_SEED="$seed" TILEC_FUZZ_SECONDS=$((minutes * 60)) \
    cargo test --release -j"${TILEC_JOBS:-2}" -p tilec --test fuzz_source -- --nocapture 2>&1 |
    grep -E "FUZZ FAILURE|fuzzed|panicked|overflow|SIGSEGV|SIGABRT"
status=${PIPESTATUS[0]}
set -e
# A crash of the whole test process (a stack overflow aborts it) leaves its seed here.
if [ "$status" -ne 0 ]; then
    echo "failed; the last seed run was $(cat "${TMPDIR:-/tmp}/tilec-fuzz-last-seed" 2>/dev/null || echo unknown)"
fi
exit "$status"
