//! Tile operations, one by one, on the CPU target against plain f64 references of
//! `tilec_tests` (never the compiler's own evaluation): small kernels load tiles from input
//! arrays, apply one operation and store the result. Partial tiles (extents 1, 15, 16, 17
//! against arrays that are smaller or larger) are covered wherever an operation meets the
//! edge of an array; f32 results are checked to about 1e-5 (relative) and f64 to about 1e-12.

use std::collections::HashMap;
use tilec::{render_diagnostics, CpuRunner, ErrorFormat, SourceSet};
use tilec_midend::{Const, Scalar};
use tilec_runtime::{random_spd, ArgValue, Bound, HostArray};
use tilec_tests::{
    cholesky_clamped_f64, matmul_f64, max_rel_err_chunks, random_triangular, transpose_f64, trsm_f64, Rng, TrsmOp,
};

const FLOATS: [Scalar; 2] = [Scalar::F32, Scalar::F64];

/// Value written to outputs before a launch, to see which elements a kernel wrote.
const SENTINEL: f64 = 12345.0;

fn tol(elem: Scalar) -> f64 {
    match elem {
        Scalar::F32 => 1e-5,
        Scalar::F64 => 1e-12,
        _ => 0.0,
    }
}

fn arr(elem: Scalar, data: &[f64], shape: &[usize]) -> ArgValue {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    ArgValue::Array(HostArray::from_f64_as(elem, data, &shape).expect("host array"))
}

/// An output array of `shape` filled with [`SENTINEL`].
fn sentinel(elem: Scalar, shape: &[usize]) -> ArgValue {
    arr(elem, &vec![SENTINEL; shape.iter().product()], shape)
}

fn float(elem: Scalar, x: f64) -> ArgValue {
    ArgValue::Scalar(Const::Float(x, elem))
}

fn int(x: i64) -> ArgValue {
    ArgValue::Scalar(Const::Int(x, Scalar::I32))
}

/// Compiles `kernel` of `src` for the dtypes of `args`, runs it once and returns the bound
/// arguments after the launch. Compile and launch errors fail the test with the source.
fn run(src: &str, kernel: &str, args: Vec<(&str, ArgValue)>) -> Bound {
    let set = SourceSet::with_stdlib("test.tile", src);
    let args: HashMap<String, ArgValue> = args.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    let runner = CpuRunner::new(&set, kernel, &args, &HashMap::new()).unwrap_or_else(|d| {
        panic!("does not compile:\n{}\n{src}", render_diagnostics(&d, &set, ErrorFormat::Human, false))
    });
    let (bound, _) = runner.run(args).unwrap_or_else(|e| panic!("launch failed: {e}\n{src}"));
    bound
}

fn out(b: &Bound, name: &str) -> Vec<f64> {
    b.array(name).expect("array output").to_f64_vec()
}

/// Element-wise check: `|got - want| <= tol * max(|want|, 1)`; NaN never passes (unless
/// both are NaN).
fn assert_close(got: &[f64], want: &[f64], tol: f64, ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || (g - w).abs() <= tol * w.abs().max(1.0);
        assert!(ok, "{ctx}: element {i}: got {g}, want {w}");
    }
}

/// Normwise check for products and solves: `max |got - want| / max |want| <= tol`.
fn assert_normwise(got: &[f64], want: &[f64], tol: f64, ctx: &str) {
    let err = max_rel_err_chunks(got, want, want.len().max(1));
    assert!(err <= tol, "{ctx}: normwise relative error {err:e} > {tol:e}");
}

fn assert_exact(got: &[f64], want: &[f64], ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g == w, "{ctx}: element {i}: got {g}, want {w}");
    }
}

/// `want` for a store of a `tr x tc` tile at `(r0, c0)` into an `m x n` array that held
/// [`SENTINEL`]: `f(i, j)` (tile coordinates) where the tile covers the array.
fn stored(m: usize, n: usize, r0: i64, c0: i64, tr: usize, tc: usize, f: impl Fn(usize, usize) -> f64) -> Vec<f64> {
    let mut w = vec![SENTINEL; m * n];
    for i in 0..tr {
        for j in 0..tc {
            let (r, c) = (r0 + i as i64, c0 + j as i64);
            if r >= 0 && c >= 0 && (r as usize) < m && (c as usize) < n {
                w[r as usize * n + c as usize] = f(i, j);
            }
        }
    }
    w
}

/// The value a zero-padded load of a tile at `(r0, c0)` from an `m x n` array sees at tile
/// position `(i, j)`.
fn padded(a: &[f64], m: usize, n: usize, r0: i64, c0: i64, i: usize, j: usize) -> Option<f64> {
    let (r, c) = (r0 + i as i64, c0 + j as i64);
    (r >= 0 && c >= 0 && (r as usize) < m && (c as usize) < n).then(|| a[r as usize * n + c as usize])
}

// ---------------------------------------------------------------------------------------
// Loads, stores, masked loads, vectors, elements.
// ---------------------------------------------------------------------------------------

/// Value loads of `tile<T, R, C>` at `(r0, c0)` (straddling every edge, or entirely outside)
/// from arrays smaller and larger than the tile: elements outside read as zero. The tile is
/// stored whole into an `R x C` output, so every element is checked.
#[test]
fn value_load_is_zero_padded_at_every_edge() {
    let src = |r: usize, c: usize| {
        format!(
            "kernel k<T: float>(A: T[M, N], O: mut T[{r}, {c}], r0: i32, c0: i32) grid(1) {{
                let t = A[r0:r0+{r}, c0:c0+{c}];
                O[0:{r}, 0:{c}] = t;
            }}"
        )
    };
    let mut rng = Rng::new(1);
    for elem in FLOATS {
        for (r, c, m, n) in [
            (16, 16, 15, 17),
            (16, 16, 16, 16),
            (16, 16, 40, 33),
            (1, 17, 3, 15),
            (17, 1, 16, 2),
            (15, 16, 17, 17),
            (1, 1, 1, 1),
        ] {
            let a = rng.vec(m * n, -1.0, 1.0);
            for (r0, c0) in
                [(0, 0), (-3, 5), (10, 10), (m as i64 - 1, n as i64 - 1), (-15, -15), (m as i64, 0), (0, -(c as i64))]
            {
                let b = run(
                    &src(r, c),
                    "k",
                    vec![
                        ("A", arr(elem, &a, &[m, n])),
                        ("O", sentinel(elem, &[r, c])),
                        ("r0", int(r0)),
                        ("c0", int(c0)),
                    ],
                );
                let want = stored(r, c, 0, 0, r, c, |i, j| padded(&a, m, n, r0, c0, i, j).unwrap_or(0.0));
                assert_exact(&out(&b, "O"), &want, &format!("{elem:?} tile {r}x{c} from {m}x{n} at ({r0}, {c0})"));
            }
        }
    }
}

/// The zero-padded `r x c` tile at `(r0, c0)` of an `m x n` array.
#[allow(clippy::too_many_arguments)]
fn tile_of(a: &[f64], m: usize, n: usize, r0: i64, c0: i64, r: usize, c: usize) -> Vec<f64> {
    let mut t = vec![0.0; r * c];
    for i in 0..r {
        for j in 0..c {
            t[i * c + j] = padded(a, m, n, r0, c0, i, j).unwrap_or(0.0);
        }
    }
    t
}

/// Stores of a whole `R x C` tile at `(r0, c0)` into `m x n` arrays: only the elements
/// inside the array are written, the others keep their values; also `O[..] += t`.
#[test]
fn store_writes_only_in_bounds_elements() {
    let mut rng = Rng::new(2);
    for elem in FLOATS {
        for (r, c, m, n) in [(16, 16, 15, 17), (16, 16, 40, 33), (1, 17, 2, 16), (17, 1, 18, 1), (15, 16, 16, 16)] {
            let s = rng.vec(r * c, -1.0, 1.0);
            let src = format!(
                "kernel k<T: float>(S: T[{r}, {c}], O: mut T[M, N], P: mut T[M, N], r0: i32, c0: i32) grid(1) {{
                    let t = S[0:{r}, 0:{c}];
                    O[r0:r0+{r}, c0:c0+{c}] = t;
                    P[r0:r0+{r}, c0:c0+{c}] += t;
                }}"
            );
            let p0 = rng.vec(m * n, -1.0, 1.0);
            for (r0, c0) in [(0, 0), (-3, 5), (m as i64 - 2, n as i64 - 3), (-20, 0), (0, n as i64)] {
                let b = run(
                    &src,
                    "k",
                    vec![
                        ("S", arr(elem, &s, &[r, c])),
                        ("O", sentinel(elem, &[m, n])),
                        ("P", arr(elem, &p0, &[m, n])),
                        ("r0", int(r0)),
                        ("c0", int(c0)),
                    ],
                );
                let ctx = format!("{elem:?} {r}x{c} into {m}x{n} at ({r0}, {c0})");
                assert_exact(&out(&b, "O"), &stored(m, n, r0, c0, r, c, |i, j| s[i * c + j]), &ctx);
                let mut want = p0.clone();
                for i in 0..r {
                    for j in 0..c {
                        let (rr, cc) = (r0 + i as i64, c0 + j as i64);
                        if rr >= 0 && cc >= 0 && (rr as usize) < m && (cc as usize) < n {
                            want[rr as usize * n + cc as usize] += s[i * c + j];
                        }
                    }
                }
                assert_close(&out(&b, "P"), &want, tol(elem), &format!("+= {ctx}"));
            }
        }
    }
}

/// `t[:] = A[..]` (and `t[:, :]`) overwrites only the in-bounds elements; the padding keeps
/// the tile's values (`full`, `eye`, or a previous load).
#[test]
fn masked_load_keeps_the_tiles_values_outside_the_array() {
    let mut rng = Rng::new(3);
    for elem in FLOATS {
        for (init, colon) in [("full(-5.0)", ":"), ("eye()", ":, :"), ("eye()", ":")] {
            let src = format!(
                "kernel k<T: float>(A: T[M, N], O: mut T[16, 16], r0: i32, c0: i32) grid(1) {{
                    let t = tile<T, 16, 16>::{init};
                    t[{colon}] = A[r0:r0+16, c0:c0+16];
                    O[0:16, 0:16] = t;
                }}"
            );
            for (m, n) in [(15, 17), (5, 5), (16, 16), (1, 1), (33, 20)] {
                let a = rng.vec(m * n, -1.0, 1.0);
                for (r0, c0) in [(0, 0), (-2, -1), (m as i64 - 3, 4), (100, 100)] {
                    let b = run(
                        &src,
                        "k",
                        vec![
                            ("A", arr(elem, &a, &[m, n])),
                            ("O", sentinel(elem, &[16, 16])),
                            ("r0", int(r0)),
                            ("c0", int(c0)),
                        ],
                    );
                    let want = stored(16, 16, 0, 0, 16, 16, |i, j| {
                        padded(&a, m, n, r0, c0, i, j).unwrap_or(if init == "eye()" {
                            if i == j {
                                1.0
                            } else {
                                0.0
                            }
                        } else {
                            -5.0
                        })
                    });
                    assert_exact(&out(&b, "O"), &want, &format!("{elem:?} {init} {m}x{n} at ({r0}, {c0})"));
                }
            }
        }
        // A masked load over a previous value load: the new in-bounds values replace the
        // old ones, the rest is kept.
        let src = "kernel k<T: float>(A: T[M, N], B: T[P, Q], O: mut T[16, 16]) grid(1) {
            let t = A[0:16, 0:16];
            t[:] = B[0:16, 0:16];
            O[0:16, 0:16] = t;
        }";
        let a = rng.vec(16 * 16, -1.0, 1.0);
        let bb = rng.vec(7 * 9, -1.0, 1.0);
        let b = run(
            src,
            "k",
            vec![("A", arr(elem, &a, &[16, 16])), ("B", arr(elem, &bb, &[7, 9])), ("O", sentinel(elem, &[16, 16]))],
        );
        let want = stored(16, 16, 0, 0, 16, 16, |i, j| if i < 7 && j < 9 { bb[i * 9 + j] } else { a[i * 16 + j] });
        assert_exact(&out(&b, "O"), &want, &format!("{elem:?} masked load over a load"));
    }
}

/// Column vectors `A[r0:r0+16, c]`, row vectors `A[r, c0:c0+16]` and 1-D slices, loaded
/// (zero-padded; a single index out of range gives all zeros) and stored (in bounds only).
#[test]
fn vector_slices_load_and_store_at_the_edges() {
    let mut rng = Rng::new(4);
    let src = "kernel k<T: float>(A: T[M, N], X: T[L], C: mut T[16], R: mut T[17], V: mut T[1],
                                  OA: mut T[M, N], OX: mut T[L], r0: i32, c: i32) grid(1) {
        let col = A[r0:r0+16, c];
        let row = A[c, r0:r0+17];
        let v = X[r0:r0+1];
        C[0:16] = col;
        R[0:17] = row;
        V[0:1] = v;
        OA[r0:r0+16, c] = col * 2.0;
        OA[c, r0:r0+17] = row * 3.0;
        OX[r0:r0+16] = X[r0:r0+16] + 1.0;
    }";
    for elem in FLOATS {
        let (m, n, l) = (15, 17, 15);
        let a = rng.vec(m * n, -1.0, 1.0);
        let x = rng.vec(l, -1.0, 1.0);
        for (r0, c) in [(0, 0), (-4, 3), (3, 14), (1, 16), (0, -1), (0, 17), (14, 5), (-20, 2)] {
            let b = run(
                src,
                "k",
                vec![
                    ("A", arr(elem, &a, &[m, n])),
                    ("X", arr(elem, &x, &[l])),
                    ("C", sentinel(elem, &[16])),
                    ("R", sentinel(elem, &[17])),
                    ("V", sentinel(elem, &[1])),
                    ("OA", sentinel(elem, &[m, n])),
                    ("OX", sentinel(elem, &[l])),
                    ("r0", int(r0)),
                    ("c", int(c)),
                ],
            );
            let ctx = format!("{elem:?} r0={r0} c={c}");
            let col: Vec<f64> = (0..16).map(|i| padded(&a, m, n, r0 + i, c, 0, 0).unwrap_or(0.0)).collect();
            let row: Vec<f64> = (0..17).map(|j| padded(&a, m, n, c, r0 + j, 0, 0).unwrap_or(0.0)).collect();
            assert_exact(&out(&b, "C"), &col, &format!("column {ctx}"));
            assert_exact(&out(&b, "R"), &row, &format!("row {ctx}"));
            let v = padded(&x, 1, l, 0, r0, 0, 0).unwrap_or(0.0);
            assert_exact(&out(&b, "V"), &[v], &format!("1-D {ctx}"));
            let mut oa = stored(m, n, r0, c, 16, 1, |i, _| col[i] * 2.0);
            for j in 0..17 {
                if padded(&a, m, n, c, r0 + j as i64, 0, 0).is_some() {
                    oa[c as usize * n + (r0 + j as i64) as usize] = row[j] * 3.0;
                }
            }
            assert_close(&out(&b, "OA"), &oa, tol(elem), &format!("vector stores {ctx}"));
            let ox = stored(1, l, 0, r0, 1, 16, |_, j| padded(&x, 1, l, 0, r0, 0, j).unwrap_or(0.0) + 1.0);
            assert_close(&out(&b, "OX"), &ox, tol(elem), &format!("1-D store {ctx}"));
        }
    }
}

/// Scalar element reads (0 out of range) and writes (skipped out of range), compound
/// element updates, and 3-D arrays with a single index in any position.
#[test]
fn array_elements_and_rank_3_accesses() {
    let mut rng = Rng::new(5);
    let src = "kernel k<T: float>(A: T[M, N], Z: T[B, M, N], O: mut T[M, N], S: mut T[4], T3: mut T[B, 4, 4], i: i32, j: i32, b: i32) grid(1) {
        S[0] = A[i, j];
        S[1] = A[i, j] + 1.0;
        S[2] = Z[b, i, j];
        O[i, j] = 7.0;
        O[j, i] += 0.5;
        let t = Z[b, 0:4, 0:4];
        T3[b, 0:4, 0:4] = t * 2.0;
        let u = Z[0:4, b, 0:4];
        S[3] = sum(u);
    }";
    for elem in FLOATS {
        let (m, n, bs) = (5, 6, 3);
        let a = rng.vec(m * n, -1.0, 1.0);
        let z = rng.vec(bs * m * n, -1.0, 1.0);
        let o0 = rng.vec(m * n, -1.0, 1.0);
        for (i, j, b3) in [(0, 0, 0), (4, 5, 2), (2, 3, 1), (-1, 2, 0), (5, 0, 3), (3, 6, -1), (1, 1, 4)] {
            let b = run(
                src,
                "k",
                vec![
                    ("A", arr(elem, &a, &[m, n])),
                    ("Z", arr(elem, &z, &[bs, m, n])),
                    ("O", arr(elem, &o0, &[m, n])),
                    ("S", sentinel(elem, &[4])),
                    ("T3", sentinel(elem, &[bs, 4, 4])),
                    ("i", int(i)),
                    ("j", int(j)),
                    ("b", int(b3)),
                ],
            );
            let ctx = format!("{elem:?} ({i}, {j}, {b3})");
            let inb = |i: i64, j: i64| i >= 0 && j >= 0 && (i as usize) < m && (j as usize) < n;
            let aij = if inb(i, j) { a[i as usize * n + j as usize] } else { 0.0 };
            let zij = if inb(i, j) && (0..bs as i64).contains(&b3) {
                z[b3 as usize * m * n + i as usize * n + j as usize]
            } else {
                0.0
            };
            let mut u = 0.0;
            for r in 0..4 {
                for c in 0..4 {
                    if r < bs && (0..m as i64).contains(&b3) {
                        u += z[r * m * n + b3 as usize * n + c];
                    }
                }
            }
            let s = out(&b, "S");
            assert_exact(&[s[0], s[2]], &[aij, zij], &ctx);
            assert_close(&s[1..2], &[aij + 1.0], tol(elem), &ctx);
            assert_close(&s[3..], &[u], tol(elem), &format!("middle index {ctx}"));
            let mut o = o0.clone();
            if inb(i, j) {
                o[i as usize * n + j as usize] = 7.0;
            }
            if inb(j, i) {
                o[j as usize * n + i as usize] += 0.5;
            }
            assert_close(&out(&b, "O"), &o, tol(elem), &format!("element stores {ctx}"));
            let mut t3 = vec![SENTINEL; bs * 16];
            if (0..bs as i64).contains(&b3) {
                for r in 0..4 {
                    for c in 0..4 {
                        t3[b3 as usize * 16 + r * 4 + c] = z[b3 as usize * m * n + r * n + c] * 2.0;
                    }
                }
            }
            assert_exact(&out(&b, "T3"), &t3, &format!("rank-3 tile {ctx}"));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Constructors, element-wise operations, reductions.
// ---------------------------------------------------------------------------------------

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

type Binary = fn(f64, f64, f64) -> f64;

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
/// `t -= outer(u, v)` of the factorizations.
#[test]
fn transpose_and_outer() {
    let mut rng = Rng::new(12);
    for elem in FLOATS {
        for (r, c) in [(16, 16), (15, 17), (1, 17), (17, 1)] {
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
        for (n, t) in [(1, 1), (15, 15), (16, 16), (17, 17), (5, 16), (15, 16), (1, 16), (32, 32)] {
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
                    let mut a = random_triangular(&mut rng, n, op.lower, 1e3);
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

/// `map(f, t)` with user `fn`s: generic and concrete, calling math functions and other
/// `fn`s, on full and partial tiles, vectors, integer tiles, and a `fn` that changes the
/// element type.
#[test]
fn map_applies_a_user_fn_to_every_element() {
    let fns = "
        fn sq1<T>(x: T) -> T { x * x + 1.0 }
        fn sigmoid<T>(x: T) -> T { let y = exp(x); y / (1.0 + y) }
        fn relu<T>(x: T) -> T { max(x, 0.0) }
        fn both<T>(x: T) -> T { sq1(relu(x)) - sigmoid(x) }
    ";
    type Case = (&'static str, fn(f64) -> f64);
    let cases: &[Case] = &[
        ("sq1", |x| x * x + 1.0),
        ("sigmoid", |x| x.exp() / (1.0 + x.exp())),
        ("relu", |x| x.max(0.0)),
        ("both", |x| {
            let r = x.max(0.0);
            r * r + 1.0 - x.exp() / (1.0 + x.exp())
        }),
    ];
    let mut rng = Rng::new(19);
    for elem in FLOATS {
        for (r, c, m, n) in [(16, 16, 16, 16), (16, 16, 15, 17), (1, 17, 1, 17), (17, 1, 17, 1)] {
            let mut body = String::new();
            for (k, (f, _)) in cases.iter().enumerate() {
                body +=
                    &format!("    O[{k}, 0:{r}, 0:{c}] = map({f}, a);\n    V[{k}, 0:{r}] = map({f}, A[0:{r}, 0]);\n");
            }
            let src = format!(
                "{fns}
                kernel k<T: float>(A: T[M, N], O: mut T[4, M, N], V: mut T[4, M]) grid(1) {{
                    let a = A[0:{r}, 0:{c}];
                {body}}}"
            );
            let a = rng.vec(m * n, -2.0, 2.0);
            let b = run(
                &src,
                "k",
                vec![("A", arr(elem, &a, &[m, n])), ("O", sentinel(elem, &[4, m, n])), ("V", sentinel(elem, &[4, m]))],
            );
            let (o, v) = (out(&b, "O"), out(&b, "V"));
            for (k, (name, f)) in cases.iter().enumerate() {
                let want = stored(m, n, 0, 0, r, c, |i, j| f(a[i * n + j]));
                let ctx = format!("{elem:?} map({name}) {r}x{c} on {m}x{n}");
                assert_close(&o[k * m * n..(k + 1) * m * n], &want, tol(elem), &ctx);
                let wv = stored(1, m, 0, 0, 1, r, |_, i| f(a[i * n]));
                assert_close(&v[k * m..(k + 1) * m], &wv, tol(elem), &format!("{ctx} (vector)"));
            }
        }
    }
    // Concrete types: i32 -> i32 and i32 -> f64.
    let src = "
        fn twice(x: i32) -> i32 { 2 * x + 1 }
        fn half(x: i32) -> f64 { (x as f64) / 2.0 }
        kernel k(A: i32[M, N], O: mut i32[M, N], H: mut f64[M, N]) grid(1) {
            let a = A[0:16, 0:16];
            O[0:16, 0:16] = map(twice, a);
            H[0:16, 0:16] = map(half, a);
        }";
    let a: Vec<f64> = (0..15 * 17).map(|_| rng.int(-100, 100) as f64).collect();
    let b = run(
        src,
        "k",
        vec![
            ("A", arr(Scalar::I32, &a, &[15, 17])),
            ("O", sentinel(Scalar::I32, &[15, 17])),
            ("H", sentinel(Scalar::F64, &[15, 17])),
        ],
    );
    assert_exact(&out(&b, "O"), &stored(15, 17, 0, 0, 16, 16, |i, j| 2.0 * a[i * 17 + j] + 1.0), "map i32 -> i32");
    assert_exact(&out(&b, "H"), &stored(15, 17, 0, 0, 16, 16, |i, j| a[i * 17 + j] / 2.0), "map i32 -> f64");
}

/// `atomic_add` from many programs into the same elements: whole tiles (straddling the
/// array's edge), column vectors, scalars (a counter) and out-of-range targets; float and
/// integer. The values are small multiples of 1/8, so every order of addition gives the
/// exact sum.
#[test]
fn atomic_add_from_many_programs_sums_exactly() {
    let src = "kernel k<T>(A: T[P, 16, 16], O: mut T[M, N], C: mut T[M], S: mut T[2], one: T) grid(P) {
        let p = program_id(0);
        atomic_add(O[0:16, 0:16], A[p, 0:16, 0:16]);
        atomic_add(O[-3:-3+16, 9:9+16], A[p, 0:16, 0:16] * 2.0);
        atomic_add(C[0:16], A[p, 0:16, 3]);
        atomic_add(S[0], one);
        atomic_add(S[1], A[p, 1, 1]);
        atomic_add(S[5], one);
        atomic_add(O[p, 100], one);
    }";
    let int_src = src.replace("kernel k<T>", "kernel k<T: int>").replace("* 2.0", "* 2");
    let mut rng = Rng::new(20);
    let (p, m, n) = (256, 15, 17);
    for elem in [Scalar::F32, Scalar::F64, Scalar::I32] {
        let a: Vec<f64> = (0..p * 256)
            .map(|_| {
                let k = rng.int(-32, 33) as f64;
                if elem == Scalar::I32 {
                    k
                } else {
                    k / 8.0
                }
            })
            .collect();
        let one = match elem {
            Scalar::I32 => ArgValue::Scalar(Const::Int(1, Scalar::I32)),
            e => float(e, 1.0),
        };
        let b = run(
            if elem == Scalar::I32 { &int_src } else { src },
            "k",
            vec![
                ("A", arr(elem, &a, &[p, 16, 16])),
                ("O", arr(elem, &vec![0.0; m * n], &[m, n])),
                ("C", arr(elem, &vec![0.0; m], &[m])),
                ("S", arr(elem, &[0.0, 0.0], &[2])),
                ("one", one),
            ],
        );
        let mut o = vec![0.0; m * n];
        let mut c = vec![0.0; m];
        let mut s1 = 0.0;
        for q in 0..p {
            let t = &a[q * 256..(q + 1) * 256];
            for i in 0..16 {
                for j in 0..16 {
                    if i < m && j < n {
                        o[i * n + j] += t[i * 16 + j];
                    }
                    let (r, cc) = (i as i64 - 3, j + 9);
                    if r >= 0 && cc < n {
                        o[r as usize * n + cc] += 2.0 * t[i * 16 + j];
                    }
                }
                if i < m {
                    c[i] += t[i * 16 + 3];
                }
            }
            s1 += t[17];
        }
        assert_exact(&out(&b, "O"), &o, &format!("{elem:?} tiles"));
        assert_exact(&out(&b, "C"), &c, &format!("{elem:?} column vectors"));
        assert_exact(&out(&b, "S"), &[p as f64, s1], &format!("{elem:?} scalars"));
    }
}

/// Shared arrays: zero-initialised, written with tiles, vectors and elements, read back
/// (also transposed, element by element) after `sync()`, with partial accesses at their
/// edges; each program has its own.
#[test]
fn shared_arrays_round_trip_with_sync() {
    let src = "kernel k<T: float>(A: T[P, 16, 16], O: mut T[P, 6, 16, 16], V: mut T[P, 32]) grid(P) {
        let p = program_id(0);
        let s: shared<T, 16, 16> = shared<T, 16, 16>::zeros();
        O[p, 0, 0:16, 0:16] = s[0:16, 0:16];
        s[0:16, 0:16] = A[p, 0:16, 0:16];
        sync();
        O[p, 1, 0:16, 0:16] = s[0:16, 0:16];
        let t = tile<T, 16, 16>::zeros();
        for i in 0..16 {
            for j in 0..16 {
                t[i, j] = s[j, i];
            }
        }
        O[p, 2, 0:16, 0:16] = t;
        let u = s[4:4+16, -2:-2+16];
        O[p, 3, 0:16, 0:16] = u;
        let w = tile<T, 16, 16>::full(-1.0);
        w[:] = s[-5:-5+16, 3:3+16];
        O[p, 4, 0:16, 0:16] = w;
        s[10:10+16, 10:10+16] = tile<T, 16, 16>::full(9.0);
        s[0, 0] = 5.0;
        s[3, 0:16] = s[0:16, 2];
        s[20, 1] = 4.0;
        sync();
        O[p, 5, 0:16, 0:16] = s[0:16, 0:16];
        let v = shared<T, 32>::zeros();
        v[0:16] = A[p, 0, 0:16];
        v[16:32] = A[p, 1, 0:16] * 2.0;
        sync();
        V[p, 0:32] = v[0:32];
    }";
    let mut rng = Rng::new(21);
    let p = 8;
    for elem in FLOATS {
        let a = rng.vec(p * 256, -1.0, 1.0);
        let b = run(
            src,
            "k",
            vec![
                ("A", arr(elem, &a, &[p, 16, 16])),
                ("O", sentinel(elem, &[p, 6, 16, 16])),
                ("V", sentinel(elem, &[p, 32])),
            ],
        );
        let (o, v) = (out(&b, "O"), out(&b, "V"));
        for q in 0..p {
            let s = &a[q * 256..(q + 1) * 256];
            let got = |k: usize| &o[(q * 6 + k) * 256..(q * 6 + k + 1) * 256];
            let ctx = format!("{elem:?} program {q}");
            assert_exact(got(0), &[0.0; 256], &format!("{ctx}: zeros"));
            assert_exact(got(1), s, &format!("{ctx}: tile round trip"));
            assert_exact(got(2), &transpose_f64(s, 16, 16), &format!("{ctx}: element reads"));
            assert_exact(got(3), &tile_of(s, 16, 16, 4, -2, 16, 16), &format!("{ctx}: padded read"));
            let w: Vec<f64> = (0..256).map(|e| padded(s, 16, 16, -5, 3, e / 16, e % 16).unwrap_or(-1.0)).collect();
            assert_exact(got(4), &w, &format!("{ctx}: masked read"));
            let mut s2 = s.to_vec();
            for i in 10..16 {
                for j in 10..16 {
                    s2[i * 16 + j] = 9.0;
                }
            }
            s2[0] = 5.0;
            let col: Vec<f64> = (0..16).map(|i| s2[i * 16 + 2]).collect();
            s2[48..64].copy_from_slice(&col);
            assert_exact(got(5), &s2, &format!("{ctx}: partial and element writes"));
            let mut vw: Vec<f64> = s[0..16].to_vec();
            vw.extend(s[16..32].iter().map(|x| 2.0 * x));
            assert_exact(&v[q * 32..(q + 1) * 32], &vw, &format!("{ctx}: 1-D shared"));
        }
    }
}

/// Tile elements `t[i, j]` and `v[i]`: reads and writes with constant and run-time indices;
/// out-of-range run-time reads give 0 and writes do nothing; compound element updates.
#[test]
fn tile_element_reads_and_writes() {
    let src = "kernel k<T: float>(A: T[16, 16], O: mut T[16, 16], V: mut T[17], S: mut T[6], i: i32, j: i32) grid(1) {
        let a = A[0:16, 0:16];
        let t = tile<T, 16, 16>::zeros();
        for r in 0..16 {
            for c in 0..16 {
                t[c, r] = a[r, c] * 2.0;
            }
        }
        t[0, 15] = 7.0;
        t[i, j] += 1.0;
        t[i, j] = t[i, j] - 0.5;
        O[0:16, 0:16] = t;
        let v = tile<T, 17>::full(1.0);
        v[16] = a[3, 4];
        v[i] = 2.0;
        v[j] *= 3.0;
        V[0:17] = v;
        S[0] = a[i, j];
        S[1] = a[15, 0];
        S[2] = v[i];
        S[3] = a[j, i];
        S[4] = a[i, 0] + a[0, j];
        S[5] = v[j];
    }";
    let mut rng = Rng::new(22);
    for elem in FLOATS {
        let a = rng.vec(256, -1.0, 1.0);
        for (i, j) in [(0, 0), (3, 9), (15, 15), (-1, 4), (16, 2), (5, 16), (7, 1000)] {
            let b = run(
                src,
                "k",
                vec![
                    ("A", arr(elem, &a, &[16, 16])),
                    ("O", sentinel(elem, &[16, 16])),
                    ("V", sentinel(elem, &[17])),
                    ("S", sentinel(elem, &[6])),
                    ("i", int(i)),
                    ("j", int(j)),
                ],
            );
            let inr = |x: i64, n: i64| (0..n).contains(&x);
            let at = |x: i64, y: i64| {
                if inr(x, 16) && inr(y, 16) {
                    a[x as usize * 16 + y as usize]
                } else {
                    0.0
                }
            };
            let mut t = transpose_f64(&a, 16, 16);
            t.iter_mut().for_each(|x| *x *= 2.0);
            t[15] = 7.0;
            if inr(i, 16) && inr(j, 16) {
                t[i as usize * 16 + j as usize] += 0.5;
            }
            let mut v = vec![1.0; 17];
            v[16] = a[3 * 16 + 4];
            if inr(i, 17) {
                v[i as usize] = 2.0;
            }
            if inr(j, 17) {
                v[j as usize] *= 3.0;
            }
            let ctx = format!("{elem:?} ({i}, {j})");
            assert_close(&out(&b, "O"), &t, tol(elem), &ctx);
            assert_exact(&out(&b, "V"), &v, &ctx);
            let vi = if inr(i, 17) { v[i as usize] } else { 0.0 };
            let vj = if inr(j, 17) { v[j as usize] } else { 0.0 };
            let s = [at(i, j), a[15 * 16], vi, at(j, i), at(i, 0) + at(0, j), vj];
            assert_close(&out(&b, "S"), &s, tol(elem), &ctx);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Tiles through control flow, scalars, const parameters.
// ---------------------------------------------------------------------------------------

/// Tiles carried through `for ... step`, `while`, `if`/`else` (assigned in one branch or
/// both) and an early `return`.
#[test]
fn tiles_through_loops_branches_and_return() {
    let src = "kernel k<T: float>(A: T[P, 8, 8], O: mut T[P, 8, 8], n: i32) grid(P) {
        let p = program_id(0);
        let a = A[p, 0:8, 0:8];
        let acc = tile<T, 8, 8>::zeros();
        for i in 1..n step 3 {
            acc += a * (i as T);
        }
        let k = 0;
        while k < p {
            acc = acc + 1.0;
            k += 1;
        }
        let keep = acc;
        if p % 2 == 0 {
            acc = acc * 2.0;
        }
        if p % 3 == 0 {
            acc = -acc;
        } else if p % 3 == 1 {
            acc = acc - keep;
        } else {
            acc = acc + keep;
        }
        if p == 5 {
            return;
        }
        O[p, 0:8, 0:8] = acc;
    }";
    let mut rng = Rng::new(23);
    let (p, n) = (7, 11);
    for elem in FLOATS {
        let a = rng.vec(p * 64, -1.0, 1.0);
        let b = run(src, "k", vec![("A", arr(elem, &a, &[p, 8, 8])), ("O", sentinel(elem, &[p, 8, 8])), ("n", int(n))]);
        let o = out(&b, "O");
        let isum: f64 = (1..n).step_by(3).map(|i| i as f64).sum();
        for q in 0..p {
            let want: Vec<f64> = a[q * 64..(q + 1) * 64]
                .iter()
                .map(|&x| {
                    if q == 5 {
                        return SENTINEL;
                    }
                    let keep = x * isum + q as f64;
                    let acc = if q % 2 == 0 { keep * 2.0 } else { keep };
                    match q % 3 {
                        0 => -acc,
                        1 => acc - keep,
                        _ => acc + keep,
                    }
                })
                .collect();
            assert_close(&o[q * 64..(q + 1) * 64], &want, tol(elem), &format!("{elem:?} program {q}"));
        }
    }
}

/// Scalar operations used around tiles: `cdiv`, `fma`, casts, integer division conventions,
/// `min`/`max`, math functions, comparisons.
#[test]
fn scalar_operations() {
    let src = "kernel k(X: f64[4], O: mut f64[16], I: mut i32[8], x: f64, y: f32, n: i32) grid(1) {
        O[0] = fma(x, X[1], X[2]);
        let fy: f32 = fma(y, 2.0, 1.0);
        O[1] = fy as f64;
        O[2] = (n as f64) / 4.0;
        O[3] = (x as f32) as f64;
        O[4] = sqrt(X[0]) + exp(X[1]) + log(X[0]) + sin(x) + cos(x) + tanh(x);
        O[5] = min(x, X[1]) + max(x, X[2]);
        O[6] = abs(-x);
        O[7] = if_gt(x, X[3]);
        O[8] = x % 0.75;
        O[9] = (n as i64) as f64 * 1.5;
        I[0] = cdiv(n, 4);
        I[1] = n / 4;
        I[2] = -n / 4;
        I[3] = -n % 4;
        I[4] = n / 0;
        I[5] = (x * 10.0) as i32;
        I[6] = (-x * 10.0) as i32;
        I[7] = max(n, 3) - min(n, 3);
    }
    fn if_gt(a: f64, b: f64) -> f64 {
        let r: f64 = 0.0;
        if a > b { r = 1.0; } else { r = -1.0; }
        r
    }";
    let xs = [2.0, 0.5, -0.25, 0.1];
    let (x, y, n) = (0.7, 1.5f32, 13);
    let b = run(
        src,
        "k",
        vec![
            ("X", arr(Scalar::F64, &xs, &[4])),
            ("O", sentinel(Scalar::F64, &[16])),
            ("I", sentinel(Scalar::I32, &[8])),
            ("x", float(Scalar::F64, x)),
            ("y", ArgValue::Scalar(Const::Float(y as f64, Scalar::F32))),
            ("n", int(n)),
        ],
    );
    let o = out(&b, "O");
    let want = [
        x.mul_add(xs[1], xs[2]),
        y.mul_add(2.0, 1.0) as f64,
        n as f64 / 4.0,
        x as f32 as f64,
        xs[0].sqrt() + xs[1].exp() + xs[0].ln() + x.sin() + x.cos() + x.tanh(),
        x.min(xs[1]) + x.max(xs[2]),
        x,
        1.0,
        x % 0.75,
        n as f64 * 1.5,
    ];
    assert_close(&o[..10], &want, 1e-15, "f64 scalars");
    assert_exact(&o[10..], &[SENTINEL; 6], "untouched");
    assert_exact(&out(&b, "I"), &[4.0, 3.0, -3.0, -1.0, 0.0, 7.0, -7.0, 10.0], "i32 scalars");
}

/// Kernel const parameters (`const R: i32 = 16`) set through `CpuRunner::new(.., fixed)`
/// size the tiles; the default applies when none is given.
#[test]
fn const_parameters_size_the_tiles() {
    use tilec_frontend::GenericArg;
    let src = "kernel k<T: float, const R: i32 = 16>(A: T[M, N], O: mut T[M, N]) grid(cdiv(M, R), cdiv(N, R)) {
        let i0 = program_id(0) * R;
        let j0 = program_id(1) * R;
        let t = A[i0:i0+R, j0:j0+R];
        O[i0:i0+R, j0:j0+R] = t * 2.0 + (R as T);
    }";
    let set = SourceSet::with_stdlib("test.tile", src);
    let mut rng = Rng::new(24);
    for elem in FLOATS {
        let (m, n) = (37, 21);
        let a = rng.vec(m * n, -1.0, 1.0);
        for r in [None, Some(1), Some(4), Some(17), Some(64)] {
            let mut args = HashMap::new();
            args.insert("A".to_string(), arr(elem, &a, &[m, n]));
            args.insert("O".to_string(), sentinel(elem, &[m, n]));
            let mut fixed = HashMap::new();
            if let Some(r) = r {
                fixed.insert("R".to_string(), GenericArg::Const(r));
            }
            let runner = CpuRunner::new(&set, "k", &args, &fixed).expect("compiles");
            let (b, launch) = runner.run(args).expect("runs");
            let rr = r.unwrap_or(16) as usize;
            assert_eq!(launch.grid, [m.div_ceil(rr) as i64, n.div_ceil(rr) as i64, 1]);
            let want: Vec<f64> = a.iter().map(|x| x * 2.0 + rr as f64).collect();
            assert_close(&out(&b, "O"), &want, tol(elem), &format!("{elem:?} R={rr}"));
        }
    }
}

/// A `fn` const parameter takes its default when no argument type fixes it, and the value
/// inferred from a tile extent otherwise; a `const` item's integer value is converted to its
/// declared float type; uncalled generic `fn`s are checked without false errors.
#[test]
fn fn_const_parameter_defaults() {
    // `thrice` is only called from `unused`, which nothing calls and is declared after it: both
    // check (as `thrice__f64`); a literal for a bounded, not yet inferred `T` takes the bound's
    // first type (`sq(3)`: f32).
    let src = "const BIAS: f32 = 2;
    fn scaled<const S: i32 = 4>(x: f32) -> f32 { x * (S as f32) }
    fn count<const S: i32 = 4>(t: tile<f32, S>) -> f32 { sum(t) + (S as f32) }
    fn thrice<T: float>(x: T) -> f64 { let y: f64 = x * 3.0; y }
    fn unused(x: f64) -> f64 { thrice(x) }
    fn sq<T: float>(x: T) -> T { x * x }
    kernel k(A: f32[N], O: mut f32[4]) grid(1) {
        O[0] = scaled(A[0]) + BIAS;
        O[1] = count(A[0:8]);
        O[2] = scaled(A[1]);
        O[3] = sq(3);
    }";
    let a: Vec<f64> = (0..8).map(|i| i as f64 * 0.5 + 1.0).collect();
    let b = run(src, "k", vec![("A", arr(Scalar::F32, &a, &[8])), ("O", sentinel(Scalar::F32, &[4]))]);
    let want = [a[0] * 4.0 + 2.0, a.iter().sum::<f64>() + 8.0, a[1] * 4.0, 9.0];
    assert_close(&out(&b, "O"), &want, 1e-6, "fn const defaults");
}

/// A scalar added to a matrix product, on either side, broadcasts (it is not fused into the
/// product's accumulator).
#[test]
fn scalar_plus_matmul_broadcasts() {
    let src = "kernel k<T: float>(A: T[5, 3], B: T[3, 4], O: mut T[2, 5, 4]) grid(1) {
        let a = A[0:5, 0:3];
        let b = B[0:3, 0:4];
        O[0, 0:5, 0:4] = 1.5 + a @ b;
        O[1, 0:5, 0:4] = a @ b + 2.0;
    }";
    let mut rng = Rng::new(26);
    for elem in FLOATS {
        let (a, bv) = (rng.vec(15, -1.0, 1.0), rng.vec(12, -1.0, 1.0));
        let b = run(
            src,
            "k",
            vec![("A", arr(elem, &a, &[5, 3])), ("B", arr(elem, &bv, &[3, 4])), ("O", sentinel(elem, &[2, 5, 4]))],
        );
        let p = matmul_f64(5, 3, 4, &a, &bv);
        let mut want: Vec<f64> = p.iter().map(|x| x + 1.5).collect();
        want.extend(p.iter().map(|x| x + 2.0));
        assert_close(&out(&b, "O"), &want, tol(elem), &format!("{elem:?}"));
    }
}

/// A sweep of small matmul shapes around the register blocking of the CPU micro-kernel, with
/// the plain and the accumulate form.
#[test]
fn matmul_shape_sweep() {
    let mut rng = Rng::new(25);
    let dims = [1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 31, 33];
    for elem in FLOATS {
        for (idx, &mm) in dims.iter().enumerate() {
            for &nn in &dims {
                let kk = dims[(idx * 5 + nn) % dims.len()];
                let src = format!(
                    "kernel k<T: float>(A: T[{mm}, {kk}], B: T[{kk}, {nn}], O: mut T[2, {mm}, {nn}]) grid(1) {{
                        let a = A[0:{mm}, 0:{kk}];
                        let b = B[0:{kk}, 0:{nn}];
                        O[0, 0:{mm}, 0:{nn}] = a @ b;
                        let acc = tile<T, {mm}, {nn}>::full(1.0);
                        acc += a @ b;
                        O[1, 0:{mm}, 0:{nn}] = acc;
                    }}"
                );
                let a = rng.vec(mm * kk, -1.0, 1.0);
                let bv = rng.vec(kk * nn, -1.0, 1.0);
                let bo = run(
                    &src,
                    "k",
                    vec![
                        ("A", arr(elem, &a, &[mm, kk])),
                        ("B", arr(elem, &bv, &[kk, nn])),
                        ("O", sentinel(elem, &[2, mm, nn])),
                    ],
                );
                let p = matmul_f64(mm, kk, nn, &a, &bv);
                let o = out(&bo, "O");
                let ctx = format!("{elem:?} {mm}x{kk} @ {kk}x{nn}");
                assert_normwise(&o[..mm * nn], &p, tol(elem), &ctx);
                let p1: Vec<f64> = p.iter().map(|x| x + 1.0).collect();
                assert_normwise(&o[mm * nn..], &p1, tol(elem), &format!("{ctx} (accumulate)"));
            }
        }
    }
}

/// The largest tiles: 128 x 128 (16384 elements) products, a 64 x 256 by 256 x 64 one and
/// a long dot product.
#[test]
fn matmul_of_the_largest_tiles() {
    let mut rng = Rng::new(26);
    for elem in FLOATS {
        for (mm, kk, nn) in [(128, 128, 128), (64, 256, 64), (1, 1024, 1)] {
            let src = format!(
                "kernel k<T: float>(A: T[{mm}, {kk}], B: T[{kk}, {nn}], O: mut T[{mm}, {nn}]) grid(1) {{
                    let acc = tile<T, {mm}, {nn}>::zeros();
                    acc += A[0:{mm}, 0:{kk}] @ B[0:{kk}, 0:{nn}];
                    O[0:{mm}, 0:{nn}] = acc;
                }}"
            );
            let a = rng.vec(mm * kk, -1.0, 1.0);
            let bv = rng.vec(kk * nn, -1.0, 1.0);
            let bo = run(
                &src,
                "k",
                vec![
                    ("A", arr(elem, &a, &[mm, kk])),
                    ("B", arr(elem, &bv, &[kk, nn])),
                    ("O", sentinel(elem, &[mm, nn])),
                ],
            );
            assert_normwise(
                &out(&bo, "O"),
                &matmul_f64(mm, kk, nn, &a, &bv),
                tol(elem),
                &format!("{elem:?} {mm}x{kk} @ {kk}x{nn}"),
            );
        }
    }
}

/// Tiles are values: operations whose result overwrites one of their operands (`t = t @ t`,
/// `acc += acc @ b`, `t = transpose(t)`, `t -= outer(..t..)`), and copies taken before an
/// in-place update (`let u = t;` then `t.cholesky_(..)`, `t[:] = ..`, `t[i, j] = ..`, a
/// solve) keep the old value.
#[test]
fn tiles_are_values_under_aliasing_and_in_place_updates() {
    let src = "kernel k<T: float>(A: T[16, 16], B: T[16, 16], S: T[16, 16], O: mut T[12, 16, 16]) grid(1) {
        let a = A[0:16, 0:16];
        let b = B[0:16, 0:16];
        let t = a;
        t = t @ t;
        O[0, 0:16, 0:16] = t;
        let acc = a;
        acc += acc @ b;
        O[1, 0:16, 0:16] = acc;
        let acc2 = b;
        acc2 -= a @ acc2;
        O[2, 0:16, 0:16] = acc2;
        let tt = a;
        tt = transpose(tt);
        O[3, 0:16, 0:16] = tt;
        let r = a;
        r -= outer(sum(r, 1), sum(r, 0));
        O[4, 0:16, 0:16] = r;
        let s = S[0:16, 0:16];
        let u = s;
        s.cholesky_(1e-6);
        O[5, 0:16, 0:16] = u;
        O[6, 0:16, 0:16] = s;
        let v = a;
        a[:] = B[0:16, 0:16];
        a[3, 4] = 100.0;
        O[7, 0:16, 0:16] = v;
        O[8, 0:16, 0:16] = a;
        let x = b;
        let y = x;
        s.solve_left_lower_(x);
        O[9, 0:16, 0:16] = y;
        O[10, 0:16, 0:16] = x;
        let w = v;
        w += v @ transpose(v);
        O[11, 0:16, 0:16] = w;
    }";
    let mut rng = Rng::new(27);
    for elem in FLOATS {
        let a = rng.vec(256, -1.0, 1.0);
        let b = rng.vec(256, -1.0, 1.0);
        let s = tilec_tests::round_f32(&random_spd(1, 16, 28));
        let bo = run(
            src,
            "k",
            vec![
                ("A", arr(elem, &a, &[16, 16])),
                ("B", arr(elem, &b, &[16, 16])),
                ("S", arr(elem, &s, &[16, 16])),
                ("O", sentinel(elem, &[12, 16, 16])),
            ],
        );
        let o = out(&bo, "O");
        let add = |x: &[f64], y: &[f64], f: f64| -> Vec<f64> { x.iter().zip(y).map(|(p, q)| p + f * q).collect() };
        let ab = matmul_f64(16, 16, 16, &a, &b);
        let rows: Vec<f64> = a.chunks(16).map(|r| r.iter().sum()).collect();
        let cols: Vec<f64> = (0..16).map(|j| (0..16).map(|i| a[i * 16 + j]).sum()).collect();
        let outer_rc: Vec<f64> = (0..256).map(|e| rows[e / 16] * cols[e % 16]).collect();
        let l = cholesky_clamped_f64(&s, 16, 1e-6);
        let mut b8 = b.clone();
        b8[3 * 16 + 4] = 100.0;
        let lower = TrsmOp { left: true, lower: true, trans: false, unit: false };
        let want: Vec<(&str, Vec<f64>)> = vec![
            ("t = t @ t", matmul_f64(16, 16, 16, &a, &a)),
            ("acc += acc @ b", add(&a, &ab, 1.0)),
            ("acc -= a @ acc", add(&b, &ab, -1.0)),
            ("t = transpose(t)", transpose_f64(&a, 16, 16)),
            ("r -= outer(sum(r, 1), sum(r, 0))", add(&a, &outer_rc, -1.0)),
            ("copy before cholesky_", s.clone()),
            ("cholesky_", l.clone()),
            ("copy before masked load", a.clone()),
            ("masked load and element write", b8),
            ("copy before solve", b.clone()),
            ("solve", trsm_f64(lower, &l, 16, &b, 16)),
            ("w += v @ transpose(v)", add(&a, &matmul_f64(16, 16, 16, &a, &transpose_f64(&a, 16, 16)), 1.0)),
        ];
        for (k, (what, w)) in want.iter().enumerate() {
            assert_normwise(&o[k * 256..(k + 1) * 256], w, tol(elem), &format!("{elem:?} {what}"));
        }
    }
}

/// `atomic_add` into a shared array, a `map` whose `fn` branches and loops, integer axis
/// reductions, and a 3-D grid with `program_id` / `num_programs` on every axis.
#[test]
fn shared_atomics_branching_map_int_axis_reductions_and_3d_grids() {
    let src = "
        fn clampf(x: f32) -> f32 {
            let y = x;
            if x > 0.5 { y = 0.5; } else if x < -0.5 { y = -0.5; }
            let k = 0;
            while k < 3 { y = y * 2.0; k += 1; }
            y
        }
        kernel k(A: f32[N], O: mut f32[N], G: mut i32[P, Q, R, 4], I: i32[2, 8], J: mut i32[2, 8]) grid(P, Q, R) {
            let s = shared<f32, 16>::zeros();
            atomic_add(s[0:16], A[0:16]);
            atomic_add(s[0:16], A[0:16]);
            atomic_add(s[3], 1.0);
            sync();
            if program_id(0) == 0 && program_id(1) == 0 && program_id(2) == 0 {
                O[0:16] = map(clampf, s[0:16]);
                let t = tile<i32, 2, 8>::zeros();
                t[:] = I[0:2, 0:8];
                J[0, 0:8] = max_axis(t, 0);
                J[1, 0:2] = min_axis(t, 1);
            }
            let p = program_id(0);
            let q = program_id(1);
            let r = program_id(2);
            G[p, q, r, 0] = p;
            G[p, q, r, 1] = q;
            G[p, q, r, 2] = r;
            G[p, q, r, 3] = num_programs(0) * 100 + num_programs(1) * 10 + num_programs(2);
        }";
    let a: Vec<f64> = (0..16).map(|i| (i as f64 - 8.0) / 8.0).collect();
    let iv = [3., -1., 4., 1., -5., 9., 2., -6., 5., 3., -5., 8., 9., -7., 9., 3.];
    let (p, q, r) = (2, 3, 4);
    let b = run(
        src,
        "k",
        vec![
            ("A", arr(Scalar::F32, &a, &[16])),
            ("O", sentinel(Scalar::F32, &[16])),
            ("G", sentinel(Scalar::I32, &[p, q, r, 4])),
            ("I", arr(Scalar::I32, &iv, &[2, 8])),
            ("J", sentinel(Scalar::I32, &[2, 8])),
        ],
    );
    let clamp = |x: f64| x.clamp(-0.5, 0.5) * 8.0;
    let o: Vec<f64> = (0..16).map(|i| clamp(2.0 * a[i] + if i == 3 { 1.0 } else { 0.0 })).collect();
    assert_exact(&out(&b, "O"), &o, "shared atomics and map");
    let mut j = vec![SENTINEL; 16];
    for c in 0..8 {
        j[c] = f64::max(iv[c], iv[8 + c]);
    }
    j[8] = iv[..8].iter().copied().fold(f64::MAX, f64::min);
    j[9] = iv[8..].iter().copied().fold(f64::MAX, f64::min);
    assert_exact(&out(&b, "J"), &j, "i32 axis reductions");
    let mut g = Vec::new();
    for x in 0..p {
        for y in 0..q {
            for z in 0..r {
                g.extend([x as f64, y as f64, z as f64, 234.0]);
            }
        }
    }
    assert_exact(&out(&b, "G"), &g, "3-D grid");
}

/// Float `min`/`max` (element-wise, tile/tile and tile/scalar) return NaN if either operand
/// is NaN, and order infinities.
#[test]
fn min_max_propagate_nan() {
    let src = "kernel k<T: float>(A: T[8], B: T[8], O: mut T[4, 8]) grid(1) {
        let a = A[0:8];
        let b = B[0:8];
        O[0, 0:8] = min(a, b);
        O[1, 0:8] = max(a, b);
        O[2, 0:8] = min(a, 0.0);
        O[3, 0:8] = max(0.0, b);
    }";
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    let a = [nan, 1.0, nan, -1.0, 2.0, -3.0, inf, 0.0];
    let bv = [1.0, nan, nan, -2.0, nan, 4.0, 1.0, -inf];
    for elem in FLOATS {
        let b = run(
            src,
            "k",
            vec![("A", arr(elem, &a, &[8])), ("B", arr(elem, &bv, &[8])), ("O", sentinel(elem, &[4, 8]))],
        );
        let f = |x: f64, y: f64, max: bool| {
            if x.is_nan() || y.is_nan() {
                nan
            } else if max {
                x.max(y)
            } else {
                x.min(y)
            }
        };
        let mut want = Vec::new();
        want.extend((0..8).map(|i| f(a[i], bv[i], false)));
        want.extend((0..8).map(|i| f(a[i], bv[i], true)));
        want.extend((0..8).map(|i| f(a[i], 0.0, false)));
        want.extend((0..8).map(|i| f(0.0, bv[i], true)));
        let got = out(&b, "O");
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(g == w || (g.is_nan() && w.is_nan()), "{elem:?} element {k}: got {g}, want {w}");
        }
    }
}

/// Documents a gap: the 16384-element limit of register tiles (E0204) is only checked on
/// written tile types (`tile<f32, 129, 128>::zeros()` is rejected); tiles made by slices or
/// `outer` are not limited, so `A[0:129, 0:128]` (16512 elements) compiles, and
/// `outer(A[0:4096, 0], A[0, 0:4096])` fails late, in code generation (E0901).
#[test]
fn tile_element_limit_applies_to_slice_and_outer_results() {
    for body in ["let t = A[0:129, 0:128]; O[0:129, 0:128] = t;", "O[0:129, 0:128] = outer(A[0:129, 0], A[0, 0:128]);"]
    {
        let src = format!("kernel k(A: f32[N, N], O: mut f32[N, N]) grid(1) {{ {body} }}");
        let set = SourceSet::with_stdlib("test.tile", src.as_str());
        let mut args = HashMap::new();
        args.insert("A".to_string(), arr(Scalar::F32, &[0.0], &[1, 1]));
        args.insert("O".to_string(), arr(Scalar::F32, &[0.0], &[1, 1]));
        match CpuRunner::new(&set, "k", &args, &HashMap::new()) {
            Ok(_) => panic!("`{body}` compiles"),
            Err(d) => assert!(
                d.iter().any(|d| d.code == "E0204"),
                "`{body}`: {:?}",
                d.iter().map(|d| d.code).collect::<Vec<_>>()
            ),
        }
    }
}

/// Candidates for the fused multiply-accumulate: matrix-vector accumulation, a product that
/// is also used elsewhere (must stay a product), a non-variable addend, an operand that is
/// the accumulator itself, and integer tiles.
#[test]
fn fused_accumulate_edge_cases() {
    let src = "kernel k<T: float>(A: T[16, 16], B: T[16, 16], X: T[16], C: T[16, 16], O: mut T[6, 16, 16], Y: mut T[16]) grid(1) {
        let a = A[0:16, 0:16];
        let b = B[0:16, 0:16];
        let y = X[0:16];
        for k0 in 0..16 step 4 {
            y += A[0:16, k0:k0+4] @ X[k0:k0+4];
        }
        Y[0:16] = y;
        let acc = C[0:16, 0:16];
        let p = a @ b;
        acc += p;
        O[0, 0:16, 0:16] = acc;
        O[1, 0:16, 0:16] = p;
        O[2, 0:16, 0:16] = C[0:16, 0:16] + a @ b;
        let s = a;
        s += s @ s;
        O[3, 0:16, 0:16] = s;
        let t = b;
        t = a @ t + t;
        O[4, 0:16, 0:16] = t;
        let u = C[0:16, 0:16];
        u = u + transpose(a) @ transpose(b);
        O[5, 0:16, 0:16] = u;
    }";
    let mut rng = Rng::new(29);
    for elem in FLOATS {
        let a = rng.vec(256, -1.0, 1.0);
        let bv = rng.vec(256, -1.0, 1.0);
        let x = rng.vec(16, -1.0, 1.0);
        let c = rng.vec(256, -1.0, 1.0);
        let bo = run(
            src,
            "k",
            vec![
                ("A", arr(elem, &a, &[16, 16])),
                ("B", arr(elem, &bv, &[16, 16])),
                ("X", arr(elem, &x, &[16])),
                ("C", arr(elem, &c, &[16, 16])),
                ("O", sentinel(elem, &[6, 16, 16])),
                ("Y", sentinel(elem, &[16])),
            ],
        );
        let add = |p: &[f64], q: &[f64]| -> Vec<f64> { p.iter().zip(q).map(|(u, v)| u + v).collect() };
        let ab = matmul_f64(16, 16, 16, &a, &bv);
        let y = add(&x, &matmul_f64(16, 16, 1, &a, &x));
        assert_normwise(&out(&bo, "Y"), &y, tol(elem), &format!("{elem:?} y += A @ x"));
        let o = out(&bo, "O");
        let want: Vec<(&str, Vec<f64>)> = vec![
            ("acc += p", add(&c, &ab)),
            ("p used elsewhere", ab.clone()),
            ("C[..] + a @ b", add(&c, &ab)),
            ("s += s @ s", add(&a, &matmul_f64(16, 16, 16, &a, &a))),
            ("t = a @ t + t", add(&bv, &ab)),
            (
                "u + transpose(a) @ transpose(b)",
                add(&c, &matmul_f64(16, 16, 16, &transpose_f64(&a, 16, 16), &transpose_f64(&bv, 16, 16))),
            ),
        ];
        for (k, (what, w)) in want.iter().enumerate() {
            assert_normwise(&o[k * 256..(k + 1) * 256], w, tol(elem), &format!("{elem:?} {what}"));
        }
    }
    // Integers.
    let src = "kernel k(A: i32[8, 8], B: i32[8, 8], O: mut i32[8, 8]) grid(1) {
        let acc = tile<i32, 8, 8>::full(5);
        acc = acc + A[0:8, 0:8] @ B[0:8, 0:8];
        acc += A[0:8, 0:8] @ B[0:8, 0:8];
        O[0:8, 0:8] = acc;
    }";
    let a: Vec<f64> = (0..64).map(|_| rng.int(-20, 20) as f64).collect();
    let bv: Vec<f64> = (0..64).map(|_| rng.int(-20, 20) as f64).collect();
    let bo = run(
        src,
        "k",
        vec![
            ("A", arr(Scalar::I32, &a, &[8, 8])),
            ("B", arr(Scalar::I32, &bv, &[8, 8])),
            ("O", sentinel(Scalar::I32, &[8, 8])),
        ],
    );
    let want: Vec<f64> = matmul_f64(8, 8, 8, &a, &bv).iter().map(|p| 5.0 + 2.0 * p).collect();
    assert_exact(&out(&bo, "O"), &want, "i32 fused accumulate");
}
