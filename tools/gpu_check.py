#!/usr/bin/env python3
"""The GPU check: tilec's kernels on an NVIDIA GPU (CUDA) and on Vulkan, against the CPU target
and float64 references, then the GPU benchmark against PyTorch (cuSOLVER, cuBLAS) and Triton.

Run through tools/gpu-check.sh (which finds the tilec binary). Every result is one JSON line on
stdout (and in $OUT/gpu-check.jsonl when OUT is set); a summary table goes to stderr and to
$OUT/summary.md. Exit status 1 if any comparison failed or a required target was missing.

Parts (select with --parts, default all):
  correctness  every stdlib kernel and every example, f32 and f64, extents 1, 17, 77, 92 and 131,
               on each --targets target (default cuda,vulkan) against the CPU target and against
               a float64 NumPy reference (max|x - ref| / max(max|ref|, 1) per case).
  ptxas        registers and spills of every stdlib and example instance (tilec build --report).
  bench        potrf_batched 4096x92x92 f32 and f64, 4096x16x16, 1024x64x64; trsm and potrs
               4096x92x92; gemm 4096^3 f32 and f64. tilec: `tilec run --target cuda --repeat N`
               (its printed median of N timed launches after one untimed one). Peers, where they
               import: torch.linalg.cholesky (cuSOLVER batched), torch.linalg.solve_triangular,
               torch.cholesky_solve, torch.matmul with TF32 off, and Triton's tutorial matmul;
               CUDA-event medians of N runs after warm-up. Each result is checked against float64
               NumPy on the first 32 matrices (gemm: on 64 sampled rows).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STDLIB = os.path.join(ROOT, "stdlib", "linalg.tile")
EXAMPLES = os.path.join(ROOT, "examples")
OUT = os.environ.get("OUT")
RECORDS = []


def emit(rec):
    RECORDS.append(rec)
    line = json.dumps(rec)
    print(line, flush=True)
    if OUT:
        with open(os.path.join(OUT, "gpu-check.jsonl"), "a") as f:
            f.write(line + "\n")


class Tilec:
    """Runs the tilec command line on NumPy arrays through temporary .npy files."""

    def __init__(self, path):
        self.path = path

    def run(self, src, kernel, arrays, scalars, outs, target="cpu", repeat=1, generics=()):
        """Returns (outputs by name, the timing line, median ms); raises RuntimeError with
        tilec's message on failure."""
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [self.path, "run", src, "--kernel", kernel, "--target", target, "--repeat", str(repeat)]
            for name, a in arrays.items():
                p = os.path.join(tmp, f"in_{name}.npy")
                np.save(p, a)
                cmd += ["--arg", f"{name}={p}"]
            for name, v in scalars.items():
                cmd += ["--arg", f"{name}={v}"]
            for name in outs:
                cmd += ["--out", f"{name}={os.path.join(tmp, 'out_' + name + '.npy')}"]
            for g in generics:
                cmd += ["--generic", g]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError((p.stderr or p.stdout).strip()[-1500:])
            line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
            m = re.search(r"median ([0-9.]+) ms", line)
            res = {name: np.load(os.path.join(tmp, "out_" + name + ".npy")) for name in outs}
            return res, line, float(m.group(1)) if m else None


# ---------------------------------------------------------------------------------------------
# Correctness cases: inputs and float64 references.
# ---------------------------------------------------------------------------------------------


def spd(rng, b, n):
    m = rng.standard_normal((b, n, n))
    return m @ m.transpose(0, 2, 1) / n + 2.0 * np.eye(n)


def triangular(rng, b, n, lower, garbage=1e3):
    """A well-conditioned triangle (unit-ish diagonal) with large garbage in the other one."""
    t = rng.uniform(-1, 1, (b, n, n)) / n + np.eye(n) * rng.uniform(1, 2, (b, n, 1))
    g = rng.uniform(-garbage, garbage, (b, n, n))
    return np.where(np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool)), t, g)


def clean(a, lower):
    return np.tril(a) if lower else np.triu(a)


def case_potrf(rng, dt, n):
    a = spd(rng, 3, n)
    return dict(src=STDLIB, kernel="potrf_batched", arrays={"A": a.astype(dt)}, scalars={"eps": "1e-9"},
                out="A", ref=np.linalg.cholesky(a.astype(dt).astype(np.float64)), mask="tril")


def case_trsm(side, lower, trans):
    def make(rng, dt, n):
        b, m = 3, 17
        a = triangular(rng, b, n, lower).astype(dt)
        x = rng.uniform(-1, 1, (b, n, m) if side == "left" else (b, m, n)).astype(dt)
        t = clean(a.astype(np.float64), lower)
        op = t.transpose(0, 2, 1) if trans else t
        x64 = x.astype(np.float64)
        if side == "left":
            ref = np.linalg.solve(op, x64)
        else:
            ref = np.linalg.solve(op.transpose(0, 2, 1), x64.transpose(0, 2, 1)).transpose(0, 2, 1)
        name = f"trsm_{side}_{'lower' if lower else 'upper'}{'_t' if trans else ''}_batched"
        return dict(src=STDLIB, kernel=name, arrays={"A": a, "X": x}, scalars={}, out="X", ref=ref)

    return make


def case_potrs(rng, dt, n):
    l64 = np.linalg.cholesky(spd(rng, 3, n))
    l = l64.astype(dt)
    x = rng.uniform(-1, 1, (3, n, 5)).astype(dt)
    lf = l.astype(np.float64)
    ref = np.linalg.solve(lf @ lf.transpose(0, 2, 1), x.astype(np.float64))
    return dict(src=STDLIB, kernel="potrs_batched", arrays={"L": l, "X": x}, scalars={}, out="X", ref=ref)


def case_gemm(rng, dt, n):
    a = rng.uniform(-1, 1, (n, 33)).astype(dt)
    b = rng.uniform(-1, 1, (33, n + 1)).astype(dt)
    c = rng.uniform(-1, 1, (n, n + 1)).astype(dt)
    ref = 1.5 * a.astype(np.float64) @ b.astype(np.float64) + 0.5 * c.astype(np.float64)
    return dict(src=STDLIB, kernel="gemm", arrays={"A": a, "B": b, "C": c}, scalars={"alpha": "1.5", "beta": "0.5"},
                out="C", ref=ref)


def case_gemm_batched(rng, dt, n):
    a = rng.uniform(-1, 1, (2, n, 20)).astype(dt)
    b = rng.uniform(-1, 1, (2, 20, 9)).astype(dt)
    c = np.zeros((2, n, 9), dt)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return dict(src=STDLIB, kernel="gemm_batched", arrays={"A": a, "B": b, "C": c}, scalars={"alpha": "1", "beta": "0"},
                out="C", ref=ref)


def case_row_sum(rng, dt, n):
    x = rng.uniform(-1, 1, (n, 70)).astype(dt)
    return dict(src=STDLIB, kernel="row_sum", arrays={"X": x, "out": np.zeros(n, dt)}, scalars={}, out="out",
                ref=x.astype(np.float64).sum(1))


def example(name):
    return os.path.join(EXAMPLES, name)


def case_ex_cholesky(rng, dt, n):
    a = spd(rng, 3, n).astype(dt)
    return dict(src=example("cholesky.tile"), kernel="cholesky", arrays={"A": a, "L": np.zeros_like(a)},
                scalars={"eps": "1e-9"}, out="L", ref=np.linalg.cholesky(a.astype(np.float64)))


def case_ex_colsum(rng, dt, n):
    x = rng.uniform(-1, 1, (5 * n, 48)).astype(dt)
    return dict(src=example("colsum.tile"), kernel="colsum", arrays={"X": x, "S": np.zeros(48, dt)}, scalars={},
                out="S", ref=x.astype(np.float64).sum(0))


def case_ex_matmul16(rng, dt, n):
    a = rng.uniform(-1, 1, (n, 20)).astype(dt)
    b = rng.uniform(-1, 1, (20, n)).astype(dt)
    return dict(src=example("gemm.tile"), kernel="matmul16", arrays={"A": a, "B": b, "C": np.zeros((n, n), dt)},
                scalars={}, out="C", ref=a.astype(np.float64) @ b.astype(np.float64))


def case_ex_matmul16_batched(rng, dt, n):
    a = rng.uniform(-1, 1, (2, n, 20)).astype(dt)
    b = rng.uniform(-1, 1, (2, 20, 7)).astype(dt)
    return dict(src=example("gemm.tile"), kernel="matmul16_batched",
                arrays={"A": a, "B": b, "C": np.zeros((2, n, 7), dt)}, scalars={}, out="C",
                ref=a.astype(np.float64) @ b.astype(np.float64))


def case_ex_spd_solve16(rng, dt, n):
    a = spd(rng, n, 16).astype(dt)
    y = rng.uniform(-1, 1, (n, 16)).astype(dt)
    ref = np.linalg.solve(a.astype(np.float64), y.astype(np.float64)[..., None])[..., 0]
    return dict(src=example("potrs.tile"), kernel="spd_solve16", arrays={"A": a, "Y": y}, scalars={"eps": "1e-9"},
                out="Y", ref=ref)


def case_ex_softmax64(rng, dt, n):
    x = rng.uniform(-4, 4, (n, 64)).astype(dt)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    return dict(src=example("softmax.tile"), kernel="softmax64", arrays={"X": x, "Y": np.zeros_like(x)}, scalars={},
                out="Y", ref=e / e.sum(1, keepdims=True))


def case_ex_whiten16(rng, dt, n):
    a = spd(rng, 3, 16).astype(dt)
    x = rng.uniform(-1, 1, (3, n, 16)).astype(dt)
    l = np.linalg.cholesky(a.astype(np.float64))
    ref = np.linalg.solve(l, x.astype(np.float64).transpose(0, 2, 1)).transpose(0, 2, 1)
    return dict(src=example("trsm.tile"), kernel="whiten16", arrays={"A": a, "X": x}, scalars={"eps": "1e-9"},
                out="X", ref=ref)


CASES = [("potrf_batched", case_potrf)]
for _side in ("left", "right"):
    for _lower in (True, False):
        for _trans in (False, True):
            CASES.append((f"trsm_{_side}_{'lower' if _lower else 'upper'}{'_t' if _trans else ''}_batched",
                          case_trsm(_side, _lower, _trans)))
CASES += [("potrs_batched", case_potrs), ("gemm", case_gemm), ("gemm_batched", case_gemm_batched),
          ("row_sum", case_row_sum), ("examples/cholesky", case_ex_cholesky), ("examples/colsum", case_ex_colsum),
          ("examples/matmul16", case_ex_matmul16), ("examples/matmul16_batched", case_ex_matmul16_batched),
          ("examples/spd_solve16", case_ex_spd_solve16), ("examples/softmax64", case_ex_softmax64),
          ("examples/whiten16", case_ex_whiten16)]
EXTENTS = [1, 17, 77, 92, 131]
TOL = {"f32": 2e-4, "f64": 1e-10}


def rel(x, ref, mask=None):
    x = np.asarray(x, np.float64)
    if mask == "tril":
        x, ref = np.tril(x), np.tril(ref)
    d = np.abs(x - ref).max() if x.size else 0.0
    return float(d / max(np.abs(ref).max() if ref.size else 0.0, 1.0))


def correctness(tilec, args):
    ok = True
    for dtn, dt in (("f32", np.float32), ("f64", np.float64)):
        for name, make in CASES:
            for n in args.extents:
                rng = np.random.default_rng(zlib.crc32(f"{name} {dtn} {n}".encode()))
                c = make(rng, dt, n)
                base = dict(part="correctness", case=name, dtype=dtn, n=n)
                try:
                    cpu, _, _ = tilec.run(c["src"], c["kernel"], c["arrays"], c["scalars"], [c["out"]], "cpu")
                    cpu = cpu[c["out"]]
                except RuntimeError as e:
                    emit(dict(base, target="cpu", ok=False, error=str(e)))
                    ok = False
                    continue
                err = rel(cpu, c["ref"], c.get("mask"))
                good = err <= TOL[dtn]
                ok &= good
                emit(dict(base, target="cpu", ok=good, err_vs_ref=err))
                for target in args.targets:
                    try:
                        got, line, _ = tilec.run(c["src"], c["kernel"], c["arrays"], c["scalars"], [c["out"]], target)
                    except RuntimeError as e:
                        emit(dict(base, target=target, ok=False, error=str(e)))
                        ok = False
                        continue
                    got = got[c["out"]]
                    e_ref = rel(got, c["ref"], c.get("mask"))
                    e_cpu = rel(got, np.asarray(cpu, np.float64), c.get("mask"))
                    good = e_ref <= TOL[dtn] and e_cpu <= TOL[dtn]
                    ok &= good
                    emit(dict(base, target=target, ok=good, err_vs_ref=e_ref, err_vs_cpu=e_cpu, device=line))
    return ok


def ptxas(tilec, args):
    ok = True
    for src in [STDLIB] + sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".tile")):
        for arch in args.arch:
            p = subprocess.run([tilec.path, "build", src, "--target", "ptx", "--arch", arch, "--report"],
                               capture_output=True, text=True)
            if p.returncode != 0:
                emit(dict(part="ptxas", file=os.path.relpath(src, ROOT), arch=arch, ok=False, error=p.stderr.strip()[-800:]))
                ok = False
                continue
            for line in p.stdout.splitlines():
                m = re.search(r"kernel (\S+) \((\S+)\): (\d+) registers per lane, (\d+) bytes spill stores, "
                              r"(\d+) bytes spill loads", line)
                if m:
                    emit(dict(part="ptxas", kernel=m.group(1), arch=m.group(2), registers=int(m.group(3)),
                              spill_stores=int(m.group(4)), spill_loads=int(m.group(5)), ok=True))
    return ok


# ---------------------------------------------------------------------------------------------
# Benchmark.
# ---------------------------------------------------------------------------------------------


def torch_time(f, reps):
    """Median CUDA-event time (ms) of `reps` calls after 3 warm-up calls; and the last result."""
    import torch

    for _ in range(3):
        r = f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        r = f()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return float(np.median(ts)), r


TRITON_MATMUL = None


def triton_matmul():
    """The Triton tutorial matmul (03-matrix-multiplication.py), fixed block sizes."""
    global TRITON_MATMUL
    if TRITON_MATMUL is not None:
        return TRITON_MATMUL
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr):
        pid = tl.program_id(0)
        npm = tl.cdiv(M, BM)
        npn = tl.cdiv(N, BN)
        group = GM * npn
        gid = pid // group
        first = gid * GM
        gsize = min(npm - first, GM)
        pm = first + ((pid % group) % gsize)
        pn = (pid % group) // gsize
        om = (pm * BM + tl.arange(0, BM)) % M
        on = (pn * BN + tl.arange(0, BN)) % N
        ok = tl.arange(0, BK)
        a_ptrs = a_ptr + om[:, None] * sam + ok[None, :] * sak
        b_ptrs = b_ptr + ok[:, None] * sbk + on[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(a_ptrs, mask=ok[None, :] < K - k * BK, other=0.0)
            b = tl.load(b_ptrs, mask=ok[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(a, b, acc, input_precision="ieee")
            a_ptrs += BK * sak
            b_ptrs += BK * sbk
        cm = pm * BM + tl.arange(0, BM)
        cn = pn * BN + tl.arange(0, BN)
        tl.store(c_ptr + scm * cm[:, None] + scn * cn[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=(cm[:, None] < M) & (cn[None, :] < N))

    def run(a, b):
        m, k = a.shape
        _, n = b.shape
        c = torch.empty((m, n), device=a.device, dtype=a.dtype)
        grid = (triton.cdiv(m, 128) * triton.cdiv(n, 128),)
        kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                     BM=128, BN=128, BK=32, GM=8, num_warps=8, num_stages=3)
        return c

    TRITON_MATMUL = run
    return run


def bench(tilec, args):
    ok = True
    rng = np.random.default_rng(7)
    big = 4096 if not args.quick else 64
    gemm_n = 4096 if not args.quick else 256
    try:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        have_torch = torch.cuda.is_available()
    except Exception:
        have_torch = False
    target = args.bench_target

    def check(x, ref, dtn, mask=None):
        return rel(np.asarray(x)[: len(ref)], ref, mask)

    def record(workload, shape, dtn, impl, ms, err, **extra):
        good = err is not None and err <= TOL[dtn] * 10
        emit(dict(part="bench", workload=workload, shape=shape, dtype=dtn, impl=impl, median_ms=ms, max_rel_err=err,
                  ok=good, **extra))
        return good

    def tilec_case(workload, shape, dtn, kernel, arrays, scalars, out, ref, mask=None, generics=()):
        nonlocal ok
        try:
            res, line, ms = tilec.run(STDLIB, kernel, arrays, scalars, [out], target, args.reps, generics)
            ok &= record(workload, shape, dtn, "tilec", ms, check(res[out], ref, dtn, mask), line=line)
        except RuntimeError as e:
            ok = False
            emit(dict(part="bench", workload=workload, shape=shape, dtype=dtn, impl="tilec", ok=False, error=str(e)))

    def peer(workload, shape, dtn, impl, f, ref, mask=None):
        nonlocal ok
        if not have_torch:
            emit(dict(part="bench", workload=workload, shape=shape, dtype=dtn, impl=impl, ok=None,
                      error="torch with CUDA is not available"))
            return
        try:
            ms, r = torch_time(f, args.reps)
            ok &= record(workload, shape, dtn, impl, ms, check(r.double().cpu().numpy(), ref, dtn, mask))
        except Exception as e:  # a peer that fails is reported, not fatal to the run
            emit(dict(part="bench", workload=workload, shape=shape, dtype=dtn, impl=impl, ok=None,
                      error=f"{type(e).__name__}: {e}"[:800]))

    for b, n, dtn in [(big, 92, "f32"), (big, 92, "f64"), (big, 16, "f32"), (big // 4 or 1, 64, "f32")]:
        dt = np.float32 if dtn == "f32" else np.float64
        a = np.empty((b, n, n), dt)
        for s in range(0, b, 512):
            a[s:s + 512] = spd(rng, min(512, b - s), n)
        ref = np.linalg.cholesky(a[:32].astype(np.float64))
        shape = f"{b}x{n}x{n}"
        tilec_case("potrf", shape, dtn, "potrf_batched", {"A": a}, {"eps": "1e-9"}, "A", ref, mask="tril")
        if have_torch:
            ta = torch.from_numpy(a).cuda()
        peer("potrf", shape, dtn, "torch.linalg.cholesky", lambda: torch.linalg.cholesky(ta), ref, mask="tril")

    b, n = big, 92
    l64 = np.linalg.cholesky(spd(rng, min(b, 512), n))
    l = np.concatenate([l64] * (b // len(l64) or 1))[:b].astype(np.float32)
    x = rng.uniform(-1, 1, (b, n, n)).astype(np.float32)
    lf, xf = l[:32].astype(np.float64), x[:32].astype(np.float64)
    ref_trsm = np.linalg.solve(lf, xf.transpose(0, 2, 1)).transpose(0, 2, 1)  # X L^-T
    ref_potrs = np.linalg.solve(lf @ lf.transpose(0, 2, 1), xf)
    shape = f"{b}x{n}x{n}"
    tilec_case("trsm", shape, "f32", "trsm_right_lower_t_batched", {"A": l, "X": x}, {}, "X", ref_trsm)
    tilec_case("potrs", shape, "f32", "potrs_batched", {"L": l, "X": x}, {}, "X", ref_potrs)
    if have_torch:
        tl_, tx = torch.from_numpy(l).cuda(), torch.from_numpy(x).cuda()
    peer("trsm", shape, "f32", "torch.linalg.solve_triangular",
         lambda: torch.linalg.solve_triangular(tl_.transpose(1, 2), tx, upper=True, left=False), ref_trsm)
    peer("potrs", shape, "f32", "torch.cholesky_solve", lambda: torch.cholesky_solve(tx, tl_), ref_potrs)

    for dtn in ("f32", "f64"):
        dt = np.float32 if dtn == "f32" else np.float64
        n = gemm_n
        a = rng.uniform(-1, 1, (n, n)).astype(dt)
        bm = rng.uniform(-1, 1, (n, n)).astype(dt)
        rows = np.arange(0, n, max(1, n // 64))
        ref = a[rows].astype(np.float64) @ bm.astype(np.float64)
        shape = f"{n}^3"

        def sample(c):
            return np.asarray(c)[rows]

        try:
            res, line, ms = tilec.run(STDLIB, "gemm", {"A": a, "B": bm, "C": np.zeros((n, n), dt)},
                                      {"alpha": "1", "beta": "0"}, ["C"], target, args.reps, ("BM=64", "BN=64", "BK=32"))
            ok &= record("gemm", shape, dtn, "tilec (64x64x32)", ms, rel(sample(res["C"]), ref), line=line)
        except RuntimeError as e:
            ok = False
            emit(dict(part="bench", workload="gemm", shape=shape, dtype=dtn, impl="tilec", ok=False, error=str(e)))
        if have_torch:
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(bm).cuda()
        for impl, f in [("torch.matmul (TF32 off)", lambda: torch.matmul(ta, tb)),
                        ("triton tutorial matmul", lambda: triton_matmul()(ta, tb))]:
            if impl.startswith("triton") and dtn == "f64":
                continue
            if not have_torch:
                emit(dict(part="bench", workload="gemm", shape=shape, dtype=dtn, impl=impl, ok=None,
                          error="torch with CUDA is not available"))
                continue
            try:
                ms, r = torch_time(f, args.reps)
                ok &= record("gemm", shape, dtn, impl, ms, rel(r[torch.from_numpy(rows).cuda()].double().cpu().numpy(), ref))
            except Exception as e:
                emit(dict(part="bench", workload="gemm", shape=shape, dtype=dtn, impl=impl, ok=None,
                          error=f"{type(e).__name__}: {e}"[:800]))
    return ok


def summary():
    lines = ["| part | what | target / impl | dtype | n / shape | result |", "|---|---|---|---|---|---|"]
    for r in RECORDS:
        if r.get("part") == "correctness":
            res = "ok" if r.get("ok") else "FAIL " + str(r.get("error", ""))[:80]
            if "err_vs_ref" in r:
                res += f" (err {r['err_vs_ref']:.1e})"
            lines.append(f"| correctness | {r['case']} | {r['target']} | {r['dtype']} | {r['n']} | {res} |")
        elif r.get("part") == "bench":
            if r.get("median_ms") is not None:
                res = f"{r['median_ms']:.3f} ms, err {r.get('max_rel_err', float('nan')):.1e}"
            else:
                res = "no result: " + str(r.get("error", ""))[:80]
            lines.append(f"| bench | {r['workload']} | {r['impl']} | {r['dtype']} | {r['shape']} | {res} |")
        elif r.get("part") == "ptxas" and r.get("registers") is not None:
            lines.append(f"| ptxas | {r['kernel']} | {r['arch']} | | | {r['registers']} registers, "
                         f"{r['spill_stores']} B spill stores |")
    text = "\n".join(lines) + "\n"
    sys.stderr.write(text)
    if OUT:
        with open(os.path.join(OUT, "summary.md"), "w") as f:
            f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--targets", default="cuda,vulkan", help="device targets compared with the CPU")
    ap.add_argument("--parts", default="correctness,ptxas,bench")
    ap.add_argument("--bench-target", default="cuda")
    ap.add_argument("--arch", default="sm_90", help="comma list for the ptxas part")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="small benchmark shapes (to test this script)")
    ap.add_argument("--extents", default=",".join(map(str, EXTENTS)), help="correctness: matrix extents")
    args = ap.parse_args()
    args.targets = [t for t in args.targets.split(",") if t]
    args.arch = args.arch.split(",")
    args.extents = [int(n) for n in args.extents.split(",")]
    tilec = Tilec(args.tilec)
    emit(dict(part="info", tilec=args.tilec, targets=args.targets, parts=args.parts, time=time.strftime("%Y-%m-%dT%H:%M:%S")))
    ok = True
    parts = args.parts.split(",")
    if "correctness" in parts:
        ok &= correctness(tilec, args)
    if "ptxas" in parts:
        ok &= ptxas(tilec, args)
    if "bench" in parts:
        ok &= bench(tilec, args)
    summary()
    emit(dict(part="done", ok=bool(ok)))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
