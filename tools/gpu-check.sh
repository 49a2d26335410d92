#!/usr/bin/env bash
# The one GPU check, for a machine with the NVIDIA driver (a GPU box with Python, NumPy and,
# for the peers, PyTorch and Triton; no Rust or LLVM needed there). The most important facts
# come first, so that a call cut short still brings them back:
#   1. device facts (nvidia-smi -L and -q, persistence mode, driver, the driver's libraries and
#      the environment that finds them, tilec and ptxas versions) -> OUT/device.txt;
#   2. a probe: one kernel on --target cuda. A machine that shows an NVIDIA GPU (`nvidia-smi -L`
#      lists one, or /dev/nvidiactl exists) where tilec cannot use it FAILS here, loudly, with
#      tilec's message (E0430 lists where the driver was looked for);
#   3. tools/gpu_check.py: smoke test, CUDA tensors from Python, benchmark, correctness of every
#      kernel and example, ptxas, profiles (see its --help), under --deadline SECONDS.
# JSON lines go to stdout; with OUT set, also OUT/gpu-check.jsonl, OUT/summary.md (rewritten
# after each part) and OUT/device.txt. Exit status 1 if anything failed; 0, with a message and
# nothing checked, on a machine with neither an NVIDIA GPU nor its driver. Arguments go to
# tools/gpu_check.py (`--parts smoke,bench`, `--reps 50`, `--targets cuda`, `--deadline 300`).
#
# Where it runs: from the unpacked bundle of tools/dist.sh (`tilec-VERSION-x86_64-linux/tools/
# gpu-check.sh`, which uses the bundle's tilec and its python/ package), or from a checkout
# with TILEC=/path/to/tilec.
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
# The bundle's Python package (the extension module with the PTX backend), for the CUDA
# tensors part; a checkout's package is the one installed in the Python that runs the check.
[ -d "$here/python/tilec" ] && export PYTHONPATH="$here/python${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$PATH:/usr/local/cuda/bin"
python=${PYTHON:-python3}
started=$(date +%s)
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    rm -f "$OUT/gpu-check.jsonl" "$OUT/summary.md"
fi
facts=$(mktemp)
# A command's output, its first `lines` lines (its last ones where it failed), and its exit
# status where not 0; never more than `secs` seconds.
fact() {
    local secs=$1 lines=$2
    shift 2
    echo "\$ $*"
    timeout "$secs" "$@" >"$facts" 2>&1
    local rc=$?
    if [ "$rc" -eq 0 ]; then head -n "$lines" "$facts"; else tail -n "$lines" "$facts"; echo "(exit $rc)"; fi
}
shows_gpu=
if command -v nvidia-smi >/dev/null && timeout 20 nvidia-smi -L 2>/dev/null | grep -q '^GPU [0-9]'; then
    shows_gpu="nvidia-smi lists $(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU [0-9]') GPU(s)"
elif [ -e /dev/nvidiactl ]; then
    shows_gpu="/dev/nvidiactl exists"
fi
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm)"
    echo "tilec: $tilec ($(basename "$here"))"
    echo "gpu shown: ${shows_gpu:-no}"
    if command -v nvidia-smi >/dev/null; then
        fact 20 20 nvidia-smi -L
        fact 20 5 nvidia-smi --query-gpu=name,driver_version,persistence_mode,memory.total,clocks.max.sm,clocks.sm,power.limit --format=csv
        fact 30 400 nvidia-smi -q
    else
        echo "nvidia-smi: not found"
    fi
    [ -r /proc/driver/nvidia/version ] && fact 5 5 cat /proc/driver/nvidia/version
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}"
    echo "PYTHONPATH=${PYTHONPATH:-}"
    fact 10 20 sh -c 'ls -l /dev/nvidia* 2>&1; ls /usr/local/nvidia/lib64 2>&1 | grep -E "libcuda|ptxjit"'
    fact 10 20 sh -c '{ ldconfig -p 2>/dev/null || true; } | grep -E "libcuda\.so|libnvidia-ptxjitcompiler|libvulkan\.so"'
    if command -v ptxas >/dev/null; then fact 20 2 ptxas --version; else echo "ptxas: not on the PATH"; fi
    fact 60 1 "$python" -c 'import numpy; print("numpy", numpy.__version__)'
    fact 120 1 "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())'
    fact 60 1 "$python" -c 'import triton; print("triton", triton.__version__)'
    fact 60 1 "$python" -c 'import cupy; print("cupy", cupy.__version__)'
    fact 60 1 "$python" -c 'import tilec; print("tilec (Python)", tilec.__file__)'
} | tee ${OUT:+"$OUT/device.txt"} >&2
probe=$(mktemp -d)
trap 'rm -rf "$probe" "$facts"' EXIT
wanted=cuda
prev=
for a in "$@"; do
    [ "$prev" = --targets ] && wanted=$a
    case "$a" in --targets=*) wanted=${a#--targets=} ;; esac
    prev=$a
done
# Writes the one-line verdict where the results go, and to stderr.
verdict() {
    echo "$1" >&2
    if [ -n "${OUT:-}" ]; then
        printf '%s\n' "$1" >>"$OUT/summary.md"
        "$python" -c 'import json, sys, time; print(json.dumps(dict(part="probe", ok=sys.argv[1] == "ok", message=sys.argv[2], time=time.strftime("%Y-%m-%dT%H:%M:%S"))))' \
            "$2" "$1" >>"$OUT/gpu-check.jsonl"
    fi
}
if ! "$python" -c "import numpy; numpy.save('$probe/x.npy', numpy.ones((3, 5), numpy.float32))" 2>"$probe/np.txt"; then
    verdict "gpu-check: FAIL: $python cannot import NumPy, which the check needs (set PYTHON): $(tail -1 "$probe/np.txt")" fail
    exit 1
fi
if [[ "$wanted" == *cuda* ]]; then
    timeout 180 "$tilec" run "$here/stdlib/linalg.tile" --kernel row_sum --arg "X=$probe/x.npy" --out "out=$probe/s.npy" \
        --target cuda >"$probe/cuda.txt" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ]; then
        msg=$(grep -m1 -E 'E0[0-9]{3}' "$probe/cuda.txt" || tail -3 "$probe/cuda.txt")
        [ "$rc" -eq 124 ] && msg="timed out after 180 s"
        if [ -n "$shows_gpu" ]; then
            verdict "gpu-check: FAIL: this machine shows an NVIDIA GPU ($shows_gpu) but tilec cannot use it: $msg" fail
            cat "$probe/cuda.txt" >&2
            exit 1
        fi
        if grep -qE 'E0430|E0432' "$probe/cuda.txt"; then
            verdict "gpu-check: no NVIDIA driver or GPU on this machine, nothing checked: $msg" ok
            exit 0
        fi
        verdict "gpu-check: FAIL: the CUDA probe failed: $msg" fail
        cat "$probe/cuda.txt" >&2
        exit 1
    fi
    echo "cuda: $(tail -1 "$probe/cuda.txt")" >&2
fi
# Vulkan: compared where a device answers (the NVIDIA driver's Vulkan ICD may be absent).
targets=cuda
if timeout 120 "$tilec" run "$here/stdlib/linalg.tile" --kernel row_sum --arg "X=$probe/x.npy" --out "out=$probe/s.npy" \
    --target vulkan >"$probe/vk.txt" 2>&1; then
    targets=cuda,vulkan
    echo "vulkan: $(tail -1 "$probe/vk.txt")" >&2
else
    echo "vulkan: not compared: $(head -1 "$probe/vk.txt")" >&2
fi
"$python" "$here/tools/gpu_check.py" --tilec "$tilec" --targets "$targets" --started "$started" "$@"
