#!/usr/bin/env python3
"""tilec against its CPU peers (NumPy/SciPy with OpenBLAS, Quadrants, Warp) in one run.

Run through bench/peers_cpu.sh, which installs the peers and builds tilec. Every workload reads
the same .npy files (made by bench/peers/gen_inputs.py, with float64 references):

  potrf    tilec potrf_batched          vs np.linalg.cholesky (batched), Quadrants Crout,
                                           Warp tile Cholesky
  trsm     tilec trsm_right_lower_t     vs SciPy solve_triangular loop, Quadrants, Warp tiles
  potrs    tilec potrs_batched          vs SciPy cho_solve loop
  gemm     tilec gemm (BM=BN=BK=64)     vs NumPy a @ b (OpenBLAS sgemm, and dgemm for f64), Warp
                                           tiles
  softmax  examples/softmax.tile        vs NumPy exp(x - max) / sum, rows of 64
  layer_norm  examples/layer_norm.tile  vs NumPy (x - mean) / sqrt(var + eps) * g + b, rows of 64
  attention   examples/attention.tile   vs NumPy batched softmax(Q K^T * scale) V, causal,
                                           32768 sequences of 29 with a head size of 16

tilec's time is the median that `tilec run --repeat R` prints (kernel only; compile time is
printed separately), for each CPU backend of `--backends` (default: Cranelift and LLVM). The peers' times come from bench/peers/anchors.py (median over >= 7
calls after warm-up, one child process per measurement). Every result, tilec's included, is
checked against the float64 reference: max over the batch of max|x - ref| / max|ref|.
The table prints each peer's time divided by tilec's, one column per tilec backend (above 1:
tilec is faster). With `--rounds N` every workload runs N times, tilec and the peers in turn,
and the table gives the medians over the rounds, their range, and the ratios of the medians.
"""
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


def rel_err(x, ref, tril=False):
    """max over the batch of max|x_b - ref_b| / max|ref_b| (lower triangles only if `tril`)."""
    x = np.asarray(x, np.float64)
    ref = np.asarray(ref, np.float64)
    if ref.ndim == 2:
        x, ref = x[None], ref[None]
    if tril:
        mask = np.tril(np.ones(ref.shape[-2:], bool))
        x, ref = np.where(mask, x, 0.0), np.where(mask, ref, 0.0)
    num = np.abs(x - ref).reshape(len(ref), -1).max(axis=1)
    den = np.abs(ref).reshape(len(ref), -1).max(axis=1)
    return float((num / den).max())


def run_tilec(args, kernel, arrays, scalars, out_name, generics=(), binary=None, backend="cranelift", file=None):
    """Runs one kernel of the stdlib (or `file`); returns (median seconds, wall seconds, output
    array)."""
    with tempfile.TemporaryDirectory() as tmp:
        out_path = os.path.join(tmp, "out.npy")
        cmd = [binary or args.tilec, "run", file or STDLIB, "--kernel", kernel, "--repeat", str(args.repeat), "--out",
               f"{out_name}={out_path}", "--backend", backend]
        for name, path in arrays:
            cmd += ["--arg", f"{name}={path}"]
        for name, value in scalars:
            cmd += ["--arg", f"{name}={value}"]
        for g in generics:
            cmd += ["--generic", g]
        os.sync()  # input files written back before the timed runs, not during them
        time.sleep(0.25)  # NumPy's OpenBLAS threads stop spinning (ports_cpu.py: tilec_run)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
        m = re.search(r"median ([0-9.]+) ms", p.stdout + p.stderr)
        if not m:
            raise RuntimeError(f"no median in tilec's output:\n{p.stdout}{p.stderr}")
        return float(m.group(1)) / 1e3, wall, np.load(out_path)


def run_peers(args, workload, impls, shape):
    """Runs anchors.py for the given peers; returns {impl: record}."""
    cmd = [sys.executable, os.path.join(HERE, "peers", "anchors.py"), workload, "--impl", ",".join(impls),
           "--shapes", shape]
    env = dict(os.environ, PEERS_DATA=args.data)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    recs = {}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            recs[r["impl"]] = r
    if p.returncode != 0 and not recs:
        print(f"# peers failed for {workload} {shape}:\n{p.stderr[-2000:]}", file=sys.stderr)
    return recs


def timed(f, reps=5):
    """Median wall time of `reps` calls of `f` after one warm-up call, and its last result."""
    r = f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), r


ROWS = []


def row(workload, shape, who, seconds, err, note=""):
    ROWS.append((workload, shape, who, seconds, err, note))
    s = f"{seconds * 1e3:10.3f} ms" if seconds is not None else "    failed"
    e = f"{err:.1e}" if err is not None else "-"
    print(f"{workload:6} {shape:14} {who:26} {s}   err {e}  {note}", flush=True)


def tilec_rows(args, workload, label, kernel, arrays, scalars, out, err, generics=(), dtype="f32", file=None):
    """Runs tilec with each backend (and the --before build) on one workload; `err(x)` checks
    an output."""
    for backend in args.backends:
        for who, binary in [(f"tilec {dtype} {backend}", None), (f"tilec {dtype} {backend} (before)", args.before)]:
            if who.endswith("(before)") and not binary:
                continue
            t, _, x = run_tilec(args, kernel, arrays, scalars, out, generics=generics, binary=binary,
                                backend=backend, file=file)
            row(workload, label, who, t, err(x))


def peer_rows(workload, shape_label, recs):
    for impl, r in recs.items():
        row(workload, shape_label, impl, r.get("median_s"), r.get("max_rel_err"), r.get("error", "")[:60])


def potrf(args, b, n, impls):
    a = os.path.join(args.data, f"chol_A_B{b}_N{n}.npy")
    ref = np.load(os.path.join(args.data, f"chol_ref_f64_B{b}_N{n}.npy"))
    label = f"{b}x{n}x{n}"
    tilec_rows(args, "potrf", label, "potrf_batched", [("A", a)], [("eps", "1e-6")], "A",
               lambda x: rel_err(x, ref, tril=True))
    peer_rows("potrf", label, run_peers(args, "chol", impls, f"{b}x{n}"))
    if args.f64:
        with tempfile.TemporaryDirectory() as tmp:
            a64 = os.path.join(tmp, "a64.npy")
            np.save(a64, np.load(a).astype(np.float64))
            tilec_rows(args, "potrf", label, "potrf_batched", [("A", a64)], [("eps", "1e-12")], "A",
                       lambda x: rel_err(x, ref, tril=True), dtype="f64")
            x = np.load(a64)
            tn, l = timed(lambda: np.linalg.cholesky(x), reps=3)
            row("potrf", label, "numpy f64 (batched)", tn, rel_err(l, ref, tril=True))


def trsm(args, b, n, impls):
    lp = os.path.join(args.data, f"trsm_L_B{b}_N{n}.npy")
    rp = os.path.join(args.data, f"trsm_rhs_B{b}_N{n}.npy")
    ref = np.load(os.path.join(args.data, f"trsm_ref_f64_B{b}_N{n}.npy"))
    label = f"{b}x{n}x{n}"
    tilec_rows(args, "trsm", label, "trsm_right_lower_t_batched", [("A", lp), ("X", rp)], [], "X",
               lambda x: rel_err(x, ref))
    peer_rows("trsm", label, run_peers(args, "trsm", impls, f"{b}x{n}"))


def potrs(args, b, n):
    import scipy.linalg as sla

    lp = os.path.join(args.data, f"trsm_L_B{b}_N{n}.npy")
    rp = os.path.join(args.data, f"trsm_rhs_B{b}_N{n}.npy")
    L, R = np.load(lp), np.load(rp)
    # Reference: (L L^T) X = R in float64, by two triangular solves per matrix.
    ref = np.empty(R.shape, np.float64)
    for i in range(b):
        l64 = L[i].astype(np.float64)
        y = sla.solve_triangular(l64, R[i].astype(np.float64), lower=True, check_finite=False)
        ref[i] = sla.solve_triangular(l64.T, y, lower=False, check_finite=False)
    label = f"{b}x{n}x{n}"
    tilec_rows(args, "potrs", label, "potrs_batched", [("L", lp), ("X", rp)], [], "X", lambda x: rel_err(x, ref))

    def loop():
        out = np.empty_like(R)
        for i in range(b):
            out[i] = sla.cho_solve((L[i], True), R[i], check_finite=False)
        return out

    ts, x = timed(loop, reps=3)
    row("potrs", label, "scipy_loop (cho_solve)", ts, rel_err(x, ref))


def gemm(args, n, impls):
    a = os.path.join(args.data, f"gemm_A_{n}.npy")
    bp = os.path.join(args.data, f"gemm_B_{n}.npy")
    ref = np.load(os.path.join(args.data, f"gemm_ref_f64_{n}.npy"))
    label = f"{n}^3"
    with tempfile.TemporaryDirectory() as tmp:
        c = os.path.join(tmp, "c.npy")
        np.save(c, np.zeros((n, n), np.float32))
        tilec_rows(args, "gemm", label, "gemm", [("A", a), ("B", bp), ("C", c)], [("alpha", "1"), ("beta", "0")], "C",
                   lambda x: rel_err(x, ref), generics=("BM=64", "BN=64", "BK=64"))
    peer_rows("gemm", label, run_peers(args, "gemm", impls, str(n)))
    if args.f64:
        with tempfile.TemporaryDirectory() as tmp:
            a64, b64, c64 = (os.path.join(tmp, f) for f in ("a64.npy", "b64.npy", "c64.npy"))
            np.save(a64, np.load(a).astype(np.float64))
            np.save(b64, np.load(bp).astype(np.float64))
            np.save(c64, np.zeros((n, n), np.float64))
            tilec_rows(args, "gemm", label, "gemm", [("A", a64), ("B", b64), ("C", c64)],
                       [("alpha", "1"), ("beta", "0")], "C", lambda x: rel_err(x, ref),
                       generics=("BM=64", "BN=64", "BK=64"), dtype="f64")
            x, y = np.load(a64), np.load(b64)
            tn, r = timed(lambda: x @ y, reps=3)
            row("gemm", label, "numpy f64 (OpenBLAS dgemm)", tn, rel_err(r, ref))


def example_rows(args, workload, label, kernel, example, inputs, scalars, out, ref):
    """Runs `kernel` of examples/`example` with tilec on `inputs` ({name: array}, saved as .npy
    files) and the scalar arguments, its output `out` checked against `ref`."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, a in inputs.items():
            paths.append((name, os.path.join(tmp, f"{name}.npy")))
            np.save(paths[-1][1], a)
        tilec_rows(args, workload, label, kernel, paths, scalars, out, lambda y: rel_err(y, ref),
                   file=os.path.join(ROOT, "examples", example))


def softmax(args, m):
    """examples/softmax.tile (rows of 64) against NumPy's softmax of the same rows."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-4, 4, (m, 64)).astype(np.float32)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    label = f"{m}x64"
    example_rows(args, "softmax", label, "softmax64", "softmax.tile", {"X": x}, [], "Y", ref)

    def numpy_softmax():
        ex = np.exp(x - x.max(axis=1, keepdims=True))
        return ex / ex.sum(axis=1, keepdims=True)

    tn, y = timed(numpy_softmax, reps=5)
    row("softmax", label, "numpy", tn, rel_err(y, ref))


def layer_norm(args, m):
    """examples/layer_norm.tile (rows of 64) against NumPy's layer norm of the same rows."""
    rng = np.random.default_rng(6)
    x = rng.uniform(-4, 4, (m, 64)).astype(np.float32)
    g = rng.uniform(0.5, 1.5, 64).astype(np.float32)
    bt = rng.uniform(-1, 1, 64).astype(np.float32)
    eps = 1e-5
    x64 = x.astype(np.float64)
    d = x64 - x64.mean(axis=1, keepdims=True)
    ref = d / np.sqrt((d * d).mean(axis=1, keepdims=True) + eps) * g + bt
    label = f"{m}x64"
    example_rows(args, "layer_norm", label, "layer_norm64", "layer_norm.tile", {"X": x, "G": g, "Bt": bt},
                 [("eps", str(eps))], "Y", ref)

    def numpy_layer_norm():
        dx = x - x.mean(axis=1, keepdims=True)
        return dx / np.sqrt((dx * dx).mean(axis=1, keepdims=True) + np.float32(eps)) * g + bt

    tn, y = timed(numpy_layer_norm, reps=5)
    row("layer_norm", label, "numpy", tn, rel_err(y, ref))


def attention(args, b, n):
    """examples/attention.tile (causal, head size 16) against NumPy's batched
    softmax(Q K^T * scale) V on the same inputs."""
    rng = np.random.default_rng(7)
    q, k, v = (rng.uniform(-1, 1, (b, n, 16)).astype(np.float32) for _ in range(3))
    scale = 0.25
    mask = np.tril(np.ones((n, n), bool))

    def numpy_attention(q, k, v):
        s = np.where(mask, q @ k.transpose(0, 2, 1) * scale, -np.inf)
        e = np.exp(s - s.max(axis=2, keepdims=True))
        return (e / e.sum(axis=2, keepdims=True)) @ v

    ref = numpy_attention(*(a.astype(np.float64) for a in (q, k, v)))
    label = f"{b}x{n}x16"
    example_rows(args, "attention", label, "attention", "attention.tile", {"Q": q, "K": k, "V": v},
                 [("scale", str(scale)), ("causal", "1")], "O", ref)
    tn, o = timed(lambda: numpy_attention(q, k, v), reps=3)
    row("attention", label, "numpy (batched matmul)", tn, rel_err(o, ref))


def summary(backends):
    """The table: per (workload, shape, implementation) the median over the rounds, the range
    when there were several, and each peer's median over tilec's."""
    cols = [f"tilec f32 {b}" for b in backends]
    groups = {}
    for w, s, who, t, e, note in ROWS:
        g = groups.setdefault((w, s, who), {"t": [], "e": [], "note": note})
        if t is not None:
            g["t"].append(t)
        if e is not None:
            g["e"].append(e)
    rounds = max((len(g["t"]) for g in groups.values()), default=1)
    med = {k: (float(np.median(g["t"])) if g["t"] else None) for k, g in groups.items()}
    print("\n| workload | shape | implementation | median ms | "
          + ("range ms | " if rounds > 1 else "") + "max rel err | "
          + " | ".join(f"peer time / {c}" for c in cols) + " |")
    print("|---|---|---|---|" + ("---|" if rounds > 1 else "") + "---|" + "---|" * len(cols))
    for (w, s, who), g in groups.items():
        t = med[(w, s, who)]
        ratios = []
        for c in cols:
            base = med.get((w, s, c)) if not who.startswith("tilec") and "f64" not in who else None
            ratios.append(f"{t / base:.2f}x" if (base and t) else "")
        ts = f"{t * 1e3:.3f}" if t else "failed " + g["note"]
        rs = f"{min(g['t']) * 1e3:.1f}-{max(g['t']) * 1e3:.1f} | " if rounds > 1 and g["t"] else ("| " if rounds > 1 else "")
        es = f"{max(g['e']):.1e}" if g["e"] else ""
        print(f"| {w} | {s} | {who} | {ts} | {rs}{es} | " + " | ".join(ratios) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--before", help="another tilec binary (an earlier commit) to time beside it")
    ap.add_argument("--data", required=True)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--only", default="potrf,trsm,potrs,gemm,softmax,layer_norm,attention")
    ap.add_argument("--no-f64", dest="f64", action="store_false")
    ap.add_argument("--backends", default="cranelift,llvm",
                    help="tilec's CPU code generators to time (llvm needs a tilec built with --features ptx)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every workload this many times, tilec and peers alternating; the table "
                         "gives medians over the rounds and their range (runs on a shared VM vary by "
                         "tens of percent)")
    args = ap.parse_args()
    args.backends = args.backends.split(",")
    only = set(args.only.split(","))
    for r in range(args.rounds):
        if args.rounds > 1:
            print(f"-- round {r + 1} of {args.rounds}", flush=True)
        one_round(args, only)
    summary(args.backends)


def one_round(args, only):
    """Every workload of `only` once: tilec and the peers."""
    if "potrf" in only:
        for b, n in [(4096, 92), (4096, 16), (1024, 64)]:
            potrf(args, b, n, ["numpy", "quadrants", "warp_tile"])
    if "trsm" in only:
        trsm(args, 4096, 92, ["scipy_loop", "quadrants", "warp_tile"])
    if "potrs" in only:
        potrs(args, 4096, 92)
    if "gemm" in only:
        for n in [1024, 2048]:
            gemm(args, n, ["numpy", "warp_tile"])
    if "softmax" in only:
        softmax(args, 1 << 18)
    if "layer_norm" in only:
        layer_norm(args, 1 << 18)
    if "attention" in only:
        attention(args, 1 << 15, 29)


if __name__ == "__main__":
    main()
