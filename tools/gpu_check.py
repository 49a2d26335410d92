#!/usr/bin/env python3
"""The GPU check: tilec's kernels on an NVIDIA GPU (CUDA) and on Vulkan, against the CPU target
and float64 references, and the GPU benchmark against PyTorch (cuSOLVER, cuBLAS) and Triton.

Run through tools/gpu-check.sh (which records the device facts first and finds the tilec
binary). Every result is one JSON line with a timestamp, flushed as it is made, on stdout and in
$OUT/gpu-check.jsonl when OUT is set; $OUT/summary.md is rewritten after each part, so that a
call cut short keeps what it did. Exit status 1 if any comparison failed, a required target was
missing, or the deadline left a part unfinished.

Parts, in this order (the most important first; select with --parts, default all):
  smoke        potrf_batched 4096x92x92 f32 on the --bench-target against a float64 reference
               (every matrix), and torch.linalg.cholesky_ex on the same input.
  python       CUDA tensors from Python: tools/gpu_torch_check.py in its own process
               (potrf_batched on torch and CuPy CUDA tensors, in place, no host round trip).
  bench        potrf_batched 4096x92x92, 4096x32x32 and 1024x64x64, f32 and f64, 4096x16x16 f32; trsm and potrs
               4096x92x92; gemm 4096^3 f32 and f64. tilec: `tilec run --target T --repeat N`
               (its printed median of N timed launches after one untimed one). Peers, where they
               import: torch.linalg.cholesky (cuSOLVER batched), torch.linalg.solve_triangular,
               torch.cholesky_solve, torch.matmul with TF32 off, and Triton's tutorial matmul;
               CUDA-event medians of N runs after warm-up. Each result is checked against float64
               NumPy on the first 32 matrices (gemm: on 64 sampled rows). Without a CUDA device
               (--peer-device cpu, the default then), the peers run on CPU tensors and Triton
               in its interpreter (TRITON_INTERPRET=1), so that their code is exercised anywhere.
  correctness  every stdlib kernel and every example, f32 and f64, extents 1, 17, 77, 92 and 131,
               on each --targets target (default cuda,vulkan) against the CPU target and against
               a float64 NumPy reference (max|x - ref| / max(max|ref|, 1) per case), --jobs cases
               at a time. A kernel without a case fails the part.
  ptxas        registers and spills of every stdlib and example instance (tilec build --report).
  profile      `ncu --clock-control none` of potrf_batched 4096x92x92 f32 and `compute-sanitizer
               --tool racecheck` of a small potrf_batched, each to a text file in $OUT.

Every subprocess runs under a timeout (--timeout, and never past the deadline by more than it);
once --deadline seconds have passed since --started (default: this script's start), no new
work starts: what is left is recorded as skipped.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STDLIB = os.path.join(ROOT, "stdlib", "linalg.tile")
EXAMPLES = os.path.join(ROOT, "examples")
OUT = os.environ.get("OUT")
RECORDS = []
LOCK = threading.Lock()
STARTED = time.time()


def emit(rec):
    """Records `rec` with its time (ISO and seconds since the start), flushed at once."""
    rec = dict(rec, time=time.strftime("%Y-%m-%dT%H:%M:%S"), t=round(time.time() - STARTED, 2))
    line = json.dumps(rec)
    with LOCK:
        RECORDS.append(rec)
        print(line, flush=True)
        if OUT:
            with open(os.path.join(OUT, "gpu-check.jsonl"), "a") as f:
                f.write(line + "\n")


class Deadline:
    """When new work stops starting, and how long a subprocess may run."""

    def __init__(self, started, seconds, timeout):
        self.end = started + seconds
        self.timeout = timeout

    def passed(self):
        return time.time() >= self.end

    def limit(self):
        """A subprocess's timeout (s): --timeout, cut to the time left plus a grace of 10 s."""
        return max(1.0, min(self.timeout, self.end - time.time() + 10.0))


DEADLINE = Deadline(time.time(), 1e9, 600.0)


def run_cmd(cmd, **kw):
    """subprocess.run under the deadline's timeout, in a process group of its own: a timeout
    kills the whole group (a profiler and the tilec it started) and raises RuntimeError."""
    limit = DEADLINE.limit()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                          **kw) as p:
        try:
            out, err = p.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.communicate()
            raise RuntimeError(f"timed out after {limit:.0f} s: {' '.join(map(str, cmd))[:300]}")
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


class Tilec:
    """Runs the tilec command line on NumPy arrays through temporary .npy files."""

    def __init__(self, path):
        self.path = path

    def run(self, src, kernel, arrays, scalars, outs, target="cpu", repeat=1, generics=()):
        """Returns (outputs by name, the timing line, median ms); raises RuntimeError with
        tilec's message on failure or timeout."""
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
            p = run_cmd(cmd)
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


def pack(a, w):
    """The stack ``a`` (B, M, N), B a multiple of ``w``, in the compact layout (B / w, M, N, w)."""
    b, m, n = a.shape
    return np.ascontiguousarray(a.reshape(b // w, w, m, n).transpose(0, 2, 3, 1))


# The compact kernels iterate about N^3 / 6 (potrf) or N^3 / 24 + 2.5 N^2 (geqrf) times per
# program: lavapipe stops a shader's loops after about 65,000 iterations (docs/language.md
# §16), so they run up to these orders.
COMPACT_MAX = 64
COMPACT_QR_MAX = 32


def case_potrf_compact(rng, dt, n):
    n = min(n, COMPACT_MAX)
    a = spd(rng, 8, n).astype(dt)
    a64 = a.astype(np.float64)
    # The factor below the diagonal, the input's upper triangle left as it was.
    ref = np.tril(np.linalg.cholesky(a64)) + np.triu(a64, 1)
    return dict(src=STDLIB, kernel="potrf_compact_batched", arrays={"A": pack(a, 8)}, scalars={"eps": "1e-9"},
                out="A", ref=pack(ref, 8))


def case_getrf_compact(rng, dt, n):
    # About N^3 / 3 iterations in the update: N = 64 would pass lavapipe's loop limit.
    n = min(n, COMPACT_QR_MAX)
    a = rng.uniform(-1, 1, (8, n, n)).astype(dt)
    ref, _ = getf2(a)
    return dict(src=STDLIB, kernel="getrf_compact_batched", scalars={}, out="A", ref=pack(ref, 8),
                arrays={"A": pack(a, 8), "ipiv": np.full((1, n, 8), -1, np.int32),
                        "info": np.full((1, 8), -1, np.int32)})


def case_getrs_compact(rng, dt, n):
    c = case_getrs(rng, dt, min(n, COMPACT_QR_MAX), batch=8)
    piv = c["arrays"]["ipiv"]
    return dict(c, kernel="getrs_compact_batched", ref=pack(c["ref"], 8),
                arrays={"LU": pack(c["arrays"]["LU"], 8), "X": pack(c["arrays"]["X"], 8),
                        "ipiv": np.ascontiguousarray(piv.reshape(1, 8, -1).transpose(0, 2, 1))})


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


def getf2(a):
    """LU with partial pivoting of each matrix of the f64 stack ``a`` with getrf_batched's
    pivots (the first largest |u[i, k]|, division by the pivot, the update a product then a
    difference, which the kernel fuses): the factors and the 0-based pivot rows."""
    lu, piv = a.astype(np.float64).copy(), np.zeros(a.shape[:2], np.int32)
    n = a.shape[1]
    for u, p in zip(lu, piv):
        for k in range(n):
            p[k] = k + int(np.argmax(np.abs(u[k:, k])))
            u[[k, p[k]]] = u[[p[k], k]]
            if u[k, k] != 0:
                u[k + 1:, k] /= u[k, k]
                u[k + 1:, k + 1:] -= np.outer(u[k + 1:, k], u[k, k + 1:])
    return lu, piv


def case_getrf(rng, dt, n):
    n = min(n, 64)
    a = rng.uniform(-1, 1, (3, n, n)).astype(dt)
    ref, _ = getf2(a)
    return dict(src=STDLIB, kernel="getrf_batched", scalars={}, out="A", ref=ref,
                arrays={"A": a, "ipiv": np.full((3, n), -1, np.int32), "info": np.full(3, -1, np.int32)})


def case_getrs(rng, dt, n, batch=3):
    n = min(n, 64)
    lu, piv = getf2(rng.uniform(-1, 1, (batch, n, n)).astype(dt))
    lu = lu.astype(dt)
    x = rng.uniform(-1, 1, (batch, n, 2)).astype(dt)
    # The solve with the factors as the kernel gets them (rounded to dt), in f64.
    a = np.empty((batch, n, n))
    for i in range(batch):
        l, u = np.tril(lu[i].astype(np.float64), -1) + np.eye(n), np.triu(lu[i].astype(np.float64))
        pa = l @ u
        for k in reversed(range(n)):
            pa[[k, piv[i, k]]] = pa[[piv[i, k], k]]
        a[i] = pa
    ref = np.linalg.solve(a, x.astype(np.float64))
    return dict(src=STDLIB, kernel="getrs_batched", arrays={"LU": lu, "ipiv": piv, "X": x}, scalars={}, out="X",
                ref=ref)


def geqr2(a):
    """Householder QR of each matrix of the f64 stack ``a`` as geqrf_batched computes it
    (larfg's reflectors): the factors in LAPACK's layout and the taus."""
    f = a.astype(np.float64).copy()
    m, n = a.shape[1:]
    taus = np.zeros((a.shape[0], min(m, n)))
    for u, t in zip(f, taus):
        for k in range(min(m, n)):
            alpha, x = u[k, k], u[k + 1:, k].copy()
            sigma = x @ x
            if sigma == 0:
                continue
            beta = -np.copysign(np.sqrt(alpha * alpha + sigma), alpha)
            v = np.concatenate([[1.0], x / (alpha - beta)])
            t[k] = (beta - alpha) / beta
            u[k:, k:] -= np.outer(v, t[k] * (v @ u[k:, k:]))
            u[k + 1:, k] = v[1:]
    return f, taus


def case_geqrf(rng, dt, n):
    m, k = min(n, 64), min(n, 40)
    a = rng.uniform(-1, 1, (3, m, k)).astype(dt)
    ref, _ = geqr2(a)
    return dict(src=STDLIB, kernel="geqrf_batched", arrays={"A": a, "tau": np.zeros((3, min(m, k)), dt)},
                scalars={}, out="A", ref=ref)


def case_geqrf_compact(rng, dt, n):
    m = k = min(n, COMPACT_QR_MAX)
    a = rng.uniform(-1, 1, (8, m, k)).astype(dt)
    ref, _ = geqr2(a)
    return dict(src=STDLIB, kernel="geqrf_compact_batched",
                arrays={"A": pack(a, 8), "tau": np.zeros((1, min(m, k), 8), dt)}, scalars={}, out="A",
                ref=pack(ref, 8))


def case_orgqr(rng, dt, n):
    m, k = min(n, 64), min(n, 40)
    f, taus = geqr2(rng.uniform(-1, 1, (3, m, k)).astype(dt))
    f, taus = f.astype(dt), taus.astype(dt)
    ref = np.empty((3, m, k))
    for i in range(3):  # Q = H_0 .. H_{k-1} applied to the identity's first k columns
        q = np.eye(m)[:, :k]
        for j in reversed(range(k)):
            v = np.concatenate([np.zeros(j), [1.0], f[i, j + 1:, j].astype(np.float64)])
            q = q - np.outer(v, float(taus[i, j]) * (v @ q))
        ref[i] = q
    return dict(src=STDLIB, kernel="orgqr_batched", arrays={"A": f, "tau": taus}, scalars={}, out="A", ref=ref)


def case_gels(rng, dt, n):
    m, k = min(n, 64), min(n, 40)
    a = rng.uniform(-1, 1, (3, m, k)).astype(dt)
    x = rng.uniform(-1, 1, (3, m, 2)).astype(dt)
    f, taus = geqr2(a)
    ref = x.astype(np.float64).copy()
    for i in range(3):  # Q^T x, then R's solve on its first k rows (the rest stays: LAPACK's layout)
        for j in range(k):
            v = np.concatenate([np.zeros(j), [1.0], f[i, j + 1:, j]])
            ref[i] -= np.outer(v, taus[i, j] * (v @ ref[i]))
        ref[i, :k] = np.linalg.solve(np.triu(f[i, :k, :k]), ref[i, :k])
    return dict(src=STDLIB, kernel="gels_batched", scalars={}, out="X", ref=ref,
                arrays={"A": a, "X": x, "info": np.full(3, -2, np.int32)})



def case_syevj(rng, dt, n):
    n = min(n, 64)
    a = rng.uniform(-1, 1, (3, n, n))
    a = (a + a.transpose(0, 2, 1)).astype(dt)
    return dict(src=STDLIB, kernel="syevj_batched", out="W", ref=np.linalg.eigvalsh(a.astype(np.float64)),
                arrays={"A": a, "W": np.zeros((3, n), dt), "V": np.zeros((3, n, n), dt),
                        "info": np.full(3, -2, np.int32)},
                scalars={"tol": repr(float(np.finfo(dt).eps)), "max_sweeps": "100"})


def case_syev_compact(rng, dt, n):
    # About N^3 / 3 + 2 N^3 / 3 loop iterations in the reduction and Q, then about 1.5 N^3 in
    # the QL sweeps: within lavapipe's loop limit up to N = 24 (docs/language.md §16).
    return eig_compact(rng, dt, min(n, 24), "syev_compact_batched", {})


def case_syevj_compact(rng, dt, n):
    # About 6 N^3 loop iterations for 10 sweeps: within lavapipe's limit up to N = 16.
    return eig_compact(rng, dt, min(n, 16), "syevj_compact_batched", {"max_sweeps": "100"})


def eig_compact(rng, dt, n, kernel, scalars):
    """A compact eigensolver's case: 8 random symmetric matrices of order ``n`` in one pack,
    their eigenvalues against NumPy's in float64."""
    a = rng.uniform(-1, 1, (8, n, n))
    a = (a + a.transpose(0, 2, 1)).astype(dt)
    ref = np.linalg.eigvalsh(a.astype(np.float64)).reshape(1, 8, n).transpose(0, 2, 1)
    return dict(src=STDLIB, kernel=kernel, out="E", ref=ref,
                arrays={"A": pack(a, 8), "E": np.zeros((1, n, 8), dt), "V": np.zeros((1, n, n, 8), dt),
                        "info": np.full((1, 8), -2, np.int32)},
                scalars={"tol": repr(float(np.finfo(dt).eps)), **scalars})


def case_gesvj_compact(rng, dt, n):
    # About N^3 loop iterations a sweep: within lavapipe's limit up to N = 16, as syevj's.
    n = min(n, 16)
    return svd_compact(dt, rng.uniform(-1, 1, (8, n, n)).astype(dt), 8, "gesvj_compact_batched", {},
                       {"tol": repr(float(np.sqrt(n) * np.finfo(dt).eps)), "max_sweeps": "30"})


def case_gesvd_compact(rng, dt, n):
    # About 4 N^3 / 3 loop iterations in the bidiagonalization, 2 N^3 / 3 in Q, then about
    # 3 N^3 in the QR sweeps (two matrices rotated): within lavapipe's loop limit up to N = 20.
    # Packs of 4: lavapipe compiles the W = 8 instance in minutes, W = 4 in about 40 s.
    n = min(n, 20)
    return svd_compact(dt, rng.uniform(-1, 1, (8, n, n)).astype(dt), 4, "gesvd_compact_batched",
                       {"E": np.zeros((2, n, 4), dt)}, {"tol": repr(float(np.finfo(dt).eps))})


def svd_compact(dt, a, w, kernel, arrays, scalars):
    """A compact SVD's case: the stack ``a`` of square matrices packed ``w`` at a time, its
    singular values against NumPy's in float64; ``arrays`` and ``scalars`` the kernel's own."""
    b, n, _ = a.shape
    ref = np.linalg.svd(a.astype(np.float64), compute_uv=False).reshape(b // w, w, n).transpose(0, 2, 1)
    return dict(src=STDLIB, kernel=kernel, out="S", ref=ref,
                arrays={"A": pack(a, w), "S": np.zeros((b // w, n, w), dt), "V": np.zeros((b // w, n, n, w), dt),
                        "info": np.full((b // w, w), -2, np.int32), **arrays},
                scalars=scalars)


def case_gesvj(rng, dt, n):
    m, k = min(n, 64), min(n, 40)
    a = rng.uniform(-1, 1, (3, m, k)).astype(dt)
    return dict(src=STDLIB, kernel="gesvj_batched", out="S",
                ref=np.linalg.svd(a.astype(np.float64), compute_uv=False),
                arrays={"A": a, "S": np.zeros((3, k), dt), "V": np.zeros((3, k, k), dt),
                        "info": np.full(3, -2, np.int32)},
                scalars={"tol": repr(float(np.sqrt(m) * np.finfo(dt).eps)), "max_sweeps": "30"})

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


def case_ex_residual(rng, dt, n):
    a = spd(rng, 3, n).astype(dt)
    l = rng.uniform(-1, 1, (3, n, n)).astype(dt)
    a64, l64 = a.astype(np.float64), np.tril(l.astype(np.float64))
    r = max(np.abs(a64[b] - l64[b] @ l64[b].T).max() / np.abs(a64[b]).max() for b in range(3))
    return dict(src=example("cholesky.tile"), kernel="residual", arrays={"A": a, "L": l, "R": np.zeros(1, dt)},
                scalars={}, out="R", ref=np.array([r]))


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


def case_ex_attention(rng, dt, n):
    n = min(n, 32)
    q, k, v = (rng.uniform(-1, 1, (3, n, 16)).astype(dt) for _ in range(3))
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    s = q64 @ k64.transpose(0, 2, 1) * 0.25
    s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    e = np.exp(s - s.max(2, keepdims=True))
    ref = e / e.sum(2, keepdims=True) @ v64
    return dict(src=example("attention.tile"), kernel="attention",
                arrays={"Q": q, "K": k, "V": v, "O": np.zeros_like(q)}, scalars={"scale": "0.25", "causal": "1"},
                out="O", ref=ref)


def case_ex_causal_softmax(rng, dt, n):
    n = min(n, 32)
    s = rng.uniform(-4, 4, (3, n, n)).astype(dt)
    x = np.where(np.tril(np.ones((n, n), bool)), s.astype(np.float64), -np.inf)
    e = np.exp(x - x.max(2, keepdims=True))
    return dict(src=example("causal_softmax.tile"), kernel="causal_softmax", arrays={"S": s, "P": np.zeros_like(s)},
                scalars={}, out="P", ref=e / e.sum(2, keepdims=True))


def case_ex_layer_norm64(rng, dt, n):
    x = rng.uniform(-1, 1, (n, 64)).astype(dt)
    g, bt = rng.uniform(-1, 1, 64).astype(dt), rng.uniform(-1, 1, 64).astype(dt)
    x64 = x.astype(np.float64)
    d = x64 - x64.mean(1, keepdims=True)
    ref = d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5) * g.astype(np.float64) + bt.astype(np.float64)
    return dict(src=example("layer_norm.tile"), kernel="layer_norm64",
                arrays={"X": x, "G": g, "Bt": bt, "Y": np.zeros_like(x)}, scalars={"eps": "1e-5"}, out="Y", ref=ref)


def case_ex_lu_batched(rng, dt, n):
    n = min(n, 32)
    a = spd(rng, 3, n).astype(dt)
    a64 = a.astype(np.float64)
    ref = np.empty_like(a64)
    for i, m in enumerate(a64):  # Doolittle LU without pivoting, L's unit diagonal not stored
        u = m.copy()
        for k in range(n):
            u[k + 1:, k] /= u[k, k]
            u[k + 1:, k + 1:] -= np.outer(u[k + 1:, k], u[k, k + 1:])
        ref[i] = u
    return dict(src=example("lu.tile"), kernel="lu_batched", arrays={"A": a}, scalars={}, out="A", ref=ref)


def case_ex_getrf_batched(rng, dt, n):
    n = min(n, 32)
    a = rng.uniform(-1, 1, (3, n, n)).astype(dt)
    ref, _ = getf2(a)
    return dict(src=example("getrf.tile"), kernel="getrf_batched",
                arrays={"A": a, "P": np.full((3, n), -1, np.int32)}, scalars={}, out="A", ref=ref)


def case_ex_geqrf_batched(rng, dt, n):
    m, k = min(n, 32), min(n, 23)
    a = rng.uniform(-1, 1, (3, m, k)).astype(dt)
    ref, _ = geqr2(a)
    return dict(src=example("geqrf.tile"), kernel="geqrf_batched",
                arrays={"A": a, "Tau": np.zeros((3, min(m, k)), dt)}, scalars={}, out="A", ref=ref)


def case_ex_rms_norm_fwd(rng, dt, n):
    x, w = rng.uniform(-1, 1, (n, 200)).astype(dt), rng.uniform(-1, 1, 200).astype(dt)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 * x64).mean(1, keepdims=True) + 1e-6) * w.astype(np.float64)
    return dict(src=example("rms_norm.tile"), kernel="rms_norm_fwd",
                arrays={"X": x, "W": w, "Y": np.zeros_like(x), "Rstd": np.zeros(n, dt)},
                scalars={"eps": "1e-6"}, out="Y", ref=ref)


def case_ex_rms_norm_bwd(rng, dt, n):
    x, dy = rng.uniform(-1, 1, (n, 200)).astype(dt), rng.uniform(-1, 1, (n, 200)).astype(dt)
    w, rs = rng.uniform(-1, 1, 200).astype(dt), rng.uniform(1, 3, n).astype(dt)
    x64, g, r = x.astype(np.float64), dy.astype(np.float64) * w.astype(np.float64), rs.astype(np.float64)[:, None]
    ref = r * g - x64 * (r ** 3 / 200 * (g * x64).sum(1, keepdims=True))
    return dict(src=example("rms_norm.tile"), kernel="rms_norm_bwd",
                arrays={"X": x, "DY": dy, "W": w, "Rstd": rs, "DX": np.zeros_like(x), "DW": np.zeros(200, dt)},
                scalars={}, out="DX", ref=ref)


def case_ex_swiglu_fwd(rng, dt, n):
    a, b = rng.uniform(-4, 4, (n, 200)).astype(dt), rng.uniform(-1, 1, (n, 200)).astype(dt)
    a64 = a.astype(np.float64)
    ref = a64 / (1 + np.exp(-a64)) * b.astype(np.float64)
    return dict(src=example("swiglu.tile"), kernel="swiglu_fwd",
                arrays={"A": a, "B": b, "C": np.zeros_like(a)}, scalars={}, out="C", ref=ref)


def case_ex_swiglu_bwd(rng, dt, n):
    dc, a, b = (rng.uniform(-4, 4, (n, 200)).astype(dt) for _ in range(3))
    a64, s = a.astype(np.float64), 1 / (1 + np.exp(-a.astype(np.float64)))
    ref = dc.astype(np.float64) * b.astype(np.float64) * s * (1 + a64 * (1 - s))
    return dict(src=example("swiglu.tile"), kernel="swiglu_bwd",
                arrays={"DC": dc, "A": a, "B": b}, scalars={}, out="A", ref=ref)


def case_ex_dropout(rng, dt, n):
    x, r = rng.uniform(-1, 1, n * 40).astype(dt), rng.uniform(0, 1, n * 40).astype(dt)
    ref = np.where(r > dt(0.25), x.astype(np.float64) / 0.75, 0.0)
    return dict(src=example("dropout.tile"), kernel="dropout",
                arrays={"X": x, "R": r, "Y": np.zeros_like(x)}, scalars={"p": "0.25"}, out="Y", ref=ref)


def case_ex_softmax_rows(rng, dt, n):
    x = (rng.standard_normal((n, 200)) * 5 - 100 * (np.arange(n) % 3)[:, None]).astype(dt)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    return dict(src=example("softmax_rows.tile"), kernel="softmax_rows",
                arrays={"X": x, "Y": np.zeros_like(x)}, scalars={}, out="Y", ref=e / e.sum(1, keepdims=True))


def case_ex_suffix_sums(rng, dt, n):
    x = rng.standard_normal((n, 300)).astype(dt)
    ref = np.flip(np.cumsum(np.flip(x.astype(np.float64), 1), 1), 1)
    return dict(src=example("suffix_sums.tile"), kernel="suffix_sums",
                arrays={"X": x, "Y": np.zeros_like(x)}, scalars={}, out="Y", ref=ref)


def case_ex_embedding_fwd(rng, dt, n):
    w = rng.uniform(-1, 1, (50, 48)).astype(dt)
    ids = rng.integers(-2, 52, 3 * n).astype(np.int32)
    ok = (ids >= 0) & (ids < 50)
    ref = np.where(ok[:, None], w.astype(np.float64)[np.clip(ids, 0, 49)], 0.0)
    return dict(src=example("embedding.tile"), kernel="embedding_fwd",
                arrays={"W": w, "Ids": ids, "Y": np.zeros((3 * n, 48), dt)}, scalars={}, out="Y", ref=ref)


def case_ex_embedding_bwd(rng, dt, n):
    dy = rng.uniform(-1, 1, (3 * n, 48)).astype(dt)
    ids = rng.integers(-2, 22, 3 * n).astype(np.int32)
    ok = (ids >= 0) & (ids < 20)
    ref = np.zeros((20, 48))
    np.add.at(ref, ids[ok], dy.astype(np.float64)[ok])
    return dict(src=example("embedding.tile"), kernel="embedding_bwd",
                arrays={"DY": dy, "Ids": ids, "DW": np.zeros((20, 48), dt)}, scalars={}, out="DW", ref=ref)


def case_ex_compact(rng, dt, n):
    x = rng.uniform(-1, 1, 40 * n).astype(dt)
    return dict(src=example("compact.tile"), kernel="compact",
                arrays={"X": x, "Y": np.zeros_like(x), "Count": np.zeros(1, np.int32)}, scalars={"t": "0.25"},
                out="Y", ref=x[x > dt(0.25)].astype(np.float64), mask="sorted")


def bf16_round(x):
    """The bits (uint16) of the bfloat16 values nearest to float32 `x`, ties to even."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    """The float32 values of bfloat16 bits (uint16)."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def case_ex_residual_f16(rng, dt, n):
    # f16 arrays whatever dt is: NumPy's float16 rounds each operation, as the kernel does.
    x, f = (rng.uniform(-4, 4, (n, 300)).astype(np.float16) for _ in range(2))
    ref = (x + np.float16(0.3) * f).astype(np.float64)
    return dict(src=example("half_precision.tile"), kernel="residual_f16",
                arrays={"X": x, "F": f, "Y": np.zeros_like(x)}, scalars={"gamma": "0.3"}, out="Y", ref=ref)


def case_ex_sgd_momentum_bf16(rng, dt, n):
    # bf16 arrays (`|V2`, the bits) whatever dt is; the reference rounds each operation.
    p, g, v = (bf16_round(rng.uniform(-1, 1, 40 * n)) for _ in range(3))
    lr, mu = bf16_value(bf16_round(np.float32(0.1))), bf16_value(bf16_round(np.float32(0.9)))
    vn = bf16_value(bf16_round(bf16_value(bf16_round(mu * bf16_value(v))) + bf16_value(g)))
    ref = bf16_value(bf16_round(bf16_value(p) - bf16_value(bf16_round(lr * vn)))).astype(np.float64)
    return dict(src=example("half_precision.tile"), kernel="sgd_momentum_bf16",
                arrays={"P": p.view("V2"), "G": g.view("V2"), "V": v.view("V2")},
                scalars={"lr": "0.1", "mu": "0.9"}, out="P", ref=ref)


def case_ex_topk(rng, dt, n):
    x = (np.round(rng.standard_normal((n, 30)) * 8) / 8).astype(dt)
    ref = -np.sort(-x.astype(np.float64), axis=1)[:, :8]
    return dict(src=example("topk.tile"), kernel="topk_rows",
                arrays={"X": x, "V": np.zeros((n, 8), dt), "I": np.zeros((n, 8), np.int32)}, scalars={}, out="V",
                ref=ref)


def case_ex_gemver_rank2(rng, dt, n):
    a, u1, v1, u2, v2 = rng.uniform(0, 1, (n, n)).astype(dt), *(rng.uniform(0, 1, n).astype(dt) for _ in range(4))
    a64, p1, q1, p2, q2 = (t.astype(np.float64) for t in (a, u1, v1, u2, v2))
    ref = a64 + np.outer(p1, q1) + np.outer(p2, q2)
    return dict(src=example("gemver.tile"), kernel="gemver_rank2",
                arrays={"A": a, "U1": u1, "V1": v1, "U2": u2, "V2": v2}, scalars={}, out="A", ref=ref)


def case_ex_gemver_atx_parts(rng, dt, n):
    a, y = rng.uniform(0, 1, (n, n)).astype(dt), rng.uniform(0, 1, n).astype(dt)
    g = 5
    band = -(-(-(-n // g)) // 4) * 4
    ya = y.astype(np.float64)[:, None] * a.astype(np.float64)
    ref = np.stack([ya[p * band:(p + 1) * band].sum(0) for p in range(g)])
    return dict(src=example("gemver.tile"), kernel="gemver_atx_parts",
                arrays={"A": a, "Y": y, "P": np.full((g, n), 7, dt)}, scalars={}, out="P", ref=ref)


def case_ex_gemver_atx(rng, dt, n):
    p, x, z = rng.uniform(0, 1, (5, n)).astype(dt), *(rng.uniform(0, 1, n).astype(dt) for _ in range(2))
    p64, x64, z64 = (t.astype(np.float64) for t in (p, x, z))
    return dict(src=example("gemver.tile"), kernel="gemver_atx", arrays={"P": p, "X": x, "Z": z},
                scalars={"beta": "1.25"}, out="X", ref=x64 + 1.25 * p64.sum(0) + z64)


def case_ex_gemver_ax(rng, dt, n):
    a, x, w = rng.uniform(0, 1, (n, n)).astype(dt), *(rng.uniform(0, 1, n).astype(dt) for _ in range(2))
    a64, x64, w64 = (t.astype(np.float64) for t in (a, x, w))
    return dict(src=example("gemver.tile"), kernel="gemver_ax", arrays={"A": a, "X": x, "W": w},
                scalars={"alpha": "1.5"}, out="W", ref=w64 + 1.5 * a64 @ x64)


def case_ex_syrk(rng, dt, n):
    c, a = rng.uniform(0, 1, (n, n)).astype(dt), rng.uniform(0, 1, (n, 37)).astype(dt)
    c64, a64 = c.astype(np.float64), a.astype(np.float64)
    ref = np.where(np.tril(np.ones((n, n), bool)), 1.5 * a64 @ a64.T - 0.75 * c64, c64)
    return dict(src=example("syrk.tile"), kernel="syrk", arrays={"C": c, "A": a},
                scalars={"alpha": "1.5", "beta": "-0.75"}, out="C", ref=ref)


def case_ex_mpm_stress(rng, dt, n):
    f = (np.eye(3) + 0.1 * rng.uniform(-1, 1, (n, 3, 3))).astype(dt)
    jp = (1 + 0.05 * rng.uniform(-1, 1, n)).astype(dt)
    mu0, la0, tc, ts, hard = 416.7, 277.8, 0.025, 0.0075, 10.0
    f64, j64 = f.astype(np.float64), jp.astype(np.float64)
    h = np.exp(hard * (1 - j64))
    u, s, vt = np.linalg.svd(f64)
    c = np.clip(s, 1 - tc, 1 + ts)
    fn, r, jj = u @ (c[:, :, None] * vt), u @ vt, np.prod(c, axis=1)
    tau = 2 * (mu0 * h)[:, None, None] * (fn - r) @ np.swapaxes(fn, 1, 2) \
        + (la0 * h * jj * (jj - 1))[:, None, None] * np.eye(3)
    # The stress is 2 mu times a difference of nearby matrices: scaled to its size.
    return dict(src=example("mpm_stress.tile"), kernel="mpm_stress",
                arrays={"F": f, "Jp": jp, "Tau": np.zeros_like(f)},
                scalars={"mu0": "416.7", "lambda0": "277.8", "theta_c": "0.025", "theta_s": "0.0075",
                         "hardening": "10"}, out="F", ref=fn)


def case_ex_kalman(rng, dt, n):
    x, z = rng.uniform(-1, 1, (n, 4)).astype(dt), rng.uniform(-1, 1, (n, 2)).astype(dt)
    a = rng.uniform(-1, 1, (n, 4, 4))
    c = (a @ np.swapaxes(a, 1, 2) / 4 + np.eye(4)).astype(dt)
    t, q, r = 0.1, 0.01, 0.5
    fm = np.array([[1, 0, t, 0], [0, 1, 0, t], [0, 0, 1, 0], [0, 0, 0, 1.0]])
    hm = np.array([[1, 0, 0, 0], [0, 1, 0, 0.0]])
    xp = x.astype(np.float64) @ fm.T
    cp = fm @ c.astype(np.float64) @ fm.T + q * np.eye(4)
    k = cp @ hm.T @ np.linalg.inv(hm @ cp @ hm.T + r * np.eye(2))
    ref = xp + np.einsum("pij,pj->pi", k, z.astype(np.float64) - xp @ hm.T)
    return dict(src=example("kalman.tile"), kernel="kalman_step", arrays={"X": x, "Cov": c, "Z": z},
                scalars={"dt": "0.1", "q": "0.01", "r": "0.5"}, out="X", ref=ref)


def case_ex_gauss_newton(rng, dt, n):
    j, res = rng.uniform(-1, 1, (n, 11, 6)).astype(dt), rng.uniform(-1, 1, (n, 11)).astype(dt)
    j64, r64 = j.astype(np.float64), res.astype(np.float64)
    a = np.swapaxes(j64, 1, 2) @ j64 + 1e-3 * np.eye(6)
    ref = -np.linalg.solve(a, np.einsum("pmi,pm->pi", j64, r64)[:, :, None])[:, :, 0]
    return dict(src=example("gauss_newton.tile"), kernel="gauss_newton",
                arrays={"J": j, "Res": res, "Delta": np.zeros((n, 6), dt)}, scalars={"lambda": "0.001"},
                out="Delta", ref=ref)


def case_ex_nbody(rng, dt, n):
    p, v = rng.uniform(-2, 2, (n, 3)).astype(dt), rng.uniform(-1, 1, (n, 3)).astype(dt)
    p64 = p.astype(np.float64)
    d = p64[None, :, :] - p64[:, None, :]
    w = (np.sum(d * d, -1) + dt(0.01).astype(np.float64)) ** -1.5
    vn = v.astype(np.float64) + dt(0.016).astype(np.float64) * 1.5 * np.sum(d * w[:, :, None], 1)
    return dict(src=example("nbody.tile"), kernel="nbody_step", arrays={"P": p, "V": v, "Q": np.zeros_like(p)},
                scalars={"dt": "0.016", "eps2": "0.01", "mass": "1.5"}, out="V", ref=vn)


def case_ex_block_cholesky(rng, dt, n):
    a = rng.uniform(-1, 1, (n, n))
    a = (a @ a.T + n * np.eye(n)).astype(dt)
    return dict(src=example("block_cholesky.tile"), kernel="block_cholesky",
                arrays={"A": a, "L": np.zeros_like(a)}, scalars={"n": str(n), "eps": "1e-30"}, out="L",
                ref=np.linalg.cholesky(a.astype(np.float64)), mask="tril")


def case_ex_block_cholesky_solve(rng, dt, n):
    a = rng.uniform(-1, 1, (n, n))
    a = a @ a.T + n * np.eye(n)
    b = rng.uniform(-1, 1, (n, 3)).astype(dt)
    lf = np.linalg.cholesky(a).astype(dt)
    return dict(src=example("block_cholesky.tile"), kernel="block_cholesky_solve",
                arrays={"L": lf, "B": b, "X": np.zeros_like(b)}, scalars={"n": str(n)}, out="X",
                ref=np.linalg.solve(lf.astype(np.float64) @ lf.astype(np.float64).T, b.astype(np.float64)))


def case_ex_walker(rng, dt, n):
    w = rng.uniform(-0.35, 0.35, (n, 8)).astype(dt)
    t = dt(0.25).astype(np.float64)
    ph = np.sin(5 * t + np.arange(8) * np.pi / 4)
    return dict(src=example("walker.tile"), kernel="walker_network", arrays={"W": w, "Act": np.zeros((n, 1), dt)},
                scalars={"t": "0.25"}, out="Act", ref=0.3 * np.tanh(w.astype(np.float64) @ ph)[:, None])


def fft_tables(dt, n1, n2):
    """examples/fft.tile's tables (fft_plan) for N = n1 n2 points, in float64 rounded to dt."""
    n = n1 * n2

    def w(j):
        a = -2 * np.pi * j / n
        return np.stack([np.cos(a), np.sin(a)]).astype(dt)

    k1, k2 = np.arange(n1), np.arange(n2)
    return {"F1": w(np.outer(k1, k1) % n1 * n2), "F2": w(np.outer(k2, k2) % n2 * n1), "Tw": w(np.outer(k1, k2))}


def case_ex_fft_plan(rng, dt, n):
    t = fft_tables(np.float64, 8, 16)
    return dict(src=example("fft.tile"), kernel="fft_plan",
                arrays={"F1": np.zeros((2, 8, 8), dt), "F2": np.zeros((2, 16, 16), dt), "Tw": np.zeros((2, 8, 16), dt)},
                scalars={}, out="Tw", ref=t["Tw"])


def case_ex_fft_rows(rng, dt, n):
    x = rng.uniform(-1, 1, (n, 2, 64)).astype(dt)
    x64 = x.astype(np.float64)
    y = np.fft.fft(x64[:, 0] + 1j * x64[:, 1])
    return dict(src=example("fft.tile"), kernel="fft_rows",
                arrays={"X": x.reshape(n, 2, 8, 8), **fft_tables(dt, 8, 8), "Y": np.zeros((n, 2, 8, 8), dt)},
                scalars={}, out="Y", ref=np.stack([y.real, y.imag], 1).reshape(n, 2, 8, 8))


def case_ex_fft_filter_rows(rng, dt, n):
    x, h = rng.uniform(-1, 1, (n, 2, 64)).astype(dt), rng.uniform(-1, 1, (n, 2, 64)).astype(dt)
    x64, h64 = x.astype(np.float64), h.astype(np.float64)
    y = np.fft.ifft(np.fft.fft(x64[:, 0] + 1j * x64[:, 1]) * (h64[:, 0] + 1j * h64[:, 1]))
    return dict(src=example("fft.tile"), kernel="fft_filter_rows",
                arrays={"X": x.reshape(n, 2, 8, 8), "H": h.reshape(n, 2, 8, 8), **fft_tables(dt, 8, 8),
                        "Y": np.zeros((n, 2, 8, 8), dt)},
                scalars={}, out="Y", ref=np.stack([y.real, y.imag], 1).reshape(n, 2, 8, 8))


def case_ex_mlp(rng, dt, n):
    width, height = 16, n // 16 + 2
    idx = rng.permutation(width * height)[:n].astype(np.int32)
    w, bs = (rng.uniform(-1, 1, (3, 32, 32)) / np.sqrt(32)).astype(dt), rng.uniform(-0.2, 0.2, (3, 32)).astype(dt)
    w3, b3 = (rng.uniform(-1, 1, (3, 32)) / np.sqrt(32)).astype(dt), rng.uniform(0, 0.2, 3).astype(dt)
    ref_img = rng.uniform(0, 1, (3, width * height)).astype(dt)
    x, y = ((idx // width) / width - 0.5) * 2, ((idx % width) / height - 0.5) * 2
    f = np.zeros((32, n))
    for s in range(8):
        c = 2.0 ** s * np.pi
        f[4 * s:4 * s + 4] = np.sin(x * c), np.cos(x * c), np.sin(y * c), np.cos(y * c)
    z = f
    for l in range(3):
        z = np.maximum(w[l].astype(np.float64) @ z + bs[l].astype(np.float64)[:, None], 0)
    out = ref_img.astype(np.float64)
    out[:, idx] = np.maximum(w3.astype(np.float64) @ z + b3.astype(np.float64)[:, None], 0)
    return dict(src=example("mlp.tile"), kernel="mlp_image",
                arrays={"Idx": idx, "W": w, "Bs": bs, "W3": w3, "B3": b3, "Ref": ref_img, "Out": ref_img.copy(),
                        "Loss": np.zeros(1, dt)},
                scalars={"width": str(width), "height": str(height)}, out="Out", ref=out)


CASES = [("potrf_batched", case_potrf)]
for _side in ("left", "right"):
    for _lower in (True, False):
        for _trans in (False, True):
            CASES.append((f"trsm_{_side}_{'lower' if _lower else 'upper'}{'_t' if _trans else ''}_batched",
                          case_trsm(_side, _lower, _trans)))
CASES += [("potrs_batched", case_potrs), ("getrf_batched", case_getrf), ("getrs_batched", case_getrs),
          ("getrf_compact_batched", case_getrf_compact), ("getrs_compact_batched", case_getrs_compact),
          ("geqrf_batched", case_geqrf), ("orgqr_batched", case_orgqr), ("gels_batched", case_gels),
          ("potrf_compact_batched", case_potrf_compact), ("geqrf_compact_batched", case_geqrf_compact),
          ("syevj_batched", case_syevj), ("syevj_compact_batched", case_syevj_compact),
          ("syev_compact_batched", case_syev_compact),
          ("gesvj_batched", case_gesvj), ("gesvj_compact_batched", case_gesvj_compact),
          ("gesvd_compact_batched", case_gesvd_compact),
          ("gemm", case_gemm), ("gemm_batched", case_gemm_batched),
          ("row_sum", case_row_sum), ("examples/cholesky", case_ex_cholesky), ("examples/residual", case_ex_residual),
          ("examples/colsum", case_ex_colsum),
          ("examples/matmul16", case_ex_matmul16), ("examples/matmul16_batched", case_ex_matmul16_batched),
          ("examples/spd_solve16", case_ex_spd_solve16), ("examples/softmax64", case_ex_softmax64),
          ("examples/whiten16", case_ex_whiten16), ("examples/attention", case_ex_attention),
          ("examples/causal_softmax", case_ex_causal_softmax), ("examples/layer_norm64", case_ex_layer_norm64),
          ("examples/lu_batched", case_ex_lu_batched), ("examples/getrf_batched", case_ex_getrf_batched),
          ("examples/geqrf_batched", case_ex_geqrf_batched), ("examples/rms_norm_fwd", case_ex_rms_norm_fwd),
          ("examples/rms_norm_bwd", case_ex_rms_norm_bwd), ("examples/swiglu_fwd", case_ex_swiglu_fwd),
          ("examples/swiglu_bwd", case_ex_swiglu_bwd), ("examples/dropout", case_ex_dropout),
          ("examples/softmax_rows", case_ex_softmax_rows),
          ("examples/suffix_sums", case_ex_suffix_sums), ("examples/topk_rows", case_ex_topk),
          ("examples/compact", case_ex_compact), ("examples/embedding_fwd", case_ex_embedding_fwd), ("examples/embedding_bwd", case_ex_embedding_bwd),
          ("examples/gemver_rank2", case_ex_gemver_rank2),
          ("examples/gemver_atx_parts", case_ex_gemver_atx_parts), ("examples/gemver_atx", case_ex_gemver_atx),
          ("examples/gemver_ax", case_ex_gemver_ax),
          ("examples/syrk", case_ex_syrk), ("examples/residual_f16", case_ex_residual_f16),
          ("examples/sgd_momentum_bf16", case_ex_sgd_momentum_bf16), ("examples/mpm_stress", case_ex_mpm_stress),
          ("examples/kalman_step", case_ex_kalman), ("examples/gauss_newton", case_ex_gauss_newton),
          ("examples/nbody_step", case_ex_nbody), ("examples/mlp_image", case_ex_mlp),
          ("examples/walker_network", case_ex_walker), ("examples/block_cholesky", case_ex_block_cholesky),
          ("examples/block_cholesky_solve", case_ex_block_cholesky_solve), ("examples/fft_plan", case_ex_fft_plan),
          ("examples/fft_rows", case_ex_fft_rows), ("examples/fft_filter_rows", case_ex_fft_filter_rows)]
EXTENTS = [1, 17, 77, 92, 131]
TOL = {"f32": 2e-4, "f64": 1e-10}


def as_f64(x):
    """An output as float64: bfloat16 outputs (`|V2`) through their bits."""
    x = np.asarray(x)
    return bf16_value(x.view(np.uint16)).astype(np.float64) if x.dtype.kind == "V" else x.astype(np.float64)


def rel(x, ref, mask=None):
    x = as_f64(x)
    if mask == "tril":
        x, ref = np.tril(x), np.tril(ref)
    if mask == "sorted":
        # Blocks land in the order programs reach a counter (examples/compact.tile): the
        # first len(ref) elements as a set.
        x, ref = np.sort(x[:len(ref)]), np.sort(ref)
    d = np.abs(x - ref).max() if x.size else 0.0
    return float(d / max(np.abs(ref).max() if ref.size else 0.0, 1.0))




def kernels_in(path):
    """The kernel names a .tile file declares."""
    with open(path) as f:
        return re.findall(r"^\s*kernel\s+(\w+)", f.read(), re.M)


def uncovered():
    """Kernels of the stdlib and the examples that have no correctness case."""
    have = {name for name, _ in CASES}
    want = list(kernels_in(STDLIB))
    for f in sorted(os.listdir(EXAMPLES)):
        if f.endswith(".tile"):
            want += [f"examples/{k}" for k in kernels_in(os.path.join(EXAMPLES, f))]
    return [k for k in want if k not in have]


def correctness(tilec, args):
    ok = True
    missing = uncovered()
    if missing:
        emit(dict(part="correctness", case="coverage", ok=False, error=f"kernels without a case: {', '.join(missing)}"))
        ok = False
    jobs = [(dtn, dt, name, make, n) for dtn, dt in (("f32", np.float32), ("f64", np.float64))
            for name, make in CASES for n in args.extents]

    def one(job):
        dtn, dt, name, make, n = job
        if DEADLINE.passed():
            return None
        rng = np.random.default_rng(zlib.crc32(f"{name} {dtn} {n}".encode()))
        c = make(rng, dt, n)
        base = dict(part="correctness", case=name, dtype=dtn, n=n)
        try:
            cpu, _, _ = tilec.run(c["src"], c["kernel"], c["arrays"], c["scalars"], [c["out"]], "cpu")
            cpu = cpu[c["out"]]
        except RuntimeError as e:
            emit(dict(base, target="cpu", ok=False, error=str(e)))
            return False
        err = rel(cpu, c["ref"], c.get("mask"))
        good = err <= TOL[dtn]
        emit(dict(base, target="cpu", ok=good, err_vs_ref=err))
        for target in args.targets:
            try:
                got, line, _ = tilec.run(c["src"], c["kernel"], c["arrays"], c["scalars"], [c["out"]], target)
            except RuntimeError as e:
                emit(dict(base, target=target, ok=False, error=str(e)))
                good = False
                continue
            got = got[c["out"]]
            e_ref = rel(got, c["ref"], c.get("mask"))
            e_cpu = rel(got, as_f64(cpu), c.get("mask"))
            g = e_ref <= TOL[dtn] and e_cpu <= TOL[dtn]
            good &= g
            emit(dict(base, target=target, ok=g, err_vs_ref=e_ref, err_vs_cpu=e_cpu, device=line))
        return good

    def guarded(job):
        try:
            return one(job)
        except Exception as e:  # a broken case is that case's failure, not the part's end
            emit(dict(part="correctness", case=job[2], dtype=job[0], n=job[4], target="cpu", ok=False,
                      error=f"{type(e).__name__}: {e}"[:800]))
            return False

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(guarded, jobs))
    skipped = sum(r is None for r in results)
    if skipped:
        emit(dict(part="correctness", case="deadline", ok=False, error=f"{skipped} of {len(jobs)} cases not started"))
    return ok and all(r is not False for r in results) and not skipped


def ptxas(tilec, args):
    ok = True
    for src in [STDLIB] + sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".tile")):
        for arch in args.arch:
            what = dict(part="ptxas", file=os.path.relpath(src, ROOT), arch=arch)
            if DEADLINE.passed():
                emit(dict(what, ok=False, error="not started: deadline"))
                return False
            try:
                p = run_cmd([tilec.path, "build", src, "--target", "ptx", "--arch", arch, "--report"])
            except RuntimeError as e:
                emit(dict(what, ok=False, error=str(e)))
                ok = False
                continue
            if p.returncode != 0:
                emit(dict(what, ok=False, error=p.stderr.strip()[-800:]))
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
# Peers.
# ---------------------------------------------------------------------------------------------


class Peers:
    """PyTorch (and Triton) on the peer device: CUDA-event medians on a GPU; on the CPU (no CUDA
    device, or --peer-device cpu) wall-clock medians, and Triton in its interpreter, so that the
    peers' code runs wherever torch imports. `error` says why there are none."""

    def __init__(self, device):
        self.torch, self.device, self.error = None, None, None
        try:
            import torch
        except Exception as e:
            self.error = f"torch does not import: {type(e).__name__}: {e}"[:300]
            return
        cuda = torch.cuda.is_available()
        if device == "cuda" and not cuda:
            self.error = "torch has no CUDA device"
            return
        self.device = "cuda" if device in ("cuda", "auto") and cuda else "cpu"
        if self.device == "cpu":
            # Read when Triton is imported (lazily, by triton_matmul): its interpreter runs
            # the kernels on CPU tensors.
            os.environ["TRITON_INTERPRET"] = "1"
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        self.torch = torch

    def tensor(self, a):
        return self.torch.from_numpy(np.ascontiguousarray(a)).to(self.device)

    def time(self, f, reps):
        """Median time (ms) of `reps` calls after 3 warm-up calls; and the last result."""
        torch = self.torch
        for _ in range(3):
            r = f()
        ts = []
        if self.device == "cuda":
            torch.cuda.synchronize()
            for _ in range(reps):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                r = f()
                e.record()
                torch.cuda.synchronize()
                ts.append(s.elapsed_time(e))
        else:
            for _ in range(reps):
                t0 = time.perf_counter()
                r = f()
                ts.append((time.perf_counter() - t0) * 1e3)
        return float(np.median(ts)), r

    def run(self, workload, shape, dtn, impl, f, check, reps, part="bench"):
        """Times `f` and records its median and its error (`check` of its result as a float64
        NumPy array). False when its result is wrong; a peer that fails or is missing is
        recorded with ok None and does not fail the check."""
        base = dict(part=part, workload=workload, shape=shape, dtype=dtn, impl=impl, device=self.device)
        if self.torch is None:
            emit(dict(base, ok=None, error=self.error))
            return True
        if DEADLINE.passed():
            emit(dict(base, ok=False, error="not started: deadline"))
            return False
        try:
            ms, r = self.time(f, reps)
            err = check(r)
        except Exception as e:
            emit(dict(base, ok=None, error=f"{type(e).__name__}: {e}"[:800]))
            return True
        good = err <= TOL[dtn] * 10
        emit(dict(base, median_ms=ms, max_rel_err=err, ok=good))
        return good


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


def spd_batch(rng, b, n, dt):
    """`b` SPD n x n matrices of type `dt`, made 512 at a time."""
    a = np.empty((b, n, n), dt)
    for s in range(0, b, 512):
        a[s:s + 512] = spd(rng, min(512, b - s), n)
    return a


def tril_err(ref):
    """The check of a peer's Cholesky factor against `ref` (lower triangles)."""
    return lambda r: rel(r.double().cpu().numpy()[: len(ref)], ref, "tril")


def smoke(tilec, args, peers):
    """potrf_batched 4096x92x92 f32 on the bench target against float64 NumPy on every matrix,
    then torch.linalg.cholesky_ex on the same input."""
    rng = np.random.default_rng(1)
    b, n = (4096 if not args.quick else 64), 92
    a = spd_batch(rng, b, n, np.float32)
    ref = np.linalg.cholesky(a.astype(np.float64))
    shape = f"{b}x{n}x{n}"
    base = dict(part="smoke", workload="potrf", shape=shape, dtype="f32")
    ok = True
    try:
        res, line, ms = tilec.run(STDLIB, "potrf_batched", {"A": a}, {"eps": "1e-9"}, ["A"], args.bench_target, 10)
        err = rel(res["A"], ref, "tril")
        ok = err <= TOL["f32"] * 10
        emit(dict(base, impl="tilec", target=args.bench_target, median_ms=ms, max_rel_err=err, ok=ok, line=line))
    except RuntimeError as e:
        emit(dict(base, impl="tilec", target=args.bench_target, ok=False, error=str(e)))
        ok = False

    def cholesky_ex():
        ta = peers.tensor(a)
        return lambda: peers.torch.linalg.cholesky_ex(ta)

    def check(r):
        l, info = r
        if int(info.abs().sum()) != 0:
            raise RuntimeError(f"cholesky_ex reports info != 0 for {int((info != 0).sum())} matrices")
        return tril_err(ref)(l)

    f = cholesky_ex() if peers.torch is not None else None
    good = peers.run("potrf", shape, "f32", "torch.linalg.cholesky_ex", f, check, 10, part="smoke")
    return ok and good


def python_part(args):
    """CUDA tensors from Python: tools/gpu_torch_check.py in a process of its own (under the
    timeout, and so that a crash or a CUDA fault there cannot take this process, or the peers'
    CUDA context, with it); its records are emitted again here."""
    cmd = [sys.executable, os.path.join(HERE, "gpu_torch_check.py"), "--tol", str(TOL["f32"])]
    try:
        p = run_cmd(cmd)
    except RuntimeError as e:
        emit(dict(part="python", ok=False, error=str(e)))
        return False
    ok = True
    seen = 0
    for line in p.stdout.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        seen += 1
        ok &= rec.get("ok") is not False
        emit(rec)
    if p.returncode != 0 and (ok or not seen):
        emit(dict(part="python", ok=False, error=f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-800:]}"))
        return False
    return ok


def bench(tilec, args, peers):
    ok = True
    rng = np.random.default_rng(7)
    big = 4096 if not args.quick else 64
    gemm_n = 4096 if not args.quick else 256
    target = args.bench_target
    torch = peers.torch

    def record(workload, shape, dtn, impl, ms, err, **extra):
        good = err is not None and err <= TOL[dtn] * 10
        emit(dict(part="bench", workload=workload, shape=shape, dtype=dtn, impl=impl, target=target, median_ms=ms,
                  max_rel_err=err, ok=good, **extra))
        return good

    def tilec_case(workload, shape, dtn, kernel, arrays, scalars, out, err_of, impl="tilec", generics=()):
        nonlocal ok
        if DEADLINE.passed():
            emit(dict(part="bench", workload=workload, shape=shape, dtype=dtn, impl=impl, ok=False,
                      error="not started: deadline"))
            ok = False
            return
        try:
            res, line, ms = tilec.run(STDLIB, kernel, arrays, scalars, [out], target, args.reps, generics)
            ok &= record(workload, shape, dtn, impl, ms, err_of(res[out]), line=line)
        except RuntimeError as e:
            ok = False
            emit(dict(part="bench", workload=workload, shape=shape, dtype=dtn, impl=impl, ok=False, error=str(e)))

    def first(ref, mask=None):
        return lambda x: rel(np.asarray(x)[: len(ref)], ref, mask)

    def peer_first(ref, mask=None):
        return lambda r: rel(r.double().cpu().numpy()[: len(ref)], ref, mask)

    # Issue 35's shapes: 4096 x 92 and x 32, 1024 x 64, f32 and f64, and 4096 x 16 f32.
    for b, n, dtn in [(big, 92, "f32"), (big, 92, "f64"), (big, 16, "f32"), (big, 32, "f32"), (big, 32, "f64"),
                      (big // 4 or 1, 64, "f32"), (big // 4 or 1, 64, "f64")]:
        dt = np.float32 if dtn == "f32" else np.float64
        a = spd_batch(rng, b, n, dt)
        ref = np.linalg.cholesky(a[:32].astype(np.float64))
        shape = f"{b}x{n}x{n}"
        tilec_case("potrf", shape, dtn, "potrf_batched", {"A": a}, {"eps": "1e-9"}, "A", first(ref, "tril"))
        if torch is not None:
            ta = peers.tensor(a)
        ok &= peers.run("potrf", shape, dtn, "torch.linalg.cholesky", lambda: torch.linalg.cholesky(ta), tril_err(ref),
                        args.reps)

    b, n = big, 92
    l64 = np.linalg.cholesky(spd(rng, min(b, 512), n))
    l = np.concatenate([l64] * (b // len(l64) or 1))[:b].astype(np.float32)
    x = rng.uniform(-1, 1, (b, n, n)).astype(np.float32)
    lf, xf = l[:32].astype(np.float64), x[:32].astype(np.float64)
    ref_trsm = np.linalg.solve(lf, xf.transpose(0, 2, 1)).transpose(0, 2, 1)  # X L^-T
    ref_potrs = np.linalg.solve(lf @ lf.transpose(0, 2, 1), xf)
    shape = f"{b}x{n}x{n}"
    tilec_case("trsm", shape, "f32", "trsm_right_lower_t_batched", {"A": l, "X": x}, {}, "X", first(ref_trsm))
    tilec_case("potrs", shape, "f32", "potrs_batched", {"L": l, "X": x}, {}, "X", first(ref_potrs))
    if torch is not None:
        tl_, tx = peers.tensor(l), peers.tensor(x)
    ok &= peers.run("trsm", shape, "f32", "torch.linalg.solve_triangular",
                    lambda: torch.linalg.solve_triangular(tl_.transpose(1, 2), tx, upper=True, left=False),
                    peer_first(ref_trsm), args.reps)
    ok &= peers.run("potrs", shape, "f32", "torch.cholesky_solve", lambda: torch.cholesky_solve(tx, tl_),
                    peer_first(ref_potrs), args.reps)

    for dtn in ("f32", "f64"):
        dt = np.float32 if dtn == "f32" else np.float64
        n = gemm_n
        a = rng.uniform(-1, 1, (n, n)).astype(dt)
        bm = rng.uniform(-1, 1, (n, n)).astype(dt)
        rows = np.arange(0, n, max(1, n // 64))
        ref = a[rows].astype(np.float64) @ bm.astype(np.float64)
        shape = f"{n}^3"
        # The default 32 x 32 x 32 tiles: 64 x 64 x 32 spills 728 bytes per lane at sm_80 and
        # takes minutes to compile on lavapipe.
        tilec_case("gemm", shape, dtn, "gemm", {"A": a, "B": bm, "C": np.zeros((n, n), dt)}, {"alpha": "1", "beta": "0"},
                   "C", lambda c: rel(np.asarray(c)[rows], ref), "tilec (32x32x32)")
        if torch is not None:
            ta, tb = peers.tensor(a), peers.tensor(bm)
            trows = torch.from_numpy(rows).to(peers.device)

        def sampled(r):
            return rel(r[trows].double().cpu().numpy(), ref)

        ok &= peers.run("gemm", shape, dtn, "torch.matmul (TF32 off)", lambda: torch.matmul(ta, tb), sampled, args.reps)
        if dtn == "f32":
            ok &= peers.run("gemm", shape, dtn, "triton tutorial matmul", lambda: triton_matmul()(ta, tb), sampled,
                            args.reps)
    return ok


def find_tool(name):
    return shutil.which(name) or next((p for p in (f"/usr/local/cuda/bin/{name}",) if os.path.exists(p)), None)


# What a profiler prints when the machine, not the program, refuses it.
ENV_REFUSALS = r"LibraryNotLoaded|Device not supported|ERR_NVGPUCTRPERM|profiling is not supported"


def profile(tilec, args):
    """ncu of potrf_batched 4096x92x92 f32 and racecheck of a small one, each to $OUT."""
    ok = True
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as tmp:
        runs = [
            ("ncu", "ncu-potrf.txt", 4096 if not args.quick else 64,
             # Every PTX kernel's entry point is `tilec_main`; the run launches one kernel.
             ["--clock-control", "none", "--target-processes", "all", "-k", "regex:tilec_main", "--launch-skip", "1",
              "--launch-count", "1", "--section", "SpeedOfLight", "--section", "LaunchStats", "--section", "Occupancy",
              "--section", "WarpStateStats", "--section", "SchedulerStats", "--section", "MemoryWorkloadAnalysis",
              "--section", "ComputeWorkloadAnalysis"], 2),
            ("compute-sanitizer", "racecheck-potrf.txt", 8, ["--tool", "racecheck", "--target-processes", "all"], 1),
        ]
        for tool, fname, b, flags, repeat in runs:
            what = dict(part="profile", tool=tool, shape=f"{b}x92x92", dtype="f32")
            path = find_tool(tool)
            if path is None:
                emit(dict(what, ok=None, error=f"{tool} not found"))
                continue
            if DEADLINE.passed():
                emit(dict(what, ok=False, error="not started: deadline"))
                ok = False
                continue
            a = os.path.join(tmp, f"a{b}.npy")
            np.save(a, spd_batch(rng, b, 92, np.float32))
            cmd = [path, *flags, tilec.path, "run", STDLIB, "--kernel", "potrf_batched", "--arg", f"A={a}",
                   "--arg", "eps=1e-9", "--out", f"A={os.path.join(tmp, 'l.npy')}", "--target", args.bench_target,
                   "--repeat", str(repeat)]
            try:
                p = run_cmd(cmd)
            except RuntimeError as e:
                emit(dict(what, ok=False, error=str(e)))
                ok = False
                continue
            text = f"$ {' '.join(cmd)}\n(exit {p.returncode})\n{p.stdout}\n{p.stderr}"
            if OUT:
                with open(os.path.join(OUT, fname), "w") as f:
                    f.write(text)
            good = p.returncode == 0
            if tool == "compute-sanitizer":
                good &= bool(re.search(r"RACECHECK SUMMARY: 0 hazards", text))
            else:
                good &= "No kernels were profiled" not in text
            if not good and re.search(ENV_REFUSALS, text):
                good = None  # the machine refuses the tool (seen under gVisor): not tilec's failure
            tail = [ln for ln in text.splitlines() if "SUMMARY" in ln or "Duration" in ln or "Throughput" in ln]
            emit(dict(what, ok=good, file=fname if OUT else None, lines=tail[:12]))
            ok &= good is not False
    return ok


def summary(final=False):
    """The table of every record so far: to $OUT/summary.md (after each part), and to stderr at
    the end. Correctness is one line per case, dtype and target (the largest error over the
    extents, or the failures)."""
    lines = ["| part | what | target / impl | dtype | n / shape | result |", "|---|---|---|---|---|---|"]
    with LOCK:
        records = list(RECORDS)
    groups = {}
    for r in records:
        part = r.get("part")
        if part == "correctness" and "target" in r:
            groups.setdefault((r["case"], r["target"], r["dtype"]), []).append(r)
        elif part == "correctness":
            lines.append(f"| correctness | {r['case']} | | | | FAIL {r.get('error', '')} |")
        elif part in ("smoke", "bench"):
            who = r.get("impl", "") + (f" on {r['device']}" if r.get("device") else "")
            if r.get("median_ms") is not None:
                res = f"{r['median_ms']:.3f} ms, err {r.get('max_rel_err', float('nan')):.1e}"
                res += "" if r.get("ok") else " FAIL"
            else:
                res = ("FAIL " if r.get("ok") is False else "no result: ") + str(r.get("error", ""))[:100]
            lines.append(f"| {part} | {r['workload']} | {who} | {r['dtype']} | {r['shape']} | {res} |")
        elif part == "ptxas" and r.get("registers") is not None:
            lines.append(f"| ptxas | {r['kernel']} | {r['arch']} | | | {r['registers']} registers, "
                         f"{r['spill_stores']} B spill stores |")
        elif part not in ("info", "part-done", "done"):
            res = {True: "ok", False: "FAIL", None: "not run"}[r.get("ok")]
            detail = r.get("error") or r.get("reason") or r.get("message") or "; ".join(r.get("lines") or []) or ""
            if r.get("max_rel_err") is not None:
                detail = f"err {r['max_rel_err']:.1e} {detail}"
            what = r.get("tool") or r.get("file") or r.get("check") or r.get("workload") or r.get("name") or ""
            lines.append(f"| {part} | {what} | {r.get('impl', '')} | {r.get('dtype', '')} | {r.get('shape', '')} | {res} "
                         f"{str(detail)[:160]} |")
    for (case, target, dtn), rs in sorted(groups.items()):
        bad = [r for r in rs if not r.get("ok")]
        if bad:
            res = "FAIL " + "; ".join(f"n={r['n']}: " + (r.get("error") or f"err {r.get('err_vs_ref', 0):.1e}")[:80]
                                      for r in bad[:3])
        else:
            res = f"ok (err {max(r.get('err_vs_ref', 0.0) for r in rs):.1e})"
        ns = ",".join(str(r["n"]) for r in sorted(rs, key=lambda r: r["n"]))
        lines.append(f"| correctness | {case} | {target} | {dtn} | {ns} | {res} |")
    text = "\n".join(lines) + "\n"
    if OUT:
        with open(os.path.join(OUT, "summary.md.tmp"), "w") as f:
            f.write(text)
        os.replace(os.path.join(OUT, "summary.md.tmp"), os.path.join(OUT, "summary.md"))
    if final:
        sys.stderr.write(text)


PARTS = ["smoke", "python", "bench", "correctness", "ptxas", "profile"]


def main():
    global DEADLINE, STARTED
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--targets", default="cuda,vulkan", help="device targets compared with the CPU")
    ap.add_argument("--parts", default=",".join(PARTS), help="a comma list, run in the order above")
    ap.add_argument("--bench-target", default="cuda")
    ap.add_argument("--peer-device", default="auto", choices=["auto", "cuda", "cpu"],
                    help="where torch and Triton run (auto: CUDA when torch sees a device, else the CPU)")
    ap.add_argument("--arch", default="sm_90", help="comma list for the ptxas part")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="small benchmark shapes (to test this script)")
    ap.add_argument("--extents", default=",".join(map(str, EXTENTS)), help="correctness: matrix extents")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1), help="correctness cases at a time")
    ap.add_argument("--started", type=float, default=None, help="epoch seconds the deadline counts from")
    ap.add_argument("--deadline", type=float, default=None, help="seconds after --started when no new work starts")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds any one subprocess may run")
    args = ap.parse_args()
    if OUT:
        os.makedirs(OUT, exist_ok=True)
    args.targets = [t for t in args.targets.split(",") if t]
    args.arch = args.arch.split(",")
    args.extents = [int(n) for n in args.extents.split(",")]
    parts = [p for p in args.parts.split(",") if p]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        ap.error(f"unknown parts {unknown} (known: {', '.join(PARTS)})")
    started = args.started if args.started is not None else STARTED
    DEADLINE = Deadline(started, args.deadline if args.deadline is not None else 1e9, args.timeout)
    tilec = Tilec(args.tilec)
    emit(dict(part="info", tilec=args.tilec, targets=args.targets, parts=parts, deadline=args.deadline,
              started=time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started))))
    peers = Peers(args.peer_device) if any(p in parts for p in ("smoke", "bench")) else None
    ok = True
    for part in PARTS:
        if part not in parts:
            continue
        if DEADLINE.passed():
            emit(dict(part=part, ok=False, error="not started: deadline"))
            ok = False
            continue
        t0 = time.time()
        run = {"smoke": lambda: smoke(tilec, args, peers), "python": lambda: python_part(args),
               "bench": lambda: bench(tilec, args, peers), "correctness": lambda: correctness(tilec, args),
               "ptxas": lambda: ptxas(tilec, args), "profile": lambda: profile(tilec, args)}[part]
        try:
            good = run()
        except Exception as e:  # a broken part is recorded, and the next one still runs
            emit(dict(part=part, ok=False, error=f"{type(e).__name__}: {e}"[:800]))
            good = False
        emit(dict(part="part-done", name=part, ok=bool(good), seconds=round(time.time() - t0, 1)))
        ok &= good
        summary()
    summary(final=True)
    emit(dict(part="done", ok=bool(ok)))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
