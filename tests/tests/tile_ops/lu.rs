//! `t.lu_()`: LU without pivoting in place, on diagonally dominant matrices of orders 1, 5, 16
//! and 17 (partial tiles padded with the identity, and whole tiles), against an f64 Doolittle
//! factorization.

use super::*;

/// The f64 reference: LAPACK getrf without pivoting, L's multipliers below the diagonal.
fn lu_f64(a: &[f64], n: usize) -> Vec<f64> {
    let mut w = a.to_vec();
    for k in 0..n {
        for i in k + 1..n {
            w[i * n + k] /= w[k * n + k];
            for j in k + 1..n {
                w[i * n + j] -= w[i * n + k] * w[k * n + j];
            }
        }
    }
    w
}

#[test]
fn lu_factors_diagonally_dominant_matrices_in_place() {
    for elem in FLOATS {
        for (n, t) in [(1usize, 1usize), (1, 4), (5, 5), (5, 8), (16, 16), (17, 17), (17, 20), (16, 17)] {
            let src = format!(
                "kernel k<T: float>(A: mut T[B, N, N]) grid(B) {{
                    let b = program_id(0);
                    let a = tile<T, {t}, {t}>::eye();
                    a[:] = A[b, 0:{t}, 0:{t}];
                    a.lu_();
                    A[b, 0:{t}, 0:{t}] = a;
                }}"
            );
            let batch = 2;
            let mut rng = Rng::new(95 + n as u64);
            let mut a: Vec<f64> = (0..batch * n * n).map(|_| rng.int(-64, 64) as f64 / 64.0).collect();
            for m in 0..batch {
                for i in 0..n {
                    a[(m * n + i) * n + i] += n as f64 + 1.0;
                }
            }
            let b = run(&src, "k", vec![("A", arr(elem, &a, &[batch, n, n]))]);
            let got = out(&b, "A");
            let a = HostArray::from_f64_as(elem, &a, &[(batch * n * n) as u64]).unwrap().to_f64_vec();
            for m in 0..batch {
                let want = lu_f64(&a[m * n * n..(m + 1) * n * n], n);
                let ctx = format!("{elem:?} n={n} tile {t} matrix {m}");
                assert_close(&got[m * n * n..(m + 1) * n * n], &want, 20.0 * tol(elem), &ctx);
            }
        }
    }
}
