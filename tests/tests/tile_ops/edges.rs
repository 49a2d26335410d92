//! Sweeps and edge cases: matmul shapes and sizes, aliasing, NaN, tile element limits and
//! the fused accumulate.

use super::*;

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

/// The CPU target's limit of 65536 elements per register tile (E0204) applies to tiles made
/// by slices and by `outer` too, not only to written tile types: `A[0:257, 0:256]` (65792
/// elements) is rejected at compile time, as is the `outer` of the same shape.
#[test]
fn tile_element_limit_applies_to_slice_and_outer_results() {
    for body in ["let t = A[0:257, 0:256]; O[0:257, 0:256] = t;", "O[0:257, 0:256] = outer(A[0:257, 0], A[0, 0:256]);"]
    {
        let src = format!("kernel k(A: f32[N, N], O: mut f32[N, N]) grid(1) {{ {body} }}");
        let set = SourceSet::with_stdlib("test.tile", src.as_str());
        let mut args = HashMap::new();
        args.insert("A".to_string(), arr(Scalar::F32, &[0.0], &[1, 1]));
        args.insert("O".to_string(), arr(Scalar::F32, &[0.0], &[1, 1]));
        match tilec_tests::cpu_runner(&set, "k", &args, &HashMap::new()) {
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

/// `bool` tiles (from `map`) hold one flag per element through stores, copies and indexing,
/// and an index that constant folding puts out of range writes nothing.
#[test]
fn bool_tiles_and_folded_out_of_range_inserts() {
    let src = "fn pos(x: f32) -> bool { return x > 0.0; }
    kernel k(X: f32[8], Y: mut f32[8]) grid(1) {
        let m = map(pos, X[0:8]);
        m[0] = true;
        for i in 0..8 {
            if m[i] { Y[i] = 1.0; } else { Y[i] = -1.0; }
        }
        let t = tile<f32, 4>::zeros();
        let j = 3;
        t[j + 1] = 5.0;
        Y[0] = t[0] + Y[0];
    }";
    let x = [-1.0, 2.0, -3.0, 4.0, 5.0, -6.0, 7.0, 0.0];
    let bo = run(src, "k", vec![("X", arr(Scalar::F32, &x, &[8])), ("Y", arr(Scalar::F32, &[0.0; 8], &[8]))]);
    assert_eq!(out(&bo, "Y"), vec![1.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0]);
}
