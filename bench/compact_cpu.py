"""Benchmark (not a test): batched Cholesky and QR on matrices stored batch-interleaved (issue
28, direction 4): the stdlib's `potrf_compact_batched` and `geqrf_compact_batched` on packs of
W matrices (W = 16 in f32, 8 in f64: a 64-byte vector) against Intel MKL's
`mkl_?potrf_compact` and `mkl_?geqrf_compact` on its own packed copy of the same stack (the
routine alone on packed data, as `../shared/peers/anchors_strong.py` times it; in each of its
formats, SSE, AVX2 and AVX-512, as MKL picks SSE on AMD CPUs) and the
stdlib's `potrf_batched` and `geqrf_batched` on the usual layout, in one run, 4096 matrices
of order 16 to 92 (`--orders`; QR up to 64). Every result is checked against NumPy in f64
(the Cholesky factor; |diag R|); the script also says whether MKL's packed buffer is byte for
byte the layout the compact kernels take (`A[p, i, j, w]`).

    python3 bench/compact_cpu.py --tilec target/release/tilec [--repeat N] [--orders 16,32]

`bench/compact_cpu.sh` builds tilec and installs NumPy and SciPy; MKL is timed when the `mkl`
wheel is installed (`BENCH_STRONG_PEERS=1`). Prints one line per measurement and a markdown
table (peer / tilec: above 1, tilec is faster).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ports_cpu import check_error, peer_ms, tilec_run  # noqa: E402
import strong_cpu  # noqa: E402

STDLIB = "stdlib/linalg.tile"
# MKL's compact formats timed: SSE (what it picks on AMD), AVX2 and AVX-512.
FORMATS = (181, 182, 183)


def spd(rng, b, n, dt):
    m = rng.uniform(-1, 1, (b, n, n))
    return (m @ m.transpose(0, 2, 1) / n + n * np.eye(n)).astype(dt)


def add_stdlib_arg(ap):
    """`--stdlib FILE`: the file the stdlib kernels run from (STDLIB by default), an earlier
    text for a before/after (`git show REV:stdlib/linalg.tile > old.tile`)."""
    ap.add_argument("--stdlib", default=STDLIB,
                    help="the file the stdlib kernels run from: an earlier text for a before/after "
                         "(`git show REV:stdlib/linalg.tile > old.tile`)")


def pack(a, w):
    """The stack ``a`` (B, ...) in the compact layout (B / w, ..., w): the matrices, or their
    pivots, right-hand sides or singular values, w at a time."""
    return np.ascontiguousarray(np.moveaxis(a.reshape(a.shape[0] // w, w, *a.shape[1:]), 1, -1))


def unpack(c):
    """The inverse of ``pack``."""
    return np.moveaxis(c, -1, 1).reshape(-1, *c.shape[1:-1])


def check(what, l, ref, dt):
    err = float(np.abs(np.tril(l[:len(ref)]).astype(np.float64) - ref).max() / np.abs(ref).max())
    check_error(what, err, 50 * np.finfo(dt).eps * l.shape[-1])


def potrf_row(args, a, w, shape):
    dt = a.dtype
    ref = np.linalg.cholesky(a[:64].astype(np.float64))
    eps = "1e-30"
    c, t_c = tilec_run(args.tilec, args.stdlib, "potrf_compact_batched", {"A": pack(a, w), "eps": eps}, ["A"],
                       args.backend, args.repeat)
    check(f"{shape} potrf_compact_batched", unpack(c["A"]), ref, dt)
    p, t_p = tilec_run(args.tilec, args.stdlib, "potrf_batched", {"A": a, "eps": eps}, ["A"], args.backend, args.repeat)
    check(f"{shape} potrf_batched", p["A"], ref, dt)
    peers = {"tilec usual layout": t_p}
    same = []
    for fmt in FORMATS:
        name, v = strong_cpu.COMPACT_FORMATS[fmt]
        for run, prep, verify in strong_cpu.mkl_peers("Cholesky", a, None, fmt).values():
            peers[f"MKL compact {name} (packed)"] = peer_ms(run, args.repeat, prep)
            verify()
            v = v if dt == np.float32 else v // 2
            ours, buf = pack(a, v).ravel(), strong_cpu.mkl_packed(a, fmt)
            same.append(f"MKL {name}'s packed buffer {'is' if np.array_equal(buf[:ours.size], ours) else 'is not'} "
                        f"the layout of W = {v}")
    same = "; ".join(same)
    return t_c, peers, same


def diag_r(f):
    return np.abs(np.diagonal(f, 0, 1, 2)).astype(np.float64)


def geqrf_row(args, a, w, shape):
    dt, (b, n, _) = a.dtype, a.shape
    ref = diag_r(np.linalg.qr(a[:64].astype(np.float64), mode="r"))
    bound = 8 * n * np.finfo(dt).eps * max(float(ref.max()), 1.0)
    c, t_c = tilec_run(args.tilec, args.stdlib, "geqrf_compact_batched",
                       {"A": pack(a, w), "tau": np.zeros((b // w, n, w), dt)}, ["A"], args.backend, args.repeat)
    check_error(f"{shape} geqrf_compact_batched |diag R|", float(np.abs(diag_r(unpack(c["A"])[:64]) - ref).max()), bound)
    p, t_p = tilec_run(args.tilec, args.stdlib, "geqrf_batched", {"A": a, "tau": np.zeros((b, n), dt)}, ["A"],
                       args.backend, args.repeat)
    check_error(f"{shape} geqrf_batched |diag R|", float(np.abs(diag_r(p["A"][:64]) - ref).max()), bound)
    peers = {"tilec usual layout": t_p}
    for fmt in FORMATS:
        for name, (run, prep, verify) in strong_cpu.mkl_peers("QR", a, None, fmt).items():
            if "compact" in name:
                peers[f"MKL compact {strong_cpu.COMPACT_FORMATS[fmt][0]} (packed)"] = peer_ms(run, args.repeat, prep)
                verify()
    return t_c, peers, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilec", required=True)
    add_stdlib_arg(ap)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--orders", default="16,24,32,48,64,80,92")
    ap.add_argument("--qr-orders", default="16,32,64")
    ap.add_argument("--backend", default="llvm")
    args = ap.parse_args()
    rng = np.random.default_rng(28)
    rows = []
    for routine, row, orders in (("potrf", potrf_row, args.orders), ("geqrf", geqrf_row, args.qr_orders)):
        for dt, w in ((np.float32, 16), (np.float64, 8)):
            for n in map(int, orders.split(",")):
                if dt == np.float64 and n not in (16, 32):
                    continue
                b = 4096
                a = spd(rng, b, n, dt)
                shape = f"{routine} {b} x {n} x {n} {np.dtype(dt).name}"
                t_c, peers, same = row(args, a, w, shape)
                print(f"{shape}: compact (W={w}) {t_c:.3f} ms; "
                      + "; ".join(f"{k} {v:.3f} ms" for k, v in peers.items()) + (f"; {same}" if same else ""),
                      flush=True)
                rows.append((shape, w, t_c, peers))
    print()
    names = list(dict.fromkeys(k for row in rows for k in row[3]))
    print("| routine, stack | tilec compact | " + " | ".join(f"{k} (ratio)" for k in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for shape, w, t_c, peers in rows:
        cells = [f"{peers[k]:.3f} ms ({peers[k] / t_c:.2f})" if k in peers else "" for k in names]
        print(f"| {shape}, W = {w} | {t_c:.3f} ms | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
