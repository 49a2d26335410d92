"""The strongest CPU peers of the stdlib's factorizations (issue 34), for bench/lu_cpu.py and
bench/factor_cpu.py: PyTorch's batched `torch.linalg` (`lu_factor` + `lu_solve`, `geqrf`,
`eigh`, `svd`; on x86 its LAPACK is Intel MKL's) and Intel oneMKL's batched LAPACK through
ctypes on `libmkl_rt` from the `mkl` wheel: `?getrf_batch_strided` + `?getrs_batch_strided`
(one call for the whole stack, column-major) and the compact routines `mkl_?getrfnp_compact`
(LU without pivoting) and `mkl_?geqrf_compact` on data already packed (the routine alone, as
`../shared/peers/anchors_strong.py` times them: what a user who keeps the stack packed pays).
MKL has no batched eigensolver or SVD; torch's rows are MKL's LAPACK per matrix.

`peers(routine, a, x)` gives `{name: (run, prep, check)}` for what is installed (nothing when
neither is), timed by `ports_cpu.peer_ms(run, reps, prep)`: `prep()` (untimed) restores the inputs an in-place routine overwrites, `run()`
is timed, `check()` raises unless the result is right. Every peer runs on all cores
(`torch.set_num_threads`, `MKL_Set_Num_Threads`), as tilec's launches do.

    routine "LU":   a (B, N, N), x (B, N, 1): solve A X = x
    routine "QR":   a (B, N, N): Householder QR (R and the reflectors)
    routine "eigh": a (B, N, N) symmetric: eigenvalues and eigenvectors
    routine "SVD":  a (B, N, N): singular values and vectors
    routine "Cholesky" (`mkl_peers` only, for bench/compact_cpu.py): a (B, N, N) SPD:
                    `mkl_?potrf_compact` on packed data; `mkl_packed(a, fmt)` is that packing
"""
import ctypes
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ports_cpu import check_error  # noqa: E402

ROW_MAJOR, COL_MAJOR = 101, 102
# MKL's compact formats and their vector lengths in f32 (f64: half): MKL picks one
# (`mkl_get_format_compact`: SSE on the AMD EPYC VM of bench/README.md); `mkl_peers(.., fmt=)`
# times another.
COMPACT_FORMATS = {181: ("SSE", 4), 182: ("AVX", 8), 183: ("AVX512", 16)}
LOWER = 122


def _bound(a, dt):
    """8 n eps ||A||_max, the tolerance of the checks."""
    return 8 * a.shape[-1] * np.finfo(dt).eps * max(float(np.abs(a).max()), 1.0)


def _close(what, got, want, bound):
    check_error(what, float(np.abs(np.asarray(got, np.float64) - want).max()), bound)


def torch_peers(routine, a, x):
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(os.cpu_count())
    a64 = a.astype(np.float64)
    ta = torch.from_numpy(a.copy())
    out = {}
    if routine == "LU":
        tx = torch.from_numpy(x.copy())

        def run():
            lu, piv = torch.linalg.lu_factor(ta)
            out["x"] = torch.linalg.lu_solve(lu, piv, tx)

        def check():
            res = a64 @ out["x"].numpy().astype(np.float64) - x
            _close("torch lu_solve residual", res, 0.0, 8 * a.shape[-1] * _bound(out["x"].numpy(), a.dtype))
        name = "torch lu_factor + lu_solve"
    elif routine == "QR":
        def run():
            out["r"] = torch.geqrf(ta)

        def check():
            r = np.triu(out["r"][0].numpy()[:64])
            ref = np.linalg.qr(a64[:64], mode="r")
            _close("torch geqrf |diag R|", np.abs(np.diagonal(r, 0, 1, 2)), np.abs(np.diagonal(ref, 0, 1, 2)),
                   _bound(a, a.dtype))
        name = "torch geqrf"
    elif routine == "eigh":
        def run():
            out["w"] = torch.linalg.eigh(ta)

        def check():
            _close("torch eigh W", out["w"][0].numpy(), np.linalg.eigvalsh(a64), _bound(a, a.dtype))
        name = "torch linalg.eigh"
    else:
        def run():
            out["s"] = torch.linalg.svd(ta)

        def check():
            _close("torch svd S", out["s"][1].numpy(), np.linalg.svd(a64, compute_uv=False), _bound(a, a.dtype))
        name = "torch linalg.svd"
    return {f"{name} ({torch.__version__})": (run, lambda: None, check)}


class _Mkl:
    """The few oneMKL entry points these peers call (LP64: MKL_INT is int32)."""

    def __init__(self, fmt=None):
        path = os.path.join(sys.prefix, "lib", "libmkl_rt.so.2")
        for cand in ("libmkl_rt.so.3", "libmkl_rt.so.2", "libmkl_rt.so"):
            if os.path.exists(os.path.join(sys.prefix, "lib", cand)):
                path = os.path.join(sys.prefix, "lib", cand)
                break
        lib = self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        I, P = ctypes.c_int, ctypes.c_void_p

        def sig(name, res, *args):
            f = getattr(lib, name)
            f.restype, f.argtypes = res, list(args)
        sig("MKL_Set_Interface_Layer", I, I)
        lib.MKL_Set_Interface_Layer(0)  # LP64
        sig("MKL_Set_Num_Threads", None, I)
        lib.MKL_Set_Num_Threads(os.cpu_count())
        sig("mkl_get_format_compact", I)
        for t in "sd":
            sig(f"{t.upper()}GETRF_BATCH_STRIDED", None, P, P, P, P, P, P, P, P, P)
            sig(f"{t.upper()}GETRS_BATCH_STRIDED", None, P, P, P, P, P, P, P, P, P, P, P, P, P)
            sig(f"mkl_{t}get_size_compact", I, I, I, I, I)
            sig(f"mkl_{t}gepack_compact", None, I, I, I, P, I, P, I, I, I)
            sig(f"mkl_{t}geunpack_compact", None, I, I, I, P, I, P, I, I, I)
            sig(f"mkl_{t}getrfnp_compact", None, I, I, I, P, I, P, I, I)
            sig(f"mkl_{t}geqrf_compact", None, I, I, I, P, I, P, P, I, P, I, I)
            sig(f"mkl_{t}potrf_compact", None, I, I, I, P, I, P, I, I)
        self.format = fmt or lib.mkl_get_format_compact()


def _ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


def _int(v):
    return ctypes.byref(ctypes.c_int(v))


class _Packed:
    """A stack (nm, rows, cols) in MKL's compact format (row-major, ldap = cols)."""

    def __init__(self, mkl, t, stack):
        self.mkl, self.t, self.stack = mkl, t, stack
        self.nm, self.rows, self.cols = stack.shape
        size = getattr(mkl.lib, f"mkl_{t}get_size_compact")(self.cols, self.rows, mkl.format, self.nm)
        self.buf = np.zeros(size // stack.itemsize + 16, stack.dtype)
        self.ptrs = stack.ctypes.data + np.arange(self.nm, dtype=np.uintp) * np.uintp(stack.strides[0])

    def _move(self, how):
        f = getattr(self.mkl.lib, f"mkl_{self.t}ge{how}_compact")
        f(ROW_MAJOR, self.rows, self.cols, _ptr(self.ptrs), self.cols, _ptr(self.buf), self.cols,
          self.mkl.format, self.nm)

    def pack(self):
        self._move("pack")

    def unpack(self):
        self._move("unpack")


def _mkl(fmt=None):
    try:
        return _Mkl(fmt)
    except (OSError, AttributeError):
        return None


def mkl_packed(a, fmt=None):
    """MKL's compact packing of the stack `a` in format `fmt` (default: MKL's pick), or None
    without MKL."""
    mkl = _mkl(fmt)
    if mkl is None:
        return None
    packed = _Packed(mkl, "s" if a.dtype == np.float32 else "d", a.copy())
    packed.pack()
    return packed.buf


def mkl_peers(routine, a, x, fmt=None):
    """MKL's peers of `routine` (as `peers`; also "Cholesky": `mkl_?potrf_compact` alone),
    its compact routines in format `fmt` (default: MKL's pick)."""
    if routine not in ("LU", "QR", "Cholesky"):
        return {}
    mkl = _mkl(fmt)
    if mkl is None:
        return {}
    b, n, _ = a.shape
    t = "s" if a.dtype == np.float32 else "d"
    a64 = a.astype(np.float64)
    found = {}
    if routine == "LU":
        # Column-major: the transposed stack holds A itself.
        a_cm = np.ascontiguousarray(a.transpose(0, 2, 1))
        work, xs = a_cm.copy(), x.copy()
        ipiv, infos = np.zeros((b, n), np.int32), np.zeros(b, np.int32)
        getrf, getrs = getattr(mkl.lib, f"{t.upper()}GETRF_BATCH_STRIDED"), getattr(mkl.lib, f"{t.upper()}GETRS_BATCH_STRIDED")

        def prep():
            np.copyto(work, a_cm)
            np.copyto(xs, x)

        def run():
            getrf(_int(n), _int(n), _ptr(work), _int(n), _int(n * n), _ptr(ipiv), _int(n), _int(b), _ptr(infos))
            getrs(ctypes.c_char_p(b"N"), _int(n), _int(1), _ptr(work), _int(n), _int(n * n), _ptr(ipiv), _int(n),
                  _ptr(xs), _int(n), _int(n), _int(b), _ptr(infos))

        def check():
            res = a64 @ xs.astype(np.float64) - x
            _close("MKL getrs residual", res, 0.0, 8 * n * _bound(xs, a.dtype))
        found["MKL ?getrf + ?getrs_batch_strided"] = (run, prep, check)
    stack = a.copy()
    packed = _Packed(mkl, t, stack)
    packed.pack()
    original = packed.buf.copy()
    info = ctypes.c_int(0)
    if routine == "LU":
        f = getattr(mkl.lib, f"mkl_{t}getrfnp_compact")

        def run_np():
            f(ROW_MAJOR, n, n, _ptr(packed.buf), n, ctypes.byref(info), mkl.format, b)

        def check_np():
            packed.unpack()
            # Without pivoting there is no bound on growth: the backward error relative to |L| |U|.
            for i in range(min(b, 16)):
                lu = stack[i].astype(np.float64)
                l, u = np.tril(lu, -1) + np.eye(n), np.triu(lu)
                bound = 8 * n * np.finfo(a.dtype).eps * float((np.abs(l) @ np.abs(u)).max())
                _close("MKL getrfnp L U", l @ u, a64[i], bound)
        found["MKL ?getrfnp_compact (no pivoting, packed)"] = (run_np, lambda: np.copyto(packed.buf, original), check_np)
    elif routine == "Cholesky":
        f = getattr(mkl.lib, f"mkl_{t}potrf_compact")

        def run_chol():
            f(ROW_MAJOR, LOWER, n, _ptr(packed.buf), n, ctypes.byref(info), mkl.format, b)

        def check_chol():
            packed.unpack()
            ref = np.linalg.cholesky(a64[:64])
            _close("MKL potrf_compact L", np.tril(stack[:64]), ref,
                   50 * n * np.finfo(a.dtype).eps * float(np.abs(ref).max()))
        found["MKL ?potrf_compact (packed)"] = (run_chol, lambda: np.copyto(packed.buf, original), check_chol)
    else:
        f = getattr(mkl.lib, f"mkl_{t}geqrf_compact")
        tau = np.zeros(n * (b + 64), a.dtype)
        query = np.zeros(4, a.dtype)
        f(ROW_MAJOR, n, n, _ptr(packed.buf), n, _ptr(tau), _ptr(query), -1, ctypes.byref(info), mkl.format, b)
        work = np.zeros(int(query[0]) + 64, a.dtype)

        def run_qr():
            f(ROW_MAJOR, n, n, _ptr(packed.buf), n, _ptr(tau), _ptr(work), len(work), ctypes.byref(info),
              mkl.format, b)

        def check_qr():
            packed.unpack()
            ref = np.linalg.qr(a64[:64], mode="r")
            _close("MKL geqrf_compact |diag R|", np.abs(np.diagonal(np.triu(stack[:64]), 0, 1, 2)),
                   np.abs(np.diagonal(ref, 0, 1, 2)), _bound(a, a.dtype))
        found["MKL ?geqrf_compact (packed)"] = (run_qr, lambda: np.copyto(packed.buf, original), check_qr)
    return found


def peers(routine, a, x=None):
    """The installed strong peers of `routine` on `a` (and `x`): {name: (run, prep, check)}."""
    return {**torch_peers(routine, a, x), **mkl_peers(routine, a, x)}
