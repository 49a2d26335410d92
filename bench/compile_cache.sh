#!/usr/bin/env bash
# Benchmark (not a test): what the persistent compile cache saves a second process. Wall time
# of a whole `tilec run` of potrf_batched (4096 x 92 x 92 f32) with the LLVM CPU backend and an
# empty cache folder (it compiles the instance at O3 and stores the object), then again with
# the object stored (it links it), and with Cranelift (no cache: it compiles in milliseconds),
# three rounds in one run. Every run's factor is compared with the first's.
# TILEC=/path/to/tilec: benchmark that binary (built with `--features llvm`).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${TILEC:-}" ]; then
    tilec=$TILEC
else
    cargo build --release -j"${TILEC_JOBS:-2}" -p tilec --features llvm >&2
    tilec=target/release/tilec
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; $(date -u +%Y-%m-%d); tilec $(git describe --always --dirty 2>/dev/null || echo '?')"
"$tilec" gen-spd --batch 4096 --n 92 -o "$work/spd.npy" >/dev/null
run() { # NAME CACHE_DIR BACKEND: "wall cpu" seconds of one `tilec run`; its factor checked
    local name=$1 ref=$work/ref-${1%%-*}.npy t
    t=$( { TIMEFORMAT='%R %U %S'; time "$tilec" --cache-dir "$2" run stdlib/linalg.tile --kernel potrf_batched \
        --arg "A=$work/spd.npy" --arg eps=1e-6 --backend "$3" --out "A=$work/$name.npy" >/dev/null; } 2>&1 )
    if [ -e "$ref" ]; then
        cmp -s "$work/$name.npy" "$ref" || { echo "$name: a different factor" >&2; exit 1; }
    else
        cp "$work/$name.npy" "$ref"
    fi
    echo "$t" | awk '{printf "%.2f / %.2f", $1, $2 + $3}'
}
echo "Each cell: wall / CPU (user + system) seconds of the whole process. The wall time includes"
echo "writing the 139 MB factor; the CPU time shows the compile."
echo
echo "| round | LLVM, empty cache | LLVM, object cached | Cranelift | CPU time, empty/cached |"
echo "|---|---|---|---|---|"
for r in 1 2 3; do
    rm -rf "$work/cache"
    cold=$(run llvm-cold "$work/cache" llvm)
    warm=$(run llvm-warm "$work/cache" llvm)
    cl=$(run cranelift "$work/none" cranelift)
    ratio=$(awk -v a="${cold#* / }" -v b="${warm#* / }" 'BEGIN { printf "%.1fx", a / b }')
    echo "| $r | $cold | $warm | $cl | $ratio |"
done
