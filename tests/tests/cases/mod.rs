//! The kernels and inputs that the cross-target tests (SIMT interpreter, Vulkan) run: every
//! stdlib kernel and every example, on small inputs with partial tiles.

use std::collections::HashMap;
use tilec::SourceSet;
use tilec_midend::{Const, Scalar};
use tilec_runtime::{random_spd, random_uniform, ArgValue, HostArray};

mod examples;
mod small_mats;

pub(crate) use small_mats::small_mats;

/// Every example (`examples.rs`).
pub(crate) fn examples() -> Vec<Case> {
    examples::all()
}

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
    /// `i32` scalar arguments.
    pub(crate) ints: Vec<(&'static str, i64)>,
    /// `i32` arrays.
    pub(crate) int_arrays: Vec<(&'static str, Vec<i32>, Vec<u64>)>,
    /// Arrays of other fixed element types (`u32`, `i64`, `f16`), as f64 data.
    pub(crate) typed_arrays: Vec<(&'static str, Scalar, Vec<f64>, Vec<u64>)>,
    /// Float scalars of a fixed type (`f32` for a parameter written `f16`), whatever `T` is.
    pub(crate) typed_scalars: Vec<(&'static str, Scalar, f64)>,
    pub(crate) outs: Vec<&'static str>,
    /// How outputs are compared with the CPU's.
    pub(crate) compare: Compare,
}

/// How a case's outputs are compared with the CPU's ([`diff`]).
#[derive(Clone, Copy)]
pub(crate) enum Compare {
    /// The largest difference relative to the largest magnitude ([`rel_diff`]).
    Normwise,
    /// Element by element, relative to `max(|want|, 1)`: relative for large values, absolute
    /// for small ones (the accuracy of a device's `f32` functions near their zeros).
    Mixed,
    /// Element by element, relative ([`elem_rel_diff`]).
    Relative,
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
        for (n, v) in &self.ints {
            m.insert(n.to_string(), ArgValue::Scalar(Const::Int(*v, Scalar::I32)));
        }
        for (n, d, s) in &self.int_arrays {
            m.insert(n.to_string(), ArgValue::Array(HostArray::from_i32(d, s).unwrap()));
        }
        for (n, t, d, s) in &self.typed_arrays {
            m.insert(n.to_string(), ArgValue::Array(HostArray::from_f64_as(*t, d, s).unwrap()));
        }
        for (n, t, v) in &self.typed_scalars {
            m.insert(n.to_string(), ArgValue::Scalar(Const::Float(*v, *t)));
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
    Case {
        src,
        kernel,
        arrays,
        scalars,
        ints: vec![],
        int_arrays: vec![],
        typed_scalars: vec![],
        typed_arrays: vec![],
        outs,
        compare: Compare::Normwise,
    }
}

/// potrf_batched, potrf_compact_batched, potrs_batched, getrf_batched, getrs_batched,
/// getrf_compact_batched, getrs_compact_batched, geqrf_batched, geqrf_compact_batched,
/// orgqr_batched, gels_batched, syevj_batched, syevj_compact_batched, syev_compact_batched,
/// gesvj_batched, gesvj_compact_batched and gesvd_compact_batched.
pub(crate) fn factorizations() -> Vec<Case> {
    let (b, n) = (2usize, 33usize);
    let l: Vec<f64> = random_spd(b, n, 2).chunks(n * n).flat_map(|m| tilec_tests::cholesky_f64(m, n)).collect();
    let (bu, nu) = (b as u64, n as u64);
    let mut getrf = case(
        stdlib(),
        "getrf_batched",
        vec![("A", random_uniform(b * n * n, 6), vec![bu, nu, nu])],
        vec![],
        vec!["A", "ipiv", "info"],
    );
    getrf.int_arrays = vec![("ipiv", vec![-1; b * n], vec![bu, nu]), ("info", vec![-1; b], vec![bu])];
    let factors: Vec<_> = random_uniform(b * n * n, 7).chunks(n * n).map(|m| tilec_tests::getrf_f64(m, n)).collect();
    let lu: Vec<f64> = factors.iter().flat_map(|f| f.0.clone()).collect();
    let mut getrs = case(
        stdlib(),
        "getrs_batched",
        vec![("LU", lu, vec![bu, nu, nu]), ("X", random_uniform(b * n * 3, 8), vec![bu, nu, 3])],
        vec![],
        vec!["X"],
    );
    getrs.int_arrays = vec![("ipiv", factors.iter().flat_map(|f| f.1.clone()).collect(), vec![bu, nu])];
    let (mq, nq) = (21usize, 13usize);
    let qa = random_uniform(b * mq * nq, 9);
    let qf: Vec<_> = qa.chunks(mq * nq).map(|m| tilec_tests::geqr2_f64(m, mq, nq)).collect();
    let (mu, nqu) = (mq as u64, nq as u64);
    let geqrf = case(
        stdlib(),
        "geqrf_batched",
        vec![("A", qa.clone(), vec![bu, mu, nqu]), ("tau", vec![0.0; b * nq], vec![bu, nqu])],
        vec![],
        vec!["A", "tau"],
    );
    let orgqr = case(
        stdlib(),
        "orgqr_batched",
        vec![
            ("A", qf.iter().flat_map(|f| f.0.clone()).collect(), vec![bu, mu, nqu]),
            ("tau", qf.iter().flat_map(|f| f.1.clone()).collect(), vec![bu, nqu]),
        ],
        vec![],
        vec!["A"],
    );
    let mut gels = case(
        stdlib(),
        "gels_batched",
        vec![("A", qa, vec![bu, mu, nqu]), ("X", random_uniform(b * mq * 2, 10), vec![bu, mu, 2])],
        vec![],
        vec!["A", "X", "info"],
    );
    gels.int_arrays = vec![("info", vec![-2; b], vec![bu])];
    // Jacobi with tol 0 runs exactly max_sweeps sweeps on every target (info N + 1 on all), so
    // rounding differences cannot change the number of sweeps; 8 sweeps converge these.
    let (ns, nsu) = (13usize, 13u64);
    let r = random_uniform(b * ns * ns, 11);
    let sym: Vec<f64> = r.chunks(ns * ns).flat_map(|m| tilec_tests::symmetric_from_lower(m, ns)).collect();
    let mut syevj = case(
        stdlib(),
        "syevj_batched",
        vec![
            ("A", sym, vec![bu, nsu, nsu]),
            ("W", vec![0.0; b * ns], vec![bu, nsu]),
            ("V", vec![0.0; b * ns * ns], vec![bu, nsu, nsu]),
        ],
        vec![("tol", 0.0)],
        vec!["W", "V", "info"],
    );
    syevj.ints = vec![("max_sweeps", 8)];
    syevj.int_arrays = vec![("info", vec![-2; b], vec![bu])];
    let mut gesvj = case(
        stdlib(),
        "gesvj_batched",
        vec![
            ("A", random_uniform(b * mq * nq, 12), vec![bu, mu, nqu]),
            ("S", vec![0.0; b * nq], vec![bu, nqu]),
            ("V", vec![0.0; b * nq * nq], vec![bu, nqu, nqu]),
        ],
        vec![("tol", 0.0)],
        vec!["A", "S", "V", "info"],
    );
    gesvj.ints = vec![("max_sweeps", 8)];
    gesvj.int_arrays = vec![("info", vec![-2; b], vec![bu])];
    vec![
        getrf,
        getrs,
        geqrf,
        orgqr,
        gels,
        syevj,
        gesvj,
        case(
            stdlib(),
            "potrf_batched",
            vec![("A", random_spd(b, n, 1), vec![b as u64, n as u64, n as u64])],
            vec![("eps", 1e-9)],
            vec!["A"],
        ),
        potrf_compact(),
        getrf_compact(),
        getrs_compact(),
        geqrf_compact(11, 7),
        geqrf_compact(20, 33),
        syevj_compact(),
        syev_compact(4, 9),
        syev_compact(8, 13),
        gesvj_compact(),
        gesvd_compact(4, 6),
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

/// potrf_compact_batched on 2 packs of 8 SPD matrices of order 13 (matrix `p * 8 + l`'s
/// element `(i, j)` at `[p, i, j, l]`).
fn potrf_compact() -> Case {
    let (packs, w, n) = (2usize, 8usize, 13usize);
    let packed = tilec_tests::pack_compact(&random_spd(packs * w, n, 5), n * n, w);
    let shape = vec![packs as u64, n as u64, n as u64, w as u64];
    case(stdlib(), "potrf_compact_batched", vec![("A", packed, shape)], vec![("eps", 1e-9)], vec!["A"])
}

/// getrf_compact_batched on 2 packs of 4 matrices of order 13 (matrix `p * 4 + l`'s element
/// `(i, j)` at `[p, i, j, l]`); lane 1 of pack 0 singular (a zero column: info 6), so the lanes
/// of one pack pivot on different rows and report different info.
fn getrf_compact() -> Case {
    let (packs, w, n) = (2usize, 4usize, 13usize);
    let mut a = random_uniform(packs * w * n * n, 15);
    for r in 0..n {
        a[n * n + r * n + 5] = 0.0;
    }
    let (pu, wu, nu) = (packs as u64, w as u64, n as u64);
    let mut c = case(
        stdlib(),
        "getrf_compact_batched",
        vec![("A", tilec_tests::pack_compact(&a, n * n, w), vec![pu, nu, nu, wu])],
        vec![],
        vec!["A", "ipiv", "info"],
    );
    c.int_arrays =
        vec![("ipiv", vec![-1; packs * n * w], vec![pu, nu, wu]), ("info", vec![-1; packs * w], vec![pu, wu])];
    c
}

/// getrs_compact_batched on 2 packs of 4 systems of order 13 with 3 right-hand sides, from
/// f64 getf2's factors of random matrices (pivots differing from lane to lane).
fn getrs_compact() -> Case {
    let (packs, w, n, k) = (2usize, 4usize, 13usize, 3usize);
    let factors: Vec<_> =
        random_uniform(packs * w * n * n, 16).chunks(n * n).map(|m| tilec_tests::getrf_f64(m, n)).collect();
    let lu: Vec<f64> = factors.iter().flat_map(|f| f.0.clone()).collect();
    let piv: Vec<f64> = factors.iter().flat_map(|f| f.1.iter().map(|&p| p as f64)).collect();
    let (pu, wu, nu, ku) = (packs as u64, w as u64, n as u64, k as u64);
    let mut c = case(
        stdlib(),
        "getrs_compact_batched",
        vec![
            ("LU", tilec_tests::pack_compact(&lu, n * n, w), vec![pu, nu, nu, wu]),
            ("X", tilec_tests::pack_compact(&random_uniform(packs * w * n * k, 17), n * k, w), vec![pu, nu, ku, wu]),
        ],
        vec![],
        vec!["X"],
    );
    let piv = tilec_tests::pack_compact(&piv, n, w).iter().map(|&p| p as i32).collect();
    c.int_arrays = vec![("ipiv", piv, vec![pu, nu, wu])];
    c
}

/// syevj_compact_batched on 2 packs of 4 symmetric matrices of order 9, with tol 0 and 8
/// sweeps as `syevj_batched`'s case (every target runs all 8).
fn syevj_compact() -> Case {
    let mut c = eig_compact("syevj_compact_batched", 4, 9, 14, 0.0);
    c.ints = vec![("max_sweeps", 8)];
    c
}

/// syev_compact_batched on 2 packs of `w` symmetric matrices of order `n` (tol f32's epsilon
/// for both types: each target deflates by its own rounding, within which the results agree).
fn syev_compact(w: usize, n: usize) -> Case {
    eig_compact("syev_compact_batched", w, n, 15 + n as u64, 1.2e-7)
}

/// A compact eigensolver's case (A, E, V, info, tol) on 2 packs of `w` random symmetric
/// matrices of order `n`.
fn eig_compact(kernel: &'static str, w: usize, n: usize, seed: u64, tol: f64) -> Case {
    let packs = 2usize;
    let sym: Vec<f64> = random_uniform(packs * w * n * n, seed)
        .chunks(n * n)
        .flat_map(|m| tilec_tests::symmetric_from_lower(m, n))
        .collect();
    let (pu, wu, nu) = (packs as u64, w as u64, n as u64);
    let mut c = case(
        stdlib(),
        kernel,
        vec![
            ("A", tilec_tests::pack_compact(&sym, n * n, w), vec![pu, nu, nu, wu]),
            ("E", vec![0.0; packs * n * w], vec![pu, nu, wu]),
            ("V", vec![0.0; packs * n * n * w], vec![pu, nu, nu, wu]),
        ],
        vec![("tol", tol)],
        vec!["E", "V", "info"],
    );
    c.int_arrays = vec![("info", vec![-2; packs * w], vec![pu, wu])];
    c
}

/// Factorization cases for the SIMT interpreter only: gesvd_compact_batched on packs of 8
/// matrices of order 13 (lavapipe's shader compiler takes minutes on it, `tests/vulkan.rs` runs
/// the order-6 case of `factorizations`).
#[allow(dead_code)] // not in tests/vulkan.rs
pub(crate) fn factorizations_simt() -> Vec<Case> {
    vec![gesvd_compact(8, 13)]
}

/// gesvd_compact_batched on 2 packs of `w` random matrices of order `n` (tol f32's epsilon
/// for both types, as `syev_compact`'s).
fn gesvd_compact(w: usize, n: usize) -> Case {
    let packs = 2usize;
    let (pu, wu, nu) = (packs as u64, w as u64, n as u64);
    let mut c = case(
        stdlib(),
        "gesvd_compact_batched",
        vec![
            ("A", random_uniform(packs * w * n * n, 19 + n as u64), vec![pu, nu, nu, wu]),
            ("S", vec![0.0; packs * n * w], vec![pu, nu, wu]),
            ("V", vec![0.0; packs * n * n * w], vec![pu, nu, nu, wu]),
            ("E", vec![0.0; packs * n * w], vec![pu, nu, wu]),
        ],
        vec![("tol", 1.2e-7)],
        vec!["A", "S", "V", "info"],
    );
    c.int_arrays = vec![("info", vec![-2; packs * w], vec![pu, wu])];
    c
}

/// gesvj_compact_batched on 2 packs of 4 matrices of order 9, with tol 0 and 8 sweeps as
/// `gesvj_batched`'s case (every target runs all 8).
fn gesvj_compact() -> Case {
    let (packs, w, n) = (2usize, 4usize, 9usize);
    let (pu, wu, nu) = (packs as u64, w as u64, n as u64);
    let mut c = case(
        stdlib(),
        "gesvj_compact_batched",
        vec![
            ("A", random_uniform(packs * w * n * n, 18), vec![pu, nu, nu, wu]),
            ("S", vec![0.0; packs * n * w], vec![pu, nu, wu]),
            ("V", vec![0.0; packs * n * n * w], vec![pu, nu, nu, wu]),
        ],
        vec![("tol", 0.0)],
        vec!["A", "S", "V", "info"],
    );
    c.ints = vec![("max_sweeps", 8)];
    c.int_arrays = vec![("info", vec![-2; packs * w], vec![pu, wu])];
    c
}

/// geqrf_compact_batched on 2 packs of 4 matrices of `m x n` (matrix `p * 4 + l`'s element
/// `(i, j)` at `[p, i, j, l]`): 11 x 7 is one panel of four reflectors, its block update
/// over a last group of three columns (four with one past N), then three reflectors one at a
/// time; 20 x 33 (wide) five panels, each block update ending past N.
fn geqrf_compact(m: u64, n: u64) -> Case {
    let (packs, w) = (2u64, 4u64);
    let shape = vec![packs, m, n, w];
    let k = m.min(n);
    case(
        stdlib(),
        "geqrf_compact_batched",
        vec![
            ("A", random_uniform((packs * m * n * w) as usize, 13), shape),
            ("tau", vec![0.0; (packs * k * w) as usize], vec![packs, k, w]),
        ],
        vec![],
        vec!["A", "tau"],
    )
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

/// Diagonally dominant matrices, which LU factors without pivoting.
fn lu_input(b: usize, n: usize) -> Vec<f64> {
    let mut a = random_uniform(b * n * n, 62);
    for m in 0..b {
        for i in 0..n {
            a[(m * n + i) * n + i] += n as f64;
        }
    }
    a
}

/// `fn`s returning several values (`-> (A, B)`, `(a, b)` or `return (a, b);`, bound with
/// `let (x, y) = f(..);`): tiles and scalars, one result forwarded to another call.
pub(crate) const FN_RESULTS_SRC: &str = "
fn stats<T: float>(x: tile<T, 16, 8>) -> (tile<T, 16>, tile<T, 16>) {
    (max_axis(x, 1), sum(x, 1))
}

fn scaled<T: float>(x: tile<T, 16, 8>, s: T) -> (tile<T, 16, 8>, T) {
    let total = sum(x);
    return (x * s, total * s);
}

fn swap<T: float>(a: T, b: T) -> (T, T) {
    (b, a)
}

fn both<T: float>(x: tile<T, 16, 8>) -> (tile<T, 16>, tile<T, 16>) {
    stats(x)
}

kernel fn_results<T: float>(X: T[M, 8], MX: mut T[M], SM: mut T[M], TOT: mut T[G], SW: mut T[G, 2]) grid(G) block(16) {
    let g = program_id(0);
    let r0 = g * 16;
    let (y, t) = scaled(X[r0:r0+16, 0:8], 2.0);
    let (a, b) = both(y);
    MX[r0:r0+16] = a;
    SM[r0:r0+16] = b;
    TOT[g] = t;
    let (p, q) = swap(t, a[0]);
    SW[g, 0] = p;
    SW[g, 1] = q;
}
";

/// The [`FN_RESULTS_SRC`] kernel on 37 rows (a partial last tile).
pub(crate) fn fn_results() -> Vec<Case> {
    let m = 37u64;
    let src = SourceSet::with_stdlib("fn_results.tile", FN_RESULTS_SRC);
    let arrays = vec![
        ("X", random_uniform((m * 8) as usize, 51), vec![m, 8]),
        ("MX", vec![0.0; m as usize], vec![m]),
        ("SM", vec![0.0; m as usize], vec![m]),
        ("TOT", vec![0.0; 3], vec![3]),
        ("SW", vec![0.0; 6], vec![3, 2]),
    ];
    vec![case(src, "fn_results", arrays, vec![], vec!["MX", "SM", "TOT", "SW"])]
}

/// Flexible shapes: an extent expression (`X: T[Z * H, N]`), an extent that is a scalar
/// parameter (`n`), `cdiv` extents, and a const parameter taken from an argument's extent
/// (`const C: i32` in `W: T[C]`, sizing a register tile).
pub(crate) const SHAPES_SRC: &str = "
kernel shapes<T: float, const C: i32>(X: T[Z * H, N], P: T[H], S: mut T[Z, N], n: i32, F: mut T[n],
        M: mut T[cdiv(Z * H, 16)], W: T[C], O: mut T[Z, C]) grid(Z) block(16) {
    let z = program_id(0);
    for j in 0..N {
        let acc = 0.0 as T;
        for h in 0..H {
            acc += X[z * H + h, j] * P[h];
        }
        S[z, j] = acc;
    }
    if z == 0 {
        for i in 0..n {
            F[i] = (i as T) * 0.5;
        }
        for b in 0..cdiv(Z * H, 16) {
            M[b] = max(X[b*16:b*16+16, 0]);
        }
    }
    let w = W[0:C];
    O[z, 0:C] = w * (z as T) + tile<T, C>::full(sum(w));
}
";

/// The [`SHAPES_SRC`] kernel: X of 8 x 3 rows (Z = 8, H = 3), N = 5, n = 11, C = 7.
pub(crate) fn shapes() -> Vec<Case> {
    let (z, h, n) = (8u64, 3u64, 5u64);
    let src = SourceSet::with_stdlib("shapes.tile", SHAPES_SRC);
    let arrays = vec![
        ("X", random_uniform((z * h * n) as usize, 61), vec![z * h, n]),
        ("P", random_uniform(h as usize, 62), vec![h]),
        ("S", vec![0.0; (z * n) as usize], vec![z, n]),
        ("F", vec![0.0; 11], vec![11]),
        ("M", vec![0.0; 2], vec![2]),
        ("W", random_uniform(7, 63), vec![7]),
        ("O", vec![0.0; (z * 7) as usize], vec![z, 7]),
    ];
    let mut c = case(src, "shapes", arrays, vec![], vec!["S", "F", "M", "O"]);
    c.ints.push(("n", 11));
    vec![c]
}

/// Masks: `iota` along both axes and of a vector, comparisons of tiles with tiles and
/// scalars, `&&`, `||`, `!`, `where`, `argmax` and `argmin`, on partial tiles (rows past the array, more rows
/// than lanes at 4 to 16 lanes).
const MASKS_SRC: &str = "
kernel masks<T: float>(A: T[M, N], V: T[M], O: mut T[M, N], W: mut T[M], X: mut T[50], S: mut T[M, N], U: mut T[M], C: mut T[M, N], D: mut T[M, N], Q: mut T[M], P: mut T[M, N], R: mut T[7], L: mut T[M, N], t: T) grid(1) {
    let a = A[0:40, 0:7];
    let rows = tile<i32, 40, 7>::iota(0);
    let cols = tile<i32, 40, 7>::iota(1);
    let band = (cols <= rows && !(rows - cols > 5)) || a > t;
    O[0:40, 0:7] = where(band, a * 2.0, where(a < 0.0, tile<T, 40, 7>::iota(0), -a));
    let v = V[0:40];
    W[0:40] = where(v >= t || tile<T, 40>::iota(0) < 3.0, v, tile<T, 40>::iota(0));
    let rmax = argmax(a, 1);
    let cmin = argmin(a, 0);
    for i in 0..40 {
        X[i] = rmax[i] as T;
    }
    for j in 0..7 {
        X[40 + j] = cmin[j] as T;
    }
    X[47] = argmax(a) as T;
    X[48] = argmin(v) as T;
    X[49] = argmax(A[0:40, 0:7] * 0.0) as T;
    masked_store(S[0:40, 0:7], a * 3.0, band && a < 0.5);
    masked_store(U[0:40], v, v > t);
    C[0:40, 0:7] = cumsum(a, 0);
    D[0:40, 0:7] = cummax(a, 1) - cummin(a, 0);
    Q[0:40] = cumsum(v);
    P[0:40, 0:7] = cumprod(a + 0.5, 1) - cumprod(a + 0.5, 0);
    R[0:7] = prod(a + 0.5, 0);
    let k = (t * 30.0) as i32;
    let u = a;
    u[:, k - 1] = a[:, 5] * 2.0 + u[:, k];
    u[k, :] += a[k + 30, :];
    L[0:40, 0:7] = u;
}
";

/// The [`MASKS_SRC`] kernel on a 37x6 array (partial 40x7 tiles).
pub(crate) fn masks() -> Vec<Case> {
    let (m, n) = (37u64, 6u64);
    let src = SourceSet::with_stdlib("masks.tile", MASKS_SRC);
    let arrays = vec![
        ("A", random_uniform((m * n) as usize, 41), vec![m, n]),
        ("V", random_uniform(m as usize, 42), vec![m]),
        ("O", vec![0.0; (m * n) as usize], vec![m, n]),
        ("W", vec![0.0; m as usize], vec![m]),
        ("X", vec![0.0; 50], vec![50]),
        ("S", vec![7.0; (m * n) as usize], vec![m, n]),
        ("U", vec![7.0; m as usize], vec![m]),
        ("C", vec![0.0; (m * n) as usize], vec![m, n]),
        ("D", vec![0.0; (m * n) as usize], vec![m, n]),
        ("Q", vec![0.0; m as usize], vec![m]),
        ("P", vec![0.0; (m * n) as usize], vec![m, n]),
        ("R", vec![0.0; 7], vec![7]),
        ("L", vec![0.0; (m * n) as usize], vec![m, n]),
    ];
    let outs = vec!["O", "W", "X", "S", "U", "C", "D", "Q", "P", "R", "L"];
    vec![Case { compare: Compare::Relative, ..case(src, "masks", arrays, vec![("t", 0.1)], outs) }]
}

/// Ranges of tiles as values and assignment targets: row offsets that are and are not
/// multiples of the lane count (4 to 64), blocks reaching the last rows and columns of a
/// partial 37x7 tile, blocks of vectors, a block spanning more rows than lanes.
const RANGES_SRC: &str = "
const S: i32 = 5;
kernel ranges<T: float>(A: T[M, N], V: T[M], B: mut T[M, N], C: mut T[M, N], W: mut T[M], X: mut T[20], Y: mut T[M, N]) grid(1) {
    let a = A[0:37, 0:7];
    let u = a;
    u[S:S + 25, 1:5] = a[11:36, 3:] * 2.0 - a[:25, 0:4];
    u[:3, :] = 0.5;
    u[33:, 5:] += a[0:4, 0:2];
    u[16:32, :1] = a[20:36, 6:7];
    B[0:37, 0:7] = u;
    let c = tile<T, 37, 7>::zeros();
    c[1:37, :] = a[0:36, :];
    c[0:36, 2:5] -= a[1:37, 4:7];
    C[0:37, 0:7] = c;
    let v = V[0:37];
    let w = v;
    w[3:20] = v[20:37] + v[:17];
    w[35:] = -1.0;
    W[0:37] = w;
    X[0:20] = v[17:];
    let acc = a;
    for k in 0..3 {
        acc[2:35, 1:] = acc[2:35, 1:] * 0.5 + a[:33, :6];
        if V[k] > 0.5 {
            acc[0:2, 4:5] = a[35:, 2:3] - acc[3:5, 5:6];
        }
    }
    Y[0:37, 0:7] = acc;
}
";

/// The [`RANGES_SRC`] kernel on a 35x6 array (partial 37x7 tiles).
pub(crate) fn ranges() -> Vec<Case> {
    let (m, n) = (35u64, 6u64);
    let src = SourceSet::with_stdlib("ranges.tile", RANGES_SRC);
    let arrays = vec![
        ("A", random_uniform((m * n) as usize, 43), vec![m, n]),
        ("V", random_uniform(m as usize, 44), vec![m]),
        ("B", vec![0.0; (m * n) as usize], vec![m, n]),
        ("C", vec![0.0; (m * n) as usize], vec![m, n]),
        ("W", vec![0.0; m as usize], vec![m]),
        ("X", vec![0.0; 20], vec![20]),
        ("Y", vec![0.0; (m * n) as usize], vec![m, n]),
    ];
    let outs = vec!["B", "C", "W", "X", "Y"];
    vec![Case { compare: Compare::Relative, ..case(src, "ranges", arrays, vec![], outs) }]
}

/// Broadcasts: a vector along the rows, columns (`column(v)`, a range `t[:, j:j+1]`) across
/// the columns, a `tile<T, 1, N>` row (from lane 0 on the GPU targets), in arithmetic,
/// comparisons, `where` and compound assignment, on a partial 37x7 tile.
const BROADCAST_SRC: &str = "
kernel broadcasts<T: float>(A: T[M, N], V: T[N], U: T[M], B: mut T[M, N], C: mut T[M, N], D: mut T[M, N]) grid(1) {
    let a = A[0:37, 0:7];
    let v = V[0:7];
    let u = U[0:37];
    B[0:37, 0:7] = (a - v) * column(u) - column(max_axis(a, 1)) + a[30:31, :];
    C[0:37, 0:7] = where(a > v, a[:, 5:6], column(u) + v);
    let t = a;
    t += v;
    t /= column(u) + 2.0;
    t -= a[0:1, :];
    D[0:37, 0:7] = t;
}
";

/// The [`BROADCAST_SRC`] kernel on a 35x6 array (partial 37x7 tiles).
pub(crate) fn broadcasts() -> Vec<Case> {
    let (m, n) = (35u64, 6u64);
    let src = SourceSet::with_stdlib("broadcasts.tile", BROADCAST_SRC);
    let arrays = vec![
        ("A", random_uniform((m * n) as usize, 45), vec![m, n]),
        ("V", random_uniform(n as usize, 46), vec![n]),
        ("U", random_uniform(m as usize, 47), vec![m]),
        ("B", vec![0.0; (m * n) as usize], vec![m, n]),
        ("C", vec![0.0; (m * n) as usize], vec![m, n]),
        ("D", vec![0.0; (m * n) as usize], vec![m, n]),
    ];
    let outs = vec!["B", "C", "D"];
    vec![Case { compare: Compare::Relative, ..case(src, "broadcasts", arrays, vec![], outs) }]
}

/// `lu_()` on a whole 17x17 tile (more rows than 4-16 lanes) and a 5x5 matrix in an 8x8 tile
/// padded with the identity.
const LU_SRC: &str = "
kernel lu_sizes<T: float>(A: mut T[B, 17, 17], C: mut T[B, 5, 5]) grid(B) {
    let b = program_id(0);
    let a = A[b, :, :];
    a.lu_();
    A[b, :, :] = a;
    let c = tile<T, 8, 8>::eye();
    c[:] = C[b, 0:8, 0:8];
    c.lu_();
    C[b, 0:8, 0:8] = c;
}
";

/// [`LU_SRC`] on two diagonally dominant matrices of each order.
pub(crate) fn lu() -> Vec<Case> {
    let src = SourceSet::with_stdlib("lu_sizes.tile", LU_SRC);
    let arrays = vec![("A", lu_input(2, 17), vec![2, 17, 17]), ("C", lu_input(2, 5), vec![2, 5, 5])];
    vec![case(src, "lu_sizes", arrays, vec![], vec!["A", "C"])]
}

/// `exp`, `log`, `sin`, `cos` and `tanh` on tiles and on scalars: on the GPU targets `f64`
/// ones are expanded into arithmetic by the SIMT lowering, `f32` ones are the device's.
const MATH_SRC: &str = "
kernel math<T: float>(X: T[N], Y: T[N], O: mut T[16, N]) grid(cdiv(N, 16)) block(16) {
    let i0 = program_id(0) * 16;
    let x = X[i0:i0+16];
    let y = Y[i0:i0+16];
    O[0, i0:i0+16] = exp(x);
    O[1, i0:i0+16] = log(x);
    O[2, i0:i0+16] = sin(y);
    O[3, i0:i0+16] = cos(y);
    O[4, i0:i0+16] = tanh(x);
    for i in i0..min(i0 + 16, N) {
        O[5, i] = exp(X[i]);
        O[6, i] = log(X[i]);
        O[7, i] = sin(Y[i]);
        O[8, i] = cos(Y[i]);
        O[9, i] = tanh(X[i]);
        O[13, i] = exp2(X[i]);
        O[14, i] = log2(X[i]);
        O[15, i] = rsqrt(X[i]);
    }
    O[10, i0:i0+16] = exp2(x);
    O[11, i0:i0+16] = log2(x);
    O[12, i0:i0+16] = rsqrt(x);
}
";

/// [`MATH_SRC`] on 77 moderate positive arguments (from 1e-6 to 40), compared element by
/// element ([`Compare::Mixed`]: lavapipe's `f32` `tanh(1.26e-6)` is 1.7% off, 2e-8 absolute).
pub(crate) fn math() -> Vec<Case> {
    let mut x: Vec<f64> = (0..60).map(|i| 1e-6 * 1.26f64.powi(i)).collect(); // 1e-6 .. 8.4
    x.extend((0..17).map(|i| 8.0 + 2.0 * i as f64));
    vec![math_case(x.clone(), x, Compare::Mixed)]
}

/// [`MATH_SRC`] on edge arguments for `f64`: signed zeros, subnormals, the limits of `exp`,
/// huge and negative arguments, multiples of pi/2, infinities and NaN. (Finite arguments of
/// `sin` and `cos` are capped at 3.3e9, below 2^31 pi/2, the GPU targets' limit.)
pub(crate) fn math_edges_f64() -> Case {
    let pi = std::f64::consts::PI;
    let x = vec![
        0.0,
        -0.0,
        1e-300,
        2.5e-310,
        5e-324,
        1e-17,
        -1e-17,
        1e-8,
        0.3,
        -0.3,
        0.5,
        0.69,
        0.7,
        0.99,
        1.0,
        1.01,
        -1.0,
        2.0,
        -2.5,
        pi / 4.0,
        pi / 2.0,
        pi,
        -pi,
        1.5 * pi,
        2.0 * pi,
        10.0 * pi,
        100.0,
        -100.0,
        1e5,
        -1e5,
        12345.678,
        -12345.678,
        -2e9,
        -2.5e9,
        1e9,
        -3e9,
        3.3e9,
        19.5,
        20.5,
        -25.0,
        700.0,
        709.7,
        709.78,
        709.79,
        710.0,
        -700.0,
        -708.5,
        -744.0,
        -745.1,
        -746.0,
        1e300,
        -1e300,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let limit = 2f64.powi(31) * std::f64::consts::FRAC_PI_2;
    let y = x.iter().map(|v| if v.is_finite() && v.abs() >= limit { v.signum() * 3.3e9 } else { *v }).collect();
    math_case(x, y, Compare::Relative)
}

/// [`MATH_SRC`] with `exp`, `log` and `tanh` of `x` and `sin`, `cos` of `y`.
fn math_case(x: Vec<f64>, y: Vec<f64>, compare: Compare) -> Case {
    let n = x.len() as u64;
    let src = SourceSet::with_stdlib("math.tile", MATH_SRC);
    let arrays = vec![("X", x, vec![n]), ("Y", y, vec![n]), ("O", vec![0.0; 16 * n as usize], vec![16, n])];
    Case { compare, ..case(src, "math", arrays, vec![], vec!["O"]) }
}

/// The largest difference of two arrays relative to each element of `want` (absolute where
/// `want` is 0); NaN matches NaN and an infinity matches itself, anything else is infinitely
/// far.
pub(crate) fn elem_rel_diff(got: &[f64], want: &[f64]) -> f64 {
    got.iter().zip(want).map(|(g, w)| elem_diff(*g, *w)).fold(0.0, f64::max)
}

/// As [`elem_rel_diff`], relative to `max(|want|, 1)`.
pub(crate) fn elem_mixed_diff(got: &[f64], want: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(g, w)| elem_diff(*g, *w) * w.abs().max(f64::MIN_POSITIVE) / w.abs().max(1.0))
        .fold(0.0, f64::max)
}

fn elem_diff(g: f64, w: f64) -> f64 {
    if (g.is_nan() && w.is_nan()) || (g.is_infinite() && g == w) {
        0.0
    } else if g.is_nan() || w.is_nan() || g.is_infinite() || w.is_infinite() {
        f64::INFINITY
    } else {
        (g - w).abs() / w.abs().max(f64::MIN_POSITIVE)
    }
}

/// Where `got` and `want` differ most, element by element: `[i] got G, want W`.
pub(crate) fn worst(got: &[f64], want: &[f64]) -> String {
    let i = (0..got.len()).max_by(|&a, &b| elem_diff(got[a], want[a]).total_cmp(&elem_diff(got[b], want[b])));
    i.map_or(String::new(), |i| format!("[{i}] got {:e}, want {:e}", got[i], want[i]))
}

/// The difference of `got` and `want` as the case measures it.
pub(crate) fn diff(c: &Case, got: &[f64], want: &[f64]) -> f64 {
    match c.compare {
        Compare::Normwise => rel_diff(got, want),
        Compare::Mixed => elem_mixed_diff(got, want),
        Compare::Relative => elem_rel_diff(got, want),
    }
}

/// Largest difference between two arrays relative to the largest magnitude of `want`.
pub(crate) fn rel_diff(got: &[f64], want: &[f64]) -> f64 {
    let scale = want.iter().map(|v| v.abs()).fold(1e-30, f64::max);
    got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) / scale
}

/// Long vectors (more than 64 elements: distributed over the lanes on GPUs): loads past the
/// array's end, masked loads, element-wise arithmetic with scalars, `where`, casts, `iota`,
/// whole-vector reductions, element reads and writes at run-time indices in a loop, a scan,
/// ranges, broadcasts against small vectors, reductions of wide and tall matrices into long
/// vectors, a loop and a branch carrying a long vector, stores and a masked store.
const LONG_SRC: &str = "
kernel longv<T: float>(X: T[N], Y: T[N], M: T[5, C], H: T[R, 3], O: mut T[N], Z: mut T[150], S: mut T[8], P: mut T[C], Q: mut T[R]) grid(1) {
    let x = X[0:150];
    let y = tile<T, 150>::full(2.0);
    y[:] = Y[0:150];
    let i = tile<T, 150>::iota(0);
    let z = where(x > 0.0, x * y + i * 0.01, abs(y) - 1.0);
    let t = z;
    for j in 1..150 {
        t[j] = t[j] * 0.25 + t[j - 1] * 0.5;
    }
    let c = cumsum(z, 0) * 0.1;
    S[0:8] = tile<T, 8>::zeros();
    S[0] = sum(z);
    S[1] = max(z);
    S[2] = min(t);
    S[3] = t[149] + t[(N - 1) % 150];
    let b = column(tile<T, 4>::iota(0)) + z;
    S[4] = sum(b) * 0.01;
    let r = z[10:80];
    S[5] = sum(r * r) * 0.01;
    z[0:70] = r * 0.5;
    let k = 0;
    let acc = z;
    while k < 3 {
        acc = acc * 0.5 + c;
        k = k + 1;
    }
    if S[0] > 0.0 {
        acc = acc + (i as i32 % 3) as T;
    } else {
        acc = acc - 1.0;
    }
    O[0:150] = acc + t;
    Z[0:150] = tile<T, 150>::full(-3.0);
    masked_store(Z[0:150], c + x, i < 120.0 && x < 0.5);
    let m = M[0:5, 0:100];
    P[0:100] = sum(m, 0) * 0.5;
    let h = H[0:100, 0:3];
    Q[0:100] = sum(h, 1) * max_axis(h, 1);
}
";

/// The long-vector kernel on partial data (137 of 150 elements, 97 of 100 columns and rows).
pub(crate) fn long_vectors() -> Vec<Case> {
    let (n, c, r) = (137u64, 97u64, 97u64);
    let src = SourceSet::with_stdlib("longv.tile", LONG_SRC);
    let arrays = vec![
        ("X", random_uniform(n as usize, 61), vec![n]),
        ("Y", random_uniform(n as usize, 62), vec![n]),
        ("M", random_uniform((5 * c) as usize, 63), vec![5, c]),
        ("H", random_uniform((r * 3) as usize, 64), vec![r, 3]),
        ("O", vec![7.0; n as usize], vec![n]),
        ("Z", vec![7.0; 150], vec![150]),
        ("S", vec![7.0; 8], vec![8]),
        ("P", vec![7.0; c as usize], vec![c]),
        ("Q", vec![7.0; r as usize], vec![r]),
    ];
    let outs = vec!["O", "Z", "S", "P", "Q"];
    vec![case(src, "longv", arrays, vec![], outs)]
}

const SHORT_SRC: &str = "
kernel shortv<T: float>(X: T[24], M: T[24, 24], S: mut T[4], R: mut T[24]) grid(1) {
    let x = X[0:24];
    let m = M[0:24, 0:24];
    let i = tile<T, 24>::iota(0);
    let e = x * x + sum(m, 1) + i * 0.125;
    let mm = m * row(i) + column(i);
    for k in 0..3 {
        e = e * 0.5 + x;
        e[k] = e[k + 1] - x[k];
    }
    S[0] = sum(e);
    S[1] = prod(e * 0.5 + 1.0);
    S[2] = sum(x * sum(mm, 1));
    S[3] = max(e);
    R[0:24] = e;
}
";

/// Short vectors that the kernel's loops use only element-wise, and that are summed outside
/// them: distributed over the lanes in the SIMT form (`simt/dist.rs`), their float sums and
/// products still in index order (bit for bit the CPU's).
pub(crate) fn short_vectors() -> Vec<Case> {
    let src = SourceSet::with_stdlib("shortv.tile", SHORT_SRC);
    let arrays = vec![
        ("X", random_uniform(24, 71), vec![24]),
        ("M", random_uniform(24 * 24, 72), vec![24, 24]),
        ("S", vec![7.0; 4], vec![4]),
        ("R", vec![7.0; 24], vec![24]),
    ];
    vec![case(src, "shortv", arrays, vec![], vec!["S", "R"])]
}

/// Issue 29's constructs, `tests/tests/cases/constructs.tile`, on a 37x6 array (partial 40x7
/// tiles, more rows than lanes up to 32) and 97 elements of a 100-element long vector, with
/// `0.0` and `-0.0` in the data for `signbit` and `copysign`.
pub(crate) fn constructs() -> Vec<Case> {
    let (m, n, l) = (37u64, 6u64, 97u64);
    let src = SourceSet::with_stdlib("constructs.tile", include_str!("constructs.tile"));
    let mut a = random_uniform((m * n) as usize, 91);
    a[3 * n as usize + 2] = 0.0;
    a[5 * n as usize + 1] = -0.0;
    let mut arrays = vec![("A", a, vec![m, n]), ("V", random_uniform(l as usize, 92), vec![l])];
    for o in ["F", "G", "RS", "RX", "CS", "MP"] {
        arrays.push((o, vec![7.0; (m * n) as usize], vec![m, n]));
    }
    for o in ["H", "RV"] {
        arrays.push((o, vec![7.0; l as usize], vec![l]));
    }
    arrays.push(("RW", vec![7.0; 2 * l as usize], vec![2, l]));
    arrays.push(("QR", vec![7.0; 48], vec![12, 4]));
    arrays.push(("RT", vec![7.0; l as usize], vec![l]));
    arrays.push(("JS", vec![7.0; 2 * m as usize], vec![m, 2]));
    arrays.push(("SC", vec![7.0; (m * n) as usize], vec![m, n]));
    arrays.push(("SV", vec![7.0; l as usize], vec![l]));
    arrays.push(("X", vec![7.0; 64], vec![64]));
    arrays.push(("FM", vec![7.0; (m * n) as usize], vec![m, n]));
    let outs = vec!["F", "G", "RS", "RX", "CS", "MP", "H", "RV", "RW", "QR", "RT", "JS", "SC", "SV", "X", "FM"];
    vec![Case { compare: Compare::Relative, ..case(src, "constructs", arrays, vec![], outs) }]
}

/// `f16` and `bf16` arithmetic (`tests/tests/cases/half_arith.tile`) on inputs that make
/// every target's `f32` accumulation exact: the same bits everywhere.
pub(crate) fn half_arith() -> Vec<Case> {
    let (m, n) = (7u64, 13u64);
    let src = SourceSet::with_stdlib("half_arith.tile", include_str!("half_arith.tile"));
    // In [1/8, 4) with either sign, a random 16-bit pattern's worth of digits.
    let wide = |seed: u64| -> Vec<f64> {
        let u = random_uniform((m * n) as usize, seed);
        let s = random_uniform((m * n) as usize, seed + 1);
        u.iter().zip(&s).map(|(u, s)| (0.125 * 32f64.powf(u.abs())).copysign(*s)).collect()
    };
    let b: Vec<f64> = random_uniform((n * n) as usize, 83)
        .iter()
        .map(|u| [-1.0, 0.0, 0.5, 1.0, 2.0][((u + 1.0) * 2.5) as usize % 5])
        .collect();
    let mut arrays = vec![("X", wide(81), vec![m, n]), ("Y", wide(84), vec![m, n]), ("B", b, vec![n, n])];
    for o in ["E", "F", "P", "C", "G"] {
        arrays.push((o, vec![7.0; (m * n) as usize], vec![m, n]));
    }
    arrays.push(("S", vec![7.0; m as usize], vec![m]));
    let typed_arrays = vec![
        ("H", Scalar::F16, vec![7.0; (m * n) as usize], vec![m, n]),
        ("K", Scalar::BF16, vec![7.0; (m * n) as usize], vec![m, n]),
    ];
    let outs = vec!["E", "F", "S", "P", "C", "G", "H", "K"];
    vec![Case { compare: Compare::Relative, typed_arrays, ..case(src, "half_arith", arrays, vec![], outs) }]
}

/// Optional arrays (`tests/tests/cases/optional.tile`) all omitted, and all given.
pub(crate) fn optional() -> Vec<Case> {
    let (m, n) = (10u64, 13u64);
    let eighths = |len: u64, seed: u64| -> Vec<f64> {
        random_uniform(len as usize, seed).iter().map(|x| (x * 16.0).round() / 8.0).collect()
    };
    [false, true]
        .into_iter()
        .map(|given| {
            let src = SourceSet::with_stdlib("optional.tile", include_str!("optional.tile"));
            let mut arrays =
                vec![("X", eighths(m * n, 131), vec![m, n]), ("Y", vec![7.0; (m * n) as usize], vec![m, n])];
            let mut outs = vec!["Y", "Flags"];
            if given {
                arrays.push(("Bias", eighths(n, 132), vec![n]));
                arrays.push(("Extra", vec![3.0, -2.0, 5.0], vec![3]));
                arrays.push(("Stats", vec![7.0; m as usize], vec![m]));
                arrays.push(("Hist", vec![0.0; 4], vec![4]));
                outs.extend(["Stats", "Hist"]);
            }
            Case {
                int_arrays: vec![("Flags", vec![-1; m as usize], vec![m])],
                compare: Compare::Relative,
                ..case(src, "optional", arrays, vec![], outs)
            }
        })
        .collect()
}

/// `sort`, `argsort` and `topk` (`tests/tests/cases/sorts.tile`) on a 21x13 array in 24x13
/// tiles (rows padded to 16 by the network, columns to 32) and a vector of 100 in a 128-tile,
/// with ties (multiples of 1/4), -0.0, inf and NaN in the data: every target against the CPU.
#[allow(dead_code)] // not in tests/vulkan.rs: lavapipe's shader compiler runs out of memory on it
pub(crate) fn sorts() -> Vec<Case> {
    let (m, n, l) = (21u64, 13u64, 100u64);
    let src = SourceSet::with_stdlib("sorts.tile", include_str!("sorts.tile"));
    let mut a: Vec<f64> = random_uniform((m * n) as usize, 93).iter().map(|x| (x * 8.0).round() / 4.0).collect();
    for (k, x) in [(3, f64::NAN), (4, -0.0), (17, f64::INFINITY), (30, f64::NEG_INFINITY), (44, f64::NAN)] {
        a[k] = x;
    }
    let mut v: Vec<f64> = random_uniform(l as usize, 94).iter().map(|x| (x * 8.0).round() / 4.0).collect();
    v[9] = f64::NAN;
    let mut arrays = vec![("A", a, vec![m, n]), ("V", v, vec![l])];
    for o in ["S1", "S0", "D1", "I1", "ID0", "SI"] {
        arrays.push((o, vec![7.0; (m * n) as usize], vec![m, n]));
    }
    arrays.push(("TV", vec![7.0; 3 * m as usize], vec![m, 3]));
    arrays.push(("TI", vec![7.0; 3 * m as usize], vec![m, 3]));
    arrays.push(("SV", vec![7.0; l as usize], vec![l]));
    arrays.push(("IV", vec![7.0; l as usize], vec![l]));
    let outs = vec!["S1", "S0", "D1", "I1", "ID0", "TV", "TI", "SV", "IV", "SI"];
    vec![Case { compare: Compare::Relative, ..case(src, "sorts", arrays, vec![], outs) }]
}

/// Rows and columns at run-time and constant indices, read and written, inside and out of
/// range: `tests/tests/cases/lines.tile` on a 35x6 array (a partial 37x7 tile), `i = 2`, `j = 1`.
pub(crate) fn lines() -> Vec<Case> {
    let (m, n) = (35u64, 6u64);
    let src = SourceSet::with_stdlib("lines.tile", include_str!("lines.tile"));
    let arrays = vec![
        ("A", random_uniform((m * n) as usize, 47), vec![m, n]),
        ("W", random_uniform(500, 48), vec![5, 100]),
        ("H", random_uniform(300, 49), vec![100, 3]),
        ("B", vec![7.0; (m * n) as usize], vec![m, n]),
        ("R", vec![7.0; 56], vec![8, 7]),
        ("C", vec![7.0; 8 * 37], vec![8, 37]),
        ("L", vec![7.0; 300], vec![3, 100]),
        ("K", vec![7.0; 300], vec![100, 3]),
    ];
    let outs = vec!["B", "R", "C", "L", "K"];
    let ints = vec![("i", 2), ("j", 1)];
    vec![Case { compare: Compare::Relative, ints, ..case(src, "lines", arrays, vec![], outs) }]
}

/// Gathers and scatters through index tiles with positions in and out of the arrays,
/// repeated ones added by `atomic_add` from two programs: `tests/tests/cases/gathers.tile`.
/// Every value a multiple of 1/8, so every target's sums are exact.
pub(crate) fn gathers() -> Vec<Case> {
    let src = SourceSet::with_stdlib("gathers.tile", include_str!("gathers.tile"));
    let eighths = |n: usize, seed: u64| -> Vec<f64> {
        random_uniform(n, seed).iter().map(|x| (x * 16.0).round() / 8.0).collect()
    };
    let mut i: Vec<i32> = (0..40).map(|k| (k * 17 + 5) % 43 - 3).collect();
    i[3] = i[2];
    let j: Vec<i32> = (0..40).map(|k| (k * 7) % 10 - 2).collect();
    let p: Vec<i32> = (0..40).map(|k| (k * 13) % 40).collect();
    let k: Vec<i32> = (0..40).map(|e| (e * 11) % 37 - 1).collect();
    let z: Vec<i32> = (0..40).map(|e| (e * 5) % 8 - 1).collect();
    let mut arrays = vec![("A", eighths(35 * 6, 91), vec![35, 6]), ("V", eighths(37, 92), vec![37])];
    let outs: [(&str, &[u64]); 12] = [
        ("G", &[40]),
        ("R", &[40, 8]),
        ("C", &[8, 40]),
        ("E", &[8, 8]),
        ("F", &[5, 8]),
        ("O", &[40, 8]),
        ("S", &[35, 6]),
        ("Q", &[40]),
        ("W", &[37]),
        ("X", &[40]),
        ("Y", &[40]),
        ("H", &[16]),
    ];
    for (n, s) in outs {
        arrays.push((n, vec![7.0; s.iter().product::<u64>() as usize], s.to_vec()));
    }
    let int_arrays =
        vec![("I", i, vec![40]), ("J", j, vec![40]), ("P", p, vec![40]), ("K", k, vec![5, 8]), ("Z", z, vec![5, 8])];
    let names = outs.iter().map(|(n, _)| *n).collect();
    vec![Case { compare: Compare::Relative, int_arrays, ..case(src, "gathers", arrays, vec![], names) }]
}

/// The atomic read-modify-write family with old values from three programs
/// (`tests/tests/cases/atomics.tile`): results that do not depend on the order the lanes and
/// programs take, on float, i32, u32 and i64 arrays; -0.0, 0.0 and a NaN for totalOrder.
pub(crate) fn atomics() -> Vec<Case> {
    let src = SourceSet::with_stdlib("atomics.tile", include_str!("atomics.tile"));
    let eighths = |n: usize, seed: u64| -> Vec<f64> {
        random_uniform(n, seed).iter().map(|x| (x * 16.0).round() / 8.0).collect()
    };
    let mut v = eighths(40, 95);
    (v[3], v[4], v[5]) = (-0.0, 0.0, f64::NAN);
    let mut i: Vec<i32> = (0..40).map(|k| (k * 7) % 12 - 2).collect();
    (i[3], i[4]) = (2, 2);
    let k: Vec<i32> = (0..40).map(|e| (e * 5) % 19 - 9).collect();
    let p: Vec<i32> = (0..40).map(|e| (e * 13) % 40).collect();
    let q: Vec<f64> = (0..120).map(|e| if e % 3 == 0 { 1.0 } else { 7.0 }).collect();
    let mut arrays = vec![
        ("V", v, vec![40]),
        ("S", vec![7.0; 8], vec![8]),
        ("MN", vec![7.0; 8], vec![8]),
        ("MX", vec![-7.0; 8], vec![8]),
        ("A", eighths(120, 96), vec![3, 40]),
        ("X", eighths(120, 97), vec![3, 40]),
        ("Q", q, vec![3, 40]),
    ];
    for n in ["OA", "OX", "OQ", "B"] {
        arrays.push((n, vec![0.0; 120], vec![3, 40]));
    }
    arrays.push(("O", vec![9.0; 6], vec![3, 2]));
    let int_arrays = vec![
        ("K", k, vec![40]),
        ("I", i, vec![40]),
        ("P", p, vec![40]),
        ("C", vec![0, 0, 0, 0, 3, 3, 3, 0], vec![8]),
        ("IM", vec![-3; 8], vec![8]),
    ];
    let typed_arrays = vec![("UM", Scalar::U32, vec![5.0; 8], vec![8]), ("LA", Scalar::I64, vec![1.0; 8], vec![8])];
    let outs = vec!["C", "S", "MN", "MX", "IM", "UM", "LA", "A", "X", "Q", "OA", "OX", "OQ", "B", "O"];
    vec![Case { compare: Compare::Relative, int_arrays, typed_arrays, ..case(src, "atomics", arrays, vec![], outs) }]
}

/// The atomic family on `f16`/`bf16` arrays (`tests/tests/cases/atomics_half.tile`): results
/// that do not depend on the order of the lanes and programs, operands rounded to the half
/// types. Not on Vulkan, which has no 16-bit atomics (E0504, `cli_errors.rs`).
#[allow(dead_code)] // not in tests/vulkan.rs: Vulkan refuses atomics on f16 and bf16 arrays
pub(crate) fn atomics_half() -> Vec<Case> {
    let src = SourceSet::with_stdlib("atomics_half.tile", include_str!("atomics_half.tile"));
    let eighths = |n: usize, seed: u64| -> Vec<f64> {
        random_uniform(n, seed).iter().map(|x| (x * 16.0).round() / 8.0).collect()
    };
    let mut v = eighths(40, 101);
    (v[3], v[4], v[5]) = (-0.0, 0.0, f64::NAN);
    let w: Vec<f64> = random_uniform(40, 102).iter().map(|x| x * 3.0).collect();
    let mut i: Vec<i32> = (0..40).map(|k| (k * 7) % 12 - 2).collect();
    (i[3], i[4]) = (2, 2);
    let p: Vec<i32> = (0..40).map(|e| (e * 13) % 40).collect();
    let q: Vec<f64> = (0..120).map(|e| if e % 3 == 0 { 1.0 } else { 7.0 }).collect();
    let mut arrays = vec![("V", v, vec![40]), ("W", w, vec![40])];
    for n in ["OA", "OX", "OQ"] {
        arrays.push((n, vec![0.0; 120], vec![3, 40]));
    }
    arrays.push(("OC", vec![0.0; 3], vec![3]));
    let int_arrays = vec![("I", i, vec![40]), ("P", p, vec![40])];
    let typed_arrays = vec![
        ("S", Scalar::F16, vec![7.0; 8], vec![8]),
        // bf16 sums of 1/32 are exact below 8 only (ulp 1/16 above): from 0.5 they reach 6.75.
        ("SB", Scalar::BF16, vec![0.5; 8], vec![8]),
        ("MN", Scalar::F16, vec![7.0; 8], vec![8]),
        ("MX", Scalar::BF16, vec![-7.0; 8], vec![8]),
        ("A", Scalar::F16, eighths(120, 103), vec![3, 40]),
        ("X", Scalar::BF16, eighths(120, 104), vec![3, 40]),
        ("Q", Scalar::F16, q, vec![3, 40]),
        ("C", Scalar::F16, vec![0.5, -1.25, 3.0], vec![3]),
    ];
    let outs = vec!["S", "SB", "MN", "MX", "A", "X", "Q", "C", "OA", "OX", "OQ", "OC"];
    vec![Case {
        compare: Compare::Relative,
        int_arrays,
        typed_arrays,
        ..case(src, "atomics_half", arrays, vec![], outs)
    }]
}

/// Ranges of tiles starting at run-time positions (inside, and past either end), read and
/// written: `tests/tests/cases/dyn_ranges.tile`.
pub(crate) fn dyn_ranges() -> Vec<Case> {
    [3, 6, 0]
        .into_iter()
        .map(|s| {
            let src = SourceSet::with_stdlib("dyn_ranges.tile", include_str!("dyn_ranges.tile"));
            let arrays = vec![
                ("V", random_uniform(12, 71), vec![12]),
                ("A", random_uniform(35, 72), vec![7, 5]),
                ("W", vec![7.0; 12], vec![12]),
                ("X", vec![7.0; 4], vec![4]),
                ("B", vec![7.0; 35], vec![7, 5]),
                ("C", vec![7.0; 6], vec![3, 2]),
            ];
            let outs = vec!["W", "X", "B", "C"];
            Case { ints: vec![("s", s)], ..case(src, "dyn_ranges", arrays, vec![], outs) }
        })
        .collect()
}

/// Transposes of square, tall, wide, partial and single-row tiles (more rows or columns than
/// 4-16 lanes, fewer than 32), alone, twice, and as an operand of `@`: exact on every target.
const TRANSPOSE_SRC: &str = "
kernel transposes<T: float>(A: T[M, N], S: mut T[16, 16], P: mut T[17, 15], Q: mut T[3, 40], W: mut T[40, 3], V: mut T[9, 70], R: mut T[1, 17], D: mut T[15, 17], G: mut T[15, 15], E: mut T[17, 15], H: mut T[5, 7], K: mut T[7, 5]) grid(1) {
    // Stored transposed (SIMT: no shuffles).
    S[:, :] = transpose(A[0:16, 0:16]);
    let p = A[0:15, 0:17];
    P[:, :] = transpose(p);
    D[:, :] = transpose(transpose(p));
    Q[:, :] = transpose(A[0:40, 0:3]);
    W[:, :] = transpose(A[0:3, 0:40]);
    V[:, :] = transpose(A[0:70, 0:9]);
    R[:, :] = transpose(A[0:17, 0:1]);
    G[:, :] = p[:, 0:15] @ transpose(A[20:35, 2:17]);
    // Not stored as it is: shuffles.
    E[:, :] = 2.0 * transpose(p);
    // Loaded before a store to the same elements, stored transposed after it.
    let h = H[0:5, 0:7];
    H[0:5, 0:7] = A[0:5, 0:7];
    K[:, :] = transpose(h);
}
";

const STAGED_SRC: &str = "
kernel staged<T: float>(A: T[M, N], Z: mut T[8, 8], L: mut T[13, 24], O: mut T[8, 16], Q: mut T[9, 20], G: mut T[9, 8], C: mut T[10, 12], S: mut T[8, 8], W: mut T[8, 8]) grid(1) {
    // Right operands copied to shared memory at their loads: 12 x 24 (at 16, 32 and 64 lanes
    // the columns neither divide nor are divided by the lanes), and a 16 x 16 tile half past
    // the array's end, whose missing elements are 0.
    L[:, :] = A[0:13, 0:12] @ A[5:17, 0:24];
    O[:, :] = A[0:8, 0:16] @ A[60:76, 30:46];
    // Read transposed from the registers of t.
    Q[:, :] = A[0:9, 0:10] @ transpose(A[10:30, 3:13]);
    // From registers: a computed operand.
    G[:, :] = A[0:9, 0:16] @ (A[0:16, 0:8] * 2.0);
    // A staged load in a loop, accumulated.
    let acc = tile<T, 10, 12>::zeros();
    for k in 0..4 {
        acc += A[0:10, k * 8:k * 8 + 8] @ A[k * 8:k * 8 + 8, 0:12];
    }
    C[:, :] = acc;
    // Another product between the load and its product: staged from registers.
    let b = A[20:28, 0:8];
    let c = A[0:8, 0:8] @ A[8:16, 0:8];
    S[:, :] = c @ b;
    // A store between the load and its product: the product sees the elements as loaded.
    let z = Z[0:8, 0:8];
    Z[0:8, 0:8] = A[30:38, 0:8];
    W[:, :] = A[40:48, 0:8] @ z;
}
";

/// [`STAGED_SRC`] on a 70x40 array: products whose right operand is staged through shared
/// memory on GPUs (`midend/src/simt/staged.rs`).
pub(crate) fn staged() -> Vec<Case> {
    let (m, n) = (70u64, 40u64);
    let src = SourceSet::with_stdlib("staged.tile", STAGED_SRC);
    let mut arrays = vec![("A", random_uniform((m * n) as usize, 83), vec![m, n])];
    arrays.push(("Z", random_uniform(64, 84), vec![8, 8]));
    for (name, r, c) in
        [("L", 13, 24), ("O", 8, 16), ("Q", 9, 20), ("G", 9, 8), ("C", 10, 12), ("S", 8, 8), ("W", 8, 8)]
    {
        arrays.push((name, vec![7.0; r * c], vec![r as u64, c as u64]));
    }
    let outs = vec!["Z", "L", "O", "Q", "G", "C", "S", "W"];
    vec![case(src, "staged", arrays, vec![], outs)]
}

/// [`TRANSPOSE_SRC`] on a 70x40 array.
pub(crate) fn transposes() -> Vec<Case> {
    let (m, n) = (70u64, 40u64);
    let src = SourceSet::with_stdlib("transposes.tile", TRANSPOSE_SRC);
    let mut arrays = vec![("A", random_uniform((m * n) as usize, 81), vec![m, n])];
    for (name, r, c) in [
        ("S", 16, 16),
        ("P", 17, 15),
        ("Q", 3, 40),
        ("W", 40, 3),
        ("V", 9, 70),
        ("R", 1, 17),
        ("D", 15, 17),
        ("G", 15, 15),
        ("E", 17, 15),
        ("H", 5, 7),
        ("K", 7, 5),
    ] {
        arrays.push((name, vec![7.0; r * c], vec![r as u64, c as u64]));
    }
    let outs = vec!["S", "P", "Q", "W", "V", "R", "D", "G", "E", "H", "K"];
    vec![case(src, "transposes", arrays, vec![], outs)]
}
