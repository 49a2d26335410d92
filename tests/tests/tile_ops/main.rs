//! Tile operations, one by one, on the CPU target against plain f64 references of
//! `tilec_tests` (never the compiler's own evaluation): small kernels load tiles from input
//! arrays, apply one operation and store the result. Partial tiles (extents 1, 15, 16, 17
//! against arrays that are smaller or larger) are covered wherever an operation meets the
//! edge of an array; f32 results are checked to about 1e-5 (relative) and f64 to about 1e-12.

use std::collections::HashMap;
use tilec::{render_diagnostics, ErrorFormat, SourceSet};
use tilec_midend::{Const, Scalar};
use tilec_runtime::{random_spd, ArgValue, Bound, HostArray};
use tilec_tests::{
    cholesky_clamped_f64, matmul_f64, max_rel_err_chunks, random_triangular, transpose_f64, trsm_f64, Rng, TrsmOp,
};

mod atomics;
mod broadcast;
mod carried_tiles;
mod constructs;
mod direct_operands;
mod edges;
mod elementwise;
mod elementwise_chains;
mod gathers;
mod guarded_selects;
mod half_arith;
mod linalg;
mod lu;
mod masks;
mod memory;
mod optional;
mod programs;
mod ranges;
mod rank1_loops;
mod sorts;
mod transposed_products;

const FLOATS: [Scalar; 2] = [Scalar::F32, Scalar::F64];

/// Value written to outputs before a launch, to see which elements a kernel wrote.
const SENTINEL: f64 = 12345.0;

fn tol(elem: Scalar) -> f64 {
    match elem {
        Scalar::F32 => 1e-5,
        Scalar::F64 => 1e-12,
        _ => 0.0,
    }
}

fn arr(elem: Scalar, data: &[f64], shape: &[usize]) -> ArgValue {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    ArgValue::Array(HostArray::from_f64_as(elem, data, &shape).expect("host array"))
}

/// An output array of `shape` filled with [`SENTINEL`].
fn sentinel(elem: Scalar, shape: &[usize]) -> ArgValue {
    arr(elem, &vec![SENTINEL; shape.iter().product()], shape)
}

fn float(elem: Scalar, x: f64) -> ArgValue {
    ArgValue::Scalar(Const::Float(x, elem))
}

fn int(x: i64) -> ArgValue {
    ArgValue::Scalar(Const::Int(x, Scalar::I32))
}

/// Compiles `kernel` of `src` for the dtypes of `args`, runs it once and returns the bound
/// arguments after the launch. Compile and launch errors fail the test with the source.
fn run(src: &str, kernel: &str, args: Vec<(&str, ArgValue)>) -> Bound {
    let set = SourceSet::with_stdlib("test.tile", src);
    let args: HashMap<String, ArgValue> = args.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    let runner = tilec_tests::cpu_runner(&set, kernel, &args, &HashMap::new()).unwrap_or_else(|d| {
        panic!("does not compile:\n{}\n{src}", render_diagnostics(&d, &set, ErrorFormat::Human, false))
    });
    let (bound, _) = runner.run(args).unwrap_or_else(|e| panic!("launch failed: {e}\n{src}"));
    bound
}

/// The module of `kernel` of `set` for the dtypes and shapes of `args`, after the shared pass
/// pipeline: what the CPU backends start from (`tilec_midend::passes::for_cpu`).
fn compiled(set: &SourceSet, kernel: &str, args: &HashMap<String, ArgValue>) -> tilec_midend::Module {
    let generics =
        tilec::infer_generics(set, kernel, &tilec::dtypes_of(args), &tilec::shapes_of(args), &HashMap::new())
            .expect("generics");
    let inst = tilec_frontend::Instances::One { kernel: kernel.into(), generics };
    tilec::compile(set, &inst, &tilec::CompileOptions::default()).expect("compiles").module
}

/// The CPU backends this tilec has (Cranelift, and LLVM with `--features llvm`).
fn cpu_backends() -> Vec<tilec::CpuBackend> {
    [tilec::CpuBackend::Cranelift, tilec::CpuBackend::Llvm].into_iter().filter(|b| b.available()).collect()
}

/// Runs `kernel` of `set` once with each CPU backend ([`cpu_backends`], Cranelift first), each
/// on fresh `args()`, and returns the array `name` after each run. Compile and launch errors
/// fail the test, naming `ctx` and the backend.
fn outputs_per_backend(
    set: &SourceSet,
    kernel: &str,
    args: impl Fn() -> HashMap<String, ArgValue>,
    name: &str,
    ctx: &str,
) -> Vec<(tilec::CpuBackend, Vec<f64>)> {
    cpu_backends()
        .into_iter()
        .map(|be| {
            let runner =
                tilec::CpuRunner::with_backend(set, kernel, &args(), &HashMap::new(), be).unwrap_or_else(|d| {
                    panic!(
                        "{ctx}: does not compile with {be}:\n{}",
                        render_diagnostics(&d, set, ErrorFormat::Human, false)
                    )
                });
            let (bound, _) = runner.run(args()).unwrap_or_else(|e| panic!("{ctx}: {be}: {e}"));
            (be, out(&bound, name))
        })
        .collect()
}

fn out(b: &Bound, name: &str) -> Vec<f64> {
    b.array(name).expect("array output").to_f64_vec()
}

/// Element-wise check: `|got - want| <= tol * max(|want|, 1)`; NaN never passes (unless
/// both are NaN).
fn assert_close(got: &[f64], want: &[f64], tol: f64, ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || (g - w).abs() <= tol * w.abs().max(1.0);
        assert!(ok, "{ctx}: element {i}: got {g}, want {w}");
    }
}

/// Normwise check for products and solves: `max |got - want| / max |want| <= tol`.
fn assert_normwise(got: &[f64], want: &[f64], tol: f64, ctx: &str) {
    let err = max_rel_err_chunks(got, want, want.len().max(1));
    assert!(err <= tol, "{ctx}: normwise relative error {err:e} > {tol:e}");
}

/// Equal as stored values: both NaN, or equal with the same sign (-0.0 and 0.0 differ).
fn assert_same(got: &[f64], want: &[f64], ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || (g == w && g.is_sign_negative() == w.is_sign_negative());
        assert!(ok, "{ctx}: element {i}: got {g}, want {w}");
    }
}

fn assert_exact(got: &[f64], want: &[f64], ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g == w, "{ctx}: element {i}: got {g}, want {w}");
    }
}

/// `want` for a store of a `tr x tc` tile at `(r0, c0)` into an `m x n` array that held
/// [`SENTINEL`]: `f(i, j)` (tile coordinates) where the tile covers the array.
fn stored(m: usize, n: usize, r0: i64, c0: i64, tr: usize, tc: usize, f: impl Fn(usize, usize) -> f64) -> Vec<f64> {
    let mut w = vec![SENTINEL; m * n];
    for i in 0..tr {
        for j in 0..tc {
            let (r, c) = (r0 + i as i64, c0 + j as i64);
            if r >= 0 && c >= 0 && (r as usize) < m && (c as usize) < n {
                w[r as usize * n + c as usize] = f(i, j);
            }
        }
    }
    w
}

/// The value a zero-padded load of a tile at `(r0, c0)` from an `m x n` array sees at tile
/// position `(i, j)`.
fn padded(a: &[f64], m: usize, n: usize, r0: i64, c0: i64, i: usize, j: usize) -> Option<f64> {
    let (r, c) = (r0 + i as i64, c0 + j as i64);
    (r >= 0 && c >= 0 && (r as usize) < m && (c as usize) < n).then(|| a[r as usize * n + c as usize])
}

// ---------------------------------------------------------------------------------------
// Loads, stores, masked loads, vectors, elements.
// ---------------------------------------------------------------------------------------

/// The zero-padded `r x c` tile at `(r0, c0)` of an `m x n` array.
#[allow(clippy::too_many_arguments)]
fn tile_of(a: &[f64], m: usize, n: usize, r0: i64, c0: i64, r: usize, c: usize) -> Vec<f64> {
    let mut t = vec![0.0; r * c];
    for i in 0..r {
        for j in 0..c {
            t[i * c + j] = padded(a, m, n, r0, c0, i, j).unwrap_or(0.0);
        }
    }
    t
}

/// An element-wise operation of `(a, b, s)` in f64.
type Binary = fn(f64, f64, f64) -> f64;
