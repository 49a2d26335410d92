//! The SIMT form, run by its reference interpreter at 4 to 64 lanes per subgroup, agrees
//! with the CPU target on every stdlib kernel and every example (GPU lowering checked without
//! a GPU).

use std::collections::HashMap;
use tilec::{compile, CompileOptions};
use tilec_frontend::{GenericArg, Instances};
use tilec_midend::simt::{interp, lower_kernel};
use tilec_midend::{Const, ParamKind, Scalar};
use tilec_runtime::{ArgValue, HostArray};

const LANES: &[u32] = &[4, 8, 16, 32, 64];

mod cases;

use cases::Case;

/// Runs a case on the CPU and through the SIMT interpreter at every lane count; compares.
fn check(c: &Case, elem: Scalar, tol: f64) {
    let cpu_args = c.args(elem);
    let runner = tilec_tests::cpu_runner(&c.src, c.kernel, &cpu_args, &HashMap::new()).expect("compiles");
    let (bound, launch) = runner.run(cpu_args).expect("runs on the CPU");
    let fixed: HashMap<String, GenericArg> = [("T".to_string(), GenericArg::Type(elem))].into();
    let generics = tilec::infer_generics(&c.src, c.kernel, &HashMap::new(), &fixed).expect("generics");
    let inst = Instances::One { kernel: c.kernel.to_string(), generics };
    let module =
        compile(&c.src, &inst, &CompileOptions { verify: true, ..Default::default() }).expect("compiles").module;
    let kernel = module.kernels[0].clone();
    for &lanes in LANES {
        let simt =
            lower_kernel(&module, &kernel, lanes).unwrap_or_else(|e| panic!("{} at {lanes} lanes: {e}", c.kernel));
        let mut host: Vec<HostArray> = Vec::new();
        let mut scalars: Vec<Const> = Vec::new();
        let fresh = c.args(elem);
        for p in &kernel.params {
            match (&p.kind, &fresh[&p.name]) {
                (ParamKind::Array { .. }, ArgValue::Array(a)) => host.push(a.clone()),
                (ParamKind::Scalar(_), ArgValue::Scalar(s)) => scalars.push(*s),
                _ => panic!("argument kinds"),
            }
        }
        let mut it_host = host.iter_mut();
        let mut it_sc = scalars.iter();
        let mut iargs: Vec<interp::InterpArg<'_>> = Vec::new();
        for p in &kernel.params {
            match p.kind {
                ParamKind::Array { .. } => {
                    let a = it_host.next().unwrap();
                    let (e, dims) = (a.elem(), a.shape().to_vec());
                    iargs.push(interp::InterpArg::Array { elem: e, dims, data: a.bytes_mut() });
                }
                ParamKind::Scalar(_) => iargs.push(interp::InterpArg::Scalar(*it_sc.next().unwrap())),
            }
        }
        interp::run(&simt, &mut iargs, launch.grid).unwrap_or_else(|e| panic!("{} at {lanes} lanes: {e}", c.kernel));
        drop(iargs);
        let arrays: Vec<&str> = kernel
            .params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Array { .. }))
            .map(|p| p.name.as_str())
            .collect();
        for out in &c.outs {
            let i = arrays.iter().position(|n| n == out).expect("output is an array");
            let got = host[i].to_f64_vec();
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
    cases::factorizations().into_iter().for_each(both);
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
fn masks() {
    cases::masks().into_iter().for_each(both);
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
