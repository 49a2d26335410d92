//! Shared helpers of the test harnesses: independent f64 references and error measures.

/// Plain unblocked Cholesky in f64 (Cholesky–Banachiewicz, row by row) of one `n x n`
/// row-major SPD matrix; returns the lower factor with zeros above the diagonal.
/// Independent of the compiler: this is the oracle for `potrf_batched` and the examples.
pub fn cholesky_f64(a: &[f64], n: usize) -> Vec<f64> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = if i == j { s.sqrt() } else { s / l[j * n + j] };
        }
    }
    l
}

/// Largest normwise relative error over a batch of `n x n` matrices, comparing only the lower
/// triangle: `max_b max_ij |x - r| / max_ij |r|`.
pub fn max_rel_err_lower(x: &[f64], r: &[f64], n: usize) -> f64 {
    let mut worst: f64 = 0.0;
    for (xb, rb) in x.chunks(n * n).zip(r.chunks(n * n)) {
        let mut err: f64 = 0.0;
        let mut scale: f64 = 0.0;
        for i in 0..n {
            for j in 0..=i {
                err = err.max((xb[i * n + j] - rb[i * n + j]).abs());
                scale = scale.max(rb[i * n + j].abs());
            }
        }
        worst = worst.max(err / scale);
    }
    worst
}

/// Largest normwise relative error over whole matrices (upper triangle included).
pub fn max_rel_err(x: &[f64], r: &[f64], n: usize) -> f64 {
    let mut worst: f64 = 0.0;
    for (xb, rb) in x.chunks(n * n).zip(r.chunks(n * n)) {
        let err = xb
            .iter()
            .zip(rb)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        let scale = rb.iter().map(|v| v.abs()).fold(0.0, f64::max);
        worst = worst.max(err / scale);
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_cholesky_reconstructs_its_input() {
        let a = [4.0, 2.0, 2.0, 5.0];
        let l = cholesky_f64(&a, 2);
        assert_eq!(l, vec![2.0, 0.0, 1.0, 2.0]);
    }
}
