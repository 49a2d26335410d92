//! Loads and stores of tiles at the edges of arrays: value and masked loads, stores, vectors
//! and rank-3 accesses.

use super::*;

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

/// Column vectors and 16 x 16 tiles of tall, wide and odd arrays (77 x 131, 131 x 77,
/// 92 x 92, 17 x 1, 1 x 17), wholly inside the array and cut by each edge: value loads,
/// masked loads (`t[:] = ..` over a tile of 7s) and stores, compared element by element. On
/// the CPU these take the unrolled copy of a whole column, the vector copy of whole rows and
/// the vector-then-element copy of the in-bounds part of partial rows.
#[test]
fn columns_and_tiles_of_odd_arrays() {
    let src = "kernel k<T: float>(A: T[M, N], C: mut T[16], D: mut T[16], T16: mut T[16, 16],
                                  U16: mut T[16, 16], OA: mut T[M, N], r0: i32, c0: i32) grid(1) {
        C[0:16] = A[r0:r0+16, c0];
        let d = tile<T, 16>::full(7.0);
        d[:] = A[r0:r0+16, c0];
        D[0:16] = d;
        T16[0:16, 0:16] = A[r0:r0+16, c0:c0+16];
        let u = tile<T, 16, 16>::full(7.0);
        u[:] = A[r0:r0+16, c0:c0+16];
        U16[0:16, 0:16] = u;
        OA[r0:r0+16, c0:c0+16] = u * 2.0;
        OA[r0:r0+16, c0] = d * 4.0;
    }";
    let mut rng = Rng::new(5);
    for elem in FLOATS {
        for (m, n) in [(77, 131), (131, 77), (92, 92), (17, 1), (1, 17)] {
            let a = rng.vec(m * n, -1.0, 1.0);
            let (mi, ni) = (m as i64, n as i64);
            for (r0, c0) in
                [(0, 0), (mi - 16, ni - 16), (mi - 12, 5), (3, ni - 9), (mi - 3, ni - 3), (-5, -2), (40, 60)]
            {
                let b = run(
                    src,
                    "k",
                    vec![
                        ("A", arr(elem, &a, &[m, n])),
                        ("C", sentinel(elem, &[16])),
                        ("D", sentinel(elem, &[16])),
                        ("T16", sentinel(elem, &[16, 16])),
                        ("U16", sentinel(elem, &[16, 16])),
                        ("OA", sentinel(elem, &[m, n])),
                        ("r0", int(r0)),
                        ("c0", int(c0)),
                    ],
                );
                let ctx = format!("{elem:?} {m}x{n} at ({r0}, {c0})");
                let col: Vec<f64> = (0..16).map(|i| padded(&a, m, n, r0, c0, i, 0).unwrap_or(0.0)).collect();
                let dcol: Vec<f64> = (0..16).map(|i| padded(&a, m, n, r0, c0, i, 0).unwrap_or(7.0)).collect();
                assert_exact(&out(&b, "C"), &col, &format!("column {ctx}"));
                assert_exact(&out(&b, "D"), &dcol, &format!("masked column {ctx}"));
                let t = stored(16, 16, 0, 0, 16, 16, |i, j| padded(&a, m, n, r0, c0, i, j).unwrap_or(0.0));
                let u = stored(16, 16, 0, 0, 16, 16, |i, j| padded(&a, m, n, r0, c0, i, j).unwrap_or(7.0));
                assert_exact(&out(&b, "T16"), &t, &format!("tile {ctx}"));
                assert_exact(&out(&b, "U16"), &u, &format!("masked tile {ctx}"));
                let mut oa = stored(m, n, r0, c0, 16, 16, |i, j| u[i * 16 + j] * 2.0);
                for i in 0..16 {
                    if padded(&a, m, n, r0, c0, i, 0).is_some() {
                        oa[(r0 + i as i64) as usize * n + c0 as usize] = dcol[i] * 4.0;
                    }
                }
                assert_exact(&out(&b, "OA"), &oa, &format!("stores {ctx}"));
            }
        }
    }
}

/// A `4 x 16` tile stored across the right edge of an array with every count of columns
/// inside (1 to 16: each prefix of a vector segment, which the LLVM backend stores with plain
/// stores of 8, 4, 2 and 1 elements), across the left edge likewise, and with its last row
/// past the bottom edge: exactly the elements inside are written.
#[test]
fn stores_of_every_partial_row_length() {
    let (r, c, m, n) = (4, 16, 7, 40);
    let src = format!(
        "kernel k<T: float>(S: T[{r}, {c}], O: mut T[M, N], r0: i32, c0: i32) grid(1) {{
            O[r0:r0+{r}, c0:c0+{c}] = S[0:{r}, 0:{c}];
        }}"
    );
    let mut rng = Rng::new(21);
    for elem in FLOATS {
        let s = rng.vec(r * c, -1.0, 1.0);
        for inside in 1..=c as i64 {
            for (r0, c0) in [(0, n as i64 - inside), (m as i64 - 3, n as i64 - inside), (1, inside - c as i64)] {
                let b = run(
                    &src,
                    "k",
                    vec![
                        ("S", arr(elem, &s, &[r, c])),
                        ("O", sentinel(elem, &[m, n])),
                        ("r0", int(r0)),
                        ("c0", int(c0)),
                    ],
                );
                let ctx = format!("{elem:?} {r}x{c} into {m}x{n} at ({r0}, {c0})");
                assert_exact(&out(&b, "O"), &stored(m, n, r0, c0, r, c, |i, j| s[i * c + j]), &ctx);
            }
        }
    }
}

/// Strided accesses with rows longer than the unrolled copies take (a plane of a rank-3
/// array, `G[r0:r0+R, c0:c0+C, 1]`, elements two apart; and the contiguous partial rows of
/// `f16`, which has no masked moves): value and masked loads, stores and masked stores of
/// 5x40 and 3x70 tiles, inside the array and cut by each edge, against plain references.
#[test]
fn long_strided_rows_load_and_store_at_the_edges() {
    let mut rng = Rng::new(9);
    for elem in [Scalar::F32, Scalar::F64, Scalar::F16] {
        for (r, c, m, n) in [(5, 40, 7, 45), (3, 70, 3, 70), (5, 40, 4, 33)] {
            let src = format!(
                "kernel k<T: float>(G: mut T[M, N, 2], H: mut T[M, N], O: mut T[{r}, {c}], P: mut T[{r}, {c}], r0: i32, c0: i32) grid(1) {{
                    let t = G[r0:r0+{r}, c0:c0+{c}, 1];
                    O[0:{r}, 0:{c}] = t;
                    let u = tile<T, {r}, {c}>::full(7.0);
                    u[:, :] = H[r0:r0+{r}, c0:c0+{c}];
                    P[0:{r}, 0:{c}] = u;
                    G[r0:r0+{r}, c0:c0+{c}, 0] = t * 2.0;
                    masked_store(H[r0:r0+{r}, c0:c0+{c}], t, tile<i32, {r}, {c}>::iota(1) % 3 == 0);
                }}"
            );
            // Values that every storage type holds exactly.
            let g: Vec<f64> = (0..m * n * 2).map(|_| (rng.vec(1, -64.0, 64.0)[0]).round() / 4.0).collect();
            let h: Vec<f64> = (0..m * n).map(|_| (rng.vec(1, -64.0, 64.0)[0]).round() / 4.0).collect();
            for (r0, c0) in [(0, 0), (-2, 3), (1, -7), (m as i64 - 2, n as i64 - 30), (m as i64, 0)] {
                let b = run(
                    &src,
                    "k",
                    vec![
                        ("G", arr(elem, &g, &[m, n, 2])),
                        ("H", arr(elem, &h, &[m, n])),
                        ("O", sentinel(elem, &[r, c])),
                        ("P", sentinel(elem, &[r, c])),
                        ("r0", int(r0)),
                        ("c0", int(c0)),
                    ],
                );
                let ctx = format!("{elem:?} {r}x{c} in {m}x{n} at ({r0}, {c0})");
                let plane = |k: usize| -> Vec<f64> { (0..m * n).map(|e| g[e * 2 + k]).collect() };
                let (g0, g1) = (plane(0), plane(1));
                let t = |i, j| padded(&g1, m, n, r0, c0, i, j).unwrap_or(0.0);
                let want_o: Vec<f64> = (0..r * c).map(|e| t(e / c, e % c)).collect();
                assert_exact(&out(&b, "O"), &want_o, &format!("{ctx}: strided load"));
                let want_p: Vec<f64> =
                    (0..r * c).map(|e| padded(&h, m, n, r0, c0, e / c, e % c).unwrap_or(7.0)).collect();
                assert_exact(&out(&b, "P"), &want_p, &format!("{ctx}: masked load"));
                let mut want_g0 = g0.clone();
                let mut want_h = h.clone();
                for i in 0..r {
                    for j in 0..c {
                        let (gi, gj) = (r0 + i as i64, c0 + j as i64);
                        if gi >= 0 && gj >= 0 && (gi as usize) < m && (gj as usize) < n {
                            want_g0[gi as usize * n + gj as usize] = t(i, j) * 2.0;
                            if j % 3 == 0 {
                                want_h[gi as usize * n + gj as usize] = t(i, j);
                            }
                        }
                    }
                }
                let got_g = out(&b, "G");
                let got_g0: Vec<f64> = (0..m * n).map(|e| got_g[e * 2]).collect();
                let got_g1: Vec<f64> = (0..m * n).map(|e| got_g[e * 2 + 1]).collect();
                assert_exact(&got_g0, &want_g0, &format!("{ctx}: strided store"));
                assert_exact(&got_g1, &g1, &format!("{ctx}: the other plane"));
                assert_exact(&out(&b, "H"), &want_h, &format!("{ctx}: masked store"));
            }
        }
    }
}

/// Stores of long rows (1-D tiles of 1000 and 4096 elements, more segments than the LLVM
/// backend stores with plain stores per prefix) cut by either end of the array: exactly the
/// elements inside are written.
#[test]
fn long_rows_store_only_their_elements_inside() {
    for elem in FLOATS {
        for (len, n) in [(1000usize, 1500usize), (4096, 5000)] {
            let src = format!(
                "kernel k<T: float>(A: T[N], O: mut T[N], s: i32) grid(1) {{
                    O[s:s+{len}] = A[s:s+{len}] * 2.0;
                }}"
            );
            let a: Vec<f64> = (0..n).map(|k| k as f64 * 0.25 - 100.0).collect();
            for s in [-300i64, 0, 250, n as i64 - 700] {
                let b = run(&src, "k", vec![("A", arr(elem, &a, &[n])), ("O", sentinel(elem, &[n])), ("s", int(s))]);
                let want: Vec<f64> = (0..n as i64)
                    .map(|k| if k >= s && k < s + len as i64 { a[k as usize] * 2.0 } else { SENTINEL })
                    .collect();
                assert_exact(&out(&b, "O"), &want, &format!("{elem:?} {len} at {s} in {n}"));
            }
        }
    }
}
