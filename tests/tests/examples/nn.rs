//! Neural-network kernels ported from Triton, Liger-Kernel and NPBench: softmax variants, layer and RMS norms, attention, SwiGLU, dropout, embedding, top-k.

use super::*;

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
