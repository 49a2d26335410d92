//! Products whose left operand is a transpose used only there (`transpose(A[..]) @ B[..]`, as
//! in potrs's backward solve), which both CPU backends read in place instead of forming the
//! transpose (`tilec_midend::fusion::left_operands`), and products with fewer columns than a
//! vector holds (matrix-vector products), which Cranelift computes a vector of rows at a time.

use super::*;

/// `transpose(A) @ B` as a product, subtracted (`t -= ..`) and accumulated in a loop (`acc +=
/// ..`), and negated (`-transpose(A) @ B`, `transpose(-A) @ B` accumulated in a loop), for
/// tiles of 1x1x1 to 77x40x131 (`k` above 32 takes the product's `k` loop) and matrix-vector
/// shapes, over arrays smaller than the tiles; against an f64 reference, and the same bits from
/// Cranelift and LLVM.
#[test]
fn transposed_left_operands_in_place() {
    for elem in FLOATS {
        for mkn in [(1, 1, 1), (17, 5, 13), (16, 16, 16), (77, 40, 131), (3, 64, 5), (37, 8, 1), (18, 40, 3)] {
            check_products(elem, mkn, true);
        }
    }
}

/// The same products with a plain left operand (`A[..] @ B[..]`) and one, two or three
/// columns, fewer than a vector (Cranelift: `lanes` rows of a column in one vector register
/// across the `k` loop, the rows past the last whole vector one by one; `linalg.rs`): tiles of
/// 256 x 8 x 1 (Warp's walker), 37 x 8 x 1, 23 x 9 x 2, 18 x 40 x 3, 1 x 7 x 1, against an f64
/// reference, and the same bits from Cranelift and LLVM.
#[test]
fn narrow_products_match_f64_and_agree_between_backends() {
    for elem in FLOATS {
        for mkn in [(256, 8, 1), (37, 8, 1), (23, 9, 2), (18, 40, 3), (1, 7, 1)] {
            check_products(elem, mkn, false);
        }
    }
}

/// The five products of the tests above for one shape: `A` is `[K, M]` and read transposed
/// (`transposed`), else `[M, K]`.
fn check_products(elem: Scalar, (m, k, n): (usize, usize, usize), transposed: bool) {
    // Arrays a little smaller than the tiles where they can be (zero padding).
    let (am, ak, bn) = ((m - m / 4).max(1), (k - k / 5).max(1), (n - n / 3).max(1));
    let (left, neg_left, left_neg, a_shape) = if transposed {
        (
            format!("transpose(A[0:{k}, 0:{m}])"),
            format!("(-transpose(A[0:{k}, 0:{m}]))"),
            format!("transpose(-A[0:{k}, 0:{m}])"),
            "K, M",
        )
    } else {
        (format!("A[0:{m}, 0:{k}]"), format!("(-A[0:{m}, 0:{k}])"), format!("(-A[0:{m}, 0:{k}])"), "M, K")
    };
    let src = format!(
        "kernel k<T: float>(A: T[{a_shape}], B: T[K, N], X: T[M, N], O: mut T[5, {m}, {n}]) grid(1) {{
                    O[0, 0:{m}, 0:{n}] = {left} @ B[0:{k}, 0:{n}];
                    let t = X[0:{m}, 0:{n}];
                    t -= {left} @ B[0:{k}, 0:{n}];
                    O[1, 0:{m}, 0:{n}] = t;
                    let acc = X[0:{m}, 0:{n}];
                    for r in 0..2 {{ acc += {left} @ B[0:{k}, 0:{n}]; }}
                    O[2, 0:{m}, 0:{n}] = acc;
                    O[3, 0:{m}, 0:{n}] = {neg_left} @ B[0:{k}, 0:{n}];
                    let acc2 = X[0:{m}, 0:{n}];
                    for r in 0..2 {{ acc2 += {left_neg} @ B[0:{k}, 0:{n}]; }}
                    O[4, 0:{m}, 0:{n}] = acc2;
                }}"
    );
    let mut rng = Rng::new(11 + (m * k * n) as u64);
    let (a, b, x) = (rng.vec(ak * am, -1.0, 1.0), rng.vec(ak * bn, -1.0, 1.0), rng.vec(am * bn, -1.0, 1.0));
    let args = || -> HashMap<String, ArgValue> {
        [
            ("A", if transposed { arr(elem, &a, &[ak, am]) } else { arr(elem, &a, &[am, ak]) }),
            ("B", arr(elem, &b, &[ak, bn])),
            ("X", arr(elem, &x, &[am, bn])),
            ("O", sentinel(elem, &[5, m, n])),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    };
    let ctx = format!("{elem:?} {m}x{k}x{n}, transposed: {transposed}");
    let set = SourceSet::with_stdlib("test.tile", src.as_str());
    if transposed {
        // The five products' left operands are read in place.
        let module = compiled(&set, "k", &args());
        let body = &module.funcs[module.kernels[0].body];
        let mut uses = HashMap::new();
        body.body.count_uses(&mut uses);
        assert_eq!(tilec_midend::fusion::left_operands(body, &uses).0.len(), 5, "{ctx}");
    }
    // Reference (zero-padded operands).
    let at = |v: &[f64], rows: usize, cols: usize, i: usize, j: usize| {
        if i < rows && j < cols {
            v[i * cols + j]
        } else {
            0.0
        }
    };
    let mut want = vec![SENTINEL; 5 * m * n];
    for i in 0..m {
        for j in 0..n {
            let aq = |q: usize| if transposed { at(&a, ak, am, q, i) } else { at(&a, am, ak, i, q) };
            let p: f64 = (0..k).map(|q| aq(q) * at(&b, ak, bn, q, j)).sum();
            let x0 = at(&x, am, bn, i, j);
            want[i * n + j] = p;
            want[(m + i) * n + j] = x0 - p;
            want[(2 * m + i) * n + j] = x0 + 2.0 * p;
            want[(3 * m + i) * n + j] = -p;
            want[(4 * m + i) * n + j] = x0 - 2.0 * p;
        }
    }
    let outs = outputs_per_backend(&set, "k", args, "O", &ctx);
    assert_normwise(&outs[0].1, &want, tol(elem) * 10.0, &ctx);
    for (be, o) in &outs[1..] {
        assert_exact(o, &outs[0].1, &format!("{ctx}: {be} against Cranelift"));
    }
}

/// Products whose left operand is read in place from the tile they update (`t -= transpose(t)
/// @ B`, `acc += transpose(-acc) @ B` in a loop, `t = transpose(t) @ t`): the tile must not be
/// overwritten while the product still reads it (on Cranelift the source tile's slot stays
/// live past its product, `codegen-cpu/src/slots.rs`). Square tiles of 1 to 33 over arrays a
/// little smaller; against an f64 reference, the same bits from both CPU backends.
#[test]
fn left_operands_read_in_place_from_the_updated_tile() {
    for elem in FLOATS {
        for m in [1, 5, 16, 33] {
            let am = (m - m / 4).max(1);
            let src = format!(
                "kernel k<T: float>(B: T[M, M], X: T[M, M], O: mut T[3, {m}, {m}]) grid(1) {{
                    let b = B[0:{m}, 0:{m}];
                    let t = X[0:{m}, 0:{m}];
                    t -= transpose(t) @ b;
                    O[0, 0:{m}, 0:{m}] = t;
                    let acc = X[0:{m}, 0:{m}];
                    for r in 0..2 {{ acc += transpose(-acc) @ b; }}
                    O[1, 0:{m}, 0:{m}] = acc;
                    let u = X[0:{m}, 0:{m}];
                    u = transpose(u) @ u;
                    O[2, 0:{m}, 0:{m}] = u;
                }}"
            );
            let mut rng = Rng::new(97 + m as u64);
            let (b, x) = (rng.vec(am * am, -1.0, 1.0), rng.vec(am * am, -1.0, 1.0));
            let args = || -> HashMap<String, ArgValue> {
                [("B", arr(elem, &b, &[am, am])), ("X", arr(elem, &x, &[am, am])), ("O", sentinel(elem, &[3, m, m]))]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect()
            };
            let ctx = format!("{elem:?} {m}x{m}");
            let set = SourceSet::with_stdlib("test.tile", src.as_str());
            // Reference: zero-padded tiles, plain f64.
            let pad = |v: &[f64]| -> Vec<f64> {
                (0..m * m).map(|e| if e / m < am && e % m < am { v[(e / m) * am + e % m] } else { 0.0 }).collect()
            };
            let (bp, xp) = (pad(&b), pad(&x));
            let tmul = |p: &[f64], q: &[f64], sign: f64| -> Vec<f64> {
                (0..m * m).map(|e| (0..m).map(|r| sign * p[r * m + e / m] * q[r * m + e % m]).sum()).collect()
            };
            let t: Vec<f64> = xp.iter().zip(tmul(&xp, &bp, 1.0)).map(|(x, p)| x - p).collect();
            let mut acc = xp.clone();
            for _ in 0..2 {
                let p = tmul(&acc, &bp, -1.0);
                acc.iter_mut().zip(p).for_each(|(a, p)| *a += p);
            }
            let u = tmul(&xp, &xp, 1.0);
            let want: Vec<f64> = [t, acc, u].concat();
            let outs = outputs_per_backend(&set, "k", args, "O", &ctx);
            assert_normwise(&outs[0].1, &want, tol(elem) * 10.0, &ctx);
            for (be, o) in &outs[1..] {
                assert_exact(o, &outs[0].1, &format!("{ctx}: {be} against Cranelift"));
            }
        }
    }
}
