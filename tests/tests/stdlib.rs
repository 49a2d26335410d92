//! Correctness of the standard library's kernels (`stdlib/linalg.tile`) on the CPU target
//! against the plain f64 references of `tilec_tests`: gemm and gemm_batched, the 8 batched
//! triangular solves and potrs (4096 matrices of 92x92, and odd sizes), row_sum, getrf and
//! getrs (against getf2 in f64 and by their backward errors; singular, NaN and empty inputs),
//! potrf_compact_batched (against potrf_batched's bits and f64), getrf_compact_batched and
//! getrs_compact_batched (likewise, lanes beside singular and NaN ones), geqrf,
//! geqrf_compact_batched, orgqr and gels (against geqr2 in f64, `Q R = A`, `Q^T Q = I`), syevj,
//! syevj_compact_batched, syev_compact_batched, gesvj, gesvj_compact_batched and
//! gesvd_compact_batched (against f64 eigenvalues and singular values, `A = V W V^T`,
//! `A = U S V^T`, orthogonality; repeated, graded, rank-deficient, NaN and empty inputs); and
//! that both
//! CPU code generators give the same bits on them.
//!
//! Inputs are f32-representable, so an f32 and an f64 launch see exactly the same values and
//! share one f64 reference, computed once. Tolerances: normwise relative error (per matrix)
//! at most 1e-4 in f32 and 1e-10 in f64.

use std::collections::HashMap;
use std::sync::OnceLock;
use tilec::{render_diagnostics, ErrorFormat, SourceSet};
use tilec_midend::{Const, Scalar};
use tilec_runtime::{random_spd, ArgValue, HostArray};
use tilec_tests::{
    cholesky_f64, gemm_f64, max_rel_err_chunks, potrs_f64, random_triangular, round_f32, trsm_f64, Rng, TrsmOp,
};

const FLOATS: [Scalar; 2] = [Scalar::F32, Scalar::F64];

fn tol(elem: Scalar) -> f64 {
    match elem {
        Scalar::F32 => 1e-4,
        _ => 1e-10,
    }
}

fn stdlib() -> SourceSet {
    SourceSet::with_stdlib("stdlib/linalg.tile", include_str!("../../stdlib/linalg.tile"))
}

fn arr(elem: Scalar, data: &[f64], shape: &[usize]) -> ArgValue {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    ArgValue::Array(HostArray::from_f64_as(elem, data, &shape).expect("host array"))
}

fn float(elem: Scalar, x: f64) -> ArgValue {
    ArgValue::Scalar(Const::Float(x, elem))
}

/// Runs stdlib kernel `kernel` once (element types from the arrays, const parameters from
/// `fixed`) and returns the array `output` afterwards.
fn run(kernel: &str, args: Vec<(&str, ArgValue)>, fixed: &[(&str, i64)], output: &str) -> Vec<f64> {
    run_with(kernel, args, fixed, &[output]).remove(0)
}

/// Runs stdlib kernel `kernel` once (const parameters from the arrays' extents) and returns
/// the arrays `outputs` afterwards.
fn run_outs(kernel: &str, args: Vec<(&str, ArgValue)>, outputs: &[&str]) -> Vec<Vec<f64>> {
    run_with(kernel, args, &[], outputs)
}

fn run_with(kernel: &str, args: Vec<(&str, ArgValue)>, fixed: &[(&str, i64)], outputs: &[&str]) -> Vec<Vec<f64>> {
    let set = stdlib();
    let args: HashMap<String, ArgValue> = args.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    let fixed = tilec_tests::const_generics(fixed);
    let runner = tilec_tests::cpu_runner(&set, kernel, &args, &fixed).unwrap_or_else(|d| {
        panic!("{kernel} does not compile:\n{}", render_diagnostics(&d, &set, ErrorFormat::Human, false))
    });
    let (bound, _) = runner.run(args).unwrap_or_else(|e| panic!("{kernel}: launch failed: {e}"));
    outputs.iter().map(|o| bound.array(o).expect("output array").to_f64_vec()).collect()
}

// ---------------------------------------------------------------------------------------
// gemm
// ---------------------------------------------------------------------------------------

const ALPHA: f64 = 1.5;
const BETA: f64 = -0.75;

/// `C <- alpha A B + beta C` with `gemm`, both dtypes, against one f64 reference.
fn gemm_case(m: usize, n: usize, k: usize, seed: u64, fixed: &[(&str, i64)]) {
    let mut rng = Rng::new(seed);
    let a = rng.vec(m * k, -1.0, 1.0);
    let b = rng.vec(k * n, -1.0, 1.0);
    let c0 = rng.vec(m * n, -1.0, 1.0);
    let mut want = c0.clone();
    gemm_f64(m, n, k, ALPHA, &a, &b, BETA, &mut want);
    for elem in FLOATS {
        let got = run(
            "gemm",
            vec![
                ("A", arr(elem, &a, &[m, k])),
                ("B", arr(elem, &b, &[k, n])),
                ("C", arr(elem, &c0, &[m, n])),
                ("alpha", float(elem, ALPHA)),
                ("beta", float(elem, BETA)),
            ],
            fixed,
            "C",
        );
        let err = max_rel_err_chunks(&got, &want, want.len());
        assert!(err <= tol(elem), "gemm {elem:?} M={m} N={n} K={k} {fixed:?}: relative error {err:e}");
    }
}

#[test]
fn gemm_1x1x1() {
    gemm_case(1, 1, 1, 1, &[]);
}

#[test]
fn gemm_17x33x65() {
    gemm_case(17, 33, 65, 2, &[]);
}

#[test]
fn gemm_512x512x512() {
    gemm_case(512, 512, 512, 3, &[]);
}

#[test]
fn gemm_1000x1000x1000() {
    gemm_case(1000, 1000, 1000, 4, &[]);
}

/// Other block sizes through the const parameters (`BM`, `BN`, `BK`), including blocks
/// larger than the matrix and blocks of 1.
#[test]
fn gemm_with_other_block_sizes() {
    for (i, fixed) in [
        vec![("BM", 64), ("BN", 16), ("BK", 8)],
        vec![("BM", 16), ("BN", 64), ("BK", 64)],
        vec![("BM", 1), ("BN", 1), ("BK", 1)],
        vec![("BM", 17), ("BN", 5), ("BK", 3)],
    ]
    .into_iter()
    .enumerate()
    {
        gemm_case(37, 29, 45, 10 + i as u64, &fixed);
        gemm_case(3, 70, 2, 20 + i as u64, &fixed);
    }
}

/// With `beta == 0`, C is not read: NaN in C does not reach the result.
#[test]
fn gemm_beta_zero_ignores_nan_in_c() {
    let (m, n, k) = (45, 37, 29);
    let mut rng = Rng::new(5);
    let a = rng.vec(m * k, -1.0, 1.0);
    let b = rng.vec(k * n, -1.0, 1.0);
    let c0 = vec![f64::NAN; m * n];
    let mut want = c0.clone();
    gemm_f64(m, n, k, ALPHA, &a, &b, 0.0, &mut want);
    for elem in FLOATS {
        let got = run(
            "gemm",
            vec![
                ("A", arr(elem, &a, &[m, k])),
                ("B", arr(elem, &b, &[k, n])),
                ("C", arr(elem, &c0, &[m, n])),
                ("alpha", float(elem, ALPHA)),
                ("beta", float(elem, 0.0)),
            ],
            &[],
            "C",
        );
        assert!(got.iter().all(|x| !x.is_nan()), "{elem:?}: NaN in the result");
        let err = max_rel_err_chunks(&got, &want, want.len());
        assert!(err <= tol(elem), "{elem:?}: relative error {err:e}");
    }
}

/// `gemm_batched` on small and odd shapes; every batch entry has its own matrices.
#[test]
fn gemm_batched_small_cases() {
    for (bt, m, n, k, seed) in [(1, 1, 1, 1, 30), (3, 17, 33, 65, 31), (5, 40, 20, 70, 32), (2, 64, 64, 64, 33)] {
        let mut rng = Rng::new(seed);
        let a = rng.vec(bt * m * k, -1.0, 1.0);
        let b = rng.vec(bt * k * n, -1.0, 1.0);
        let c0 = rng.vec(bt * m * n, -1.0, 1.0);
        let mut want = c0.clone();
        for q in 0..bt {
            gemm_f64(
                m,
                n,
                k,
                ALPHA,
                &a[q * m * k..(q + 1) * m * k],
                &b[q * k * n..(q + 1) * k * n],
                BETA,
                &mut want[q * m * n..(q + 1) * m * n],
            );
        }
        for elem in FLOATS {
            let got = run(
                "gemm_batched",
                vec![
                    ("A", arr(elem, &a, &[bt, m, k])),
                    ("B", arr(elem, &b, &[bt, k, n])),
                    ("C", arr(elem, &c0, &[bt, m, n])),
                    ("alpha", float(elem, ALPHA)),
                    ("beta", float(elem, BETA)),
                ],
                &[],
                "C",
            );
            let err = max_rel_err_chunks(&got, &want, m * n);
            assert!(err <= tol(elem), "gemm_batched {elem:?} Bt={bt} M={m} N={n} K={k}: relative error {err:e}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Triangular solves and potrs.
// ---------------------------------------------------------------------------------------

/// A batch of triangular systems: `A: [batch, n, n]` with a well-conditioned `lower` (or
/// upper) triangle and garbage in the other, right-hand sides `X: [batch, n * m]` (`n x m`
/// for left solves, `m x n` for right ones).
struct Systems {
    batch: usize,
    n: usize,
    m: usize,
    a: Vec<f64>,
    x: Vec<f64>,
}

impl Systems {
    fn new(batch: usize, n: usize, m: usize, lower: bool, garbage: f64, seed: u64) -> Systems {
        let mut rng = Rng::new(seed);
        let mut a = Vec::with_capacity(batch * n * n);
        for _ in 0..batch {
            let mut t = random_triangular(&mut rng, n, lower, 1e3);
            if garbage.is_nan() {
                for i in 0..n {
                    for j in 0..n {
                        if (j > i) == lower && i != j {
                            t[i * n + j] = garbage;
                        }
                    }
                }
            }
            a.extend(t);
        }
        let x = rng.vec(batch * n * m, -1.0, 1.0);
        Systems { batch, n, m, a, x }
    }

    /// The f64 reference of `op` (or of potrs when `op` is `None`), matrix by matrix.
    fn reference(&self, op: Option<TrsmOp>) -> Vec<f64> {
        let (n, m) = (self.n, self.m);
        let solve = |q: usize| {
            let a = &self.a[q * n * n..(q + 1) * n * n];
            let x = &self.x[q * n * m..(q + 1) * n * m];
            match op {
                Some(op) => trsm_f64(op, a, n, x, m),
                None => potrs_f64(a, n, x, m),
            }
        };
        // Two threads: the reference runs at the test profile's low optimisation level.
        let half = self.batch / 2;
        let (lo, hi) = std::thread::scope(|s| {
            let h = s.spawn(|| (half..self.batch).flat_map(solve).collect::<Vec<f64>>());
            let lo: Vec<f64> = (0..half).flat_map(solve).collect();
            (lo, h.join().expect("reference thread"))
        });
        let mut r = lo;
        r.extend(hi);
        r
    }

    /// Runs `kernel` (a trsm or potrs) in `elem` and returns the solutions.
    fn run(&self, kernel: &str, left: bool, elem: Scalar) -> Vec<f64> {
        let (b, n, m) = (self.batch, self.n, self.m);
        let xshape = if left { [b, n, m] } else { [b, m, n] };
        let names = if kernel == "potrs_batched" { ("L", "X") } else { ("A", "X") };
        run(kernel, vec![(names.0, arr(elem, &self.a, &[b, n, n])), (names.1, arr(elem, &self.x, &xshape))], &[], "X")
    }
}

/// The 8 stdlib trsm variants.
fn stdlib_trsm_ops() -> Vec<TrsmOp> {
    TrsmOp::all().into_iter().filter(|op| !op.unit).collect()
}

/// The 4096 x 92 x 92 systems (with 20 right-hand sides), one per triangle, built once.
fn big(lower: bool) -> &'static Systems {
    static LOWER: OnceLock<Systems> = OnceLock::new();
    static UPPER: OnceLock<Systems> = OnceLock::new();
    let cell = if lower { &LOWER } else { &UPPER };
    cell.get_or_init(|| Systems::new(4096, 92, 20, lower, 1e3, if lower { 40 } else { 41 }))
}

fn check(got: &[f64], want: &[f64], chunk: usize, elem: Scalar, what: &str) {
    let err = max_rel_err_chunks(got, want, chunk);
    assert!(err <= tol(elem), "{what} {elem:?}: relative error {err:e}");
}

/// One stdlib trsm variant on 4096 systems of order 92, f32 and f64.
fn big_trsm(left: bool, lower: bool, trans: bool) {
    let op = TrsmOp { left, lower, trans, unit: false };
    let sys = big(lower);
    let want = sys.reference(Some(op));
    for elem in FLOATS {
        let got = sys.run(&op.stdlib_kernel(), left, elem);
        check(&got, &want, sys.n * sys.m, elem, &format!("{} 4096x92x92, 20 rhs", op.stdlib_kernel()));
    }
}

#[test]
fn trsm_left_lower_4096x92x92() {
    big_trsm(true, true, false);
}

#[test]
fn trsm_left_lower_t_4096x92x92() {
    big_trsm(true, true, true);
}

#[test]
fn trsm_left_upper_4096x92x92() {
    big_trsm(true, false, false);
}

#[test]
fn trsm_left_upper_t_4096x92x92() {
    big_trsm(true, false, true);
}

#[test]
fn trsm_right_lower_4096x92x92() {
    big_trsm(false, true, false);
}

#[test]
fn trsm_right_lower_t_4096x92x92() {
    big_trsm(false, true, true);
}

#[test]
fn trsm_right_upper_4096x92x92() {
    big_trsm(false, false, false);
}

#[test]
fn trsm_right_upper_t_4096x92x92() {
    big_trsm(false, false, true);
}

#[test]
fn potrs_4096x92x92() {
    let sys = big(true);
    let want = sys.reference(None);
    for elem in FLOATS {
        let got = sys.run("potrs_batched", true, elem);
        check(&got, &want, sys.n * sys.m, elem, "potrs_batched 4096x92x92, 20 rhs");
    }
}

/// Every trsm variant and potrs at odd orders (1, 17, 33) and right-hand side widths
/// (1, 16, 17, 33), with NaN in the triangle that must not be read.
#[test]
fn trsm_and_potrs_odd_sizes_ignore_nan_in_the_other_triangle() {
    let mut seed = 100;
    for n in [1, 17, 33] {
        for m in [1, 16, 17, 33] {
            for lower in [true, false] {
                seed += 1;
                let sys = Systems::new(3, n, m, lower, f64::NAN, seed);
                for op in stdlib_trsm_ops().into_iter().filter(|op| op.lower == lower) {
                    let want = sys.reference(Some(op));
                    for elem in FLOATS {
                        let got = sys.run(&op.stdlib_kernel(), op.left, elem);
                        check(&got, &want, n * m, elem, &format!("{} N={n} M={m}", op.stdlib_kernel()));
                    }
                }
                if lower {
                    let want = sys.reference(None);
                    for elem in FLOATS {
                        let got = sys.run("potrs_batched", true, elem);
                        check(&got, &want, n * m, elem, &format!("potrs_batched N={n} K={m}"));
                    }
                }
            }
        }
    }
}

/// potrf then potrs solves `A X = B` for SPD `A` (against the reference Cholesky solve).
#[test]
fn potrf_then_potrs_solves_spd_systems() {
    let (batch, n, k) = (9, 50, 7);
    let a = round_f32(&random_spd(batch, n, 77));
    let mut rng = Rng::new(78);
    let x = rng.vec(batch * n * k, -1.0, 1.0);
    for elem in FLOATS {
        let eps = if elem == Scalar::F32 { 1e-6 } else { 1e-12 };
        let l = run("potrf_batched", vec![("A", arr(elem, &a, &[batch, n, n])), ("eps", float(elem, eps))], &[], "A");
        let got = run(
            "potrs_batched",
            vec![("L", arr(elem, &l, &[batch, n, n])), ("X", arr(elem, &x, &[batch, n, k]))],
            &[],
            "X",
        );
        let want: Vec<f64> = (0..batch)
            .flat_map(|q| {
                let lq = cholesky_f64(&a[q * n * n..(q + 1) * n * n], n);
                potrs_f64(&lq, n, &x[q * n * k..(q + 1) * n * k], k)
            })
            .collect();
        check(&got, &want, n * k, elem, "potrf + potrs");
    }
}

/// potrf_compact_batched, for packs of 16 and 8 matrices (W from the array's last extent),
/// orders 1 to 33: the lower triangle within 1e-4 (f32) or 1e-10 (f64) of the f64 Cholesky
/// factor, the upper triangle untouched, and for orders up to 16 (one tile of
/// `potrf_batched`) the same bits as `potrf_batched`'s lower triangle.
#[test]
fn potrf_compact_matches_potrf_batched_and_f64() {
    for (w, packs, n) in [(16, 2, 1), (16, 1, 5), (8, 3, 16), (16, 2, 16), (8, 1, 33)] {
        let b = packs * w;
        let a = round_f32(&random_spd(b, n, 40 + n as u64));
        let want: Vec<f64> = a.chunks(n * n).flat_map(|m| cholesky_f64(m, n)).collect();
        for elem in FLOATS {
            let eps = if elem == Scalar::F32 { 1e-6 } else { 1e-12 };
            let packed = arr(elem, &tilec_tests::pack_compact(&a, n * n, w), &[packs, n, n, w]);
            let got = run("potrf_compact_batched", vec![("A", packed), ("eps", float(elem, eps))], &[], "A");
            let got = tilec_tests::unpack_compact(&got, n * n, w);
            let what = format!("potrf_compact_batched {elem:?} W={w} N={n}");
            let err = tilec_tests::max_rel_err_lower(&got, &want, n);
            assert!(err <= tol(elem), "{what}: relative error {err:e}");
            for (q, (g, x)) in got.chunks(n * n).zip(a.chunks(n * n)).enumerate() {
                for i in 0..n {
                    for j in i + 1..n {
                        assert_eq!(g[i * n + j], x[i * n + j], "{what}: matrix {q} upper ({i}, {j}) changed");
                    }
                }
            }
            if n <= 16 {
                let plain =
                    run("potrf_batched", vec![("A", arr(elem, &a, &[b, n, n])), ("eps", float(elem, eps))], &[], "A");
                for (q, (g, p)) in got.chunks(n * n).zip(plain.chunks(n * n)).enumerate() {
                    for i in 0..n {
                        for j in 0..=i {
                            let (x, y) = (g[i * n + j], p[i * n + j]);
                            assert_eq!(
                                x.to_bits(),
                                y.to_bits(),
                                "{what}: matrix {q} ({i}, {j}): {x} vs potrf_batched {y}"
                            );
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// row_sum
// ---------------------------------------------------------------------------------------

#[test]
fn row_sum_matches_f64() {
    let mut rng = Rng::new(90);
    for (m, n) in [(1, 1), (15, 63), (16, 64), (17, 65), (100, 200), (33, 1)] {
        let x = rng.vec(m * n, -1.0, 1.0);
        let want: Vec<f64> = x.chunks(n).map(|r| r.iter().sum()).collect();
        for elem in FLOATS {
            let got = run(
                "row_sum",
                vec![("X", arr(elem, &x, &[m, n])), ("out", arr(elem, &vec![f64::NAN; m], &[m]))],
                &[],
                "out",
            );
            // Row sums cancel: scale the error by the row's absolute sum.
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let scale: f64 = x[i * n..(i + 1) * n].iter().map(|v| v.abs()).sum();
                let err = (g - w).abs() / scale.max(f64::MIN_POSITIVE);
                assert!(err <= tol(elem) / 10.0, "row_sum {elem:?} {m}x{n} row {i}: got {g}, want {w}");
            }
        }
    }
}

/// A kernel, its arguments and the output to compare.
type Case = (String, Vec<(&'static str, ArgValue)>, &'static str);

// ---------------------------------------------------------------------------------------
// getrf, getrs
// ---------------------------------------------------------------------------------------

fn int_array(data: &[f64], shape: &[usize]) -> ArgValue {
    arr(Scalar::I32, data, shape)
}

/// `getrf_batched` on the `b` stacked `n x n` matrices `a`: the factors, the pivots and info.
fn getrf(elem: Scalar, a: &[f64], b: usize, n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let args = vec![
        ("A", arr(elem, a, &[b, n, n])),
        ("ipiv", int_array(&vec![-1.0; b * n], &[b, n])),
        ("info", int_array(&vec![-1.0; b], &[b])),
    ];
    let mut out = run_outs("getrf_batched", args, &["A", "ipiv", "info"]);
    let info = out.pop().unwrap();
    let piv = out.pop().unwrap();
    (out.pop().unwrap(), piv, info)
}

/// The largest `max |P A - L U| / (n eps max |A|)` of the batch, from `getrf_batched`'s
/// outputs, in f64: the factors' backward error.
fn lu_backward_error(a: &[f64], lu: &[f64], piv: &[f64], n: usize, eps: f64) -> f64 {
    let mut worst = 0.0f64;
    for (i, (m, f)) in a.chunks(n * n).zip(lu.chunks(n * n)).enumerate() {
        let mut pa = m.to_vec();
        for k in 0..n {
            let p = piv[i * n + k] as usize;
            for j in 0..n {
                pa.swap(k * n + j, p * n + j);
            }
        }
        let scale = m.iter().fold(0.0f64, |s, x| s.max(x.abs())).max(f64::MIN_POSITIVE);
        for r in 0..n {
            for c in 0..n {
                // (L U)[r, c], L with its unit diagonal, U upper triangular.
                let s: f64 = (0..=r.min(c)).map(|k| if k == r { 1.0 } else { f[r * n + k] } * f[k * n + c]).sum();
                worst = worst.max((pa[r * n + c] - s).abs() / (n as f64 * eps * scale));
            }
        }
    }
    worst
}

#[test]
fn getrf_matches_getf2_and_its_factors_reproduce_a() {
    let mut rng = Rng::new(41);
    for n in [1, 5, 17, 32, 64] {
        let b = 3;
        let a = round_f32(&rng.vec(b * n * n, -1.0, 1.0));
        // f64: the reference's factors and pivots (the same operations in the same order).
        let (lu, piv, info) = getrf(Scalar::F64, &a, b, n);
        for (i, m) in a.chunks(n * n).enumerate() {
            let (wl, wp, wi) = tilec_tests::getrf_f64(m, n);
            let err = lu[i * n * n..(i + 1) * n * n].iter().zip(&wl).fold(0.0f64, |e, (g, w)| e.max((g - w).abs()));
            assert!(err <= 1e-12, "getrf f64 n {n} matrix {i}: factors differ by {err:e}");
            let wp: Vec<f64> = wp.iter().map(|&p| p as f64).collect();
            assert_eq!(&piv[i * n..(i + 1) * n], &wp[..], "getrf f64 n {n} matrix {i}: pivots");
            assert_eq!(info[i], wi as f64);
        }
        assert!(lu_backward_error(&a, &lu, &piv, n, f64::EPSILON) <= 4.0);
        // f32: factors that reproduce P A within a few n eps.
        let (lu, piv, info) = getrf(Scalar::F32, &a, b, n);
        assert!(info.iter().all(|&i| i == 0.0), "{info:?}");
        let e = lu_backward_error(&a, &lu, &piv, n, f32::EPSILON as f64);
        assert!(e <= 4.0, "getrf f32 n {n}: |PA - LU| is {e} n eps |A|");
    }
}

#[test]
fn getrf_reports_singular_matrices_and_stays_finite_and_nan_stays_in_its_matrix() {
    let (b, n) = (5, 6);
    let mut rng = Rng::new(43);
    let mut a = round_f32(&rng.vec(b * n * n, -1.0, 1.0));
    let m = |k: usize, r: usize, c: usize| k * n * n + r * n + c;
    for r in 0..n {
        a[m(1, r, 2)] = 0.0; // a zero column: U[2, 2] = 0, info 3
        for c in 0..n {
            a[m(2, r, c)] = 0.0; // the zero matrix: info 1
            a[m(3, r, c)] = if r == c && r < n - 1 { 1.0 } else { 0.0 }; // I but U[5, 5] = 0: info 6
        }
    }
    a[m(4, 2, 3)] = f64::NAN;
    for elem in FLOATS {
        let (lu, piv, info) = getrf(elem, &a, b, n);
        assert_eq!(&info[..4], &[0.0, 3.0, 1.0, 6.0], "{elem:?}");
        assert!(lu[..4 * n * n].iter().all(|x| x.is_finite()), "{elem:?}: singular factors are finite");
        assert_eq!(&piv[2 * n..3 * n], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "{elem:?}: no row beats a zero pivot");
        assert!(lu_backward_error(&a[..4 * n * n], &lu[..4 * n * n], &piv, n, 1e-6) <= 4.0, "{elem:?}");
        assert!(lu[4 * n * n..].iter().any(|x| x.is_nan()), "{elem:?}: NaN stays in its own matrix");
    }
}

#[test]
fn getrf_and_getrs_take_empty_matrices_and_empty_batches() {
    for elem in FLOATS {
        let (_, _, info) = getrf(elem, &[], 3, 0);
        assert_eq!(info, [0.0; 3], "N = 0: each empty matrix is factored");
        let (lu, _, info) = getrf(elem, &[], 0, 4);
        assert!(lu.is_empty() && info.is_empty());
        let x = run(
            "getrs_batched",
            vec![
                ("LU", arr(elem, &[], &[2, 0, 0])),
                ("ipiv", int_array(&[], &[2, 0])),
                ("X", arr(elem, &[], &[2, 0, 3])),
            ],
            &[],
            "X",
        );
        assert!(x.is_empty());
    }
}

#[test]
fn getrs_solves_with_getrf_s_factors() {
    let mut rng = Rng::new(47);
    for (n, k) in [(1, 1), (5, 3), (17, 1), (32, 2), (64, 1)] {
        let b = 3;
        let a = round_f32(&rng.vec(b * n * n, -1.0, 1.0));
        let x = round_f32(&rng.vec(b * n * k, -1.0, 1.0));
        for elem in FLOATS {
            let (lu, piv, _) = getrf(elem, &a, b, n);
            let args = vec![
                ("LU", arr(elem, &lu, &[b, n, n])),
                ("ipiv", int_array(&piv, &[b, n])),
                ("X", arr(elem, &x, &[b, n, k])),
            ];
            let got = run("getrs_batched", args, &[], "X");
            // Against the substitutions of the same factors in f64.
            let mut want = Vec::new();
            for i in 0..b {
                let p: Vec<i32> = piv[i * n..(i + 1) * n].iter().map(|&p| p as i32).collect();
                want.extend(tilec_tests::getrs_f64(
                    &lu[i * n * n..(i + 1) * n * n],
                    &p,
                    n,
                    &x[i * n * k..(i + 1) * n * k],
                    k,
                ));
            }
            check(&got, &want, n * k, elem, &format!("getrs n {n} k {k}"));
            // And A X = B: the residual relative to |A| |X|.
            for i in 0..b {
                for r in 0..n {
                    for c in 0..k {
                        let ax: f64 = (0..n).map(|j| a[i * n * n + r * n + j] * got[i * n * k + j * k + c]).sum();
                        let norm: f64 =
                            (0..n).map(|j| (a[i * n * n + r * n + j] * got[i * n * k + j * k + c]).abs()).sum();
                        let eps = eps_of(elem);
                        let res = (ax - x[i * n * k + r * k + c]).abs() / (n as f64 * eps * norm.max(1e-30));
                        assert!(res <= 64.0, "getrs {elem:?} n {n} k {k}: residual {res} n eps |A||X|");
                    }
                }
            }
        }
    }
}

/// `getrf_compact_batched` on the `b` stacked `n x n` matrices `a`, packed `w` at a time: the
/// factors, the pivots and info, unpacked.
fn getrf_compact(elem: Scalar, a: &[f64], b: usize, n: usize, w: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let p = b / w;
    let args = vec![
        ("A", arr(elem, &tilec_tests::pack_compact(a, n * n, w), &[p, n, n, w])),
        ("ipiv", int_array(&vec![-1.0; b * n], &[p, n, w])),
        ("info", int_array(&vec![-1.0; b], &[p, w])),
    ];
    let out = run_outs("getrf_compact_batched", args, &["A", "ipiv", "info"]);
    let mut un = [n * n, n, 1].into_iter().zip(&out).map(|(len, o)| tilec_tests::unpack_compact(o, len, w));
    (un.next().unwrap(), un.next().unwrap(), un.next().unwrap())
}

/// getrf_compact_batched, packs of 4, 8 and 16: in f64 the pivots, info and factors of f64
/// getf2 (the factors within rounding: the update is a product then a difference); in f32
/// factors that reproduce P A within a few n eps. Singular matrices (a zero column, the zero
/// matrix, I with a zero last pivot) and a NaN matrix sit in lanes beside random ones: each
/// gets getrf_batched's info in its own lane, the NaN stays in its matrix, and the matrices
/// beside them are factored as if alone.
#[test]
fn getrf_compact_matches_getf2_and_keeps_lanes_apart() {
    let mut rng = Rng::new(79);
    for (w, n) in [(4, 1), (4, 6), (8, 17), (16, 5), (8, 32), (16, 64)] {
        let b = 2 * w;
        let mut a = round_f32(&rng.vec(b * n * n, -1.0, 1.0));
        let m = |k: usize, r: usize, c: usize| k * n * n + r * n + c;
        let (zero_col, zero, eye, nan) = (1, w - 1, w, w + 1);
        for r in 0..n {
            a[m(zero_col, r, n / 2)] = 0.0;
            for c in 0..n {
                a[m(zero, r, c)] = 0.0;
                a[m(eye, r, c)] = if r == c && r + 1 < n { 1.0 } else { 0.0 };
            }
        }
        a[m(nan, n / 2, n - 1)] = f64::NAN;
        for elem in FLOATS {
            let (lu, piv, info) = getrf_compact(elem, &a, b, n, w);
            let eps = eps_of(elem);
            for i in 0..b {
                let ctx = format!("{elem:?} W={w} n {n} matrix {i}");
                let (got, got_piv) = (&lu[i * n * n..(i + 1) * n * n], &piv[i * n..(i + 1) * n]);
                if i == nan {
                    assert!(got.iter().any(|x| x.is_nan()), "{ctx}: the NaN stays in its matrix");
                    continue;
                }
                let (want, want_piv, want_info) = tilec_tests::getrf_f64(&a[i * n * n..(i + 1) * n * n], n);
                assert_eq!(info[i], want_info as f64, "{ctx}: info");
                assert!(got.iter().all(|x| x.is_finite()), "{ctx}: finite factors");
                let e = lu_backward_error(&a[i * n * n..(i + 1) * n * n], got, got_piv, n, eps);
                assert!(e <= 4.0, "{ctx}: |PA - LU| is {e} n eps |A|");
                if elem == Scalar::F64 {
                    let want_piv: Vec<f64> = want_piv.iter().map(|&p| p as f64).collect();
                    assert_eq!(got_piv, &want_piv[..], "{ctx}: pivots");
                    let err = got.iter().zip(&want).fold(0.0f64, |e, (g, w)| e.max((g - w).abs()));
                    assert!(err <= 1e-12, "{ctx}: factors differ from getf2's by {err:e}");
                }
            }
        }
    }
}

/// getrs_compact_batched with getrf_compact_batched's factors: X against the substitutions
/// of the same factors in f64 and `A X = B` within rounding; then N = 0 and an empty batch.
#[test]
fn getrs_compact_solves_with_getrf_compact_s_factors_and_takes_empty_input() {
    let mut rng = Rng::new(83);
    for (w, n, k) in [(4, 1, 1), (8, 5, 3), (16, 17, 1), (8, 32, 2), (16, 64, 1)] {
        let b = 2 * w;
        let a = round_f32(&rng.vec(b * n * n, -1.0, 1.0));
        let x = round_f32(&rng.vec(b * n * k, -1.0, 1.0));
        for elem in FLOATS {
            let (lu, piv, _) = getrf_compact(elem, &a, b, n, w);
            let pack = |v: &[f64], len: usize| tilec_tests::pack_compact(v, len, w);
            let args = vec![
                ("LU", arr(elem, &pack(&lu, n * n), &[b / w, n, n, w])),
                ("ipiv", int_array(&pack(&piv, n), &[b / w, n, w])),
                ("X", arr(elem, &pack(&x, n * k), &[b / w, n, k, w])),
            ];
            let got = tilec_tests::unpack_compact(&run("getrs_compact_batched", args, &[], "X"), n * k, w);
            let mut want = Vec::new();
            for i in 0..b {
                let p: Vec<i32> = piv[i * n..(i + 1) * n].iter().map(|&p| p as i32).collect();
                let (lu_i, x_i) = (&lu[i * n * n..(i + 1) * n * n], &x[i * n * k..(i + 1) * n * k]);
                want.extend(tilec_tests::getrs_f64(lu_i, &p, n, x_i, k));
            }
            check(&got, &want, n * k, elem, &format!("getrs_compact W={w} n {n} k {k}"));
        }
    }
    for elem in FLOATS {
        let (_, _, info) = getrf_compact(elem, &[], 8, 0, 4);
        assert_eq!(info, [0.0; 8], "{elem:?}: N = 0: each empty matrix is factored");
        let (lu, _, info) = getrf_compact(elem, &[], 0, 3, 4);
        assert!(lu.is_empty() && info.is_empty(), "{elem:?}: an empty batch");
        let args = vec![
            ("LU", arr(elem, &[], &[2, 0, 0, 4])),
            ("ipiv", int_array(&[], &[2, 0, 4])),
            ("X", arr(elem, &[], &[2, 0, 3, 4])),
        ];
        assert!(run("getrs_compact_batched", args, &[], "X").is_empty(), "{elem:?}");
    }
}

// ---------------------------------------------------------------------------------------
// geqrf, orgqr, gels
// ---------------------------------------------------------------------------------------

/// `geqrf_batched` on the `b` stacked `m x n` matrices `a`: the factors and the taus.
fn geqrf(elem: Scalar, a: &[f64], b: usize, m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    let args = vec![("A", arr(elem, a, &[b, m, n])), ("tau", arr(elem, &vec![f64::NAN; b * k], &[b, k]))];
    let mut out = run_outs("geqrf_batched", args, &["A", "tau"]);
    let tau = out.pop().unwrap();
    (out.pop().unwrap(), tau)
}

#[test]
fn geqrf_matches_geqr2_and_orgqr_forms_an_orthonormal_q() {
    let mut rng = Rng::new(53);
    for (m, n) in [(1, 1), (5, 5), (17, 9), (9, 17), (32, 32), (64, 40)] {
        let b = 3;
        let a = round_f32(&rng.vec(b * m * n, -1.0, 1.0));
        for elem in FLOATS {
            let eps = eps_of(elem);
            let (f, tau) = geqrf(elem, &a, b, m, n);
            let k = m.min(n);
            if elem == Scalar::F64 {
                for i in 0..b {
                    let (wf, wt) = tilec_tests::geqr2_f64(&a[i * m * n..(i + 1) * m * n], m, n);
                    let ef =
                        f[i * m * n..(i + 1) * m * n].iter().zip(&wf).fold(0.0f64, |e, (g, w)| e.max((g - w).abs()));
                    let et = tau[i * k..(i + 1) * k].iter().zip(&wt).fold(0.0f64, |e, (g, w)| e.max((g - w).abs()));
                    assert!(ef <= 1e-12 && et <= 1e-12, "geqrf {m}x{n} matrix {i}: factors {ef:e}, tau {et:e}");
                }
            }
            if m < n {
                continue;
            }
            let q = run(
                "orgqr_batched",
                vec![("A", arr(elem, &f, &[b, m, n])), ("tau", arr(elem, &tau, &[b, n]))],
                &[],
                "A",
            );
            for i in 0..b {
                let (qi, fi, ai) = (&q[i * m * n..], &f[i * m * n..], &a[i * m * n..]);
                let mut rec = 0.0f64;
                for r in 0..m {
                    for c in 0..n {
                        // (Q R)[r, c] and A[r, c].
                        let qr: f64 = (0..=c).map(|j| qi[r * n + j] * fi[j * n + c]).sum();
                        rec = rec.max((qr - ai[r * n + c]).abs());
                    }
                }
                let orth = orthogonality(qi, m, n, n);
                let scale = ai[..m * n].iter().fold(0.0f64, |s, x| s.max(x.abs()));
                assert!(rec <= 8.0 * m as f64 * eps * scale, "{elem:?} {m}x{n}: |QR - A| = {rec:e}");
                assert!(orth <= 8.0 * m as f64 * eps, "{elem:?} {m}x{n}: |Q^T Q - I| = {orth:e}");
            }
        }
    }
}

/// geqrf_compact_batched, for packs of 16, 8 and 4 matrices, square, tall and wide: the
/// factors and taus of LAPACK's geqr2 in f64 (within 1e-12 in f64, `8 m eps` relative in f32).
#[test]
fn geqrf_compact_matches_geqr2() {
    let mut rng = Rng::new(61);
    for (w, packs, m, n) in
        [(16, 1, 1, 1), (8, 2, 17, 9), (16, 1, 9, 17), (8, 1, 33, 33), (4, 1, 64, 40), (4, 1, 20, 40)]
    {
        let (b, k) = (packs * w, m.min(n));
        let a = round_f32(&rng.vec(b * m * n, -1.0, 1.0));
        for elem in FLOATS {
            let args = vec![
                ("A", arr(elem, &tilec_tests::pack_compact(&a, m * n, w), &[packs, m, n, w])),
                ("tau", arr(elem, &vec![f64::NAN; b * k], &[packs, k, w])),
            ];
            let out = run_outs("geqrf_compact_batched", args, &["A", "tau"]);
            let (f, tau) = (tilec_tests::unpack_compact(&out[0], m * n, w), tilec_tests::unpack_compact(&out[1], k, w));
            let bound = if elem == Scalar::F64 { 1e-12 } else { 8.0 * m as f64 * eps_of(elem) * 4.0 };
            for i in 0..b {
                let (wf, wt) = tilec_tests::geqr2_f64(&a[i * m * n..(i + 1) * m * n], m, n);
                let ef = f[i * m * n..(i + 1) * m * n].iter().zip(&wf).fold(0.0f64, |e, (g, w)| e.max((g - w).abs()));
                let et = tau[i * k..(i + 1) * k].iter().zip(&wt).fold(0.0f64, |e, (g, w)| e.max((g - w).abs()));
                assert!(ef <= bound && et <= bound, "{elem:?} W={w} {m}x{n} matrix {i}: factors {ef:e}, tau {et:e}");
            }
        }
    }
}

/// geqrf_batched and geqrf_compact_batched on graded matrices (columns or rows scaled by
/// 2^-2i down to 2^-126, or columns growing to 1 from there) and on matrices of subnormal
/// elements (2^-130 in f32, 2^-1030 in f64): `Q R = A` and `Q^T Q = I` within `8 m eps`
/// (with the subnormals' spacing for the last). With the norms' squares unscaled, Q was 0.24
/// from orthogonal at 64 x 64 f32 and the subnormal matrices came back unreduced (tau = 0).
#[test]
fn geqrf_keeps_q_orthogonal_for_graded_and_subnormal_matrices() {
    let mut rng = Rng::new(67);
    let (w, n) = (4, 64);
    for elem in FLOATS {
        let eps = eps_of(elem);
        let small = if elem == Scalar::F32 { 2f64.powi(-130) } else { 2f64.powi(-1030) };
        let quantum = if elem == Scalar::F32 { 2f64.powi(-149) } else { 2f64.powi(-1074) };
        let grades: [&dyn Fn(usize, usize) -> f64; 4] = [
            &|_, c| 2f64.powi(-2 * c as i32),
            &|r, _| 2f64.powi(-2 * r as i32),
            &|_, c| 2f64.powi(-2 * (n - 1 - c) as i32),
            &|_, _| small,
        ];
        let mut a = Vec::new();
        for g in grades {
            let x = round_f32(&rng.vec(n * n, -1.0, 1.0));
            // As the kernel sees it: f32 rounds the subnormals.
            let graded = (0..n * n).map(|k| x[k] * g(k / n, k % n));
            a.extend(graded.map(|v| if elem == Scalar::F32 { v as f32 as f64 } else { v }));
        }
        let (f, tau) = geqrf(elem, &a, w, n, n);
        let args = vec![
            ("A", arr(elem, &tilec_tests::pack_compact(&a, n * n, w), &[1, n, n, w])),
            ("tau", arr(elem, &vec![f64::NAN; w * n], &[1, n, w])),
        ];
        let out = run_outs("geqrf_compact_batched", args, &["A", "tau"]);
        let fc = tilec_tests::unpack_compact(&out[0], n * n, w);
        let tc = tilec_tests::unpack_compact(&out[1], n, w);
        for (kernel, f, tau) in [("geqrf_batched", &f, &tau), ("geqrf_compact_batched", &fc, &tc)] {
            for i in 0..w {
                let ctx = format!("{kernel} {elem:?} matrix {i}");
                let (ai, fi, ti) =
                    (&a[i * n * n..(i + 1) * n * n], &f[i * n * n..(i + 1) * n * n], &tau[i * n..(i + 1) * n]);
                let q = tilec_tests::orgqr_f64(fi, ti, n, n);
                let scale = ai.iter().fold(0.0f64, |s, x| s.max(x.abs()));
                let eps = if i == 3 { eps.max(2.0 * quantum / scale) } else { eps };
                let mut rec = 0.0f64;
                for r in 0..n {
                    for c in 0..n {
                        let qr: f64 = (0..=c).map(|j| q[r * n + j] * fi[j * n + c]).sum();
                        rec = rec.max((qr - ai[r * n + c]).abs());
                    }
                }
                assert!(rec <= 8.0 * n as f64 * eps * scale, "{ctx}: |QR - A| = {rec:e} (max |A| {scale:e})");
                let orth = orthogonality(&q, n, n, n);
                assert!(orth <= 8.0 * n as f64 * eps, "{ctx}: |Q^T Q - I| = {orth:e}");
            }
        }
    }
}

#[test]
fn gels_solves_least_squares_and_reports_rank_deficiency() {
    let mut rng = Rng::new(59);
    for (m, n, k) in [(1, 1, 1), (5, 5, 1), (17, 9, 3), (64, 40, 2)] {
        let b = 3;
        let mut a = round_f32(&rng.vec(b * m * n, -1.0, 1.0));
        let x0 = round_f32(&rng.vec(b * m * k, -1.0, 1.0));
        // Matrix 2 has a zero last column: R[n-1, n-1] = 0, info n.
        for r in 0..m {
            a[2 * m * n + r * n + n - 1] = 0.0;
        }
        for elem in FLOATS {
            let args = vec![
                ("A", arr(elem, &a, &[b, m, n])),
                ("X", arr(elem, &x0, &[b, m, k])),
                ("info", int_array(&vec![7.0; b], &[b])),
            ];
            let out = run_outs("gels_batched", args, &["X", "info"]);
            assert_eq!(out[1], [0.0, 0.0, n as f64], "{elem:?} {m}x{n}: info");
            for i in 0..2 {
                let want =
                    tilec_tests::lstsq_f64(&a[i * m * n..(i + 1) * m * n], m, n, &x0[i * m * k..(i + 1) * m * k], k);
                let got: Vec<f64> = out[0][i * m * k..i * m * k + n * k].to_vec();
                check(&got, &want, n * k, elem, &format!("gels {m}x{n}x{k} matrix {i}"));
            }
        }
    }
    // A wider than tall: info -1, nothing solved.
    let out = run_outs(
        "gels_batched",
        vec![
            ("A", arr(Scalar::F64, &[1.0; 6], &[1, 2, 3])),
            ("X", arr(Scalar::F64, &[1.0, 2.0], &[1, 2, 1])),
            ("info", int_array(&[0.0], &[1])),
        ],
        &["info"],
    );
    assert_eq!(out[0], [-1.0]);
}

// ---------------------------------------------------------------------------------------
// syevj, gesvj
// ---------------------------------------------------------------------------------------

fn eps_of(elem: Scalar) -> f64 {
    if elem == Scalar::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    }
}

fn int(x: i64) -> ArgValue {
    ArgValue::Scalar(Const::Int(x, Scalar::I32))
}

/// `syevj_batched` on the `b` stacked `n x n` matrices `a` (tol the element type's epsilon):
/// the rotated matrices, W, V and info.
fn syevj(elem: Scalar, a: &[f64], b: usize, n: usize, sweeps: i64) -> Vec<Vec<f64>> {
    let args = vec![
        ("A", arr(elem, a, &[b, n, n])),
        ("W", arr(elem, &vec![f64::NAN; b * n], &[b, n])),
        ("V", arr(elem, &vec![f64::NAN; b * n * n], &[b, n, n])),
        ("info", int_array(&vec![-7.0; b], &[b])),
        ("tol", float(elem, eps_of(elem))),
        ("max_sweeps", int(sweeps)),
    ];
    run_outs("syevj_batched", args, &["A", "W", "V", "info"])
}

/// `gesvj_batched` on the `b` stacked `m x n` matrices `a` (tol `sqrt(m)` epsilon, as
/// LAPACK's gesvj): U, S, V and info.
fn gesvj(elem: Scalar, a: &[f64], b: usize, m: usize, n: usize, sweeps: i64) -> Vec<Vec<f64>> {
    let args = vec![
        ("A", arr(elem, a, &[b, m, n])),
        ("S", arr(elem, &vec![f64::NAN; b * n], &[b, n])),
        ("V", arr(elem, &vec![f64::NAN; b * n * n], &[b, n, n])),
        ("info", int_array(&vec![-7.0; b], &[b])),
        ("tol", float(elem, (m.max(1) as f64).sqrt() * eps_of(elem))),
        ("max_sweeps", int(sweeps)),
    ];
    run_outs("gesvj_batched", args, &["A", "S", "V", "info"])
}

/// `max |A - U diag(s) V^T|` for row-major `a` (`m x n`), `u` (`m x n`), `v` (`n x n`), in f64.
fn svd_residual(a: &[f64], u: &[f64], s: &[f64], v: &[f64], m: usize, n: usize) -> f64 {
    let mut e = 0.0f64;
    for r in 0..m {
        for c in 0..n {
            let x: f64 = (0..n).map(|j| u[r * n + j] * s[j] * v[c * n + j]).sum();
            e = e.max((x - a[r * n + c]).abs());
        }
    }
    e
}

/// `max |Q^T Q - I|` over the first `k` columns of the row-major `m x n` matrix `q`, in f64.
fn orthogonality(q: &[f64], m: usize, n: usize, k: usize) -> f64 {
    let mut e = 0.0f64;
    for c1 in 0..k {
        for c2 in 0..k {
            let d: f64 = (0..m).map(|r| q[r * n + c1] * q[r * n + c2]).sum();
            e = e.max((d - if c1 == c2 { 1.0 } else { 0.0 }).abs());
        }
    }
    e
}

/// The Frobenius norm, which bounds the 2-norm that eigenvalue and singular value errors
/// scale with.
fn frobenius(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// Symmetric test matrices, f32-representable: random; repeated eigenvalues (I + J, J all
/// ones: n - 1 eigenvalues 1); graded (eigenvalues 10^0 .. 10^-12 rotated by a reflector);
/// diagonal (no rotation at all). Only the lower triangle is meant: the caller may spoil the
/// upper one.
fn symmetric_cases(n: usize, rng: &mut Rng) -> Vec<f64> {
    let mut out = Vec::new();
    let r = round_f32(&rng.vec(n * n, -1.0, 1.0));
    out.extend(tilec_tests::symmetric_from_lower(&r, n));
    out.extend((0..n * n).map(|k| if k / n == k % n { 2.0 } else { 1.0 }));
    let u = rng.vec(n, -1.0, 1.0);
    let uu: f64 = u.iter().map(|x| x * x).sum();
    let d: Vec<f64> = (0..n).map(|i| 10f64.powf(-12.0 * i as f64 / (n.max(2) - 1) as f64)).collect();
    // (I - 2 u u^T / u^T u) diag(d) (I - 2 u u^T / u^T u).
    let h = |i: usize, j: usize| if i == j { 1.0 } else { 0.0 } - 2.0 * u[i] * u[j] / uu;
    let graded: Vec<f64> = (0..n * n).map(|k| (0..n).map(|l| h(k / n, l) * d[l] * h(l, k % n)).sum()).collect();
    out.extend(round_f32(&tilec_tests::symmetric_from_lower(&graded, n)));
    out.extend((0..n * n).map(|k| if k / n == k % n { (k / n) as f64 - 3.5 } else { 0.0 }));
    out
}

/// The eigenpairs `w` (ascending) and `v` (columns) of the symmetric `n x n` matrix `a`: the
/// eigenvalues within `4 n eps ||A||_F` of f64 Jacobi's, `|A - V W V^T|` within the same, and
/// `|V^T V - I|` within `4 n eps`.
fn check_eigenpairs(a: &[f64], w: &[f64], v: &[f64], n: usize, eps: f64, ctx: &str) {
    let want = tilec_tests::eigvalsh_f64(a, n);
    let scale = frobenius(a) * n as f64 * eps;
    let we = w.iter().zip(&want).fold(0.0f64, |e, (g, w)| e.max((g - w).abs()));
    assert!(we <= 4.0 * scale, "{ctx}: eigenvalues off by {we:e}");
    assert!(w.windows(2).all(|p| p[0] <= p[1]), "{ctx}: ascending");
    let res = svd_residual(a, v, w, v, n, n);
    assert!(res <= 4.0 * scale, "{ctx}: |A - V W V^T| = {res:e}");
    let orth = orthogonality(v, n, n, n);
    assert!(orth <= 4.0 * n as f64 * eps, "{ctx}: |V^T V - I| = {orth:e}");
}

#[test]
fn syevj_matches_f64_eigenvalues_and_its_vectors_diagonalize_a() {
    let mut rng = Rng::new(61);
    for n in [1, 2, 5, 17, 32, 64] {
        let a = symmetric_cases(n, &mut rng);
        let b = a.len() / (n * n);
        // NaN above the diagonal: only the lower triangle is read.
        let spoiled: Vec<f64> =
            a.iter().enumerate().map(|(k, &x)| if k % n > (k / n) % n { f64::NAN } else { x }).collect();
        for elem in FLOATS {
            let eps = eps_of(elem);
            let out = syevj(elem, &spoiled, b, n, 100);
            let (w, v, info) = (&out[1], &out[2], &out[3]);
            assert_eq!(info, &vec![0.0; b], "{elem:?} n {n}: info");
            for i in 0..b {
                let (ai, wi, vi) =
                    (&a[i * n * n..(i + 1) * n * n], &w[i * n..(i + 1) * n], &v[i * n * n..(i + 1) * n * n]);
                check_eigenpairs(ai, wi, vi, n, eps, &format!("{elem:?} n {n} matrix {i}"));
            }
            // The diagonal matrix takes no rotation: V = I and W its diagonal, exactly.
            let vd = &v[3 * n * n..4 * n * n];
            assert!((0..n * n).all(|k| vd[k] == if k / n == k % n { 1.0 } else { 0.0 }), "{elem:?} n {n}");
        }
    }
}

#[test]
fn syevj_reports_nan_and_too_few_sweeps_and_takes_empty_input() {
    let n = 9;
    let mut rng = Rng::new(67);
    let mut a = symmetric_cases(n, &mut rng);
    a[n * n + 5 * n + 2] = f64::NAN; // matrix 1 (I + J), in the lower triangle
    for elem in FLOATS {
        let out = syevj(elem, &a, 4, n, 100);
        assert_eq!(out[3], [0.0, 10.0, 0.0, 0.0], "{elem:?}: info N + 1 for NaN, in its own matrix only");
        assert!(out[1][..n].iter().all(|x| x.is_finite()) && out[1][2 * n..].iter().all(|x| x.is_finite()));
        // One sweep does not diagonalize a random 9 x 9 matrix to epsilon; no sweep at all
        // leaves it as it was. The diagonal matrix converges with no sweep.
        assert_eq!(syevj(elem, &a, 4, n, 1)[3], [10.0, 10.0, 10.0, 0.0], "{elem:?}");
        let none = syevj(elem, &a, 4, n, 0);
        assert_eq!(none[3], [10.0, 10.0, 10.0, 0.0], "{elem:?}");
        let diag: Vec<f64> = (0..n).map(|i| a[i * n + i]).collect();
        let mut sorted = diag.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(&none[1][..n], &sorted[..], "{elem:?}: no sweep: W is the sorted diagonal");
        assert_eq!(syevj(elem, &[], 3, 0, 100)[3], [0.0; 3], "{elem:?}: 0 x 0 matrices");
        assert!(syevj(elem, &[], 0, 5, 100)[3].is_empty(), "{elem:?}: an empty batch");
    }
}

/// `syevj_compact_batched` on the `b` stacked `n x n` matrices `a`, packed `w` at a time (tol
/// the element type's epsilon): A, E, V (unpacked) and info.
fn syevj_compact(elem: Scalar, a: &[f64], b: usize, n: usize, w: usize, sweeps: i64) -> Vec<Vec<f64>> {
    eig_compact("syevj_compact_batched", elem, a, b, n, w, Some(sweeps))
}

/// A compact eigensolver (`syevj_compact_batched` with `max_sweeps`, `syev_compact_batched`
/// without) on the `b` stacked `n x n` matrices `a`, packed `w` at a time (tol the element
/// type's epsilon): A, E, V (unpacked) and info.
fn eig_compact(
    kernel: &str,
    elem: Scalar,
    a: &[f64],
    b: usize,
    n: usize,
    w: usize,
    sweeps: Option<i64>,
) -> Vec<Vec<f64>> {
    let mut extra = vec![("tol", float(elem, eps_of(elem)))];
    if let Some(sweeps) = sweeps {
        extra.push(("max_sweeps", int(sweeps)));
    }
    run_compact(kernel, "E", elem, a, b, n, w, extra)
}

/// The checks of a compact eigensolver's output on the `b` matrices `a` (`check_eigenpairs`
/// on each), matrix `nan_lane` (a NaN) with info N + 1 instead.
#[allow(clippy::too_many_arguments)]
fn check_compact_eigenpairs(
    a: &[f64],
    e: &[f64],
    v: &[f64],
    info: &[f64],
    n: usize,
    nan_lane: usize,
    eps: f64,
    ctx: &str,
) {
    for i in 0..info.len() {
        let ctx = format!("{ctx} matrix {i}");
        if i == nan_lane {
            assert_eq!(info[i], (n + 1) as f64, "{ctx}: info for NaN");
            continue;
        }
        assert_eq!(info[i], 0.0, "{ctx}: info");
        let (ai, wi, vi) = (&a[i * n * n..(i + 1) * n * n], &e[i * n..(i + 1) * n], &v[i * n * n..(i + 1) * n * n]);
        check_eigenpairs(ai, wi, vi, n, eps, &ctx);
    }
}

/// syevj_compact_batched, packs of 4, 8 and 16: the eigenvalues of f64 LAPACK-style Jacobi,
/// `A = V W V^T` and `V^T V = I` with the bounds of the `syevj_batched` test, on the same
/// matrices (random, repeated eigenvalues, graded, diagonal) in lanes beside random ones; the
/// upper triangle (NaN) is neither read nor written; a NaN matrix gets info N + 1 in its own
/// lane only; with no sweep, W is each diagonal sorted.
#[test]
fn syevj_compact_matches_f64_and_keeps_lanes_apart() {
    let mut rng = Rng::new(73);
    for (w, n) in [(4, 1), (4, 5), (8, 17), (16, 9), (8, 32)] {
        let mut a = symmetric_cases(n, &mut rng);
        while a.len() < 2 * w * n * n {
            a.extend(tilec_tests::symmetric_from_lower(&round_f32(&rng.vec(n * n, -1.0, 1.0)), n));
        }
        let b = a.len() / (n * n);
        let nan_lane = w + 1;
        let upper = |k: usize| k % n > (k / n) % n;
        let mut spoiled: Vec<f64> = a.iter().enumerate().map(|(k, &x)| if upper(k) { f64::NAN } else { x }).collect();
        spoiled[nan_lane * n * n + (n - 1) * n] = f64::NAN;
        for elem in FLOATS {
            let eps = eps_of(elem);
            let out = syevj_compact(elem, &spoiled, b, n, w, 100);
            let rot = &out[0];
            for i in 0..b {
                let rot_i = &rot[i * n * n..(i + 1) * n * n];
                let written = (0..n * n).filter(|&k| upper(k)).any(|k| !rot_i[k].is_nan());
                assert!(!written, "{elem:?} W={w} n {n} matrix {i}: upper triangle written");
            }
            check_compact_eigenpairs(&a, &out[1], &out[2], &out[3], n, nan_lane, eps, &format!("{elem:?} W={w} n {n}"));
            let none = syevj_compact(elem, &spoiled, b, n, w, 0);
            for i in (0..b).filter(|&i| i != nan_lane) {
                let mut diag: Vec<f64> = (0..n).map(|k| spoiled[i * n * n + k * n + k]).collect();
                diag.sort_by(f64::total_cmp);
                assert_eq!(&none[1][i * n..(i + 1) * n], &diag[..], "{elem:?} W={w} n {n} matrix {i}: no sweep");
            }
        }
    }
}

/// syev_compact_batched (tridiagonal reduction and implicit QL), packs of 4, 8 and 16: the
/// eigenvalues of f64 Jacobi, `A = V W V^T` and `V^T V = I` with the bounds of the
/// `syevj_batched` test, on the matrices of that test (random, repeated eigenvalues, graded,
/// diagonal) and a zero one, one near the largest float (its squares would overflow unscaled),
/// a tridiagonal one and one graded to the smallest normal `f32`, in lanes beside random ones; the upper triangle (NaN) is not read; a
/// NaN matrix gets info N + 1 in its own lane only; empty inputs.
#[test]
fn syev_compact_matches_f64_and_keeps_lanes_apart() {
    let mut rng = Rng::new(79);
    for (w, n) in [(4, 1), (4, 2), (4, 5), (8, 17), (16, 9), (8, 32), (8, 64)] {
        for elem in FLOATS {
            let mut a = symmetric_cases(n, &mut rng);
            a.extend(vec![0.0; n * n]);
            // Checked as the matrix divided by `big`, so the f64 reference's squares stay finite.
            let big = if elem == Scalar::F32 { 1e30 } else { 1e300 };
            let big_lane = a.len() / (n * n);
            a.extend(tilec_tests::symmetric_from_lower(&round_f32(&rng.vec(n * n, -1.0, 1.0)), n));
            a.extend((0..n * n).map(|k| match (k / n).abs_diff(k % n) {
                0 => (k / n) as f64 * 0.25 - 1.0,
                1 => 0.5,
                _ => 0.0,
            }));
            // Graded down to the smallest normal f32 at n = 64 (element [r, c] scaled by
            // 2^-(r + c)): the reflectors' sums of squares would underflow unscaled.
            let r = round_f32(&rng.vec(n * n, -1.0, 1.0));
            let graded = tilec_tests::symmetric_from_lower(&r, n);
            a.extend(graded.iter().enumerate().map(|(k, x)| x * 2f64.powi(-((k / n + k % n) as i32))));
            while a.len() < 2 * w * n * n {
                a.extend(tilec_tests::symmetric_from_lower(&round_f32(&rng.vec(n * n, -1.0, 1.0)), n));
            }
            let b = a.len() / (n * n);
            let nan_lane = w + 1;
            let upper = |k: usize| k % n > (k / n) % n;
            let mut spoiled: Vec<f64> =
                a.iter().enumerate().map(|(k, &x)| if upper(k) { f64::NAN } else { x }).collect();
            spoiled[nan_lane * n * n + (n - 1) * n] = f64::NAN;
            spoiled[big_lane * n * n..(big_lane + 1) * n * n].iter_mut().for_each(|x| *x *= big);
            let eps = eps_of(elem);
            let out = eig_compact("syev_compact_batched", elem, &spoiled, b, n, w, None);
            let mut e = out[1].clone();
            e[big_lane * n..(big_lane + 1) * n].iter_mut().for_each(|x| *x /= big);
            check_compact_eigenpairs(&a, &e, &out[2], &out[3], n, nan_lane, eps, &format!("{elem:?} W={w} n {n}"));
        }
    }
    for elem in FLOATS {
        let run = |b, n| eig_compact("syev_compact_batched", elem, &[], b, n, 8, None);
        assert!(run(8, 0)[1].is_empty(), "{elem:?}: 0 x 0 matrices");
        assert_eq!(run(8, 0)[3], [0.0; 8], "{elem:?}: 0 x 0 matrices: info");
        assert!(run(0, 5)[1].is_empty(), "{elem:?}: an empty batch");
    }
}

/// The checks of one SVD `A = U diag(s) V^T` (`a`, `u`: `m x n`, `v`: `n x n`, row-major):
/// the singular values of f64 Jacobi within `8 max(m, n) eps ||A||_F`, descending, the
/// residual within the same, `V^T V = I`, and U's columns orthonormal for the singular values
/// well above rounding.
#[allow(clippy::too_many_arguments)]
fn check_svd(ai: &[f64], ui: &[f64], si: &[f64], vi: &[f64], m: usize, n: usize, eps: f64, ctx: &str) {
    let want = tilec_tests::singular_values_f64(ai, m, n);
    let scale = frobenius(ai) * m.max(n) as f64 * eps;
    let se = si.iter().zip(&want).fold(0.0f64, |e, (g, w)| e.max((g - w).abs()));
    assert!(se <= 8.0 * scale, "{ctx}: singular values off by {se:e}");
    assert!(si.windows(2).all(|p| p[0] >= p[1]), "{ctx}: descending");
    let res = svd_residual(ai, ui, si, vi, m, n);
    assert!(res <= 8.0 * scale, "{ctx}: |A - U S V^T| = {res:e}");
    let orth = orthogonality(vi, n, n, n);
    assert!(orth <= 8.0 * n as f64 * eps, "{ctx}: |V^T V - I| = {orth:e}");
    let k = si.iter().filter(|&&x| x > 1e3 * scale).count();
    let ou = orthogonality(ui, m, n, k);
    assert!(ou <= 8.0 * m.max(n) as f64 * eps * si[0] / si[k.max(1) - 1], "{ctx}: |U^T U - I| = {ou:e}");
}

#[test]
fn gesvj_matches_f64_singular_values_and_its_factors_reproduce_a() {
    let mut rng = Rng::new(71);
    for (m, n) in [(1, 1), (5, 5), (17, 9), (9, 17), (32, 32), (64, 40)] {
        let b = 3;
        let mut a = round_f32(&rng.vec(b * m * n, -1.0, 1.0));
        // Matrix 1 is rank-deficient: its last column repeats its first.
        for r in 0..m {
            a[m * n + r * n + n - 1] = a[m * n + r * n];
        }
        // Matrix 2 is graded: column j scaled by 2^-2j (singular values over many decades).
        for r in 0..m {
            for c in 0..n {
                a[2 * m * n + r * n + c] *= 2f64.powi(-2 * c as i32);
            }
        }
        for elem in FLOATS {
            let eps = eps_of(elem);
            let out = gesvj(elem, &a, b, m, n, 30);
            let (u, s, v, info) = (&out[0], &out[1], &out[2], &out[3]);
            assert_eq!(info, &vec![0.0; b], "{elem:?} {m}x{n}: info");
            for i in 0..b {
                let ai = &a[i * m * n..(i + 1) * m * n];
                let (ui, si, vi) =
                    (&u[i * m * n..(i + 1) * m * n], &s[i * n..(i + 1) * n], &v[i * n * n..(i + 1) * n * n]);
                check_svd(ai, ui, si, vi, m, n, eps, &format!("{elem:?} {m}x{n} matrix {i}"));
            }
            if m >= n && n > 1 {
                assert!(
                    s[m.min(n) - 1 + n] <= 8.0 * frobenius(&a[m * n..2 * m * n]) * n as f64 * eps,
                    "{elem:?} {m}x{n}: rank deficiency"
                );
            }
        }
    }
}

#[test]
fn gesvj_reports_nan_and_too_few_sweeps_and_takes_zero_and_empty_input() {
    let (m, n) = (7, 5);
    let mut rng = Rng::new(73);
    let mut a = round_f32(&rng.vec(3 * m * n, -1.0, 1.0));
    a[m * n + 3] = f64::NAN;
    for x in &mut a[2 * m * n..] {
        *x = 0.0;
    }
    for elem in FLOATS {
        let out = gesvj(elem, &a, 3, m, n, 30);
        assert_eq!(out[3], [0.0, 6.0, 0.0], "{elem:?}: info min(M, N) + 1 for NaN, in its own matrix only");
        // The zero matrix: S = 0, U = 0, V = I.
        assert!(out[1][2 * n..].iter().all(|&x| x == 0.0) && out[0][2 * m * n..].iter().all(|&x| x == 0.0));
        assert!((0..n * n).all(|k| out[2][2 * n * n + k] == if k / n == k % n { 1.0 } else { 0.0 }));
        assert_eq!(gesvj(elem, &a, 3, m, n, 1)[3], [6.0, 6.0, 0.0], "{elem:?}: one sweep is not enough");
        assert_eq!(gesvj(elem, &[], 2, 0, 3, 30)[3], [0.0; 2], "{elem:?}: 0 x 3 matrices");
        assert_eq!(gesvj(elem, &[], 2, 3, 0, 30)[3], [0.0; 2], "{elem:?}: 3 x 0 matrices");
        assert!(gesvj(elem, &[], 0, 4, 4, 30)[3].is_empty(), "{elem:?}: an empty batch");
    }
}

/// `gesvj_compact_batched` on the `b` stacked `n x n` matrices `a`, packed `w` at a time (tol
/// sqrt(n) eps): U, S, V (unpacked) and info.
fn gesvj_compact(elem: Scalar, a: &[f64], b: usize, n: usize, w: usize, sweeps: i64) -> Vec<Vec<f64>> {
    let extra = vec![("tol", float(elem, (n.max(1) as f64).sqrt() * eps_of(elem))), ("max_sweeps", int(sweeps))];
    run_compact("gesvj_compact_batched", "S", elem, a, b, n, w, extra)
}

/// A compact eigensolver or SVD on the `b` stacked `n x n` matrices `a`, packed `w` at a
/// time, with A, the eigenvalues or singular values (`values`), V and info (NaN and -7 on
/// entry), then the kernel's own arguments (`extra`): A, the values, V (unpacked) and info.
#[allow(clippy::too_many_arguments)]
fn run_compact(
    kernel: &str,
    values: &'static str,
    elem: Scalar,
    a: &[f64],
    b: usize,
    n: usize,
    w: usize,
    extra: Vec<(&'static str, ArgValue)>,
) -> Vec<Vec<f64>> {
    let p = b / w;
    let mut args = vec![
        ("A", arr(elem, &tilec_tests::pack_compact(a, n * n, w), &[p, n, n, w])),
        (values, arr(elem, &vec![f64::NAN; b * n], &[p, n, w])),
        ("V", arr(elem, &vec![f64::NAN; b * n * n], &[p, n, n, w])),
        ("info", int_array(&vec![-7.0; b], &[p, w])),
    ];
    args.extend(extra);
    let out = run_outs(kernel, args, &["A", values, "V", "info"]);
    let lens = [n * n, n, n * n, 1];
    out.iter().zip(lens).map(|(o, len)| tilec_tests::unpack_compact(o, len, w)).collect()
}

/// `gesvd_compact_batched` on the `b` stacked `n x n` matrices `a`, packed `w` at a time (tol
/// the element type's epsilon): U, S, V (unpacked) and info.
fn gesvd_compact(elem: Scalar, a: &[f64], b: usize, n: usize, w: usize) -> Vec<Vec<f64>> {
    let extra = vec![("E", arr(elem, &vec![f64::NAN; b * n], &[b / w, n, w])), ("tol", float(elem, eps_of(elem)))];
    run_compact("gesvd_compact_batched", "S", elem, a, b, n, w, extra)
}

/// gesvd_compact_batched (bidiagonalization and implicit QR), packs of 4, 8 and 16:
/// `gesvj_batched`'s checks (f64 singular values, `A = U S V^T`, orthogonality) on random,
/// rank-deficient (a repeated column and a zero row) and graded matrices, one near the largest
/// float (its squares would overflow unscaled), upper bidiagonal ones with zeros on the
/// diagonal (their bidiagonal form is themselves: the rotations that cancel a superdiagonal
/// element beside a zero diagonal one), the zero matrix (S = 0, U = V = I) and one of
/// subnormal elements (2^-130 in f32, 2^-1030 in f64: NaN with info 0 when B was scaled back
/// before the iteration), in lanes beside random ones; a NaN matrix gets info N + 1 in its own
/// lane only; empty inputs.
#[test]
fn gesvd_compact_matches_f64_and_keeps_lanes_apart() {
    let mut rng = Rng::new(97);
    for (w, n) in [(4, 1), (4, 2), (4, 5), (8, 17), (16, 9), (8, 32), (8, 64)] {
        let b = 2 * w;
        let mut a = round_f32(&rng.vec(b * n * n, -1.0, 1.0));
        let (deficient, graded, big, zero, nan, tiny) = (1, 2, 3, w - 1, w + 1, b - 1);
        for r in 0..n {
            a[deficient * n * n + r * n + n - 1] = a[deficient * n * n + r * n];
            if n > 2 {
                a[deficient * n * n + (n / 2) * n + r] = 0.0;
            }
            for c in 0..n {
                a[graded * n * n + r * n + c] *= 2f64.powi(-2 * c as i32);
                a[zero * n * n + r * n + c] = 0.0;
            }
        }
        // Upper bidiagonal with zero diagonal elements at other places in each lane.
        for i in [4, w, w + 2] {
            for r in 0..n {
                for c in 0..n {
                    let zero_diag = r == c && (r == (3 * i) % n || r == (5 * i + 1) % n);
                    if c < r || c > r + 1 || zero_diag {
                        a[i * n * n + r * n + c] = 0.0;
                    }
                }
            }
        }
        a[nan * n * n + n / 2] = f64::NAN;
        for elem in FLOATS {
            let eps = eps_of(elem);
            // Checked as the matrix divided by `huge`, so the f64 reference's squares stay finite.
            let huge = if elem == Scalar::F32 { 1e30 } else { 1e300 };
            // And the tiny one multiplied by 1 / small (exact: a power of two).
            let small = if elem == Scalar::F32 { 2f64.powi(-130) } else { 2f64.powi(-1030) };
            let mut input = a.clone();
            input[big * n * n..(big + 1) * n * n].iter_mut().for_each(|x| *x *= huge);
            input[tiny * n * n..(tiny + 1) * n * n].iter_mut().for_each(|x| *x *= small);
            // The reference: the tiny matrix as the kernel sees it (subnormals lose bits).
            let mut want = a.clone();
            for k in tiny * n * n..(tiny + 1) * n * n {
                let x = if elem == Scalar::F32 { input[k] as f32 as f64 } else { input[k] };
                want[k] = x / small;
            }
            let out = gesvd_compact(elem, &input, b, n, w);
            let (u, s, v, info) = (&out[0], &out[1], &out[2], &out[3]);
            for i in 0..b {
                let ctx = format!("{elem:?} W={w} n {n} matrix {i}");
                if !info_checked(info, i, nan, n, &ctx) {
                    continue;
                }
                let mut si = s[i * n..(i + 1) * n].to_vec();
                if i == big {
                    si.iter_mut().for_each(|x| *x /= huge);
                }
                if i == tiny {
                    si.iter_mut().for_each(|x| *x /= small);
                }
                let (ai, ui, vi) =
                    (&want[i * n * n..(i + 1) * n * n], &u[i * n * n..(i + 1) * n * n], &v[i * n * n..(i + 1) * n * n]);
                // (At small n the bidiagonal and rank-deficient ones are zero too.)
                if ai.iter().all(|&x| x == 0.0) {
                    let eye = |m: &[f64]| (0..n * n).all(|k| m[k] == if k / n == k % n { 1.0 } else { 0.0 });
                    assert!(si.iter().all(|&x| x == 0.0) && eye(ui) && eye(vi), "{ctx}: S = 0, U = V = I");
                    continue;
                }
                // The tiny matrix's results have the subnormals' spacing (2^-149, 2^-1074).
                let quantum = if elem == Scalar::F32 { 2f64.powi(-149) } else { 2f64.powi(-1074) };
                let eps = if i == tiny { eps.max(2.0 * quantum / small) } else { eps };
                check_svd(ai, ui, &si, vi, n, n, eps, &ctx);
            }
        }
    }
    for elem in FLOATS {
        assert_eq!(gesvd_compact(elem, &[], 8, 0, 4)[3], [0.0; 8], "{elem:?}: 0 x 0 matrices");
        assert!(gesvd_compact(elem, &[], 0, 3, 4)[3].is_empty(), "{elem:?}: an empty batch");
    }
}

/// Asserts matrix `i`'s info from a compact kernel: N + 1 for the NaN matrix `nan` (false:
/// nothing more to check), else 0 (true).
fn info_checked(info: &[f64], i: usize, nan: usize, n: usize, ctx: &str) -> bool {
    if i == nan {
        assert_eq!(info[i], (n + 1) as f64, "{ctx}: info for NaN");
        return false;
    }
    assert_eq!(info[i], 0.0, "{ctx}: info");
    true
}

/// gesvj_compact_batched, packs of 4, 8 and 16: `gesvj_batched`'s checks (f64 singular values,
/// `A = U S V^T`, orthogonality) on random, rank-deficient and graded matrices in lanes beside
/// a NaN matrix (info N + 1 in its lane only) and the zero matrix (S = 0, U = 0, V = I); one
/// sweep leaves random matrices unconverged (info N + 1); N = 0 and an empty batch.
#[test]
fn gesvj_compact_matches_f64_and_keeps_lanes_apart() {
    let mut rng = Rng::new(89);
    for (w, n) in [(4, 1), (4, 5), (8, 17), (16, 9), (8, 32)] {
        let b = 2 * w;
        let mut a = round_f32(&rng.vec(b * n * n, -1.0, 1.0));
        let (deficient, graded, zero, nan) = (1, 2, w - 1, w + 1);
        for r in 0..n {
            a[deficient * n * n + r * n + n - 1] = a[deficient * n * n + r * n];
            for c in 0..n {
                a[graded * n * n + r * n + c] *= 2f64.powi(-2 * c as i32);
                a[zero * n * n + r * n + c] = 0.0;
            }
        }
        a[nan * n * n + n / 2] = f64::NAN;
        for elem in FLOATS {
            let eps = eps_of(elem);
            let out = gesvj_compact(elem, &a, b, n, w, 30);
            let (u, s, v, info) = (&out[0], &out[1], &out[2], &out[3]);
            for i in 0..b {
                let ctx = format!("{elem:?} W={w} n {n} matrix {i}");
                if !info_checked(info, i, nan, n, &ctx) {
                    continue;
                }
                let (ai, ui, si, vi) = (
                    &a[i * n * n..(i + 1) * n * n],
                    &u[i * n * n..(i + 1) * n * n],
                    &s[i * n..(i + 1) * n],
                    &v[i * n * n..(i + 1) * n * n],
                );
                if i == zero {
                    assert!(si.iter().chain(ui).all(|&x| x == 0.0), "{ctx}: S = 0 and U = 0");
                    assert!((0..n * n).all(|k| vi[k] == if k / n == k % n { 1.0 } else { 0.0 }), "{ctx}: V = I");
                    continue;
                }
                check_svd(ai, ui, si, vi, n, n, eps, &ctx);
            }
            if n >= 5 {
                assert_eq!(gesvj_compact(elem, &a, b, n, w, 1)[3][0], (n + 1) as f64, "{elem:?}: one sweep");
            }
        }
    }
    for elem in FLOATS {
        assert_eq!(gesvj_compact(elem, &[], 8, 0, 4, 30)[3], [0.0; 8], "{elem:?}: 0 x 0 matrices");
        assert!(gesvj_compact(elem, &[], 0, 3, 4, 30)[3].is_empty(), "{elem:?}: an empty batch");
    }
}

/// The two CPU code generators give the same bits on every stdlib factorization, solve and
/// product (f32 and f64, odd orders with partial tiles): so a tiered launch, Cranelift's code
/// first and LLVM's later (`tools/src/driver/tiered.rs`), never changes a result. A build
/// without LLVM has one generator and nothing to compare.
#[test]
fn both_cpu_code_generators_give_the_same_bits() {
    let backends = tilec_tests::cpu_backends();
    let (b, n, k) = (9, 37, 5);
    let spd = random_spd(b, n, 77);
    let mut rng = Rng::new(78);
    let rhs = round_f32(&rng.vec(b * n * k, -1.0, 1.0));
    let rhs_t = round_f32(&rng.vec(b * k * n, -1.0, 1.0));
    let set = stdlib();
    for elem in FLOATS {
        let spd_e = round_f32(&spd);
        let factor =
            run("potrf_batched", vec![("A", arr(elem, &spd_e, &[b, n, n])), ("eps", float(elem, 1e-6))], &[], "A");
        let mut cases: Vec<Case> = vec![
            ("potrf_batched".into(), vec![("A", arr(elem, &spd_e, &[b, n, n])), ("eps", float(elem, 1e-6))], "A"),
            (
                "potrf_compact_batched".into(),
                vec![("A", arr(elem, &spd_e, &[1, n, n, b])), ("eps", float(elem, 1e-6))],
                "A",
            ),
            (
                "geqrf_compact_batched".into(),
                vec![("A", arr(elem, &spd_e, &[1, n, n, b])), ("tau", arr(elem, &vec![0.0; n * b], &[1, n, b]))],
                "A",
            ),
            (
                "potrs_batched".into(),
                vec![("L", arr(elem, &factor, &[b, n, n])), ("X", arr(elem, &rhs, &[b, n, k]))],
                "X",
            ),
        ];
        let (p, q) = (round_f32(&rng.vec(n * 29, -1.0, 1.0)), round_f32(&rng.vec(29 * 41, -1.0, 1.0)));
        let c = round_f32(&rng.vec(n * 41, -1.0, 1.0));
        cases.push((
            "gemm".into(),
            vec![
                ("A", arr(elem, &p, &[n, 29])),
                ("B", arr(elem, &q, &[29, 41])),
                ("C", arr(elem, &c, &[n, 41])),
                ("alpha", float(elem, ALPHA)),
                ("beta", float(elem, BETA)),
            ],
            "C",
        ));
        for op in stdlib_trsm_ops() {
            let x = if op.left { arr(elem, &rhs, &[b, n, k]) } else { arr(elem, &rhs_t, &[b, k, n]) };
            cases.push((op.stdlib_kernel(), vec![("A", arr(elem, &factor, &[b, n, n])), ("X", x)], "X"));
        }
        let general = round_f32(&rng.vec(b * n * n, -1.0, 1.0));
        let (lu, piv, _) = getrf(elem, &general, b, n);
        let zeros = |len: usize, shape: &[usize]| int_array(&vec![0.0; len], shape);
        cases.push((
            "getrf_batched".into(),
            vec![("A", arr(elem, &general, &[b, n, n])), ("ipiv", zeros(b * n, &[b, n])), ("info", zeros(b, &[b]))],
            "A",
        ));
        // The same numbers as one pack of 9 (other matrices, the same kernels' work).
        cases.push((
            "getrf_compact_batched".into(),
            vec![
                ("A", arr(elem, &general, &[1, n, n, b])),
                ("ipiv", zeros(b * n, &[1, n, b])),
                ("info", zeros(b, &[1, b])),
            ],
            "A",
        ));
        cases.push((
            "getrs_compact_batched".into(),
            vec![
                ("LU", arr(elem, &lu, &[1, n, n, b])),
                ("ipiv", int_array(&piv, &[1, n, b])),
                ("X", arr(elem, &rhs, &[1, n, k, b])),
            ],
            "X",
        ));
        cases.push((
            "geqrf_batched".into(),
            vec![("A", arr(elem, &general, &[b, n, n])), ("tau", arr(elem, &vec![0.0; b * n], &[b, n]))],
            "A",
        ));
        cases.push((
            "gels_batched".into(),
            vec![("A", arr(elem, &general, &[b, n, n])), ("X", arr(elem, &rhs, &[b, n, k])), ("info", zeros(b, &[b]))],
            "X",
        ));
        cases.push((
            "getrs_batched".into(),
            vec![
                ("LU", arr(elem, &lu, &[b, n, n])),
                ("ipiv", int_array(&piv, &[b, n])),
                ("X", arr(elem, &rhs, &[b, n, k])),
            ],
            "X",
        ));
        let sym = tilec_tests::symmetric_from_lower(&general, n);
        for (kernel, a, w) in [("syevj_batched", &sym[..], "W"), ("gesvj_batched", &general[..n * n], "S")] {
            cases.push((
                kernel.into(),
                vec![
                    ("A", arr(elem, a, &[1, n, n])),
                    (w, arr(elem, &[0.0; 37], &[1, n])),
                    ("V", arr(elem, &vec![0.0; n * n], &[1, n, n])),
                    ("info", zeros(1, &[1])),
                    ("tol", float(elem, eps_of(elem))),
                    ("max_sweeps", int(30)),
                ],
                "V",
            ));
        }
        // sym's 37 x 37 matrix in all 9 lanes of one pack, each lane scaled by its index + 1.
        let packed: Vec<f64> = sym[..n * n].iter().flat_map(|&x| (1..=b).map(move |l| x * l as f64)).collect();
        // The compact eigensolvers and SVDs: A, the eigenvalues or singular values (`values`),
        // V and info, then the kernel's own arguments.
        let compact = |kernel: &str, values: &'static str, extra: Vec<(&'static str, ArgValue)>| {
            let mut args = vec![
                ("A", arr(elem, &packed, &[1, n, n, b])),
                (values, arr(elem, &vec![0.0; n * b], &[1, n, b])),
                ("V", arr(elem, &vec![0.0; n * n * b], &[1, n, n, b])),
                ("info", zeros(b, &[1, b])),
            ];
            args.extend(extra);
            (kernel.to_string(), args, "V")
        };
        let eps = float(elem, eps_of(elem));
        cases.push(compact("syevj_compact_batched", "E", vec![("tol", eps.clone()), ("max_sweeps", int(30))]));
        cases.push(compact("syev_compact_batched", "E", vec![("tol", eps.clone())]));
        let work = arr(elem, &vec![0.0; n * b], &[1, n, b]);
        cases.push(compact("gesvd_compact_batched", "S", vec![("E", work), ("tol", eps)]));
        let svd_tol = float(elem, (n as f64).sqrt() * eps_of(elem));
        cases.push(compact("gesvj_compact_batched", "S", vec![("tol", svd_tol), ("max_sweeps", int(30))]));
        for (kernel, args, out) in cases {
            let args: HashMap<String, ArgValue> = args.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
            let bits: Vec<Vec<u64>> = backends
                .iter()
                .map(|&be| {
                    let r =
                        tilec::CpuRunner::with_backend(&set, &kernel, &args, &HashMap::new(), be).expect("compiles");
                    let (bound, _) = r.run(args.clone()).expect("runs");
                    bound.array(out).expect("output").to_f64_vec().iter().map(|x| x.to_bits()).collect()
                })
                .collect();
            assert!(bits.windows(2).all(|w| w[0] == w[1]), "{kernel} {elem:?}: the CPU code generators differ");
        }
    }
}
