//! Constructors, element-wise operations, compound assignment and reductions.

use super::*;

/// `zeros()`, `eye()`, `full(x)` and `t.eye_()` for square, rectangular, 1-D and 1x1 tiles.
#[test]
fn constructors_zeros_eye_full_and_eye_method() {
    for elem in FLOATS {
        for (r, c) in [(1, 1), (15, 17), (16, 16), (17, 15), (1, 16), (16, 1)] {
            let src = format!(
                "kernel k<T: float>(A: T[{r}, {c}], Z: mut T[{r}, {c}], E: mut T[{r}, {c}], F: mut T[{r}, {c}], G: mut T[{r}, {c}], H: mut T[{r}, {c}], x: T) grid(1) {{
                    Z[0:{r}, 0:{c}] = tile<T, {r}, {c}>::zeros();
                    E[0:{r}, 0:{c}] = tile<T, {r}, {c}>::eye();
                    F[0:{r}, 0:{c}] = tile<T, {r}, {c}>::full(x);
                    G[0:{r}, 0:{c}] = tile<T, {r}, {c}>::full(-2.5);
                    let t = A[0:{r}, 0:{c}];
                    t.eye_();
                    H[0:{r}, 0:{c}] = t;
                }}"
            );
            let a = vec![3.0; r * c];
            let b = run(
                &src,
                "k",
                vec![
                    ("A", arr(elem, &a, &[r, c])),
                    ("Z", sentinel(elem, &[r, c])),
                    ("E", sentinel(elem, &[r, c])),
                    ("F", sentinel(elem, &[r, c])),
                    ("G", sentinel(elem, &[r, c])),
                    ("H", sentinel(elem, &[r, c])),
                    ("x", float(elem, 0.375)),
                ],
            );
            let eye: Vec<f64> = (0..r * c).map(|k| if k / c == k % c { 1.0 } else { 0.0 }).collect();
            let ctx = format!("{elem:?} {r}x{c}");
            assert_exact(&out(&b, "Z"), &vec![0.0; r * c], &ctx);
            assert_exact(&out(&b, "E"), &eye, &ctx);
            assert_exact(&out(&b, "F"), &vec![0.375; r * c], &ctx);
            assert_exact(&out(&b, "G"), &vec![-2.5; r * c], &ctx);
            assert_exact(&out(&b, "H"), &eye, &ctx);
        }
        for n in [1, 16, 17] {
            let src = format!(
                "kernel k<T: float>(Z: mut T[{n}], E: mut T[{n}], F: mut T[{n}]) grid(1) {{
                    Z[0:{n}] = tile<T, {n}>::zeros();
                    E[0:{n}] = tile<T, {n}>::eye();
                    F[0:{n}] = tile<T, {n}>::full(4.0);
                }}"
            );
            let b = run(
                &src,
                "k",
                vec![("Z", sentinel(elem, &[n])), ("E", sentinel(elem, &[n])), ("F", sentinel(elem, &[n]))],
            );
            let mut e = vec![0.0; n];
            e[0] = 1.0;
            assert_exact(&out(&b, "Z"), &vec![0.0; n], "1-D zeros");
            assert_exact(&out(&b, "E"), &e, "1-D eye");
            assert_exact(&out(&b, "F"), &vec![4.0; n], "1-D full");
        }
    }
}

/// Element-wise expressions of `a` (positive), `b` (either sign, |b| >= 0.5) and the scalar
/// `s`, with their f64 meaning.
const ELEMENTWISE: &[(&str, Binary)] = &[
    ("a + b", |a, b, _| a + b),
    ("a - b", |a, b, _| a - b),
    ("a * b", |a, b, _| a * b),
    ("a / b", |a, b, _| a / b),
    ("a + s", |a, _, s| a + s),
    ("s + a", |a, _, s| s + a),
    ("a - s", |a, _, s| a - s),
    ("s - a", |a, _, s| s - a),
    ("a * s", |a, _, s| a * s),
    ("s * b", |_, b, s| s * b),
    ("a / s", |a, _, s| a / s),
    ("s / b", |_, b, s| s / b),
    ("a * 2.0 - 0.5", |a, _, _| a * 2.0 - 0.5),
    ("-b", |_, b, _| -b),
    ("abs(b)", |_, b, _| b.abs()),
    ("sqrt(a)", |a, _, _| a.sqrt()),
    ("exp(b)", |_, b, _| b.exp()),
    ("log(a)", |a, _, _| a.ln()),
    ("sin(b)", |_, b, _| b.sin()),
    ("cos(b)", |_, b, _| b.cos()),
    ("tanh(b)", |_, b, _| b.tanh()),
    ("min(a, b)", |a, b, _| a.min(b)),
    ("max(a, b)", |a, b, _| a.max(b)),
    ("min(b, s)", |_, b, s| b.min(s)),
    ("max(s, b)", |_, b, s| s.max(b)),
    ("(a - b) * (a + b) / s", |a, b, s| (a - b) * (a + b) / s),
];

/// Every element-wise operation (tile/tile, tile/scalar both ways, unary, math functions,
/// two-argument min/max) on full and partial tiles: the padding computes on zeros (even
/// `0 / 0`) but is never stored.
#[test]
fn elementwise_operations_match_f64() {
    let mut rng = Rng::new(6);
    for elem in FLOATS {
        for (r, c, m, n) in [(16, 16, 16, 16), (16, 16, 15, 17), (1, 17, 1, 17), (17, 1, 17, 1), (15, 15, 14, 16)] {
            let mut body = String::new();
            for (k, (e, _)) in ELEMENTWISE.iter().enumerate() {
                body += &format!("    O[{k}, 0:{r}, 0:{c}] = {e};\n");
            }
            let src = format!(
                "kernel k<T: float>(A: T[M, N], B: T[M, N], O: mut T[E, M, N], s: T) grid(1) {{
                    let a = A[0:{r}, 0:{c}];
                    let b = B[0:{r}, 0:{c}];
                {body}}}"
            );
            let a = rng.vec(m * n, 0.25, 2.0);
            let bv: Vec<f64> =
                rng.vec(m * n, 0.5, 2.0).into_iter().map(|x| if rng.next_u64() & 1 == 0 { x } else { -x }).collect();
            let s = -1.25;
            let ne = ELEMENTWISE.len();
            let b = run(
                &src,
                "k",
                vec![
                    ("A", arr(elem, &a, &[m, n])),
                    ("B", arr(elem, &bv, &[m, n])),
                    ("O", sentinel(elem, &[ne, m, n])),
                    ("s", float(elem, s)),
                ],
            );
            let o = out(&b, "O");
            for (k, (e, f)) in ELEMENTWISE.iter().enumerate() {
                let want = stored(m, n, 0, 0, r, c, |i, j| f(a[i * n + j], bv[i * n + j], s));
                assert_close(
                    &o[k * m * n..(k + 1) * m * n],
                    &want,
                    tol(elem),
                    &format!("{elem:?} `{e}` tile {r}x{c} on {m}x{n}"),
                );
            }
        }
        // 1-D tiles.
        for (l, m) in [(16, 15), (17, 17), (1, 1)] {
            let mut body = String::new();
            for (k, (e, _)) in ELEMENTWISE.iter().enumerate() {
                body += &format!("    O[{k}, 0:{l}] = {e};\n");
            }
            let src = format!(
                "kernel k<T: float>(A: T[M], B: T[M], O: mut T[E, M], s: T) grid(1) {{
                    let a = A[0:{l}];
                    let b = B[0:{l}];
                {body}}}"
            );
            let a = rng.vec(m, 0.25, 2.0);
            let bv = rng.vec(m, 0.5, 2.0);
            let ne = ELEMENTWISE.len();
            let b = run(
                &src,
                "k",
                vec![
                    ("A", arr(elem, &a, &[m])),
                    ("B", arr(elem, &bv, &[m])),
                    ("O", sentinel(elem, &[ne, m])),
                    ("s", float(elem, 3.0)),
                ],
            );
            let o = out(&b, "O");
            for (k, (e, f)) in ELEMENTWISE.iter().enumerate() {
                let want: Vec<f64> = (0..m).map(|i| if i < l { f(a[i], bv[i], 3.0) } else { SENTINEL }).collect();
                assert_close(&o[k * m..(k + 1) * m], &want, tol(elem), &format!("{elem:?} `{e}` tile<{l}> on {m}"));
            }
        }
    }
}

/// Compound assignments on tile variables: `t op= tile` and `t op= scalar`.
#[test]
fn compound_assignment_on_tiles() {
    let src = "kernel k<T: float>(A: T[M, N], B: T[M, N], O: mut T[4, M, N], s: T) grid(1) {
        let t = A[0:16, 0:16];
        let b = B[0:16, 0:16];
        let u = t; u += b; O[0, 0:16, 0:16] = u;
        let u = t; u -= s; O[1, 0:16, 0:16] = u;
        let u = t; u *= b; u *= 2.0; O[2, 0:16, 0:16] = u;
        let u = t; u /= b; u /= s; O[3, 0:16, 0:16] = u;
    }";
    let mut rng = Rng::new(7);
    for elem in FLOATS {
        let (m, n) = (15, 17);
        let a = rng.vec(m * n, -1.0, 1.0);
        let bv = rng.vec(m * n, 0.5, 2.0);
        let s = 0.75;
        let b = run(
            src,
            "k",
            vec![
                ("A", arr(elem, &a, &[m, n])),
                ("B", arr(elem, &bv, &[m, n])),
                ("O", sentinel(elem, &[4, m, n])),
                ("s", float(elem, s)),
            ],
        );
        let o = out(&b, "O");
        let fs: [Binary; 4] = [|a, b, _| a + b, |a, _, s| a - s, |a, b, _| a * b * 2.0, |a, b, s| a / b / s];
        for (k, f) in fs.iter().enumerate() {
            let want = stored(m, n, 0, 0, 16, 16, |i, j| f(a[i * n + j], bv[i * n + j], s));
            assert_close(&o[k * m * n..(k + 1) * m * n], &want, tol(elem), &format!("{elem:?} compound {k}"));
        }
    }
}

/// Whole-tile `sum`, `max`, `min` and the axis reductions `sum(t, axis)`, `max_axis`,
/// `min_axis` along both axes. A partial load's zero padding is part of the tile.
#[test]
fn reductions_whole_and_along_both_axes() {
    let mut rng = Rng::new(8);
    for elem in FLOATS {
        for (r, c, m, n) in
            [(16, 16, 16, 16), (16, 16, 15, 17), (1, 17, 1, 17), (17, 1, 17, 1), (15, 17, 15, 17), (16, 16, 9, 4)]
        {
            let src = format!(
                "kernel k<T: float>(A: T[M, N], S: mut T[3], C: mut T[3, {c}], R: mut T[3, {r}]) grid(1) {{
                    let t = A[0:{r}, 0:{c}];
                    S[0] = sum(t);
                    S[1] = max(t);
                    S[2] = min(t);
                    C[0, 0:{c}] = sum(t, 0);
                    C[1, 0:{c}] = max_axis(t, 0);
                    C[2, 0:{c}] = min_axis(t, 0);
                    R[0, 0:{r}] = sum(t, 1);
                    R[1, 0:{r}] = max_axis(t, 1);
                    R[2, 0:{r}] = min_axis(t, 1);
                }}"
            );
            // Positive and negative values, so that the zero padding matters for max and min.
            let a = rng.vec(m * n, -1.0, 1.0);
            let b = run(
                &src,
                "k",
                vec![
                    ("A", arr(elem, &a, &[m, n])),
                    ("S", sentinel(elem, &[3])),
                    ("C", sentinel(elem, &[3, c])),
                    ("R", sentinel(elem, &[3, r])),
                ],
            );
            let t = tile_of(&a, m, n, 0, 0, r, c);
            let ctx = format!("{elem:?} tile {r}x{c} on {m}x{n}");
            let whole = [
                t.iter().sum(),
                t.iter().copied().fold(f64::MIN, f64::max),
                t.iter().copied().fold(f64::MAX, f64::min),
            ];
            let s = out(&b, "S");
            assert_close(&s[..1], &whole[..1], tol(elem), &format!("sum {ctx}"));
            assert_exact(&s[1..], &whole[1..], &format!("max/min {ctx}"));
            let mut cw = vec![0.0; 3 * c];
            for j in 0..c {
                let col: Vec<f64> = (0..r).map(|i| t[i * c + j]).collect();
                cw[j] = col.iter().sum();
                cw[c + j] = col.iter().copied().fold(f64::MIN, f64::max);
                cw[2 * c + j] = col.iter().copied().fold(f64::MAX, f64::min);
            }
            let mut rw = vec![0.0; 3 * r];
            for i in 0..r {
                let row = &t[i * c..(i + 1) * c];
                rw[i] = row.iter().sum();
                rw[r + i] = row.iter().copied().fold(f64::MIN, f64::max);
                rw[2 * r + i] = row.iter().copied().fold(f64::MAX, f64::min);
            }
            let co = out(&b, "C");
            let ro = out(&b, "R");
            assert_close(&co[..c], &cw[..c], tol(elem), &format!("sum axis 0 {ctx}"));
            assert_exact(&co[c..], &cw[c..], &format!("max/min axis 0 {ctx}"));
            assert_close(&ro[..r], &rw[..r], tol(elem), &format!("sum axis 1 {ctx}"));
            assert_exact(&ro[r..], &rw[r..], &format!("max/min axis 1 {ctx}"));
        }
        // Whole reductions of 1-D tiles.
        for (l, m) in [(16, 15), (17, 17), (1, 1)] {
            let src = format!(
                "kernel k<T: float>(A: T[M], S: mut T[3]) grid(1) {{
                    let t = A[0:{l}];
                    S[0] = sum(t);
                    S[1] = max(t);
                    S[2] = min(t);
                }}"
            );
            let a = rng.vec(m, 0.5, 1.0);
            let b = run(&src, "k", vec![("A", arr(elem, &a, &[m])), ("S", sentinel(elem, &[3]))]);
            let t: Vec<f64> = (0..l).map(|i| a.get(i).copied().unwrap_or(0.0)).collect();
            let s = out(&b, "S");
            assert_close(&s[..1], &[t.iter().sum()], tol(elem), "1-D sum");
            assert_exact(
                &s[1..],
                &[t.iter().copied().fold(f64::MIN, f64::max), t.iter().copied().fold(f64::MAX, f64::min)],
                "1-D max/min",
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Products, transpose, outer.
// ---------------------------------------------------------------------------------------

/// `t as T` on tiles: element by element with the scalar rules (truncation toward zero and
/// saturation for float to integer, rounding for integer to float, 0/1 from masks), on a
/// partial 7x5 tile over a 6x4 array.
#[test]
fn tile_casts_convert_each_element() {
    let (m, n) = (6usize, 4usize);
    for elem in FLOATS {
        let t = if elem == Scalar::F32 { "f32" } else { "f64" };
        let other = if elem == Scalar::F32 { "f64" } else { "f32" };
        let src = format!(
            "kernel k(A: {t}[M, N], I: mut i32[M, N], F: mut {t}[M, N], G: mut {t}[M, N], H: mut {t}[M, N]) grid(1) {{
                let a = A[0:7, 0:5];
                let i = a as i32;
                I[0:7, 0:5] = i;
                F[0:7, 0:5] = (i * 3) as {t};
                G[0:7, 0:5] = (a > 0.5) as {t};
                H[0:7, 0:5] = (a as {other}) as {t};
            }}"
        );
        let a: Vec<f64> = (0..m * n).map(|k| [-2.75, -0.5, 0.0, 0.5, 1.5, 3e9, -3e9, 7.25][k % 8]).collect();
        let b = run(
            &src,
            "k",
            vec![
                ("A", arr(elem, &a, &[m, n])),
                ("I", ArgValue::Array(HostArray::from_i32(&vec![0; m * n], &[m as u64, n as u64]).unwrap())),
                ("F", sentinel(elem, &[m, n])),
                ("G", sentinel(elem, &[m, n])),
                ("H", sentinel(elem, &[m, n])),
            ],
        );
        let trunc: Vec<f64> = a.iter().map(|&x| (x as i32) as f64).collect();
        assert_exact(&out(&b, "I"), &trunc, &format!("{elem:?} as i32"));
        let f: Vec<f64> = trunc.iter().map(|&x| ((x as i32).wrapping_mul(3)) as f64).collect();
        let f: Vec<f64> = if elem == Scalar::F32 { f.iter().map(|&x| x as f32 as f64).collect() } else { f };
        assert_exact(&out(&b, "F"), &f, &format!("i32 as {elem:?}"));
        let g: Vec<f64> = a.iter().map(|&x| if x > 0.5 { 1.0 } else { 0.0 }).collect();
        assert_exact(&out(&b, "G"), &g, &format!("mask as {elem:?}"));
        // The inputs are f32 values: through either float type they come back unchanged.
        let h: Vec<f64> = a.iter().map(|&x| x as f32 as f64).collect();
        assert_exact(&out(&b, "H"), &h, &format!("{elem:?} through {other}"));
    }
}

/// `exp2`, `log2` and `rsqrt` on tiles and scalars, against f64 (`f64::exp2`, `log2`,
/// `1 / sqrt`), within a few ulp.
#[test]
fn exp2_log2_and_rsqrt() {
    let n = 37usize;
    for elem in FLOATS {
        let src = "kernel k<T: float>(X: T[N], E: mut T[N], L: mut T[N], R: mut T[N], S: mut T[3]) grid(1) {
                let x = X[0:40];
                E[0:40] = exp2(x * 8.0 - 4.0);
                L[0:40] = log2(x);
                R[0:40] = rsqrt(x);
                S[0] = exp2(X[5] * 8.0 - 4.0);
                S[1] = log2(X[6]);
                S[2] = rsqrt(X[7]);
            }";
        let x: Vec<f64> = (0..n).map(|i| 0.03 + i as f64 * 0.027).collect();
        let xr: Vec<f64> = if elem == Scalar::F32 { x.iter().map(|v| *v as f32 as f64).collect() } else { x.clone() };
        let b = run(
            src,
            "k",
            vec![
                ("X", arr(elem, &x, &[n])),
                ("E", sentinel(elem, &[n])),
                ("L", sentinel(elem, &[n])),
                ("R", sentinel(elem, &[n])),
                ("S", sentinel(elem, &[3])),
            ],
        );
        let tol = if elem == Scalar::F32 { 3e-7 } else { 1e-15 };
        let ctx = format!("{elem:?}");
        let e: Vec<f64> = xr.iter().map(|v| (v * 8.0 - 4.0).exp2()).collect();
        let l: Vec<f64> = xr.iter().map(|v| v.log2()).collect();
        let r: Vec<f64> = xr.iter().map(|v| 1.0 / v.sqrt()).collect();
        assert_close(&out(&b, "E"), &e, tol, &format!("{ctx} exp2"));
        assert_close(&out(&b, "L"), &l, tol, &format!("{ctx} log2"));
        assert_close(&out(&b, "R"), &r, tol, &format!("{ctx} rsqrt"));
        assert_close(&out(&b, "S"), &[e[5], l[6], r[7]], tol, &format!("{ctx} scalars"));
    }
}

/// `fma(a, b, c)` on tiles rounds once where the host has FMA (§6.4): `fma(a, b, -(a * b))`
/// is the rounding error of the product, exact (and mostly nonzero) when fused, zero when not.
/// Also a literal and a column broadcast over a partial tile (a 17 x 7 array in 20 x 9 tiles),
/// and scalar `fma` with literals that take the other operand's type.
#[test]
fn fma_on_tiles_rounds_once() {
    #[cfg(target_arch = "x86_64")]
    let fused = std::is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    let fused = true;
    let (m, n) = (17usize, 7usize);
    let src =
        "kernel k<T: float>(A: T[M, N], B: T[M, N], C: T[M], Y: mut T[M, N], Z: mut T[M, N], S: mut T[2]) grid(1) {
            let a = A[0:20, 0:9];
            let b = B[0:20, 0:9];
            Y[0:20, 0:9] = fma(a, b, -(a * b));
            Z[0:20, 0:9] = fma(2.0, a, column(C[0:20]));
            S[0] = fma(A[0, 0], B[0, 0], C[0]);
            S[1] = fma(A[1, 1], 3.0, 1.0);
        }";
    let mut rng = Rng::new(43);
    for elem in FLOATS {
        let round = |x: f64| if elem == Scalar::F32 { x as f32 as f64 } else { x };
        // Reciprocals: every bit of the mantissa set at random (the generator's are not).
        let a: Vec<f64> = rng.vec(m * n, 0.5, 2.0).into_iter().map(|x| round(1.0 / x)).collect();
        let b: Vec<f64> = rng.vec(m * n, 0.5, 2.0).into_iter().map(|x| round(1.0 / x)).collect();
        let c: Vec<f64> = rng.vec(m, -1.0, 1.0).into_iter().map(round).collect();
        let bound = run(
            src,
            "k",
            vec![
                ("A", arr(elem, &a, &[m, n])),
                ("B", arr(elem, &b, &[m, n])),
                ("C", arr(elem, &c, &[m])),
                ("Y", sentinel(elem, &[m, n])),
                ("Z", sentinel(elem, &[m, n])),
                ("S", sentinel(elem, &[2])),
            ],
        );
        // fma in the element type: f64's `mul_add` (correctly rounded); an f32 product is exact
        // in f64, and one f64 sum of it rounded to f32 is the f32 fma on these magnitudes.
        let fma = |x: f64, y: f64, z: f64| match (elem, fused) {
            (Scalar::F32, true) => (x * y + z) as f32 as f64,
            (_, true) => x.mul_add(y, z),
            _ => round(round(x * y) + z),
        };
        let y: Vec<f64> = a.iter().zip(&b).map(|(x, v)| fma(*x, *v, -round(x * v))).collect();
        let z: Vec<f64> = (0..m * n).map(|k| round(2.0 * a[k] + c[k / n])).collect();
        let ctx = format!("{elem:?} fused {fused}");
        assert_exact(&out(&bound, "Y"), &y, &ctx);
        if fused {
            assert!(y.iter().filter(|e| **e != 0.0).count() > m * n / 2, "{ctx}: products mostly inexact");
        }
        assert_exact(&out(&bound, "Z"), &z, &ctx);
        assert_exact(&out(&bound, "S"), &[fma(a[0], b[0], c[0]), fma(a[n + 1], 3.0, 1.0)], &ctx);
    }
}

/// Chains of `where`, comparisons, logic, casts and arithmetic on tiles (one fused `map`,
/// lowered on vectors by Cranelift, the functions and integer division lane by lane but by a
/// power of two, as shifts; a `where`
/// between two functions, guarded by an `if`, computes both on `f32` vectors) give
/// the bits of the same expressions on scalars, on edge values: zeros of both signs,
/// infinities, NaN, values beyond the `i32` range, integer limits; over 7x9 tiles (vectors
/// and a remainder of elements) and 33x35 tiles (from 1024 elements on, `fuse-maps` also
/// fuses the tile arithmetic around the maps: `exp(min(x, 3.0)) * .. + ..` is one map).
#[test]
fn fused_maps_match_the_scalar_code_bit_for_bit() {
    let float_exprs = [
        "where(x < y, x * 2.0 - y, min(x, y))",
        "where(x != x || y >= 0.0, (x as i32) as T, abs(y) + 1.0)",
        "where(!(x > 1.0) && y <= x, sqrt(abs(x)), -y)",
        "exp(min(x, 3.0)) * where(x == y, 1.0, 0.5) + (x > y) as T",
        "max(x, y) - where(y > 0.0 || x < -1.0, y / 3.0, x)",
        "where(x > y, sin(x), cos(y)) + where(x < 1.0, exp(x), tanh(y) * 2.0)",
        "where(x > y, sin(x), where(y < 0.0, exp(y), cos(x))) * X[0, 1]",
    ];
    let int_exprs = [
        "where(x < y, x * 3 - y, max(x, y))",
        "x / y + x % (y - 1) + where(x >= 0 && y != 7, (x as f32 * 0.5) as i32, -x)",
        "(x > y) as i32 - (x == y) as i32 + min(x, 5)",
        "x / 4 - x % 8 + y % 2 * 5 + x / 1073741824 - y / 2",
        "x % 1073741824 + y % 65536 - x / 32768",
    ];
    let uint_exprs = ["x / 4 - x % 8 + y % 2 * 5 + x / 1073741824 - y / 2"];
    let floats = [0.0, -0.0, 1.0, -1.0, 2.5, -7.5, 3e9, -3e9, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.3];
    let uints = [0.0, 1.0, 7.0, 8.0, 4294967295.0, 2147483648.0, 2147483647.0, 100001.0, 3.0, 65535.0];
    let ints = [0.0, 1.0, -1.0, 7.0, -8.0, 2147483647.0, -2147483648.0, 100000.0, 3.0, -3.0];
    for (elem, exprs, vals) in [
        (Scalar::F32, &float_exprs[..], &floats[..]),
        (Scalar::F64, &float_exprs[..], &floats[..]),
        (Scalar::I32, &int_exprs[..], &ints[..]),
        (Scalar::U32, &uint_exprs[..], &uints[..]),
    ] {
        for (r, c) in [(7usize, 9usize), (33, 35)] {
            let t = elem.name();
            let mut body = format!("    let x = X[0:{r}, 0:{c}];\n    let y = Y[0:{r}, 0:{c}];\n");
            for (k, e) in exprs.iter().enumerate() {
                let e = e.replace(" as T", &format!(" as {t}"));
                body.push_str(&format!("    O{k}[0:{r}, 0:{c}] = {e};\n"));
                body.push_str(&format!(
                "    for i in 0..{r} {{\n        for j in 0..{c} {{\n            let x = X[i, j];\n            let y = Y[i, j];\n            S{k}[i, j] = {e};\n        }}\n    }}\n"
            ));
            }
            let outs: Vec<String> = (0..exprs.len()).flat_map(|k| [format!("O{k}"), format!("S{k}")]).collect();
            let params: Vec<String> = outs.iter().map(|o| format!("{o}: mut {t}[{r}, {c}]")).collect();
            let src =
                format!("kernel k(X: {t}[{r}, {c}], Y: {t}[{r}, {c}], {}) grid(1) {{\n{body}}}\n", params.join(", "));
            let n = vals.len();
            let xs: Vec<f64> = (0..r * c).map(|k| vals[k % n]).collect();
            let ys: Vec<f64> = (0..r * c).map(|k| vals[(k / n + k * 5) % n]).collect();
            let mut args = vec![("X", arr(elem, &xs, &[r, c])), ("Y", arr(elem, &ys, &[r, c]))];
            let names: Vec<&str> = outs.iter().map(|s| s.as_str()).collect();
            for o in &names {
                args.push((o, sentinel(elem, &[r, c])));
            }
            let b = run(&src, "k", args);
            for (k, expr) in exprs.iter().enumerate() {
                let (tile, scalar) = (out(&b, &format!("O{k}")), out(&b, &format!("S{k}")));
                for (e, (g, w)) in tile.iter().zip(&scalar).enumerate() {
                    let same = (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits();
                    assert!(same, "{elem:?} `{expr}` at ({}, {}): tile {g}, scalar {w}\n{src}", xs[e], ys[e]);
                }
            }
        }
    }
}

/// `exp` of `f32` on the CPU (tilec's own, `codegen-cpu/src/expf.rs`, on tiles and scalars):
/// within one ulp of the `f64` exp for normal results on 2^20 points spanning `[-104, 89]`,
/// within a unit of the smallest subnormal below them, 1 at zero, infinity from 88.72284 on,
/// 0 at -104 and below, NaN for NaN; the scalar code gives the tile's bits.
#[test]
fn f32_exp_is_within_one_ulp_of_the_exact_value() {
    let specials = [0.0, -0.0, 1.0, -1.0, 88.72283, 88.7229, -87.33655, -103.97, -104.5, 1e30, -1e30];
    let (xs, y) = f32_function_on_cpu("exp", -104.0, 89.0, &specials);
    let tiny = f32::MIN_POSITIVE as f64;
    let mut worst = (0.0f64, 0.0f64);
    for (x, got) in xs.iter().zip(&y) {
        let want = x.exp();
        if x.is_nan() {
            assert!(got.is_nan(), "exp(NaN) = {got}");
            continue;
        }
        if want > f32::MAX as f64 * (1.0 + 2f64.powi(-25)) {
            assert_eq!(*got, f64::INFINITY, "exp({x})");
            continue;
        }
        let unit =
            if want < tiny { 2f64.powi(-149) } else { 2f64.powi((want as f32).abs().log2().floor() as i32 - 23) };
        let err = (got - want).abs() / unit;
        assert!(err <= 1.0, "exp({x}) = {got}, exact {want}: {err} ulp");
        if err > worst.0 {
            worst = (err, *x);
        }
    }
    assert_eq!((y[0], y[1]), (1.0, 1.0), "exp(0), exp(-0)");
    eprintln!("f32 exp: largest error {:.3} ulp, at {}", worst.0, worst.1);
}

/// `tanh` of `f32` on the CPU (tilec's own, `codegen-cpu/src/tanhf.rs`, on tiles and
/// scalars): within 1.5 ulp of the `f64` tanh on 2^20 points spanning `[-10, 10]` and at the
/// edges (subnormals, the switch between its two forms at 0.625, large arguments), `tanh(±0)
/// = ±0`, `±1` at infinity and from 10 on, NaN for NaN; the scalar code gives the tile's bits.
#[test]
fn f32_tanh_is_within_one_and_a_half_ulp_of_the_exact_value() {
    let below = 0.625f32.next_down() as f64;
    let specials = [0.0, -0.0, 1e-40, -1e-40, 1e-20, 0.625, -0.625, below, -below, 10.0, 44.0, 50.0, 1e30, -1e30, 1e-7];
    let (xs, y) = f32_function_on_cpu("tanh", -10.0, 10.0, &specials);
    let mut worst = (0.0f64, 0.0f64);
    for (x, got) in xs.iter().zip(&y) {
        let want = x.tanh();
        if x.is_nan() {
            assert!(got.is_nan(), "tanh(NaN) = {got}");
            continue;
        }
        let unit = 2f64.powi((want as f32).abs().log2().floor().max(-126.0) as i32 - 23);
        let err = if want == 0.0 { 0.0 } else { (got - want).abs() / unit };
        assert!(err <= 1.5, "tanh({x}) = {got}, exact {want}: {err} ulp");
        if err > worst.0 {
            worst = (err, *x);
        }
    }
    assert_eq!(y[0].to_bits(), 0f64.to_bits(), "tanh(0)");
    assert_eq!(y[1].to_bits(), (-0f64).to_bits(), "tanh(-0)");
    let n = specials.len();
    assert_eq!((y[n], y[n + 1]), (1.0, -1.0), "tanh(inf), tanh(-inf)");
    assert_eq!((y[9], y[12], y[13]), (1.0, 1.0, -1.0), "tanh(10), tanh(1e30), tanh(-1e30)");
    eprintln!("f32 tanh: largest error {:.3} ulp, at {}", worst.0, worst.1);
}

/// `sin` and `cos` of `f32` on the CPU (tilec's own, `codegen-cpu/src/sinf.rs`, on tiles and
/// scalars): within 1.5 ulp of the `f64` functions on 2^20 points spanning `[-2^20, 2^20]`
/// and 2^20 spanning `[-64, 64]`, at the `f32`s nearest to the first 1000 multiples of `pi/2`
/// and their neighbours (where the result of `sin` or `cos` is near zero: the argument
/// reduction keeps its relative accuracy), at the switch to the C library's functions beyond
/// `2^20` and far beyond it; `sin(±0) = ±0`, `cos(±0) = 1`, NaN for infinities and NaN; the
/// scalar code gives the tile's bits.
#[test]
fn f32_sin_and_cos_are_within_one_and_a_half_ulp_of_the_exact_value() {
    let mut specials =
        vec![0.0, -0.0, 1e-40, -1e-40, 1e-20, 2.4e-4, 1e-3, 0.785, 1048576.0, 1048577.0, -1048577.0, 3e6, 1e30, -1e30];
    for k in 1..1000 {
        let x = (k as f64 * std::f64::consts::FRAC_PI_2) as f32;
        specials.extend([x.next_down() as f64, x as f64, x.next_up() as f64, -(x as f64)]);
    }
    for name in ["sin", "cos"] {
        let f = |x: f64| if name == "sin" { x.sin() } else { x.cos() };
        let mut worst = (0.0f64, 0.0f64);
        for (lo, hi) in [(-1048576.0, 1048576.0), (-64.0, 64.0)] {
            let (xs, y) = f32_function_on_cpu(name, lo, hi, &specials);
            for (x, got) in xs.iter().zip(&y) {
                if !x.is_finite() {
                    assert!(got.is_nan(), "{name}({x}) = {got}");
                    continue;
                }
                let want = f(*x);
                let unit = 2f64.powi((want as f32).abs().log2().floor().max(-126.0) as i32 - 23);
                let err = if want == 0.0 { got.abs() / 2f64.powi(-149) } else { (got - want).abs() / unit };
                assert!(err <= 1.5, "{name}({x}) = {got}, exact {want}: {err} ulp");
                if err > worst.0 {
                    worst = (err, *x);
                }
            }
            let zeros = if name == "sin" { [0f64.to_bits(), (-0f64).to_bits()] } else { [1f64.to_bits(); 2] };
            assert_eq!([y[0].to_bits(), y[1].to_bits()], zeros, "{name}(0), {name}(-0)");
        }
        eprintln!("f32 {name}: largest error {:.3} ulp, at {}", worst.0, worst.1);
    }
}

/// Runs the `f32` function `name` on 2^20 points evenly spaced over `[lo, hi]` (the first
/// replaced by `specials`, then infinity, minus infinity and NaN), on a tile of 4096 per
/// program and on scalars for the first 64; asserts that the scalar code gives the tile's bits
/// and that every CPU code generator gives them (NaNs apart: LLVM and Cranelift clamp and
/// convert with different instructions). Returns the points and the tile's results.
fn f32_function_on_cpu(name: &str, lo: f64, hi: f64, specials: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = 1usize << 20;
    let mut xs: Vec<f64> = (0..n).map(|k| (lo + (hi - lo) * k as f64 / (n - 1) as f64) as f32 as f64).collect();
    xs[..specials.len()].copy_from_slice(specials);
    xs[specials.len()] = f64::INFINITY;
    xs[specials.len() + 1] = f64::NEG_INFINITY;
    xs[specials.len() + 2] = f64::NAN;
    let xs: Vec<f64> = xs.iter().map(|x| *x as f32 as f64).collect();
    let src = format!(
        "kernel k(X: f32[N], Y: mut f32[N], Z: mut f32[64]) grid(cdiv(N, 4096)) {{
        let i = program_id(0) * 4096;
        Y[i:i+4096] = {name}(X[i:i+4096]);
        if program_id(0) == 0 {{
            for j in 0..64 {{
                Z[j] = {name}(X[j]);
            }}
        }}
    }}"
    );
    let args = || -> HashMap<String, ArgValue> {
        [
            ("X".to_string(), arr(Scalar::F32, &xs, &[n])),
            ("Y".to_string(), sentinel(Scalar::F32, &[n])),
            ("Z".to_string(), sentinel(Scalar::F32, &[64])),
        ]
        .into()
    };
    let named = args();
    let b = run(&src, "k", named.iter().map(|(k, v)| (k.as_str(), v.clone())).collect());
    let (y, z) = (out(&b, "Y"), out(&b, "Z"));
    for (j, (t, s)) in y.iter().zip(&z).enumerate() {
        assert!(t.to_bits() == s.to_bits() || (t.is_nan() && s.is_nan()), "{name}({}): tile {t}, scalar {s}", xs[j]);
    }
    let set = SourceSet::with_stdlib("test.tile", &src);
    for backend in tilec_tests::cpu_backends() {
        let runner = tilec::CpuRunner::with_backend(&set, "k", &args(), &HashMap::new(), backend).expect("compiles");
        let other = out(&runner.run(args()).expect("runs").0, "Y");
        let same = other.iter().zip(&y).all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
        assert!(same, "{name} on {backend:?} differs from the run tests' backend");
    }
    (xs, y)
}
