//! Whole kernels: `map`, `atomic_add`, shared arrays, tile elements, control flow, scalars,
//! const parameters and `fn` generics.

use super::*;

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
            let runner = tilec_tests::cpu_runner(&set, "k", &args, &fixed).expect("compiles");
            let (b, launch) = runner.run(args).expect("runs");
            let rr = r.unwrap_or(16) as usize;
            assert_eq!(launch.grid, [m.div_ceil(rr) as i64, n.div_ceil(rr) as i64, 1]);
            let want: Vec<f64> = a.iter().map(|x| x * 2.0 + rr as f64).collect();
            assert_close(&out(&b, "O"), &want, tol(elem), &format!("{elem:?} R={rr}"));
        }
    }
}

/// Float const parameters: their defaults (an integer default of an `f64` parameter becomes a
/// float), values given as floats or integers, each rounded to the parameter's type, and the
/// instance's symbol naming the value (`2` and `2.0` are one instance).
#[test]
fn float_const_parameters_take_defaults_and_given_values() {
    use tilec_frontend::GenericArg;
    let src = "kernel k<T: float, const EPS: f32 = 1e-3, const S: f64 = 2>(A: T[N], O: mut T[N]) grid(1) {
        O[0:32] = A[0:32] * (S as T) + (EPS as T);
    }";
    let set = SourceSet::with_stdlib("test.tile", src);
    let a: Vec<f64> = (0..29).map(|k| k as f64 * 0.25 - 3.0).collect();
    for elem in FLOATS {
        for (given, eps, s, symbol) in [
            (vec![], 1e-3f32 as f64, 2.0, "k__ELEM__0p001__2p0"),
            (
                vec![("EPS", GenericArg::float(0.1)), ("S", GenericArg::Const(2))],
                0.1f32 as f64,
                2.0,
                "k__ELEM__0p1__2p0",
            ),
            (vec![("S", GenericArg::float(-1.5e-7))], 1e-3f32 as f64, -1.5e-7, "k__ELEM__0p001__m1p5em7"),
        ] {
            let mut args = HashMap::new();
            args.insert("A".to_string(), arr(elem, &a, &[29]));
            args.insert("O".to_string(), sentinel(elem, &[29]));
            let fixed: HashMap<String, GenericArg> = given.iter().map(|(n, g)| (n.to_string(), *g)).collect();
            let runner = tilec_tests::cpu_runner(&set, "k", &args, &fixed).expect("compiles");
            assert_eq!(runner.kernel.symbol, symbol.replace("ELEM", elem.name()));
            let (b, _) = runner.run(args).expect("runs");
            let want: Vec<f64> =
                a.iter().map(|x| elem.round(elem.round(x * elem.round(s)) + elem.round(eps))).collect();
            assert_close(&out(&b, "O"), &want, tol(elem), &format!("{elem:?} {given:?}"));
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

/// `fn`s returning several values, against an f64 reference: tiles and scalars, a partial last
/// tile (37 rows in tiles of 16), one tuple forwarded through another `fn`.
#[test]
fn fns_return_several_values() {
    let src = include_str!("../cases/mod.rs");
    let start = src.find("\nfn stats").expect("FN_RESULTS_SRC");
    let end = start + src[start..].find("\";").expect("end of FN_RESULTS_SRC");
    let program = &src[start..end];
    let mut rng = Rng::new(23);
    for elem in FLOATS {
        let (m, g) = (37usize, 3usize);
        let x = rng.vec(m * 8, -2.0, 2.0);
        let b = run(
            program,
            "fn_results",
            vec![
                ("X", arr(elem, &x, &[m, 8])),
                ("MX", sentinel(elem, &[m])),
                ("SM", sentinel(elem, &[m])),
                ("TOT", sentinel(elem, &[g])),
                ("SW", sentinel(elem, &[g, 2])),
            ],
        );
        let xr: Vec<f64> = x.iter().map(|&v| if elem == Scalar::F32 { v as f32 as f64 } else { v }).collect();
        let row = |i: usize| xr[i * 8..i * 8 + 8].iter().map(|v| 2.0 * v);
        let mx: Vec<f64> = (0..m).map(|i| row(i).fold(f64::NEG_INFINITY, f64::max)).collect();
        let sm: Vec<f64> = (0..m).map(|i| row(i).sum()).collect();
        let tot: Vec<f64> = (0..g).map(|k| (k * 16..(k * 16 + 16).min(m)).map(|i| row(i).sum::<f64>()).sum()).collect();
        let sw: Vec<f64> = (0..g).flat_map(|k| [mx[k * 16], tot[k]]).collect();
        let ctx = format!("{elem:?}");
        assert_close(&out(&b, "MX"), &mx, tol(elem), &format!("{ctx} row max"));
        assert_close(&out(&b, "SM"), &sm, tol(elem) * 8.0, &format!("{ctx} row sums"));
        assert_close(&out(&b, "TOT"), &tot, tol(elem) * 64.0, &format!("{ctx} tile sums"));
        assert_close(&out(&b, "SW"), &sw, tol(elem) * 64.0, &format!("{ctx} swapped"));
    }
}

/// Flexible shapes against an f64 reference, on two sets of extents: an extent expression
/// (`X: T[Z * H, N]`, checked against `Z` and `H` bound by the other arrays), an extent that is
/// a scalar parameter (`F: mut T[n]`), `cdiv` extents, and a const parameter taken from an
/// argument's extent (`W: T[C]`, `tile<T, C>`); then the errors of arguments that do not fit.
#[test]
fn flexible_shapes() {
    let src = include_str!("../cases/mod.rs");
    let start = src.find("\nkernel shapes").expect("SHAPES_SRC");
    let end = start + src[start..].find("\";").expect("end of SHAPES_SRC");
    let program = &src[start..end];
    let mut rng = Rng::new(29);
    for elem in FLOATS {
        for (z, h, n, f, c) in [(8usize, 3usize, 5usize, 11usize, 7usize), (5, 4, 1, 1, 17)] {
            let x = rng.vec(z * h * n, -2.0, 2.0);
            let p = rng.vec(h, -1.0, 1.0);
            let w = rng.vec(c, -1.0, 1.0);
            let m = (z * h).div_ceil(16);
            let args = |x_rows: usize, s_rows: usize, nv: i64| {
                vec![
                    ("X", arr(elem, &x[..x_rows * n], &[x_rows, n])),
                    ("P", arr(elem, &p, &[h])),
                    ("S", sentinel(elem, &[s_rows, n])),
                    ("n", int(nv)),
                    ("F", sentinel(elem, &[f])),
                    ("M", sentinel(elem, &[m])),
                    ("W", arr(elem, &w, &[c])),
                    ("O", sentinel(elem, &[s_rows, c])),
                ]
            };
            let b = run(program, "shapes", args(z * h, z, f as i64));
            let r = |v: &[f64]| -> Vec<f64> {
                v.iter().map(|&t| if elem == Scalar::F32 { t as f32 as f64 } else { t }).collect()
            };
            let (xr, pr, wr) = (r(&x), r(&p), r(&w));
            let s: Vec<f64> =
                (0..z * n).map(|e| (0..h).map(|k| xr[((e / n) * h + k) * n + e % n] * pr[k]).sum()).collect();
            let fw: Vec<f64> = (0..f).map(|i| i as f64 * 0.5).collect();
            // Rows past Z * H load as zeros (the masked load's padding).
            let mw: Vec<f64> = (0..m)
                .map(|bk| {
                    (bk * 16..bk * 16 + 16).map(|i| if i < z * h { xr[i * n] } else { 0.0 }).fold(f64::MIN, f64::max)
                })
                .collect();
            let sw: f64 = wr.iter().sum();
            let o: Vec<f64> = (0..z * c).map(|e| wr[e % c] * (e / c) as f64 + sw).collect();
            let ctx = format!("{elem:?} Z={z} H={h} N={n} n={f} C={c}");
            assert_close(&out(&b, "S"), &s, tol(elem) * 4.0, &format!("{ctx} S"));
            assert_close(&out(&b, "F"), &fw, tol(elem), &format!("{ctx} F"));
            assert_close(&out(&b, "M"), &mw, tol(elem), &format!("{ctx} M"));
            assert_close(&out(&b, "O"), &o, tol(elem) * 8.0, &format!("{ctx} O"));
            // Arguments that do not fit: X's rows are not Z * H; F is not n long.
            let set = SourceSet::with_stdlib("shapes.tile", program);
            let bind_err = |args: Vec<(&str, ArgValue)>| {
                let args: HashMap<String, ArgValue> = args.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                let runner = tilec_tests::cpu_runner(&set, "shapes", &args, &HashMap::new()).expect("compiles");
                runner.run(args).expect_err("a binding error")
            };
            let e = bind_err(args(z * h - 1, z, f as i64));
            assert_eq!(e.code(), "E0412", "{e}");
            assert!(e.to_string().contains(&format!("expected shape [Z * H, N] = [{}, {n}]", z * h)), "{e}");
            let e = bind_err(args(z * h, z, f as i64 + 1));
            assert!(e.code() == "E0412" && e.to_string().contains(&format!("[n] = [{}]", f + 1)), "{e}");
            let e = bind_err(args(z * h, z, -1));
            assert!(e.code() == "E0441" && e.to_string().contains("negative"), "{e}");
        }
    }
}

/// `fn`s with array parameters (language §2.3): a generic element type and a const parameter
/// inferred from the argument, an extent name bound to the argument's extent, reads in a loop,
/// stores through a `mut` parameter, a `mut` array passed as a read-only one, one `fn` passing
/// its array on to another, and small matrices read from a `fn`'s array.
#[test]
fn fns_take_arrays_by_name() {
    let src = "
        fn col_sum<T>(A: T[M, 4], c: i32) -> T {
            let s = 0.0;
            for r in 0..M {
                s += A[r, c];
            }
            s
        }
        fn sums<T>(A: T[M, 4]) -> tile<T, 4> {
            let t = tile<T, 4>::zeros();
            for c in 0..4 {
                t[c] = col_sum(A, c);
            }
            t
        }
        fn put<T>(O: mut T[R, 4], i: i32, t: tile<T, 4>) {
            O[i, 0:4] = t;
        }
        fn traces<T, const K: i32>(B: T[P, K, K], p: i32) -> T {
            trace(B[p])
        }
        kernel k<T: float>(A: T[M, 4], O: mut T[2, 4], B: T[P, 3, 3], Tr: mut T[P]) grid(P) {
            let p = program_id(0);
            if p == 0 {
                put(O, 0, sums(A));
                put(O, 1, sums(O) * 0.0 + tile<T, 4>::full(M as T));
            }
            Tr[p] = traces(B, p);
        }
    ";
    let mut rng = Rng::new(47);
    for elem in FLOATS {
        let (m, p) = (7usize, 5usize);
        let a = rng.vec(m * 4, -1.0, 1.0);
        let bm = rng.vec(p * 9, -1.0, 1.0);
        let b = run(
            src,
            "k",
            vec![
                ("A", arr(elem, &a, &[m, 4])),
                ("O", sentinel(elem, &[2, 4])),
                ("B", arr(elem, &bm, &[p, 3, 3])),
                ("Tr", sentinel(elem, &[p])),
            ],
        );
        let o = out(&b, "O");
        let want: Vec<f64> =
            (0..4).map(|c| (0..m).map(|r| elem.round(a[r * 4 + c])).sum()).chain([m as f64; 4]).collect();
        assert_close(&o, &want, tol(elem), &format!("{elem:?} column sums through fns"));
        let tr: Vec<f64> = (0..p).map(|k| (0..3).map(|i| elem.round(bm[k * 9 + i * 4])).sum()).collect();
        assert_close(&out(&b, "Tr"), &tr, tol(elem), &format!("{elem:?} traces of a fn's array"));
    }
}
