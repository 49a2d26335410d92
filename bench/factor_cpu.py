"""Benchmark (not a test): the standard library's batched Householder QR, symmetric
eigensolvers and SVD on the CPU (`geqrf_batched` and `geqrf_compact_batched`, `syevj_batched`,
`syevj_compact_batched` and `syev_compact_batched` ("eigh compact QL"), `gesvj_batched`,
`gesvj_compact_batched` and `gesvd_compact_batched` ("SVD compact QR"), the compact ones on
the same matrices packed one 64-byte vector of them at a time, packing not timed; `tilec run`,
both CPU code generators) against NumPy's batched
`np.linalg.qr(mode="raw")`, `np.linalg.eigh` and `np.linalg.svd` on the same stacks, and
PyTorch's and Intel MKL's batched routines where installed (bench/strong_cpu.py), in one run,
at 4096 x 32 x 32 and 1024 x 64 x 64, f32 and f64 (issue 34). Every tilec result is checked
first: QR's factors by `||A - Q R||`, eigenvalues and singular values against NumPy's in f64,
and info = 0.

    python3 bench/factor_cpu.py --tilec target/release/tilec [--repeat N] [--backends llvm,cranelift]

Prints one line per measurement and a markdown table of medians and ratios (NumPy / tilec:
above 1, tilec is faster). `bench/factor_cpu.sh` builds tilec and installs NumPy and SciPy.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ports_cpu import check_error as check, peer_ms, tilec_run  # noqa: E402
from strong_cpu import peers as strong_peers  # noqa: E402
from compact_cpu import add_stdlib_arg, pack, unpack  # noqa: E402



def cases(b, n, dt, rng):
    """(routine, the input stack, NumPy's call, tilec's kernel, its arrays, its outputs, the
    result check)."""
    eps = np.finfo(dt).eps
    a64 = rng.uniform(-1, 1, (b, n, n))
    a = a64.astype(dt)
    a64 = a.astype(np.float64)
    fro = np.sqrt((a64 * a64).sum((1, 2))).max()

    def qr_check(o):
        # Q from the reflectors in f64, for the first 64 matrices.
        for i in range(min(b, 64)):
            f, tau = o["A"][i].astype(np.float64), o["tau"][i].astype(np.float64)
            q = np.eye(n)
            for k in reversed(range(n)):
                v = np.concatenate([np.zeros(k), [1.0], f[k + 1:, k]])
                q -= np.outer(v, tau[k] * (v @ q))
            check(f"geqrf {i}", np.abs(q @ np.triu(f) - a64[i]).max(), 8 * n * eps * fro)

    sym = np.tril(a64) + np.tril(a64, -1).transpose(0, 2, 1)
    syms = sym.astype(dt)
    w_ref = np.linalg.eigvalsh(sym)
    s_ref = np.linalg.svd(a64, compute_uv=False)

    def eig_check(o):
        assert (o["info"] == 0).all(), "syevj info"
        check("syevj W", np.abs(o["W"] - w_ref).max(), 8 * n * eps * fro)

    def svd_check(o):
        assert (o["info"] == 0).all(), "gesvj info"
        check("gesvj S", np.abs(o["S"] - s_ref).max(), 8 * n * eps * fro)

    ints = np.zeros(b, np.int32)
    yield ("QR", a, lambda: np.linalg.qr(a, mode="raw"), "geqrf_batched",
           {"A": a, "tau": np.zeros((b, n), dt)}, ["A", "tau"], qr_check)
    yield ("eigh", syms, lambda: np.linalg.eigh(syms), "syevj_batched",
           {"A": syms, "W": np.zeros((b, n), dt), "V": np.zeros((b, n, n), dt), "info": ints,
            "tol": repr(float(eps)), "max_sweeps": "100"}, ["W", "info"], eig_check)
    # The same matrices in MKL's compact layout (packs of one 64-byte vector of matrices;
    # packing not timed: NumPy's transpose costs about a tenth of the kernel at 64 f64).
    w = 64 // np.dtype(dt).itemsize
    packed = pack(syms, w)

    def eig_compact_check(kernel):
        def ok(o):
            assert (o["info"] == 0).all(), f"{kernel} info"
            check(f"{kernel} E", np.abs(unpack(o["E"]) - w_ref).max(), 8 * n * eps * fro)
        return ok

    def eig_compact_args(**scalars):
        return {"A": packed, "E": np.zeros((b // w, n, w), dt), "V": np.zeros((b // w, n, n, w), dt),
                "info": np.zeros((b // w, w), np.int32), "tol": repr(float(eps)), **scalars}

    yield ("eigh compact", syms, lambda: np.linalg.eigh(syms), "syevj_compact_batched",
           eig_compact_args(max_sweeps="100"), ["E", "info"], eig_compact_check("syevj_compact"))
    yield ("eigh compact QL", syms, lambda: np.linalg.eigh(syms), "syev_compact_batched",
           eig_compact_args(), ["E", "info"], eig_compact_check("syev_compact"))
    yield ("SVD", a, lambda: np.linalg.svd(a), "gesvj_batched",
           {"A": a, "S": np.zeros((b, n), dt), "V": np.zeros((b, n, n), dt), "info": ints,
            "tol": repr(float(np.sqrt(n) * eps)), "max_sweeps": "30"}, ["S", "info"], svd_check)

    def svdc_check(kernel):
        def ok(o):
            assert (o["info"] == 0).all(), f"{kernel} info"
            s = unpack(o["S"])
            check(f"{kernel} S", np.abs(s - s_ref).max(), 8 * n * eps * fro)
        return ok

    def svd_compact_args(**scalars):
        return {"A": pack(a, w), "S": np.zeros((b // w, n, w), dt), "V": np.zeros((b // w, n, n, w), dt),
                "info": np.zeros((b // w, w), np.int32), **scalars}

    yield ("SVD compact", a, lambda: np.linalg.svd(a), "gesvj_compact_batched",
           svd_compact_args(tol=repr(float(np.sqrt(n) * eps)), max_sweeps="30"), ["S", "info"],
           svdc_check("gesvj_compact"))
    yield ("SVD compact QR", a, lambda: np.linalg.svd(a), "gesvd_compact_batched",
           svd_compact_args(E=np.zeros((b // w, n, w), dt), tol=repr(float(eps))), ["S", "info"],
           svdc_check("gesvd_compact"))

    def qrc_check(o):
        # The factors unpacked, then the same check as geqrf_batched's.
        qr_check({"A": unpack(o["A"]), "tau": unpack(o["tau"])})

    yield ("QR compact", a, lambda: np.linalg.qr(a, mode="raw"), "geqrf_compact_batched",
           {"A": pack(a, w), "tau": np.zeros((b // w, n, w), dt)}, ["A", "tau"], qrc_check)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilec", required=True)
    add_stdlib_arg(ap)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--backends", default="llvm,cranelift")
    ap.add_argument("--only", default="QR,QR compact,eigh,eigh compact,eigh compact QL,SVD,SVD compact,SVD compact QR")
    args = ap.parse_args()
    rng = np.random.default_rng(34)
    rows = []
    for b, n in [(4096, 32), (1024, 64)]:
        for dt in (np.float32, np.float64):
            shape = f"{b} x {n} x {n} {np.dtype(dt).name}"
            for routine, stack, peer, kernel, arrays, outs, ok in cases(b, n, dt, rng):
                if routine not in args.only.split(","):
                    continue
                peers = {f"NumPy {routine.split()[0]}": peer_ms(peer, args.repeat)}
                for name, (run, prep, verify) in strong_peers(routine.split()[0], stack).items():
                    peers[name] = peer_ms(run, args.repeat, prep)
                    verify()
                for backend in args.backends.split(","):
                    out, t = tilec_run(args.tilec, args.stdlib, kernel, arrays, outs, backend, args.repeat)
                    ok(out)
                    print(f"{routine} {shape}: tilec {backend} {kernel} {t:.2f} ms; "
                          + "; ".join(f"{k} {v:.2f} ms ({v / t:.2f}x)" for k, v in peers.items()), flush=True)
                    rows.append((routine, shape, backend, t, peers))
    print()
    print("| routine | stack | tilec | peer | peer / tilec |")
    print("|---|---|---|---|---|")
    for routine, shape, backend, t, peers in rows:
        for k, v in peers.items():
            print(f"| {routine} | {shape}, {backend} | {t:.1f} ms | {k} {v:.1f} ms | {v / t:.2f} |")

if __name__ == "__main__":
    main()
