#!/usr/bin/env python3
"""Variants of the GPU kernels, timed in one run on one CUDA device: the stdlib's potrf, trsm
and potrs as `tilec run --target cuda` compiles them (several programs per warp where the tiles
are small: midend `simt::lower_for_warp`) against one program per warp (TILEC_PTX_LANES=32),
potrf's updates as tile products (the stdlib's `potrf_batched`) against rank-1 updates
(`examples/cholesky.tile`, out of place), and the stdlib's potrs (right solves on X^T tiles)
against its earlier left solves on X (`bench/potrs_variants.tile`), gemm's tile sizes, and
the stdlib's syevj_batched (each Jacobi rotation reads rows p and q) against the same kernel
reading columns p and q (equal values: the matrix is kept exactly symmetric; on GPUs a column
is each lane's own registers, a row one shuffle per element; on the CPU columns are strided
and 17-45 % slower, bench/log/2026-12-08-session47.md).
With `--baseline`, every variant is also timed with a second tilec (an earlier build), run
right after the first on the same inputs: same-run A/B of a compiler change.

    python3 bench/gpu_variants.py --tilec path/to/tilec [--baseline path/to/old/tilec] [--reps 20] [--out DIR]
        [--workloads potrf,solves,gemm,syevj]

Each result is one JSON line (the median of `--reps` timed launches that `tilec run --repeat`
prints, and max|x - ref| / max|ref| over the first 64 matrices against float64 NumPy), then a
table. Needs NumPy; inputs are written by `tilec gen-spd` into a temporary folder."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STDLIB = os.path.join(ROOT, "stdlib", "linalg.tile")
RANK1 = os.path.join(ROOT, "examples", "cholesky.tile")
POTRS_VARIANTS = os.path.join(HERE, "potrs_variants.tile")
MEDIAN = re.compile(r"median ([0-9.]+) ms")


TARGET = "cuda"


def run(tilec, src, kernel, arrays, scalars, out, lanes32, reps, tmp, generic=(), extra_env=None):
    """Runs one kernel on TARGET; returns (median ms, output array) or (None, error text)."""
    cmd = [tilec, "run", src, "--kernel", kernel, "--target", TARGET, "--repeat", str(reps)]
    for g in generic:
        cmd += ["--generic", g]
    for name, path in arrays.items():
        cmd += ["--arg", f"{name}={path}"]
    for name, val in scalars.items():
        cmd += ["--arg", f"{name}={val}"]
    res = os.path.join(tmp, "out.npy")
    cmd += ["--out", f"{out}={res}"]
    env = dict(os.environ)
    env.pop("TILEC_PTX_LANES", None)
    if lanes32:
        env["TILEC_PTX_LANES"] = "32"
    env.update(extra_env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    m = MEDIAN.search(p.stdout + p.stderr)
    if p.returncode != 0 or not m:
        return None, (p.stdout + p.stderr).strip()[-400:]
    return float(m.group(1)), np.load(res)


def rel_err(x, ref):
    return float(np.max(np.abs(x - ref)) / max(np.max(np.abs(ref)), 1e-300))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--baseline", default=None, help="a second tilec, timed on every variant after --tilec")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="also time --tilec with this environment variable set (repeatable: one build each)")
    ap.add_argument("--quick", action="store_true",
                    help="potrf 4096x92 and 1024x64 only, stdlib kernels packed, gemm 32x32x32 and 64x64x16")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=None, help="folder for variants.jsonl")
    ap.add_argument("--target", default="cuda", help="cpu rehearses the script without a GPU")
    ap.add_argument("--gemm-n", type=int, default=4096, help="gemm's M = N = K")
    ap.add_argument("--workloads", default="potrf,solves,gemm,syevj",
                    help="which of potrf, solves (trsm and potrs), gemm, syevj to time")
    args = ap.parse_args()
    global TARGET
    TARGET = args.target
    log = open(os.path.join(args.out, "variants.jsonl"), "w") if args.out else None
    rows = []
    t0 = time.time()

    def emit(rec):
        rec["t"] = round(time.time() - t0, 2)
        line = json.dumps(rec)
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()
        rows.append(rec)

    builds = [("this", args.tilec, {})]
    builds += [(e, args.tilec, dict([e.split("=", 1)])) for e in args.env]
    builds += [("baseline", args.baseline, {})] if args.baseline else []
    lanes_list = (False,) if args.quick else (False, True)

    work = set(args.workloads.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        if "syevj" in work:
            syevj_variants(args, builds, emit, tmp)
        shapes = [(4096, 92, "f32"), (4096, 92, "f64"), (4096, 32, "f32"), (4096, 32, "f64"),
                  (1024, 64, "f32"), (1024, 64, "f64"), (4096, 16, "f32")]
        if args.quick:
            shapes = [s for s in shapes if s[1] in (92, 64)]
        for batch, n, dt in shapes:
            a = os.path.join(tmp, f"a_{batch}_{n}_{dt}.npy")
            subprocess.run([args.tilec, "gen-spd", "--batch", str(batch), "--n", str(n), "--dtype", dt, "-o", a],
                           check=True, capture_output=True)
            spd = np.load(a)
            k = min(64, batch)
            ref = np.linalg.cholesky(spd[:k].astype(np.float64))
            zeros = os.path.join(tmp, "zeros.npy")
            np.save(zeros, np.zeros_like(spd))
            variants = [("tile products (stdlib)", STDLIB, "potrf_batched", {"A": a}, "A"),
                        ("rank-1 (examples/cholesky.tile)", RANK1, "cholesky", {"A": a, "L": zeros}, "L")]
            if "potrf" not in work:
                variants = []
            for label, src, kernel, arrays, out in variants[:1] if args.quick else variants:
                for lanes32, (build, tilec, env) in [(l32, b) for l32 in lanes_list for b in builds]:
                    ms, x = run(tilec, src, kernel, arrays, {"eps": "1e-9"}, out, lanes32, args.reps, tmp, (), env)
                    rec = dict(workload="potrf", shape=f"{batch}x{n}x{n}", dtype=dt, variant=label,
                               programs="1 per warp" if lanes32 else "packed", build=build, median_ms=ms)
                    if ms is None:
                        rec["error"] = x
                    else:
                        rec["max_rel_err"] = rel_err(np.tril(x[:k]), ref)
                    emit(rec)
            if (batch, n, dt) == (4096, 92, "f32") and "solves" in work:
                lf = np.linalg.cholesky(spd.astype(np.float64))
                l = os.path.join(tmp, "l.npy")
                np.save(l, lf.astype(np.float32))
                rng = np.random.default_rng(2)
                xs = rng.standard_normal((batch, n, n)).astype(np.float32)
                xp = os.path.join(tmp, "x.npy")
                np.save(xp, xs)
                lk, xk = lf[:k], xs[:k].astype(np.float64)
                ref_trsm = np.linalg.solve(lk, xk.transpose(0, 2, 1)).transpose(0, 2, 1)
                ref_potrs = np.linalg.solve(lk @ lk.transpose(0, 2, 1), xk)
                solves = [("trsm", STDLIB, "stdlib", "trsm_right_lower_t_batched", {"A": l, "X": xp}, ref_trsm),
                          ("potrs", STDLIB, "stdlib (right solves on X^T)", "potrs_batched", {"L": l, "X": xp},
                           ref_potrs),
                          ("potrs", POTRS_VARIANTS, "left solves on X (until 2026-11-27)", "potrs_left",
                           {"L": l, "X": xp}, ref_potrs)]
                for work, src, label, kernel, arrays, ref_w in solves[:2] if args.quick else solves:
                    for lanes32, (build, tilec, env) in [(l32, b) for l32 in lanes_list for b in builds]:
                        ms, x = run(tilec, src, kernel, arrays, {}, "X", lanes32, args.reps, tmp, (), env)
                        rec = dict(workload=work, shape=f"{batch}x{n}x{n}", dtype=dt, variant=label,
                                   programs="1 per warp" if lanes32 else "packed", build=build, median_ms=ms)
                        if ms is None:
                            rec["error"] = x
                        else:
                            rec["max_rel_err"] = rel_err(x[:k], ref_w)
                        emit(rec)
        # gemm's tile sizes (const parameters): 16x16 tiles run two programs per warp.
        if "gemm" not in work:
            return report(rows)
        n = args.gemm_n
        rng = np.random.default_rng(3)
        a = rng.standard_normal((n, n)).astype(np.float32)
        bm = rng.standard_normal((n, n)).astype(np.float32)
        paths = {}
        for name, arr in (("A", a), ("B", bm), ("C", np.zeros((n, n), np.float32))):
            paths[name] = os.path.join(tmp, f"g{name}.npy")
            np.save(paths[name], arr)
        sample = np.arange(0, n, max(n // 64, 1))
        ref = a[sample].astype(np.float64) @ bm.astype(np.float64)
        sizes = [(32, 32, 32), (16, 16, 16), (16, 64, 16), (32, 64, 16), (64, 64, 16), (64, 32, 16), (32, 32, 16),
                 (32, 64, 32), (64, 32, 32), (128, 32, 8), (64, 64, 8)]
        if args.quick:
            sizes = [(32, 32, 32), (64, 64, 16)]
        for (bm_, bn, bk), (build, tilec, env) in [(t, b) for t in sizes for b in builds]:
            generic = (f"BM={bm_}", f"BN={bn}", f"BK={bk}")
            ms, c = run(tilec, STDLIB, "gemm", paths, {"alpha": "1", "beta": "0"}, "C", False, args.reps, tmp,
                        generic, env)
            rec = dict(workload="gemm", shape=f"{n}^3", dtype="f32", variant=f"{bm_}x{bn}x{bk}", programs="packed",
                       build=build, median_ms=ms)
            if ms is None:
                rec["error"] = c
            else:
                rec["max_rel_err"] = rel_err(c[sample], ref)
            emit(rec)
    return report(rows)


def report(rows):
    """Prints the table of `rows`; 1 if a variant failed or missed its accuracy, else 0."""
    print("\n| workload | shape | dtype | variant | programs | build | median ms | max rel err |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        err = f"{r['max_rel_err']:.1e}" if "max_rel_err" in r else r.get("error", "")[:60]
        print(f"| {r['workload']} | {r['shape']} | {r['dtype']} | {r['variant']} | {r['programs']} | {r['build']} | "
              f"{r['median_ms']} | {err} |")
    bad = [r for r in rows if r["median_ms"] is None or r["max_rel_err"] > (1e-4 if r["dtype"] == "f32" else 1e-10)]
    for r in bad:
        print("FAILED:", json.dumps(r))
    return 1 if bad else 0


def syevj_variants(args, builds, emit, tmp):
    """syevj_batched (rows p and q read as rows) against the same kernel reading them as
    columns, on 4096 (1024 with --quick) symmetric 32 x 32 matrices, f32 and f64; the error is
    that of the eigenvalues W against float64 NumPy's `eigvalsh`."""
    text = open(STDLIB).read()
    start = text.index("kernel syevj_batched<")
    body = text[start:text.index("\n}\n", start) + 3]
    rows_read = "let rp = a[p, :];\n                let rq = a[q, :];"
    assert rows_read in body, "syevj_batched no longer reads its rotation's rows as written here"
    cols = os.path.join(tmp, "syevj_columns.tile")
    with open(cols, "w") as f:
        f.write(body.replace(rows_read, "let rp = a[:, p];\n                let rq = a[:, q];"))
    batch = 1024 if args.quick else 4096
    rng = np.random.default_rng(4)
    x = rng.standard_normal((batch, 32, 32))
    sym = (x + x.transpose(0, 2, 1)) / 2
    k = min(64, batch)
    ref = np.linalg.eigvalsh(sym[:k])
    for dt, tol in (("f32", "1.1920929e-07"), ("f64", "2.220446049250313e-16")):
        npdt = np.float32 if dt == "f32" else np.float64
        arrays = {}
        for name, arr in (("A", sym.astype(npdt)), ("W", np.zeros((batch, 32), npdt)),
                          ("V", np.zeros((batch, 32, 32), npdt)), ("info", np.zeros(batch, np.int32))):
            arrays[name] = os.path.join(tmp, f"syevj_{name}_{dt}.npy")
            np.save(arrays[name], arr)
        for label, src in (("rows (stdlib)", STDLIB), ("columns", cols)):
            for build, tilec, env in builds:
                ms, w = run(tilec, src, "syevj_batched", arrays, {"tol": tol, "max_sweeps": "100"}, "W", False,
                            args.reps, tmp, (), env)
                rec = dict(workload="syevj", shape=f"{batch}x32x32", dtype=dt, variant=label, programs="packed",
                           build=build, median_ms=ms)
                if ms is None:
                    rec["error"] = w
                else:
                    rec["max_rel_err"] = rel_err(w[:k], ref)
                emit(rec)


if __name__ == "__main__":
    sys.exit(main())
