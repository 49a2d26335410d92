//! Ranges of register tiles (`t[2:6, :]`, `t[:, a:]`, `u[:4]`) as values and assignment
//! targets, on partial odd shapes with ranges touching every edge, against f64 references.

use super::*;

/// The kernel: a 23x7 tile over a 21x6 array (partial), a 13-element vector over 11; bounds
/// written as literals, a `const` item, a const parameter, expressions and omitted bounds.
const SRC: &str = "
const S: i32 = 3;
kernel k<T: float, const W: i32 = 3>(A: T[M, N], V: T[K], B: mut T[8, 3], C: mut T[23, 3], D: mut T[M, N], E: mut T[K], F: mut T[5], G: mut T[23, 7]) grid(1) {
    let a = A[0:23, 0:7];
    B[0:8, 0:3] = a[S:S + 8, 2:2 + W];
    C[0:23, 0:3] = a[:, 4:];
    let u = a;
    u[5:19, 1:4] = a[0:14, 4:7] * 2.0;
    u[0:2, :] = 7.5;
    u[20:, 3:] += a[0:3, 0:4];
    u[:, :1] -= 1.0;
    u[22:23, 6:7] = a[0:1, 0:1] - 3.0;
    D[0:23, 0:7] = u;
    let v = V[0:13];
    let w = v;
    w[2:9] = v[6:13];
    w[:2] = 0.25;
    w[11:] *= 3.0;
    E[0:13] = w;
    F[0:5] = v[8:];
    let t = a[:, :];
    t[1:23, :] = a[0:22, :];
    G[0:23, 0:7] = t;
}
";

#[test]
fn ranges_of_tiles_read_and_write_blocks() {
    let (m, n, k) = (21usize, 6usize, 11usize);
    let (tr, tc) = (23usize, 7usize);
    for elem in FLOATS {
        let mut rng = Rng::new(91);
        let a: Vec<f64> = (0..m * n).map(|_| rng.int(0, 40) as f64 / 4.0 - 5.0).collect();
        let v: Vec<f64> = (0..k).map(|_| rng.int(0, 40) as f64 / 4.0 - 5.0).collect();
        let b = run(
            SRC,
            "k",
            vec![
                ("A", arr(elem, &a, &[m, n])),
                ("V", arr(elem, &v, &[k])),
                ("B", sentinel(elem, &[8, 3])),
                ("C", sentinel(elem, &[23, 3])),
                ("D", sentinel(elem, &[m, n])),
                ("E", sentinel(elem, &[k])),
                ("F", sentinel(elem, &[5])),
                ("G", sentinel(elem, &[23, 7])),
            ],
        );
        let ctx = format!("{elem:?}");
        let t = tile_of(&a, m, n, 0, 0, tr, tc);
        let at = |i: usize, j: usize| t[i * tc + j];
        assert_exact(&out(&b, "B"), &stored(8, 3, 0, 0, 8, 3, |i, j| at(3 + i, 2 + j)), &ctx);
        assert_exact(&out(&b, "C"), &stored(23, 3, 0, 0, 23, 3, |i, j| at(i, 4 + j)), &ctx);
        let mut u = t.clone();
        for i in 5..19 {
            for j in 1..4 {
                u[i * tc + j] = at(i - 5, j + 3) * 2.0;
            }
        }
        for x in &mut u[..2 * tc] {
            *x = 7.5;
        }
        for i in 20..23 {
            for j in 3..7 {
                u[i * tc + j] += at(i - 20, j - 3);
            }
        }
        for i in 0..tr {
            u[i * tc] -= 1.0;
        }
        u[22 * tc + 6] = at(0, 0) - 3.0;
        assert_exact(&out(&b, "D"), &stored(m, n, 0, 0, tr, tc, |i, j| u[i * tc + j]), &ctx);
        let vt: Vec<f64> = (0..13).map(|i| v.get(i).copied().unwrap_or(0.0)).collect();
        let mut w = vt.clone();
        w[2..9].copy_from_slice(&vt[6..13]);
        w[0] = 0.25;
        w[1] = 0.25;
        w[11] *= 3.0;
        w[12] *= 3.0;
        assert_exact(&out(&b, "E"), &w[..k], &ctx);
        assert_exact(&out(&b, "F"), &vt[8..13], &ctx);
        let g: Vec<f64> = (0..tr * tc).map(|p| if p < tc { at(0, p) } else { t[p - tc] }).collect();
        assert_exact(&out(&b, "G"), &g, &ctx);
    }
}

/// Ranges of integer tiles and of masks, and a range of a range.
#[test]
fn ranges_of_integer_tiles_and_masks() {
    let src = "
kernel k(O: mut i32[5, 4], P: mut i32[3]) grid(1) {
    let t = tile<i32, 9, 6>::iota(0) * 10 + tile<i32, 9, 6>::iota(1);
    let m = t > 33;
    let s = t[2:9, 1:6][1:6, :4];
    let mm = m[4:9, 2:];
    O[0:5, 0:4] = where(mm, s, -s);
    let r = tile<i32, 6>::iota(0);
    r[3:] = r[:3] + 100;
    P[0:3] = r[2:5];
}
";
    let b = run(src, "k", vec![("O", arr(Scalar::I32, &[0.0; 20], &[5, 4])), ("P", arr(Scalar::I32, &[0.0; 3], &[3]))]);
    let want: Vec<f64> = (0..20)
        .map(|p| {
            let (i, j) = (p / 4, p % 4);
            let s = ((3 + i) * 10 + 1 + j) as f64;
            let mv = ((4 + i) * 10 + 2 + j) > 33;
            if mv {
                s
            } else {
                -s
            }
        })
        .collect();
    assert_exact(&out(&b, "O"), &want, "i32");
    assert_exact(&out(&b, "P"), &[2.0, 100.0, 101.0], "i32 vector");
}

/// Ranges that start at a run-time position with a constant extent: windows of a vector read
/// and written in a loop (`w[j:j+3]`), a block of rows and columns of a matrix at run-time
/// offsets, and offsets past either end (reads give 0 there, writes do nothing).
pub(crate) const DYN_SRC: &str = include_str!("../cases/dyn_ranges.tile");

#[test]
fn ranges_with_run_time_starts() {
    let (k, m, n) = (12usize, 7usize, 5usize);
    for elem in FLOATS {
        for s in [3i64, 6, 0] {
            let mut rng = Rng::new(93 + s as u64);
            let v: Vec<f64> = (0..k).map(|_| rng.int(0, 40) as f64 / 4.0 - 5.0).collect();
            let a: Vec<f64> = (0..m * n).map(|_| rng.int(0, 40) as f64 / 4.0 - 5.0).collect();
            let b = run(
                DYN_SRC,
                "dyn_ranges",
                vec![
                    ("V", arr(elem, &v, &[k])),
                    ("A", arr(elem, &a, &[m, n])),
                    ("s", int(s)),
                    ("W", sentinel(elem, &[k])),
                    ("X", sentinel(elem, &[4])),
                    ("B", sentinel(elem, &[m, n])),
                    ("C", sentinel(elem, &[3, 2])),
                ],
            );
            let ctx = format!("{elem:?}, s = {s}");
            let round = |x: f64| if elem == Scalar::F32 { x as f32 as f64 } else { x };
            // Reads outside the tile give 0; writes outside it do nothing.
            let vat = |i: i64| if (0..k as i64).contains(&i) { v[i as usize] } else { 0.0 };
            let aat = |i: i64, j: i64| {
                if (0..m as i64).contains(&i) && (0..n as i64).contains(&j) {
                    a[i as usize * n + j as usize]
                } else {
                    0.0
                }
            };
            let mut w = v.clone();
            for j in 0..10 {
                let old: Vec<f64> = (0..3).map(|d| w[j + d]).collect();
                for d in 0..3 {
                    w[j + d] = round(round(old[d] * 0.5) + vat(j as i64 + 1 + d as i64));
                }
            }
            assert_exact(&out(&b, "W"), &w, &ctx);
            let x: Vec<f64> = (0..4).map(|d| vat(s - 2 + d)).collect();
            assert_exact(&out(&b, "X"), &x, &ctx);
            let mut bb = a.clone();
            for r in 0..2i64 {
                for c in 0..3i64 {
                    let (i, j) = (s - 3 + r, 1 + c);
                    if (0..m as i64).contains(&i) {
                        bb[i as usize * n + j as usize] = aat(s + r, c) * 2.0;
                    }
                }
            }
            for r in 0..2i64 {
                for c in 0..n as i64 {
                    let i = s + 4 + r;
                    if (0..m as i64).contains(&i) {
                        bb[i as usize * n + c as usize] = aat(r, c);
                    }
                }
            }
            assert_exact(&out(&b, "B"), &bb, &ctx);
            let cc: Vec<f64> =
                (0..3).flat_map(|r| (0..2).map(move |c| (r, c))).map(|(r, c)| aat(s + 2 + r, s - 1 + c)).collect();
            assert_exact(&out(&b, "C"), &cc, &ctx);
        }
    }
}
