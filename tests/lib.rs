//! Shared helpers of the test harnesses: independent f64 references and error measures, and
//! the CPU code generator the run tests use, the CLI run in-process, and the Vulkan device of
//! the cross-target tests.

use std::collections::HashMap;
use tilec::{CpuBackend, CpuRunner, SourceSet};
use tilec_frontend::GenericArg;
use tilec_grammar::diag::Diagnostic;
use tilec_runtime::ArgValue;

/// The CPU code generator of the run tests: Cranelift, or LLVM with
/// `TILEC_TEST_CPU_BACKEND=llvm` (in a build with the `ptx` feature), so that both backends
/// pass the same run tests (tools/test.sh runs them twice).
pub fn cpu_backend() -> CpuBackend {
    match std::env::var("TILEC_TEST_CPU_BACKEND").as_deref() {
        Ok("llvm") => {
            assert!(CpuBackend::Llvm.available(), "TILEC_TEST_CPU_BACKEND=llvm needs `--features llvm`");
            CpuBackend::Llvm
        }
        Ok("cranelift") | Err(_) => CpuBackend::Cranelift,
        Ok(other) => panic!("TILEC_TEST_CPU_BACKEND={other}: expected cranelift or llvm"),
    }
}

/// Every CPU code generator of this build: Cranelift, and LLVM where it is built in (the `ptx`
/// feature), for tests that compare both in one run.
pub fn cpu_backends() -> Vec<CpuBackend> {
    let mut backends = vec![CpuBackend::Cranelift];
    if CpuBackend::Llvm.available() {
        backends.push(CpuBackend::Llvm);
    }
    backends
}

/// Const generic parameters by name, as [`cpu_runner`] takes them (`BS = 64`).
pub fn const_generics(fixed: &[(&str, i64)]) -> HashMap<String, GenericArg> {
    fixed.iter().map(|&(n, v)| (n.to_string(), GenericArg::Const(v))).collect()
}

/// [`CpuRunner::with_backend`] with the backend of [`cpu_backend`].
pub fn cpu_runner(
    src: &SourceSet,
    kernel: &str,
    args: &HashMap<String, ArgValue>,
    fixed: &HashMap<String, GenericArg>,
) -> Result<CpuRunner, Vec<Diagnostic>> {
    CpuRunner::with_backend(src, kernel, args, fixed, cpu_backend())
}

/// Compiles `kernel` of `src` for `target` (element types from the arrays' dtypes unless
/// fixed in `fixed`), binds `args` and launches it once, through the driver's session as
/// `tilec run` and the APIs do; returns the arguments after the launch. The tests' one way to
/// run a kernel on a target (the IR verifier runs after every pass).
pub fn run_on(
    target: tilec::Target,
    src: &SourceSet,
    kernel: &str,
    args: HashMap<String, ArgValue>,
    fixed: &HashMap<String, GenericArg>,
) -> Result<tilec_runtime::Bound, tilec::Error> {
    let session =
        tilec::driver::Session::new(src.clone(), tilec::SessionOptions { verify: true, ..Default::default() });
    let inst = session.instance(kernel, target, &tilec::driver::InstanceRequest::of_args(&args, fixed))?;
    Ok(session.run(&inst, args, 1)?.1)
}

/// Plain unblocked Cholesky in f64 (Cholesky–Banachiewicz, row by row) of one `n x n`
/// row-major SPD matrix; returns the lower factor with zeros above the diagonal.
/// Independent of the compiler: this is the oracle for `potrf_batched` and the examples.
pub fn cholesky_f64(a: &[f64], n: usize) -> Vec<f64> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = if i == j { s.sqrt() } else { s / l[j * n + j] };
        }
    }
    l
}

/// Largest normwise relative error over a batch of `n x n` matrices, comparing only the lower
/// triangle: `max_b max_ij |x - r| / max_ij |r|`.
pub fn max_rel_err_lower(x: &[f64], r: &[f64], n: usize) -> f64 {
    let mut worst: f64 = 0.0;
    for (xb, rb) in x.chunks(n * n).zip(r.chunks(n * n)) {
        let mut err: f64 = 0.0;
        let mut scale: f64 = 0.0;
        for i in 0..n {
            for j in 0..=i {
                err = err.max((xb[i * n + j] - rb[i * n + j]).abs());
                scale = scale.max(rb[i * n + j].abs());
            }
        }
        worst = worst.max(err / scale);
    }
    worst
}

/// Largest normwise relative error over whole matrices (upper triangle included).
pub fn max_rel_err(x: &[f64], r: &[f64], n: usize) -> f64 {
    let mut worst: f64 = 0.0;
    for (xb, rb) in x.chunks(n * n).zip(r.chunks(n * n)) {
        let err = xb.iter().zip(rb).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let scale = rb.iter().map(|v| v.abs()).fold(0.0, f64::max);
        worst = worst.max(err / scale);
    }
    worst
}

/// A small deterministic generator (splitmix64) for test inputs, independent of the runtime's.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`, rounded to a value that `f32` represents exactly, so that an
    /// `f32` and an `f64` kernel see the same inputs and share one f64 reference.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (lo + (hi - lo) * u) as f32 as f64
    }

    /// `len` values uniform in `[lo, hi)` (f32-representable).
    pub fn vec(&mut self, len: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..len).map(|_| self.uniform(lo, hi)).collect()
    }

    /// A uniform integer in `lo..hi`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo) as u64) as i64
    }
}

/// Round every value to `f32` and back (what an `f32` kernel sees of `f64` data).
pub fn round_f32(v: &[f64]) -> Vec<f64> {
    v.iter().map(|&x| x as f32 as f64).collect()
}

/// `C <- alpha A B + beta C` in plain f64, row-major, `A: m x k`, `B: k x n`, `C: m x n`
/// (i-k-j loop order). With `beta == 0`, `C` is not read (NaN in `C` does not propagate).
#[allow(clippy::too_many_arguments)]
pub fn gemm_f64(m: usize, n: usize, k: usize, alpha: f64, a: &[f64], b: &[f64], beta: f64, c: &mut [f64]) {
    assert_eq!(a.len(), m * k);
    assert_eq!(b.len(), k * n);
    assert_eq!(c.len(), m * n);
    let mut row = vec![0.0; n];
    for i in 0..m {
        row.iter_mut().for_each(|x| *x = 0.0);
        for p in 0..k {
            let aip = a[i * k + p];
            let brow = &b[p * n..(p + 1) * n];
            for (r, &bv) in row.iter_mut().zip(brow) {
                *r += aip * bv;
            }
        }
        let crow = &mut c[i * n..(i + 1) * n];
        for (cv, &r) in crow.iter_mut().zip(&row) {
            *cv = if beta == 0.0 { alpha * r } else { alpha * r + beta * *cv };
        }
    }
}

/// The plain product `A B` of `A: m x k` and `B: k x n` (row-major), in f64.
pub fn matmul_f64(m: usize, k: usize, n: usize, a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    gemm_f64(m, n, k, 1.0, a, b, 0.0, &mut c);
    c
}

/// The transpose of a row-major `r x c` matrix.
pub fn transpose_f64(a: &[f64], r: usize, c: usize) -> Vec<f64> {
    let mut t = vec![0.0; r * c];
    for i in 0..r {
        for j in 0..c {
            t[j * r + i] = a[i * c + j];
        }
    }
    t
}

/// Which triangular solve: `left`: `op(A) X = B` (X and B are `n x m`); otherwise
/// `X op(A) = B` (X and B are `m x n`). `op(A) = A^T` if `trans`. Only the `lower` (or upper)
/// triangle of `A` is read, and its diagonal is taken as ones if `unit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrsmOp {
    pub left: bool,
    pub lower: bool,
    pub trans: bool,
    pub unit: bool,
}

impl TrsmOp {
    /// All 16 variants.
    pub fn all() -> Vec<TrsmOp> {
        let mut v = Vec::new();
        for left in [true, false] {
            for lower in [true, false] {
                for trans in [false, true] {
                    for unit in [false, true] {
                        v.push(TrsmOp { left, lower, trans, unit });
                    }
                }
            }
        }
        v
    }

    /// The tile method name: `solve_left_lower_t_unit_`, ...
    pub fn method(self) -> String {
        format!(
            "solve_{}_{}{}{}_",
            if self.left { "left" } else { "right" },
            if self.lower { "lower" } else { "upper" },
            if self.trans { "_t" } else { "" },
            if self.unit { "_unit" } else { "" }
        )
    }

    /// The stdlib kernel name (`unit` has no stdlib kernel): `trsm_left_upper_t_batched`.
    pub fn stdlib_kernel(self) -> String {
        assert!(!self.unit, "the stdlib has no unit-diagonal trsm");
        format!(
            "trsm_{}_{}{}_batched",
            if self.left { "left" } else { "right" },
            if self.lower { "lower" } else { "upper" },
            if self.trans { "_t" } else { "" },
        )
    }
}

/// Solves one triangular system in f64 (see [`TrsmOp`]). `a` is `n x n`; `b` has `n * m`
/// elements (`n x m` for left, `m x n` for right). Returns `X` in `b`'s layout.
pub fn trsm_f64(op: TrsmOp, a: &[f64], n: usize, b: &[f64], m: usize) -> Vec<f64> {
    assert_eq!(a.len(), n * n);
    assert_eq!(b.len(), n * m);
    // t = op(tri(A)), dense.
    let mut t = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let inside = if op.lower { j <= i } else { j >= i };
            let v = if i == j && op.unit {
                1.0
            } else if inside {
                a[i * n + j]
            } else {
                0.0
            };
            if op.trans {
                t[j * n + i] = v;
            } else {
                t[i * n + j] = v;
            }
        }
    }
    let t_lower = op.lower != op.trans;
    if op.left {
        solve_left_dense(&t, t_lower, n, b, m)
    } else {
        // X T = B  <=>  T^T X^T = B^T.
        let tt = transpose_f64(&t, n, n);
        let bt = transpose_f64(b, m, n);
        let xt = solve_left_dense(&tt, !t_lower, n, &bt, m);
        transpose_f64(&xt, n, m)
    }
}

/// `T X = B` for a dense `lower` (or upper) triangular `T`, `B: n x m`.
fn solve_left_dense(t: &[f64], lower: bool, n: usize, b: &[f64], m: usize) -> Vec<f64> {
    let mut x = b.to_vec();
    let order: Vec<usize> = if lower { (0..n).collect() } else { (0..n).rev().collect() };
    for &i in &order {
        let mut row = x[i * m..(i + 1) * m].to_vec();
        let ks: Box<dyn Iterator<Item = usize>> = if lower { Box::new(0..i) } else { Box::new(i + 1..n) };
        for k in ks {
            let tik = t[i * n + k];
            if tik != 0.0 {
                for (r, &xv) in row.iter_mut().zip(&x[k * m..(k + 1) * m]) {
                    *r -= tik * xv;
                }
            }
        }
        let d = t[i * n + i];
        for (dst, r) in x[i * m..(i + 1) * m].iter_mut().zip(row) {
            *dst = r / d;
        }
    }
    x
}

/// Cholesky solve in f64: `X = (L L^T)^-1 B` with the lower triangle of `l` (`n x n`) and
/// `B: n x k`.
pub fn potrs_f64(l: &[f64], n: usize, b: &[f64], k: usize) -> Vec<f64> {
    let fwd = TrsmOp { left: true, lower: true, trans: false, unit: false };
    let y = trsm_f64(fwd, l, n, b, k);
    trsm_f64(TrsmOp { trans: true, ..fwd }, l, n, &y, k)
}

/// The Cholesky factorization of `tile.cholesky_(eps)`: the lower factor of the symmetric
/// matrix whose lower triangle is `a`'s (the upper triangle is not read), pivots clamped
/// below by `eps` (`L[j, j] = sqrt(max(d_j, eps))`), zeros above the diagonal. Computed in
/// the column (right-looking) order of the definition.
pub fn cholesky_clamped_f64(a: &[f64], n: usize, eps: f64) -> Vec<f64> {
    let mut w = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            w[i * n + j] = a[i * n + j];
        }
    }
    for j in 0..n {
        let p = w[j * n + j].max(eps).sqrt();
        w[j * n + j] = p;
        for i in j + 1..n {
            w[i * n + j] /= p;
        }
        for i in j + 1..n {
            for k in j + 1..=i {
                w[i * n + k] -= w[i * n + j] * w[k * n + j];
            }
        }
    }
    w
}

/// A well-conditioned triangular `n x n` matrix (condition number below about 10): diagonal
/// in `[1, 2)` with random signs, off-diagonal entries of the `lower` (or upper) triangle
/// uniform in `[-1, 1) / n`. The other triangle holds `garbage` values (large, from `rng`)
/// that a solve must not read. All values are f32-representable.
pub fn random_triangular(rng: &mut Rng, n: usize, lower: bool, garbage: f64) -> Vec<f64> {
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            a[i * n + j] = if i == j {
                let d = rng.uniform(1.0, 2.0);
                if rng.next_u64() & 1 == 0 {
                    d
                } else {
                    -d
                }
            } else if (j < i) == lower {
                rng.uniform(-1.0, 1.0) / n as f64
            } else {
                rng.uniform(-garbage, garbage)
            };
        }
    }
    // Keep everything exactly f32-representable (the division by n may not be).
    round_f32(&a)
}

/// Largest normwise relative error of `x` against the reference `r` over consecutive chunks
/// of `chunk` elements: `max_chunk max |x - r| / max |r|`. NaN anywhere counts as infinite.
pub fn max_rel_err_chunks(x: &[f64], r: &[f64], chunk: usize) -> f64 {
    assert_eq!(x.len(), r.len(), "lengths differ");
    let mut worst: f64 = 0.0;
    for (xb, rb) in x.chunks(chunk).zip(r.chunks(chunk)) {
        let mut err: f64 = 0.0;
        for (a, b) in xb.iter().zip(rb) {
            let d = (a - b).abs();
            err = if d.is_nan() { f64::INFINITY } else { err.max(d) };
        }
        let scale = rb.iter().map(|v| v.abs()).fold(0.0, f64::max);
        let e = if scale == 0.0 { err } else { err / scale };
        worst = worst.max(e);
    }
    worst
}

/// LU with partial pivoting of the row-major `n x n` matrix `a`, with `getrf_batched`'s
/// pivots (LAPACK's getf2: the pivot is the first largest `|a[i, k]|` at or below the
/// diagonal, the first NaN if there is one; the column below it divided by it; the trailing
/// block updated by a product then a difference, where the kernel fuses the two, so the
/// factors agree to rounding): the factors, the pivot rows (0-based) and info (`k + 1` for the
/// first exactly zero pivot, else 0).
pub fn getrf_f64(a: &[f64], n: usize) -> (Vec<f64>, Vec<i32>, i32) {
    let mut u = a.to_vec();
    let mut piv = vec![0i32; n];
    let mut info = 0;
    for k in 0..n {
        let mut p = k;
        let mut best = -1.0f64;
        for i in k..n {
            let v = u[i * n + k].abs();
            if !best.is_nan() && (v.is_nan() || v > best) {
                p = i;
                best = v;
            }
        }
        piv[k] = p as i32;
        for j in 0..n {
            u.swap(k * n + j, p * n + j);
        }
        let d = u[k * n + k];
        if d != 0.0 {
            for i in k + 1..n {
                u[i * n + k] /= d;
                for j in k + 1..n {
                    u[i * n + j] -= u[i * n + k] * u[k * n + j];
                }
            }
        } else if info == 0 {
            info = k as i32 + 1;
        }
    }
    (u, piv, info)
}

/// `A^-1 X` from the factors of [`getrf_f64`] (`lu`, `piv`) for the row-major `n x m` `x`:
/// the rows swapped as `piv` says, then forward and back substitution.
pub fn getrs_f64(lu: &[f64], piv: &[i32], n: usize, x: &[f64], m: usize) -> Vec<f64> {
    let mut x = x.to_vec();
    for (k, &p) in piv.iter().enumerate().take(n) {
        for j in 0..m {
            x.swap(k * m + j, p as usize * m + j);
        }
    }
    for i in 0..n {
        for k in 0..i {
            for j in 0..m {
                x[i * m + j] -= lu[i * n + k] * x[k * m + j];
            }
        }
    }
    for i in (0..n).rev() {
        for k in i + 1..n {
            for j in 0..m {
                x[i * m + j] -= lu[i * n + k] * x[k * m + j];
            }
        }
        for j in 0..m {
            x[i * m + j] /= lu[i * n + i];
        }
    }
    x
}

/// Householder QR of the row-major `m x n` matrix `a` as LAPACK's geqr2 computes it (larfg's
/// reflectors, `beta = -copysign(||x||, alpha)`; each update a product then a difference): the
/// factors in LAPACK's layout (R on and above the diagonal, the reflectors' vectors below it)
/// and the `min(m, n)` taus.
pub fn geqr2_f64(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut a = a.to_vec();
    let mut tau = vec![0.0; m.min(n)];
    for k in 0..m.min(n) {
        let alpha = a[k * n + k];
        let sigma: f64 = (k + 1..m).map(|i| a[i * n + k] * a[i * n + k]).sum();
        if sigma == 0.0 {
            continue;
        }
        let beta = -(alpha * alpha + sigma).sqrt().copysign(alpha);
        let mut v = vec![0.0; m];
        v[k] = 1.0;
        for i in k + 1..m {
            v[i] = a[i * n + k] / (alpha - beta);
        }
        tau[k] = (beta - alpha) / beta;
        for j in k..n {
            let w = (k..m).map(|i| v[i] * a[i * n + j]).sum::<f64>() * tau[k];
            for i in k..m {
                a[i * n + j] -= v[i] * w;
            }
        }
        for i in k + 1..m {
            a[i * n + k] = v[i];
        }
    }
    (a, tau)
}

/// Householder vector `k` of LAPACK-layout factors `f` (`m x n`, row-major): zeros above row
/// `k`, 1 at it, `f[i, k]` below.
pub fn householder_vector(f: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    (0..m)
        .map(|i| {
            if i < k {
                0.0
            } else if i == k {
                1.0
            } else {
                f[i * n + k]
            }
        })
        .collect()
}

/// `Q = H_0 .. H_{k-1}` (`m x m`, row-major, `k = min(m, n)`) in f64 from LAPACK-layout
/// factors `f` (`m x n`) and `tau`, applied to the identity from the last reflector (orgqr).
pub fn orgqr_f64(f: &[f64], tau: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut q: Vec<f64> = (0..m * m).map(|k| if k / m == k % m { 1.0 } else { 0.0 }).collect();
    for k in (0..m.min(n)).rev() {
        let v = householder_vector(f, m, n, k);
        for c in 0..m {
            let dot: f64 = (k..m).map(|i| v[i] * q[i * m + c]).sum();
            for i in k..m {
                q[i * m + c] -= tau[k] * v[i] * dot;
            }
        }
    }
    q
}

/// The least-squares solution of `A X = B` (`a`: `m x n`, `m >= n`, full rank; `b`: `m x k`)
/// from [`geqr2_f64`]'s factors: `R X = (Q^T B)[0:n]`, in f64.
pub fn lstsq_f64(a: &[f64], m: usize, n: usize, b: &[f64], k: usize) -> Vec<f64> {
    let (f, tau) = geqr2_f64(a, m, n);
    let mut y = b.to_vec();
    for (j, t) in tau.iter().enumerate() {
        let v = householder_vector(&f, m, n, j);
        for c in 0..k {
            let w = (0..m).map(|i| v[i] * y[i * k + c]).sum::<f64>() * t;
            for i in 0..m {
                y[i * k + c] -= v[i] * w;
            }
        }
    }
    let mut x = vec![0.0; n * k];
    for c in 0..k {
        for i in (0..n).rev() {
            let s: f64 = (i + 1..n).map(|j| f[i * n + j] * x[j * k + c]).sum();
            x[i * k + c] = (y[i * k + c] - s) / f[i * n + i];
        }
    }
    x
}

/// The symmetric row-major `n x n` matrix whose lower triangle (diagonal included) is that of
/// `a`, the upper triangle mirrored from it.
pub fn symmetric_from_lower(a: &[f64], n: usize) -> Vec<f64> {
    (0..n * n).map(|k| a[(k / n).max(k % n) * n + (k / n).min(k % n)]).collect()
}

/// The eigenvalues of the symmetric row-major `n x n` matrix `a` (its lower triangle), in
/// ascending order, in f64: cyclic Jacobi, sweeping until the off-diagonal part is below
/// 1e-18 of the whole (or 60 sweeps).
pub fn eigvalsh_f64(a: &[f64], n: usize) -> Vec<f64> {
    eigh_f64(a, n).0
}

/// The eigenvalues (ascending) and eigenvectors (the columns of the row-major `n x n` result)
/// of the symmetric matrix `a` (its lower triangle), in f64, as [`eigvalsh_f64`] computes them.
pub fn eigh_f64(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut s = symmetric_from_lower(a, n);
    let mut v: Vec<f64> = (0..n * n).map(|k| if k / n == k % n { 1.0 } else { 0.0 }).collect();
    let total: f64 = s.iter().map(|x| x * x).sum();
    for _ in 0..60 {
        let off: f64 = (0..n * n).filter(|k| k / n != k % n).map(|k| s[k] * s[k]).sum();
        if off <= 1e-36 * total {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if s[p * n + q] == 0.0 {
                    continue;
                }
                let theta = (s[q * n + q] - s[p * n + p]) / (2.0 * s[p * n + q]);
                let t = theta.signum() / (theta.abs() + (1.0 + theta * theta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let sn = t * c;
                for m in [&mut s, &mut v] {
                    for k in 0..n {
                        let (x, y) = (m[k * n + p], m[k * n + q]);
                        m[k * n + p] = c * x - sn * y;
                        m[k * n + q] = sn * x + c * y;
                    }
                }
                for k in 0..n {
                    let (x, y) = (s[p * n + k], s[q * n + k]);
                    s[p * n + k] = c * x - sn * y;
                    s[q * n + k] = sn * x + c * y;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| s[i * n + i].total_cmp(&s[j * n + j]));
    let w = order.iter().map(|&i| s[i * n + i]).collect();
    let vs = (0..n * n).map(|k| v[(k / n) * n + order[k % n]]).collect();
    (w, vs)
}

/// The SVD `a = U diag(s) V^T` of the nonsingular row-major `n x n` matrix `a`, in f64, `s`
/// descending: `V` and `s^2` the eigenvectors and eigenvalues of `a^T a` ([`eigh_f64`]), `U =
/// a V diag(s)^-1`. Accurate for well-conditioned `a` only (it squares the condition number).
pub fn svd_f64(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let ata = matmul_f64(n, n, n, &transpose_f64(a, n, n), a);
    let (w, v) = eigh_f64(&ata, n);
    let v: Vec<f64> = (0..n * n).map(|k| v[(k / n) * n + (n - 1 - k % n)]).collect();
    let s: Vec<f64> = w.iter().rev().map(|x| x.max(0.0).sqrt()).collect();
    let av = matmul_f64(n, n, n, a, &v);
    let u = (0..n * n).map(|k| av[k] / s[k % n]).collect();
    (u, s, v)
}

/// The `n` singular values of the row-major `m x n` matrix `a`, in descending order, in f64:
/// the `n` largest eigenvalues ([`eigvalsh_f64`]) of the symmetric `(m + n) x (m + n)` matrix
/// `[[0, A], [A^T, 0]]`, whose eigenvalues are `±s_i` and zeros (accurate to about
/// `eps ||A||` even for zero singular values, unlike the square roots of `A^T A`'s).
pub fn singular_values_f64(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    let k = m + n;
    let mut aug = vec![0.0; k * k];
    for i in 0..m {
        for j in 0..n {
            aug[i * k + m + j] = a[i * n + j];
            aug[(m + j) * k + i] = a[i * n + j];
        }
    }
    let w = eigvalsh_f64(&aug, k);
    w.iter().rev().take(n).map(|x| x.max(0.0)).collect()
}

/// Runs kernel instance `kernel` of `module` in SIMT form (the PTX form) at `lanes` lanes (checked by the
/// SIMT verifier) with the reference interpreter on copies of the array arguments in `args` (scalars by value) over `grid`, and
/// returns every array argument after the run, by parameter name. Errors (lowering or
/// interpretation) as text.
pub fn run_simt(
    module: &tilec_midend::Module,
    kernel: &tilec_midend::Kernel,
    args: &HashMap<String, ArgValue>,
    lanes: u32,
    grid: [i64; 3],
) -> Result<HashMap<String, tilec_runtime::HostArray>, String> {
    use tilec_midend::simt::{interp, lower_kernel_with};
    use tilec_midend::ParamKind;
    // The PTX form (products staged through shared memory); lavapipe runs the SPIR-V form.
    let simt = lower_kernel_with(module, kernel, lanes, true).map_err(|e| e.to_string())?;
    if let Err(es) = tilec_midend::verify::verify_simt(&simt) {
        return Err(es.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"));
    }
    // Bound as a launch binds them (omitted optional arrays become empty ones).
    let bound = tilec_runtime::bind(kernel, args.clone()).map_err(|e| e.to_string())?;
    let mut arrays: Vec<(String, tilec_runtime::HostArray)> = Vec::new();
    let mut scalars = Vec::new();
    for (name, v) in bound.args() {
        match v {
            ArgValue::Array(a) => arrays.push((name.clone(), a.clone())),
            ArgValue::Scalar(c) => scalars.push(*c),
            ArgValue::Device(_) => return Err(format!("`{name}` is in device memory")),
        }
    }
    let (mut it_a, mut it_s) = (arrays.iter_mut(), scalars.iter());
    let mut iargs: Vec<interp::InterpArg<'_>> = Vec::new();
    for p in &kernel.params {
        match p.kind {
            ParamKind::Array { .. } => {
                let (_, a) = it_a.next().expect("one array per array parameter");
                let (elem, dims) = (a.elem(), a.shape().to_vec());
                iargs.push(interp::InterpArg::Array { elem, dims, data: a.bytes_mut() });
            }
            ParamKind::Scalar(_) => iargs.push(interp::InterpArg::Scalar(*it_s.next().expect("one scalar"))),
        }
    }
    interp::run(&simt, &mut iargs, grid).map_err(|e| e.to_string())?;
    drop(iargs);
    Ok(arrays.into_iter().collect())
}

/// Runs `tilec ARGS...` in-process and returns its stdout; the test fails (with stderr) unless
/// it exits with 0.
pub fn cli_ok(args: &[&str]) -> String {
    let mut argv = vec!["tilec".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tilec::cli::main_with(argv, &mut out, &mut err, false);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
    String::from_utf8(out).expect("stdout is UTF-8")
}

/// The first Vulkan device, or `None` (with a note) when there is none, unless
/// `TILEC_REQUIRE_VULKAN=1`, which makes a missing device a failure.
pub fn vulkan_device() -> Option<tilec_runtime::VulkanDevice> {
    match tilec_runtime::VulkanDevice::open(None) {
        Ok(d) => Some(d),
        Err(e) if std::env::var("TILEC_REQUIRE_VULKAN").as_deref() != Ok("1") => {
            eprintln!("skipped: no Vulkan device ({e})");
            None
        }
        Err(e) => panic!("TILEC_REQUIRE_VULKAN=1 but no Vulkan device: {e}"),
    }
}

/// `a`, matrices of `len` elements each (their count a multiple of `w`), in the compact
/// (batch-interleaved) layout of `potrf_compact_batched` and `geqrf_compact_batched`: element
/// `e` of matrix `p * w + l` at `(p * len + e) * w + l`.
pub fn pack_compact(a: &[f64], len: usize, w: usize) -> Vec<f64> {
    let mut out = vec![0.0; a.len()];
    for (q, mat) in a.chunks(len.max(1)).enumerate() {
        let (p, l) = (q / w, q % w);
        for (e, &x) in mat.iter().enumerate() {
            out[(p * len + e) * w + l] = x;
        }
    }
    out
}

/// The inverse of [`pack_compact`].
pub fn unpack_compact(c: &[f64], len: usize, w: usize) -> Vec<f64> {
    let mut out = vec![0.0; c.len()];
    for (i, &x) in c.iter().enumerate() {
        let (p, e, l) = (i / (len * w), i / w % len, i % w);
        out[(p * w + l) * len + e] = x;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_cholesky_reconstructs_its_input() {
        let a = [4.0, 2.0, 2.0, 5.0];
        let l = cholesky_f64(&a, 2);
        assert_eq!(l, vec![2.0, 0.0, 1.0, 2.0]);
    }
    #[test]
    fn reference_trsm_solves_every_variant() {
        let mut rng = Rng::new(1);
        let (n, m) = (7, 3);
        for op in TrsmOp::all() {
            let a = random_triangular(&mut rng, n, op.lower, 100.0);
            let b = rng.vec(n * m, -1.0, 1.0);
            let x = trsm_f64(op, &a, n, &b, m);
            // Rebuild op(A) and check the product.
            let mut t = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    let inside = if op.lower { j <= i } else { j >= i };
                    let v = if i == j && op.unit {
                        1.0
                    } else if inside {
                        a[i * n + j]
                    } else {
                        0.0
                    };
                    t[if op.trans { j * n + i } else { i * n + j }] = v;
                }
            }
            let back = if op.left { matmul_f64(n, n, m, &t, &x) } else { matmul_f64(m, n, n, &x, &t) };
            assert!(max_rel_err_chunks(&back, &b, b.len()) < 1e-13, "{op:?}");
        }
    }

    #[test]
    fn reference_clamped_cholesky_matches_the_plain_one_on_spd_input() {
        let a = [4.0, 99.0, 2.0, 5.0];
        assert_eq!(cholesky_clamped_f64(&a, 2, 1e-9), vec![2.0, 0.0, 1.0, 2.0]);
        let z = cholesky_clamped_f64(&[0.0, 0.0, 0.0, -3.0], 2, 0.25);
        assert_eq!(z, vec![0.5, 0.0, 0.0, 0.5]);
    }
}
