//! Deterministic test inputs: uniform random values and well-conditioned SPD matrices, from a
//! seed (splitmix64), independent of the thread count.

use rayon::prelude::*;

/// The splitmix64 generator.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[-1, 1)`, with 53 random bits.
    fn next_signed_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0
    }
}

/// `len` values uniform in `[-1, 1)`, the same for the same `seed`.
pub fn random_uniform(len: usize, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64(seed);
    (0..len).map(|_| rng.next_signed_unit()).collect()
}

/// `batch` symmetric positive definite `n x n` matrices, row-major and contiguous (length
/// `batch * n * n`): `A = M M^T / n + I` with the entries of `M` uniform in `[-1, 1)`, so the
/// eigenvalues lie in about `[1, 5]` (well conditioned). Exactly symmetric; the same for the
/// same `seed`, whatever the number of threads.
pub fn random_spd(batch: usize, n: usize, seed: u64) -> Vec<f64> {
    let nn = n * n;
    let mut out = vec![0.0; batch * nn];
    if nn == 0 {
        return out;
    }
    out.par_chunks_mut(nn).enumerate().for_each(|(b, a)| {
        // Each matrix has its own stream, derived from the seed and its index.
        let mut rng = SplitMix64(SplitMix64(seed ^ (b as u64).wrapping_mul(0xd134_2543_de82_ef95)).next_u64());
        let m: Vec<f64> = (0..nn).map(|_| rng.next_signed_unit()).collect();
        for i in 0..n {
            for j in 0..=i {
                let dot: f64 = m[i * n..(i + 1) * n].iter().zip(&m[j * n..(j + 1) * n]).map(|(x, y)| x * y).sum();
                let v = dot / n as f64 + if i == j { 1.0 } else { 0.0 };
                a[i * n + j] = v;
                a[j * n + i] = v;
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_is_deterministic_and_in_range() {
        let a = random_uniform(1000, 7);
        assert_eq!(a, random_uniform(1000, 7));
        assert_ne!(a, random_uniform(1000, 8));
        assert!(a.iter().all(|&x| (-1.0..1.0).contains(&x)));
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.1, "{mean}");
    }

    /// Cholesky succeeds with pivots at least 1/2: the matrices are SPD and well conditioned.
    #[test]
    fn spd_matrices_factor() {
        let (batch, n) = (3, 20);
        let a = random_spd(batch, n, 1);
        assert_eq!(a, random_spd(batch, n, 1));
        assert_eq!(a.len(), batch * n * n);
        for m in a.chunks(n * n) {
            let mut l = m.to_vec();
            for k in 0..n {
                for i in 0..n {
                    assert_eq!(m[i * n + k], m[k * n + i]);
                }
                let d = l[k * n + k];
                assert!(d > 0.5, "pivot {d}");
                let d = d.sqrt();
                for i in k..n {
                    l[i * n + k] /= d;
                }
                for j in k + 1..n {
                    for i in j..n {
                        l[i * n + j] -= l[i * n + k] * l[j * n + k];
                    }
                }
            }
        }
        assert!(random_spd(2, 0, 1).is_empty());
    }
}
