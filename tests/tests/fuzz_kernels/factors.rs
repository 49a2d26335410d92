//! The differential fuzzer's second generator: the stdlib's factorizations on random stacks
//! of matrices, run and compared on every target by the main generator's `check`.

use super::{check, env_u64, Case, Output};
use std::collections::HashMap;
use tilec_midend::{Const, Scalar};
use tilec_runtime::{ArgValue, HostArray};
use tilec_tests::Rng;

/// The stdlib's factorizations of issue 34 (LU with partial pivoting and its solve, Householder
/// QR, Q, least squares, Jacobi eigenvalues and SVD) and the compact (batch-interleaved)
/// Cholesky and QR, each on a random stack of matrices of random extents (1 to 33, stacks of 0
/// to 3, or 0 to 2 packs of 1 to 16 for the compact kernels) of one class (the Cholesky's:
/// symmetric with a dominant diagonal, or one NaN): random, graded (rows, or rows and
/// columns when symmetric, scaled by up to 2^-6 in f32 and 2^-12 in f64: ill-conditioned, so
/// the tolerance grows by as much), singular (a repeated row and column, or a
/// zero one), repeated eigenvalues or singular values (`c I + u u^T`, a scaled signed
/// permutation), or one NaN. Jacobi runs a random number of sweeps (0 to 8), to tolerance 0
/// (exactly that many sweeps on every target) or to a tolerance (info then compared too).
/// Eigenvectors and singular vectors are compared only where they are unique: not for
/// repeated values, nor the singular vectors of a singular matrix.
fn factor_case(seed: u64) -> Case {
    let mut rng = Rng::new(seed ^ 0x1a9a_c0de);
    let elem = if rng.int(0, 2) == 0 { Scalar::F32 } else { Scalar::F64 };
    let kernels = [
        "getrf_batched",
        "getrs_batched",
        "geqrf_batched",
        "orgqr_batched",
        "gels_batched",
        "syevj_batched",
        "gesvj_batched",
        "potrf_compact_batched",
        "geqrf_compact_batched",
    ];
    let kernel = kernels[rng.int(0, kernels.len() as i64) as usize];
    let compact = kernel.contains("compact");
    // Packs of w matrices for the compact kernels (0 to 2 packs).
    let w = if compact { [1usize, 2, 4, 8, 16][rng.int(0, 5) as usize] } else { 1 };
    let b = if compact {
        rng.int(0, 3) as usize * w
    } else if rng.int(0, 10) == 0 {
        0
    } else {
        rng.int(1, 4) as usize
    };
    let n = rng.int(1, 34) as usize;
    // getrf, getrs and syevj are square; orgqr and gels need M >= N.
    let m = match kernel {
        "geqrf_batched" | "gesvj_batched" | "geqrf_compact_batched" => rng.int(1, 34) as usize,
        "orgqr_batched" | "gels_batched" => rng.int(n as i64, 34) as usize,
        _ => n,
    };
    let symmetric = kernel == "syevj_batched" || kernel == "potrf_compact_batched";
    let classes = ["random", "graded", "singular", "repeated", "nan"];
    let class = classes[rng.int(0, classes.len() as i64) as usize];
    // Cholesky: symmetric positive definite matrices (dominant diagonals), or one NaN.
    let class = if kernel == "potrf_compact_batched" && class != "nan" { "spd" } else { class };
    let grading = if elem == Scalar::F32 { 6 } else { 12 };
    let mut a = Vec::with_capacity(b * m * n);
    for _ in 0..b {
        a.extend(matrix(&mut rng, class, m, n, symmetric, grading));
    }
    let k = rng.int(1, 4) as usize;
    let (bu, mu, nu, ku) = (b as u64, m as u64, n as u64, k as u64);
    let arr = |d: &[f64], shape: &[u64]| ArgValue::Array(HostArray::from_f64_as(elem, d, shape).expect("array"));
    let ints = |d: &[i32], shape: &[u64]| ArgValue::Array(HostArray::from_i32(d, shape).expect("array"));
    let mut args: HashMap<String, ArgValue> = HashMap::new();
    let mut put = |name: &str, v: ArgValue| {
        args.insert(name.to_string(), v);
    };
    let unique_vectors = class != "repeated" && class != "singular";
    let mut sweeps = String::new();
    let outs: Vec<(&'static str, Scalar)> = match kernel {
        "getrf_batched" => {
            put("A", arr(&a, &[bu, nu, nu]));
            put("ipiv", ints(&vec![-1; b * n], &[bu, nu]));
            put("info", ints(&vec![-1; b], &[bu]));
            vec![("A", elem), ("ipiv", Scalar::I32), ("info", Scalar::I32)]
        }
        "getrs_batched" => {
            let f: Vec<_> = a.chunks(n * n).map(|x| tilec_tests::getrf_f64(x, n)).collect();
            let lu: Vec<f64> = f.iter().flat_map(|f| f.0.clone()).collect();
            put("LU", arr(&lu, &[bu, nu, nu]));
            put("ipiv", ints(&f.iter().flat_map(|f| f.1.clone()).collect::<Vec<_>>(), &[bu, nu]));
            put("X", arr(&rng.vec(b * n * k, -1.0, 1.0), &[bu, nu, ku]));
            vec![("X", elem)]
        }
        "geqrf_batched" => {
            put("A", arr(&a, &[bu, mu, nu]));
            put("tau", arr(&vec![7.0; b * m.min(n)], &[bu, m.min(n) as u64]));
            vec![("A", elem), ("tau", elem)]
        }
        "orgqr_batched" => {
            let f: Vec<_> = a.chunks(m * n).map(|x| tilec_tests::geqr2_f64(x, m, n)).collect();
            put("A", arr(&f.iter().flat_map(|f| f.0.clone()).collect::<Vec<_>>(), &[bu, mu, nu]));
            put("tau", arr(&f.iter().flat_map(|f| f.1.clone()).collect::<Vec<_>>(), &[bu, nu]));
            vec![("A", elem)]
        }
        "gels_batched" => {
            put("A", arr(&a, &[bu, mu, nu]));
            put("X", arr(&rng.vec(b * m * k, -1.0, 1.0), &[bu, mu, ku]));
            put("info", ints(&vec![-2; b], &[bu]));
            vec![("A", elem), ("X", elem), ("info", Scalar::I32)]
        }
        "potrf_compact_batched" => {
            let packs = (b / w) as u64;
            put("A", arr(&tilec_tests::pack_compact(&a, n * n, w), &[packs, nu, nu, w as u64]));
            put("eps", ArgValue::Scalar(Const::Float(1e-30, elem)));
            vec![("A", elem)]
        }
        "geqrf_compact_batched" => {
            let (packs, k) = ((b / w) as u64, m.min(n) as u64);
            put("A", arr(&tilec_tests::pack_compact(&a, m * n, w), &[packs, mu, nu, w as u64]));
            put("tau", arr(&vec![7.0; b * m.min(n)], &[packs, k, w as u64]));
            vec![("A", elem), ("tau", elem)]
        }
        _ => {
            let (values, vectors) = if symmetric { ("W", "A") } else { ("S", "A") };
            put("A", arr(&a, &[bu, mu, nu]));
            put(values, arr(&vec![f64::NAN; b * n], &[bu, nu]));
            put("V", arr(&vec![f64::NAN; b * n * n], &[bu, nu, nu]));
            put("info", ints(&vec![-7; b], &[bu]));
            let max_sweeps = rng.int(0, 9);
            let to_tol = rng.int(0, 10) < 3;
            let eps = if elem == Scalar::F32 { f32::EPSILON as f64 } else { f64::EPSILON };
            let tol = if to_tol { (m.max(n) as f64).sqrt() * eps } else { 0.0 };
            put("tol", ArgValue::Scalar(Const::Float(tol, elem)));
            put("max_sweeps", ArgValue::Scalar(Const::Int(max_sweeps, Scalar::I32)));
            sweeps = format!(", {max_sweeps} sweeps to tolerance {tol:e}");
            let mut outs = vec![(values, elem), ("info", Scalar::I32)];
            if unique_vectors {
                outs.extend([(vectors, elem), ("V", elem)]);
            }
            outs
        }
    };
    let outputs = outs.into_iter().map(|(o, e)| Output::new(o, e)).collect();
    let packs = if compact { format!(" in packs of {w}") } else { String::new() };
    let what = format!("{kernel} in {} on {b} x {m} x {n} {class} matrices{packs} (k = {k}){sweeps}", elem.name());
    // lavapipe compiles the shaders of the larger instances slowly.
    let on_vulkan = m.max(n) <= 17;
    let src = include_str!("../../../stdlib/linalg.tile").to_string();
    let tol_scale = if class == "graded" { 2f64.powi(grading) } else { 1.0 };
    Case { seed, elem, store: elem, kernel, src, what, args, outputs, on_vulkan, half_atomics: false, tol_scale }
}

/// One `m x n` row-major matrix of `class` ([`factor_case`]); symmetric when asked (then
/// `m == n`); graded by up to `2^-grading`.
fn matrix(rng: &mut Rng, class: &str, m: usize, n: usize, symmetric: bool, grading: i32) -> Vec<f64> {
    let mut a = rng.vec(m * n, -1.0, 1.0);
    if symmetric {
        a = tilec_tests::symmetric_from_lower(&a, n);
    }
    match class {
        "spd" => {
            for i in 0..n {
                a[i * n + i] += n as f64;
            }
        }
        "graded" => {
            // D A D when symmetric: each side half the grading.
            let g = if symmetric { grading / 2 } else { grading };
            let scale: Vec<f64> = (0..m.max(n)).map(|_| 2f64.powi(-(rng.int(0, g as i64 + 1) as i32))).collect();
            for i in 0..m {
                for j in 0..n {
                    a[i * n + j] *= scale[i] * if symmetric { scale[j] } else { 1.0 };
                }
            }
        }
        "singular" if m > 1 && rng.int(0, 2) == 0 => {
            // Row r2 a copy of row r1 (and column r2 of column r1 when symmetric).
            let (r1, r2) = (rng.int(0, m as i64) as usize, rng.int(0, m as i64) as usize);
            let r2 = if r1 == r2 { (r1 + 1) % m } else { r2 };
            for j in 0..n {
                a[r2 * n + j] = a[r1 * n + j];
            }
            if symmetric {
                for i in 0..m {
                    a[i * n + r2] = a[i * n + r1];
                }
            }
        }
        "singular" => {
            // A zero column (and row when symmetric).
            let c = rng.int(0, n as i64) as usize;
            for i in 0..m {
                a[i * n + c] = 0.0;
                if symmetric {
                    a[c * n + i] = 0.0;
                }
            }
        }
        "repeated" if symmetric => {
            // c I + u u^T: the eigenvalue c, n - 1 times.
            let (c, u) = (rng.uniform(-2.0, 2.0), rng.vec(n, -1.0, 1.0));
            for i in 0..n {
                for j in 0..n {
                    a[i * n + j] = u[i] * u[j] + if i == j { c } else { 0.0 };
                }
            }
        }
        "repeated" => {
            // A scaled signed permutation (of the rows of the identity's first columns): every
            // singular value the same.
            let c = rng.uniform(0.5, 2.0);
            let mut rows: Vec<usize> = (0..m).collect();
            for i in (1..m).rev() {
                rows.swap(i, rng.int(0, i as i64 + 1) as usize);
            }
            a.iter_mut().for_each(|x| *x = 0.0);
            for j in 0..n.min(m) {
                a[rows[j] * n + j] = if rng.int(0, 2) == 0 { c } else { -c };
            }
        }
        "nan" => {
            let (i, j) = (rng.int(0, m as i64) as usize, rng.int(0, n as i64) as usize);
            a[i * n + j] = f64::NAN;
            if symmetric {
                a[j * n + i] = f64::NAN;
            }
        }
        _ => {}
    }
    a
}

/// The stdlib's factorizations ([`factor_case`]) on every target: `TILEC_FUZZ_FACTOR_CASES`
/// stacks (default 14) from `TILEC_FUZZ_SEED`, or as many as fit in `TILEC_FUZZ_SECONDS`.
#[test]
fn random_factorizations_agree_on_every_target() {
    let cases = env_u64("TILEC_FUZZ_FACTOR_CASES", 14);
    let seed = env_u64("TILEC_FUZZ_SEED", 0x0071_11ec);
    let dev = tilec_runtime::VulkanDevice::open(None).ok();
    let deadline = std::env::var("TILEC_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(|s| std::time::Instant::now() + std::time::Duration::from_secs(s));
    let (mut failures, mut i, mut on_vulkan) = (Vec::new(), 0, 0);
    while deadline.map_or(i < cases, |d| std::time::Instant::now() < d) {
        let c = factor_case(seed.wrapping_add(i));
        let dev = dev.as_ref().filter(|d| c.elem != Scalar::F64 || d.supports_f64());
        on_vulkan += usize::from(dev.is_some() && c.on_vulkan);
        if let Err(e) = check(&c, dev) {
            eprintln!("FUZZ FAILURE {e}\n");
            failures.push(c.seed);
        }
        i += 1;
    }
    eprintln!("fuzzed {i} factorizations from seed {seed} ({on_vulkan} of them also on Vulkan)");
    assert!(
        failures.is_empty(),
        "{} of {i} factorizations disagree; seeds {failures:?} (TILEC_FUZZ_SEED=<seed> TILEC_FUZZ_FACTOR_CASES=1 reruns one)",
        failures.len()
    );
}

/// The factorizations' generator makes every kernel and class it claims.
#[test]
fn the_factorization_generator_covers_its_kernels_and_classes() {
    let all: String = (0..300).map(|s| factor_case(s).what + "\n").collect();
    for k in ["potrf_compact", "geqrf_compact"] {
        for elem in ["f32", "f64"] {
            assert!(all.contains(&format!("{k}_batched in {elem} on ")), "no {k} in {elem}");
        }
        let classes: &[&str] = if k == "potrf_compact" { &["spd", "nan"] } else { &["random", "graded", "nan"] };
        for class in classes {
            let kc = all.lines().any(|l| l.starts_with(&format!("{k}_")) && l.contains(&format!(" {class} ")));
            assert!(kc, "no {k} on {class} matrices");
        }
        assert!(
            all.contains(&format!("{k}_batched in f32 on 0 x "))
                || all.contains(&format!("{k}_batched in f64 on 0 x ")),
            "no empty {k}"
        );
        assert!(
            all.lines().any(|l| l.starts_with(&format!("{k}_")) && l.contains(" in packs of 16 ")),
            "no {k} in packs of 16"
        );
    }
    for k in ["getrf", "getrs", "geqrf", "orgqr", "gels", "syevj", "gesvj"] {
        for class in ["random", "graded", "singular", "repeated", "nan"] {
            assert!(all.contains(&format!("{k}_batched in f32 on ")), "no {k} in f32");
            assert!(all.contains(&format!("{k}_batched in f64 on ")), "no {k} in f64");
            let kc = all.lines().any(|l| l.starts_with(&format!("{k}_")) && l.contains(&format!(" {class} ")));
            assert!(kc, "no {k} on {class} matrices");
        }
    }
    assert!(all.contains(" on 0 x "), "no empty stack");
    assert!(all.contains(" 0 sweeps to tolerance 0e0"), "no Jacobi without sweeps");
    assert!(
        all.lines().any(|l| l.contains("sweeps to tolerance ") && !l.ends_with(" 0e0")),
        "no Jacobi to a tolerance"
    );
    assert_eq!(factor_case(7).what, factor_case(7).what);
}
