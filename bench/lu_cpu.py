"""Benchmark (not a test): the standard library's batched LU with partial pivoting on the CPU,
`getrf_batched` then `getrs_batched` (`tilec run`, both CPU code generators), and
`getrf_compact_batched` then `getrs_compact_batched` on the same stacks packed batch-interleaved
(16 f32 or 8 f64 matrices per pack; packing not timed), against NumPy's
batched `np.linalg.solve` and SciPy's `lu_factor` (per matrix, and batched where SciPy has it)
on the same stacks, and PyTorch's and Intel MKL's batched LU where installed (bench/strong_cpu.py),
in one run, at 4096 x 32 x 32 and 1024 x 64 x 64, f32 and f64 (issue 34).
Every tilec result is checked first: the pivots against getf2 in f64 and the solution's
residual.

    python3 bench/lu_cpu.py --tilec target/release/tilec [--repeat N] [--backends llvm,cranelift]

Prints one line per measurement and a markdown table of medians and ratios (peer / tilec:
above 1, tilec is faster). `bench/lu_cpu.sh` builds tilec and installs NumPy and SciPy.
"""
import argparse
import os
import sys

import numpy as np
import scipy.linalg as sl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ports_cpu import getf2, peer_ms, tilec_run  # noqa: E402
from strong_cpu import peers as strong_peers  # noqa: E402
from compact_cpu import add_stdlib_arg, pack, unpack  # noqa: E402



def compact(args, a, x, a64, x64, refs, backend, shape):
    """getrf_compact_batched + getrs_compact_batched on the stack packed W at a time (16 f32,
    8 f64: one AVX-512 vector; packing not timed), checked as the usual layout's run is:
    (getrf ms, getrs ms)."""
    b, n = a.shape[:2]
    w = 16 if a.dtype == np.float32 else 8
    ipiv0, info0 = np.zeros((b // w, n, w), np.int32), np.zeros((b // w, w), np.int32)
    out, t_f = tilec_run(args.tilec, args.stdlib, "getrf_compact_batched", {"A": pack(a, w), "ipiv": ipiv0, "info": info0},
                         ["A", "ipiv", "info"], backend, args.repeat)
    piv = unpack(out["ipiv"])
    for i, (_, p) in enumerate(refs):
        if a.dtype == np.float64 and (piv[i] != p).any():
            raise SystemExit(f"{shape} {backend} compact: pivots of matrix {i} differ from getf2")
    assert (out["info"] == 0).all()
    sol, t_s = tilec_run(args.tilec, args.stdlib, "getrs_compact_batched",
                         {"LU": out["A"], "ipiv": out["ipiv"], "X": pack(x, w)}, ["X"], backend, args.repeat)
    got = unpack(sol["X"]).astype(np.float64)
    res = np.abs(a64 @ got - x64).max()
    bound = 8 * n * n * np.finfo(a.dtype).eps * np.abs(got).max()
    if not res <= bound:
        raise SystemExit(f"{shape} {backend} compact: residual {res:.2e} above {bound:.2e}")
    return t_f, t_s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilec", required=True)
    add_stdlib_arg(ap)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--backends", default="llvm,cranelift")
    args = ap.parse_args()
    rng = np.random.default_rng(34)
    rows = []
    for b, n in [(4096, 32), (1024, 64)]:
        a64 = rng.uniform(-1, 1, (b, n, n))
        x64 = rng.uniform(-1, 1, (b, n, 1))
        for dt in (np.float32, np.float64):
            a, x = a64.astype(dt), x64.astype(dt)
            shape = f"{b} x {n} x {n} {np.dtype(dt).name}"
            refs = [getf2(m) for m in a[:50]]
            peers = {
                "NumPy solve (batched)": peer_ms(lambda: np.linalg.solve(a, x), args.repeat),
                "SciPy lu_factor + lu_solve loop": peer_ms(
                    lambda: [sl.lu_solve(sl.lu_factor(m, check_finite=False), v, check_finite=False)
                             for m, v in zip(a, x)], max(3, args.repeat // 3)),
            }
            for name, (run, prep, verify) in strong_peers("LU", a, x).items():
                peers[name] = peer_ms(run, args.repeat, prep)
                verify()
            for backend in args.backends.split(","):
                ipiv0, info0 = np.zeros((b, n), np.int32), np.zeros(b, np.int32)
                out, t_f = tilec_run(args.tilec, args.stdlib, "getrf_batched", {"A": a, "ipiv": ipiv0, "info": info0},
                                     ["A", "ipiv", "info"], backend, args.repeat)
                for i, (_, p) in enumerate(refs):
                    if dt == np.float64 and (out["ipiv"][i] != p).any():
                        raise SystemExit(f"{shape} {backend}: pivots of matrix {i} differ from getf2")
                assert (out["info"] == 0).all()
                sol, t_s = tilec_run(args.tilec, args.stdlib, "getrs_batched",
                                     {"LU": out["A"], "ipiv": out["ipiv"], "X": x}, ["X"], backend, args.repeat)
                res = np.abs(a64 @ sol["X"].astype(np.float64) - x64).max()
                bound = 8 * n * n * np.finfo(dt).eps * np.abs(sol["X"]).max()
                if not res <= bound:
                    raise SystemExit(f"{shape} {backend}: residual {res:.2e} above {bound:.2e}")
                total = t_f + t_s
                print(f"{shape}: tilec {backend} getrf {t_f:.2f} ms + getrs {t_s:.2f} ms = {total:.2f} ms; "
                      + "; ".join(f"{k} {v:.2f} ms" for k, v in peers.items()), flush=True)
                rows.append((shape, backend, t_f, t_s, total, peers))
                t_f, t_s = compact(args, a, x, a64, x64, refs, backend, shape)
                print(f"{shape}: tilec {backend} getrf_compact {t_f:.2f} ms + getrs_compact {t_s:.2f} ms = "
                      f"{t_f + t_s:.2f} ms", flush=True)
                rows.append((shape, f"{backend}, compact", t_f, t_s, t_f + t_s, peers))
    print()
    names = list(dict.fromkeys(k for row in rows for k in row[5]))
    print("| stack | tilec (getrf + getrs) | " + " | ".join(f"{k} (ratio)" for k in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for shape, backend, t_f, t_s, total, peers in rows:
        cells = [f"{peers[k]:.1f} ms ({peers[k] / total:.2f})" if k in peers else "" for k in names]
        print(f"| {shape}, {backend} | {t_f:.1f} + {t_s:.1f} = {total:.1f} ms | " + " | ".join(cells) + " |")

if __name__ == "__main__":
    main()
