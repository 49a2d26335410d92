//! `sort`, `argsort` and `topk` on the CPU against a plain reference: Rust's stable sort of
//! the loaded tile's lines with NaN after every number (NumPy's `np.sort(kind="stable")`),
//! reversed keys for `descending = true` (NaN first, ties still in index order), on partial
//! tiles (`tests/tests/cases/sorts.tile`: a 21x13 array in 24x13 tiles, a 128-element vector
//! over 100 elements), with ties, -0.0, inf and NaN in the data.

use super::*;
use std::cmp::Ordering;

const SRC: &str = include_str!("../cases/sorts.tile");

/// NaN after every number, -0.0 equal to 0.0.
fn key(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => x.partial_cmp(&y).unwrap(),
    }
}

/// The stable order of `xs`: the indices that sort it (descending: reversed keys).
fn order(xs: &[f64], descending: bool) -> Vec<usize> {
    let mut ix: Vec<usize> = (0..xs.len()).collect();
    ix.sort_by(|&i, &j| if descending { key(xs[j], xs[i]) } else { key(xs[i], xs[j]) });
    ix
}

/// Every line of the `r x c` row-major tile `t` (rows for `axis` 1, columns for 0) replaced
/// by `f(line)`, which returns a line of `len` values: the result is `r x len` or `len x c`.
fn lines(t: &[f64], (r, c): (usize, usize), axis: u8, len: usize, f: &dyn Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
    let (count, n) = if axis == 1 { (r, c) } else { (c, r) };
    let (orows, ocols) = if axis == 1 { (r, len) } else { (len, c) };
    let mut out = vec![0.0; orows * ocols];
    for l in 0..count {
        let line: Vec<f64> = (0..n).map(|k| if axis == 1 { t[l * c + k] } else { t[k * c + l] }).collect();
        for (k, y) in f(&line).into_iter().enumerate() {
            let at = if axis == 1 { l * ocols + k } else { k * ocols + l };
            out[at] = y;
        }
    }
    out
}

#[test]
fn sorts_argsorts_and_topk_match_a_stable_reference() {
    let (m, n, tr, l) = (21usize, 13usize, 24usize, 100usize);
    let mut rng = Rng::new(33);
    // Multiples of 1/4 in [-2, 2]: many ties, exact in f32.
    let mut a: Vec<f64> = (0..m * n).map(|_| rng.int(-8, 9) as f64 / 4.0).collect();
    for (k, x) in [(3, f64::NAN), (4, -0.0), (5, 0.0), (17, f64::INFINITY), (30, f64::NEG_INFINITY), (44, f64::NAN)] {
        a[k] = x;
    }
    a[2 * n + 5] = f64::NAN;
    a[7 * n + 1] = -0.0;
    let mut v: Vec<f64> = (0..l).map(|_| rng.int(-8, 9) as f64 / 4.0).collect();
    v[9] = f64::NAN;
    v[10] = -0.0;
    // The loaded tiles: zero padding outside the arrays.
    let t: Vec<f64> = (0..tr * n).map(|k| if k / n < m { a[k] } else { 0.0 }).collect();
    let tv: Vec<f64> = (0..128).map(|k| if k < l { v[k] } else { 0.0 }).collect();
    let cut = |w: &[f64], cols: usize| -> Vec<f64> { w[..m * cols].to_vec() };
    let sorted = |desc: bool| move |x: &[f64]| order(x, desc).into_iter().map(|i| x[i]).collect::<Vec<f64>>();
    let args_of = |desc: bool| move |x: &[f64]| order(x, desc).into_iter().map(|i| i as f64).collect::<Vec<f64>>();
    let shape = (tr, n);
    let s1 = lines(&t, shape, 1, n, &sorted(false));
    let s0 = lines(&t, shape, 0, tr, &sorted(false));
    let d1 = lines(&t, shape, 1, n, &sorted(true));
    let i1 = lines(&t, shape, 1, n, &args_of(false));
    let id0 = lines(&t, shape, 0, tr, &args_of(true));
    let tv3 = lines(&t, shape, 1, 3, &|x| sorted(true)(x)[..3].to_vec());
    let ti3 = lines(&t, shape, 1, 3, &|x| args_of(true)(x)[..3].to_vec());
    // `where(a == a, a * 4, 0) as i32`: NaN becomes 0.
    let ti: Vec<f64> = t.iter().map(|x| if x.is_nan() { 0.0 } else { (x * 4.0).trunc() }).collect();
    let si = lines(&ti, shape, 1, n, &args_of(false));
    for elem in FLOATS {
        let mut args = vec![("A", arr(elem, &a, &[m, n])), ("V", arr(elem, &v, &[l]))];
        for o in ["S1", "S0", "D1", "I1", "ID0", "SI"] {
            args.push((o, sentinel(elem, &[m, n])));
        }
        args.extend([("TV", sentinel(elem, &[m, 3])), ("TI", sentinel(elem, &[m, 3]))]);
        args.extend([("SV", sentinel(elem, &[l])), ("IV", sentinel(elem, &[l]))]);
        let b = run(SRC, "sorts", args);
        let ctx = format!("{elem:?}");
        let ctx = |what: &str| format!("{ctx} {what}");
        assert_same(&out(&b, "S1"), &cut(&s1, n), &ctx("sort(a)"));
        assert_same(&out(&b, "S0"), &cut(&s0, n), &ctx("sort(a, 0)"));
        assert_same(&out(&b, "D1"), &cut(&d1, n), &ctx("sort(a, 1, descending = true)"));
        assert_same(&out(&b, "I1"), &cut(&i1, n), &ctx("argsort(a)"));
        assert_same(&out(&b, "ID0"), &cut(&id0, n), &ctx("argsort(a, 0, descending = true)"));
        assert_same(&out(&b, "TV"), &cut(&tv3, 3), &ctx("topk(a, 3) values"));
        assert_same(&out(&b, "TI"), &cut(&ti3, 3), &ctx("topk(a, 3) indices"));
        assert_same(&out(&b, "SV"), &sorted(false)(&tv)[..l], &ctx("sort(v) of 128"));
        assert_same(&out(&b, "IV"), &args_of(true)(&tv)[..l], &ctx("argsort(v, descending = true)"));
        assert_same(&out(&b, "SI"), &cut(&si, n), &ctx("argsort of an i32 tile with ties"));
    }
}
