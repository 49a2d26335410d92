//! The SIMT form, run by its reference interpreter at 4 to 64 lanes per subgroup, agrees
//! with the CPU target on every stdlib kernel and every example (GPU lowering checked without
//! a GPU).

use std::collections::HashMap;
use tilec::{compile, CompileOptions, CpuRunner, SourceSet};
use tilec_frontend::{GenericArg, Instances};
use tilec_midend::simt::{interp, lower_kernel};
use tilec_midend::{Const, ParamKind, Scalar};
use tilec_runtime::{random_spd, random_uniform, ArgValue, HostArray};

const LANES: &[u32] = &[4, 8, 16, 32, 64];

fn stdlib() -> SourceSet {
    SourceSet::with_stdlib(
        "stdlib/linalg.tile",
        include_str!("../../stdlib/linalg.tile"),
    )
}

fn example(name: &str) -> SourceSet {
    let path = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    SourceSet::with_stdlib(
        format!("examples/{name}"),
        std::fs::read_to_string(path).expect("example"),
    )
}

/// A kernel, its arguments (arrays as f64 data + shape, or scalars) and the outputs to compare.
struct Case {
    src: SourceSet,
    kernel: &'static str,
    arrays: Vec<(&'static str, Vec<f64>, Vec<u64>)>,
    scalars: Vec<(&'static str, f64)>,
    outs: Vec<&'static str>,
}

fn args(c: &Case, elem: Scalar) -> HashMap<String, ArgValue> {
    let mut m = HashMap::new();
    for (n, d, s) in &c.arrays {
        m.insert(
            n.to_string(),
            ArgValue::Array(HostArray::from_f64_as(elem, d, s).unwrap()),
        );
    }
    for (n, v) in &c.scalars {
        m.insert(n.to_string(), ArgValue::Scalar(Const::Float(*v, elem)));
    }
    m
}

/// Runs a case on the CPU and through the SIMT interpreter at every lane count; compares.
fn check(c: &Case, elem: Scalar, tol: f64) {
    let cpu_args = args(c, elem);
    let runner = CpuRunner::new(&c.src, c.kernel, &cpu_args, &HashMap::new()).expect("compiles");
    let (bound, launch) = runner.run(cpu_args).expect("runs on the CPU");
    let fixed: HashMap<String, GenericArg> = [("T".to_string(), GenericArg::Type(elem))].into();
    let generics =
        tilec::infer_generics(&c.src, c.kernel, &HashMap::new(), &fixed).expect("generics");
    let inst = Instances::One {
        kernel: c.kernel.to_string(),
        generics,
    };
    let module = compile(
        &c.src,
        &inst,
        &CompileOptions {
            verify: true,
            dump_after: None,
        },
    )
    .expect("compiles")
    .module;
    let kernel = module.kernels[0].clone();
    for &lanes in LANES {
        let simt = lower_kernel(&module, &kernel, lanes)
            .unwrap_or_else(|e| panic!("{} at {lanes} lanes: {e}", c.kernel));
        let mut host: Vec<HostArray> = Vec::new();
        let mut scalars: Vec<Const> = Vec::new();
        let fresh = args(c, elem);
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
                    iargs.push(interp::InterpArg::Array {
                        elem: e,
                        dims,
                        data: a.bytes_mut(),
                    });
                }
                ParamKind::Scalar(_) => {
                    iargs.push(interp::InterpArg::Scalar(*it_sc.next().unwrap()))
                }
            }
        }
        interp::run(&simt, &mut iargs, launch.grid)
            .unwrap_or_else(|e| panic!("{} at {lanes} lanes: {e}", c.kernel));
        drop(iargs);
        let arrays: Vec<&str> = kernel
            .params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Array { .. }))
            .map(|p| p.name.as_str())
            .collect();
        for out in &c.outs {
            let i = arrays
                .iter()
                .position(|n| n == out)
                .expect("output is an array");
            let got = host[i].to_f64_vec();
            let want = bound.array(out).unwrap().to_f64_vec();
            let scale = want.iter().map(|v| v.abs()).fold(1e-30, f64::max);
            let err = got
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
                / scale;
            assert!(
                err <= tol,
                "{} {elem:?} at {lanes} lanes: `{out}` differs from the CPU by {err:e}",
                c.kernel
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
    let (b, n) = (2usize, 33usize);
    both(Case {
        src: stdlib(),
        kernel: "potrf_batched",
        arrays: vec![("A", random_spd(b, n, 1), vec![b as u64, n as u64, n as u64])],
        scalars: vec![("eps", 1e-9)],
        outs: vec!["A"],
    });
    let l: Vec<f64> = random_spd(b, n, 2)
        .chunks(n * n)
        .flat_map(|m| tilec_tests::cholesky_f64(m, n))
        .collect();
    both(Case {
        src: stdlib(),
        kernel: "potrs_batched",
        arrays: vec![
            ("L", l, vec![b as u64, n as u64, n as u64]),
            (
                "X",
                random_uniform(b * n * 5, 3),
                vec![b as u64, n as u64, 5],
            ),
        ],
        scalars: vec![],
        outs: vec!["X"],
    });
}

#[test]
fn trsm_variants() {
    let (b, n, m) = (2usize, 20usize, 17usize);
    // Well-conditioned: a strong diagonal, and garbage in the other triangle (ignored).
    let mut a = random_uniform(b * n * n, 4);
    for bb in 0..b {
        for i in 0..n {
            a[bb * n * n + i * n + i] = 4.0 + i as f64 * 0.1;
        }
    }
    for name in [
        "trsm_right_lower_t_batched",
        "trsm_right_lower_batched",
        "trsm_right_upper_batched",
        "trsm_right_upper_t_batched",
        "trsm_left_lower_batched",
        "trsm_left_lower_t_batched",
        "trsm_left_upper_batched",
        "trsm_left_upper_t_batched",
    ] {
        let xs = if name.contains("left") {
            vec![b as u64, n as u64, m as u64]
        } else {
            vec![b as u64, m as u64, n as u64]
        };
        both(Case {
            src: stdlib(),
            kernel: name,
            arrays: vec![
                ("A", a.clone(), vec![b as u64, n as u64, n as u64]),
                ("X", random_uniform(b * n * m, 5), xs),
            ],
            scalars: vec![],
            outs: vec!["X"],
        });
    }
}

#[test]
fn gemm_and_reductions() {
    let (m, n, k) = (40usize, 35usize, 50usize);
    both(Case {
        src: stdlib(),
        kernel: "gemm",
        arrays: vec![
            ("A", random_uniform(m * k, 6), vec![m as u64, k as u64]),
            ("B", random_uniform(k * n, 7), vec![k as u64, n as u64]),
            ("C", random_uniform(m * n, 8), vec![m as u64, n as u64]),
        ],
        scalars: vec![("alpha", 1.5), ("beta", -0.5)],
        outs: vec!["C"],
    });
    both(Case {
        src: stdlib(),
        kernel: "gemm_batched",
        arrays: vec![
            ("A", random_uniform(2 * 9 * 7, 9), vec![2, 9, 7]),
            ("B", random_uniform(2 * 7 * 5, 10), vec![2, 7, 5]),
            ("C", random_uniform(2 * 9 * 5, 11), vec![2, 9, 5]),
        ],
        scalars: vec![("alpha", 1.0), ("beta", 0.0)],
        outs: vec!["C"],
    });
    both(Case {
        src: stdlib(),
        kernel: "row_sum",
        arrays: vec![
            ("X", random_uniform(20 * 70, 12), vec![20, 70]),
            ("out", vec![0.0; 20], vec![20]),
        ],
        scalars: vec![],
        outs: vec!["out"],
    });
}

#[test]
fn examples() {
    let n = 20usize;
    both(Case {
        src: example("cholesky.tile"),
        kernel: "cholesky",
        arrays: vec![
            ("A", random_spd(2, n, 13), vec![2, n as u64, n as u64]),
            ("L", vec![0.0; 2 * n * n], vec![2, n as u64, n as u64]),
        ],
        scalars: vec![("eps", 1e-9)],
        outs: vec!["L"],
    });
    both(Case {
        src: example("trsm.tile"),
        kernel: "whiten16",
        arrays: vec![
            ("A", random_spd(2, 16, 14), vec![2, 16, 16]),
            ("X", random_uniform(2 * 20 * 16, 15), vec![2, 20, 16]),
        ],
        scalars: vec![("eps", 1e-9)],
        outs: vec!["X"],
    });
    both(Case {
        src: example("potrs.tile"),
        kernel: "spd_solve16",
        arrays: vec![
            ("A", random_spd(3, 16, 16), vec![3, 16, 16]),
            ("Y", random_uniform(3 * 16, 17), vec![3, 16]),
        ],
        scalars: vec![("eps", 1e-9)],
        outs: vec!["Y"],
    });
    both(Case {
        src: example("gemm.tile"),
        kernel: "matmul16",
        arrays: vec![
            ("A", random_uniform(20 * 18, 18), vec![20, 18]),
            ("B", random_uniform(18 * 19, 19), vec![18, 19]),
            ("C", vec![0.0; 20 * 19], vec![20, 19]),
        ],
        scalars: vec![],
        outs: vec!["C"],
    });
    both(Case {
        src: example("softmax.tile"),
        kernel: "softmax64",
        arrays: vec![
            ("X", random_uniform(20 * 64, 20), vec![20, 64]),
            ("Y", vec![0.0; 20 * 64], vec![20, 64]),
        ],
        scalars: vec![],
        outs: vec!["Y"],
    });
    both(Case {
        src: example("colsum.tile"),
        kernel: "colsum",
        arrays: vec![
            ("X", random_uniform(100 * 48, 21), vec![100, 48]),
            ("S", vec![0.0; 48], vec![48]),
        ],
        scalars: vec![],
        outs: vec!["S"],
    });
}
