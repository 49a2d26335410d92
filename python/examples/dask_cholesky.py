"""Batched Cholesky solves over more matrices than one machine holds at once, with Dask.

Each Dask chunk is a block of matrices: it is generated on a worker (SPD matrices from a seed,
so the batch never exists in one place), factored with tilec's ``potrf_batched``, solved with
``potrs_batched``, and checked (the residual ``max |A X - B|`` per chunk); only the residuals
come back. tilec kernels run one program per matrix, so chunks are independent and Dask
spreads them over the workers' cores and machines.

    python dask_cholesky.py --batch 65536 --n 64                      # a local cluster
    python dask_cholesky.py --scheduler tcp://HOST:8786 --batch 10000000 --n 92

With ``--scheduler ADDRESS`` it uses an existing cluster (``dask scheduler`` on one machine,
``dask worker ADDRESS`` on each machine, every one with the ``tilec`` wheel installed; see
docs/python.md). Prints the largest relative residual; exits non-zero when it is above the
tolerance of the dtype.
"""

import argparse
import sys

import dask
import dask.array as da
import numpy as np


def spd_chunk(index, count, n, dtype, seed):
    """``count`` SPD ``n x n`` matrices: ``M M^T / n + I`` with ``M`` normal, seeded by chunk."""
    rng = np.random.default_rng([seed, index])
    m = rng.standard_normal((count, n, n))
    return (m @ m.transpose(0, 2, 1) / n + np.eye(n)).astype(dtype)


def rhs_chunk(index, count, n, k, dtype, seed):
    return np.random.default_rng([seed, index, 1]).standard_normal((count, n, k)).astype(dtype)


def solve_chunk(a, b):
    """X with A X = B for every matrix of the chunk, by tilec (potrf then potrs)."""
    import tilec  # imported on the worker

    factor = tilec.linalg.potrf_batched(a.copy(), eps=0.0)  # in place, on a copy of the chunk
    return tilec.linalg.potrs_batched(factor, b.copy())


def residual_chunk(a, b, x):
    """``max |A X - B| / max |B|`` of the chunk, in float64, as a one-element array."""
    r = np.einsum("bij,bjk->bik", a.astype(np.float64), x.astype(np.float64)) - b
    return np.array([np.abs(r).max() / max(np.abs(b).max(), 1.0)])


def run(batch, n, k, chunk, dtype, seed):
    """The largest relative residual over the batch (computed chunk by chunk)."""
    sizes = [min(chunk, batch - s) for s in range(0, batch, chunk)]
    a = da.concatenate(
        [
            da.from_delayed(dask.delayed(spd_chunk)(i, c, n, dtype, seed), shape=(c, n, n), dtype=dtype)
            for i, c in enumerate(sizes)
        ]
    )
    b = da.concatenate(
        [
            da.from_delayed(dask.delayed(rhs_chunk)(i, c, n, k, dtype, seed), shape=(c, n, k), dtype=dtype)
            for i, c in enumerate(sizes)
        ]
    )
    x = da.map_blocks(solve_chunk, a, b, dtype=dtype)
    res = da.map_blocks(residual_chunk, a, b, x, drop_axis=[1, 2], chunks=((1,) * len(sizes),), dtype=np.float64)
    return float(res.max().compute())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=20000, help="number of matrices")
    p.add_argument("--n", type=int, default=33, help="matrix size")
    p.add_argument("--k", type=int, default=3, help="right-hand sides per matrix")
    p.add_argument("--chunk", type=int, default=2048, help="matrices per Dask chunk")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float64")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--scheduler", default="local", help="'local' (a LocalCluster) or a scheduler address")
    p.add_argument("--workers", type=int, default=2, help="workers of the local cluster")
    args = p.parse_args(argv)

    from distributed import Client, LocalCluster

    if args.scheduler == "local":
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        cluster, client = None, Client(args.scheduler)
    try:
        res = run(args.batch, args.n, args.k, args.chunk, np.dtype(args.dtype), args.seed)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    tol = 1e-4 if args.dtype == "float32" else 1e-10
    print(f"{args.batch} matrices {args.n}x{args.n} ({args.dtype}), chunks of {args.chunk}: max relative residual {res:.2e}")
    return 0 if res <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
