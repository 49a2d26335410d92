//! The SIMT form, run by its reference interpreter at 4 to 64 lanes per subgroup, agrees
//! with the CPU target on every stdlib kernel and every example (GPU lowering checked without
//! a GPU).

use std::collections::HashMap;
use tilec::{compile, CompileOptions};
use tilec_frontend::{GenericArg, Instances};
use tilec_midend::Scalar;

const LANES: &[u32] = &[4, 8, 16, 32, 64];

mod cases;

use cases::Case;

/// Runs a case on the CPU and through the SIMT interpreter at every lane count; compares.
fn check(c: &Case, elem: Scalar, tol: f64) {
    check_at(c, elem, tol, LANES);
}

/// [`check`] at the given lane counts.
fn check_at(c: &Case, elem: Scalar, tol: f64, lanes_list: &[u32]) {
    let cpu_args = c.args(elem);
    let runner = tilec_tests::cpu_runner(&c.src, c.kernel, &cpu_args, &HashMap::new()).expect("compiles");
    let (bound, launch) = runner.run(cpu_args).expect("runs on the CPU");
    let fixed: HashMap<String, GenericArg> = [("T".to_string(), GenericArg::Type(elem))].into();
    let shapes = tilec::shapes_of(&c.args(elem));
    let generics = tilec::infer_generics(&c.src, c.kernel, &HashMap::new(), &shapes, &fixed).expect("generics");
    let inst = Instances::One { kernel: c.kernel.to_string(), generics };
    let module =
        compile(&c.src, &inst, &CompileOptions { verify: true, ..Default::default() }).expect("compiles").module;
    let kernel = module.kernels[0].clone();
    for &lanes in lanes_list {
        let arrays = tilec_tests::run_simt(&module, &kernel, &c.args(elem), lanes, launch.grid)
            .unwrap_or_else(|e| panic!("{} at {lanes} lanes: {e}", c.kernel));
        for out in &c.outs {
            let got = arrays[*out].to_f64_vec();
            let want = bound.array(out).unwrap().to_f64_vec();
            let err = cases::diff(c, &got, &want);
            assert!(
                err <= tol,
                "{} {elem:?} at {lanes} lanes: `{out}` differs from the CPU by {err:e} ({})",
                c.kernel,
                cases::worst(&got, &want)
            );
        }
    }
}

fn both(c: Case) {
    check(&c, Scalar::F32, 1e-5);
    check(&c, Scalar::F64, 1e-12);
}

#[test]
fn potrf_and_potrs() {
    cases::factorizations().into_iter().chain(cases::factorizations_simt()).for_each(both);
}

#[test]
fn trsm_variants() {
    cases::solves().into_iter().for_each(both);
}

#[test]
fn gemm_and_reductions() {
    cases::products().into_iter().for_each(both);
}

#[test]
fn examples() {
    cases::examples().into_iter().for_each(both);
}

#[test]
fn ranges() {
    cases::ranges().into_iter().for_each(both);
}

#[test]
fn broadcasts() {
    cases::broadcasts().into_iter().for_each(both);
}

#[test]
fn lu() {
    cases::lu().into_iter().for_each(both);
}

#[test]
fn masks() {
    cases::masks().into_iter().for_each(both);
}

#[test]
fn atomics_with_old_values() {
    cases::atomics().into_iter().for_each(both);
}

#[test]
fn atomics_on_half_arrays() {
    cases::atomics_half().into_iter().for_each(both);
}

#[test]
fn optional_arrays() {
    cases::optional().into_iter().for_each(both);
}

#[test]
fn half_arithmetic() {
    cases::half_arith().into_iter().for_each(both);
}

#[test]
fn gathers_and_scatters() {
    cases::gathers().into_iter().for_each(both);
}

#[test]
fn sorts_argsorts_and_topk() {
    cases::sorts().into_iter().for_each(both);
}

#[test]
fn flips_reversed_scans_signs_nary_maps_and_fma() {
    cases::constructs().into_iter().for_each(both);
}

#[test]
fn small_matrices() {
    cases::small_mats().into_iter().for_each(both);
}

#[test]
fn fns_returning_several_values() {
    cases::fn_results().into_iter().for_each(both);
}

#[test]
fn flexible_shapes() {
    cases::shapes().into_iter().for_each(both);
}

#[test]
fn math_functions() {
    cases::math().into_iter().for_each(both);
}

/// The `f64` expansions of `exp`, `log`, `sin`, `cos` and `tanh` (`midend/src/simt/math.rs`)
/// are within 4e-16 relative (2 ulp; 3.7e-16 measured, for `tanh(0.7)`) of the CPU's libm on
/// every argument, special values included.
#[test]
fn f64_math_functions_at_the_edges() {
    check(&cases::math_edges_f64(), Scalar::F64, 4e-16);
}

#[test]
fn long_vectors() {
    cases::long_vectors().into_iter().for_each(both);
}

/// Short vectors distributed over the lanes (the loops use them only element-wise) are summed
/// and multiplied in index order: the CPU's bits at every lane count.
#[test]
fn short_vectors_sum_in_index_order() {
    for c in cases::short_vectors() {
        check(&c, Scalar::F32, 0.0);
        check(&c, Scalar::F64, 0.0);
    }
}

/// Transposes: a butterfly exchange at power-of-two lane counts (1 lane included), a
/// broadcast of every element at others (3, 12, 24 lanes).
#[test]
fn transposes() {
    cases::transposes().into_iter().for_each(both);
    for c in cases::transposes() {
        check_at(&c, Scalar::F32, 0.0, &[1, 3, 12, 24]);
    }
}

#[test]
fn products_staged_through_shared_memory() {
    cases::staged().into_iter().for_each(both);
}

/// A product's right operand staged through shared memory is read with no shuffles: gemm's
/// 32 x 32 x 32 blocks load `B` straight into the scratch array, 32 * 32 * 4 bytes. Only the
/// PTX form stages; the SPIR-V form has no shared memory.
#[test]
fn staged_products_need_no_shuffles() {
    let src = cases::stdlib();
    let mut generics: HashMap<String, GenericArg> = [("T".to_string(), GenericArg::Type(Scalar::F32))].into();
    for b in ["BM", "BN", "BK"] {
        generics.insert(b.to_string(), GenericArg::Const(32));
    }
    let inst = Instances::One { kernel: "gemm".into(), generics };
    let m = compile(&src, &inst, &CompileOptions::default()).unwrap().module;
    let simt = tilec_midend::simt::lower_kernel_with(&m, &m.kernels[0], 32, true).unwrap();
    assert_eq!(simt.shared_bytes, 32 * 32 * 4);
    let spirv_form = tilec_midend::simt::lower_kernel(&m, &m.kernels[0], 32).unwrap();
    assert_eq!(spirv_form.shared_bytes, 0);
    let text = tilec_midend::print::print_function(&simt.func);
    assert!(!text.contains("shuffle"), "{text}");
}

#[test]
fn rows_and_columns_at_run_time_indices() {
    cases::lines().into_iter().for_each(both);
    for c in cases::lines() {
        check_at(&c, Scalar::F32, 0.0, &[1, 3, 12, 24]);
    }
}

#[test]
fn ranges_with_run_time_starts() {
    cases::dyn_ranges().into_iter().for_each(both);
}

/// Reshapes pass through one shared array per element type, sized for the largest: the sorting
/// network of `sort(v)` on 128 `f32` elements reshapes `vals` (f32) and `idx` (i32) 14 times
/// each, and needs 128 * 4 bytes of each, not 14 times that (lavapipe has 32 KiB).
#[test]
fn reshapes_share_one_scratch_array_per_element_type() {
    let src = tilec::SourceSet::with_stdlib(
        "sort128.tile",
        "kernel s(X: f32[N], Y: mut f32[N]) grid(1) { Y[0:128] = sort(X[0:128]) + reshape(reshape(X[0:128], 8, 16), 128); }",
    );
    let m = compile(&src, &Instances::All { fixed: HashMap::new() }, &CompileOptions::default()).unwrap().module;
    let simt = tilec_midend::simt::lower_kernel(&m, &m.kernels[0], 32).unwrap();
    assert_eq!(simt.shared_bytes, 2 * 128 * 4);
}
