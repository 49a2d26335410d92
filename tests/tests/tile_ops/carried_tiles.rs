//! Loops that carry tiles, whose new value the LLVM CPU backend computes in the carried
//! storage when only that op reads the old one (`matmul_acc`, `t - a @ b`, `rank1`, an
//! elementwise op; `codegen-cpu/src/llvm/control.rs`, `in_place_results`), and loops where it
//! must not (the old value read twice, values swapped between carried tiles); and tiles
//! updated in one branch of an `if` (`carried_if`).

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

/// Tiles updated in one branch of an `if` and yielded unchanged by the other, which the LLVM
/// CPU backend computes in the tile's own storage when nothing reads it after the `if`
/// (`control.rs`, `carried_if`), and cases where it must not: a tile made before the loop that
/// only the `if` reads, in every iteration (`keep`: lending it would change it for the next
/// iteration), a tile read after the `if` (`before`), and a tile made before the outer loop
/// that only an inner loop's start reads (`half`: the same hazard for loops, `carried_from`).
/// Also a chain of line inserts (two rows and two columns rewritten, as a Jacobi rotation).
/// Against an f64 reference, with the same bits from Cranelift and LLVM.
#[test]
fn tiles_updated_in_one_branch_of_an_if() {
    let n = 8usize;
    let src = format!(
        "kernel k<T: float>(X: T[{n}, {n}], O: mut T[5, {n}, {n}]) grid(1) {{
            let a = X[0:{n}, 0:{n}];
            let keep = X[0:{n}, 0:{n}];
            let acc = X[0:{n}, 0:{n}] * 0.0;
            let half = X[0:{n}, 0:{n}] * 2.0;
            for i in 0..20 {{
                let r = i % {n};
                if a[r, r] > 0.0 {{
                    a[r, :] = a[r, :] * 0.5;
                }}
                let s = keep;
                if i % 3 == 0 {{
                    s[r, :] = s[r, :] + 1.0;
                }}
                acc = acc + s;
                let before = a;
                if i % 2 == 1 {{
                    a[:, r] = a[:, r] - 0.25;
                }}
                acc = acc + before;
                let h = half;
                for j in 0..2 {{
                    h = h * 0.5;
                }}
                acc = acc + h;
                let p = i % {n};
                let q = (i + 3) % {n};
                let rp = a[p, :];
                let rq = a[q, :];
                a[p, :] = 0.6 * rp - 0.8 * rq;
                a[q, :] = 0.8 * rp + 0.6 * rq;
                let cp = a[:, p];
                let cq = a[:, q];
                a[:, p] = 0.6 * cp - 0.8 * cq;
                a[:, q] = 0.8 * cp + 0.6 * cq;
            }}
            O[0, 0:{n}, 0:{n}] = a;
            O[2, 0:{n}, 0:{n}] = acc;
        }}"
    );
    for elem in FLOATS {
        let mut rng = Rng::new(91);
        let x = rng.vec(n * n, -1.0, 1.0);
        let args = || -> HashMap<String, ArgValue> {
            [("X", arr(elem, &x, &[n, n])), ("O", sentinel(elem, &[5, n, n]))]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
        };
        // Reference in f64.
        let (mut a, keep) = (x.clone(), x.clone());
        let mut acc = vec![0.0; n * n];
        for i in 0..20 {
            let r = i % n;
            if a[r * n + r] > 0.0 {
                for j in 0..n {
                    a[r * n + j] *= 0.5;
                }
            }
            let mut s = keep.clone();
            if i % 3 == 0 {
                for j in 0..n {
                    s[r * n + j] += 1.0;
                }
            }
            let before = a.clone();
            if i % 2 == 1 {
                for j in 0..n {
                    a[j * n + r] -= 0.25;
                }
            }
            for k in 0..n * n {
                acc[k] += s[k] + before[k] + x[k] * 2.0 * 0.25;
            }
            let (p, q) = (i % n, (i + 3) % n);
            for j in 0..n {
                let (xp, xq) = (a[p * n + j], a[q * n + j]);
                a[p * n + j] = 0.6 * xp - 0.8 * xq;
                a[q * n + j] = 0.8 * xp + 0.6 * xq;
            }
            for j in 0..n {
                let (xp, xq) = (a[j * n + p], a[j * n + q]);
                a[j * n + p] = 0.6 * xp - 0.8 * xq;
                a[j * n + q] = 0.8 * xp + 0.6 * xq;
            }
        }
        let mut want = vec![SENTINEL; 5 * n * n];
        want[..n * n].copy_from_slice(&a);
        want[2 * n * n..3 * n * n].copy_from_slice(&acc);
        let ctx = format!("{elem:?}");
        let set = SourceSet::with_stdlib("test.tile", src.as_str());
        let outs = outputs_per_backend(&set, "k", args, "O", &ctx);
        assert_normwise(&outs[0].1, &want, tol(elem) * 10.0, &ctx);
        for (be, o) in &outs[1..] {
            assert_exact(o, &outs[0].1, &format!("{ctx}: {be} against Cranelift"));
        }
    }
}
