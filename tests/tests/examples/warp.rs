//! Ports of Warp's tile examples: MPM stress, the walker's policy network, block Cholesky, FFT, N-body, the coordinate MLP.

use super::*;

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
