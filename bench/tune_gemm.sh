#!/usr/bin/env bash
# Benchmark (not a test): the stdlib gemm tuned by `tilec tune` against its default tile sizes
# (BM = BN = BK = 32) and against NumPy's `a @ b` (OpenBLAS, all cores), f32, square 512 and
# 1024, in one run, with each CPU backend this tilec has. Every result is checked against
# NumPy's. The tuning records go to a temporary cache folder, so the user's are untouched.
# Takes about a minute with Cranelift only on a 2-core VM (LLVM compiles each of the 36
# configurations in about 0.5 s).
# TILEC=/path/to/tilec: benchmark that binary instead of building target/release/tilec.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install --quiet numpy
if [ -n "${TILEC:-}" ]; then
    tilec=$TILEC
else
    cargo build --release -j"${TILEC_JOBS:-2}" -p tilec >&2
    tilec=target/release/tilec
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; $(date -u +%Y-%m-%d); tilec $(git describe --always --dirty 2>/dev/null || echo '?')"
backends=cranelift
if "$tilec" build stdlib/linalg.tile --backend llvm --emit tir >/dev/null 2>&1; then backends="cranelift llvm"; fi
median_ms() { sed -E 's/.*median ([0-9.]+) ms.*/\1/'; }
echo "| n | backend | default 32x32x32 ms | tuned ms | tuned config | NumPy ms | default/tuned | NumPy/tuned |"
echo "|---|---|---|---|---|---|---|---|"
for n in 512 1024; do
    a=$work/a$n.npy b=$work/b$n.npy c=$work/c$n.npy
    "$tilec" gen-uniform --shape "$n,$n" --seed 1 -o "$a" >/dev/null
    "$tilec" gen-uniform --shape "$n,$n" --seed 2 -o "$b" >/dev/null
    "$tilec" gen-uniform --shape "$n,$n" --seed 3 -o "$c" >/dev/null
    np_ms=$(python3 - "$a" "$b" <<'PY'
import sys, time, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
a @ b
ts = []
for _ in range(10):
    t = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t)
print(f"{sorted(ts)[5] * 1e3:.3f}")
PY
)
    for be in $backends; do
        args=(--arg "A=$a" --arg "B=$b" --arg "C=$c" --arg alpha=1 --arg beta=0 --backend "$be")
        "$tilec" --cache-dir "$work/cache" tune stdlib/linalg.tile --kernel gemm "${args[@]}" --repeat 5 > "$work/tune-$n-$be.txt"
        def=$("$tilec" --cache-dir "$work/cache" run stdlib/linalg.tile --kernel gemm "${args[@]}" \
            --generic BM=32 --generic BN=32 --generic BK=32 --repeat 10 --out "C=$work/def.npy" | median_ms)
        line=$("$tilec" --cache-dir "$work/cache" run stdlib/linalg.tile --kernel gemm "${args[@]}" --repeat 10 --out "C=$work/tuned.npy")
        tuned=$(echo "$line" | median_ms)
        config=$(echo "$line" | sed -nE 's/.*\(tuned: (.*)\).*/\1/p')
        python3 - "$a" "$b" "$work/def.npy" "$work/tuned.npy" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]).astype(np.float64), np.load(sys.argv[2]).astype(np.float64)
ref = a @ b
for f in sys.argv[3:]:
    err = np.abs(np.load(f) - ref).max() / np.abs(ref).max()
    assert err < 1e-5, (f, err)
PY
        python3 -c "print(f'| $n | $be | $def | $tuned | ${config:-none} | $np_ms | {$def / $tuned:.2f}x | {$np_ms / $tuned:.2f}x |')"
    done
done
