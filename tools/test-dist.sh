#!/usr/bin/env bash
# The rehearsal of a GPU machine's first contact (run by tools/test.sh): exactly what the
# device call of bench/results/README.md runs, on this machine, with stand-ins for the GPU.
# Packs the dev-profile bundle with tools/dist.sh, unpacks it without xz (`python3 -m tarfile`)
# into a clean folder, and runs it with an emptied environment (`env -i`), checking that
# - the binary links no LLVM library and every library it loads comes from the bundle;
# - `build --target ptx` writes PTX for every stdlib instance; `run --target cpu` computes;
# - without a driver, `run --target cuda` fails with E0430, which names where it looked;
# - a stand-in libcuda.so.1 (built here with cc, every function the launcher needs, cuInit
#   answering CUDA_ERROR_NO_DEVICE) found through LD_LIBRARY_PATH is loaded: tilec says the
#   driver lists no device (E0432), from the command line and from the bundle's Python package;
# - tools/gpu-check.sh finds the bundle's tilec; on a machine that shows an NVIDIA GPU (a
#   stand-in nvidia-smi listing an H100) where tilec cannot use it, it fails loudly, with and
#   without the stand-in driver; with neither GPU nor driver it says so and exits 0;
# - the check's smoke, python, bench and profile parts run end to end on lavapipe
#   (`--bench-target vulkan --quick`), every record of tilec matching its float64 reference,
#   each record timestamped and summary.md written; the peers' code (torch, Triton) runs on the
#   CPU wherever torch imports, and is recorded as not run where it does not (set
#   TILEC_TORCH_PYTHON to a Python with torch and Triton to require that every peer runs);
# - `--deadline` stops new work and says so; a hanging run is cut at `--timeout`, and the
#   check goes on with the next part;
# - the archive fits the 64 MiB that travels to a GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TILEC_DIST_PROFILE=dev tools/dist.sh "$tmp/dist" >"$tmp/dist.out"
cat "$tmp/dist.out"
archive=$(ls "$tmp"/dist/*.tar.xz)
fail() { echo "test-dist: $*" >&2; exit 1; }
mkdir "$tmp/box"
python3 -m tarfile -e "$archive" "$tmp/box" || fail "python3 -m tarfile cannot unpack $archive"
box=$(ls -d "$tmp"/box/tilec-*)
size=$(stat -c %s "$archive")
[ "$size" -lt $((64 << 20)) ] || fail "archive is $size bytes, over 64 MiB"
for f in tilec tools/gpu-check.sh tools/gpu_check.py tools/gpu_torch_check.py stdlib/linalg.tile bench/peers; do
    [ -e "$box/$f" ] || fail "the bundle lacks $f"
done
ls "$box"/python/tilec/_tilec*.so >/dev/null 2>&1 || fail "the bundle lacks the Python extension module"
ldd "$box/lib/tilec" | grep -qi llvm && fail "the binary links LLVM dynamically: $(ldd "$box/lib/tilec")"
ls "$box/lib" | grep -qi llvm && fail "the bundle holds an LLVM library"
ldd "$box"/python/tilec/_tilec*.so | grep -qi llvm && fail "the Python extension links LLVM dynamically"
# The extension loads with the machine's own C library: nothing newer than glibc 2.34 (Ubuntu
# 22.04 has 2.35; python/src/lib.rs defines the arc4random that LLVM would import from 2.36).
newer=$(objdump -T "$box"/python/tilec/_tilec*.so | grep -oE 'GLIBC_2\.(3[5-9]|[4-9][0-9])' | sort -u || true)
[ -z "$newer" ] || fail "the Python extension needs glibc symbols newer than 2.34: $newer"
loader=$(ls "$box"/lib/ld-linux*)
# Every library the loader resolves comes from the bundle.
env -i "$loader" --library-path "$box/lib" --list "$box/lib/tilec" >"$tmp/libs" || fail "the bundled loader cannot load tilec"
if grep '=>' "$tmp/libs" | grep -v "=> $box/lib/" | grep -q .; then
    fail "libraries from outside the bundle: $(grep '=>' "$tmp/libs" | grep -v "=> $box/lib/")"
fi
# The emptied environment: the C tools and the Python with NumPy that the tests use.
pydir=$(dirname "$(python3 -c 'import sys; print(sys.executable)')")
path=$pydir:/usr/bin:/bin
clean() { env -i PATH="$path" HOME="$tmp" "$@"; }
cd "$tmp"
clean "$box/tilec" build "$box/stdlib/linalg.tile" --target ptx --generic T=f32 -o "$tmp" >/dev/null ||
    fail "build --target ptx failed"
n=$(ls "$tmp"/*.ptx | wc -l)
[ "$n" -ge 10 ] || fail "expected a .ptx file per stdlib instance, got $n"
grep -l '\.entry' "$tmp"/*.ptx | wc -l | grep -qx "$n" || fail "a .ptx file has no entry point"
python3 -c 'import numpy as np; np.save("x.npy", np.arange(1, 7, dtype=np.float32).reshape(2, 3))'
clean "$box/tilec" run "$box/stdlib/linalg.tile" --kernel row_sum --arg X=x.npy --out out=s.npy >run.txt ||
    fail "run --target cpu failed: $(cat run.txt)"
python3 -c 'import numpy as np; s = np.load("s.npy"); assert s.tolist() == [6.0, 15.0], s' ||
    fail "row_sum gave wrong sums"
# Runs `tilec run row_sum --target cuda` with the environment given; its exit code and output.
cuda_run() {
    set +e
    clean "$@" "$box/tilec" run "$box/stdlib/linalg.tile" --kernel row_sum --arg X=x.npy --out out=s2.npy --target cuda >cuda.txt 2>&1
    rc=$?
    set -e
}
cuda_run
[ "$rc" -eq 2 ] && grep -q E0430 cuda.txt || fail "run --target cuda without a driver: exit $rc, $(cat cuda.txt)"
grep -q "libcuda.so.1 by name (LD_LIBRARY_PATH unset, so the loader.s cache and default folders): libcuda.so.1: cannot open shared object file" cuda.txt &&
    grep -q "not in /usr/local/nvidia/lib64" cuda.txt ||
    fail "E0430 does not say where the driver was looked for: $(cat cuda.txt)"
# The stand-in driver: every function the launcher needs (runtime/src/cuda/driver.rs, SYMBOLS).
mkdir fakecuda fakebin
syms=$(awk '/const SYMBOLS/ {on = 1; next} on && /\];/ {exit} on' "$repo/runtime/src/cuda/driver.rs" | grep -o '"[A-Za-z0-9_]*"' | tr -d '"')
[ "$(echo "$syms" | wc -l)" -ge 20 ] || fail "could not read the driver's SYMBOLS: $syms"
{
    echo '/* A stand-in NVIDIA driver: no device. */'
    echo 'int cuInit(unsigned flags) { (void)flags; return 100; /* CUDA_ERROR_NO_DEVICE */ }'
    echo 'int cuDriverGetVersion(int *v) { *v = 13000; return 0; }'
    echo 'int cuDeviceGetCount(int *n) { *n = 0; return 100; }'
    echo 'int cuGetErrorString(int e, const char **s) { (void)e; *s = "no CUDA-capable device is detected"; return 0; }'
    for s in $syms; do
        case "$s" in cuInit | cuDriverGetVersion | cuDeviceGetCount | cuGetErrorString) ;;
        *) echo "int $s(void) { return 999; /* CUDA_ERROR_UNKNOWN */ }" ;;
        esac
    done
} >fakecuda/cuda.c
cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o fakecuda/libcuda.so.1 fakecuda/cuda.c || fail "cannot build the stand-in libcuda.so.1"
cuda_run LD_LIBRARY_PATH="$tmp/fakecuda"
[ "$rc" -eq 2 ] && grep -q E0432 cuda.txt && ! grep -q E0430 cuda.txt ||
    fail "with a driver that lists no device on LD_LIBRARY_PATH, run --target cuda: exit $rc, $(cat cuda.txt)"
# The bundle's Python package: the CPU computes; CUDA reaches the stand-in driver.
cat >py.py <<'PY'
import numpy as np, tilec
a = np.eye(16, dtype=np.float32)[None].repeat(4, axis=0) * 4.0
l = tilec.linalg.potrf_batched(a.copy(), eps=1e-6)
assert np.allclose(np.tril(l), 2.0 * np.eye(16)), l[0]
try:
    tilec.linalg.on("cuda").potrf_batched(a.copy(), eps=1e-6)
except tilec.DeviceError as e:
    print("cuda:", e.code)
PY
clean PYTHONPATH="$box/python" LD_LIBRARY_PATH="$tmp/fakecuda" python3 py.py >py.txt 2>&1 || fail "the bundle's Python package: $(cat py.txt)"
grep -qx "cuda: E0432" py.txt || fail "the bundle's Python package with the stand-in driver: $(cat py.txt)"
# A stand-in nvidia-smi that lists an H100.
cat >fakebin/nvidia-smi <<'SH'
#!/bin/sh
case "$1" in
-L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)" ;;
*) echo "NVIDIA H100 80GB HBM3, 580.159, Enabled, 81559 MiB, 1980 MHz" ;;
esac
SH
chmod +x fakebin/nvidia-smi
# gpu-check.sh with the environment given: its exit code, stdout and stderr in gc.txt.
gpu_check() {
    set +e
    clean "$@" >gc.txt 2>&1
    rc=$?
    set -e
}
gpu_check TILEC= "$box/tools/gpu-check.sh"
[ "$rc" -eq 0 ] || fail "tools/gpu-check.sh without a driver did not exit 0: $(cat gc.txt)"
grep -q "^tilec: $box/tilec " gc.txt || fail "tools/gpu-check.sh did not pick the bundle's tilec: $(head -5 gc.txt)"
grep -q "no NVIDIA driver or GPU on this machine, nothing checked" gc.txt || fail "tools/gpu-check.sh: $(cat gc.txt)"
gpu_check PATH="$tmp/fakebin:$path" OUT="$tmp/out1" "$box/tools/gpu-check.sh"
[ "$rc" -ne 0 ] && grep -q "FAIL: this machine shows an NVIDIA GPU (nvidia-smi lists 1 GPU(s)) but tilec cannot use it: .*E0430" gc.txt ||
    fail "gpu-check.sh with an H100 listed and no driver: exit $rc, $(cat gc.txt)"
grep -q "H100" out1/device.txt && grep -q "FAIL" out1/summary.md && grep -q '"part": "probe", "ok": false' out1/gpu-check.jsonl ||
    fail "gpu-check.sh did not record the failed probe in OUT: $(cat out1/*)"
gpu_check PATH="$tmp/fakebin:$path" LD_LIBRARY_PATH="$tmp/fakecuda" "$box/tools/gpu-check.sh"
[ "$rc" -ne 0 ] && grep -q "FAIL: this machine shows an NVIDIA GPU .*E0432" gc.txt ||
    fail "gpu-check.sh with an H100 listed and a driver that lists none: exit $rc, $(cat gc.txt)"
# The check's parts end to end on lavapipe, small shapes; the python part meets the stand-in.
gpu_check OUT="$tmp/out2" LD_LIBRARY_PATH="$tmp/fakecuda" "$box/tools/gpu-check.sh" --targets vulkan --bench-target vulkan \
    --parts smoke,python,bench,profile --quick --reps 2 --deadline 900
[ "$rc" -eq 0 ] || fail "gpu-check.sh --bench-target vulkan --quick: exit $rc, $(tail -40 gc.txt)"
python3 "$repo/tools/gpu_check_records.py" out2 smoke,python,bench,profile || fail "the records of the lavapipe run"
# With TILEC_TORCH_PYTHON, a Python that imports torch (and Triton): the peers' code on CPU
# tensors, Triton in its interpreter; every peer must run and match its reference.
if [ -n "${TILEC_TORCH_PYTHON:-}" ]; then
    gpu_check OUT="$tmp/out4" PYTHON="$TILEC_TORCH_PYTHON" "$box/tools/gpu-check.sh" --targets vulkan --bench-target vulkan \
        --parts smoke,bench --quick --reps 2 --deadline 900
    [ "$rc" -eq 0 ] || fail "gpu-check.sh with torch on the CPU: exit $rc, $(tail -40 gc.txt)"
    "$TILEC_TORCH_PYTHON" "$repo/tools/gpu_check_records.py" out4 smoke,bench --peers-ran || fail "the records with torch"
fi
# A deadline already passed: nothing new starts, and the run says so and fails.
gpu_check OUT="$tmp/out3" "$box/tools/gpu-check.sh" --targets vulkan --parts correctness,ptxas --deadline 0
[ "$rc" -eq 1 ] && grep -q '"part": "correctness", "ok": false, "error": "not started: deadline"' out3/gpu-check.jsonl ||
    fail "gpu-check.sh --deadline 0: exit $rc, $(cat out3/gpu-check.jsonl)"
# A kernel that hangs: its run is cut at --timeout and recorded, and the check goes on.
printf '#!/bin/sh\nsleep 60\n' >hang.sh
chmod +x hang.sh
set +e
clean OUT="$tmp/out5" timeout 50 python3 "$box/tools/gpu_check.py" --tilec "$tmp/hang.sh" --parts smoke,python --bench-target vulkan \
    --quick --timeout 3 >gc.txt 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q '"part": "smoke", .*"error": "timed out after 3 s' out5/gpu-check.jsonl &&
    grep -q '"name": "python"' out5/gpu-check.jsonl || fail "a hanging tilec: exit $rc, $(cat gc.txt)"
# The wheel beside the archive, installed into a clean virtual environment (no Rust, no LLVM:
# PATH holds the environment's bin/ alone, LD_LIBRARY_PATH is unset), runs the Python test
# suite: the default CPU code generator (LLVM, tiered), Cranelift (TILEC_CPU_BACKEND), and
# Vulkan on lavapipe.
wheel=$(ls "$tmp"/dist/tilec-*.whl)
wsize=$(stat -c %s "$wheel")
[ "$wsize" -lt $((64 << 20)) ] || fail "the wheel is $wsize bytes, over 64 MiB"
case "$(basename "$wheel")" in
tilec-*-cp39-abi3-manylinux_2_35_x86_64.whl) ;;
*) fail "the wheel's tags: $(basename "$wheel")" ;;
esac
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel[test]" ||
    fail "pip install $(basename "$wheel")[test]"
venv_py() { env -i PATH="$tmp/venv/bin" HOME="$tmp" TILEC_CACHE_DIR="$tmp/cache" TILEC_REQUIRE_VULKAN=1 "$@"; }
venv_py python -m tilec --version >version.txt || fail "python -m tilec --version: $(cat version.txt)"
grep -q "CPU code generators: LLVM (default), Cranelift" version.txt && grep -q "cuda; LLVM 16" version.txt ||
    fail "the wheel's build: $(cat version.txt)"
where=$(venv_py python -c 'import tilec; print(tilec.__file__)')
case "$where" in "$tmp/venv/"*) ;; *) fail "tilec imported from $where, not the wheel" ;; esac
(cd "$repo" && venv_py python -m pytest -q -p no:cacheprovider python/tests) >pytest.txt 2>&1 ||
    fail "the Python tests with the wheel (default backend): $(tail -30 pytest.txt)"
tail -1 pytest.txt
(cd "$repo" && venv_py TILEC_CPU_BACKEND=cranelift python -m pytest -q -p no:cacheprovider python/tests) >pytest.txt 2>&1 ||
    fail "the Python tests with the wheel (Cranelift): $(tail -30 pytest.txt)"
tail -1 pytest.txt
echo "test-dist: ok ($(basename "$archive"): $size bytes; $(basename "$wheel"): $wsize bytes)"
