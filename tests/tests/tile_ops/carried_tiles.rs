//! Loops that carry tiles, whose new value the LLVM CPU backend computes in the carried
//! storage when only that op reads the old one (`matmul_acc`, `t - a @ b`, `rank1`, an
//! elementwise op; `codegen-cpu/src/llvm/control.rs`, `in_place_results`), and loops where it
//! must not (the old value read twice, values swapped between carried tiles).

use super::*;

/// Five loops over 17x13 and 16x16 tiles (arrays a little smaller: zero padding), against an
/// f64 reference, with the same bits from Cranelift and LLVM.
#[test]
fn carried_tiles_updated_in_place() {
    for elem in FLOATS {
        for (m, n) in [(17usize, 13usize), (16, 16)] {
            let (am, an) = (m - 1, n - 2);
            let src = format!(
                "kernel k<T: float>(X: T[M, N], Y: T[N, N], O: mut T[6, {m}, {n}]) grid(1) {{
                    let acc = X[0:{m}, 0:{n}];
                    for r in 0..3 {{ acc += X[0:{m}, 0:{n}] @ Y[0:{n}, 0:{n}]; }}
                    O[0, 0:{m}, 0:{n}] = acc;
                    let t = X[0:{m}, 0:{n}];
                    for r in 0..3 {{ t -= X[0:{m}, 0:{n}] @ Y[0:{n}, 0:{n}]; }}
                    O[1, 0:{m}, 0:{n}] = t;
                    let u = X[0:{m}, 0:{n}];
                    for c in 0..{n} {{ u += outer(X[0:{m}, c], Y[c, 0:{n}]); }}
                    O[2, 0:{m}, 0:{n}] = u;
                    let e = X[0:{m}, 0:{n}];
                    for r in 0..3 {{ e = e - 0.5 * X[0:{m}, 0:{n}]; }}
                    O[3, 0:{m}, 0:{n}] = e;
                    let a = X[0:{m}, 0:{n}];
                    let b = 2.0 * X[0:{m}, 0:{n}];
                    for r in 0..3 {{ let s = a + b; b = a; a = s; }}
                    O[4, 0:{m}, 0:{n}] = a;
                    O[5, 0:{m}, 0:{n}] = b;
                }}"
            );
            let mut rng = Rng::new(5 + (m * n) as u64);
            let (x, y) = (rng.vec(am * an, -1.0, 1.0), rng.vec(an * an, -1.0, 1.0));
            let args = || -> HashMap<String, ArgValue> {
                [("X", arr(elem, &x, &[am, an])), ("Y", arr(elem, &y, &[an, an])), ("O", sentinel(elem, &[6, m, n]))]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect()
            };
            let ctx = format!("{elem:?} {m}x{n}");
            // Reference, with the arrays zero-padded to the tiles.
            let xp = |i: usize, j: usize| if i < am && j < an { x[i * an + j] } else { 0.0 };
            let yp = |i: usize, j: usize| if i < an && j < an { y[i * an + j] } else { 0.0 };
            let xy = |i: usize, j: usize| (0..n).map(|q| xp(i, q) * yp(q, j)).sum::<f64>();
            let mut want = vec![SENTINEL; 6 * m * n];
            for i in 0..m {
                for j in 0..n {
                    let x0 = xp(i, j);
                    let mut e = x0;
                    for _ in 0..3 {
                        e -= 0.5 * x0;
                    }
                    let (mut a, mut b) = (x0, 2.0 * x0);
                    for _ in 0..3 {
                        (a, b) = (a + b, a);
                    }
                    let at = |k: usize| (k * m + i) * n + j;
                    want[at(0)] = x0 + 3.0 * xy(i, j);
                    want[at(1)] = x0 - 3.0 * xy(i, j);
                    want[at(2)] = x0 + xy(i, j);
                    want[at(3)] = e;
                    want[at(4)] = a;
                    want[at(5)] = b;
                }
            }
            let set = SourceSet::with_stdlib("test.tile", src.as_str());
            let outs = outputs_per_backend(&set, "k", args, "O", &ctx);
            assert_normwise(&outs[0].1, &want, tol(elem) * 10.0, &ctx);
            for (be, o) in &outs[1..] {
                assert_exact(o, &outs[0].1, &format!("{ctx}: {be} against Cranelift"));
            }
        }
    }
}
