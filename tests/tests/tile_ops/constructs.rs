//! Issue 29's constructs on the CPU against plain f64 references: `flip`, reversed scans,
//! `copysign`/`signbit` on `0.0` and `-0.0`, `inf`/`nan`, `argmax`/`argmin` of integer tiles,
//! a three-operand `map`, `row(v)`, `reshape`, `join`/`split`, `scan` with a user `fn`, `fma` of
//! tiles and float literals typed by the instance's `T` (`tests/tests/cases/constructs.tile`,
//! partial 40x7 tiles over a 37x6 array).

use super::*;

const SRC: &str = include_str!("../cases/constructs.tile");

/// `f` run down each column (`axis` 0) or along each row of the `r x c` row-major tile `t`,
/// from the last element back when `reverse`: the inclusive scan.
fn scan(t: &[f64], (r, c): (usize, usize), axis: u8, reverse: bool, f: &dyn Fn(f64, f64) -> f64) -> Vec<f64> {
    let mut w = t.to_vec();
    let (lines, len) = if axis == 0 { (c, r) } else { (r, c) };
    let at = |line: usize, k: usize| if axis == 0 { k * c + line } else { line * c + k };
    for line in 0..lines {
        let order: Vec<usize> = if reverse { (0..len).rev().collect() } else { (0..len).collect() };
        for p in 1..len {
            let (prev, cur) = (at(line, order[p - 1]), at(line, order[p]));
            w[cur] = f(w[prev], t[cur]);
        }
    }
    w
}

/// The index of the first largest (`max`) or smallest element of `xs`.
fn arg(xs: impl Iterator<Item = i64>, max: bool) -> f64 {
    let v: Vec<i64> = xs.collect();
    let best = if max { *v.iter().max().unwrap() } else { *v.iter().min().unwrap() };
    v.iter().position(|x| *x == best).unwrap() as f64
}

#[test]
fn flips_reversed_scans_signs_and_nary_maps_match_f64_references() {
    let (m, n, tr, tc, l) = (37usize, 6usize, 40usize, 7usize, 97usize);
    let mut rng = Rng::new(29);
    let mut a: Vec<f64> = (0..m * n).map(|_| rng.int(-16, 17) as f64 / 8.0).collect();
    a[3 * n + 2] = 0.0;
    a[5 * n + 1] = -0.0;
    let v: Vec<f64> = (0..l).map(|_| rng.int(-16, 17) as f64 / 8.0).collect();
    // The loaded tiles: zero padding outside the arrays.
    let t: Vec<f64> =
        (0..tr * tc).map(|k| if k / tc < m && k % tc < n { a[k / tc * n + k % tc] } else { 0.0 }).collect();
    let tv: Vec<f64> = (0..100).map(|k| if k < l { v[k] } else { 0.0 }).collect();
    let cut = |w: &[f64]| -> Vec<f64> { (0..m * n).map(|k| w[k / n * tc + k % n]).collect() };
    let flip0: Vec<f64> = (0..tr * tc).map(|k| t[(tr - 1 - k / tc) * tc + k % tc]).collect();
    let flip1: Vec<f64> = (0..tr * tc).map(|k| t[k / tc * tc + tc - 1 - k % tc]).collect();
    let flip01: Vec<f64> = (0..tr * tc).map(|k| t[tr * tc - 1 - k]).collect();
    let shape = (tr, tc);
    let rs = scan(&t, shape, 0, true, &|x, y| x + y);
    let (rmax, cmin) = (scan(&t, shape, 1, true, &f64::max), scan(&t, shape, 0, false, &f64::min));
    let rv = scan(&tv, (1, 100), 1, true, &|x, y| x + y);
    let ai: Vec<i64> = t.iter().map(|x| (x * 8.0).trunc() as i64).collect();
    for elem in FLOATS {
        let mut args = vec![("A", arr(elem, &a, &[m, n])), ("V", arr(elem, &v, &[l]))];
        for o in ["F", "G", "RS", "RX", "CS", "MP"] {
            args.push((o, sentinel(elem, &[m, n])));
        }
        args.extend([("H", sentinel(elem, &[l])), ("RV", sentinel(elem, &[l]))]);
        args.extend([("RW", sentinel(elem, &[2, l])), ("X", sentinel(elem, &[64]))]);
        args.extend([("QR", sentinel(elem, &[12, 4])), ("RT", sentinel(elem, &[l])), ("JS", sentinel(elem, &[m, 2]))]);
        args.extend([("SC", sentinel(elem, &[m, n])), ("SV", sentinel(elem, &[l])), ("FM", sentinel(elem, &[m, n]))]);
        let b = run(SRC, "constructs", args);
        let ctx = format!("{elem:?}");
        let ctx = |what: &str| format!("{ctx} {what}");
        assert_exact(&out(&b, "F"), &cut(&flip0), &ctx("flip(a, 0)"));
        let g: Vec<f64> = flip01.iter().zip(&flip1).map(|(x, y)| x + y * 3.0).collect();
        assert_exact(&out(&b, "G"), &cut(&g), &ctx("flip(a) + flip(a, 1) * 3"));
        assert_exact(&out(&b, "RS"), &cut(&rs), &ctx("cumsum(a, 0, reverse = true)"));
        let rx: Vec<f64> = rmax.iter().zip(&cmin).map(|(x, y)| x - y).collect();
        assert_exact(&out(&b, "RX"), &cut(&rx), &ctx("cummax reversed - cummin"));
        let cs: Vec<f64> =
            t.iter().map(|x| (x + 1.0).copysign(x - 0.25) + if x.is_sign_negative() { 1.0 } else { 0.5 }).collect();
        assert_exact(&out(&b, "CS"), &cut(&cs), &ctx("copysign, signbit"));
        let mp: Vec<f64> = t.iter().enumerate().map(|(k, x)| x * (x * 2.0) + (k % tc) as f64).collect();
        assert_exact(&out(&b, "MP"), &cut(&mp), &ctx("map of three operands"));
        assert_exact(&out(&b, "H"), &(0..l).map(|k| tv[99 - k]).collect::<Vec<_>>(), &ctx("flip of a long vector"));
        assert_exact(&out(&b, "RV"), &rv[..l], &ctx("reversed cumsum of a long vector"));
        let rw = out(&b, "RW");
        assert_exact(&rw[..l], &v.iter().map(|x| x * 2.0).collect::<Vec<_>>(), &ctx("row(v)"));
        assert!(rw[l..].iter().all(|x| *x == SENTINEL), "{}", ctx("row(v) writes one row"));
        // reshape(a[0:8, 0:6], 12, 4): the 48 elements in row-major order.
        let q: Vec<f64> = (0..48).map(|k| t[k / 6 * tc + k % 6]).collect();
        assert_exact(&out(&b, "QR"), &q, &ctx("reshape to 12 x 4"));
        // reshape(transpose(reshape(v, 10, 10)), 100): element 10 i + j is v[10 j + i].
        let rt: Vec<f64> = (0..l).map(|k| tv[k % 10 * 10 + k / 10]).collect();
        assert_exact(&out(&b, "RT"), &rt, &ctx("reshape of a long vector and back"));
        // join(a[:, 0], a[:, 3] * 2) as the two columns; split back.
        let js: Vec<f64> =
            (0..m * 2).map(|k| if k % 2 == 0 { t[k / 2 * tc] } else { t[k / 2 * tc + 3] * 2.0 }).collect();
        assert_exact(&out(&b, "JS"), &js, &ctx("join"));
        // scan with `decay(acc, x) = acc * 0.5 + x`, rounded to the element type at each step.
        let r = |x: f64| elem.round(x);
        let decay = |acc: f64, x: f64| r(r(acc * 0.5) + x);
        let sc: Vec<f64> = scan(&t, shape, 0, false, &decay)
            .iter()
            .zip(scan(&t, shape, 1, true, &decay))
            .map(|(x, y)| x - y)
            .collect();
        assert_close(&out(&b, "SC"), &cut(&sc), tol(elem), &ctx("scan with a user fn, both axes"));
        assert_exact(
            &out(&b, "SV"),
            &scan(&tv, (1, 100), 1, true, &decay)[..l],
            &ctx("reversed scan of a long vector"),
        );
        // fma(a, a + 0.5, -0.25) + fma(2.0, a, column 0 of a): exact on these eighths, fused or
        // not.
        let fm: Vec<f64> = t.iter().enumerate().map(|(k, x)| x * (x + 0.5) - 0.25 + 2.0 * x + t[k / tc * tc]).collect();
        assert_exact(&out(&b, "FM"), &cut(&fm), &ctx("fma of tiles, a literal and a column"));
        let x = out(&b, "X");
        let mut want = vec![SENTINEL; 64];
        for i in 0..tr {
            want[i] = arg((0..tc).map(|j| ai[i * tc + j]), true);
        }
        for j in 0..tc {
            want[40 + j] = arg((0..tr).map(|i| ai[i * tc + j]), false);
        }
        want[47] = arg(ai.iter().copied(), true);
        want[48] = arg(ai.iter().copied(), false);
        want[49] = f64::INFINITY;
        want[50] = f64::NEG_INFINITY;
        want[52] = t.iter().sum();
        // Literals without context are `T` (0.1 as f32 in the f32 instance).
        let tenth = if elem == Scalar::F32 { 0.1f32 as f64 } else { 0.1 };
        let fifth = if elem == Scalar::F32 { 0.2f32 as f64 } else { 0.2 };
        want[53] = tenth * a[0];
        want[54] = t.iter().map(|x| if *x > 0.0 { tenth } else { fifth }).sum();
        want[55] = 1.0;
        want[58] = (0..tr).map(|i| t[i * tc + 3] * 2.0 - t[i * tc] * 3.0).sum();
        want[57] = (0..24).map(|k| t[k / 6 * tc + k % 6] * k as f64).sum();
        want[56] = arg((0..tr).rev().flat_map(|i| (0..tc).map(move |j| (i, j))).map(|(i, j)| ai[i * tc + j]), true);
        assert!(x[51].is_nan(), "{}", ctx("nan"));
        assert_exact(&x[49..51], &want[49..51], &ctx("inf, -inf"));
        let finite = |i: &usize| !(49..52).contains(i);
        let (xs, ws): (Vec<f64>, Vec<f64>) =
            x.iter().zip(&want).enumerate().filter(|(i, _)| finite(i)).map(|(_, p)| p).unzip();
        assert_close(&xs, &ws, tol(elem), &ctx("argmax/argmin of i32 tiles, inf, literals typed by T"));
    }
}
