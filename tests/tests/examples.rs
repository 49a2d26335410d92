//! Every program in `examples/` runs on the CPU target against an independent f64 reference.

use std::collections::HashMap;
use tilec::SourceSet;
use tilec_midend::{Const, Scalar};
use tilec_runtime::{random_spd, random_uniform, ArgValue, HostArray};
use tilec_tests::{cholesky_f64, matmul_f64, max_rel_err, svd_f64, transpose_f64};

/// The examples this file runs; `every_example_is_run` checks it against the folder.
const RUN: &[&str] = &[
    "attention.tile",
    "block_cholesky.tile",
    "causal_softmax.tile",
    "cholesky.tile",
    "colsum.tile",
    "compact.tile",
    "dropout.tile",
    "embedding.tile",
    "fft.tile",
    "gauss_newton.tile",
    "gemm.tile",
    "gemver.tile",
    "geqrf.tile",
    "getrf.tile",
    "half_precision.tile",
    "kalman.tile",
    "layer_norm.tile",
    "lu.tile",
    "mlp.tile",
    "mpm_stress.tile",
    "nbody.tile",
    "potrs.tile",
    "rms_norm.tile",
    "softmax.tile",
    "softmax_rows.tile",
    "suffix_sums.tile",
    "swiglu.tile",
    "syrk.tile",
    "topk.tile",
    "trsm.tile",
    "walker.tile",
];

fn source(name: &str) -> SourceSet {
    let path = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    SourceSet::with_stdlib(format!("examples/{name}"), std::fs::read_to_string(path).expect("example"))
}

fn arr(elem: Scalar, data: &[f64], shape: &[u64]) -> ArgValue {
    ArgValue::Array(HostArray::from_f64_as(elem, data, shape).unwrap())
}

/// Runs `kernel` of `file` and returns the named output array as f64.
fn run(file: &str, kernel: &str, args: Vec<(&str, ArgValue)>, out: &str) -> Vec<f64> {
    run_outs(file, kernel, args, &[out]).remove(0)
}

/// Runs `kernel` of `file` once and returns the named output arrays as f64.
fn run_outs(file: &str, kernel: &str, args: Vec<(&str, ArgValue)>, outs: &[&str]) -> Vec<Vec<f64>> {
    run_with(file, kernel, args, &[], outs)
}

/// Runs `kernel` of `file` once with the const generic parameters `fixed` and returns the named
/// output arrays as f64.
fn run_with(
    file: &str,
    kernel: &str,
    args: Vec<(&str, ArgValue)>,
    fixed: &[(&str, i64)],
    outs: &[&str],
) -> Vec<Vec<f64>> {
    let args: HashMap<String, ArgValue> = args.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    let fixed = tilec_tests::const_generics(fixed);
    let runner = tilec_tests::cpu_runner(&source(file), kernel, &args, &fixed).expect("compiles");
    let (bound, _) = runner.run(args).expect("runs");
    outs.iter().map(|o| bound.array(o).unwrap().to_f64_vec()).collect()
}

/// `max |got - want| / max(max |want|, 1)`.
fn normwise(got: &[f64], want: &[f64]) -> f64 {
    let scale = want.iter().fold(1f64, |s, x| s.max(x.abs()));
    got.iter().zip(want).map(|(g, w)| (g - w).abs()).fold(0.0, f64::max) / scale
}

/// The values an f32 or f64 array holds (inputs are rounded to the dtype before the
/// reference sees them).
fn rounded(elem: Scalar, data: &[f64]) -> Vec<f64> {
    data.iter().map(|v| elem.round(*v)).collect()
}

fn tol(elem: Scalar) -> f64 {
    if elem == Scalar::F32 {
        1e-4
    } else {
        1e-10
    }
}

fn eps(elem: Scalar) -> ArgValue {
    ArgValue::Scalar(Const::Float(1e-9, elem))
}

/// `x[r, :] L^-T` for every row of the `m x n` block `x`, L lower `n x n` (f64 reference).
fn right_lower_t(x: &[f64], l: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut out = x.to_vec();
    for r in 0..m {
        for j in 0..n {
            let mut s = out[r * n + j];
            for k in 0..j {
                s -= out[r * n + k] * l[j * n + k];
            }
            out[r * n + j] = s / l[j * n + j];
        }
    }
    out
}

#[test]
fn every_example_is_run() {
    let dir = format!("{}/../examples", env!("CARGO_MANIFEST_DIR"));
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tile"))
        .collect();
    found.sort();
    assert_eq!(found, RUN, "every example needs a run test in tests/tests/examples.rs");
}

#[test]
fn trsm_example_whitens() {
    for elem in [Scalar::F32, Scalar::F64] {
        let (b, m) = (9usize, 21usize);
        let a = rounded(elem, &random_spd(b, 16, 3));
        let x = rounded(elem, &random_uniform(b * m * 16, 4));
        let got = run(
            "trsm.tile",
            "whiten16",
            vec![
                ("A", arr(elem, &a, &[b as u64, 16, 16])),
                ("X", arr(elem, &x, &[b as u64, m as u64, 16])),
                ("eps", eps(elem)),
            ],
            "X",
        );
        let want: Vec<f64> = (0..b)
            .flat_map(|i| {
                let l = cholesky_f64(&a[i * 256..(i + 1) * 256], 16);
                right_lower_t(&x[i * m * 16..(i + 1) * m * 16], &l, m, 16)
            })
            .collect();
        assert!(max_rel_err(&got, &want, 16) <= tol(elem) * 10.0, "{elem:?}");
    }
}

#[test]
fn potrs_example_solves_spd_systems() {
    for elem in [Scalar::F32, Scalar::F64] {
        let b = 11usize;
        let a = rounded(elem, &random_spd(b, 16, 5));
        let y = rounded(elem, &random_uniform(b * 16, 6));
        let got = run(
            "potrs.tile",
            "spd_solve16",
            vec![("A", arr(elem, &a, &[b as u64, 16, 16])), ("Y", arr(elem, &y, &[b as u64, 16])), ("eps", eps(elem))],
            "Y",
        );
        // Check the residual A x - y relative to |y|.
        for i in 0..b {
            let (ai, xi, yi) = (&a[i * 256..(i + 1) * 256], &got[i * 16..(i + 1) * 16], &y[i * 16..(i + 1) * 16]);
            let scale = yi.iter().map(|v| v.abs()).fold(0.0, f64::max);
            for r in 0..16 {
                let ax: f64 = (0..16).map(|c| ai[r * 16 + c] * xi[c]).sum();
                assert!((ax - yi[r]).abs() <= tol(elem) * 10.0 * scale, "{elem:?} system {i} row {r}");
            }
        }
    }
}

#[test]
fn gemm_example_multiplies_any_shape() {
    for elem in [Scalar::F32, Scalar::F64] {
        let (m, k, n) = (37usize, 45usize, 19usize);
        let a = rounded(elem, &random_uniform(m * k, 7));
        let b = rounded(elem, &random_uniform(k * n, 8));
        let mut args = vec![("A", arr(elem, &a, &[m as u64, k as u64])), ("B", arr(elem, &b, &[k as u64, n as u64]))];
        args.push(("C", arr(elem, &vec![f64::NAN; m * n], &[m as u64, n as u64])));
        let got = run("gemm.tile", "matmul16", args, "C");
        let mut want = vec![0.0; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    want[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        let err = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0, f64::max);
        assert!(err <= tol(elem) * k as f64, "{elem:?}: {err}");
        // The batched kernel on two copies gives the same numbers twice.
        let a2: Vec<f64> = a.iter().chain(&a).copied().collect();
        let b2: Vec<f64> = b.iter().chain(&b).copied().collect();
        let args = vec![
            ("A", arr(elem, &a2, &[2, m as u64, k as u64])),
            ("B", arr(elem, &b2, &[2, k as u64, n as u64])),
            ("C", arr(elem, &vec![0.0; 2 * m * n], &[2, m as u64, n as u64])),
        ];
        let got2 = run("gemm.tile", "matmul16_batched", args, "C");
        assert_eq!(&got2[..m * n], &got[..]);
        assert_eq!(&got2[m * n..], &got[..]);
    }
}

#[test]
fn softmax_example_matches_reference() {
    for elem in [Scalar::F32, Scalar::F64] {
        let m = 37usize;
        let x: Vec<f64> = rounded(elem, &random_uniform(m * 64, 9)).iter().map(|v| v * 5.0).collect();
        let x = rounded(elem, &x);
        let got = run(
            "softmax.tile",
            "softmax64",
            vec![("X", arr(elem, &x, &[m as u64, 64])), ("Y", arr(elem, &vec![0.0; m * 64], &[m as u64, 64]))],
            "Y",
        );
        for r in 0..m {
            let row = &x[r * 64..(r + 1) * 64];
            let mx = row.iter().copied().fold(f64::MIN, f64::max);
            let s: f64 = row.iter().map(|v| (v - mx).exp()).sum();
            for c in 0..64 {
                let want = (row[c] - mx).exp() / s;
                assert!((got[r * 64 + c] - want).abs() <= tol(elem) * want.max(1e-3), "{elem:?} ({r}, {c})");
            }
        }
    }
}

/// Masks from `iota`, comparisons and `where`: a causal softmax on partial 29x29 and 1x1
/// matrices (32x32 tiles), against an f64 reference.
#[test]
fn causal_softmax_example_masks_the_upper_triangle() {
    for elem in [Scalar::F32, Scalar::F64] {
        for n in [29usize, 1] {
            let b = 3usize;
            let s = rounded(elem, &random_uniform(b * n * n, 31).iter().map(|v| v * 4.0).collect::<Vec<_>>());
            let shape = [b as u64, n as u64, n as u64];
            let got = run(
                "causal_softmax.tile",
                "causal_softmax",
                vec![("S", arr(elem, &s, &shape)), ("P", arr(elem, &vec![7.0; b * n * n], &shape))],
                "P",
            );
            for m in 0..b {
                for i in 0..n {
                    let row = &s[(m * n + i) * n..(m * n + i + 1) * n];
                    let mx = row[..=i].iter().copied().fold(f64::MIN, f64::max);
                    let z: f64 = row[..=i].iter().map(|v| (v - mx).exp()).sum();
                    for j in 0..n {
                        let want = if j <= i { (row[j] - mx).exp() / z } else { 0.0 };
                        let g = got[(m * n + i) * n + j];
                        assert!(
                            (g - want).abs() <= tol(elem) * want.max(1e-3),
                            "{elem:?} n={n} [{m}, {i}, {j}]: {g} vs {want}"
                        );
                    }
                }
            }
        }
    }
}

/// Layer norm of 37 rows (a partial last block of 16), against an f64 reference.
#[test]
fn layer_norm_example_matches_reference() {
    for elem in [Scalar::F32, Scalar::F64] {
        let m = 37usize;
        let x = rounded(elem, &random_uniform(m * 64, 12).iter().map(|v| v * 3.0 + 1.0).collect::<Vec<_>>());
        let g = rounded(elem, &random_uniform(64, 13));
        let bt = rounded(elem, &random_uniform(64, 14));
        let eps = 1e-5;
        let got = run(
            "layer_norm.tile",
            "layer_norm64",
            vec![
                ("X", arr(elem, &x, &[m as u64, 64])),
                ("G", arr(elem, &g, &[64])),
                ("Bt", arr(elem, &bt, &[64])),
                ("Y", arr(elem, &vec![0.0; m * 64], &[m as u64, 64])),
                ("eps", ArgValue::Scalar(Const::Float(eps, elem))),
            ],
            "Y",
        );
        for r in 0..m {
            let row = &x[r * 64..(r + 1) * 64];
            let mean = row.iter().sum::<f64>() / 64.0;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 64.0;
            for c in 0..64 {
                let want = (row[c] - mean) / (var + eps).sqrt() * g[c] + bt[c];
                let d = (got[r * 64 + c] - want).abs();
                assert!(d <= tol(elem) * want.abs().max(1.0), "{elem:?} ({r}, {c}): {} vs {want}", got[r * 64 + c]);
            }
        }
    }
}

/// Attention with and without the causal mask, for sequences of 29 and 1, against f64.
#[test]
fn attention_example_matches_reference() {
    let d = 16usize;
    for elem in [Scalar::F32, Scalar::F64] {
        for (n, causal) in [(29usize, 0.0), (29, 1.0), (1, 1.0)] {
            let b = 2usize;
            let gen = |seed| rounded(elem, &random_uniform(b * n * d, seed));
            let (q, k, v) = (gen(51), gen(52), gen(53));
            let shape = [b as u64, n as u64, d as u64];
            let scale = 0.25;
            let got = run(
                "attention.tile",
                "attention",
                vec![
                    ("Q", arr(elem, &q, &shape)),
                    ("K", arr(elem, &k, &shape)),
                    ("V", arr(elem, &v, &shape)),
                    ("O", arr(elem, &vec![0.0; b * n * d], &shape)),
                    ("scale", ArgValue::Scalar(Const::Float(scale, elem))),
                    ("causal", ArgValue::Scalar(Const::Float(causal, elem))),
                ],
                "O",
            );
            for m in 0..b {
                let at = |x: &[f64], i: usize, j: usize| x[(m * n + i) * d + j];
                for i in 0..n {
                    let keys = if causal > 0.0 { i + 1 } else { n };
                    let s: Vec<f64> =
                        (0..keys).map(|j| (0..d).map(|c| at(&q, i, c) * at(&k, j, c)).sum::<f64>() * scale).collect();
                    let mx = s.iter().copied().fold(f64::MIN, f64::max);
                    let e: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
                    let z: f64 = e.iter().sum();
                    for c in 0..d {
                        let want = (0..keys).map(|j| e[j] * at(&v, j, c)).sum::<f64>() / z;
                        let g = got[(m * n + i) * d + c];
                        assert!(
                            (g - want).abs() <= tol(elem) * want.abs().max(1.0),
                            "{elem:?} n={n} causal={causal} [{m}, {i}, {c}]: {g} vs {want}"
                        );
                    }
                }
            }
        }
    }
}

/// Batched LU without pivoting on diagonally dominant 29x29, 32x32 and 1x1 matrices, against
/// an f64 Doolittle factorization.
#[test]
fn lu_example_factors_without_pivoting() {
    for elem in [Scalar::F32, Scalar::F64] {
        for n in [29usize, 32, 1] {
            let b = 3usize;
            let mut a = random_uniform(b * n * n, 61);
            for m in 0..b {
                for i in 0..n {
                    a[(m * n + i) * n + i] += n as f64; // diagonally dominant: no pivoting needed
                }
            }
            let a = rounded(elem, &a);
            let shape = [b as u64, n as u64, n as u64];
            let got = run("lu.tile", "lu_batched", vec![("A", arr(elem, &a, &shape))], "A");
            for m in 0..b {
                let mut w: Vec<f64> = a[m * n * n..(m + 1) * n * n].to_vec();
                for k in 0..n {
                    for i in k + 1..n {
                        w[i * n + k] /= w[k * n + k];
                        for j in k + 1..n {
                            w[i * n + j] -= w[i * n + k] * w[k * n + j];
                        }
                    }
                }
                for (e, (g, want)) in got[m * n * n..(m + 1) * n * n].iter().zip(&w).enumerate() {
                    assert!(
                        (g - want).abs() <= tol(elem) * want.abs().max(1.0),
                        "{elem:?} n={n} [{m}] element {e}: {g} vs {want}"
                    );
                }
            }
        }
    }
}

/// Batched LU with partial pivoting on random 29x29, 32x32 and 1x1 matrices and a singular
/// one (a zero column, rows that tie), against the f64 getf2: the same pivots, the factors
/// within the element type's accuracy.
#[test]
fn getrf_example_factors_with_partial_pivoting() {
    for elem in [Scalar::F32, Scalar::F64] {
        for n in [29usize, 32, 1] {
            let b = 4usize;
            let mut a = random_uniform(b * n * n, 64);
            if n > 3 {
                // Matrix 3: column 2 zero, rows 0 and 1 equal.
                for i in 0..n {
                    a[(3 * n + i) * n + 2] = 0.0;
                    a[(3 * n + 1) * n + i] = a[3 * n * n + i];
                }
            }
            let a = rounded(elem, &a);
            let shape = [b as u64, n as u64, n as u64];
            let args = |a: &[f64]| {
                let p = HostArray::from_i32(&vec![-1; b * n], &[b as u64, n as u64]).unwrap();
                vec![("A", arr(elem, a, &shape)), ("P", ArgValue::Array(p))]
            };
            let got = run("getrf.tile", "getrf_batched", args(&a), "A");
            let piv = run("getrf.tile", "getrf_batched", args(&a), "P");
            for m in 0..b {
                let (w, want_piv, _) = tilec_tests::getrf_f64(&a[m * n * n..(m + 1) * n * n], n);
                let got_piv: Vec<i32> = piv[m * n..(m + 1) * n].iter().map(|p| *p as i32).collect();
                assert_eq!(got_piv, want_piv, "{elem:?} n={n} [{m}] pivots");
                let scale = w.iter().fold(1f64, |s, x| s.max(x.abs()));
                for (e, (g, want)) in got[m * n * n..(m + 1) * n * n].iter().zip(&w).enumerate() {
                    assert!((g - want).abs() <= tol(elem) * scale, "{elem:?} n={n} [{m}] element {e}: {g} vs {want}");
                }
            }
        }
    }
}

/// Batched Householder QR on tall (29x23), wide (23x29), square (32x32) and 1x1 matrices and
/// one with a zero column below the diagonal (its tau 0), against the f64 geqr2.
#[test]
fn geqrf_example_factors_with_householder_reflectors() {
    for elem in [Scalar::F32, Scalar::F64] {
        for (m, n) in [(29usize, 23usize), (23, 29), (32, 32), (1, 1)] {
            let (b, k) = (3usize, m.min(n));
            let mut a = random_uniform(b * m * n, 65);
            if n > 2 {
                for i in 1..m {
                    a[(2 * m + i) * n + 1] = 0.0; // matrix 2: column 1 zero below row 0
                }
            }
            let a = rounded(elem, &a);
            let args = vec![
                ("A", arr(elem, &a, &[b as u64, m as u64, n as u64])),
                ("Tau", arr(elem, &vec![7.0; b * k], &[b as u64, k as u64])),
            ];
            let got = run_outs("geqrf.tile", "geqrf_batched", args, &["A", "Tau"]);
            for q in 0..b {
                let (w, taus) = tilec_tests::geqr2_f64(&a[q * m * n..(q + 1) * m * n], m, n);
                let ctx = format!("{elem:?} {m}x{n} [{q}]");
                assert!(normwise(&got[0][q * m * n..(q + 1) * m * n], &w) <= tol(elem), "{ctx}: factors");
                assert!(normwise(&got[1][q * k..(q + 1) * k], &taus) <= tol(elem), "{ctx}: taus");
            }
        }
    }
}

/// RMSNorm forward and backward on 137 rows of 200 (partial rows of 512; three programs of 64
/// rows in the backward pass), against f64: Y and Rstd, then dX and dW (accumulated with
/// `atomic_add` across programs).
#[test]
fn rms_norm_example_matches_reference() {
    for elem in [Scalar::F32, Scalar::F64] {
        let (m, n) = (137usize, 200usize);
        let x = rounded(elem, &random_uniform(m * n, 66));
        let w = rounded(elem, &random_uniform(n, 67));
        let dy = rounded(elem, &random_uniform(m * n, 68));
        let eps = 1e-6;
        let (mu, nu) = (m as u64, n as u64);
        // With the optional Rstd, and without it (inference).
        let fwd_args = |with_rstd: bool| {
            let mut a = vec![
                ("X", arr(elem, &x, &[mu, nu])),
                ("W", arr(elem, &w, &[nu])),
                ("Y", arr(elem, &vec![0.0; m * n], &[mu, nu])),
                ("eps", ArgValue::Scalar(Const::Float(eps, elem))),
            ];
            if with_rstd {
                a.push(("Rstd", arr(elem, &vec![0.0; m], &[mu])));
            }
            a
        };
        let fwd = run_outs("rms_norm.tile", "rms_norm_fwd", fwd_args(true), &["Y", "Rstd"]);
        let rstd: Vec<f64> =
            (0..m).map(|r| 1.0 / ((0..n).map(|c| x[r * n + c].powi(2)).sum::<f64>() / n as f64 + eps).sqrt()).collect();
        let y: Vec<f64> = (0..m * n).map(|e| x[e] * rstd[e / n] * w[e % n]).collect();
        assert!(normwise(&fwd[0], &y) <= tol(elem), "{elem:?} Y");
        assert!(normwise(&fwd[1], &rstd) <= tol(elem), "{elem:?} Rstd");
        let y_only = run("rms_norm.tile", "rms_norm_fwd", fwd_args(false), "Y");
        assert_eq!(y_only, fwd[0], "{elem:?} Y without Rstd");
        let rs = rounded(elem, &fwd[1]);
        let bwd = run_outs(
            "rms_norm.tile",
            "rms_norm_bwd",
            vec![
                ("X", arr(elem, &x, &[mu, nu])),
                ("DY", arr(elem, &dy, &[mu, nu])),
                ("W", arr(elem, &w, &[nu])),
                ("Rstd", arr(elem, &rs, &[mu])),
                ("DX", arr(elem, &vec![0.0; m * n], &[mu, nu])),
                ("DW", arr(elem, &vec![0.0; n], &[nu])),
            ],
            &["DX", "DW"],
        );
        let mut dx = vec![0.0; m * n];
        let mut dw = vec![0.0; n];
        for r in 0..m {
            let gx: f64 = (0..n).map(|c| dy[r * n + c] * w[c] * x[r * n + c]).sum();
            for c in 0..n {
                let e = r * n + c;
                dx[e] = rs[r] * dy[e] * w[c] - rs[r].powi(3) / n as f64 * gx * x[e];
                dw[c] += dy[e] * x[e] * rs[r];
            }
        }
        assert!(normwise(&bwd[0], &dx) <= tol(elem), "{elem:?} dX");
        assert!(normwise(&bwd[1], &dw) <= tol(elem), "{elem:?} dW");
    }
}

/// SwiGLU forward and backward on 37 rows of 200, against f64.
#[test]
fn swiglu_example_matches_reference() {
    for elem in [Scalar::F32, Scalar::F64] {
        let (m, n) = (37usize, 200usize);
        let sh = [m as u64, n as u64];
        let a: Vec<f64> = rounded(elem, &random_uniform(m * n, 69)).iter().map(|v| v * 6.0).collect();
        let (a, b, dc) =
            (rounded(elem, &a), rounded(elem, &random_uniform(m * n, 70)), rounded(elem, &random_uniform(m * n, 71)));
        let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
        let c = run(
            "swiglu.tile",
            "swiglu_fwd",
            vec![("A", arr(elem, &a, &sh)), ("B", arr(elem, &b, &sh)), ("C", arr(elem, &vec![0.0; m * n], &sh))],
            "C",
        );
        let want: Vec<f64> = (0..m * n).map(|e| a[e] * sig(a[e]) * b[e]).collect();
        assert!(normwise(&c, &want) <= tol(elem), "{elem:?} C");
        let g = run_outs(
            "swiglu.tile",
            "swiglu_bwd",
            vec![("DC", arr(elem, &dc, &sh)), ("A", arr(elem, &a, &sh)), ("B", arr(elem, &b, &sh))],
            &["A", "B"],
        );
        let da: Vec<f64> = (0..m * n).map(|e| dc[e] * b[e] * sig(a[e]) * (1.0 + a[e] * (1.0 - sig(a[e])))).collect();
        let db: Vec<f64> = (0..m * n).map(|e| dc[e] * a[e] * sig(a[e])).collect();
        assert!(normwise(&g[0], &da) <= tol(elem), "{elem:?} dA");
        assert!(normwise(&g[1], &db) <= tol(elem), "{elem:?} dB");
    }
}

/// Dropout on 5000 elements (a partial last program) with p = 0.3: kept elements scaled by
/// 1 / (1 - p), the others zero, exactly where R > p.
#[test]
fn dropout_example_keeps_where_the_random_numbers_say() {
    for elem in [Scalar::F32, Scalar::F64] {
        let n = 5000usize;
        let x = rounded(elem, &random_uniform(n, 72));
        let r: Vec<f64> = rounded(elem, &random_uniform(n, 73)).iter().map(|v| (v + 1.0) / 2.0).collect();
        let r = rounded(elem, &r);
        let p = 0.3;
        let y = run(
            "dropout.tile",
            "dropout",
            vec![
                ("X", arr(elem, &x, &[n as u64])),
                ("R", arr(elem, &r, &[n as u64])),
                ("Y", arr(elem, &vec![7.0; n], &[n as u64])),
                ("p", ArgValue::Scalar(Const::Float(p, elem))),
            ],
            "Y",
        );
        let scale = elem.round(1.0 / elem.round(1.0 - p));
        for e in 0..n {
            let want = if r[e] > elem.round(p) { x[e] * scale } else { 0.0 };
            assert!((y[e] - want).abs() <= tol(elem) * want.abs(), "{elem:?} element {e}: {} vs {want}", y[e]);
        }
    }
}

#[test]
fn colsum_example_adds_atomically_across_programs() {
    for elem in [Scalar::F32, Scalar::F64] {
        let m = 1000usize;
        let x = rounded(elem, &random_uniform(m * 48, 10));
        let got = run(
            "colsum.tile",
            "colsum",
            vec![("X", arr(elem, &x, &[m as u64, 48])), ("S", arr(elem, &[0.0; 48], &[48]))],
            "S",
        );
        for c in 0..48 {
            let want: f64 = (0..m).map(|r| x[r * 48 + c]).sum();
            assert!((got[c] - want).abs() <= tol(elem) * m as f64, "{elem:?} column {c}: {} vs {want}", got[c]);
        }
    }
}

/// NPBench's softmax on 37 rows of 200 (the padding to 512 masked out of the max and the sum),
/// rows shifted down by up to 200 so that a zero from the padding would be the largest element
/// (and every exponential of a real element would underflow), and every fourth row by 1e35, below
/// any finite fill value a kernel might pad with, against f64.
#[test]
fn softmax_rows_example_masks_the_padding() {
    for elem in [Scalar::F32, Scalar::F64] {
        let (m, n) = (37usize, 200usize);
        let x: Vec<f64> = random_uniform(m * n, 88)
            .iter()
            .enumerate()
            .map(|(e, v)| v * 5.0 - 100.0 * ((e / n) % 3) as f64 - if (e / n) % 4 == 3 { 1e35 } else { 0.0 })
            .collect();
        let x = rounded(elem, &x);
        let sh = [m as u64, n as u64];
        let y = run(
            "softmax_rows.tile",
            "softmax_rows",
            vec![("X", arr(elem, &x, &sh)), ("Y", arr(elem, &vec![7.0; m * n], &sh))],
            "Y",
        );
        for r in 0..m {
            let row = &x[r * n..(r + 1) * n];
            let mx = row.iter().copied().fold(f64::MIN, f64::max);
            let s: f64 = row.iter().map(|v| (v - mx).exp()).sum();
            for c in 0..n {
                let want = (row[c] - mx).exp() / s;
                let got = y[r * n + c];
                assert!((got - want).abs() <= tol(elem) * want.max(1e-3), "{elem:?} ({r}, {c}): {got} vs {want}");
            }
        }
    }
}

/// Suffix sums of 29 rows of 300 (padding to 512): each against the f64 sums from the last
/// element back; the f32 sums are the f32 additions in that order, so they match it exactly.
#[test]
fn suffix_sums_example_adds_from_the_end() {
    for elem in [Scalar::F32, Scalar::F64] {
        let (m, n) = (29usize, 300usize);
        let x = rounded(elem, &random_uniform(m * n, 131));
        let sh = [m as u64, n as u64];
        let y = run(
            "suffix_sums.tile",
            "suffix_sums",
            vec![("X", arr(elem, &x, &sh)), ("Y", arr(elem, &vec![7.0; m * n], &sh))],
            "Y",
        );
        for r in 0..m {
            let mut acc = 0.0f64;
            for c in (0..n).rev() {
                acc = elem.round(acc + x[r * n + c]);
                assert_eq!(y[r * n + c], acc, "{elem:?} ({r}, {c})");
            }
        }
    }
}

/// Half-precision arithmetic: the f16 residual update and the bf16 momentum step against the
/// `half` crate's binary16 and bfloat16 (each operation rounded to the type, as NumPy's
/// `float16` computes), bit for bit, on 37 rows of 300 (rows padded to 1024) and 2500
/// elements (three programs, the last partial).
#[test]
fn half_precision_example_rounds_each_operation() {
    use half::{bf16, f16};
    let (m, n) = (37usize, 300usize);
    let h16 = |seed: u64, len: usize| -> Vec<f64> {
        random_uniform(len, seed).iter().map(|v| f16::from_f64(v * 4.0).to_f64()).collect()
    };
    let (x, f) = (h16(161, m * n), h16(162, m * n));
    let sh = [m as u64, n as u64];
    let args = vec![
        ("X", arr(Scalar::F16, &x, &sh)),
        ("F", arr(Scalar::F16, &f, &sh)),
        ("Y", arr(Scalar::F16, &vec![7.0; m * n], &sh)),
        ("gamma", ArgValue::Scalar(Const::Float(0.3, Scalar::F32))),
    ];
    let y = run("half_precision.tile", "residual_f16", args, "Y");
    let gamma = f16::from_f32(0.3);
    let want: Vec<f64> =
        x.iter().zip(&f).map(|(x, f)| (f16::from_f64(*x) + gamma * f16::from_f64(*f)).to_f64()).collect();
    assert_eq!(y, want, "residual_f16");
    let len = 2500usize;
    let b16 =
        |seed: u64| -> Vec<f64> { random_uniform(len, seed).iter().map(|v| bf16::from_f64(*v).to_f64()).collect() };
    let (p, g, v) = (b16(163), b16(164), b16(165));
    let l = [len as u64];
    let args = vec![
        ("P", arr(Scalar::BF16, &p, &l)),
        ("G", arr(Scalar::BF16, &g, &l)),
        ("V", arr(Scalar::BF16, &v, &l)),
        ("lr", ArgValue::Scalar(Const::Float(0.1, Scalar::F32))),
        ("mu", ArgValue::Scalar(Const::Float(0.9, Scalar::F32))),
    ];
    let got = run_outs("half_precision.tile", "sgd_momentum_bf16", args, &["P", "V"]);
    let (lr, mu) = (bf16::from_f32(0.1), bf16::from_f32(0.9));
    let b = |x: f64| bf16::from_f64(x);
    let v_new: Vec<bf16> = (0..len).map(|i| mu * b(v[i]) + b(g[i])).collect();
    let p_new: Vec<f64> = (0..len).map(|i| (b(p[i]) - lr * v_new[i]).to_f64()).collect();
    assert_eq!(got[1], v_new.iter().map(|v| v.to_f64()).collect::<Vec<_>>(), "sgd_momentum_bf16 V");
    assert_eq!(got[0], p_new, "sgd_momentum_bf16 P");
}

/// Stream compaction of 5000 elements (five programs, the last partial) with the threshold
/// met by about a third: the count exactly, each block's kept elements in order, and the
/// kept elements as a set against NumPy's `x[x > t]` (blocks land in counter order).
#[test]
fn compact_example_keeps_what_passes_with_one_fetch_and_add() {
    let n = 5000usize;
    let x = random_uniform(n, 153);
    for elem in [Scalar::F32, Scalar::F64] {
        let xs = rounded(elem, &x);
        let t = 0.3;
        let args = vec![
            ("X", arr(elem, &x, &[n as u64])),
            ("Y", arr(elem, &vec![7.0; n], &[n as u64])),
            ("Count", ArgValue::Array(HostArray::from_i32(&[0], &[1]).unwrap())),
            ("t", ArgValue::Scalar(Const::Float(t, elem))),
        ];
        let got = run_outs("compact.tile", "compact", args, &["Y", "Count"]);
        let want: Vec<f64> = xs.iter().copied().filter(|v| *v > elem.round(t)).collect();
        assert_eq!(got[1], vec![want.len() as f64], "{elem:?} count");
        let mut kept = got[0][..want.len()].to_vec();
        // Each block's elements in their order: the kept values of a block are contiguous.
        for b in 0..n.div_ceil(1024) {
            let block: Vec<f64> =
                xs[b * 1024..(b * 1024 + 1024).min(n)].iter().copied().filter(|v| *v > elem.round(t)).collect();
            let at = kept.windows(block.len().max(1)).position(|w| w == &block[..]);
            assert!(block.is_empty() || at.is_some(), "{elem:?}: block {b} is not contiguous and in order");
        }
        assert!(got[0][want.len()..].iter().all(|v| *v == 7.0), "{elem:?}: written past the count");
        let mut want = want;
        kept.sort_by(f64::total_cmp);
        want.sort_by(f64::total_cmp);
        assert_eq!(kept, want, "{elem:?}: the kept elements");
    }
}

/// Embedding lookup and gradient: 75 tokens (three programs, the last partial) with ids in and
/// out of a 20-row table of 48 columns (`BD = 64`), repeated ids, against NumPy's `W[ids]` and
/// `np.add.at(DW, ids, DY)` in f64 (multiples of 1/8: every sum exact).
#[test]
fn embedding_example_gathers_rows_and_scatter_adds_gradients() {
    let (v, d, n) = (20usize, 48usize, 75usize);
    let eighths = |len: usize, seed: u64| -> Vec<f64> {
        random_uniform(len, seed).iter().map(|x| (x * 16.0).round() / 8.0).collect()
    };
    let ids: Vec<i32> = (0..n as i32).map(|t| (t * 7) % 23 - 1).collect();
    let (w, dy) = (eighths(v * d, 151), eighths(n * d, 152));
    let inside = |i: i32| (0..v as i32).contains(&i);
    for elem in [Scalar::F32, Scalar::F64] {
        let id_arr = || ArgValue::Array(HostArray::from_i32(&ids, &[n as u64]).unwrap());
        let args = vec![
            ("W", arr(elem, &w, &[v as u64, d as u64])),
            ("Ids", id_arr()),
            ("Y", arr(elem, &vec![7.0; n * d], &[n as u64, d as u64])),
        ];
        let y = run("embedding.tile", "embedding_fwd", args, "Y");
        for t in 0..n {
            for c in 0..d {
                let want = if inside(ids[t]) { w[ids[t] as usize * d + c] } else { 0.0 };
                assert_eq!(y[t * d + c], want, "{elem:?} Y[{t}, {c}] (id {})", ids[t]);
            }
        }
        let args = vec![
            ("DY", arr(elem, &dy, &[n as u64, d as u64])),
            ("Ids", id_arr()),
            ("DW", arr(elem, &vec![0.5; v * d], &[v as u64, d as u64])),
        ];
        let dw = run("embedding.tile", "embedding_bwd", args, "DW");
        let mut want = vec![0.5; v * d];
        for t in (0..n).filter(|&t| inside(ids[t])) {
            for c in 0..d {
                want[ids[t] as usize * d + c] += dy[t * d + c];
            }
        }
        assert_eq!(dw, want, "{elem:?} DW");
    }
}

/// Top-k of 23 rows of 30 (padded to 32 with -inf) with ties (multiples of 1/8) and a NaN,
/// K = 8 and `--generic K=3`: the values and columns against a stable descending sort in f64
/// (NaN first, equal values by column).
#[test]
fn topk_example_picks_the_largest_first() {
    for elem in [Scalar::F32, Scalar::F64] {
        let (m, n) = (23usize, 30usize);
        let mut x: Vec<f64> = random_uniform(m * n, 141).iter().map(|v| (v * 16.0).round() / 8.0).collect();
        x[5] = f64::NAN;
        x[n + 7] = f64::NAN;
        for k in [8usize, 3] {
            let (sh, ok) = ([m as u64, n as u64], [m as u64, k as u64]);
            let idx = HostArray::from_i32(&vec![-1; m * k], &ok).unwrap();
            let args =
                vec![("X", arr(elem, &x, &sh)), ("V", arr(elem, &vec![7.0; m * k], &ok)), ("I", ArgValue::Array(idx))];
            let got = run_with("topk.tile", "topk_rows", args, &[("K", k as i64)], &["V", "I"]);
            for r in 0..m {
                let row = &x[r * n..(r + 1) * n];
                let key = |a: f64, b: f64| match (a.is_nan(), b.is_nan()) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) => std::cmp::Ordering::Greater,
                    (false, true) => std::cmp::Ordering::Less,
                    _ => a.partial_cmp(&b).unwrap(),
                };
                let mut ix: Vec<usize> = (0..n).collect();
                ix.sort_by(|&a, &b| key(row[b], row[a]));
                for j in 0..k {
                    let (v, i) = (got[0][r * k + j], got[1][r * k + j]);
                    let want = row[ix[j]];
                    assert!(v == want || (v.is_nan() && want.is_nan()), "{elem:?} K={k} ({r}, {j}): {v} vs {want}");
                    assert_eq!(i, ix[j] as f64, "{elem:?} K={k} ({r}, {j}): column");
                }
            }
        }
    }
}

/// NPBench's gemver at N = 75 (partial blocks everywhere): the four kernels in turn, each
/// against f64 from the previous kernel's output.
#[test]
fn gemver_example_matches_reference() {
    for elem in [Scalar::F32, Scalar::F64] {
        let n = 75usize;
        let (nu, sq) = ([n as u64], [n as u64, n as u64]);
        let vecs: Vec<Vec<f64>> = (0..7).map(|k| rounded(elem, &random_uniform(n, 90 + k))).collect();
        let (u1, v1, u2, v2, x, y, z) = (&vecs[0], &vecs[1], &vecs[2], &vecs[3], &vecs[4], &vecs[5], &vecs[6]);
        let w = rounded(elem, &random_uniform(n, 97));
        let a = rounded(elem, &random_uniform(n * n, 98));
        let (alpha, beta) = (1.5, 1.25);
        let a2 = run(
            "gemver.tile",
            "gemver_rank2",
            vec![
                ("A", arr(elem, &a, &sq)),
                ("U1", arr(elem, u1, &nu)),
                ("V1", arr(elem, v1, &nu)),
                ("U2", arr(elem, u2, &nu)),
                ("V2", arr(elem, v2, &nu)),
            ],
            "A",
        );
        let want: Vec<f64> = (0..n * n).map(|e| a[e] + u1[e / n] * v1[e % n] + u2[e / n] * v2[e % n]).collect();
        assert!(normwise(&a2, &want) <= tol(elem), "{elem:?} A");
        // A^T y by G bands of rows (the last ones empty at G = 7 and 24; heights 12 and 4),
        // at BN = 256 (one partial block) and 32 (three), each band's sums against f64.
        let mut x2 = Vec::new();
        for (g, bn) in [(1usize, 256i64), (7, 32), (24, 256)] {
            let ctx = format!("{elem:?} G={g} BN={bn}");
            let p = run_with(
                "gemver.tile",
                "gemver_atx_parts",
                vec![
                    ("A", arr(elem, &a2, &sq)),
                    ("Y", arr(elem, y, &nu)),
                    ("P", arr(elem, &vec![7.0; g * n], &[g as u64, n as u64])),
                ],
                &[("BN", bn)],
                &["P"],
            )
            .remove(0);
            let band = n.div_ceil(g).div_ceil(4) * 4;
            let want: Vec<f64> = (0..g * n)
                .map(|e| (e / n * band..(e / n * band + band).min(n)).map(|i| a2[i * n + e % n] * y[i]).sum())
                .collect();
            assert!(normwise(&p, &want) <= tol(elem), "{ctx}: P");
            x2 = run(
                "gemver.tile",
                "gemver_atx",
                vec![
                    ("P", arr(elem, &p, &[g as u64, n as u64])),
                    ("X", arr(elem, x, &nu)),
                    ("Z", arr(elem, z, &nu)),
                    ("beta", ArgValue::Scalar(Const::Float(beta, elem))),
                ],
                "X",
            );
            let want: Vec<f64> =
                (0..n).map(|j| x[j] + beta * (0..n).map(|i| a2[i * n + j] * y[i]).sum::<f64>() + z[j]).collect();
            assert!(normwise(&x2, &want) <= tol(elem), "{ctx}: x");
        }
        let w2 = run(
            "gemver.tile",
            "gemver_ax",
            vec![
                ("A", arr(elem, &a2, &sq)),
                ("X", arr(elem, &x2, &nu)),
                ("W", arr(elem, &w, &nu)),
                ("alpha", ArgValue::Scalar(Const::Float(alpha, elem))),
            ],
            "W",
        );
        let want: Vec<f64> =
            (0..n).map(|i| w[i] + alpha * (0..n).map(|j| a2[i * n + j] * x2[j]).sum::<f64>()).collect();
        assert!(normwise(&w2, &want) <= tol(elem), "{elem:?} w");
    }
}

/// NPBench's syrk (BLAS syrk('L', 'N')) with C 75 x 75 and A 75 x 50, at the default block
/// of 32 and at 64: the lower triangle against f64, the strict upper triangle exactly as given.
#[test]
fn syrk_example_updates_the_lower_triangle() {
    for elem in [Scalar::F32, Scalar::F64] {
        let (n, k) = (75usize, 50usize);
        let c = rounded(elem, &random_uniform(n * n, 99));
        let a = rounded(elem, &random_uniform(n * k, 100));
        let (alpha, beta) = (1.5, -0.75);
        for bs in [32, 64] {
            let got = run_with(
                "syrk.tile",
                "syrk",
                vec![
                    ("C", arr(elem, &c, &[n as u64, n as u64])),
                    ("A", arr(elem, &a, &[n as u64, k as u64])),
                    ("alpha", ArgValue::Scalar(Const::Float(alpha, elem))),
                    ("beta", ArgValue::Scalar(Const::Float(beta, elem))),
                ],
                &[("BS", bs)],
                &["C"],
            )
            .remove(0);
            let mut want = c.clone();
            for i in 0..n {
                for j in 0..=i {
                    let dot: f64 = (0..k).map(|q| a[i * k + q] * a[j * k + q]).sum();
                    want[i * n + j] = alpha * dot + beta * c[i * n + j];
                }
            }
            assert!(normwise(&got, &want) <= tol(elem), "{elem:?} BS = {bs}");
            for i in 0..n {
                for j in i + 1..n {
                    assert_eq!(
                        got[i * n + j],
                        c[i * n + j],
                        "{elem:?} BS = {bs}: C[{i}, {j}] above the diagonal changed"
                    );
                }
            }
        }
    }
}

/// `max over b of max |A[b] - L[b] L[b]^T| / max |A[b]|` with `L` its lower triangle (f64).
fn residual_f64(a: &[f64], l: &[f64], batch: usize, n: usize) -> f64 {
    let mut worst: f64 = 0.0;
    for b in 0..batch {
        let (a, l) = (&a[b * n * n..(b + 1) * n * n], &l[b * n * n..(b + 1) * n * n]);
        let low = |i: usize, k: usize| if k <= i { l[i * n + k] } else { 0.0 };
        let amax = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let mut d: f64 = 0.0;
        for i in 0..n {
            for j in 0..n {
                let llt: f64 = (0..n).map(|k| low(i, k) * low(j, k)).sum();
                d = d.max((a[i * n + j] - llt).abs());
            }
        }
        worst = worst.max(d / amax);
    }
    worst
}

/// `residual` of examples/cholesky.tile (the README's demo checks its factor with it): tiny
/// for a true factor with garbage above its diagonal, and the f64 reference's value for a
/// random lower triangle; three matrices of order 37 (partial tiles).
#[test]
fn cholesky_residual_example_measures_the_factor() {
    let (batch, n) = (3usize, 37usize);
    let a = random_spd(batch, n, 31);
    let junk = random_uniform(batch * n * n, 32);
    let mut factor = junk.clone();
    for b in 0..batch {
        let l = cholesky_f64(&a[b * n * n..(b + 1) * n * n], n);
        for i in 0..n {
            for k in 0..=i {
                factor[b * n * n + i * n + k] = l[i * n + k];
            }
        }
    }
    let shape = [batch as u64, n as u64, n as u64];
    for elem in [Scalar::F32, Scalar::F64] {
        let run_r = |l: &[f64]| {
            let args = vec![("A", arr(elem, &a, &shape)), ("L", arr(elem, l, &shape)), ("R", arr(elem, &[0.0], &[1]))];
            run("cholesky.tile", "residual", args, "R")[0]
        };
        let small = if elem == Scalar::F32 { 1e-5 } else { 1e-13 };
        let r = run_r(&factor);
        assert!(r > 0.0 && r < small, "{elem:?}: residual of a true factor {r:e}");
        let (r, want) = (run_r(&junk), residual_f64(&rounded(elem, &a), &rounded(elem, &junk), batch, n));
        assert!((r - want).abs() <= tol(elem) * want, "{elem:?}: residual {r} against {want}");
    }
}

/// The MPM snow update (examples/mpm_stress.tile) on 77 particles (a partial last program)
/// with deformation gradients near the identity, against the same update in f64 with
/// `svd_f64`.
#[test]
fn mpm_stress_example_clamps_singular_values_and_forms_the_stress() {
    let (mu0, la0, tc, ts, hard) = (416.7, 277.8, 0.025, 0.0075, 10.0);
    for elem in [Scalar::F32, Scalar::F64] {
        let p = 77usize;
        let f: Vec<f64> = random_uniform(p * 9, 81)
            .iter()
            .enumerate()
            .map(|(e, x)| if e % 9 % 4 == 0 { 1.0 } else { 0.0 } + 0.1 * x)
            .collect();
        let f = rounded(elem, &f);
        let jp = rounded(elem, &random_uniform(p, 82).iter().map(|x| 1.0 + 0.05 * x).collect::<Vec<_>>());
        let s = |x: f64| ArgValue::Scalar(Const::Float(x, elem));
        let out = run_outs(
            "mpm_stress.tile",
            "mpm_stress",
            vec![
                ("F", arr(elem, &f, &[p as u64, 3, 3])),
                ("Jp", arr(elem, &jp, &[p as u64])),
                ("Tau", arr(elem, &vec![0.0; p * 9], &[p as u64, 3, 3])),
                ("mu0", s(mu0)),
                ("lambda0", s(la0)),
                ("theta_c", s(tc)),
                ("theta_s", s(ts)),
                ("hardening", s(hard)),
            ],
            &["F", "Jp", "Tau"],
        );
        let (mut fw, mut jw, mut tw) = (Vec::new(), Vec::new(), Vec::new());
        for k in 0..p {
            let (u, sig, v) = svd_f64(&f[k * 9..k * 9 + 9], 3);
            let h = (hard * (1.0 - jp[k])).exp();
            let c: Vec<f64> = sig.iter().map(|x| x.clamp(1.0 - tc, 1.0 + ts)).collect();
            jw.push(jp[k] * (0..3).map(|d| sig[d] / c[d]).product::<f64>());
            let j: f64 = c.iter().product();
            let us: Vec<f64> = (0..9).map(|e| u[e] * c[e % 3]).collect();
            let vt = transpose_f64(&v, 3, 3);
            let fnew = matmul_f64(3, 3, 3, &us, &vt);
            let r = matmul_f64(3, 3, 3, &u, &vt);
            let d: Vec<f64> = (0..9).map(|e| fnew[e] - r[e]).collect();
            let dft = matmul_f64(3, 3, 3, &d, &transpose_f64(&fnew, 3, 3));
            tw.extend((0..9).map(|e| 2.0 * mu0 * h * dft[e] + if e % 4 == 0 { la0 * h * j * (j - 1.0) } else { 0.0 }));
            fw.extend(fnew);
        }
        assert!(normwise(&out[0], &fw) <= tol(elem), "{elem:?} F: {}", normwise(&out[0], &fw));
        assert!(normwise(&out[1], &jw) <= tol(elem), "{elem:?} Jp");
        // The stress is a difference of nearby matrices times 2 mu: f32 keeps about 1e-5 of it.
        let t_tol = if elem == Scalar::F32 { 1e-3 } else { 1e-9 };
        assert!(normwise(&out[2], &tw) <= t_tol, "{elem:?} Tau: {}", normwise(&out[2], &tw));
    }
}

/// One Kalman step (examples/kalman.tile) for 77 tracks with random SPD covariances, against
/// the textbook formulas in f64 (the 2x2 innovation inverted by its cofactors).
#[test]
fn kalman_example_predicts_and_updates() {
    let (dt, q, r) = (0.1, 0.01, 0.5);
    for elem in [Scalar::F32, Scalar::F64] {
        let p = 77usize;
        let x = rounded(elem, &random_uniform(p * 4, 83));
        let z = rounded(elem, &random_uniform(p * 2, 84));
        let cov = rounded(elem, &random_spd(p, 4, 85));
        let s = |v: f64| ArgValue::Scalar(Const::Float(v, elem));
        let out = run_outs(
            "kalman.tile",
            "kalman_step",
            vec![
                ("X", arr(elem, &x, &[p as u64, 4])),
                ("Cov", arr(elem, &cov, &[p as u64, 4, 4])),
                ("Z", arr(elem, &z, &[p as u64, 2])),
                ("dt", s(dt)),
                ("q", s(q)),
                ("r", s(r)),
            ],
            &["X", "Cov"],
        );
        let fm = [1.0, 0.0, dt, 0.0, 0.0, 1.0, 0.0, dt, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        let hm = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0];
        let (mut xw, mut cw) = (Vec::new(), Vec::new());
        for k in 0..p {
            let xp = matmul_f64(4, 4, 1, &fm, &x[k * 4..k * 4 + 4]);
            let mut c =
                matmul_f64(4, 4, 4, &matmul_f64(4, 4, 4, &fm, &cov[k * 16..k * 16 + 16]), &transpose_f64(&fm, 4, 4));
            for i in 0..4 {
                c[i * 5] += q;
            }
            let ht = transpose_f64(&hm, 2, 4);
            let mut sm = matmul_f64(2, 4, 2, &matmul_f64(2, 4, 4, &hm, &c), &ht);
            sm[0] += r;
            sm[3] += r;
            let det = sm[0] * sm[3] - sm[1] * sm[2];
            let sinv = [sm[3] / det, -sm[1] / det, -sm[2] / det, sm[0] / det];
            let kg = matmul_f64(4, 2, 2, &matmul_f64(4, 4, 2, &c, &ht), &sinv);
            let hx = matmul_f64(2, 4, 1, &hm, &xp);
            let y = [z[k * 2] - hx[0], z[k * 2 + 1] - hx[1]];
            let ky = matmul_f64(4, 2, 1, &kg, &y);
            xw.extend((0..4).map(|i| xp[i] + ky[i]));
            let kh = matmul_f64(4, 2, 4, &kg, &hm);
            let ikh: Vec<f64> = (0..16).map(|e| if e % 5 == 0 { 1.0 } else { 0.0 } - kh[e]).collect();
            cw.extend(matmul_f64(4, 4, 4, &ikh, &c));
        }
        assert!(normwise(&out[0], &xw) <= tol(elem), "{elem:?} X");
        assert!(normwise(&out[1], &cw) <= tol(elem), "{elem:?} Cov");
    }
}

/// Damped Gauss-Newton steps (examples/gauss_newton.tile) for 45 problems of 11 residuals,
/// against the normal equations solved by LU with partial pivoting in f64.
#[test]
fn gauss_newton_example_solves_the_normal_equations() {
    let lambda = 1e-3;
    for elem in [Scalar::F32, Scalar::F64] {
        let (p, m) = (45usize, 11usize);
        let j = rounded(elem, &random_uniform(p * m * 6, 86));
        let res = rounded(elem, &random_uniform(p * m, 87));
        let out = run(
            "gauss_newton.tile",
            "gauss_newton",
            vec![
                ("J", arr(elem, &j, &[p as u64, m as u64, 6])),
                ("Res", arr(elem, &res, &[p as u64, m as u64])),
                ("Delta", arr(elem, &vec![0.0; p * 6], &[p as u64, 6])),
                ("lambda", ArgValue::Scalar(Const::Float(lambda, elem))),
            ],
            "Delta",
        );
        let mut want = Vec::new();
        for k in 0..p {
            let jk = &j[k * m * 6..(k + 1) * m * 6];
            let mut a = matmul_f64(6, m, 6, &transpose_f64(jk, m, 6), jk);
            for i in 0..6 {
                a[i * 7] += lambda;
            }
            let g = matmul_f64(6, m, 1, &transpose_f64(jk, m, 6), &res[k * m..(k + 1) * m]);
            let (lu, piv, _) = tilec_tests::getrf_f64(&a, 6);
            want.extend(tilec_tests::getrs_f64(&lu, &piv, 6, &g, 1).iter().map(|x| -x));
        }
        assert!(normwise(&out, &want) <= tol(elem), "{elem:?}: {}", normwise(&out, &want));
    }
}

/// The walker's policy network (examples/walker.tile) for 77 tetrahedra (a partial last
/// program): 0.3 tanh(W p) with the eight phases sin(5 t + 2 pi k / 8), against f64.
#[test]
fn walker_example_matches_reference() {
    for elem in [Scalar::F32, Scalar::F64] {
        let n = 77usize;
        let w: Vec<f64> = rounded(elem, &random_uniform(n * 8, 162)).iter().map(|v| v * 0.35).collect();
        let w = rounded(elem, &w);
        let t = elem.round(0.25);
        let out = run(
            "walker.tile",
            "walker_network",
            vec![
                ("W", arr(elem, &w, &[n as u64, 8])),
                ("Act", arr(elem, &vec![7.0; n], &[n as u64, 1])),
                ("t", ArgValue::Scalar(Const::Float(t, elem))),
            ],
            "Act",
        );
        let phases: Vec<f64> = (0..8).map(|k| (5.0 * t + k as f64 * std::f64::consts::PI / 4.0).sin()).collect();
        let want: Vec<f64> =
            (0..n).map(|i| 0.3 * (0..8).map(|k| w[i * 8 + k] * phases[k]).sum::<f64>().tanh()).collect();
        assert!(normwise(&out, &want) <= tol(elem), "{elem:?}: {}", normwise(&out, &want));
    }
}

/// The block Cholesky factorization and solve (examples/block_cholesky.tile) of the leading n x
/// n block of 45 x 45 arrays, n = 45, 40 and 16 (the padding to the block size with the
/// identity, a partial last block, NaN outside the system), against f64 Cholesky and solves.
#[test]
fn block_cholesky_example_matches_reference() {
    let np_ = 45usize;
    for elem in [Scalar::F32, Scalar::F64] {
        for n in [45usize, 40, 16] {
            let spd = rounded(elem, &random_spd(1, np_, 160));
            // The system is the leading n x n block; everything else is NaN.
            let a: Vec<f64> =
                (0..np_ * np_).map(|e| if e / np_ < n && e % np_ < n { spd[e] } else { f64::NAN }).collect();
            let b = rounded(elem, &random_uniform(np_ * 2, 161));
            let s = |x: f64| ArgValue::Scalar(Const::Float(x, elem));
            let nn = ArgValue::Scalar(Const::Int(n as i64, Scalar::I32));
            let sh = [np_ as u64, np_ as u64];
            let l = run(
                "block_cholesky.tile",
                "block_cholesky",
                vec![
                    ("A", arr(elem, &a, &sh)),
                    ("L", arr(elem, &vec![7.0; np_ * np_], &sh)),
                    ("n", nn.clone()),
                    ("eps", s(1e-30)),
                ],
                "L",
            );
            let active: Vec<f64> = (0..n * n).map(|e| spd[(e / n) * np_ + e % n]).collect();
            let want = cholesky_f64(&active, n);
            let got: Vec<f64> =
                (0..n * n).map(|e| if e % n <= e / n { l[(e / n) * np_ + e % n] } else { 0.0 }).collect();
            assert!(normwise(&got, &want) <= tol(elem), "{elem:?} n = {n} L: {}", normwise(&got, &want));
            let x = run(
                "block_cholesky.tile",
                "block_cholesky_solve",
                vec![
                    ("L", arr(elem, &l, &sh)),
                    ("B", arr(elem, &b, &[np_ as u64, 2])),
                    ("X", arr(elem, &vec![f64::NAN; np_ * 2], &[np_ as u64, 2])),
                    ("n", nn),
                ],
                "X",
            );
            // A x = b by the f64 factor: L y = b, L^T x = y, both columns.
            for c in 0..2 {
                let mut y: Vec<f64> = (0..n).map(|i| b[i * 2 + c]).collect();
                for i in 0..n {
                    y[i] = (y[i] - (0..i).map(|j| want[i * n + j] * y[j]).sum::<f64>()) / want[i * n + i];
                }
                for i in (0..n).rev() {
                    y[i] = (y[i] - (i + 1..n).map(|j| want[j * n + i] * y[j]).sum::<f64>()) / want[i * n + i];
                }
                let got: Vec<f64> = (0..n).map(|i| x[i * 2 + c]).collect();
                assert!(normwise(&got, &y) <= tol(elem), "{elem:?} n = {n} X[:, {c}]: {}", normwise(&got, &y));
                assert!((n..np_).all(|i| x[i * 2 + c].is_nan()), "{elem:?} n = {n}: rows past n written");
            }
        }
    }
}

/// The four-step FFT (examples/fft.tile) on 5 rows of 4 x 8, 8 x 8 and 16 x 32 points: the
/// plan's tables against cosines and sines in f64, and `fft_rows` and `fft_filter_rows`
/// against the DFT sums in f64 (NumPy's `fft(x)` and `ifft(fft(x) * h)`).
#[test]
fn fft_example_matches_dft_sums() {
    use std::f64::consts::PI;
    // The DFT of the planar rows `v` (m rows of 2 x n), `sign` -1 forward, +1 inverse.
    let dft = |v: &[f64], m: usize, n: usize, sign: f64| -> Vec<f64> {
        let mut out = vec![0.0; m * 2 * n];
        for r in 0..m {
            let (re, im) = (&v[r * 2 * n..r * 2 * n + n], &v[r * 2 * n + n..(r + 1) * 2 * n]);
            for k in 0..n {
                let (mut sr, mut si) = (0.0, 0.0);
                for j in 0..n {
                    let a = sign * 2.0 * PI * ((k * j) % n) as f64 / n as f64;
                    sr += re[j] * a.cos() - im[j] * a.sin();
                    si += re[j] * a.sin() + im[j] * a.cos();
                }
                out[r * 2 * n + k] = sr;
                out[r * 2 * n + n + k] = si;
            }
        }
        out
    };
    for elem in [Scalar::F32, Scalar::F64] {
        for (n1, n2) in [(4usize, 8usize), (8, 8), (16, 32)] {
            let (n, m) = (n1 * n2, 5usize);
            let fixed = [("N1", n1 as i64), ("N2", n2 as i64)];
            let ctx = format!("{elem:?} {n1}x{n2}");
            let shapes = [[2, n1 as u64, n1 as u64], [2, n2 as u64, n2 as u64], [2, n1 as u64, n2 as u64]];
            let plan = run_with(
                "fft.tile",
                "fft_plan",
                ["F1", "F2", "Tw"]
                    .iter()
                    .zip(&shapes)
                    .map(|(k, sh)| (*k, arr(elem, &vec![7.0; sh.iter().product::<u64>() as usize], sh)))
                    .collect(),
                &fixed,
                &["F1", "F2", "Tw"],
            );
            // Entry [part, r, c] of a table: W^(j) with j = scale * (r c mod modulus).
            let table = |rows: usize, cols: usize, modulus: usize, scale: usize| -> Vec<f64> {
                let angle = |r: usize, c: usize| -2.0 * PI * (((r * c) % modulus) * scale) as f64 / n as f64;
                let part = |f: fn(f64) -> f64| (0..rows * cols).map(move |i| f(angle(i / cols, i % cols)));
                part(f64::cos).chain(part(f64::sin)).collect()
            };
            let want = [table(n1, n1, n1, n2), table(n2, n2, n2, n1), table(n1, n2, n, 1)];
            for (k, (got, want)) in plan.iter().zip(&want).enumerate() {
                assert!(normwise(got, want) <= tol(elem) / 10.0, "{ctx} table {k}: {}", normwise(got, want));
            }
            let x = rounded(elem, &random_uniform(m * 2 * n, 150));
            let h = rounded(elem, &random_uniform(m * 2 * n, 151));
            // Each row's points in order as N1 x N2 (X) or N2 x N1 (H, Y): the same bytes.
            let (sh, sh_t) = ([m as u64, 2, n1 as u64, n2 as u64], [m as u64, 2, n2 as u64, n1 as u64]);
            let tables = || -> Vec<(&str, ArgValue)> {
                ["F1", "F2", "Tw"].iter().zip(&shapes).zip(&plan).map(|((k, s), v)| (*k, arr(elem, v, s))).collect()
            };
            let mut args = vec![("X", arr(elem, &x, &sh)), ("Y", arr(elem, &vec![7.0; m * 2 * n], &sh_t))];
            args.extend(tables());
            let y = run_with("fft.tile", "fft_rows", args, &fixed, &["Y"]).remove(0);
            let want = dft(&x, m, n, -1.0);
            assert!(normwise(&y, &want) <= tol(elem), "{ctx} fft_rows: {}", normwise(&y, &want));
            let mut args = vec![
                ("X", arr(elem, &x, &sh)),
                ("H", arr(elem, &h, &sh_t)),
                ("Y", arr(elem, &vec![7.0; m * 2 * n], &sh_t)),
            ];
            args.extend(tables());
            let y = run_with("fft.tile", "fft_filter_rows", args, &fixed, &["Y"]).remove(0);
            let spectrum = dft(&x, m, n, -1.0);
            let mut product = vec![0.0; m * 2 * n];
            for r in 0..m {
                for k in 0..n {
                    let (a, b) = (spectrum[r * 2 * n + k], spectrum[r * 2 * n + n + k]);
                    let (c, d) = (h[r * 2 * n + k], h[r * 2 * n + n + k]);
                    product[r * 2 * n + k] = a * c - b * d;
                    product[r * 2 * n + n + k] = a * d + b * c;
                }
            }
            let want: Vec<f64> = dft(&product, m, n, 1.0).iter().map(|v| v / n as f64).collect();
            assert!(normwise(&y, &want) <= tol(elem), "{ctx} fft_filter_rows: {}", normwise(&y, &want));
        }
    }
}

/// One N-body step (examples/nbody.tile) for 77 bodies (a partial block of sources and of
/// bodies), against the all-pairs sums in f64.
#[test]
fn nbody_example_matches_all_pairs_reference() {
    let (dt, eps2, mass) = (0.016, 0.01, 1.5);
    for elem in [Scalar::F32, Scalar::F64] {
        let n = 77usize;
        let p: Vec<f64> = rounded(elem, &random_uniform(n * 3, 88)).iter().map(|v| v * 3.0).collect();
        let p = rounded(elem, &p);
        let v = rounded(elem, &random_uniform(n * 3, 89));
        let s = |x: f64| ArgValue::Scalar(Const::Float(x, elem));
        let sh = [n as u64, 3];
        let out = run_outs(
            "nbody.tile",
            "nbody_step",
            vec![
                ("P", arr(elem, &p, &sh)),
                ("V", arr(elem, &v, &sh)),
                ("Q", arr(elem, &vec![0.0; n * 3], &sh)),
                ("dt", s(dt)),
                ("eps2", s(eps2)),
                ("mass", s(mass)),
            ],
            &["V", "Q"],
        );
        let (dt, eps2, mass) = (elem.round(dt), elem.round(eps2), elem.round(mass));
        let (mut vw, mut qw) = (vec![0.0; n * 3], vec![0.0; n * 3]);
        for i in 0..n {
            let mut a = [0.0f64; 3];
            for j in 0..n {
                let d: Vec<f64> = (0..3).map(|c| p[j * 3 + c] - p[i * 3 + c]).collect();
                let r2 = d.iter().map(|x| x * x).sum::<f64>() + eps2;
                for c in 0..3 {
                    a[c] += mass * d[c] / (r2 * r2.sqrt());
                }
            }
            for c in 0..3 {
                vw[i * 3 + c] = v[i * 3 + c] + dt * a[c];
                qw[i * 3 + c] = p[i * 3 + c] + dt * vw[i * 3 + c];
            }
        }
        assert!(normwise(&out[0], &vw) <= tol(elem), "{elem:?} V: {}", normwise(&out[0], &vw));
        assert!(normwise(&out[1], &qw) <= tol(elem), "{elem:?} Q: {}", normwise(&out[1], &qw));
    }
}

/// The coordinate MLP (examples/mlp.tile) on 77 distinct pixels of a 20 x 24 image (a partial
/// last program): the colours written to those pixels only, and the loss, against f64.
#[test]
fn mlp_example_matches_reference_forward_pass() {
    let (width, height) = (20usize, 24usize);
    let hw = width * height;
    let b = 77usize;
    // 77 distinct pixels in a scrambled order (151 is prime to 480).
    let idx: Vec<i32> = (0..b).map(|k| ((k * 151 + 13) % hw) as i32).collect();
    for elem in [Scalar::F32, Scalar::F64] {
        let layer = |rows: usize, cols: usize, seed: u64| -> Vec<f64> {
            let w: Vec<f64> = random_uniform(rows * cols, seed).iter().map(|v| v / (cols as f64).sqrt()).collect();
            rounded(elem, &w)
        };
        let dims = [32, 32, 32, 3];
        let ws: Vec<Vec<f64>> = dims.iter().enumerate().map(|(i, r)| layer(*r, 32, 90 + i as u64)).collect();
        let bs: Vec<Vec<f64>> = dims.iter().enumerate().map(|(i, r)| layer(*r, 1, 94 + i as u64)).collect();
        let reference = rounded(elem, &random_uniform(3 * hw, 98));
        let before = vec![-7.0; 3 * hw];
        let mut args = vec![
            ("Idx", ArgValue::Array(HostArray::from_i32(&idx, &[b as u64]).unwrap())),
            ("W", arr(elem, &ws[..3].concat(), &[3, 32, 32])),
            ("Bs", arr(elem, &bs[..3].concat(), &[3, 32])),
            ("W3", arr(elem, &ws[3], &[3, 32])),
            ("B3", arr(elem, &bs[3], &[3])),
        ];
        args.extend([
            ("Ref", arr(elem, &reference, &[3, hw as u64])),
            ("Out", arr(elem, &before, &[3, hw as u64])),
            ("Loss", arr(elem, &[0.25], &[1])),
            ("width", ArgValue::Scalar(Const::Int(width as i64, Scalar::I32))),
            ("height", ArgValue::Scalar(Const::Int(height as i64, Scalar::I32))),
        ]);
        let out = run_outs("mlp.tile", "mlp_image", args, &["Out", "Loss"]);
        let (mut want, mut loss) = (before.clone(), 0.25);
        for &p in &idx {
            let p = p as usize;
            let x = ((p / width) as f64 / width as f64 - 0.5) * 2.0;
            let y = ((p % width) as f64 / height as f64 - 0.5) * 2.0;
            let mut z: Vec<f64> = (0..32)
                .map(|k| {
                    let a = if k % 4 < 2 { x } else { y } * 2f64.powi(k / 4) * std::f64::consts::PI;
                    if k % 2 == 0 {
                        a.sin()
                    } else {
                        a.cos()
                    }
                })
                .collect();
            for (l, rows) in dims.iter().enumerate() {
                let wz = matmul_f64(*rows, 32, 1, &ws[l], &z);
                z = (0..*rows).map(|r| (wz[r] + bs[l][r]).max(0.0)).collect();
            }
            for c in 0..3 {
                want[c * hw + p] = z[c];
                loss += (z[c] - reference[c * hw + p]).powi(2) / (3 * b) as f64;
            }
        }
        assert!(normwise(&out[0], &want) <= tol(elem), "{elem:?} Out: {}", normwise(&out[0], &want));
        assert!((out[1][0] - loss).abs() <= tol(elem) * loss, "{elem:?} Loss: {} vs {loss}", out[1][0]);
    }
}
