//! Chains of element-wise ops that Cranelift computes in one pass (`codegen-cpu/src/chains.rs`):
//! products and sums not stored between them, a broadcast row read as every row, rows of a
//! tile at run-time indices read where they lie, blocks read in place from their arrays; and a
//! chain cut by a store, whose first op must see the array before it.

use super::*;

/// One kernel with every kind of chain, on row blocks that are whole, partial (M = 21) and
/// past the array's columns (N = 5, 77; column offsets start at -5): against an f64
/// reference, with the same bits from Cranelift and LLVM.
#[test]
fn elementwise_chains_match_the_ops_one_by_one() {
    let src = "kernel k<T: float>(A: T[M, N], X: T[N], Y: T[2, N], S: mut T[M, N], W: mut T[M],
                 R: mut T[M, 32], U: mut T[M, 32], V: mut T[M, 32]) grid(cdiv(M, 8)) {
        let i0 = program_id(0) * 8;
        let acc = tile<T, 8, 32>::zeros();
        for j0 in -5..N step 32 {
            acc += A[i0:i0+8, j0:j0+32] * X[j0:j0+32];
        }
        W[i0:i0+8] = sum(acc, 1);
        let t = A[i0:i0+8, 0:32];
        for r in 0..8 {
            t[r, :] = t[r, :] * (2.0 as T) + t[(r * 3) % 10, :];
        }
        R[i0:i0+8, 0:32] = t;
        U[i0:i0+8, 0:32] = sqrt(abs(A[i0:i0+8, 0:32])) * (0.5 as T) - Y[1:2, 0:32] + (-t);
        let u = S[i0:i0+8, 0:32] * (2.0 as T);
        S[i0:i0+8, 0:32] = A[i0:i0+8, 0:32];
        V[i0:i0+8, 0:32] = u + (1.0 as T);
    }";
    for elem in FLOATS {
        for (m, n) in [(8usize, 32usize), (21, 5), (16, 77)] {
            let mut rng = Rng::new(31 + (m * n) as u64);
            let (a, s) = (rng.vec(m * n, -1.0, 1.0), rng.vec(m * n, -1.0, 1.0));
            let (x, y) = (rng.vec(n, -1.0, 1.0), rng.vec(2 * n, -1.0, 1.0));
            let args = || -> HashMap<String, ArgValue> {
                [
                    ("A", arr(elem, &a, &[m, n])),
                    ("X", arr(elem, &x, &[n])),
                    ("Y", arr(elem, &y, &[2, n])),
                    ("S", arr(elem, &s, &[m, n])),
                    ("W", sentinel(elem, &[m])),
                    ("R", sentinel(elem, &[m, 32])),
                    ("U", sentinel(elem, &[m, 32])),
                    ("V", sentinel(elem, &[m, 32])),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
            };
            let ctx = format!("{elem:?} {m}x{n}");
            // Element (i, j) of the M x N matrix `v`, 0 outside it.
            let at = |v: &[f64], i: usize, j: i64| {
                if i < m && (0..n as i64).contains(&j) {
                    v[i * n + j as usize]
                } else {
                    0.0
                }
            };
            let mut want: HashMap<&str, Vec<f64>> = HashMap::new();
            want.insert(
                "W",
                (0..m)
                    .map(|i| {
                        let mut acc = [0.0f64; 32];
                        for j0 in (-5..n as i64).step_by(32) {
                            for (c, e) in acc.iter_mut().enumerate() {
                                let j = j0 + c as i64;
                                let xj = if (0..n as i64).contains(&j) { x[j as usize] } else { 0.0 };
                                *e += at(&a, i, j) * xj;
                            }
                        }
                        acc.iter().sum()
                    })
                    .collect(),
            );
            let (mut r_out, mut u_out, mut v_out) = (vec![0.0; m * 32], vec![0.0; m * 32], vec![0.0; m * 32]);
            for b0 in (0..m).step_by(8) {
                // The 8 x 32 tile of the block (rows past M and columns past N are 0).
                let mut t: Vec<[f64; 32]> = (0..8).map(|r| std::array::from_fn(|c| at(&a, b0 + r, c as i64))).collect();
                for r in 0..8 {
                    let k = (r * 3) % 10;
                    let other = if k < 8 { t[k] } else { [0.0; 32] };
                    for c in 0..32 {
                        t[r][c] = t[r][c] * 2.0 + other[c];
                    }
                }
                for (r, row) in t.iter().enumerate().take(8usize.min(m - b0)) {
                    let i = b0 + r;
                    for c in 0..32 {
                        let y1 = if c < n { y[n + c] } else { 0.0 };
                        r_out[i * 32 + c] = row[c];
                        u_out[i * 32 + c] = at(&a, i, c as i64).abs().sqrt() * 0.5 - y1 + -row[c];
                        v_out[i * 32 + c] = if c < n { s[i * n + c] * 2.0 + 1.0 } else { 1.0 };
                    }
                }
            }
            want.insert("R", r_out);
            want.insert("U", u_out);
            want.insert("V", v_out);
            let set = SourceSet::with_stdlib("test.tile", src);
            for name in ["W", "R", "U", "V"] {
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
