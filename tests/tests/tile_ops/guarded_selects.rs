//! `where(mask, map(f, x), y)` with a libm-backed `f` (`exp` of `f64`, `log`, `sin`, `tanh`): after
//! `fuse-maps` a select in a map body, which the CPU backends turn into a branch that calls `f`
//! only for the chosen elements (`midend/src/selectguard.rs`).

use super::*;

/// A costly `then` arm, a costly `else` arm and both, under a mask from a run-time bound (none,
/// some and all columns kept), on partial tiles of 1x1 to 77x131 over smaller and larger
/// arrays; against an f64 reference on every CPU backend this tilec has, with a check that the
/// three selects were guarded.
#[test]
fn guarded_selects() {
    for elem in FLOATS {
        for (r, c, m, n) in [(1, 1, 1, 1), (17, 5, 13, 4), (16, 16, 17, 17), (77, 131, 70, 131)] {
            let src = format!(
                "fn fe<T>(x: T) -> T {{ exp(x) }}
                fn fl<T>(x: T) -> T {{ log(x) }}
                fn fs<T>(x: T) -> T {{ sin(x) }}
                fn ft<T>(x: T) -> T {{ tanh(x) }}
                kernel k<T: float>(A: T[M, N], O: mut T[3, {r}, {c}], nb: i32) grid(1) {{
                    let a = A[0:{r}, 0:{c}];
                    let keep = tile<i32, {r}, {c}>::iota(1) < nb;
                    O[0, 0:{r}, 0:{c}] = where(keep, map(fe, a), -2.0);
                    O[1, 0:{r}, 0:{c}] = where(keep, 3.0, map(fl, a * a + 1.0));
                    O[2, 0:{r}, 0:{c}] = where(keep, map(fs, a), map(ft, a));
                }}"
            );
            let mut rng = Rng::new(5 + (r * c) as u64);
            let a = rng.vec(m * n, -2.0, 2.0);
            let set = SourceSet::with_stdlib("test.tile", src.as_str());
            let args_for = |nb: i64| -> HashMap<String, ArgValue> {
                [("A", arr(elem, &a, &[m, n])), ("O", sentinel(elem, &[3, r, c])), ("nb", int(nb))]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect()
            };
            for nb in [0, (c / 2) as i64, c as i64 + 3] {
                let args = || args_for(nb);
                let ctx = format!("{elem:?} {r}x{c} tile over {m}x{n}, nb {nb}");
                let mut want = vec![SENTINEL; 3 * r * c];
                for i in 0..r {
                    for j in 0..c {
                        let x = if i < m && j < n { a[i * n + j] } else { 0.0 };
                        let keep = (j as i64) < nb;
                        want[i * c + j] = if keep { x.exp() } else { -2.0 };
                        want[(r + i) * c + j] = if keep { 3.0 } else { (x * x + 1.0).ln() };
                        want[(2 * r + i) * c + j] = if keep { x.sin() } else { x.tanh() };
                    }
                }
                for (be, o) in outputs_per_backend(&set, "k", args, "O", &ctx) {
                    assert_close(&o, &want, tol(elem), &format!("{ctx}, {be}"));
                }
            }
            // The three selects became branches, but the `f32` `exp`'s (computed inline, on
            // vectors: `codegen-cpu/src/expf.rs`).
            let module = compiled(&set, "k", &args_for(0));
            let guarded = tilec_midend::passes::for_cpu(&module, false).expect("verifies");
            let body = tilec_midend::print::print_function(&guarded.funcs[guarded.kernels[0].body]);
            let inline = usize::from(elem == Scalar::F32);
            assert_eq!(body.matches(" = if ").count(), 3 - inline, "{body}");
            assert_eq!(body.matches(" = select ").count(), inline, "{body}");
        }
    }
}
