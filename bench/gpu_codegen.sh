#!/usr/bin/env bash
# GPU code generation time and size, per kernel instance: `tilec build --target spirv --report`
# (SIMT lowering + SPIR-V, ms, words, lines) on the stdlib, every example, and the cases of
# issue 13 whose size once grew with a tile's elements (a 1-D masked load of 256 and 1024
# elements, a scan with a run-time element index on a tile<f32, 1234>); then, when this tilec
# has the PTX backend, the PTX lines per instance and the time of the whole build.
#   TILEC=target/release/tilec bench/gpu_codegen.sh [LANES]
set -euo pipefail
cd "$(dirname "$0")/.."
tilec="${TILEC:-target/release/tilec}"
lanes="${1:-32}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for b in 256 1024; do
    cat > "$work/masked_load_$b.tile" <<TILE
kernel masked_load_$b(X: f32[R, N], Y: mut f32[R, N]) grid(R) {
    let r = program_id(0);
    let row = tile<f32, $b>::full(-1.0);
    row[:] = X[r, 0:$b];
    Y[r, 0:$b] = row;
}
TILE
done
cat > "$work/dynamic_index_scan.tile" <<'TILE'
kernel dynamic_index_scan(X: f32[N], Y: mut f32[N]) grid(1) {
    let t = X[0:1234];
    let s = 0.0;
    for j in 0..1234 {
        s += t[j];
        t[j] = s;
    }
    Y[0:1234] = t;
}
TILE
files=(stdlib/linalg.tile examples/*.tile "$work"/*.tile)
echo "# tilec build --target spirv --report, $lanes lanes ($(uname -m), $(nproc) cores)"
for f in "${files[@]}"; do
    start=$(date +%s.%N)
    "$tilec" build "$f" --target spirv --lanes "$lanes" --report | sed "s|^|$(basename "$f"): |"
    end=$(date +%s.%N)
    printf '%s: whole file %.2f s\n' "$(basename "$f")" "$(echo "$end - $start" | bc)"
done
if "$tilec" build "$work/masked_load_256.tile" --target ptx -o "$work/" >/dev/null 2>&1; then
    echo "# tilec build --target ptx (sm_80): lines per instance"
    for f in "${files[@]}"; do
        d="$work/ptx_$(basename "$f" .tile)"
        mkdir -p "$d"
        start=$(date +%s.%N)
        "$tilec" build "$f" --target ptx -o "$d/" >/dev/null
        end=$(date +%s.%N)
        for p in "$d"/*.ptx; do
            printf '%s: %s: %s lines\n' "$(basename "$f")" "$(basename "$p" .ptx)" "$(wc -l < "$p")"
        done
        printf '%s: whole file %.2f s\n' "$(basename "$f")" "$(echo "$end - $start" | bc)"
    done
else
    echo "# no PTX: this tilec was built without the ptx feature"
fi
