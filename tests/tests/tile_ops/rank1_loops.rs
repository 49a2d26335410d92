//! Loops of rank-1 updates whose vectors are read from arrays at the loop variable (the
//! potrf idiom `for c in 0..k0 { t -= outer(A[.., c], A[.., c]) }`), which the LLVM CPU
//! backend turns into tile products over blocks of 16 (`midend/src/rank1blocks.rs`).

use super::*;

/// Column-by-column (`t -= outer(A[.., c], B[.., c])`), column-by-row (`s += outer(A[.., c],
/// C[c, ..])`), symmetric (`d -= outer(v, v)`) and row-by-column with a computed index
/// (`e -= outer(C[c, z - 1:..], B[.., c])`) loops over run-time ranges: empty, shorter
/// than a block, whole blocks and a rest, past the arrays' ends, from a negative start; tiles
/// of 1x1 to 77x131 over smaller and larger arrays. Checked against an f64 reference, and,
/// where this tilec has the LLVM backend, for the same bits from Cranelift (which keeps the
/// rank-1 updates) and LLVM (which forms tile products).
#[test]
fn rank1_loops_blocked() {
    let kk = 40;
    for elem in FLOATS {
        for (r, c, m, n) in [(1, 1, 1, 1), (17, 5, 13, 4), (16, 16, 17, 17), (77, 131, 70, 131)] {
            let w = r.max(c);
            let src = format!(
                "kernel k<T: float>(A: T[M, K], B: T[N, K], C: T[K, N], X: T[M, N], O: mut T[4, {r}, {w}],
                                    lo: i32, hi: i32) grid(1) {{
                    let t = X[0:{r}, 0:{c}];
                    for j in lo..hi {{ t -= outer(A[0:{r}, j], B[0:{c}, j]); }}
                    O[0, 0:{r}, 0:{c}] = t;
                    let s = X[0:{r}, 0:{c}];
                    for j in lo..hi {{ s += outer(A[0:{r}, j], C[j, 0:{c}]); }}
                    O[1, 0:{r}, 0:{c}] = s;
                    let d = X[0:{r}, 0:{r}];
                    for j in lo..hi {{ let v = A[0:{r}, j]; d -= outer(v, v); }}
                    O[2, 0:{r}, 0:{r}] = d;
                    let z = lo - lo + 1;
                    let e = X[0:{r}, 0:{c}];
                    for j in lo..hi {{ e -= outer(C[j, z - 1:z - 1 + {r}], B[0:{c}, j]); }}
                    O[3, 0:{r}, 0:{c}] = e;
                }}"
            );
            let mut rng = Rng::new(7 + (r * c) as u64);
            let (a, b) = (rng.vec(m * kk, -1.0, 1.0), rng.vec(n * kk, -1.0, 1.0));
            let (cm, x) = (rng.vec(kk * n, -1.0, 1.0), rng.vec(m * n, -1.0, 1.0));
            let args = |lo: i64, hi: i64| -> HashMap<String, ArgValue> {
                [
                    ("A", arr(elem, &a, &[m, kk])),
                    ("B", arr(elem, &b, &[n, kk])),
                    ("C", arr(elem, &cm, &[kk, n])),
                    ("X", arr(elem, &x, &[m, n])),
                    ("O", sentinel(elem, &[4, r, w])),
                    ("lo", int(lo)),
                    ("hi", int(hi)),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
            };
            // One runner per backend: Cranelift keeps the rank-1 updates, LLVM forms products
            // (all four loops: a loop that stopped matching would still agree).
            let set = SourceSet::with_stdlib("test.tile", src.as_str());
            let module = compiled(&set, "k", &args(0, 1));
            let blocked = tilec_midend::passes::for_cpu(&module, true).expect("verifies");
            let text = tilec_midend::print::print_module(&blocked);
            assert_eq!(text.matches("matmul_acc").count(), 4, "{elem:?} {r}x{c}: four loops blocked\n{text}");
            let backends = cpu_backends();
            let runners: Vec<_> = backends
                .iter()
                .map(|&be| {
                    tilec::CpuRunner::with_backend(&set, "k", &args(0, 1), &HashMap::new(), be)
                        .unwrap_or_else(|_| panic!("{elem:?} {r}x{c}: does not compile with {be}\n{src}"))
                })
                .collect();
            for (lo, hi) in [(0, kk as i64), (5, 4), (3, 12), (0, 16), (-2, 19), (7, kk as i64 + 9)] {
                // Elements outside an array read as zero.
                let at = |v: &[f64], rows: usize, cols: usize, i: usize, j: i64| -> f64 {
                    if i < rows && j >= 0 && (j as usize) < cols {
                        v[i * cols + j as usize]
                    } else {
                        0.0
                    }
                };
                let mut want = vec![SENTINEL; 4 * r * w];
                for i in 0..r {
                    for jj in 0..w {
                        let x0 = at(&x, m, n, i, jj as i64);
                        let sum = |f: &dyn Fn(i64) -> f64| (lo..hi).map(f).sum::<f64>();
                        if jj < c {
                            want[i * w + jj] = x0 - sum(&|q| at(&a, m, kk, i, q) * at(&b, n, kk, jj, q));
                            want[(3 * r + i) * w + jj] =
                                x0 - sum(&|q| at(&cm, kk, n, q as usize, i as i64) * at(&b, n, kk, jj, q));
                            want[(r + i) * w + jj] =
                                x0 + sum(&|q| at(&a, m, kk, i, q) * at(&cm, kk, n, q as usize, jj as i64));
                        }
                        if jj < r {
                            want[(2 * r + i) * w + jj] = x0 - sum(&|q| at(&a, m, kk, i, q) * at(&a, m, kk, jj, q));
                        }
                    }
                }
                let ctx = format!("{elem:?} {r}x{c} tile over {m}x{n}, j in {lo}..{hi}");
                let outs: Vec<Vec<f64>> = runners
                    .iter()
                    .zip(&backends)
                    .map(|(runner, be)| {
                        let (bound, _) = runner.run(args(lo, hi)).unwrap_or_else(|e| panic!("{ctx}: {be}: {e}"));
                        out(&bound, "O")
                    })
                    .collect();
                assert_normwise(&outs[0], &want, tol(elem) * 10.0, &ctx);
                for (o, be) in outs.iter().zip(&backends).skip(1) {
                    assert_exact(o, &outs[0], &format!("{ctx}: {be} against Cranelift"));
                }
            }
        }
    }
}
