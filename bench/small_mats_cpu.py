"""Benchmark (not a test): the small-matrix examples (language §3.6) on the CPU target against
the libraries people would write them in, on the same data, in one run: NumPy's batched
`linalg` (`svd`, `inv`, `solve` on stacks of small matrices), Quadrants (`qd.svd` and
`qd.Matrix` per particle, Taichi's way, on every core) and NVIDIA Warp (`wp.svd3` and `wp.mat33`
per thread on its CPU device, which runs a launch on one thread). Every result is checked
against a float64 NumPy reference first.

    python3 bench/small_mats_cpu.py --tilec target/release/tilec [--repeat N] [--only mpm,..]

Prints one line per measurement and a markdown table of medians and ratios (peer / tilec:
above 1, tilec is faster). `bench/small_mats_cpu.sh` builds tilec and sets up the peers.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ports_cpu import check_error, peer_ms, rel, tilec_run  # noqa: E402

MPM = dict(mu0=416.7, lambda0=277.8, theta_c=0.025, theta_s=0.0075, hardening=10.0)
KALMAN = dict(dt=0.1, q=0.01, r=0.5)


def mpm_numpy(f, jp, mu0, lambda0, theta_c, theta_s, hardening):
    """The MPM snow update (examples/mpm_stress.tile) with NumPy's batched SVD."""
    h = np.exp(hardening * (1 - jp))
    u, s, vt = np.linalg.svd(f)
    c = np.clip(s, 1 - theta_c, 1 + theta_s)
    jp2 = jp * np.prod(s / c, axis=1)
    j = np.prod(c, axis=1)
    fn = u @ (c[:, :, None] * vt)
    r = u @ vt
    tau = 2 * (mu0 * h)[:, None, None] * (fn - r) @ np.swapaxes(fn, 1, 2)
    tau += (lambda0 * h * j * (j - 1))[:, None, None] * np.eye(3, dtype=f.dtype)
    return fn, jp2, tau


def kalman_numpy(x, c, z, dt, q, r):
    """One constant-velocity Kalman step (examples/kalman.tile) with NumPy's batched matmul and inv."""
    t = x.dtype.type
    fm = np.array([[1, 0, dt, 0], [0, 1, 0, dt], [0, 0, 1, 0], [0, 0, 0, 1]], x.dtype)
    hm = np.array([[1, 0, 0, 0], [0, 1, 0, 0]], x.dtype)
    xp = x @ fm.T
    cp = fm @ c @ fm.T + t(q) * np.eye(4, dtype=x.dtype)
    k = cp @ hm.T @ np.linalg.inv(hm @ cp @ hm.T + t(r) * np.eye(2, dtype=x.dtype))
    xn = xp + (k @ (z - xp @ hm.T)[:, :, None])[:, :, 0]
    return xn, (np.eye(4, dtype=x.dtype) - k @ hm) @ cp


def gauss_newton_numpy(j, res, lam):
    """Damped Gauss-Newton steps (examples/gauss_newton.tile) with NumPy's batched solve."""
    a = np.swapaxes(j, 1, 2) @ j + lam * np.eye(6, dtype=j.dtype)
    g = (np.swapaxes(j, 1, 2) @ res[:, :, None])
    return -np.linalg.solve(a, g)[:, :, 0]


def quadrants_mpm(dtype):
    """The MPM update as a Quadrants kernel: one particle per loop iteration, `qd.svd`."""
    import quadrants as qd
    if not getattr(quadrants_mpm, "ready", False):
        qd.init(arch=qd.cpu, offline_cache=False)
        quadrants_mpm.ready = True
    ft = qd.f32 if dtype == np.float32 else qd.f64
    mat3 = qd.types.matrix(3, 3, ft)

    @qd.kernel
    def mpm(F: qd.types.ndarray(dtype=mat3, ndim=1), Jp: qd.types.ndarray(dtype=ft, ndim=1),
            Tau: qd.types.ndarray(dtype=mat3, ndim=1), mu0: ft, la0: ft, tc: ft, ts: ft, hard: ft):
        for p in range(F.shape[0]):
            f = F[p]
            jp = Jp[p]
            h = qd.exp(hard * (1.0 - jp))
            U, sig, V = qd.svd(f, ft)
            J = qd.cast(1.0, ft)
            for d in qd.static(range(3)):
                new = qd.min(qd.max(sig[d, d], 1.0 - tc), 1.0 + ts)
                jp *= sig[d, d] / new
                sig[d, d] = new
                J *= new
            fn = U @ sig @ V.transpose()
            r = U @ V.transpose()
            F[p] = fn
            Jp[p] = jp
            Tau[p] = 2.0 * mu0 * h * (fn - r) @ fn.transpose() + qd.Matrix.identity(ft, 3) * la0 * h * J * (J - 1.0)

    def run(f, jp, tau):
        mpm(f, jp, tau, *MPM.values())
        qd.sync()

    return run


def warp_mpm(dtype):
    """The MPM update as a Warp kernel on its CPU device: one particle per thread, `wp.svd3`."""
    import warp as wp
    wp.config.quiet = True
    wp.init()
    m33, v3, fl = (wp.mat33, wp.vec3, wp.float32) if dtype == np.float32 else (wp.mat33d, wp.vec3d, wp.float64)

    @wp.kernel(enable_backward=False, module="unique")
    def mpm(F: wp.array(dtype=m33), Jp: wp.array(dtype=fl), Tau: wp.array(dtype=m33),
            mu0: fl, la0: fl, tc: fl, ts: fl, hard: fl):
        p = wp.tid()
        f = F[p]
        jp = Jp[p]
        h = wp.exp(hard * (fl(1.0) - jp))
        U = m33()
        sig = v3()
        V = m33()
        wp.svd3(f, U, sig, V)
        s = v3()
        J = fl(1.0)
        for d in range(3):
            new = wp.min(wp.max(sig[d], fl(1.0) - tc), fl(1.0) + ts)
            jp = jp * sig[d] / new
            s[d] = new
            J = J * new
        fn = U * wp.diag(s) * wp.transpose(V)
        r = U * wp.transpose(V)
        F[p] = fn
        Jp[p] = jp
        Tau[p] = fl(2.0) * mu0 * h * (fn - r) * wp.transpose(fn) + wp.identity(3, fl) * (la0 * h * J * (J - fl(1.0)))

    def run(f, jp, tau):
        args = [wp.array(f, dtype=m33, device="cpu"), wp.array(jp, dtype=fl, device="cpu"),
                wp.array(tau, dtype=m33, device="cpu")]
        run.out = args
        wp.launch(mpm, dim=len(jp), inputs=args + [fl(v) for v in MPM.values()], device="cpu")
        wp.synchronize_device("cpu")

    return run


def workloads(rng, dt, sizes):
    p, pk, pg, m = sizes
    f0 = (np.eye(3) + 0.1 * rng.uniform(-1, 1, (p, 3, 3))).astype(dt)
    jp0 = (1 + 0.05 * rng.uniform(-1, 1, p)).astype(dt)
    x = rng.standard_normal((pk, 4)).astype(dt)
    a = rng.standard_normal((pk, 4, 4))
    c = (a @ np.swapaxes(a, 1, 2) / 4 + np.eye(4)).astype(dt)
    z = rng.standard_normal((pk, 2)).astype(dt)
    j = rng.standard_normal((pg, m, 6)).astype(dt)
    res = rng.standard_normal((pg, m)).astype(dt)
    f64 = lambda t: t.astype(np.float64)  # noqa: E731
    mpm_ref = mpm_numpy(f64(f0), f64(jp0), **MPM)
    kal_ref = kalman_numpy(f64(x), f64(c), f64(z), **KALMAN)
    gn_ref = gauss_newton_numpy(f64(j), f64(res), 1e-3)
    return [
        dict(word="mpm", name=f"mpm_stress {p} x 3x3", src="examples/mpm_stress.tile", kernel="mpm_stress",
             arrays=dict(F=f0, Jp=jp0, Tau=np.zeros_like(f0), **{k: str(v) for k, v in MPM.items()}),
             outs=["F", "Tau"], check=lambda o: max(rel(o["F"], mpm_ref[0]), rel(o["Tau"], mpm_ref[2])),
             numpy=lambda: mpm_numpy(f0, jp0, **MPM),
             quadrants=(quadrants_mpm, lambda: (f0.copy(), jp0.copy(), np.zeros_like(f0)), lambda a: a[0], mpm_ref[0]),
             warp=(warp_mpm, lambda: (f0.copy(), jp0.copy(), np.zeros_like(f0)), None, mpm_ref[0])),
        dict(word="kalman", name=f"kalman_step {pk} x 4x4", src="examples/kalman.tile", kernel="kalman_step",
             arrays=dict(X=x, Cov=c, Z=z, **{k: str(v) for k, v in KALMAN.items()}), outs=["X", "Cov"],
             check=lambda o: max(rel(o["X"], kal_ref[0]), rel(o["Cov"], kal_ref[1])),
             numpy=lambda: kalman_numpy(x, c, z, **KALMAN)),
        dict(word="gn", name=f"gauss_newton {pg} x {m} x 6", src="examples/gauss_newton.tile", kernel="gauss_newton",
             arrays=dict(J=j, Res=res, Delta=np.zeros((pg, 6), dt), **{"lambda": "0.001"}), outs=["Delta"],
             check=lambda o: rel(o["Delta"], gn_ref), numpy=lambda: gauss_newton_numpy(j, res, dt(1e-3))),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", default="", help="comma list of workload words (mpm, kalman, gn)")
    ap.add_argument("--peers", default="numpy,quadrants,warp")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    peers = args.peers.split(",")
    rows = []
    for dtn, dt, bound in (("f32", np.float32, 1e-4), ("f64", np.float64, 1e-10)):
        rng = np.random.default_rng(0)
        for w in workloads(rng, dt, (200000, 200000, 50000, 16)):
            if only and w["word"] not in only:
                continue
            got, ms = tilec_run(args.tilec, w["src"], w["kernel"], w["arrays"], w["outs"], "llvm", args.repeat)
            check_error(f"tilec {w['name']} {dtn}", w["check"](got), bound)
            line = {"tilec": ms}
            if "numpy" in peers:
                line["numpy"] = peer_ms(w["numpy"], args.repeat)
            for peer in ("quadrants", "warp"):
                if peer not in peers or peer not in w:
                    continue
                make, inputs, out_of, ref = w[peer]
                run = make(dt)
                state = {}

                def prep(state=state, inputs=inputs):
                    state["a"] = inputs()

                def call(state=state, run=run):
                    run(*state["a"])

                line[peer] = peer_ms(call, args.repeat, prep)
                out = out_of(state["a"]) if out_of else run.out[0].numpy()
                # Quadrants' and Warp's 3x3 SVDs run a fixed number of approximate (quaternion)
                # Jacobi rotations: about 1e-7 relative in f64 as in f32.
                err = rel(out, ref)
                print(f"  {peer} error vs f64: {err:.1e}")
                check_error(f"{peer} {w['name']} {dtn}", err, max(bound * 10, 1e-6))
            print(f"{w['name']} {dtn}: " + ", ".join(f"{k} {v:.3f} ms" for k, v in line.items()), flush=True)
            rows.append((f"{w['name']} {dtn}", line))
    names = [p for p in ["numpy", "quadrants", "warp"] if p in peers]
    print("\n| workload | tilec (LLVM) ms | " + " | ".join(f"{p} ms (ratio)" for p in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for name, line in rows:
        cells = [f"{line[p]:.2f} ({line[p] / line['tilec']:.2f}x)" if p in line else "-" for p in names]
        print(f"| {name} | {line['tilec']:.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
