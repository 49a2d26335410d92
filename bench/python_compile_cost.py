"""What a new instance costs from Python: each new dtype or const value of a kernel is compiled
on its first call (docs/python.md, "Caching"), per target.

Run with the package's environment (``tools/python.sh`` builds it; ``--ptx`` adds the LLVM CPU
backend):

    target/python-venv/bin/python bench/python_compile_cost.py [--tilec target/release/tilec]

For ``potrf_batched`` (f32, then f64: two instances) and ``gemm`` (BM=32, then BM=64) on small
arrays, it prints the first call (compile and run) and the median of later calls (run only),
in milliseconds, on each target this package and machine have: the CPU with Cranelift, the CPU
with LLVM, Vulkan. Each case compiles the standard library afresh (a unique comment in the
source defeats the program cache). With ``--tilec``, it also times ``tilec build --target ptx``
of every kernel of the library for one element type (a whole process: parse, check, PTX
through LLVM), the code generation a CUDA instance does on its first call before the driver
loads the PTX.
"""

import argparse
import statistics
import subprocess
import tempfile
import time
import uuid

import numpy as np

import tilec
from tilec import _tilec


def fresh(target, backend):
    """The standard library compiled anew (no cached program or instance)."""
    src = _tilec.stdlib_source() + f"\n// {uuid.uuid4()}\n"
    return tilec.compile(src, name="stdlib/linalg.tile", target=target, backend=backend)


def first_and_later(call, repeat=5):
    t0 = time.perf_counter()
    call()
    first = time.perf_counter() - t0
    later = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        later.append(time.perf_counter() - t0)
    return first * 1e3, statistics.median(later) * 1e3


def cases(m):
    rng = np.random.default_rng(0)

    def spd(dtype):
        a = rng.standard_normal((64, 32, 32))
        return (a @ a.transpose(0, 2, 1) / 32 + np.eye(32)).astype(dtype)

    a32, a64 = spd(np.float32), spd(np.float64)
    p = rng.standard_normal((128, 128)).astype(np.float32)
    c = np.zeros((128, 128), np.float32)
    yield "potrf_batched 64x32x32 f32", lambda: m.potrf_batched(a32.copy(), 1e-6)
    yield "potrf_batched 64x32x32 f64", lambda: m.potrf_batched(a64.copy(), 1e-12)
    yield "gemm 128^3 f32 BM=32", lambda: m.gemm(p, p, c, 1.0, 0.0, BM=32)
    yield "gemm 128^3 f32 BM=64", lambda: m.gemm(p, p, c, 1.0, 0.0, BM=64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilec", help="a tilec binary built with the PTX backend, to time PTX builds")
    args = ap.parse_args()
    print("target          instance                       first call ms   later calls ms")
    for target, backend in [("cpu", "cranelift"), ("cpu", "llvm"), ("vulkan", "cranelift")]:
        try:
            m = fresh(target, backend)
            for name, call in cases(m):
                first, later = first_and_later(call)
                label = f"{target}/{backend}" if target == "cpu" else target
                print(f"{label:15} {name:30} {first:13.1f} {later:16.2f}")
        except tilec.TileError as e:
            print(f"{target}/{backend}: not available here ({e.code})")
    if args.tilec:
        with tempfile.TemporaryDirectory() as out, tempfile.NamedTemporaryFile("w", suffix=".tile") as f:
            f.write(_tilec.stdlib_source())
            f.flush()
            kernels = _tilec.stdlib_source().count("\nkernel ")
            for t in ["f32", "f64"]:
                cmd = [args.tilec, "build", f.name, "--target", "ptx", "--generic", f"T={t}", "-o", out]
                t0 = time.perf_counter()
                r = subprocess.run(cmd, capture_output=True, text=True)
                ms = (time.perf_counter() - t0) * 1e3
                status = "" if r.returncode == 0 else f"  (failed: {r.stderr.strip()[:80]})"
                what = f"all {kernels} kernels, T={t}"
                print(f"{'ptx (build)':15} {what:30} {ms:13.1f}   {ms / kernels:.1f} per kernel{status}")

if __name__ == "__main__":
    main()
