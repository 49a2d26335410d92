//! The examples' cases: every kernel of `examples/` on small inputs with partial tiles.

use super::{case, example, lu_input, Case, Compare};
use tilec_midend::Scalar;
use tilec_runtime::{random_spd, random_uniform};

/// `p` 3x3 matrices `I + 0.1 R` with `R` uniform in [-1, 1] (deformation gradients).
fn near_identity(p: usize, seed: u64) -> Vec<f64> {
    let r = random_uniform(p * 9, seed);
    (0..p * 9).map(|e| if e % 9 % 4 == 0 { 1.0 } else { 0.0 } + 0.1 * r[e]).collect()
}

/// Tables for `fft_rows` and `fft_filter_rows` at N1 = 4, N2 = 8 (any values: the cases compare
/// targets with each other, not with a DFT).
fn fft_tables() -> Vec<(&'static str, Vec<f64>, Vec<u64>)> {
    vec![
        ("F1", random_uniform(2 * 4 * 4, 153), vec![2, 4, 4]),
        ("F2", random_uniform(2 * 8 * 8, 154), vec![2, 8, 8]),
        ("Tw", random_uniform(2 * 4 * 8, 155), vec![2, 4, 8]),
    ]
}

/// A `size x size` array holding the Cholesky factor of the leading `n x n` block of an SPD
/// matrix (`random_spd(1, size, seed)`) and the identity past it: what `block_cholesky` leaves.
fn chol_padded(size: usize, n: usize, seed: u64) -> Vec<f64> {
    let a = random_spd(1, size, seed);
    let active: Vec<f64> = (0..n * n).map(|e| a[(e / n) * size + e % n]).collect();
    let l = tilec_tests::cholesky_f64(&active, n);
    (0..size * size)
        .map(|e| {
            let (i, j) = (e / size, e % size);
            if i < n && j < n {
                l[i * n + j]
            } else if i == j {
                1.0
            } else {
                0.0
            }
        })
        .collect()
}

/// Every example.
pub(crate) fn all() -> Vec<Case> {
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
            example("cholesky.tile"),
            "residual",
            vec![
                ("A", random_spd(2, n, 13), vec![2, n as u64, n as u64]),
                ("L", random_uniform(2 * n * n, 18), vec![2, n as u64, n as u64]),
                ("R", vec![0.0], vec![1]),
            ],
            vec![],
            vec!["R"],
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
        case(example("lu.tile"), "lu_batched", vec![("A", lu_input(3, 29), vec![3, 29, 29])], vec![], vec!["A"]),
        case(
            example("geqrf.tile"),
            "geqrf_batched",
            vec![("A", random_uniform(3 * 29 * 23, 74), vec![3, 29, 23]), ("Tau", vec![7.0; 3 * 23], vec![3, 23])],
            vec![],
            vec!["A", "Tau"],
        ),
        case(
            example("rms_norm.tile"),
            "rms_norm_fwd",
            vec![
                ("X", random_uniform(21 * 200, 75), vec![21, 200]),
                ("W", random_uniform(200, 76), vec![200]),
                ("Y", vec![0.0; 21 * 200], vec![21, 200]),
                ("Rstd", vec![0.0; 21], vec![21]),
            ],
            vec![("eps", 1e-6)],
            vec!["Y", "Rstd"],
        ),
        case(
            example("rms_norm.tile"),
            "rms_norm_bwd",
            vec![
                ("X", random_uniform(21 * 200, 77), vec![21, 200]),
                ("DY", random_uniform(21 * 200, 78), vec![21, 200]),
                ("W", random_uniform(200, 79), vec![200]),
                ("Rstd", random_uniform(21, 80).iter().map(|v| v + 2.0).collect(), vec![21]),
                ("DX", vec![0.0; 21 * 200], vec![21, 200]),
                ("DW", vec![0.0; 200], vec![200]),
            ],
            vec![],
            vec!["DX", "DW"],
        ),
        case(
            example("swiglu.tile"),
            "swiglu_fwd",
            vec![
                ("A", random_uniform(21 * 200, 81), vec![21, 200]),
                ("B", random_uniform(21 * 200, 82), vec![21, 200]),
                ("C", vec![0.0; 21 * 200], vec![21, 200]),
            ],
            vec![],
            vec!["C"],
        ),
        case(
            example("swiglu.tile"),
            "swiglu_bwd",
            vec![
                ("DC", random_uniform(21 * 200, 83), vec![21, 200]),
                ("A", random_uniform(21 * 200, 84), vec![21, 200]),
                ("B", random_uniform(21 * 200, 85), vec![21, 200]),
            ],
            vec![],
            vec!["A", "B"],
        ),
        case(
            example("dropout.tile"),
            "dropout",
            vec![
                ("X", random_uniform(3000, 86), vec![3000]),
                ("R", random_uniform(3000, 87), vec![3000]),
                ("Y", vec![7.0; 3000], vec![3000]),
            ],
            vec![("p", 0.25)],
            vec!["Y"],
        ),
        case(
            example("softmax_rows.tile"),
            "softmax_rows",
            vec![
                ("X", random_uniform(21 * 200, 101).iter().map(|v| v * 5.0).collect(), vec![21, 200]),
                ("Y", vec![7.0; 21 * 200], vec![21, 200]),
            ],
            vec![],
            vec!["Y"],
        ),
        case(
            example("suffix_sums.tile"),
            "suffix_sums",
            vec![("X", random_uniform(21 * 300, 102), vec![21, 300]), ("Y", vec![7.0; 21 * 300], vec![21, 300])],
            vec![],
            vec!["Y"],
        ),
        case(
            example("gemver.tile"),
            "gemver_rank2",
            vec![
                ("A", random_uniform(45 * 45, 102), vec![45, 45]),
                ("U1", random_uniform(45, 103), vec![45]),
                ("V1", random_uniform(45, 104), vec![45]),
                ("U2", random_uniform(45, 105), vec![45]),
                ("V2", random_uniform(45, 106), vec![45]),
            ],
            vec![],
            vec!["A"],
        ),
        case(
            example("gemver.tile"),
            "gemver_atx_parts",
            vec![
                ("A", random_uniform(45 * 45, 107), vec![45, 45]),
                ("Y", random_uniform(45, 109), vec![45]),
                ("P", vec![7.0; 5 * 45], vec![5, 45]),
            ],
            vec![],
            vec!["P"],
        ),
        case(
            example("gemver.tile"),
            "gemver_atx",
            vec![
                ("P", random_uniform(5 * 45, 107), vec![5, 45]),
                ("X", random_uniform(45, 108), vec![45]),
                ("Z", random_uniform(45, 110), vec![45]),
            ],
            vec![("beta", 1.25)],
            vec!["X"],
        ),
        case(
            example("gemver.tile"),
            "gemver_ax",
            vec![
                ("A", random_uniform(45 * 45, 111), vec![45, 45]),
                ("X", random_uniform(45, 112), vec![45]),
                ("W", random_uniform(45, 113), vec![45]),
            ],
            vec![("alpha", 1.5)],
            vec!["W"],
        ),
        case(
            example("mpm_stress.tile"),
            "mpm_stress",
            vec![
                ("F", near_identity(77, 131), vec![77, 3, 3]),
                ("Jp", random_uniform(77, 132).iter().map(|x| 1.0 + 0.05 * x).collect(), vec![77]),
                ("Tau", vec![7.0; 77 * 9], vec![77, 3, 3]),
            ],
            vec![("mu0", 416.7), ("lambda0", 277.8), ("theta_c", 0.025), ("theta_s", 0.0075), ("hardening", 10.0)],
            vec!["F", "Jp", "Tau"],
        ),
        case(
            example("kalman.tile"),
            "kalman_step",
            vec![
                ("X", random_uniform(77 * 4, 133), vec![77, 4]),
                ("Cov", random_spd(77, 4, 134), vec![77, 4, 4]),
                ("Z", random_uniform(77 * 2, 135), vec![77, 2]),
            ],
            vec![("dt", 0.1), ("q", 0.01), ("r", 0.5)],
            vec!["X", "Cov"],
        ),
        Case {
            ints: vec![("n", 30)],
            ..case(
                example("block_cholesky.tile"),
                "block_cholesky",
                vec![("A", random_spd(1, 37, 158), vec![37, 37]), ("L", vec![7.0; 37 * 37], vec![37, 37])],
                vec![("eps", 1e-30)],
                vec!["L"],
            )
        },
        Case {
            ints: vec![("n", 30)],
            ..case(
                example("block_cholesky.tile"),
                "block_cholesky_solve",
                vec![
                    ("L", chol_padded(37, 30, 158), vec![37, 37]),
                    ("B", random_uniform(37 * 2, 159), vec![37, 2]),
                    ("X", vec![7.0; 37 * 2], vec![37, 2]),
                ],
                vec![],
                vec!["X"],
            )
        },
        case(
            example("walker.tile"),
            "walker_network",
            vec![("W", random_uniform(77 * 8, 163), vec![77, 8]), ("Act", vec![7.0; 77], vec![77, 1])],
            vec![("t", 0.25)],
            vec!["Act"],
        ),
        case(
            example("fft.tile"),
            "fft_plan",
            vec![
                ("F1", vec![7.0; 2 * 4 * 4], vec![2, 4, 4]),
                ("F2", vec![7.0; 2 * 8 * 8], vec![2, 8, 8]),
                ("Tw", vec![7.0; 2 * 4 * 8], vec![2, 4, 8]),
            ],
            vec![],
            vec!["F1", "F2", "Tw"],
        ),
        case(
            example("fft.tile"),
            "fft_rows",
            [
                vec![("X", random_uniform(3 * 2 * 32, 152), vec![3, 2, 4, 8])],
                fft_tables(),
                vec![("Y", vec![7.0; 3 * 2 * 32], vec![3, 2, 8, 4])],
            ]
            .concat(),
            vec![],
            vec!["Y"],
        ),
        case(
            example("fft.tile"),
            "fft_filter_rows",
            [
                vec![
                    ("X", random_uniform(3 * 2 * 32, 156), vec![3, 2, 4, 8]),
                    ("H", random_uniform(3 * 2 * 32, 157), vec![3, 2, 8, 4]),
                ],
                fft_tables(),
                vec![("Y", vec![7.0; 3 * 2 * 32], vec![3, 2, 8, 4])],
            ]
            .concat(),
            vec![],
            vec!["Y"],
        ),
        case(
            example("nbody.tile"),
            "nbody_step",
            vec![
                ("P", random_uniform(77 * 3, 138), vec![77, 3]),
                ("V", random_uniform(77 * 3, 139), vec![77, 3]),
                ("Q", vec![7.0; 77 * 3], vec![77, 3]),
            ],
            vec![("dt", 0.016), ("eps2", 0.01), ("mass", 1.5)],
            vec!["V", "Q"],
        ),
        Case {
            int_arrays: vec![("Idx", (0..77).map(|k| (k * 151 + 13) % 480).collect(), vec![77])],
            ints: vec![("width", 20), ("height", 24)],
            ..case(
                example("mlp.tile"),
                "mlp_image",
                vec![
                    ("W", random_uniform(3 * 32 * 32, 140).iter().map(|v| v * 0.2).collect(), vec![3, 32, 32]),
                    ("Bs", random_uniform(3 * 32, 141), vec![3, 32]),
                    ("W3", random_uniform(3 * 32, 146).iter().map(|v| v * 0.2).collect(), vec![3, 32]),
                    ("B3", random_uniform(3, 147), vec![3]),
                    ("Ref", random_uniform(3 * 480, 148), vec![3, 480]),
                    ("Out", vec![7.0; 3 * 480], vec![3, 480]),
                    ("Loss", vec![0.25], vec![1]),
                ],
                vec![],
                vec!["Out", "Loss"],
            )
        },
        case(
            example("gauss_newton.tile"),
            "gauss_newton",
            vec![
                ("J", random_uniform(45 * 11 * 6, 136), vec![45, 11, 6]),
                ("Res", random_uniform(45 * 11, 137), vec![45, 11]),
                ("Delta", vec![7.0; 45 * 6], vec![45, 6]),
            ],
            vec![("lambda", 1e-3)],
            vec!["Delta"],
        ),
        case(
            example("syrk.tile"),
            "syrk",
            vec![("C", random_uniform(45 * 45, 114), vec![45, 45]), ("A", random_uniform(45 * 37, 115), vec![45, 37])],
            vec![("alpha", 1.5), ("beta", -0.75)],
            vec!["C"],
        ),
        Case {
            typed_arrays: vec![
                ("X", Scalar::F16, random_uniform(21 * 300, 121), vec![21, 300]),
                ("F", Scalar::F16, random_uniform(21 * 300, 122), vec![21, 300]),
                ("Y", Scalar::F16, vec![7.0; 21 * 300], vec![21, 300]),
            ],
            typed_scalars: vec![("gamma", Scalar::F32, 0.3)],
            compare: Compare::Relative,
            ..case(example("half_precision.tile"), "residual_f16", vec![], vec![], vec!["Y"])
        },
        Case {
            typed_arrays: vec![
                ("P", Scalar::BF16, random_uniform(2500, 123), vec![2500]),
                ("G", Scalar::BF16, random_uniform(2500, 124), vec![2500]),
                ("V", Scalar::BF16, random_uniform(2500, 125), vec![2500]),
            ],
            typed_scalars: vec![("lr", Scalar::F32, 0.1), ("mu", Scalar::F32, 0.9)],
            compare: Compare::Relative,
            ..case(example("half_precision.tile"), "sgd_momentum_bf16", vec![], vec![], vec!["P", "V"])
        },
        Case {
            // One program (1000 elements): the output's order is fixed.
            int_arrays: vec![("Count", vec![0], vec![1])],
            compare: Compare::Relative,
            ..case(
                example("compact.tile"),
                "compact",
                vec![("X", random_uniform(1000, 119), vec![1000]), ("Y", vec![7.0; 1000], vec![1000])],
                vec![("t", 0.25)],
                vec!["Y", "Count"],
            )
        },
        Case {
            int_arrays: vec![("Ids", (0..75).map(|t| (t * 7) % 23 - 1).collect(), vec![75])],
            compare: Compare::Relative,
            ..case(
                example("embedding.tile"),
                "embedding_fwd",
                vec![("W", random_uniform(20 * 48, 117), vec![20, 48]), ("Y", vec![7.0; 75 * 48], vec![75, 48])],
                vec![],
                vec!["Y"],
            )
        },
        Case {
            int_arrays: vec![("Ids", (0..75).map(|t| (t * 7) % 23 - 1).collect(), vec![75])],
            compare: Compare::Relative,
            ..case(
                example("embedding.tile"),
                "embedding_bwd",
                vec![
                    (
                        "DY",
                        random_uniform(75 * 48, 118).iter().map(|v| (v * 16.0).round() / 8.0).collect(),
                        vec![75, 48],
                    ),
                    ("DW", vec![0.5; 20 * 48], vec![20, 48]),
                ],
                vec![],
                vec!["DW"],
            )
        },
        Case {
            int_arrays: vec![("I", vec![-1; 21 * 8], vec![21, 8])],
            compare: Compare::Relative,
            ..case(
                example("topk.tile"),
                "topk_rows",
                vec![
                    (
                        "X",
                        random_uniform(21 * 100, 116).iter().map(|v| (v * 16.0).round() / 8.0).collect(),
                        vec![21, 100],
                    ),
                    ("V", vec![7.0; 21 * 8], vec![21, 8]),
                ],
                vec![],
                vec!["V", "I"],
            )
        },
        Case {
            int_arrays: vec![("P", vec![-1; 3 * 29], vec![3, 29])],
            ..case(
                example("getrf.tile"),
                "getrf_batched",
                vec![("A", random_uniform(3 * 29 * 29, 63), vec![3, 29, 29])],
                vec![],
                vec!["A", "P"],
            )
        },
        case(
            example("layer_norm.tile"),
            "layer_norm64",
            vec![
                ("X", random_uniform(20 * 64, 23), vec![20, 64]),
                ("G", random_uniform(64, 24), vec![64]),
                ("Bt", random_uniform(64, 25), vec![64]),
                ("Y", vec![0.0; 20 * 64], vec![20, 64]),
            ],
            vec![("eps", 1e-5)],
            vec!["Y"],
        ),
        case(
            example("attention.tile"),
            "attention",
            vec![
                ("Q", random_uniform(2 * 29 * 16, 26), vec![2, 29, 16]),
                ("K", random_uniform(2 * 29 * 16, 27), vec![2, 29, 16]),
                ("V", random_uniform(2 * 29 * 16, 28), vec![2, 29, 16]),
                ("O", vec![0.0; 2 * 29 * 16], vec![2, 29, 16]),
            ],
            vec![("scale", 0.25), ("causal", 1.0)],
            vec!["O"],
        ),
        case(
            example("causal_softmax.tile"),
            "causal_softmax",
            vec![
                ("S", random_uniform(3 * 29 * 29, 22), vec![3, 29, 29]),
                ("P", vec![0.0; 3 * 29 * 29], vec![3, 29, 29]),
            ],
            vec![],
            vec!["P"],
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
