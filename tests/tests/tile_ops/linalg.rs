//! Matrix products, transpose and outer, integer tiles, Cholesky and the triangular solves.

use super::*;

/// `tile<M, K> @ tile<K, N>` for square, rectangular and degenerate shapes, with operands
/// loaded from exact-size and smaller arrays (the zero padding enters the product).
#[test]
fn matmul_square_rectangular_and_partial() {
    let mut rng = Rng::new(9);
    for elem in FLOATS {
        // (M, K, N, rows and columns of A's array, of B's array)
        for (mm, kk, nn, (am, an), (bm, bn)) in [
            (16, 16, 16, (16, 16), (16, 16)),
            (15, 17, 16, (15, 17), (17, 16)),
            (1, 17, 15, (1, 17), (17, 15)),
            (17, 1, 17, (17, 1), (1, 17)),
            (8, 32, 4, (8, 32), (32, 4)),
            (1, 1, 1, (1, 1), (1, 1)),
            (16, 16, 16, (15, 17), (17, 15)),
            (32, 16, 33, (30, 9), (16, 33)),
        ] {
            let src = format!(
                "kernel k<T: float>(A: T[P, Q], B: T[R, S], O: mut T[{mm}, {nn}]) grid(1) {{
                    let a = A[0:{mm}, 0:{kk}];
                    let b = B[0:{kk}, 0:{nn}];
                    O[0:{mm}, 0:{nn}] = a @ b;
                }}"
            );
            let a = rng.vec(am * an, -1.0, 1.0);
            let bv = rng.vec(bm * bn, -1.0, 1.0);
            let b = run(
                &src,
                "k",
                vec![
                    ("A", arr(elem, &a, &[am, an])),
                    ("B", arr(elem, &bv, &[bm, bn])),
                    ("O", sentinel(elem, &[mm, nn])),
                ],
            );
            let want = matmul_f64(mm, kk, nn, &tile_of(&a, am, an, 0, 0, mm, kk), &tile_of(&bv, bm, bn, 0, 0, kk, nn));
            assert_normwise(
                &out(&b, "O"),
                &want,
                tol(elem),
                &format!("{elem:?} {mm}x{kk} @ {kk}x{nn} from {am}x{an}, {bm}x{bn}"),
            );
        }
    }
}

/// Matrix-vector `tile<M, K> @ tile<K>`.
#[test]
fn matmul_matrix_vector() {
    let mut rng = Rng::new(10);
    for elem in FLOATS {
        for (mm, kk, l) in [(16, 16, 16), (15, 17, 17), (1, 17, 5), (17, 1, 1), (16, 16, 9)] {
            let src = format!(
                "kernel k<T: float>(A: T[P, Q], X: T[L], O: mut T[{mm}]) grid(1) {{
                    let a = A[0:{mm}, 0:{kk}];
                    O[0:{mm}] = a @ X[0:{kk}];
                }}"
            );
            let a = rng.vec(mm * kk, -1.0, 1.0);
            let x = rng.vec(l, -1.0, 1.0);
            let b = run(
                &src,
                "k",
                vec![("A", arr(elem, &a, &[mm, kk])), ("X", arr(elem, &x, &[l])), ("O", sentinel(elem, &[mm]))],
            );
            let want = matmul_f64(mm, kk, 1, &a, &tile_of(&x, 1, l, 0, 0, 1, kk));
            assert_normwise(&out(&b, "O"), &want, tol(elem), &format!("{elem:?} {mm}x{kk} @ <{kk}> from {l}"));
        }
    }
}

/// The accumulate forms (`acc += a @ b`, `acc -= a @ b`, `acc = acc + a @ b`,
/// `acc = a @ b + acc`, `c - a @ b`) over a loop of K blocks, as gemm uses them, on an
/// array whose edges cut every block.
#[test]
fn matmul_accumulate_forms() {
    let forms: &[(&str, f64, f64)] = &[
        ("acc += A[0:16, k0:k0+8] @ B[k0:k0+8, 0:16];", 1.0, 1.0),
        ("acc -= A[0:16, k0:k0+8] @ B[k0:k0+8, 0:16];", 1.0, -1.0),
        ("acc = acc + A[0:16, k0:k0+8] @ B[k0:k0+8, 0:16];", 1.0, 1.0),
        ("let a = A[0:16, k0:k0+8]; let b = B[k0:k0+8, 0:16]; acc = a @ b + acc;", 1.0, 1.0),
        ("let p = A[0:16, k0:k0+8] @ B[k0:k0+8, 0:16]; acc = acc - p;", 1.0, -1.0),
        ("acc = acc * 0.5 + A[0:16, k0:k0+8] @ B[k0:k0+8, 0:16];", 0.5, 1.0),
    ];
    let mut rng = Rng::new(11);
    for elem in FLOATS {
        let (m, k, n) = (15, 29, 17);
        let a = rng.vec(m * k, -1.0, 1.0);
        let bv = rng.vec(k * n, -1.0, 1.0);
        let c0 = rng.vec(m * n, -1.0, 1.0);
        for &(form, decay, sign) in forms {
            let src = format!(
                "kernel k<T: float>(A: T[M, K], B: T[K, N], C: mut T[M, N]) grid(1) {{
                    let acc = C[0:16, 0:16];
                    for k0 in 0..K step 8 {{
                        {form}
                    }}
                    C[0:16, 0:16] = acc;
                }}"
            );
            let b = run(
                &src,
                "k",
                vec![("A", arr(elem, &a, &[m, k])), ("B", arr(elem, &bv, &[k, n])), ("C", arr(elem, &c0, &[m, n]))],
            );
            // acc_{s+1} = decay * acc_s + sign * A[:, blk] B[blk, :]
            let mut acc = c0.clone();
            for k0 in (0..k).step_by(8) {
                let kb = (k - k0).min(8);
                let ab: Vec<f64> =
                    (0..m).flat_map(|i| (0..kb).map(move |p| (i, p))).map(|(i, p)| a[i * k + k0 + p]).collect();
                let p = matmul_f64(m, kb, n, &ab, &bv[k0 * n..(k0 + kb) * n]);
                for (x, y) in acc.iter_mut().zip(&p) {
                    *x = decay * *x + sign * y;
                }
            }
            // The tile covers columns 0..16 only: column 16 keeps its value.
            for i in 0..m {
                acc[i * n + 16] = c0[i * n + 16];
            }
            assert_normwise(&out(&b, "C"), &acc, tol(elem), &format!("{elem:?} `{form}`"));
        }
    }
}

/// `transpose` of square and rectangular tiles, `outer(u, v)`, and the rank-1 update
/// `t -= outer(u, v)` of the factorizations, for rows of whole vectors (held in registers on
/// the CPU), wider ones and partial ones.
#[test]
fn transpose_and_outer() {
    let mut rng = Rng::new(12);
    for elem in FLOATS {
        for (r, c) in [(16, 16), (15, 17), (1, 17), (17, 1), (4, 32), (3, 64), (8, 12), (32, 16), (16, 64), (2, 8)] {
            let src = format!(
                "kernel k<T: float>(A: T[{r}, {c}], U: T[{r}], V: T[{c}], TT: mut T[{c}, {r}], O: mut T[{r}, {c}], D: mut T[{r}, {c}]) grid(1) {{
                    let a = A[0:{r}, 0:{c}];
                    TT[0:{c}, 0:{r}] = transpose(a);
                    let u = U[0:{r}];
                    let v = V[0:{c}];
                    O[0:{r}, 0:{c}] = outer(u, v);
                    a -= outer(u, v);
                    D[0:{r}, 0:{c}] = transpose(transpose(a));
                }}"
            );
            let a = rng.vec(r * c, -1.0, 1.0);
            let u = rng.vec(r, -1.0, 1.0);
            let v = rng.vec(c, -1.0, 1.0);
            let b = run(
                &src,
                "k",
                vec![
                    ("A", arr(elem, &a, &[r, c])),
                    ("U", arr(elem, &u, &[r])),
                    ("V", arr(elem, &v, &[c])),
                    ("TT", sentinel(elem, &[c, r])),
                    ("O", sentinel(elem, &[r, c])),
                    ("D", sentinel(elem, &[r, c])),
                ],
            );
            let ctx = format!("{elem:?} {r}x{c}");
            assert_exact(&out(&b, "TT"), &transpose_f64(&a, r, c), &format!("transpose {ctx}"));
            let o: Vec<f64> = (0..r * c).map(|k| u[k / c] * v[k % c]).collect();
            assert_close(&out(&b, "O"), &o, tol(elem), &format!("outer {ctx}"));
            let d: Vec<f64> = a.iter().zip(&o).map(|(x, y)| x - y).collect();
            assert_close(&out(&b, "D"), &d, tol(elem), &format!("rank-1 update {ctx}"));
        }
    }
}

/// Integer (`i32`) tiles: `+ - * / %`, unary minus, `abs`, `min`/`max`, whole and axis
/// sums, matmul, `acc += a @ b` and `outer` updates, all exact (including the CPU's
/// division-by-zero convention `x / 0 == 0`).
#[test]
fn integer_tiles_arithmetic_and_matmul() {
    let src = "kernel k<T: int>(A: T[M, N], B: T[M, N], O: mut T[12, M, N], P: mut T[16, 16], S: mut T[3], Q: mut T[16, 16], s: T) grid(1) {
        let a = A[0:16, 0:16];
        let b = B[0:16, 0:16];
        O[0, 0:16, 0:16] = a + b;
        O[1, 0:16, 0:16] = a - b;
        O[2, 0:16, 0:16] = a * b;
        O[3, 0:16, 0:16] = a * s + 1;
        O[4, 0:16, 0:16] = s - a;
        O[5, 0:16, 0:16] = -a;
        O[6, 0:16, 0:16] = abs(a);
        O[7, 0:16, 0:16] = min(a, b);
        O[8, 0:16, 0:16] = max(a, s);
        O[9, 0:16, 0:16] = a / b;
        O[10, 0:16, 0:16] = a % b;
        let t = a;
        t += b; t *= 2; t -= s;
        O[11, 0:16, 0:16] = t;
        P[0:16, 0:16] = a @ b;
        let acc = tile<T, 16, 16>::full(3);
        acc += a @ b;
        acc -= outer(A[0:16, 0], B[0, 0:16]);
        Q[0:16, 0:16] = acc;
        S[0] = sum(a);
        S[1] = max(a);
        S[2] = sum(sum(a, 0) + sum(b, 1));
    }";
    let mut rng = Rng::new(13);
    let (m, n) = (16, 16);
    let a: Vec<f64> = (0..m * n).map(|_| rng.int(-9, 10) as f64).collect();
    let bv: Vec<f64> = (0..m * n).map(|_| rng.int(-5, 6) as f64).collect();
    let s = 3.0;
    let b = run(
        src,
        "k",
        vec![
            ("A", arr(Scalar::I32, &a, &[m, n])),
            ("B", arr(Scalar::I32, &bv, &[m, n])),
            ("O", sentinel(Scalar::I32, &[12, m, n])),
            ("P", sentinel(Scalar::I32, &[16, 16])),
            ("S", sentinel(Scalar::I32, &[3])),
            ("Q", sentinel(Scalar::I32, &[16, 16])),
            ("s", ArgValue::Scalar(Const::Int(3, Scalar::I32))),
        ],
    );
    let div = |x: f64, y: f64| if y == 0.0 { 0.0 } else { (x / y).trunc() };
    let rem = |x: f64, y: f64| if y == 0.0 { 0.0 } else { x % y };
    let fs: [Binary; 12] = [
        |a, b, _| a + b,
        |a, b, _| a - b,
        |a, b, _| a * b,
        |a, _, s| a * s + 1.0,
        |a, _, s| s - a,
        |a, _, _| -a,
        |a, _, _| a.abs(),
        |a, b, _| a.min(b),
        |a, _, s| a.max(s),
        |_, _, _| 0.0,
        |_, _, _| 0.0,
        |a, b, s| (a + b) * 2.0 - s,
    ];
    let o = out(&b, "O");
    for (k, f) in fs.iter().enumerate() {
        let want: Vec<f64> = (0..m * n)
            .map(|e| match k {
                9 => div(a[e], bv[e]),
                10 => rem(a[e], bv[e]),
                _ => f(a[e], bv[e], s),
            })
            .collect();
        assert_exact(&o[k * m * n..(k + 1) * m * n], &want, &format!("i32 op {k}"));
    }
    let p = matmul_f64(16, 16, 16, &a, &bv);
    assert_exact(&out(&b, "P"), &p, "i32 matmul");
    let q: Vec<f64> = (0..256).map(|e| 3.0 + p[e] - a[(e / 16) * 16] * bv[e % 16]).collect();
    assert_exact(&out(&b, "Q"), &q, "i32 matmul-accumulate and outer");
    let colsum: f64 = a.iter().sum::<f64>() + bv.iter().sum::<f64>();
    assert_exact(
        &out(&b, "S"),
        &[a.iter().sum(), a.iter().copied().fold(f64::MIN, f64::max), colsum],
        "i32 reductions",
    );
}

// ---------------------------------------------------------------------------------------
// Factorization and triangular solves in registers.
// ---------------------------------------------------------------------------------------

/// Runs `d.cholesky_(eps)` on an `n x n` tile (or an `n x n` array in a `t x t` tile padded
/// with the identity) and returns the stored `t x t` tile.
fn cholesky_tile(elem: Scalar, a: &[f64], n: usize, t: usize, eps: f64) -> Vec<f64> {
    let src = format!(
        "kernel k<T: float>(A: T[N, N], O: mut T[{t}, {t}], eps: T) grid(1) {{
            let d = tile<T, {t}, {t}>::eye();
            d[:] = A[0:{t}, 0:{t}];
            d.cholesky_(eps);
            O[0:{t}, 0:{t}] = d;
        }}"
    );
    let b =
        run(&src, "k", vec![("A", arr(elem, a, &[n, n])), ("O", sentinel(elem, &[t, t])), ("eps", float(elem, eps))]);
    out(&b, "O")
}

/// `cholesky_` of SPD tiles of order 1, 15, 16, 17, and of smaller matrices padded with the
/// identity: the lower factor, the upper triangle zeroed, the input's upper triangle
/// (garbage here) ignored.
#[test]
fn cholesky_of_spd_tiles_ignores_the_upper_triangle() {
    let mut rng = Rng::new(14);
    for elem in FLOATS {
        for (n, t) in [(1, 1), (15, 15), (16, 16), (17, 17), (5, 16), (15, 16), (1, 16), (32, 32), (77, 80), (128, 128)]
        {
            let mut a = tilec_tests::round_f32(&random_spd(1, n, 100 + n as u64));
            for i in 0..n {
                for j in i + 1..n {
                    a[i * n + j] = rng.uniform(-1e3, 1e3);
                }
            }
            let got = cholesky_tile(elem, &a, n, t, 1e-6);
            let mut padded_a = tile_of(&a, n, n, 0, 0, t, t);
            for i in n..t {
                padded_a[i * t + i] = 1.0;
            }
            let want = cholesky_clamped_f64(&padded_a, t, 1e-6);
            let ctx = format!("{elem:?} n={n} in tile {t}");
            assert_normwise(&got, &want, tol(elem), &ctx);
            for i in 0..t {
                for j in i + 1..t {
                    assert_eq!(got[i * t + j], 0.0, "{ctx}: upper ({i}, {j}) not zeroed");
                }
            }
        }
    }
}

/// Pivots below `eps` are clamped to `eps`: non-positive diagonals without coupling, the
/// zero matrix, and pivots that become non-positive during the factorization.
#[test]
fn cholesky_clamps_small_pivots_to_eps() {
    let mut rng = Rng::new(15);
    let eps = 0.25;
    for elem in FLOATS {
        let n = 16;
        // An SPD matrix with some rows and columns decoupled and given bad diagonals.
        let mut a = tilec_tests::round_f32(&random_spd(1, n, 7));
        for (j, d) in [(0, -3.0), (5, 0.0), (9, 0.125), (15, -1e-3)] {
            for k in 0..n {
                a[j * n + k] = 0.0;
                a[k * n + j] = 0.0;
            }
            a[j * n + j] = d;
        }
        // Pivots that go non-positive after an update: [[4, 2], [2, 0.5]] blocks
        // (d2 = 0.5 - 1 < eps) and [[1, 1], [1, 1]] (d2 = 0), with garbage above.
        let mut blocks = vec![0.0; n * n];
        for bk in 0..n / 2 {
            let (p, q) = (2 * bk, 2 * bk + 1);
            let (d1, o, d2) = if bk % 2 == 0 { (4.0, 2.0, 0.5) } else { (1.0, 1.0, 1.0) };
            blocks[p * n + p] = d1;
            blocks[q * n + p] = o;
            blocks[p * n + q] = rng.uniform(-9.0, 9.0);
            blocks[q * n + q] = d2;
        }
        for (name, m) in [("decoupled", a), ("zero", vec![0.0; n * n]), ("updated", blocks)] {
            let got = cholesky_tile(elem, &m, n, n, eps);
            let want = cholesky_clamped_f64(&m, n, eps);
            assert!(got.iter().all(|x| x.is_finite()), "{elem:?} {name}: not finite: {got:?}");
            assert_normwise(&got, &want, tol(elem), &format!("{elem:?} {name}"));
        }
    }
}

/// Solves `a.METHOD(b)` with an `n x n` tile `a` and returns `X`; `b` is `n x m` (left),
/// `m x n` (right), or the vector `tile<n>` when `vector` (left only).
#[allow(clippy::too_many_arguments)]
fn trsm_tile(
    elem: Scalar,
    method: &str,
    left: bool,
    a: &[f64],
    n: usize,
    b: &[f64],
    m: usize,
    vector: bool,
) -> Vec<f64> {
    let (xs, xshape): (String, Vec<usize>) = if vector {
        (format!("0:{n}"), vec![n])
    } else if left {
        (format!("0:{n}, 0:{m}"), vec![n, m])
    } else {
        (format!("0:{m}, 0:{n}"), vec![m, n])
    };
    let src = format!(
        "kernel k<T: float>(A: T[{n}, {n}], X: mut T[{}]) grid(1) {{
            let a = A[0:{n}, 0:{n}];
            let b = X[{xs}];
            a.{method}(b);
            X[{xs}] = b;
        }}",
        xshape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
    );
    let bo = run(&src, "k", vec![("A", arr(elem, a, &[n, n])), ("X", arr(elem, b, &xshape))]);
    out(&bo, "X")
}

/// Solves with a random `n x n` triangular tile (large garbage in the other triangle, and on
/// the diagonal for `_unit`) and a random right-hand side (`n x m`, `m x n`, or a vector),
/// and checks `X` against the f64 substitution.
fn check_trsm(rng: &mut Rng, elem: Scalar, op: TrsmOp, n: usize, m: usize, vector: bool) {
    let mut a = random_triangular(rng, n, op.lower, 1e3);
    if op.unit {
        for i in 0..n {
            a[i * n + i] = rng.uniform(-50.0, 50.0);
        }
    }
    let b = rng.vec(n * m, -1.0, 1.0);
    let got = trsm_tile(elem, &op.method(), op.left, &a, n, &b, m, vector);
    let want = trsm_f64(op, &a, n, &b, m);
    let ctx = format!("{elem:?} {} n={n} m={m}{}", op.method(), if vector { " (vector)" } else { "" });
    assert_normwise(&got, &want, tol(elem), &ctx);
}

/// All 16 triangular solves `solve_{left|right}_{lower|upper}[_t][_unit]_` on tiles of
/// order 1, 5, 15, 16, 17 with right-hand sides of widths 1, 7, 16, 17 (and vectors for the
/// left solves), with large garbage in the triangle that must not be read (and on the
/// diagonal for `_unit`).
#[test]
fn trsm_all_16_variants_ignore_the_other_triangle() {
    let mut rng = Rng::new(16);
    for elem in FLOATS {
        for op in TrsmOp::all() {
            for n in [1, 5, 15, 16, 17] {
                for (m, vector) in [(1, false), (7, false), (16, false), (17, false), (1, true)] {
                    if vector && !op.left {
                        continue;
                    }
                    check_trsm(&mut rng, elem, op, n, m, vector);
                }
            }
        }
    }
}

/// The 16 solves with a tile or right-hand side over 64 rows or columns (which the LLVM
/// backend solves in loops over rows in memory instead of unrolled registers).
#[test]
fn trsm_all_16_variants_on_tiles_over_64() {
    let mut rng = Rng::new(17);
    for elem in FLOATS {
        for op in TrsmOp::all() {
            for (n, m, vector) in [(70, 3, false), (16, 100, false), (70, 1, true)] {
                if vector && !op.left {
                    continue;
                }
                check_trsm(&mut rng, elem, op, n, m, vector);
            }
        }
    }
}

/// The triangle that a solve does not read may hold NaN and infinities.
#[test]
fn trsm_ignores_nan_in_the_other_triangle() {
    let mut rng = Rng::new(17);
    for elem in FLOATS {
        for op in TrsmOp::all() {
            let (n, m) = (16, 5);
            let mut a = random_triangular(&mut rng, n, op.lower, 1.0);
            for i in 0..n {
                for j in 0..n {
                    if (j > i && op.lower) || (j < i && !op.lower) || (i == j && op.unit) {
                        a[i * n + j] = if (i + j) % 2 == 0 { f64::NAN } else { f64::INFINITY };
                    }
                }
            }
            let b = rng.vec(n * m, -1.0, 1.0);
            let got = trsm_tile(elem, &op.method(), op.left, &a, n, &b, m, false);
            let want = trsm_f64(op, &a, n, &b, m);
            assert_normwise(&got, &want, tol(elem), &format!("{elem:?} {} with NaN garbage", op.method()));
        }
    }
}

/// `l.solve_triangular_(b)` is `X L^T = B` (`solve_right_lower_t_`), with a padded order.
#[test]
fn solve_triangular_is_right_lower_transposed() {
    let mut rng = Rng::new(18);
    let op = TrsmOp { left: false, lower: true, trans: true, unit: false };
    for elem in FLOATS {
        for (n, m) in [(16, 16), (15, 9), (1, 3), (17, 17)] {
            let a = random_triangular(&mut rng, n, true, 1e3);
            let b = rng.vec(n * m, -1.0, 1.0);
            let got = trsm_tile(elem, "solve_triangular_", false, &a, n, &b, m, false);
            assert_normwise(&got, &trsm_f64(op, &a, n, &b, m), tol(elem), &format!("{elem:?} n={n} m={m}"));
        }
        // In a 16x16 tile padded with the identity, as potrf uses it.
        let n = 5;
        let a = random_triangular(&mut rng, n, true, 1e3);
        let b = rng.vec(16 * 16, -1.0, 1.0);
        let src = "kernel k<T: float>(A: T[N, N], X: mut T[16, 16]) grid(1) {
            let d = tile<T, 16, 16>::eye();
            d[:] = A[0:16, 0:16];
            let t = X[0:16, 0:16];
            d.solve_triangular_(t);
            X[0:16, 0:16] = t;
        }";
        let bo = run(src, "k", vec![("A", arr(elem, &a, &[n, n])), ("X", arr(elem, &b, &[16, 16]))]);
        let mut pa = tile_of(&a, n, n, 0, 0, 16, 16);
        for i in n..16 {
            pa[i * 16 + i] = 1.0;
        }
        assert_normwise(&out(&bo, "X"), &trsm_f64(op, &pa, 16, &b, 16), tol(elem), &format!("{elem:?} padded"));
    }
}

// ---------------------------------------------------------------------------------------
// map, atomic_add, shared arrays, tile elements.
// ---------------------------------------------------------------------------------------

/// Rounds `x` to `elem` (f32 or f64): an f32 operation is the f64 operation on f32 values
/// rounded once more (binary64 holds the exact result of `+ - * / sqrt` on binary32 values
/// closely enough that the second rounding is innocuous).
fn rnd(elem: Scalar, x: f64) -> f64 {
    if elem == Scalar::F32 {
        x as f32 as f64
    } else {
        x
    }
}

/// `X` of `a.METHOD(b)` by the substitution of docs/language.md §9 with a rounding after
/// every operation and no fused multiply-add: with `U = op(A)`, each unknown is its
/// right-hand side minus the products with the unknowns solved before it (in the solve's
/// order), then divided by the diagonal. `b` is `n x m` (left) or `m x n` (right).
fn trsm_in_order(elem: Scalar, op: TrsmOp, a: &[f64], n: usize, b: &[f64], m: usize) -> Vec<f64> {
    let u = |p: usize, q: usize| if op.trans { a[q * n + p] } else { a[p * n + q] };
    let u_lower = op.lower != op.trans;
    // Left: U X = B; right: X U = B, that is U^T X^T = B^T, solved forward when U^T is lower.
    let forward = if op.left { u_lower } else { !u_lower };
    let order: Vec<usize> = if forward { (0..n).collect() } else { (0..n).rev().collect() };
    let mut x = b.to_vec();
    let at = |i: usize, c: usize| if op.left { i * m + c } else { c * n + i };
    for c in 0..m {
        for (step, &i) in order.iter().enumerate() {
            let mut acc = x[at(i, c)];
            for &k in &order[..step] {
                let coef = if op.left { u(i, k) } else { u(k, i) };
                acc = rnd(elem, acc - rnd(elem, coef * x[at(k, c)]));
            }
            if !op.unit {
                acc = rnd(elem, acc / u(i, i));
            }
            x[at(i, c)] = acc;
        }
    }
    x
}

/// The lower factor of `cholesky_` by the documented operations (factor.rs, the SIMT
/// lowering): on the rows of U = L^T, each row minus the products with the finished rows
/// before it in order, then the pivot `max(u[j][j], eps)`, its square root `d`, the row
/// divided by `d`; rounded after every operation, no fused multiply-add.
fn cholesky_in_order(elem: Scalar, a: &[f64], n: usize, eps: f64) -> Vec<f64> {
    // u[j][l] = A[l][j]: only the lower triangle of A matters for the result.
    let mut u: Vec<Vec<f64>> = (0..n).map(|j| (0..n).map(|l| a[l * n + j]).collect()).collect();
    for j in 0..n {
        let (done, rest) = u.split_at_mut(j);
        let row = &mut rest[0];
        for uk in done.iter() {
            let ukj = uk[j];
            for (x, y) in row.iter_mut().zip(uk) {
                *x = rnd(elem, *x - rnd(elem, y * ukj));
            }
        }
        let d = rnd(elem, row[j].max(rnd(elem, eps)).sqrt());
        row.iter_mut().for_each(|x| *x = rnd(elem, *x / d));
        row[j] = d;
    }
    (0..n * n).map(|e| if e % n <= e / n { u[e % n][e / n] } else { 0.0 }).collect()
}

/// Every CPU code generator's output in `outs` equals `want` bit for bit.
fn same_bits(outs: &[(tilec::CpuBackend, Vec<f64>)], want: &[f64], ctx: &str) {
    for (backend, got) in outs {
        assert_eq!(got.len(), want.len(), "{ctx}");
        assert!(got.iter().zip(want).all(|(g, w)| g.to_bits() == w.to_bits()), "{ctx}: {backend}: not bit for bit");
    }
}

/// Both CPU code generators take the operations of the SIMT lowering in the documented order in
/// their register solves and Cholesky (a product, then a subtraction, per unknown solved
/// before, in order; then the division; never fused), so they agree bit for bit with the
/// in-order references above, and with each other, on odd, full, tall and wide tiles.
#[test]
fn cpu_solves_and_cholesky_round_in_the_documented_order() {
    let mut rng = Rng::new(19);
    for elem in FLOATS {
        for op in TrsmOp::all() {
            for (n, m) in [(16, 16), (5, 17), (16, 3), (13, 40), (16, 32), (16, 8)] {
                let mut a = tilec_tests::round_f32(&random_triangular(&mut rng, n, op.lower, 1e3));
                if op.unit {
                    (0..n).for_each(|i| a[i * n + i] = 7.0);
                }
                let b = tilec_tests::round_f32(&rng.vec(n * m, -1.0, 1.0));
                let xshape = if op.left { [n, m] } else { [m, n] };
                let src = format!(
                    "kernel k<T: float>(A: T[{n}, {n}], X: mut T[{r}, {c}]) grid(1) {{
                        let a = A[0:{n}, 0:{n}];
                        let b = X[0:{r}, 0:{c}];
                        a.{}(b);
                        X[0:{r}, 0:{c}] = b;
                    }}",
                    op.method(),
                    r = xshape[0],
                    c = xshape[1],
                );
                let set = SourceSet::with_stdlib("test.tile", &src);
                let args = || {
                    HashMap::from([
                        ("A".to_string(), arr(elem, &a, &[n, n])),
                        ("X".to_string(), arr(elem, &b, &xshape)),
                    ])
                };
                let ctx = format!("{elem:?} {} n={n} m={m}", op.method());
                let outs = outputs_per_backend(&set, "k", args, "X", &ctx);
                let want = trsm_in_order(elem, op, &a, n, &b, m);
                same_bits(&outs, &want, &ctx);
            }
        }
        // A 13 x 13 system in 16 x 16 tiles: the triangular tile loaded into the identity
        // (`load_into`, partly outside its array: the copy path), X padded with zeros.
        let (n, m, t) = (13, 5, 16);
        for op in TrsmOp::all() {
            let a = tilec_tests::round_f32(&random_triangular(&mut rng, n, op.lower, 1e3));
            let b = tilec_tests::round_f32(&rng.vec(n * m, -1.0, 1.0));
            let (xs, xshape, pshape) = if op.left {
                (format!("0:{t}, 0:{m}"), [n, m], (t, m))
            } else {
                (format!("0:{m}, 0:{t}"), [m, n], (m, t))
            };
            let src = format!(
                "kernel k<T: float>(A: T[{n}, {n}], X: mut T[{}, {}]) grid(1) {{
                    let a = tile<T, {t}, {t}>::eye();
                    a[:] = A[0:{t}, 0:{t}];
                    let b = X[{xs}];
                    a.{}(b);
                    X[{xs}] = b;
                }}",
                xshape[0],
                xshape[1],
                op.method(),
            );
            let set = SourceSet::with_stdlib("test.tile", &src);
            let args = || {
                HashMap::from([("A".to_string(), arr(elem, &a, &[n, n])), ("X".to_string(), arr(elem, &b, &xshape))])
            };
            let ctx = format!("{elem:?} {} {n}x{n} in a {t}x{t} tile", op.method());
            let outs = outputs_per_backend(&set, "k", args, "X", &ctx);
            let mut a_pad = tile_of(&a, n, n, 0, 0, t, t);
            (n..t).for_each(|i| a_pad[i * t + i] = 1.0);
            let b_pad = tile_of(&b, xshape[0], xshape[1], 0, 0, pshape.0, pshape.1);
            let x = trsm_in_order(elem, op, &a_pad, t, &b_pad, m);
            let want = tile_of(&x, pshape.0, pshape.1, 0, 0, xshape[0], xshape[1]);
            same_bits(&outs, &want, &ctx);
        }
        for n in [16, 7, 33] {
            let a = tilec_tests::round_f32(&random_spd(1, n, 200 + n as u64));
            let src = format!(
                "kernel k<T: float>(A: T[{n}, {n}], O: mut T[{n}, {n}], eps: T) grid(1) {{
                    let d = A[0:{n}, 0:{n}];
                    d.cholesky_(eps);
                    O[0:{n}, 0:{n}] = d;
                }}"
            );
            let set = SourceSet::with_stdlib("test.tile", &src);
            let args = || {
                HashMap::from([
                    ("A".to_string(), arr(elem, &a, &[n, n])),
                    ("O".to_string(), sentinel(elem, &[n, n])),
                    ("eps".to_string(), float(elem, 1e-6)),
                ])
            };
            let ctx = format!("{elem:?} cholesky_ n={n}");
            let outs = outputs_per_backend(&set, "k", args, "O", &ctx);
            let want = cholesky_in_order(elem, &a, n, 1e-6);
            same_bits(&outs, &want, &ctx);
        }
    }
}
