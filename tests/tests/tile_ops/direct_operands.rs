//! Products whose operands the LLVM CPU backend reads straight from their arrays
//! (`tilec_midend::fusion::direct_loads`): from the array where the tile lies inside it, from a
//! copy with the load's bounds rules where it does not, and never past a store that follows
//! the load.

use super::*;

/// Blocked products over a batch of `N x N` matrices (three programs), `N` from 1 to 77 so
/// that tiles are inside, partial or past the array: `X - A X + A^T A` block by block, with
/// both operands and a transposed left operand read in place; then a product whose left
/// operand was loaded before a store to its array (it must see the old values). Against an
/// f64 reference, with the same bits from Cranelift and LLVM.
#[test]
fn product_operands_read_in_place() {
    for elem in FLOATS {
        for n in [1usize, 16, 17, 40, 77] {
            let src =
                "kernel k<T: float>(A: T[B, N, N], X: mut T[B, N, N], O: mut T[B, N, N], P: mut T[B, 16, 16]) grid(B) {
                    let b = program_id(0);
                    for ib in 0..cdiv(N, 16) {
                        let i0 = ib * 16;
                        for jb in 0..cdiv(N, 16) {
                            let j0 = jb * 16;
                            let t = X[b, i0:i0+16, j0:j0+16];
                            for kb in 0..cdiv(N, 16) {
                                let k0 = kb * 16;
                                t -= A[b, i0:i0+16, k0:k0+16] @ X[b, k0:k0+16, j0:j0+16];
                                t += transpose(A[b, k0:k0+16, i0:i0+16]) @ A[b, k0:k0+16, j0:j0+16];
                            }
                            O[b, i0:i0+16, j0:j0+16] = t;
                        }
                    }
                    let p = X[b, 0:16, 0:16];
                    X[b, 0:16, 0:16] = A[b, 0:16, 0:16];
                    P[b, 0:16, 0:16] = p @ X[b, 0:16, 0:16];
                }";
            let batch = 3;
            let mut rng = Rng::new(17 + n as u64);
            let (a, x) = (rng.vec(batch * n * n, -1.0, 1.0), rng.vec(batch * n * n, -1.0, 1.0));
            let args = || -> HashMap<String, ArgValue> {
                [
                    ("A", arr(elem, &a, &[batch, n, n])),
                    ("X", arr(elem, &x, &[batch, n, n])),
                    ("O", sentinel(elem, &[batch, n, n])),
                    ("P", sentinel(elem, &[batch, 16, 16])),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
            };
            let ctx = format!("{elem:?} N={n}");
            // The four operand loads in the loop, and the right operand after the store; not
            // `p`, loaded before it.
            let set = SourceSet::with_stdlib("test.tile", src);
            let module = compiled(&set, "k", &args());
            let body = &module.funcs[module.kernels[0].body];
            let mut uses = HashMap::new();
            body.body.count_uses(&mut uses);
            let (views, unformed) = tilec_midend::fusion::left_operands(body, &uses);
            assert_eq!(tilec_midend::fusion::direct_loads(body, &uses, &views, &unformed, 256).len(), 5, "{ctx}");
            // Reference: element (i, j) of matrix `m` of `v`, zero outside `lim`.
            let at = |v: &[f64], m: usize, i: usize, j: usize, lim: usize| {
                if i < lim && j < lim {
                    v[(m * n + i) * n + j]
                } else {
                    0.0
                }
            };
            let (mut want_o, mut want_p) = (vec![0.0; batch * n * n], vec![SENTINEL; batch * 256]);
            for m in 0..batch {
                for i in 0..n {
                    for j in 0..n {
                        let ax: f64 = (0..n).map(|q| at(&a, m, i, q, n) * at(&x, m, q, j, n)).sum();
                        let ata: f64 = (0..n).map(|q| at(&a, m, q, i, n) * at(&a, m, q, j, n)).sum();
                        want_o[(m * n + i) * n + j] = at(&x, m, i, j, n) - ax + ata;
                    }
                }
                // `p` holds the old X; the right operand, A's values where X was overwritten.
                for i in 0..16 {
                    for j in 0..16 {
                        let lim = n.min(16);
                        let v: f64 = (0..16).map(|q| at(&x, m, i, q, lim) * at(&a, m, q, j, lim)).sum();
                        want_p[(m * 16 + i) * 16 + j] = v;
                    }
                }
            }
            for (name, want) in [("O", &want_o), ("P", &want_p)] {
                let outs = outputs_per_backend(&set, "k", args, name, &ctx);
                let ctx = format!("{ctx} {name}");
                assert_normwise(&outs[0].1, want, tol(elem) * 10.0, &ctx);
                for (be, o) in &outs[1..] {
                    assert_exact(o, &outs[0].1, &format!("{ctx}: {be} against Cranelift"));
                }
            }
        }
    }
}

/// Transposes of tiles loaded for the transpose alone (`tilec_midend::fusion::direct_loads`):
/// the LLVM backend transposes them from the array by blocks where the tile lies inside it,
/// and from the load's copy where it does not (zeros, or a `load_into`'s old values, outside).
/// Tiles of 16 x 16, 16 x 8, 8 x 16, 32 x 16 (blocks of 8 `f32` or 4 `f64`; the 32 x 16 ones
/// from the load's copy, being over the backend's 256 elements) and 8 x 12 (blocks for `f64`
/// only) over `M x N` matrices of 1 to 131 rows and columns, so that tiles are
/// inside, partial or past the array: exact values against a plain transpose, and the same
/// bits from Cranelift and LLVM.
#[test]
fn transposes_of_loaded_tiles() {
    for elem in FLOATS {
        for (tr, tc) in [(16usize, 16usize), (16, 8), (8, 16), (32, 16), (8, 12)] {
            for (m, n) in [(1usize, 1usize), (17, 40), (77, 16), (131, 77)] {
                let src = format!(
                    "kernel k<T: float>(A: T[B, M, N], O: mut T[B, {tc}, {tr}], P: mut T[B, {tc}, {tr}]) grid(B) {{
                        let b = program_id(0);
                        let r0 = (b % 3) * {tr} - {tr} / 2;
                        let c0 = (b / 3) * {tc};
                        O[b, 0:{tc}, 0:{tr}] = transpose(A[b, r0:r0+{tr}, c0:c0+{tc}]);
                        let d = tile<T, {tr}, {tc}>::full(7.0);
                        d[:] = A[b, r0+{tr}/2:r0+{tr}/2+{tr}, c0:c0+{tc}];
                        P[b, 0:{tc}, 0:{tr}] = transpose(d);
                    }}"
                );
                let batch = 12;
                let mut rng = Rng::new(31 + (m * n + tr) as u64);
                let a = rng.vec(batch * m * n, -1.0, 1.0);
                let args = || -> HashMap<String, ArgValue> {
                    [
                        ("A", arr(elem, &a, &[batch, m, n])),
                        ("O", sentinel(elem, &[batch, tc, tr])),
                        ("P", sentinel(elem, &[batch, tc, tr])),
                    ]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect()
                };
                let ctx = format!("{elem:?} {tr}x{tc} tiles of {m}x{n}");
                let set = SourceSet::with_stdlib("test.tile", &src);
                let module = compiled(&set, "k", &args());
                let body = &module.funcs[module.kernels[0].body];
                let mut uses = HashMap::new();
                body.body.count_uses(&mut uses);
                let (views, unformed) = tilec_midend::fusion::left_operands(body, &uses);
                // The LLVM backend's limit (`DIRECT_MAX_ELEMS`): 32 x 16 tiles are copied by
                // their loads and transposed from the copy.
                let direct = if tr * tc <= 256 { 2 } else { 0 };
                assert_eq!(
                    tilec_midend::fusion::direct_loads(body, &uses, &views, &unformed, 256).len(),
                    direct,
                    "{ctx}"
                );
                let (mut want_o, mut want_p) = (Vec::new(), Vec::new());
                for q in 0..batch {
                    let mat = &a[q * m * n..(q + 1) * m * n];
                    let (r0, c0) = ((q % 3) as i64 * tr as i64 - (tr / 2) as i64, (q / 3) as i64 * tc as i64);
                    let rp = r0 + (tr / 2) as i64;
                    for j in 0..tc {
                        for i in 0..tr {
                            want_o.push(padded(mat, m, n, r0, c0, i, j).unwrap_or(0.0));
                            want_p.push(padded(mat, m, n, rp, c0, i, j).unwrap_or(7.0));
                        }
                    }
                }
                for (name, want) in [("O", &want_o), ("P", &want_p)] {
                    for (be, o) in outputs_per_backend(&set, "k", args, name, &ctx) {
                        assert_exact(&o, want, &format!("{ctx} {name} ({be})"));
                    }
                }
            }
        }
    }
}

/// A transposed left operand loaded before a store to its array (directly, and outside a loop
/// whose body stores to it): the product must see the values from before the store, so the
/// load is not read in place through the unformed `transpose` (`fusion::direct_loads` skips
/// transposes in `left_operands`' unformed set). Against an f64 reference, both CPU backends.
#[test]
fn transposed_left_operand_loaded_before_a_store() {
    let src =
        "kernel k<T: float>(W: mut T[B, 16, 16], X: T[B, 16, 16], P: mut T[B, 16, 16], Q: mut T[B, 16, 16]) grid(B) {
        let b = program_id(0);
        let wt = transpose(W[b, 0:16, 0:16]);
        W[b, 0:16, 0:16] = X[b, 0:16, 0:16];
        P[b, 0:16, 0:16] = wt @ X[b, 0:16, 0:16];
        let vt = transpose(Q[b, 0:16, 0:16]);
        let acc = tile<T, 16, 16>::zeros();
        for r in 0..2 {
            Q[b, 0:16, 0:16] = X[b, 0:16, 0:16] * (r as T);
            acc += vt @ X[b, 0:16, 0:16];
        }
        Q[b, 0:16, 0:16] = acc;
    }";
    let batch = 2;
    for elem in FLOATS {
        let mut rng = Rng::new(5);
        let (w, x, q) =
            (rng.vec(batch * 256, -1.0, 1.0), rng.vec(batch * 256, -1.0, 1.0), rng.vec(batch * 256, -1.0, 1.0));
        let args = || -> HashMap<String, ArgValue> {
            [
                ("W", arr(elem, &w, &[batch, 16, 16])),
                ("X", arr(elem, &x, &[batch, 16, 16])),
                ("P", sentinel(elem, &[batch, 16, 16])),
                ("Q", arr(elem, &q, &[batch, 16, 16])),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
        };
        // (A^T X)[i, j] for the old values `a` of matrix `m`, times `scale`.
        let at_x = |a: &[f64], scale: f64| -> Vec<f64> {
            let mut out = vec![0.0; batch * 256];
            for m in 0..batch {
                for i in 0..16 {
                    for j in 0..16 {
                        let v: f64 = (0..16).map(|k| a[m * 256 + k * 16 + i] * x[m * 256 + k * 16 + j]).sum();
                        out[m * 256 + i * 16 + j] = scale * v;
                    }
                }
            }
            out
        };
        let set = SourceSet::with_stdlib("test.tile", src);
        for (name, want) in [("P", at_x(&w, 1.0)), ("Q", at_x(&q, 2.0))] {
            for (be, o) in outputs_per_backend(&set, "k", args, name, &format!("{elem:?}")) {
                assert_normwise(&o, &want, tol(elem) * 10.0, &format!("{elem:?} {name} ({be})"));
            }
        }
    }
}

/// Tiles loaded for a `map` alone (`tilec_midend::fusion::map_loads`), which the LLVM backend
/// reads from the array where the tile lies inside it and from a copy with the load's bounds
/// rules where it does not: rows streamed into an accumulator computed in place
/// (`acc += A[i, j0:j0+40] * y`), two 8 x 40 blocks (the array's row stride), a masked load
/// that keeps its tile's values outside the array, at column offsets that start 3 before the
/// block (negative for the first) and end past `N`; and a load made before a store to its
/// array, which must see the old values. Against an f64 reference, with the same bits from
/// Cranelift and LLVM.
#[test]
fn map_operands_read_in_place() {
    let src = "kernel k<T: float>(A: T[M, N], X: T[M, N], Y: T[M], Z: mut T[M, N], P: mut T[G, N],
                 O: mut T[M, N], Q: mut T[M, N], R: mut T[M, N]) grid(cdiv(M, 8), cdiv(N, 40)) {
        let p = program_id(0);
        let i0 = p * 8;
        let c0 = program_id(1) * 40;
        let j0 = c0 - 3;
        let acc = tile<T, 40>::zeros();
        for i in i0..i0+8 {
            acc += A[i, j0:j0+40] * Y[i];
        }
        P[p, c0:c0+40] = acc;
        O[i0:i0+8, c0:c0+40] = A[i0:i0+8, j0:j0+40] * (2.0 as T) + X[i0:i0+8, j0:j0+40];
        let t = tile<T, 8, 40>::full(7.0 as T);
        t[:, :] = X[i0+4:i0+12, j0:j0+40];
        Q[i0:i0+8, c0:c0+40] = t * (3.0 as T) + (1.0 as T);
        let z = Z[i0:i0+8, c0:c0+40];
        Z[i0:i0+8, c0:c0+40] = X[i0:i0+8, c0:c0+40];
        R[i0:i0+8, c0:c0+40] = z * (3.0 as T) + (1.0 as T);
    }";
    for elem in FLOATS {
        for (m, n) in [(8usize, 5usize), (8, 40), (24, 83)] {
            let g = m / 8;
            let mut rng = Rng::new(5 + (m * n) as u64);
            let (a, x, z) = (rng.vec(m * n, -1.0, 1.0), rng.vec(m * n, -1.0, 1.0), rng.vec(m * n, -1.0, 1.0));
            let y = rng.vec(m, -1.0, 1.0);
            let args = || -> HashMap<String, ArgValue> {
                [
                    ("A", arr(elem, &a, &[m, n])),
                    ("X", arr(elem, &x, &[m, n])),
                    ("Y", arr(elem, &y, &[m])),
                    ("Z", arr(elem, &z, &[m, n])),
                    ("P", sentinel(elem, &[g, n])),
                    ("O", sentinel(elem, &[m, n])),
                    ("Q", sentinel(elem, &[m, n])),
                    ("R", sentinel(elem, &[m, n])),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
            };
            let ctx = format!("{elem:?} {m}x{n}");
            // Read in place: the loop's row, O's two blocks, the masked load; not `z`.
            let set = SourceSet::with_stdlib("test.tile", src);
            let module = compiled(&set, "k", &args());
            let body = &module.funcs[module.kernels[0].body];
            let mut uses = HashMap::new();
            body.body.count_uses(&mut uses);
            assert_eq!(tilec_midend::fusion::map_loads(body, &uses).len(), 4, "{ctx}");
            // Element (i, j) of `v`, or `or` outside the matrix.
            let at = |v: &[f64], i: usize, j: i64, or: f64| {
                if i < m && (0..n as i64).contains(&j) {
                    v[i * n + j as usize]
                } else {
                    or
                }
            };
            let mut want: HashMap<&str, Vec<f64>> = ["P", "O", "Q", "R"]
                .iter()
                .map(|k| (*k, vec![SENTINEL; if *k == "P" { g * n } else { m * n }]))
                .collect();
            want.insert("Z", x.clone());
            for c in 0..n {
                let j = c as i64 - 3;
                for pp in 0..g {
                    want.get_mut("P").expect("P")[pp * n + c] =
                        (0..8).map(|r| at(&a, pp * 8 + r, j, 0.0) * y[pp * 8 + r]).sum();
                }
                for i in 0..m {
                    want.get_mut("O").expect("O")[i * n + c] = 2.0 * at(&a, i, j, 0.0) + at(&x, i, j, 0.0);
                    want.get_mut("Q").expect("Q")[i * n + c] = 3.0 * at(&x, i + 4, j, 7.0) + 1.0;
                    want.get_mut("R").expect("R")[i * n + c] = 3.0 * z[i * n + c] + 1.0;
                }
            }
            for name in ["P", "O", "Q", "R", "Z"] {
                let outs = outputs_per_backend(&set, "k", args, name, &ctx);
                let ctx = format!("{ctx} {name}");
                assert_close(&outs[0].1, &want[name], tol(elem) * 10.0, &ctx);
                for (be, o) in &outs[1..] {
                    assert_exact(o, &outs[0].1, &format!("{ctx}: {be} against Cranelift"));
                }
            }
        }
    }
}

/// Matrix-vector products of blocks of whole rows, the walker's form (`W[i0:i0+256, 0:8] @
/// x`): the Cranelift backend reads the block from the array where its rows follow one another
/// there (`K = 8`, a whole block) and from the load's copy otherwise (`K = 12`, or the partial
/// last block of `N = 700`), loads the row-major operand by 4 x 4 (2 x 2) blocks that it
/// transposes in registers, and runs the 256-element `tanh` as a first vector and a loop. A
/// 3-column product, a 1-column one under `tanh`, and their `T[N, 1]` column stored as one run:
/// against an f64 reference, with the same bits from Cranelift and LLVM.
#[test]
fn matrix_vector_products_of_row_blocks() {
    let src = "kernel k<T: float>(W: T[N, K], X: T[8, 3], Y: mut T[N, 3], Z: mut T[N, 1]) grid(cdiv(N, 256)) {
                   let i0 = program_id(0) * 256;
                   Y[i0:i0+256, 0:3] = W[i0:i0+256, 0:8] @ X[0:8, 0:3];
                   Z[i0:i0+256, 0:1] = tanh(W[i0:i0+256, 0:8] @ X[0:8, 1:2]) * 0.3;
               }";
    let set = SourceSet::with_stdlib("test.tile", src);
    for elem in FLOATS {
        for (n, k) in [(512usize, 8usize), (700, 8), (512, 12), (200, 12)] {
            let mut rng = Rng::new(43 + (n + k) as u64);
            let (w, x) = (rng.vec(n * k, -0.5, 0.5), rng.vec(24, -0.5, 0.5));
            let args = || -> HashMap<String, ArgValue> {
                [
                    ("W", arr(elem, &w, &[n, k])),
                    ("X", arr(elem, &x, &[8, 3])),
                    ("Y", sentinel(elem, &[n, 3])),
                    ("Z", sentinel(elem, &[n, 1])),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
            };
            let ctx = format!("{elem:?} N={n} K={k}");
            // Both products' left operands (the `W` blocks, of 2048 elements) are read in place
            // where their rows follow one another.
            let module = compiled(&set, "k", &args());
            let body = &module.funcs[module.kernels[0].body];
            let mut uses = HashMap::new();
            body.body.count_uses(&mut uses);
            let (views, unformed) = tilec_midend::fusion::left_operands(body, &uses);
            assert_eq!(tilec_midend::fusion::packed_left_operands(body, &uses, &views, &unformed).len(), 2, "{ctx}");
            let dot = |i: usize, c: usize| (0..8).map(|q| w[i * k + q] * x[q * 3 + c]).sum::<f64>();
            let want_y: Vec<f64> = (0..n * 3).map(|e| dot(e / 3, e % 3)).collect();
            let want_z: Vec<f64> = (0..n).map(|i| dot(i, 1).tanh() * 0.3).collect();
            for (name, want) in [("Y", &want_y), ("Z", &want_z)] {
                let outs = outputs_per_backend(&set, "k", args, name, &ctx);
                let ctx = format!("{ctx} {name}");
                assert_normwise(&outs[0].1, want, tol(elem) * 10.0, &ctx);
                for (be, o) in &outs[1..] {
                    assert_exact(o, &outs[0].1, &format!("{ctx}: {be} against Cranelift"));
                }
            }
        }
    }
}
