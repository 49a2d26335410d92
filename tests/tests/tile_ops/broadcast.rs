//! Broadcasting between tiles of different shapes (NumPy's trailing-axis rule): vectors
//! along the rows, `tile<T, M, 1>` columns (`column(v)`, ranges `t[:, j:j+1]`) across the
//! columns, a `tile<T, 1, N>` row, on a partial 7x5 tile, against f64 references.

use super::*;

const SRC: &str = "
kernel k<T: float>(A: T[M, N], V: T[N], U: T[M], O: mut T[M, N], P: mut T[M, N], Q: mut T[M, N], R: mut T[M, N], S: mut T[M, N], X: mut T[M, N], Y: mut T[M, N]) grid(1) {
    let a = A[0:7, 0:5];
    let v = V[0:5];
    let u = U[0:7];
    O[0:7, 0:5] = a - v;
    P[0:7, 0:5] = column(u) * a;
    Q[0:7, 0:5] = a - column(max_axis(a, 1)) + a[0:1, :];
    R[0:7, 0:5] = v * 2.0 + a[:, 2:3];
    S[0:7, 0:5] = where(a > v, a, column(u));
    let t = a;
    t += v;
    t *= column(u);
    t -= a[6:7, :];
    X[0:7, 0:5] = t;
    Y[0:7, 0:5] = column(u) + v;
}
";

#[test]
fn vectors_rows_and_columns_broadcast_across_tiles() {
    let (m, n, tr, tc) = (6usize, 4usize, 7usize, 5usize);
    for elem in FLOATS {
        let mut rng = Rng::new(93);
        let a: Vec<f64> = (0..m * n).map(|_| rng.int(0, 40) as f64 / 4.0 - 5.0).collect();
        let v: Vec<f64> = (0..n).map(|_| rng.int(0, 40) as f64 / 4.0 - 5.0).collect();
        let u: Vec<f64> = (0..m).map(|_| rng.int(0, 40) as f64 / 4.0 - 5.0).collect();
        let outs = ["O", "P", "Q", "R", "S", "X", "Y"];
        let mut args = vec![("A", arr(elem, &a, &[m, n])), ("V", arr(elem, &v, &[n])), ("U", arr(elem, &u, &[m]))];
        args.extend(outs.iter().map(|o| (*o, sentinel(elem, &[m, n]))));
        let b = run(SRC, "k", args);
        let t = tile_of(&a, m, n, 0, 0, tr, tc);
        let at = |i: usize, j: usize| t[i * tc + j];
        let vt = |j: usize| v.get(j).copied().unwrap_or(0.0);
        let ut = |i: usize| u.get(i).copied().unwrap_or(0.0);
        let rmax = |i: usize| (0..tc).map(|j| at(i, j)).fold(f64::NEG_INFINITY, f64::max);
        type F<'a> = Box<dyn Fn(usize, usize) -> f64 + 'a>;
        let want: Vec<(&str, F)> = vec![
            ("O", Box::new(|i, j| at(i, j) - vt(j))),
            ("P", Box::new(|i, j| ut(i) * at(i, j))),
            ("Q", Box::new(|i, j| at(i, j) - rmax(i) + at(0, j))),
            ("R", Box::new(|i, j| vt(j) * 2.0 + at(i, 2))),
            ("S", Box::new(|i, j| if at(i, j) > vt(j) { at(i, j) } else { ut(i) })),
            ("X", Box::new(|i, j| (at(i, j) + vt(j)) * ut(i) - at(6, j))),
            ("Y", Box::new(|i, j| ut(i) + vt(j))),
        ];
        for (o, f) in want {
            assert_exact(&out(&b, o), &stored(m, n, 0, 0, tr, tc, f), &format!("{elem:?} {o}"));
        }
    }
}

/// Broadcasts of integer tiles and masks, and of a `tile<T, 1, 1>`.
#[test]
fn integer_and_mask_broadcasts() {
    let src = "
kernel k(O: mut i32[3, 4]) grid(1) {
    let t = tile<i32, 3, 4>::iota(0) * 10 + tile<i32, 3, 4>::iota(1);
    let v = tile<i32, 4>::iota(0);
    let m = t > column(tile<i32, 3>::iota(0) * 11);
    O[0:3, 0:4] = where(m && v != 2, t - v, t[1:2, 1:2]);
}
";
    let b = run(src, "k", vec![("O", arr(Scalar::I32, &[0.0; 12], &[3, 4]))]);
    let want: Vec<f64> = (0..12)
        .map(|p| {
            let (i, j) = (p / 4, p % 4);
            let t = (i * 10 + j) as i64;
            if t > (i * 11) as i64 && j != 2 {
                (t - j as i64) as f64
            } else {
                11.0
            }
        })
        .collect();
    assert_exact(&out(&b, "O"), &want, "i32");
}
