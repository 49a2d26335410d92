#!/usr/bin/env bash
# The one GPU check, for a machine with the NVIDIA driver (a GPU box with Python, NumPy and,
# for the peers, PyTorch and Triton; no Rust or LLVM needed there):
#   1. the device, driver, tilec build and ptxas version;
#   2. every stdlib kernel and every example, f32 and f64, extents 1, 17, 77, 92 and 131, on
#      --target cuda (required: a missing device fails the check) and --target vulkan (when the
#      machine has a Vulkan driver), each against the CPU target and a float64 reference;
#   3. ptxas registers and spills of every instance at sm_90;
#   4. the benchmark against torch (cuSOLVER, cuBLAS with TF32 off) and Triton's matmul.
# JSON lines go to stdout; with OUT set, also OUT/gpu-check.jsonl, OUT/summary.md and
# OUT/device.txt. Exit status 1 if anything failed; 0, with a message and nothing checked, on
# a machine without the NVIDIA driver. Arguments go to tools/gpu_check.py (`--parts
# correctness`, `--reps 50`, `--targets cuda`).
#
# Where it runs: from the unpacked bundle of tools/dist.sh (`tilec-VERSION-x86_64-linux/tools/
# gpu-check.sh`, which uses the bundle's tilec), or from a checkout with TILEC=/path/to/tilec.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tilec=${TILEC:-}
if [ -z "$tilec" ]; then
    if [ -x "$here/tilec" ]; then
        tilec=$here/tilec
    elif [ -x "$here/target/release/tilec" ]; then
        tilec=$here/target/release/tilec
    else
        echo "gpu-check: no tilec found: set TILEC or run from the bundle of tools/dist.sh" >&2
        exit 2
    fi
fi
export PATH="$PATH:/usr/local/cuda/bin"
python=${PYTHON:-python3}
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    rm -f "$OUT/gpu-check.jsonl"
fi
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm)"
    echo "tilec: $tilec ($(basename "$here"))"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    else
        echo "nvidia-smi: not found"
    fi
    if command -v ptxas >/dev/null; then ptxas --version 2>&1 | tail -1; else echo "ptxas: not on the PATH"; fi
    "$python" -c 'import numpy; print("numpy", numpy.__version__)' 2>&1
    "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' 2>&1 | tail -1
    "$python" -c 'import triton; print("triton", triton.__version__)' 2>&1 | tail -1
} | tee ${OUT:+"$OUT/device.txt"} >&2
probe=$(mktemp -d)
"$python" -c "import numpy; numpy.save('$probe/x.npy', numpy.ones((3, 5), numpy.float32))"
# Without the NVIDIA driver there is nothing to check: say so and succeed (E0430 is tilec's
# "no driver"); any other CUDA failure is the check's to report. `--targets` without cuda
# (`--targets vulkan`, as the tests run it on lavapipe) checks the rest anyway.
wanted=cuda
prev=
for a in "$@"; do
    [ "$prev" = --targets ] && wanted=$a
    case "$a" in --targets=*) wanted=${a#--targets=} ;; esac
    prev=$a
done
if [[ "$wanted" == *cuda* ]] && ! "$tilec" run "$here/stdlib/linalg.tile" --kernel row_sum --arg "X=$probe/x.npy" --out "out=$probe/s.npy" \
    --target cuda >"$probe/cuda.txt" 2>&1 && grep -q E0430 "$probe/cuda.txt"; then
    echo "gpu-check: no NVIDIA driver on this machine, nothing checked: $(head -1 "$probe/cuda.txt")" >&2
    rm -rf "$probe"
    exit 0
fi
[ -s "$probe/cuda.txt" ] && echo "cuda: $(tail -1 "$probe/cuda.txt")" >&2
# Vulkan: compared where a device answers (the NVIDIA driver's Vulkan ICD may be absent).
targets=cuda
if "$tilec" run "$here/stdlib/linalg.tile" --kernel row_sum --arg "X=$probe/x.npy" --out "out=$probe/s.npy" \
    --target vulkan >"$probe/vk.txt" 2>&1; then
    targets=cuda,vulkan
    echo "vulkan: $(tail -1 "$probe/vk.txt")" >&2
else
    echo "vulkan: not compared: $(head -1 "$probe/vk.txt")" >&2
fi
rm -rf "$probe"
exec "$python" "$here/tools/gpu_check.py" --tilec "$tilec" --targets "$targets" "$@"
