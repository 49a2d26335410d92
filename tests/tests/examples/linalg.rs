//! Linear algebra examples: triangular solves, Cholesky solves, gemm, LU, QR, NPBench's gemver and syrk, the Cholesky residual, Gauss-Newton and Kalman steps.

use super::*;

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
