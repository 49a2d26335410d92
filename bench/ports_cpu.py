"""Benchmark (not a test): kernels ported to .tile from other tile languages and libraries,
run by `tilec run` on the CPU target against NumPy/SciPy doing the same computation on the
same data, in one run. Every tilec result is checked against a float64 reference first.

    python3 bench/ports_cpu.py --tilec target/release/tilec [--before OLD_TILEC] [--repeat N]

Prints one line per measurement and a markdown table of medians and ratios (peer / tilec:
above 1, tilec is faster). `bench/ports_cpu.sh` builds tilec and installs NumPy and SciPy.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.linalg as sl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Const parameters given to kernels (`--generic`): the block size CPUs prefer.
GENERICS = {"syrk": {"BS": 64}, "gemver_atx_parts": {"BN": 4000}, "walker_network": {"BT": 256}}


def tilec_run(tilec, src, kernel, arrays, outs, backend, repeat):
    """Runs `tilec run` on the arrays; returns (outputs, median ms over `repeat` launches)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [tilec, "run", os.path.join(ROOT, src), "--kernel", kernel, "--backend", backend,
               "--repeat", str(repeat)]
        for name, v in GENERICS.get(kernel, {}).items():
            cmd += ["--generic", f"{name}={v}"]
        for name, a in arrays.items():
            if isinstance(a, str):  # a scalar argument
                cmd += ["--arg", f"{name}={a}"]
                continue
            p = os.path.join(tmp, f"in_{name}.npy")
            np.save(p, a)
            cmd += ["--arg", f"{name}={p}"]
        for name in outs:
            cmd += ["--out", f"{name}={os.path.join(tmp, 'out_' + name + '.npy')}"]
        # The inputs just written go to disk now, not during the timed runs (the kernel's
        # write-back of a 64 MB file took a core from them: 1.5x slower streaming kernels).
        os.sync()
        # NumPy's OpenBLAS threads, after a peer's last call, spin (sched_yield) for about
        # 0.1 s before they sleep: a tilec run started at once shared a core with them in its
        # first launches (walker, 10 launches after NumPy's: 2.9-4.3 ms, 1.4-1.5 after this).
        time.sleep(0.25)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}\n{r.stderr}")
        m = re.search(r"median ([0-9.]+) ms", r.stdout + r.stderr)
        got = {n: np.load(os.path.join(tmp, f"out_{n}.npy")) for n in outs}
        return got, float(m.group(1))


def tilec_steps(tilec, src, steps, arrays, outs, backend, repeat):
    """Runs the kernels of a workload made of several launches in turn, `steps` a list of
    `(kernel, argument names, outputs)`: each step's outputs replace those arrays for the
    steps after it. Returns (the outputs `outs`, the sum of the steps' median ms)."""
    arrays, total = dict(arrays), 0.0
    for kernel, names, step_outs in steps:
        got, ms = tilec_run(tilec, src, kernel, {n: arrays[n] for n in names}, step_outs, backend, repeat)
        arrays.update(got)
        total += ms
    return {n: arrays[n] for n in outs}, total


def peer_ms(f, reps, prep=lambda: None):
    """Median wall time of `f()` in ms over `reps` calls, after one warm-up call; `prep()`
    (untimed) before each, e.g. to restore the inputs of an in-place routine."""
    prep()
    f()
    ts = []
    for _ in range(reps):
        prep()
        t = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def check_error(what, err, bound):
    """Stops the benchmark unless the result's error `err` is within `bound`."""
    if not err <= bound:
        raise SystemExit(f"{what}: error {err:.2e} above {bound:.2e}")


def f64(a):
    return a.astype(np.float64)


def rel(x, ref):
    x = np.asarray(x, np.float64)
    return float(np.abs(x - ref).max() / max(np.abs(ref).max(), 1.0))


def getf2(a):
    """LU with partial pivoting of one matrix in float64 (LAPACK's getf2, dividing by the
    pivot): the factors and the 0-based pivot rows."""
    u = a.astype(np.float64)
    n = len(u)
    piv = np.arange(n)
    for k in range(n):
        p = k + int(np.argmax(np.abs(u[k:, k])))
        piv[k] = p
        u[[k, p]] = u[[p, k]]
        if u[k, k] != 0:
            u[k + 1:, k] /= u[k, k]
            u[k + 1:, k + 1:] -= np.outer(u[k + 1:, k], u[k, k + 1:])
    return u, piv


def workloads(rng):
    """(name, .tile file, kernel, inputs, outputs, reference check, peers by name); the kernel
    may be a list of launches in turn (`tilec_steps`)."""
    a = rng.uniform(-1, 1, (1000, 32, 32)).astype(np.float32)
    a64 = a.astype(np.float64)
    cols_ref = a64.copy()
    for j in range(32):
        cols_ref[:, :, j] = cols_ref[:, :, j] * 2 + cols_ref[:, :, 31 - j]

    def cols_np():
        t = a.copy()
        for j in range(32):
            t[:, :, j] = t[:, :, j] * 2 + t[:, :, 31 - j]
        return t

    yield ("rows: t[i, :] = t[i, :] * 2, 1000 x 32 x 32 f32", "bench/ports/lines.tile", "rows",
           {"A": a}, ["A"], lambda o: rel(o["A"], a64 * 2), {"NumPy a * 2": lambda: a * 2})
    yield ("cols: t[:, j] = t[:, j] * 2 + t[:, 31 - j], 1000 x 32 x 32 f32", "bench/ports/lines.tile", "cols",
           {"A": a}, ["A"], lambda o: rel(o["A"], cols_ref), {"NumPy column loop": cols_np})

    g = rng.uniform(-1, 1, (2000, 32, 32)).astype(np.float32)
    refs = [getf2(m) for m in g[:100]]

    def getrf_check(o):
        if any((o["P"][i] != p).any() for i, (_, p) in enumerate(refs)):
            return float("inf")
        return max(rel(o["A"][i], u) for i, (u, _) in enumerate(refs))

    peers = {"SciPy lu_factor loop": lambda: [sl.lu_factor(m, check_finite=False) for m in g]}
    try:
        sl.lu_factor(g[:2], check_finite=False)
        peers["SciPy lu_factor batched"] = lambda: sl.lu_factor(g, check_finite=False)
    except ValueError:
        pass  # SciPy before 1.15 factors one matrix per call
    yield ("getrf (LU, partial pivoting), 2000 x 32 x 32 f32", "examples/getrf.tile", "getrf_batched",
           {"A": g, "P": np.zeros((2000, 32), np.int32)}, ["A", "P"], getrf_check, peers)

    q = rng.uniform(-1, 1, (2000, 32, 32)).astype(np.float32)
    qref = [sl.qr(m.astype(np.float64), mode="raw")[0] for m in q[:100]]

    def geqrf_check(o):
        return max(max(rel(o["A"][i], qr), rel(o["Tau"][i], tau)) for i, (qr, tau) in enumerate(qref))

    yield ("geqrf (Householder QR), 2000 x 32 x 32 f32", "examples/geqrf.tile", "geqrf_batched",
           {"A": q, "Tau": np.zeros((2000, 32), np.float32)}, ["A", "Tau"], geqrf_check,
           {"NumPy linalg.qr(mode='raw') batched": lambda: np.linalg.qr(q, mode="raw"),
            "SciPy qr(mode='raw') loop": lambda: [sl.qr(m, mode="raw", check_finite=False) for m in q]})

    m, n = 8192, 512
    x = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    dy = rng.standard_normal((m, n)).astype(np.float32)
    x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    rstd = 1 / np.sqrt((x64 * x64).mean(1) + 1e-6)
    eps = np.float32(1e-6)

    def rms_np():
        r = 1 / np.sqrt((x * x).mean(1) + eps)
        return x * r[:, None] * w, r

    yield ("RMSNorm forward (Liger), 8192 x 512 f32", "examples/rms_norm.tile", "rms_norm_fwd",
           {"X": x, "W": w, "eps": "1e-6"}, ["Y", "Rstd"],
           lambda o: max(rel(o["Y"], x64 * rstd[:, None] * w64), rel(o["Rstd"], rstd)), {"NumPy": rms_np})
    rs32 = rstd.astype(np.float32)
    g64 = dy64 * w64
    dx_ref = rstd[:, None] * g64 - x64 * (rstd ** 3 / n * (g64 * x64).sum(1))[:, None]

    def rms_bwd_np():
        g = dy * w
        return rs32[:, None] * g - x * (rs32 ** 3 / n * (g * x).sum(1))[:, None], (dy * x * rs32[:, None]).sum(0)

    yield ("RMSNorm backward (Liger), 8192 x 512 f32", "examples/rms_norm.tile", "rms_norm_bwd",
           {"X": x, "DY": dy, "W": w, "Rstd": rs32, "DW": np.zeros(n, np.float32)}, ["DX"],
           lambda o: rel(o["DX"], dx_ref), {"NumPy": rms_bwd_np})
    a, b = x, dy
    s64 = 1 / (1 + np.exp(-x64))
    yield ("SwiGLU forward (Liger), 8192 x 512 f32", "examples/swiglu.tile", "swiglu_fwd",
           {"A": a, "B": b}, ["C"], lambda o: rel(o["C"], x64 * s64 * dy64),
           {"NumPy": lambda: a / (1 + np.exp(-a)) * b})
    dc = rng.standard_normal((m, n)).astype(np.float32)

    def swiglu_bwd_np():
        s = 1 / (1 + np.exp(-a))
        return dc * b * s * (1 + a * (1 - s)), dc * a * s

    yield ("SwiGLU backward (Liger), 8192 x 512 f32", "examples/swiglu.tile", "swiglu_bwd",
           {"DC": dc, "A": a, "B": b}, ["A", "B"],
           lambda o: rel(o["A"], dc.astype(np.float64) * dy64 * s64 * (1 + x64 * (1 - s64))), {"NumPy": swiglu_bwd_np})
    nd = 1 << 24
    xd, r = rng.standard_normal(nd).astype(np.float32), rng.random(nd, dtype=np.float32)
    yield ("dropout (Triton tutorial 04, random numbers given), 2^24 f32", "examples/dropout.tile", "dropout",
           {"X": xd, "R": r, "p": "0.5"}, ["Y"], lambda o: rel(o["Y"], np.where(r > 0.5, xd.astype(np.float64) * 2, 0)),
           {"NumPy": lambda: np.where(r > np.float32(0.5), xd * np.float32(2), np.float32(0))})

    # Liger-Kernel's cross-entropy (the issue's 32000 vocabulary) and Mamba-2's chunked cumsum.
    mc, vc = 512, 32000
    xc = (rng.standard_normal((mc, vc)) * 3).astype(np.float32)
    yc = rng.integers(0, vc, mc).astype(np.int32)
    xc64 = xc.astype(np.float64)
    mx = xc64.max(1, keepdims=True)
    lse64 = mx[:, 0] + np.log(np.exp(xc64 - mx).sum(1))
    grad64 = np.exp(xc64 - lse64[:, None])
    grad64[np.arange(mc), yc] -= 1
    grad64 /= mc
    loss64 = lse64 - xc64[np.arange(mc), yc]

    def ce_np():
        m = xc.max(1, keepdims=True)
        e = np.exp(xc - m)
        s = e.sum(1, keepdims=True)
        loss = (m + np.log(s))[:, 0] - xc[np.arange(mc), yc]
        g = e / s
        g[np.arange(mc), yc] -= 1
        return loss, g / np.float32(mc)

    yield ("cross-entropy forward + gradient (Liger), 512 x 32000 f32", "bench/ports/cross_entropy.tile",
           "cross_entropy", {"X": xc, "Y": yc, "Loss": np.zeros(mc, np.float32)}, ["X", "Loss"],
           lambda o: max(rel(o["X"] * mc, grad64 * mc), rel(o["Loss"], loss64)), {"NumPy": ce_np})
    xk = rng.standard_normal((16384, 256)).astype(np.float32)
    # f32 sin and cos on vectors (codegen-cpu/src/sinf.rs), arguments within a few periods.
    xs = rng.uniform(-50, 50, 1 << 24).astype(np.float32)
    xs64 = xs.astype(np.float64)
    yield ("sin(x) cos(2x), 2^24 f32", "bench/ports/sincos.tile", "sincos",
           {"X": xs, "Y": np.zeros_like(xs)}, ["Y"], lambda o: rel(o["Y"], np.sin(xs64) * np.cos(xs64 * 2)),
           {"NumPy": lambda: np.sin(xs) * np.cos(xs * np.float32(2))})
    yield ("chunked cumsum (Mamba-2), 16384 chunks of 256 f32", "bench/ports/cumsum.tile", "chunk_cumsum",
           {"X": xk, "Y": np.zeros_like(xk)}, ["Y"], lambda o: rel(o["Y"], np.cumsum(xk.astype(np.float64), 1)),
           {"NumPy cumsum": lambda: np.cumsum(xk, 1)})

    # Triton tutorial 05's layer-norm backward at the issue's 4096 x 4096, and top-k of rows.
    ml = nl = 4096
    xl = rng.standard_normal((ml, nl)).astype(np.float32)
    dyl = rng.standard_normal((ml, nl)).astype(np.float32)
    wl = rng.standard_normal(nl).astype(np.float32)
    mean = xl.mean(1, dtype=np.float64).astype(np.float32)
    rstdl = (1 / np.sqrt(xl.var(1, dtype=np.float64) + 1e-5)).astype(np.float32)
    xhat64 = (f64(xl) - f64(mean)[:, None]) * f64(rstdl)[:, None]
    wdy64 = f64(wl) * f64(dyl)
    c1 = (xhat64 * wdy64).mean(1, keepdims=True)
    c2 = wdy64.mean(1, keepdims=True)
    dx64 = (wdy64 - (xhat64 * c1 + c2)) * f64(rstdl)[:, None]
    dw64 = (f64(dyl) * xhat64).sum(0)

    def lnb_np():
        xhat = (xl - mean[:, None]) * rstdl[:, None]
        wdy = wl * dyl
        a = (xhat * wdy).mean(1, keepdims=True)
        b = wdy.mean(1, keepdims=True)
        return (wdy - (xhat * a + b)) * rstdl[:, None], (dyl * xhat).sum(0), dyl.sum(0)

    yield ("layer-norm backward (Triton tutorial 05), 4096 x 4096 f32", "bench/ports/layer_norm_bwd.tile",
           "layer_norm_bwd", {"X": xl, "DY": dyl, "W": wl, "Mean": mean, "Rstd": rstdl,
                              "DW": np.zeros(nl, np.float32), "DB": np.zeros(nl, np.float32)}, ["DX", "DW"],
           lambda o: max(rel(o["DX"], dx64), rel(o["DW"], dw64)), {"NumPy": lnb_np})
    xt = rng.standard_normal((65536, 128)).astype(np.float32)
    top_idx = np.argsort(-xt, axis=1, kind="stable")[:, :6]
    top_vals = np.take_along_axis(xt, top_idx, 1)

    def topk_np():
        part = np.argpartition(-xt, 6, axis=1)[:, :6]
        v = np.take_along_axis(xt, part, 1)
        order = np.argsort(-v, axis=1, kind="stable")
        return np.take_along_axis(v, order, 1), np.take_along_axis(part, order, 1)

    yield ("top-k of rows (k = 6), 65536 x 128 f32", "bench/ports/topk.tile", "topk",
           {"X": xt, "Vals": np.zeros((65536, 6), np.float32), "Idx": np.zeros((65536, 6), np.int32)},
           ["Vals", "Idx"], lambda o: float("inf") if (o["Idx"] != top_idx).any() else rel(o["Vals"], top_vals),
           {"NumPy argpartition + sort": topk_np})

    # Embedding lookup (Triton's and Liger-Kernel's embedding forward): a gather of table rows
    # by token ids (`W[ids, 0:64]`, an index tile). The peer is NumPy's fancy indexing.
    we = rng.standard_normal((50000, 64)).astype(np.float32)
    ids = rng.integers(0, 50000, 65536).astype(np.int32)
    yield ("embedding lookup (gather of rows), 65536 ids into 50000 x 64 f32", "examples/embedding.tile",
           "embedding_fwd", {"W": we, "Ids": ids}, ["Y"], lambda o: rel(o["Y"], f64(we)[ids]),
           {"NumPy W[ids]": lambda: we[ids]})

    # Arithmetic in f16 (examples/half_precision.tile): Y = X + gamma F, each operation rounded
    # to f16, bit for bit what NumPy's float16 computes (the peer).
    xh = rng.uniform(-4, 4, (4096, 1024)).astype(np.float16)
    fh = rng.uniform(-4, 4, (4096, 1024)).astype(np.float16)
    yh = xh + np.float16(0.5) * fh
    yield ("f16 residual update Y = X + gamma F, 4096 x 1024 f16", "examples/half_precision.tile", "residual_f16",
           {"X": xh, "F": fh, "gamma": "0.5"}, ["Y"], lambda o: float((o["Y"] != yh).sum()),
           {"NumPy float16": lambda: xh + np.float16(0.5) * fh})

    # NPBench (Ziogas et al., SC'21): softmax at its paper's SM = 512 (N = 8, H = 16, as
    # 65536 rows), gemver at its "L" size, syrk at its paper size. Their NumPy code as
    # published, except syrk, whose published form is a Python loop over rows and columns
    # (minutes): there the peer is NumPy's `A @ A.T` (BLAS syrk/gemm), the strongest form.
    xs = rng.standard_normal((8 * 16 * 512, 512)).astype(np.float32)
    xs64 = xs.astype(np.float64)
    es = np.exp(xs64 - xs64.max(-1, keepdims=True))

    def softmax_np():
        tmp_max = np.max(xs, axis=-1, keepdims=True)
        tmp_out = np.exp(xs - tmp_max)
        return tmp_out / np.sum(tmp_out, axis=-1, keepdims=True)

    yield ("softmax (NPBench), 65536 x 512 f32", "examples/softmax_rows.tile", "softmax_rows",
           {"X": xs}, ["Y"], lambda o: rel(o["Y"], es / es.sum(-1, keepdims=True)), {"NumPy (NPBench)": softmax_np})

    nv = 4000
    ga = rng.uniform(0, 1, (nv, nv)).astype(np.float32)
    u1, v1, u2, v2, xv, yv, zv, wv = (rng.uniform(0, 1, nv).astype(np.float32) for _ in range(8))
    alpha, beta = np.float32(1.5), np.float32(1.2)
    ga2 = ga + np.outer(u1, v1) + np.outer(u2, v2)  # the f32 inputs of the later steps
    ga2_64 = f64(ga) + np.outer(f64(u1), f64(v1)) + np.outer(f64(u2), f64(v2))
    xv2 = (xv + beta * yv @ ga2 + zv).astype(np.float32)
    yield ("gemver 1: A += u1 v1^T + u2 v2^T (NPBench), 4000 x 4000 f32", "examples/gemver.tile", "gemver_rank2",
           {"A": ga, "U1": u1, "V1": v1, "U2": u2, "V2": v2}, ["A"], lambda o: rel(o["A"], ga2_64),
           {"NumPy (NPBench)": lambda: ga.copy().__iadd__(np.outer(u1, v1) + np.outer(u2, v2))})
    # A^T y in two launches: 16 bands of rows (a few per core), each one stream (BN = N).
    yield ("gemver 2: x += beta A^T y + z (NPBench)", "examples/gemver.tile",
           [("gemver_atx_parts", ["A", "Y", "P"], ["P"]), ("gemver_atx", ["P", "X", "Z", "beta"], ["X"])],
           {"A": ga2, "X": xv, "Y": yv, "Z": zv, "beta": "1.2", "P": np.zeros((16, nv), np.float32)}, ["X"],
           lambda o: rel(o["X"], f64(xv) + 1.2 * f64(yv) @ f64(ga2) + f64(zv)),
           {"NumPy (NPBench)": lambda: xv + beta * yv @ ga2 + zv})
    yield ("gemver 3: w += alpha A x (NPBench)", "examples/gemver.tile", "gemver_ax",
           {"A": ga2, "X": xv2, "W": wv, "alpha": "1.5"}, ["W"],
           lambda o: rel(o["W"], f64(wv) + 1.5 * f64(ga2) @ f64(xv2)),
           {"NumPy (NPBench)": lambda: wv + alpha * ga2 @ xv2, "NumPy, A @ x first": lambda: wv + alpha * (ga2 @ xv2)})

    # Warp's tile examples: N-body (all pairs) and the coordinate MLP's forward pass.
    nb = 8192
    pb = rng.standard_normal((nb, 3)).astype(np.float32)
    vb = (rng.standard_normal((nb, 3)) * 0.1).astype(np.float32)

    def nbody_acc(p, chunk=512):
        """All-pairs accelerations (mass 1, eps2 0.01) in row chunks, in p's dtype."""
        x, y, z = p[:, 0], p[:, 1], p[:, 2]
        a = np.empty_like(p)
        for c0 in range(0, len(p), chunk):
            dx, dy, dz = x[None, :] - x[c0:c0 + chunk, None], y[None, :] - y[c0:c0 + chunk, None], \
                z[None, :] - z[c0:c0 + chunk, None]
            w = 1 / np.sqrt(dx * dx + dy * dy + dz * dz + p.dtype.type(0.01))
            w = w * w * w
            a[c0:c0 + chunk] = np.stack([(dx * w).sum(1), (dy * w).sum(1), (dz * w).sum(1)], 1)
        return a

    vb_ref = f64(vb) + 0.016 * nbody_acc(f64(pb))
    yield (f"N-body step, all pairs (Warp tile example), {nb} bodies f32", "examples/nbody.tile", "nbody_step",
           {"P": pb, "V": vb, "Q": np.zeros_like(pb), "dt": "0.016", "eps2": "0.01", "mass": "1.0"}, ["V"],
           lambda o: rel(o["V"], vb_ref),
           {"NumPy, 512-row chunks": lambda: vb + np.float32(0.016) * nbody_acc(pb)})
    wd = 512
    idx = rng.permutation(wd * wd).astype(np.int32)
    ws = (rng.uniform(-1, 1, (3, 32, 32)) / np.sqrt(32)).astype(np.float32)
    bs = rng.uniform(-0.2, 0.2, (3, 32)).astype(np.float32)
    w3 = (rng.uniform(-1, 1, (3, 32)) / np.sqrt(32)).astype(np.float32)
    b3 = rng.uniform(0, 0.2, 3).astype(np.float32)
    img = rng.random((3, wd * wd), np.float32)

    def mlp_fwd(dt):
        """The forward pass over every pixel of idx at once (features x pixels), in dtype dt."""
        x = ((idx // wd).astype(dt) / dt(wd) - dt(0.5)) * dt(2)
        y = ((idx % wd).astype(dt) / dt(wd) - dt(0.5)) * dt(2)
        c = (dt(2) ** np.arange(8, dtype=dt) * dt(np.pi))[:, None]
        ax, ay = x[None, :] * c, y[None, :] * c
        z = np.stack([np.sin(ax), np.cos(ax), np.sin(ay), np.cos(ay)], 1).reshape(32, -1)
        for l in range(3):
            z = np.maximum(ws[l].astype(dt) @ z + bs[l].astype(dt)[:, None], 0)
        o = np.maximum(w3.astype(dt) @ z + b3.astype(dt)[:, None], 0)
        out = img.astype(dt)
        out[:, idx] = o
        e = o - img[:, idx]
        return out, (e * e).sum() / (3 * len(idx))

    mlp_ref = mlp_fwd(np.float64)[0]
    yield (f"coordinate MLP forward (Warp tile example), {wd} x {wd} pixels f32", "examples/mlp.tile", "mlp_image",
           {"Idx": idx, "W": ws, "Bs": bs, "W3": w3, "B3": b3, "Ref": img, "Out": img, "Loss": np.zeros(1, np.float32),
            "width": str(wd), "height": str(wd)}, ["Out"], lambda o: rel(o["Out"], mlp_ref),
           {"NumPy (all pixels at once)": lambda: mlp_fwd(np.float32)})

    # The policy network of Warp's tile walker example: 0.3 tanh(W p) for 2^20 tetrahedra
    # (the phases p = sin(5 t + 2 pi k / 8) computed in the kernel), against NumPy.
    nw = 1 << 20
    ww = rng.uniform(-0.35, 0.35, (nw, 8)).astype(np.float32)
    tw = np.float32(0.25)
    ph64 = np.sin(5 * f64(tw) + np.arange(8) * np.pi / 4)

    def walker_np():
        ph = np.sin(np.float32(5) * tw + np.arange(8, dtype=np.float32) * np.float32(np.pi / 4))
        return np.float32(0.3) * np.tanh(ww @ ph)

    yield (f"walker policy network (Warp tile example), {nw} tetrahedra f32", "examples/walker.tile", "walker_network",
           {"W": ww, "Act": np.zeros((nw, 1), np.float32), "t": "0.25"}, ["Act"],
           lambda o: rel(o["Act"][:, 0], 0.3 * np.tanh(f64(ww) @ ph64)), {"NumPy": walker_np})

    # Warp's block Cholesky example (example_tile_block_cholesky.py): one 1000 x 1000 system
    # in arrays of 1008 (its padding to the block size), factored and solved by one program,
    # against SciPy's cho_factor + cho_solve (LAPACK potrf/potrs) and the NumPy code of Warp's
    # example (cholesky, then two general solves).
    nc, npad = 1000, 1008
    ac = rng.standard_normal((npad, npad))
    ac = (ac @ ac.T + npad * np.eye(npad)).astype(np.float32)
    bc = rng.standard_normal((npad, 1)).astype(np.float32)
    a_act, b_act = ac[:nc, :nc].copy(), bc[:nc].copy()
    xc_ref = np.linalg.solve(f64(a_act), f64(b_act))

    def numpy_warp():
        lc = np.linalg.cholesky(a_act)
        return np.linalg.solve(lc.T, np.linalg.solve(lc, b_act))

    yield (f"block Cholesky factor + solve (Warp tile example), n = {nc} f32", "examples/block_cholesky.tile",
           [("block_cholesky", ["A", "L", "n", "eps"], ["L"]), ("block_cholesky_solve", ["L", "B", "X", "n"], ["X"])],
           {"A": ac, "L": np.zeros_like(ac), "B": bc, "X": np.zeros_like(bc), "n": str(nc), "eps": "1e-30"}, ["X"],
           lambda o: rel(o["X"][:nc], xc_ref),
           {"SciPy cho_factor + cho_solve": lambda: sl.cho_solve(sl.cho_factor(a_act, lower=True), b_act),
            "NumPy (Warp's reference code)": numpy_warp})

    # Warp's tile FFT examples (example_tile_fft.py, example_tile_filtering.py): batched
    # 512-point complex rows by the four-step FFT of examples/fft.tile, planar (real and
    # imaginary rows), against NumPy's FFT (pocketfft) on the same values as complex64. The
    # tables (fft_plan's) are made once, as a plan is, and not timed.
    mf, n1, n2 = 16384, 16, 32
    nf = n1 * n2

    def twiddles(j):
        a = -2 * np.pi * j / nf
        return np.stack([np.cos(a), np.sin(a)]).astype(np.float32)

    k1, k2 = np.arange(n1), np.arange(n2)
    tables = {"F1": twiddles(np.outer(k1, k1) % n1 * n2), "F2": twiddles(np.outer(k2, k2) % n2 * n1),
              "Tw": twiddles(np.outer(k1, k2))}
    xc = (rng.standard_normal((mf, nf)) + 1j * rng.standard_normal((mf, nf))).astype(np.complex64)
    hc = (rng.standard_normal((mf, nf)) + 1j * rng.standard_normal((mf, nf))).astype(np.complex64)
    # Row m's points as (2, N1, N2) for X, (2, N2, N1) for H and Y: the same bytes.
    planar = lambda c, a, b: np.ascontiguousarray(np.stack([c.real, c.imag], 1)).reshape(mf, 2, a, b)
    unplanar = lambda p: p.reshape(mf, 2, nf)[:, 0].astype(np.float64) + 1j * p.reshape(mf, 2, nf)[:, 1]
    fft_ref = np.fft.fft(xc.astype(np.complex128))
    filt_ref = np.fft.ifft(fft_ref * hc.astype(np.complex128))
    crel = lambda y, ref: float(np.abs(unplanar(y) - ref).max() / np.abs(ref).max())
    yield (f"FFT of complex rows (Warp tile example), {mf} x {nf} complex f32", "examples/fft.tile", "fft_rows",
           {"X": planar(xc, n1, n2), **tables, "Y": np.zeros((mf, 2, n2, n1), np.float32)}, ["Y"],
           lambda o: crel(o["Y"], fft_ref), {"NumPy fft": lambda: np.fft.fft(xc)})
    yield (f"FFT filtering (Warp tile example), {mf} x {nf} complex f32", "examples/fft.tile", "fft_filter_rows",
           {"X": planar(xc, n1, n2), "H": planar(hc, n2, n1), **tables, "Y": np.zeros((mf, 2, n2, n1), np.float32)},
           ["Y"],
           lambda o: crel(o["Y"], filt_ref), {"NumPy ifft(fft(x) * h)": lambda: np.fft.ifft(np.fft.fft(xc) * hc)})

    ns, ks = 1200, 1000
    sc = rng.uniform(0, 1, (ns, ns)).astype(np.float32)
    sa = rng.uniform(0, 1, (ns, ks)).astype(np.float32)
    low = np.tril(np.ones((ns, ns), bool))
    syrk_ref = np.where(low, 1.5 * f64(sa) @ f64(sa).T + 1.2 * f64(sc), f64(sc))
    yield ("syrk (NPBench, BS = 64), C 1200 x 1200, A 1200 x 1000 f32", "examples/syrk.tile", "syrk",
           {"C": sc, "A": sa, "alpha": "1.5", "beta": "1.2"}, ["C"], lambda o: rel(o["C"], syrk_ref),
           {"NumPy A @ A.T, lower": lambda: np.where(low, alpha * (sa @ sa.T) + beta * sc, sc)})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--before", help="an earlier tilec build, timed beside it")
    ap.add_argument("--backends", default="cranelift,llvm")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1,
                    help="time every workload N times, tilec and the peers in turn, and tabulate the medians "
                         "over the rounds with their range (runs on a shared VM vary by tens of percent)")
    ap.add_argument("--only", help="run only the workloads whose names contain one of these comma-separated words")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    rows = []
    builds = [("tilec", args.tilec)] + ([("before", args.before)] if args.before else [])
    for name, src, kernel, arrays, outs, check, peers in workloads(rng):
        if args.only and not any(w in name for w in args.only.split(",")):
            continue
        times = {}
        for _ in range(args.rounds):
            for label, exe in builds:
                for be in args.backends.split(","):
                    run = tilec_steps if isinstance(kernel, list) else tilec_run
                    got, ms = run(exe, src, kernel, arrays, outs, be, args.repeat)
                    err = check(got)
                    ok = err <= 1e-5
                    print(f"{name}: {label} {be}: {ms:.3f} ms, error {err:.1e} {'ok' if ok else 'WRONG'}", flush=True)
                    if not ok:
                        sys.exit(f"{label} {be} gives a wrong result on {name}")
                    times.setdefault(f"{label} {be}", []).append(ms)
            for peer, f in peers.items():
                ms = peer_ms(f, max(3, args.repeat // 2))
                print(f"{name}: {peer}: {ms:.3f} ms", flush=True)
                times.setdefault(peer, []).append(ms)
        rows.append((name, times, list(peers)))
    print()
    for name, times, peers in rows:
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"### {name}\n")
        print("| | median ms | range | " + " | ".join(f"{p} / this" for p in peers) + " |")
        print("|---|---|---|" + "---|" * len(peers))
        for k, ms in med.items():
            ratios = " | ".join(f"{med[p] / ms:.2f}" for p in peers)
            print(f"| {k} | {ms:.3f} | {min(times[k]):.3f}-{max(times[k]):.3f} | {ratios} |")
        print()


if __name__ == "__main__":
    main()
