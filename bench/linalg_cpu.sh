#!/usr/bin/env bash
# Benchmark (not a test): tilec's stdlib linear algebra on the CPU target against NumPy
# (OpenBLAS) on the same .npy files, in one run:
#   1. gemm, f32, square 512/1024/2048: tilec (several tile sizes) vs NumPy `a @ b`
#      (OpenBLAS sgemm, all cores), with GFLOP/s against the machine's 128-bit FMA ceiling.
#   2. potrf_batched and trsm_right_lower_t_batched on 4096 x 92 x 92 f32: tilec vs NumPy's
#      batched call and vs a plain Python loop calling NumPy on each matrix.
# Every tilec result is checked against NumPy's. Installs NumPy with pip if it is missing.
# Takes about 1.5 minutes on a 2-core VM. Run it on an otherwise idle machine: each section
# reports how much CPU other processes took meanwhile.
# TILEC=/path/to/tilec: benchmark that binary instead of building target/release/tilec.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install --quiet numpy
if [ -n "${TILEC:-}" ]; then
    tilec=$TILEC built="(given by TILEC)"
else
    cargo build --release -j"${TILEC_JOBS:-2}" -p tilec
    tilec=target/release/tilec
    built="(built from $(git describe --always --dirty 2>/dev/null || echo 'this tree'))"
fi
data=bench/data
mkdir -p "$data"
REPEAT=10

median_ms() { sed -E 's/.*median ([0-9.]+) ms.*/\1/'; }

# Other processes on the machine skew every number here. To show it, each section ends with
# the CPU time that processes other than this script's used meanwhile (from /proc/stat, less
# this script's own children), and the hypervisor's steal time.
busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9, $9}' /proc/stat; }
own() { awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat; }
section_start() { s_busy=$(busy) s_own=$(own) s_t=$(date +%s.%N); }
section_end() {
    local e_busy e_own e_t
    e_busy=$(busy) e_own=$(own) e_t=$(date +%s.%N)
    awk -v b0="${s_busy% *}" -v st0="${s_busy#* }" -v b1="${e_busy% *}" -v st1="${e_busy#* }" \
        -v o0="$s_own" -v o1="$e_own" -v t0="$s_t" -v t1="$e_t" -v hz="$(getconf CLK_TCK)" \
        -v n="$(nproc)" -v what="$1" 'BEGIN {
        other = ((b1 - b0) - (o1 - o0)) / hz; if (other < 0) other = 0; wall = t1 - t0
        printf "quiet check (%s): %.1f s wall; other processes used %.1f CPU-s (%.0f%% of %d cores), steal %.1f CPU-s\n",
            what, wall, other, 100 * other / (wall * n), n, (st1 - st0) / hz }'
}

echo "== machine"
echo "date:   $(date -u +%Y-%m-%d)"
echo "cpu:    $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
echo "tilec:  $tilec $built"
echo "load:   $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, before)"
# The 128-bit SIMD FMA ceiling for f32: cores x 2 FMA pipes x 4 lanes x 2 flop x clock.
# The clock is /proc/cpuinfo's `cpu MHz` of the first core (the VM reports the nominal
# clock there; lscpu shows no max MHz under KVM).
mhz=$(grep -m1 'cpu MHz' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
cores=$(nproc)
ceiling=$(python3 -c "print(f'{$cores * 2 * 4 * 2 * $mhz / 1e3:.1f}')")
echo "clock:  $mhz MHz (/proc/cpuinfo 'cpu MHz', first core)"
echo "128-bit FMA ceiling, f32: $cores cores x 2 FMA pipes x 4 lanes x 2 flop x $mhz MHz" \
    "= $ceiling GFLOP/s"
echo "(256-bit FMAs, as OpenBLAS uses: 2x that, $(python3 -c "print(2 * $ceiling)") GFLOP/s)"
# Under a hypervisor `cpu MHz` is the nominal (TSC) clock; the cores may boost above it. If a
# C compiler is present, measure the FMA peak: one thread per core, 12 independent FMA chains.
measured=""
if command -v cc >/dev/null; then
    cat >"$data/fma_peak.c" <<'C'
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define ITERS 600000000L
#ifdef W256
typedef __m256 V;
#define SET _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define LANES 8
#else
typedef __m128 V;
#define SET _mm_set1_ps
#define FMA _mm_fmadd_ps
#define LANES 4
#endif
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
#define C12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define DECL(j) V a##j = SET(b + j);
#define STEP(j) a##j = FMA(a##j, x, y);
#define SUM(j) s += a##j;
static void *work(void *p) {
    float b = *(volatile float *)p, out[LANES];
    V x = SET(0.999999f), y = SET(1e-7f), s = SET(0.0f);
    C12(DECL)
    for (long i = 0; i < ITERS / 12; i++) {
        C12(STEP)
    }
    C12(SUM)
    __builtin_memcpy(out, &s, sizeof out);
    *(float *)p = out[0];
    return NULL;
}
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    pthread_t t[256];
    float r[256] = {0};
    work(&r[0]);
    double t0 = now();
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, work, &r[i]);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    printf("%.1f\n", (double)n * (ITERS / 12) * 12 * LANES * 2 / (now() - t0) / 1e9);
    return r[0] == 12345.0f;
}
C
    if cc -O2 -mfma -mavx -pthread "$data/fma_peak.c" -o "$data/fma128" &&
        cc -O2 -mfma -mavx -DW256 -pthread "$data/fma_peak.c" -o "$data/fma256"; then
        best_of3() { for _ in 1 2 3; do "$1" "$cores"; done | sort -g | tail -1; }
        p128=$(best_of3 "$data/fma128") p256=$(best_of3 "$data/fma256")
        echo "measured FMA peak, f32, $cores threads, best of 3: 128-bit $p128 GFLOP/s," \
            "256-bit $p256 GFLOP/s" \
            "(implied clock $(python3 -c "print(round($p128 / ($cores * 2 * 4 * 2) * 1e3))") MHz" \
            "at 2 FMA/cycle)"
        measured=$p128
    fi
fi


# ---------------------------------------------------------------------------------------
echo
# Runs per median: enough for about 0.5 s at each size. Shorter series come out slow and
# erratic here (up to 2x at 512 with 10 runs of 5 ms): the idle second core has to wake up.
gemm_repeat() { case $1 in 512) echo 100 ;; 1024) echo 20 ;; *) echo "$REPEAT" ;; esac; }
echo "== gemm f32, C <- A B (alpha=1, beta=0); tilec: median of $(gemm_repeat 512)/$(gemm_repeat 1024)/$(gemm_repeat 2048) runs at 512/1024/2048"
section_start
# Tile sizes tried at 1024; the best of them is then also run at 512 and 2048.
configs=("BM=32 BN=32 BK=32" "BM=64 BN=64 BK=32" "BM=32 BN=64 BK=64" "BM=64 BN=64 BK=64" \
    "BM=64 BN=32 BK=32")
run_gemm() { # n "BM=.. BN=.. BK=.." -> prints the tilec line
    local n=$1 gen=() x
    for x in $2; do gen+=(--generic "$x"); done
    "$tilec" run stdlib/linalg.tile --kernel gemm "${gen[@]}" \
        --arg A="$data/gemm_a_$n.npy" --arg B="$data/gemm_b_$n.npy" \
        --arg C="$data/gemm_c_$n.npy" --arg alpha=1 --arg beta=0 \
        --out C="$data/gemm_out_${n}_$(echo "$2" | tr -d 'BMNK=' | tr ' ' _).npy" \
        --repeat "$(gemm_repeat "$n")"
}
for n in 512 1024 2048; do
    "$tilec" gen-uniform --shape "$n,$n" --dtype f32 --seed 1 -o "$data/gemm_a_$n.npy" >/dev/null
    "$tilec" gen-uniform --shape "$n,$n" --dtype f32 --seed 2 -o "$data/gemm_b_$n.npy" >/dev/null
    "$tilec" gen-uniform --shape "$n,$n" --dtype f32 --seed 3 -o "$data/gemm_c_$n.npy" >/dev/null
done
best_cfg="" best_ms=""
for cfg in "${configs[@]}"; do
    line=$(run_gemm 1024 "$cfg")
    echo "tilec 1024 [$cfg]: $line"
    ms=$(echo "$line" | median_ms)
    if [ -z "$best_ms" ] || python3 -c "import sys; sys.exit(not $ms < $best_ms)"; then
        best_cfg=$cfg best_ms=$ms
    fi
done
echo "best tile sizes at 1024: $best_cfg"
gemm_rows=()
for n in 512 1024 2048; do
    if [ "$n" = 1024 ]; then
        ms=$best_ms
    else
        line=$(run_gemm "$n" "$best_cfg")
        echo "tilec $n [$best_cfg]: $line"
        ms=$(echo "$line" | median_ms)
    fi
    if [ "$n" != 1024 ] && [ "$best_cfg" != "${configs[0]}" ]; then
        line=$(run_gemm "$n" "${configs[0]}")
        echo "tilec $n [${configs[0]}]: $line"
    fi
    gemm_rows+=("$n:$ms")
done
best_tag=$(echo "$best_cfg" | tr -d 'BMNK=' | tr ' ' _)
python3 - "$ceiling" "$measured" "$best_cfg" "$best_tag" "${gemm_rows[@]}" <<'PY'
import sys, time
import numpy as np
ceiling, cfg, tag, rows = float(sys.argv[1]), sys.argv[3], sys.argv[4], sys.argv[5:]
measured = float(sys.argv[2]) if sys.argv[2] else None
def openblas():
    """OpenBLAS's kernel family and thread count, read from the library NumPy loaded."""
    try:
        import ctypes, glob, os
        lib = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs",
                                     "libscipy_openblas*"))[0]
        ob = ctypes.CDLL(lib)
        ob.scipy_openblas_get_corename64_.restype = ctypes.c_char_p
        return (f"{ob.scipy_openblas_get_corename64_().decode()} kernels, "
                f"{ob.scipy_openblas_get_num_threads64_()} threads")
    except Exception:
        return "kernels and threads unknown (OpenBLAS defaults: all cores)"
print(f"NumPy {np.__version__}: a @ b (OpenBLAS sgemm, {openblas()}), median of the calls"
      " in about 0.5 s (at least 10) after a warm-up call")
print(f"{'n':>5} | {'tilec ms':>9} {'GFLOP/s':>8} {'%ceil':>6} {'%meas':>6} | {'NumPy ms':>9}"
      f" {'GFLOP/s':>8} | tilec/OpenBLAS | max |err| / max |ref|")
for r in rows:
    n, tms = r.split(":")
    n, tms = int(n), float(tms)
    a = np.load(f"bench/data/gemm_a_{n}.npy")
    b = np.load(f"bench/data/gemm_b_{n}.npy")
    ref = a @ b  # warm-up and reference
    t = time.perf_counter()
    a @ b
    runs = max(10, int(0.5 / (time.perf_counter() - t)))  # about 0.5 s, as for tilec
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        a @ b
        ts.append(time.perf_counter() - t)
    nms = sorted(ts)[len(ts) // 2] * 1e3
    flop = 2.0 * n ** 3
    tg, ng = flop / tms / 1e6, flop / nms / 1e6
    out = np.load(f"bench/data/gemm_out_{n}_{tag}.npy")
    err = np.abs(out.astype(np.float64) - ref).max() / np.abs(ref).max()
    meas = f"{100 * tg / measured:>5.1f}%" if measured else f"{'-':>6}"
    print(f"{n:>5} | {tms:>9.3f} {tg:>8.2f} {100 * tg / ceiling:>5.1f}% {meas} | {nms:>9.3f}"
          f" {ng:>8.2f} | {tg / ng:>13.3f}x | {err:.1e}")
print(f"(tilec tile sizes: {cfg}; %ceil: of the 128-bit FMA ceiling at the nominal clock,"
      f" {ceiling} GFLOP/s; %meas: of the measured 128-bit FMA peak, "
      + (f"{measured} GFLOP/s)" if measured else "not measured: no C compiler)"))
PY
section_end gemm

# ---------------------------------------------------------------------------------------
echo
echo "== potrf_batched and trsm_right_lower_t_batched, 4096 x 92 x 92 f32"
section_start
"$tilec" gen-spd --batch 4096 --n 92 --dtype f32 --seed 1 -o "$data/spd_4096x92.npy" >/dev/null
"$tilec" gen-uniform --shape 4096,92,92 --dtype f32 --seed 2 -o "$data/trsm_x_4096x92.npy" >/dev/null
# The trsm input factor L is made by NumPy (np.linalg.cholesky of the SPD batch), so both
# sides solve with the same L.
python3 -c '
import numpy as np
a = np.load("bench/data/spd_4096x92.npy")
np.save("bench/data/trsm_l_4096x92.npy", np.linalg.cholesky(a).astype(np.float32))'
potrf=$("$tilec" run stdlib/linalg.tile --kernel potrf_batched \
    --arg A="$data/spd_4096x92.npy" --arg eps=1e-6 \
    --out A="$data/potrf_out.npy" --repeat "$REPEAT")
echo "tilec:  $potrf"
trsm=$("$tilec" run stdlib/linalg.tile --kernel trsm_right_lower_t_batched \
    --arg A="$data/trsm_l_4096x92.npy" --arg X="$data/trsm_x_4096x92.npy" \
    --out X="$data/trsm_out.npy" --repeat "$REPEAT")
echo "tilec:  $trsm"
python3 - "$(echo "$potrf" | median_ms)" "$(echo "$trsm" | median_ms)" <<'PY'
import sys, time
import numpy as np
potrf_ms, trsm_ms = float(sys.argv[1]), float(sys.argv[2])
spd = np.load("bench/data/spd_4096x92.npy")
L = np.load("bench/data/trsm_l_4096x92.npy")
X = np.load("bench/data/trsm_x_4096x92.npy")
B, N, _ = spd.shape
M = X.shape[1]

def median_ms(f, runs):
    f()  # warm-up
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2] * 1e3

def chol_loop():
    for i in range(B):
        np.linalg.cholesky(spd[i])

def solve_loop():
    for i in range(B):
        np.linalg.solve(L[i], X[i].T)

XT = X.transpose(0, 2, 1)  # a view: X[b]^T, N x M
rows = [
    ("potrf", potrf_ms, B * N ** 3 / 3,
     median_ms(lambda: np.linalg.cholesky(spd), 10), median_ms(chol_loop, 5)),
    ("trsm", trsm_ms, B * M * N ** 2,
     median_ms(lambda: np.linalg.solve(L, XT), 10), median_ms(solve_loop, 5)),
]
print(f"NumPy {np.__version__}. References:")
print("  potrf batched: np.linalg.cholesky(A), A: [4096,92,92] (LAPACK spotrf on one matrix")
print("                 after another in NumPy's gufunc loop)")
print("  potrf loop:    for b in range(4096): np.linalg.cholesky(A[b])")
print("  trsm batched:  np.linalg.solve(L, X^T) = (X L^-T)^T, X^T a transposed view (LAPACK")
print("                 sgesv per matrix: LU with partial pivoting of L, then 92 RHS solved;")
print("                 the result is left transposed)")
print("  trsm loop:     for b in range(4096): np.linalg.solve(L[b], X[b].T)")
print("  (flops counted for both: potrf B N^3/3, trsm B M N^2 -- the triangular work only)")
print(f"{'kernel':>6} | {'tilec ms':>9} {'GFLOP/s':>8} | {'batched ms':>10} {'speedup':>8}"
      f" | {'loop ms':>9} {'speedup':>8}")
for name, t, flop, nb, nl in rows:
    print(f"{name:>6} | {t:>9.3f} {flop / t / 1e6:>8.2f} | {nb:>10.3f} {nb / t:>7.2f}x"
          f" | {nl:>9.3f} {nl / t:>7.2f}x")
print("(speedup: reference time / tilec time; above 1 means tilec is faster)")
gesv = B * (2 * N ** 3 / 3 + 2 * N * N * M)  # LU, then the two triangular solves
print(f"(np.linalg.solve does {gesv / (B * M * N ** 2):.2f}x the trsm's flops: LU 2N^3/3 plus"
      f" 2 N^2 M for the two solves; counted so, it ran at {gesv / rows[1][3] / 1e6:.2f}"
      f" GFLOP/s batched, {gesv / rows[1][4] / 1e6:.2f} GFLOP/s in the loop)")

# Checks: tilec's results against NumPy's on the same inputs.
out = np.load("bench/data/potrf_out.npy").astype(np.float64)
ref = np.linalg.cholesky(spd.astype(np.float64))
err = np.abs(np.tril(out) - ref).max() / np.abs(ref).max()
print(f"check potrf: max |tril(tilec) - cholesky_f64| / max |L| = {err:.1e}")
out = np.load("bench/data/trsm_out.npy").astype(np.float64)
ref = np.linalg.solve(L.astype(np.float64), XT.astype(np.float64)).transpose(0, 2, 1)
err = np.abs(out - ref).max() / np.abs(ref).max()
print(f"check trsm:  max |tilec - X L^-T (f64)| / max |ref| = {err:.1e}")
PY
section_end "potrf, trsm"
echo "load:   $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, after)"
