"""Call overhead of the tilec Python package on the CPU, against the kernel itself and Warp.

Run with the package's environment (``tools/python.sh`` builds it):

    target/python-venv/bin/python bench/python_overhead.py [--tilec target/release/tilec]

It times, in one run, on the same arrays:

- ``touch``: a kernel with one program that adds 1 to one element, so the time of a call is
  all overhead: through Python (``module.touch(x)``, median of 20,000 calls after warm-up),
  and the same kernel through ``tilec run --repeat 2000`` (the launch as the runtime times it:
  grid evaluation, argument packing and the thread pool's dispatch, no Python);
- ``potrf_batched`` on 4096 SPD 16x16 float32 matrices, through Python and ``tilec run``
  (the same `.npy` input), to show that arrays are not copied on the way in or out;
- Warp's CPU launch of an empty kernel (``wp.launch``, the reference for launch overhead),
  where ``warp-lang`` is installed.

Prints each median in microseconds and the Python call's overhead over the kernel itself.
"""

import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time

import numpy as np

import tilec

TOUCH = "kernel touch(A: mut f32[N]) grid(1) block(16) { A[0] = A[0] + 1.0; }\n"


def median_us(fn, calls, rounds=5):
    for _ in range(min(calls, 200)):
        fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls // rounds):
            fn()
        times.append((time.perf_counter() - t0) / (calls // rounds) * 1e6)
    return statistics.median(times)


def tilec_run_us(exe, src, kernel, arrays, scalars, repeat):
    """Median kernel time of ``tilec run --repeat`` in microseconds."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.tile")
        with open(path, "w") as f:
            f.write(src)
        args = [exe, "run", path, "--kernel", kernel, "--repeat", str(repeat)]
        for name, a in arrays.items():
            p = os.path.join(d, f"{name}.npy")
            np.save(p, a)
            args += ["--arg", f"{name}={p}"]
        for name, v in scalars.items():
            args += ["--arg", f"{name}={v}"]
        os.sync()  # input files written back before the timed runs, not during them
        time.sleep(0.25)  # NumPy's OpenBLAS threads stop spinning (ports_cpu.py: tilec_run)
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1)) * 1e3


def warp_launch_us():
    try:
        import warp as wp
    except ImportError:
        return None
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def touch(a: wp.array(dtype=wp.float32)):
        a[0] = a[0] + 1.0

    a = wp.zeros(4, dtype=wp.float32, device="cpu")
    return median_us(lambda: wp.launch(touch, dim=1, inputs=[a], device="cpu"), 20000)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tilec", default="target/release/tilec", help="the tilec binary for `tilec run`")
    args = p.parse_args()

    m = tilec.compile(TOUCH)
    x = np.zeros(4, np.float32)
    py_touch = median_us(lambda: m.touch(x), 20000)
    run_touch = tilec_run_us(args.tilec, TOUCH, "touch", {"A": x}, {}, 2000)
    print(f"touch (1 program): python call {py_touch:.1f} us, tilec run launch {run_touch:.1f} us, "
          f"overhead {py_touch - run_touch:.1f} us")

    rng = np.random.default_rng(0)
    mm = rng.standard_normal((4096, 16, 16)).astype(np.float32)
    a = mm @ mm.transpose(0, 2, 1) / 16 + np.eye(16, dtype=np.float32)
    work = a.copy()

    def potrf_us():
        times = []
        for _ in range(60):
            work[...] = a  # the kernel is in place: start each call from the same input
            t0 = time.perf_counter()
            tilec.linalg.potrf_batched(work, eps=1e-6)
            times.append((time.perf_counter() - t0) * 1e6)
        return statistics.median(times[10:])

    py_potrf = potrf_us()
    src = tilec._tilec.stdlib_source()
    run_potrf = tilec_run_us(args.tilec, src, "potrf_batched", {"A": a}, {"eps": 1e-6}, 50)
    print(f"potrf_batched 4096x16x16 f32: python call {py_potrf:.1f} us, tilec run {run_potrf:.1f} us, "
          f"overhead {py_potrf - run_potrf:.1f} us")
    ref = np.linalg.cholesky(a.astype(np.float64))
    work[...] = a
    tilec.linalg.potrf_batched(work, eps=1e-6)
    err = np.abs(np.tril(work) - ref).max() / np.abs(ref).max()
    print(f"  (checked against numpy float64: max relative error {err:.1e})")

    w = warp_launch_us()
    if w is None:
        print("warp: not installed (pip install warp-lang)")
    else:
        print(f"warp CPU launch of the same one-element kernel: {w:.1f} us "
              f"(tilec python call / warp launch = {py_touch / w:.2f})")


if __name__ == "__main__":
    main()
