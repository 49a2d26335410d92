#!/usr/bin/env bash
# Benchmark (not a test): tilec's potrf_batched on the CPU target against NumPy's
# np.linalg.cholesky (OpenBLAS LAPACK) on the same .npy file of 4096 SPD 92x92 f32 matrices.
# Prints both median times and their ratio. Installs NumPy with pip if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install --quiet numpy
cargo build --release -j"${TILEC_JOBS:-2}" -p tilec
tilec=target/release/tilec
mkdir -p bench/data
"$tilec" gen-spd --batch 4096 --n 92 --dtype f32 --seed 1 -o bench/data/spd_4096x92.npy
line=$("$tilec" run stdlib/linalg.tile --kernel potrf_batched \
    --arg A=bench/data/spd_4096x92.npy --arg eps=1e-6 --repeat 10)
echo "tilec:  $line"
tilec_ms=$(echo "$line" | sed -E 's/.*median ([0-9.]+) ms.*/\1/')
python3 - "$tilec_ms" <<'PY'
import sys, time
import numpy as np
a = np.load("bench/data/spd_4096x92.npy")
np.linalg.cholesky(a)  # warm up
ts = []
for _ in range(10):
    t = time.perf_counter()
    np.linalg.cholesky(a)
    ts.append(time.perf_counter() - t)
numpy_ms = sorted(ts)[len(ts) // 2] * 1e3
tilec_ms = float(sys.argv[1])
print(f"numpy:  np.linalg.cholesky median {numpy_ms:.3f} ms (NumPy {np.__version__})")
print(f"ratio:  tilec is {numpy_ms / tilec_ms:.2f}x the speed of NumPy")
PY
