//! The kernels and inputs that the cross-target tests (SIMT interpreter, Vulkan) run: every
//! stdlib kernel and every example, on small inputs with partial tiles.

use std::collections::HashMap;
use tilec::SourceSet;
use tilec_midend::{Const, Scalar};
use tilec_runtime::{random_spd, random_uniform, ArgValue, HostArray};

pub(crate) fn stdlib() -> SourceSet {
    SourceSet::with_stdlib("stdlib/linalg.tile", include_str!("../../../stdlib/linalg.tile"))
}

pub(crate) fn example(name: &str) -> SourceSet {
    let path = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    SourceSet::with_stdlib(format!("examples/{name}"), std::fs::read_to_string(path).expect("example"))
}

/// A kernel, its arguments (arrays as f64 data + shape, or scalars) and the outputs to compare.
pub(crate) struct Case {
    pub(crate) src: SourceSet,
    pub(crate) kernel: &'static str,
    pub(crate) arrays: Vec<(&'static str, Vec<f64>, Vec<u64>)>,
    pub(crate) scalars: Vec<(&'static str, f64)>,
    pub(crate) outs: Vec<&'static str>,
}

impl Case {
    /// The arguments with arrays of element type `elem`.
    pub(crate) fn args(&self, elem: Scalar) -> HashMap<String, ArgValue> {
        let mut m = HashMap::new();
        for (n, d, s) in &self.arrays {
            m.insert(n.to_string(), ArgValue::Array(HostArray::from_f64_as(elem, d, s).unwrap()));
        }
        for (n, v) in &self.scalars {
            m.insert(n.to_string(), ArgValue::Scalar(Const::Float(*v, elem)));
        }
        m
    }
}

fn case(
    src: SourceSet,
    kernel: &'static str,
    arrays: Vec<(&'static str, Vec<f64>, Vec<u64>)>,
    scalars: Vec<(&'static str, f64)>,
    outs: Vec<&'static str>,
) -> Case {
    Case { src, kernel, arrays, scalars, outs }
}

/// potrf_batched and potrs_batched.
pub(crate) fn factorizations() -> Vec<Case> {
    let (b, n) = (2usize, 33usize);
    let l: Vec<f64> = random_spd(b, n, 2).chunks(n * n).flat_map(|m| tilec_tests::cholesky_f64(m, n)).collect();
    vec![
        case(
            stdlib(),
            "potrf_batched",
            vec![("A", random_spd(b, n, 1), vec![b as u64, n as u64, n as u64])],
            vec![("eps", 1e-9)],
            vec!["A"],
        ),
        case(
            stdlib(),
            "potrs_batched",
            vec![
                ("L", l, vec![b as u64, n as u64, n as u64]),
                ("X", random_uniform(b * n * 5, 3), vec![b as u64, n as u64, 5]),
            ],
            vec![],
            vec!["X"],
        ),
    ]
}

/// The 8 batched triangular solves, with garbage in the unread triangle.
pub(crate) fn solves() -> Vec<Case> {
    let (b, n, m) = (2usize, 20usize, 17usize);
    let mut a = random_uniform(b * n * n, 4);
    for bb in 0..b {
        for i in 0..n {
            a[bb * n * n + i * n + i] = 4.0 + i as f64 * 0.1;
        }
    }
    [
        "trsm_right_lower_t_batched",
        "trsm_right_lower_batched",
        "trsm_right_upper_batched",
        "trsm_right_upper_t_batched",
        "trsm_left_lower_batched",
        "trsm_left_lower_t_batched",
        "trsm_left_upper_batched",
        "trsm_left_upper_t_batched",
    ]
    .into_iter()
    .map(|name| {
        let xs =
            if name.contains("left") { vec![b as u64, n as u64, m as u64] } else { vec![b as u64, m as u64, n as u64] };
        case(
            stdlib(),
            name,
            vec![("A", a.clone(), vec![b as u64, n as u64, n as u64]), ("X", random_uniform(b * n * m, 5), xs)],
            vec![],
            vec!["X"],
        )
    })
    .collect()
}

/// gemm, gemm_batched and row_sum.
pub(crate) fn products() -> Vec<Case> {
    let (m, n, k) = (40usize, 35usize, 50usize);
    vec![
        case(
            stdlib(),
            "gemm",
            vec![
                ("A", random_uniform(m * k, 6), vec![m as u64, k as u64]),
                ("B", random_uniform(k * n, 7), vec![k as u64, n as u64]),
                ("C", random_uniform(m * n, 8), vec![m as u64, n as u64]),
            ],
            vec![("alpha", 1.5), ("beta", -0.5)],
            vec!["C"],
        ),
        case(
            stdlib(),
            "gemm_batched",
            vec![
                ("A", random_uniform(2 * 9 * 7, 9), vec![2, 9, 7]),
                ("B", random_uniform(2 * 7 * 5, 10), vec![2, 7, 5]),
                ("C", random_uniform(2 * 9 * 5, 11), vec![2, 9, 5]),
            ],
            vec![("alpha", 1.0), ("beta", 0.0)],
            vec!["C"],
        ),
        case(
            stdlib(),
            "row_sum",
            vec![("X", random_uniform(20 * 70, 12), vec![20, 70]), ("out", vec![0.0; 20], vec![20])],
            vec![],
            vec!["out"],
        ),
    ]
}

/// Every example.
pub(crate) fn examples() -> Vec<Case> {
    let n = 20usize;
    vec![
        case(
            example("cholesky.tile"),
            "cholesky",
            vec![
                ("A", random_spd(2, n, 13), vec![2, n as u64, n as u64]),
                ("L", vec![0.0; 2 * n * n], vec![2, n as u64, n as u64]),
            ],
            vec![("eps", 1e-9)],
            vec!["L"],
        ),
        case(
            example("trsm.tile"),
            "whiten16",
            vec![
                ("A", random_spd(2, 16, 14), vec![2, 16, 16]),
                ("X", random_uniform(2 * 20 * 16, 15), vec![2, 20, 16]),
            ],
            vec![("eps", 1e-9)],
            vec!["X"],
        ),
        case(
            example("potrs.tile"),
            "spd_solve16",
            vec![("A", random_spd(3, 16, 16), vec![3, 16, 16]), ("Y", random_uniform(3 * 16, 17), vec![3, 16])],
            vec![("eps", 1e-9)],
            vec!["Y"],
        ),
        case(
            example("gemm.tile"),
            "matmul16",
            vec![
                ("A", random_uniform(20 * 18, 18), vec![20, 18]),
                ("B", random_uniform(18 * 19, 19), vec![18, 19]),
                ("C", vec![0.0; 20 * 19], vec![20, 19]),
            ],
            vec![],
            vec!["C"],
        ),
        case(
            example("softmax.tile"),
            "softmax64",
            vec![("X", random_uniform(20 * 64, 20), vec![20, 64]), ("Y", vec![0.0; 20 * 64], vec![20, 64])],
            vec![],
            vec!["Y"],
        ),
        case(
            example("colsum.tile"),
            "colsum",
            vec![("X", random_uniform(100 * 48, 21), vec![100, 48]), ("S", vec![0.0; 48], vec![48])],
            vec![],
            vec!["S"],
        ),
    ]
}

/// Largest difference between two arrays relative to the largest magnitude of `want`.
pub(crate) fn rel_diff(got: &[f64], want: &[f64]) -> f64 {
    let scale = want.iter().map(|v| v.abs()).fold(1e-30, f64::max);
    got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) / scale
}
