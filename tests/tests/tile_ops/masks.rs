//! Masks: `iota` index tiles, element-wise comparisons and logic on tiles, and `where`, on
//! odd, partial and 1-D shapes, against plain f64 references.

use super::*;

/// `iota(0)` and `iota(1)` of 2-D tiles, `iota(0)` of vectors, as float and integer tiles.
#[test]
fn iota_gives_each_element_its_index() {
    for elem in FLOATS {
        for (r, c) in [(1, 1), (17, 5), (16, 16), (3, 77)] {
            let src = format!(
                "kernel k<T: float>(R: mut T[{r}, {c}], C: mut T[{r}, {c}], V: mut T[{c}], I: mut T[{r}, {c}]) grid(1) {{
                    R[0:{r}, 0:{c}] = tile<T, {r}, {c}>::iota(0);
                    C[0:{r}, 0:{c}] = tile<T, {r}, {c}>::iota(1);
                    V[0:{c}] = tile<T, {c}>::iota(0);
                    let i = tile<i32, {r}, {c}>::iota(1) * 2 - tile<i32, {r}, {c}>::iota(0);
                    for p in 0..{r} {{
                        for q in 0..{c} {{
                            I[p, q] = i[p, q] as T;
                        }}
                    }}
                }}"
            );
            let b = run(
                &src,
                "k",
                vec![
                    ("R", sentinel(elem, &[r, c])),
                    ("C", sentinel(elem, &[r, c])),
                    ("V", sentinel(elem, &[c])),
                    ("I", sentinel(elem, &[r, c])),
                ],
            );
            let ctx = format!("{elem:?} {r}x{c}");
            let rows: Vec<f64> = (0..r * c).map(|k| (k / c) as f64).collect();
            let cols: Vec<f64> = (0..r * c).map(|k| (k % c) as f64).collect();
            assert_exact(&out(&b, "R"), &rows, &ctx);
            assert_exact(&out(&b, "C"), &cols, &ctx);
            assert_exact(&out(&b, "V"), &(0..c).map(|k| k as f64).collect::<Vec<_>>(), &ctx);
            let want: Vec<f64> = (0..r * c).map(|k| 2.0 * (k % c) as f64 - (k / c) as f64).collect();
            assert_exact(&out(&b, "I"), &want, &ctx);
        }
    }
}

/// Comparisons of tiles with tiles and with scalars, `&&`, `||`, `!` on masks, and `where`
/// with tile and scalar branches, on a partial 17x13 tile over a 15x11 array.
#[test]
fn comparisons_logic_and_where_on_tiles() {
    let (m, n, tr, tc) = (15usize, 11usize, 17usize, 13usize);
    for elem in FLOATS {
        let src = format!(
            "kernel k<T: float>(A: T[M, N], B: T[M, N], O: mut T[M, N], P: mut T[M, N], Q: mut T[M], t: T) grid(1) {{
                let a = A[0:{tr}, 0:{tc}];
                let b = B[0:{tr}, 0:{tc}];
                let lt = a < b;
                let band = !(a >= t) || b == 0.5;
                O[0:{tr}, 0:{tc}] = where(lt && band, a - b, where(a != b, b, 2.0));
                P[0:{tr}, 0:{tc}] = where(tile<i32, {tr}, {tc}>::iota(1) > tile<i32, {tr}, {tc}>::iota(0), a, 0.0);
                let v = A[0:{tr}, 0];
                Q[0:{tr}] = where(v > t, tile<T, {tr}>::full(1.0), v * 2.0);
            }}"
        );
        let mut rng = Rng::new(77);
        let mut a: Vec<f64> = (0..m * n).map(|_| rng.int(0, 7) as f64 / 4.0 - 1.0).collect();
        let b: Vec<f64> = (0..m * n).map(|_| rng.int(0, 7) as f64 / 4.0 - 1.0).collect();
        a[3] = b[3]; // an equal pair
        let t = 0.25;
        let bd = run(
            &src,
            "k",
            vec![
                ("A", arr(elem, &a, &[m, n])),
                ("B", arr(elem, &b, &[m, n])),
                ("O", sentinel(elem, &[m, n])),
                ("P", sentinel(elem, &[m, n])),
                ("Q", sentinel(elem, &[m])),
                ("t", float(elem, t)),
            ],
        );
        let (mut o, mut p) = (vec![0.0; m * n], vec![0.0; m * n]);
        for i in 0..m {
            for j in 0..n {
                let (x, y) = (a[i * n + j], b[i * n + j]);
                let band = x < t || y == 0.5; // `!(a >= t)` without NaNs
                o[i * n + j] = if x < y && band {
                    x - y
                } else if x != y {
                    y
                } else {
                    2.0
                };
                p[i * n + j] = if j > i { x } else { 0.0 };
            }
        }
        let q: Vec<f64> = (0..m).map(|i| if a[i * n] > t { 1.0 } else { a[i * n] * 2.0 }).collect();
        let ctx = format!("{elem:?}");
        assert_exact(&out(&bd, "O"), &o, &ctx);
        assert_exact(&out(&bd, "P"), &p, &ctx);
        assert_exact(&out(&bd, "Q"), &q, &ctx);
    }
}

/// `where` on scalars is a plain select; masks of different shapes are E0202.
#[test]
fn where_on_scalars_and_shape_errors() {
    let src = "kernel k(A: f32[N], O: mut f32[N]) grid(N) {
        let i = program_id(0);
        O[i] = where(A[i] > 0.0, A[i], -A[i]);
    }";
    let a = [-1.5, 2.0, 0.0, -0.25];
    let b = run(src, "k", vec![("A", arr(Scalar::F32, &a, &[4])), ("O", sentinel(Scalar::F32, &[4]))]);
    assert_exact(&out(&b, "O"), &[1.5, 2.0, 0.0, 0.25], "abs via where");
    let bad = "kernel k(A: f32[N, 16], O: mut f32[N, 16]) grid(1) {
        let m = tile<i32, 16, 16>::iota(0) < tile<i32, 16, 8>::iota(1);
        O[0:16, 0:16] = where(m, A[0:16, 0:16], 0.0);
    }";
    let set = SourceSet::with_stdlib("bad.tile", bad);
    let (parsed, _) = set.parse();
    let (_, diags) =
        tilec_frontend::compile(&parsed.sources(), &tilec_frontend::Instances::All { fixed: HashMap::new() });
    assert!(diags.iter().any(|d| d.code == "E0202"), "{diags:?}");
}

/// `argmax`/`argmin` of a whole tile and along both axes: ties give the first index, a NaN
/// wins (NumPy's rule), on a 5x7 tile and a vector.
#[test]
fn argmax_and_argmin_take_the_first_index() {
    let (r, c) = (5usize, 7usize);
    for elem in FLOATS {
        let src = format!(
            "kernel k<T: float>(A: T[{r}, {c}], V: T[{c}], S: mut i32[6], R: mut i32[{r}], C: mut i32[{c}], R2: mut i32[{r}], C2: mut i32[{c}]) grid(1) {{
                let a = A[0:{r}, 0:{c}];
                let v = V[0:{c}];
                S[0] = argmax(a);
                S[1] = argmin(a);
                S[2] = argmax(v);
                S[3] = argmin(v);
                S[4] = argmax(tile<T, {r}, {c}>::full(2.0));
                S[5] = argmin(-a);
                R[0:{r}] = argmax(a, 1);
                C[0:{c}] = argmax(a, 0);
                R2[0:{r}] = argmin(a, 1);
                C2[0:{c}] = argmin(a, 0);
            }}"
        );
        let mut rng = Rng::new(5);
        let mut a: Vec<f64> = (0..r * c).map(|_| rng.int(-3, 3) as f64).collect();
        a[2 * c + 4] = f64::NAN; // row 2, column 4
        let v: Vec<f64> = vec![1.0, 4.0, -2.0, 4.0, -2.0, 0.0, 3.0];
        let i = |shape: &[usize]| {
            ArgValue::Array(
                HostArray::zeros(Scalar::I32, &shape.iter().map(|&d| d as u64).collect::<Vec<_>>()).expect("zeros"),
            )
        };
        let b = run(
            &src,
            "k",
            vec![
                ("A", arr(elem, &a, &[r, c])),
                ("V", arr(elem, &v, &[c])),
                ("S", i(&[6])),
                ("R", i(&[r])),
                ("C", i(&[c])),
                ("R2", i(&[r])),
                ("C2", i(&[c])),
            ],
        );
        // NumPy's argmax/argmin: the first extreme, a NaN counting as the extreme.
        let first = |xs: &[f64], better: &dyn Fn(f64, f64) -> bool| -> f64 {
            let mut best = 0;
            for (k, x) in xs.iter().enumerate() {
                if xs[best].is_nan() {
                    break;
                }
                if x.is_nan() || better(*x, xs[best]) {
                    best = k;
                }
            }
            best as f64
        };
        let gt = |x: f64, y: f64| x > y;
        let lt = |x: f64, y: f64| x < y;
        let neg: Vec<f64> = a.iter().map(|x| -x).collect();
        let s = [first(&a, &gt), first(&a, &lt), first(&v, &gt), first(&v, &lt), 0.0, first(&neg, &lt)];
        let rows =
            |f: &dyn Fn(f64, f64) -> bool| -> Vec<f64> { (0..r).map(|i| first(&a[i * c..(i + 1) * c], f)).collect() };
        let cols = |f: &dyn Fn(f64, f64) -> bool| -> Vec<f64> {
            (0..c).map(|j| first(&(0..r).map(|i| a[i * c + j]).collect::<Vec<_>>(), f)).collect()
        };
        let ctx = format!("{elem:?}");
        assert_exact(&out(&b, "S"), &s, &ctx);
        assert_exact(&out(&b, "R"), &rows(&gt), &ctx);
        assert_exact(&out(&b, "C"), &cols(&gt), &ctx);
        assert_exact(&out(&b, "R2"), &rows(&lt), &ctx);
        assert_exact(&out(&b, "C2"), &cols(&lt), &ctx);
    }
}

/// `masked_store`: only the elements where the mask is true (and inside the array) are
/// written; the others keep what the array held. Partial 2-D (17x13 over 15x11, at an offset)
/// and 1-D tiles, against an f64 reference.
#[test]
fn masked_store_writes_only_where_the_mask_is_true() {
    let (m, n) = (15usize, 11usize);
    for elem in FLOATS {
        let src = "kernel k<T: float>(A: T[M, N], O: mut T[M, N], P: mut T[M], t: T) grid(1) {
                let a = A[1:18, 2:15];
                let cols = tile<i32, 17, 13>::iota(1);
                masked_store(O[1:18, 2:15], a * 2.0, a > t || cols == 0);
                let v = A[0:17, 3];
                masked_store(P[0:17], v + 1.0, v < t);
            }";
        let mut rng = Rng::new(91);
        let a: Vec<f64> = (0..m * n).map(|_| rng.int(0, 9) as f64 / 4.0 - 1.0).collect();
        let t = 0.25;
        let b = run(
            src,
            "k",
            vec![
                ("A", arr(elem, &a, &[m, n])),
                ("O", sentinel(elem, &[m, n])),
                ("P", sentinel(elem, &[m])),
                ("t", float(elem, t)),
            ],
        );
        let ctx = format!("{elem:?}");
        let want_o = stored(m, n, 1, 2, 17, 13, |i, j| {
            let (r, c) = (1 + i, 2 + j);
            let x = if r < m && c < n { a[r * n + c] } else { 0.0 };
            if x > t || j == 0 {
                2.0 * x
            } else {
                SENTINEL
            }
        });
        assert_exact(&out(&b, "O"), &want_o, &ctx);
        let want_p: Vec<f64> = (0..m).map(|i| if a[i * n + 3] < t { a[i * n + 3] + 1.0 } else { SENTINEL }).collect();
        assert_exact(&out(&b, "P"), &want_p, &ctx);
    }
}

/// Scans: `cumsum`, `cummax`, `cummin` along both axes of a partial 2-D tile (the padding
/// takes part, as in reductions) and of a 1-D tile, in index order, against an f64 reference;
/// a NaN propagates from its position on in `cummax`.
#[test]
fn scans_accumulate_in_index_order() {
    let (m, n, tr, tc) = (9usize, 6usize, 11usize, 7usize);
    for elem in FLOATS {
        let src = format!(
            "kernel k<T: float>(A: T[M, N], S0: mut T[{tr}, {tc}], S1: mut T[{tr}, {tc}], X0: mut T[{tr}, {tc}], N1: mut T[{tr}, {tc}], V: mut T[{tr}]) grid(1) {{
                let a = A[0:{tr}, 0:{tc}];
                S0[0:{tr}, 0:{tc}] = cumsum(a, 0);
                S1[0:{tr}, 0:{tc}] = cumsum(a, 1);
                X0[0:{tr}, 0:{tc}] = cummax(a, 0);
                N1[0:{tr}, 0:{tc}] = cummin(a, 1);
                V[0:{tr}] = cumsum(A[0:{tr}, 2]);
            }}"
        );
        let mut rng = Rng::new(5);
        let mut a: Vec<f64> = (0..m * n).map(|_| rng.int(-8, 9) as f64 / 4.0).collect();
        a[4 * n + 3] = f64::NAN;
        let outs = ["S0", "S1", "X0", "N1"];
        let mut args = vec![("A", arr(elem, &a, &[m, n]))];
        for o in outs {
            args.push((o, sentinel(elem, &[tr, tc])));
        }
        args.push(("V", sentinel(elem, &[tr])));
        let b = run(&src, "k", args);
        // The loaded tile: zero padding outside the array.
        let t = |i: usize, j: usize| if i < m && j < n { a[i * n + j] } else { 0.0 };
        let scan = |axis: u8, f: &dyn Fn(f64, f64) -> f64| -> Vec<f64> {
            let mut w = vec![0.0; tr * tc];
            for i in 0..tr {
                for j in 0..tc {
                    let x = t(i, j);
                    w[i * tc + j] = match (axis, i, j) {
                        (0, 0, _) | (1, _, 0) => x,
                        (0, _, _) => f(w[(i - 1) * tc + j], x),
                        _ => f(w[i * tc + j - 1], x),
                    };
                }
            }
            w
        };
        let round = |v: Vec<f64>| if elem == Scalar::F32 { v.iter().map(|x| *x as f32 as f64).collect() } else { v };
        let ctx = format!("{elem:?}");
        let nan_max = |x: f64, y: f64| if x.is_nan() || y.is_nan() { f64::NAN } else { x.max(y) };
        let nan_min = |x: f64, y: f64| if x.is_nan() || y.is_nan() { f64::NAN } else { x.min(y) };
        assert_close(&out(&b, "S0"), &round(scan(0, &|x, y| x + y)), tol(elem), &format!("{ctx} cumsum 0"));
        assert_close(&out(&b, "S1"), &round(scan(1, &|x, y| x + y)), tol(elem), &format!("{ctx} cumsum 1"));
        assert_close(&out(&b, "X0"), &scan(0, &nan_max), 0.0, &format!("{ctx} cummax 0"));
        assert_close(&out(&b, "N1"), &scan(1, &nan_min), 0.0, &format!("{ctx} cummin 1"));
        let mut v = vec![0.0; tr];
        for i in 0..tr {
            v[i] = if i == 0 { t(0, 2) } else { v[i - 1] + t(i, 2) };
        }
        assert_close(&out(&b, "V"), &v, tol(elem), &format!("{ctx} cumsum 1-D"));
        assert!(
            out(&b, "X0")[4 * tc + 3].is_nan() && out(&b, "X0")[10 * tc + 3].is_nan(),
            "{ctx}: NaN from row 4 down"
        );
    }
}

/// `prod` (whole tile and along each axis) and `cumprod`, in index order, against f64; small
/// integers and halves so that f32 products are exact.
#[test]
fn products_and_cumulative_products() {
    let (m, n, tr, tc) = (5usize, 4usize, 6usize, 5usize);
    for elem in FLOATS {
        let src = format!(
            "kernel k<T: float>(A: T[M, N], R0: mut T[{tc}], R1: mut T[{tr}], W: mut T[1], C0: mut T[{tr}, {tc}], C1: mut T[{tr}, {tc}]) grid(1) {{
                let a = A[0:{tr}, 0:{tc}] + 1.0;
                R0[0:{tc}] = prod(a, 0);
                R1[0:{tr}] = prod(a, 1);
                W[0] = prod(a);
                C0[0:{tr}, 0:{tc}] = cumprod(a, 0);
                C1[0:{tr}, 0:{tc}] = cumprod(a, 1);
            }}"
        );
        let mut rng = Rng::new(8);
        let a: Vec<f64> = (0..m * n).map(|_| rng.int(-2, 3) as f64 / 2.0).collect();
        let b = run(
            &src,
            "k",
            vec![
                ("A", arr(elem, &a, &[m, n])),
                ("R0", sentinel(elem, &[tc])),
                ("R1", sentinel(elem, &[tr])),
                ("W", sentinel(elem, &[1])),
                ("C0", sentinel(elem, &[tr, tc])),
                ("C1", sentinel(elem, &[tr, tc])),
            ],
        );
        // The loaded tile plus one: padding (0) becomes 1.
        let t = |i: usize, j: usize| if i < m && j < n { a[i * n + j] + 1.0 } else { 1.0 };
        let ctx = format!("{elem:?}");
        let r0: Vec<f64> = (0..tc).map(|j| (0..tr).map(|i| t(i, j)).product()).collect();
        let r1: Vec<f64> = (0..tr).map(|i| (0..tc).map(|j| t(i, j)).product()).collect();
        let w: f64 = (0..tr).flat_map(|i| (0..tc).map(move |j| (i, j))).map(|(i, j)| t(i, j)).product();
        assert_exact(&out(&b, "R0"), &r0, &format!("{ctx} prod 0"));
        assert_exact(&out(&b, "R1"), &r1, &format!("{ctx} prod 1"));
        assert_exact(&out(&b, "W"), &[w], &format!("{ctx} prod"));
        let c0: Vec<f64> = (0..tr * tc).map(|k| (0..=k / tc).map(|i| t(i, k % tc)).product()).collect();
        let c1: Vec<f64> = (0..tr * tc).map(|k| (0..=k % tc).map(|j| t(k / tc, j)).product()).collect();
        assert_exact(&out(&b, "C0"), &c0, &format!("{ctx} cumprod 0"));
        assert_exact(&out(&b, "C1"), &c1, &format!("{ctx} cumprod 1"));
    }
}

/// Rows and columns of tiles: `t[k, :]` and `t[:, k]` read (exactly, NaN and -0.0 included;
/// zeros for an index out of range) and written (`=` and `op=`; nothing for an index out of
/// range), with run-time indices, on a 5x7 tile, float and integer.
#[test]
fn tile_rows_and_columns_read_and_write() {
    let (r, c) = (5usize, 7usize);
    for elem in FLOATS {
        let src = "kernel k<T: float>(A: T[5, 7], ROW: mut T[7], COL: mut T[5], OUT: mut T[5], O: mut T[5, 7], I: mut i32[5, 7], i: i32, j: i32) grid(1) {
                let t = A[0:5, 0:7];
                ROW[0:7] = t[i, :];
                COL[0:5] = t[:, j];
                OUT[0:5] = t[:, j + 100];
                t[:, j] = t[:, 0] * 2.0;
                t[i, :] += tile<T, 7>::full(10.0);
                t[i + 50, :] = tile<T, 7>::full(99.0);
                O[0:5, 0:7] = t;
                let n = tile<i32, 5, 7>::iota(1) - tile<i32, 5, 7>::iota(0);
                n[:, 2] = n[:, 3] * 5;
                I[0:5, 0:7] = n;
            }";
        let mut a: Vec<f64> = (0..r * c).map(|k| k as f64 * 0.5 - 3.0).collect();
        a[2 * c + 3] = f64::NAN;
        a[c + 4] = -0.0;
        let (i, j) = (2i64, 4i64);
        let b = run(
            src,
            "k",
            vec![
                ("A", arr(elem, &a, &[r, c])),
                ("ROW", sentinel(elem, &[c])),
                ("COL", sentinel(elem, &[r])),
                ("OUT", sentinel(elem, &[r])),
                ("O", sentinel(elem, &[r, c])),
                ("I", ArgValue::Array(HostArray::from_i32(&vec![0; r * c], &[r as u64, c as u64]).unwrap())),
                ("i", int(i)),
                ("j", int(j)),
            ],
        );
        let ctx = format!("{elem:?}");
        let row: Vec<f64> = (0..c).map(|q| a[i as usize * c + q]).collect();
        let col: Vec<f64> = (0..r).map(|p| a[p * c + j as usize]).collect();
        assert_close(&out(&b, "ROW"), &row, 0.0, &format!("{ctx} t[i, :]"));
        assert_close(&out(&b, "COL"), &col, 0.0, &format!("{ctx} t[:, j]"));
        assert_eq!(out(&b, "COL")[1].to_bits(), (-0.0f64).to_bits(), "{ctx}: -0.0 is read as -0.0");
        assert_exact(&out(&b, "OUT"), &[0.0; 5], &format!("{ctx} out of range"));
        let mut o = a.clone();
        for p in 0..r {
            o[p * c + j as usize] = a[p * c] * 2.0;
        }
        for q in 0..c {
            o[i as usize * c + q] += 10.0;
        }
        assert_close(&out(&b, "O"), &o, 0.0, &format!("{ctx} writes"));
        let n: Vec<f64> = (0..r * c)
            .map(|k| {
                let (p, q) = ((k / c) as f64, (k % c) as f64);
                if k % c == 2 {
                    (3.0 - p) * 5.0
                } else {
                    q - p
                }
            })
            .collect();
        assert_exact(&out(&b, "I"), &n, "i32 column write");
    }
}

/// Rows and columns at run-time indices on tiles whose lines are long (a 20x70 tile: rows of
/// more than 64 elements) or many (a 70x20 tile), against an f64 reference: a loop that
/// rewrites every row from two rows (`t[r, :] = t[r, :] * 2.0 + t[19 - r, :]`), a loop over
/// the columns, and reads and writes out of range on either side (zeros, no change).
#[test]
fn long_and_many_tile_lines_at_run_time_indices() {
    for elem in FLOATS {
        let src = "kernel k<T: float>(A: T[20, 70], B: T[70, 20], O: mut T[20, 70], P: mut T[70, 20], Z: mut T[4, 70], i: i32) grid(1) {
                let t = A[0:20, 0:70];
                for r in 0..20 {
                    t[r, :] = t[r, :] * 2.0 + t[19 - r, :];
                }
                t[i - 20, :] = tile<T, 70>::full(5.0);
                t[i + 20, :] = tile<T, 70>::full(5.0);
                O[0:20, 0:70] = t;
                let u = B[0:70, 0:20];
                for c in 1..20 {
                    u[:, c] = u[:, c - 1] * 0.5 + u[:, c];
                }
                u[:, i - 21] = tile<T, 70>::full(5.0);
                P[0:70, 0:20] = u;
                Z[0, 0:70] = t[i - 1000, :];
                Z[1, 0:70] = t[i + 20, :];
                Z[2, 0:70] = u[:, i + 20];
                Z[3, 0:70] = u[:, i];
            }";
        let (r, c) = (20usize, 70usize);
        let a: Vec<f64> = (0..r * c).map(|k| ((k * 37 % 101) as f64 - 50.0) / 8.0).collect();
        let bm: Vec<f64> = (0..r * c).map(|k| ((k * 53 % 97) as f64 - 48.0) / 16.0).collect();
        let i = 3i64;
        let zero = |shape: &[usize]| sentinel(elem, shape);
        let b = run(
            src,
            "k",
            vec![
                ("A", arr(elem, &a, &[r, c])),
                ("B", arr(elem, &bm, &[c, r])),
                ("O", zero(&[r, c])),
                ("P", zero(&[c, r])),
                ("Z", zero(&[4, c])),
                ("i", int(i)),
            ],
        );
        let mut t = a.clone();
        for p in 0..r {
            for q in 0..c {
                t[p * c + q] = t[p * c + q] * 2.0 + t[(r - 1 - p) * c + q];
            }
        }
        let mut u = bm.clone();
        for q in 1..r {
            for p in 0..c {
                u[p * r + q] += u[p * r + q - 1] * 0.5;
            }
        }
        let ctx = format!("{elem:?}");
        let tol = tol(elem);
        assert_close(&out(&b, "O"), &t, tol, &format!("{ctx} rows"));
        assert_close(&out(&b, "P"), &u, tol, &format!("{ctx} columns"));
        let col: Vec<f64> = (0..c).map(|p| u[p * r + i as usize]).collect();
        let z: Vec<f64> = [vec![0.0; 2 * c], vec![0.0; c], col].concat();
        assert_close(&out(&b, "Z"), &z, tol, &format!("{ctx} reads"));
    }
}

/// A causal-style mask and two `where`s over a `map` of a `fn` (what the `fuse-maps` pass
/// merges into two loops, with the fills' scalars used in place), on partial tiles of odd
/// shapes, with a run-time bound and flag, against an f64 reference.
#[test]
fn fused_mask_chains() {
    for elem in FLOATS {
        for (r, c, m, n) in [(1, 1, 1, 1), (17, 5, 13, 4), (16, 16, 17, 17), (77, 131, 70, 131)] {
            for flag in [0.0, 1.0] {
                let src = format!(
                    "fn soft<T>(x: T) -> T {{ exp(x) }}
                    kernel k<T: float>(A: T[M, N], O: mut T[M, N], P: mut T[M, N], nb: i32, flag: T) grid(1) {{
                        let a = A[0:{r}, 0:{c}];
                        let rows = tile<i32, {r}, {c}>::iota(0);
                        let cols = tile<i32, {r}, {c}>::iota(1);
                        let keep = cols < nb && (flag <= 0.0 || cols <= rows);
                        let x = where(keep, a * 2.0, -7.0);
                        O[0:{r}, 0:{c}] = x;
                        P[0:{r}, 0:{c}] = where(keep, map(soft, x - 1.0), 0.5);
                    }}"
                );
                let a: Vec<f64> = (0..m * n).map(|k| ((k * 37 % 23) as f64 - 11.0) / 8.0).collect();
                let nb = (n as i64 * 2) / 3;
                let b = run(
                    &src,
                    "k",
                    vec![
                        ("A", arr(elem, &a, &[m, n])),
                        ("O", sentinel(elem, &[m, n])),
                        ("P", sentinel(elem, &[m, n])),
                        ("nb", int(nb)),
                        ("flag", float(elem, flag)),
                    ],
                );
                let (mut o, mut p) = (vec![SENTINEL; m * n], vec![SENTINEL; m * n]);
                for i in 0..m.min(r) {
                    for j in 0..n.min(c) {
                        let keep = (j as i64) < nb && (flag <= 0.0 || j <= i);
                        let x = if keep { a[i * n + j] * 2.0 } else { -7.0 };
                        o[i * n + j] = x;
                        p[i * n + j] = if keep { (x - 1.0).exp() } else { 0.5 };
                    }
                }
                let ctx = format!("{elem:?} {r}x{c} tile over {m}x{n}, flag {flag}");
                assert_exact(&out(&b, "O"), &o, &ctx);
                assert_close(&out(&b, "P"), &p, tol(elem), &ctx);
            }
        }
    }
}
