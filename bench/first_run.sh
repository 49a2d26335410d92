#!/usr/bin/env bash
# Benchmark (not a test): what the default CPU code generator costs a first run. Wall time of
# whole `tilec run`s of potrf_batched (f32) with the default (LLVM, tiered: Cranelift's code
# runs while LLVM compiles in the background, driver/tiered.rs), `--backend cranelift` and
# `--backend llvm` (compiled before the launch), each with an empty compile cache: one 92x92
# matrix once, 4096 of them once, and 4096 with `--repeat 10` (timed runs wait for LLVM's
# code), then the default again with the cache that the `--repeat 10` run filled. Each cell is
# the median of five processes (the cache emptied before each but the last column's); three
# rounds in one run; every factor is compared with the first's, bit for bit (the two code generators
# give the same bits). With PYTHON=/path/to/python (an environment with the tilec wheel
# installed), also 30 calls of `tilec.linalg.potrf_batched` in one process (each backend in a
# fresh process with an empty cache): the first, the median of calls 2-10 and of calls 21-30.
# TILEC=/path/to/tilec: benchmark that binary (built with `--features llvm`).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${TILEC:-}" ]; then
    tilec=$TILEC
else
    cargo build --release -j"${TILEC_JOBS:-2}" -p tilec --features llvm >&2
    tilec=target/release/tilec
fi
# In memory where there is a tmpfs: writing the 139 MB factor to a disk was the noisiest part.
work=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; $(date -u +%Y-%m-%d); tilec $(git describe --always --dirty 2>/dev/null || echo '?')"
"$tilec" gen-spd --batch 4096 --n 92 -o "$work/spd.npy" >/dev/null
"$tilec" gen-spd --batch 1 --n 92 -o "$work/one.npy" >/dev/null
run() { # INPUT BACKEND REPEAT CACHE: wall seconds of one `tilec run`; its factor checked
    local ref=$work/ref-$(basename "$1") backend=() t
    [ "$2" = default ] || backend=(--backend "$2")
    t=$( { TIMEFORMAT='%R'; time "$tilec" --cache-dir "$4" run stdlib/linalg.tile --kernel potrf_batched \
        --arg "A=$1" --arg eps=1e-6 ${backend[@]+"${backend[@]}"} --repeat "$3" --out "A=$work/out.npy" >/dev/null; } 2>&1 )
    if [ -e "$ref" ]; then
        cmp -s "$work/out.npy" "$ref" || { echo "$2 on $1: a different factor" >&2; exit 1; }
    else
        cp "$work/out.npy" "$ref"
    fi
    echo "$t"
}
median5() { # CMD...: the median of five runs of CMD (each prints seconds)
    local i v=()
    for i in 1 2 3 4 5; do v+=("$("$@")"); done
    printf '%s\n' "${v[@]}" | sort -n | sed -n 3p
}
echo "Each cell: wall seconds of the whole process (median of 5), the compile cache empty unless said."
echo
echo "| round | job | default (tiered) | Cranelift | LLVM | default, cache filled by the LLVM run |"
echo "|---|---|---|---|---|---|"
for r in 1 2 3; do
    for job in "one.npy 1" "spd.npy 1" "spd.npy 10"; do
        set -- $job
        fresh() { rm -rf "$work/c"; run "$@" "$work/c"; }
        d=$(median5 fresh "$work/$1" default "$2")
        c=$(median5 fresh "$work/$1" cranelift "$2")
        l=$(median5 fresh "$work/$1" llvm "$2")
        w=$(median5 run "$work/$1" default "$2" "$work/c")
        name="$([ "$1" = one.npy ] && echo "1 x 92x92" || echo "4096 x 92x92"), repeat $2"
        echo "| $r | $name | $d | $c | $l | $w |"
    done
done
if [ -n "${PYTHON:-}" ]; then
    echo
    echo "Python, one process per cell: first call / median of calls 2-10 / median of calls 21-30, ms (4096 x 92x92)."
    echo
    echo "| round | default (tiered) | Cranelift | LLVM |"
    echo "|---|---|---|---|"
    py() {
        TILEC_CACHE_DIR="$work/pc-$1-$r" "$PYTHON" - "$1" "$work/spd.npy" <<'PY'
import sys, time, numpy as np, tilec
backend = None if sys.argv[1] == "default" else sys.argv[1]
a = np.load(sys.argv[2])
lib = tilec.linalg.on("cpu", backend=backend)
t = []
for _ in range(30):
    x = a.copy()
    t0 = time.perf_counter()
    lib.potrf_batched(x, eps=1e-6)
    t.append((time.perf_counter() - t0) * 1e3)
print(f"{t[0]:.0f} / {sorted(t[1:10])[4]:.0f} / {sorted(t[20:])[5]:.0f}")
PY
    }
    for r in 1 2 3; do
        echo "| $r | $(py default) | $(py cranelift) | $(py llvm) |"
    done
fi
