//! Every program in `examples/` runs on the CPU target against an independent f64 reference.

use std::collections::HashMap;
use tilec::SourceSet;
use tilec_midend::{Const, Scalar};
use tilec_runtime::{random_spd, random_uniform, ArgValue, HostArray};
use tilec_tests::{cholesky_f64, matmul_f64, max_rel_err, svd_f64, transpose_f64};

mod data;
mod linalg;
mod nn;
mod warp;

/// The examples this file runs; `every_example_is_run` checks it against the folder.
const RUN: &[&str] = &[
    "attention.tile",
    "block_cholesky.tile",
    "causal_softmax.tile",
    "cholesky.tile",
    "colsum.tile",
    "compact.tile",
    "dropout.tile",
    "embedding.tile",
    "fft.tile",
    "gauss_newton.tile",
    "gemm.tile",
    "gemver.tile",
    "geqrf.tile",
    "getrf.tile",
    "half_precision.tile",
    "kalman.tile",
    "layer_norm.tile",
    "lu.tile",
    "mlp.tile",
    "mpm_stress.tile",
    "nbody.tile",
    "potrs.tile",
    "rms_norm.tile",
    "softmax.tile",
    "softmax_rows.tile",
    "suffix_sums.tile",
    "swiglu.tile",
    "syrk.tile",
    "topk.tile",
    "trsm.tile",
    "walker.tile",
];

fn source(name: &str) -> SourceSet {
    let path = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    SourceSet::with_stdlib(format!("examples/{name}"), std::fs::read_to_string(path).expect("example"))
}

fn arr(elem: Scalar, data: &[f64], shape: &[u64]) -> ArgValue {
    ArgValue::Array(HostArray::from_f64_as(elem, data, shape).unwrap())
}

/// Runs `kernel` of `file` and returns the named output array as f64.
fn run(file: &str, kernel: &str, args: Vec<(&str, ArgValue)>, out: &str) -> Vec<f64> {
    run_outs(file, kernel, args, &[out]).remove(0)
}

/// Runs `kernel` of `file` once and returns the named output arrays as f64.
fn run_outs(file: &str, kernel: &str, args: Vec<(&str, ArgValue)>, outs: &[&str]) -> Vec<Vec<f64>> {
    run_with(file, kernel, args, &[], outs)
}

/// Runs `kernel` of `file` once with the const generic parameters `fixed` and returns the named
/// output arrays as f64.
fn run_with(
    file: &str,
    kernel: &str,
    args: Vec<(&str, ArgValue)>,
    fixed: &[(&str, i64)],
    outs: &[&str],
) -> Vec<Vec<f64>> {
    let args: HashMap<String, ArgValue> = args.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    let fixed = tilec_tests::const_generics(fixed);
    let runner = tilec_tests::cpu_runner(&source(file), kernel, &args, &fixed).expect("compiles");
    let (bound, _) = runner.run(args).expect("runs");
    outs.iter().map(|o| bound.array(o).unwrap().to_f64_vec()).collect()
}

/// `max |got - want| / max(max |want|, 1)`.
fn normwise(got: &[f64], want: &[f64]) -> f64 {
    let scale = want.iter().fold(1f64, |s, x| s.max(x.abs()));
    got.iter().zip(want).map(|(g, w)| (g - w).abs()).fold(0.0, f64::max) / scale
}

/// The values an f32 or f64 array holds (inputs are rounded to the dtype before the
/// reference sees them).
fn rounded(elem: Scalar, data: &[f64]) -> Vec<f64> {
    data.iter().map(|v| elem.round(*v)).collect()
}

fn tol(elem: Scalar) -> f64 {
    if elem == Scalar::F32 {
        1e-4
    } else {
        1e-10
    }
}

fn eps(elem: Scalar) -> ArgValue {
    ArgValue::Scalar(Const::Float(1e-9, elem))
}

/// `x[r, :] L^-T` for every row of the `m x n` block `x`, L lower `n x n` (f64 reference).
fn right_lower_t(x: &[f64], l: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut out = x.to_vec();
    for r in 0..m {
        for j in 0..n {
            let mut s = out[r * n + j];
            for k in 0..j {
                s -= out[r * n + k] * l[j * n + k];
            }
            out[r * n + j] = s / l[j * n + j];
        }
    }
    out
}

#[test]
fn every_example_is_run() {
    let dir = format!("{}/../examples", env!("CARGO_MANIFEST_DIR"));
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tile"))
        .collect();
    found.sort();
    assert_eq!(found, RUN, "every example needs a run test in tests/tests/examples/");
}
