#!/usr/bin/env bash
# Benchmark (not a test): what the GPU code cache (tools/src/driver/gpucode.rs) saves a second
# process on Vulkan. Wall time of a whole `tilec run --target vulkan` (the first Vulkan device:
# lavapipe on the test machine) of KERNELS with an empty cache folder (SIMT lowering and
# SPIR-V generated, then stored) and again with the entry stored (read back), median of 5
# processes each, three rounds in one run; every output is compared with the first's. The
# driver's own pipeline compile is in both. TILEC=/path/to/tilec: benchmark that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${TILEC:-}" ]; then
    tilec=$TILEC
else
    cargo build --release -j"${TILEC_JOBS:-2}" -p tilec >&2
    tilec=target/release/tilec
fi
work=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; $(date -u +%Y-%m-%d); tilec $(git describe --always --dirty 2>/dev/null || echo '?')"
"$tilec" gen-spd --batch 64 --n 92 -o "$work/spd.npy" >/dev/null
"$tilec" gen-uniform --shape 64,92,16 -o "$work/x.npy" >/dev/null
run() { # NAME CACHE ARGS...: wall seconds of one run; its output checked
    local name=$1 dir=$2 t
    shift 2
    t=$( { TIMEFORMAT='%R'; time "$tilec" --cache-dir "$dir" run stdlib/linalg.tile --target vulkan "$@" \
        --out "X=$work/out.npy" >/dev/null; } 2>&1 )
    if [ -e "$work/ref-$name.npy" ]; then
        cmp -s "$work/out.npy" "$work/ref-$name.npy" || { echo "$name: a different result" >&2; exit 1; }
    else
        cp "$work/out.npy" "$work/ref-$name.npy"
    fi
    echo "$t"
}
median5() { # CMD...: the median of five runs of CMD
    local i v=()
    for i in 1 2 3 4 5; do v+=("$("$@")"); done
    printf '%s\n' "${v[@]}" | sort -n | sed -n 3p
}
cold() { rm -rf "$work/c"; run "$@" "$work/c" "${args[@]}"; }
warm() { run "$@" "$work/c" "${args[@]}"; }
echo "Each cell: wall seconds of a whole \`tilec run --target vulkan\` (median of 5)."
echo
echo "| round | kernel | empty cache | SPIR-V cached |"
echo "|---|---|---|---|"
for r in 1 2 3; do
    for k in potrs trsm; do
        case $k in
        potrs) args=(--kernel potrs_batched --arg "L=$work/spd.npy" --arg "X=$work/x.npy") ;;
        trsm) args=(--kernel trsm_left_lower_t_batched --arg "A=$work/spd.npy" --arg "X=$work/x.npy") ;;
        esac
        c=$(median5 cold "$k")
        w=$(median5 warm "$k")
        echo "| $r | $k 64 x 92, 16 rhs | $c | $w |"
    done
done
