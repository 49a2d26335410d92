"""The tilec standard library (``stdlib/linalg.tile``), compiled for the CPU on first use:
``potrf_batched(A, eps)`` (batched Cholesky, in place), ``potrf_compact_batched(A, eps)``
(the same on packs of W matrices stored batch-interleaved, MKL's compact layout), the eight
batched triangular solves ``trsm_{left,right}_{lower,upper}[_t]_batched(A, X)``,
``potrs_batched(L, X)`` (solves with the factor), ``getrf_batched(A, ipiv, info)`` (LU with partial pivoting, in place; SciPy's
``lu_factor`` layout, 0-based pivots) and ``getrs_batched(LU, ipiv, X)`` (solves with it;
``getrf_compact_batched(A, ipiv, info)`` and ``getrs_compact_batched(LU, ipiv, X)`` on
batch-interleaved packs), ``geqrf_batched(A, tau)``,
``orgqr_batched(A, tau)`` and ``gels_batched(A, X, info)`` (Householder QR, its Q, least
squares; ``geqrf_compact_batched(A, tau)`` on batch-interleaved packs),
``syevj_batched(A, W, V, info, tol, max_sweeps)`` (symmetric eigenvalues, ascending, and
eigenvectors by Jacobi; ``tol=np.finfo(dtype).eps, max_sweeps=100`` as cuSOLVER;
``syevj_compact_batched(A, E, V, info, tol, max_sweeps)`` on batch-interleaved packs, and
``syev_compact_batched(A, E, V, info, tol)``, the same by tridiagonal reduction and QL, several
times faster) and
``gesvj_batched(A, S, V, info, tol, max_sweeps)`` (SVD by one-sided Jacobi, U over A;
``tol=sqrt(M) * eps, max_sweeps=30`` as LAPACK's gesvj;
``gesvj_compact_batched(A, S, V, info, tol, max_sweeps)`` on batch-interleaved packs of square
matrices, and ``gesvd_compact_batched(A, S, V, E, info, tol)``, the same by bidiagonalization and
QR, several times faster; ``E`` is workspace, ``tol=np.finfo(dtype).eps``),
``gemm(A, B, C, alpha, beta, BM=.., BN=.., BK=..)``, ``gemm_batched`` and ``row_sum``. Shapes and algorithms are in each kernel's docstring (``help(linalg.gemm)``).
``potrf_batched`` leaves the 16x16 tiles above the diagonal as they were: take
``np.tril(L)`` for the factor alone.

``linalg.on("vulkan")`` (or ``"cuda"``, with ``device=``) gives the same kernels on a GPU.
"""

from . import _tilec
from . import compile as _compile


def on(target="cpu", device=None, backend=None):
    """The standard library compiled for ``target`` (see :func:`tilec.compile`)."""
    return _compile(_tilec.stdlib_source(), name="stdlib/linalg.tile", target=target, device=device, backend=backend)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(on(), name)


def __dir__():
    return ["on"] + list(on().kernels)
