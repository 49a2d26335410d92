//! Property tests over random shapes: the stdlib's gemm, batched triangular solves and potrs
//! agree with the f64 references of `tilec_tests` for every shape (32 cases each).

use proptest::prelude::*;
use std::collections::HashMap;
use tilec::{render_diagnostics, ErrorFormat, SourceSet};
use tilec_midend::{Const, Scalar};
use tilec_runtime::{ArgValue, HostArray};
use tilec_tests::{gemm_f64, max_rel_err_chunks, potrs_f64, random_triangular, trsm_f64, Rng, TrsmOp};

fn tol(elem: Scalar) -> f64 {
    match elem {
        Scalar::F32 => 1e-4,
        _ => 1e-10,
    }
}

fn arr(elem: Scalar, data: &[f64], shape: &[usize]) -> ArgValue {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    ArgValue::Array(HostArray::from_f64_as(elem, data, &shape).expect("host array"))
}

/// Runs a stdlib kernel once and returns the array `output` afterwards.
fn run(kernel: &str, args: Vec<(&str, ArgValue)>, output: &str) -> Vec<f64> {
    let set = SourceSet::with_stdlib("stdlib/linalg.tile", include_str!("../../stdlib/linalg.tile"));
    let args: HashMap<String, ArgValue> = args.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    let runner = tilec_tests::cpu_runner(&set, kernel, &args, &HashMap::new()).unwrap_or_else(|d| {
        panic!("{kernel} does not compile:\n{}", render_diagnostics(&d, &set, ErrorFormat::Human, false))
    });
    let (bound, _) = runner.run(args).unwrap_or_else(|e| panic!("{kernel}: launch failed: {e}"));
    bound.array(output).expect("output array").to_f64_vec()
}

fn elem_strategy() -> impl Strategy<Value = Scalar> {
    prop_oneof![Just(Scalar::F32), Just(Scalar::F64)]
}

/// The 8 stdlib trsm variants.
fn trsm_strategy() -> impl Strategy<Value = TrsmOp> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(left, lower, trans)| TrsmOp {
        left,
        lower,
        trans,
        unit: false,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn gemm_matches_reference(
        m in 1usize..80,
        n in 1usize..80,
        k in 1usize..80,
        elem in elem_strategy(),
        alpha in prop_oneof![Just(1.0), Just(-0.5), Just(2.25)],
        beta in prop_oneof![Just(0.0), Just(1.0), Just(-1.5)],
        seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let a = rng.vec(m * k, -1.0, 1.0);
        let b = rng.vec(k * n, -1.0, 1.0);
        let c0 = rng.vec(m * n, -1.0, 1.0);
        let mut want = c0.clone();
        gemm_f64(m, n, k, alpha, &a, &b, beta, &mut want);
        let got = run(
            "gemm",
            vec![
                ("A", arr(elem, &a, &[m, k])),
                ("B", arr(elem, &b, &[k, n])),
                ("C", arr(elem, &c0, &[m, n])),
                ("alpha", ArgValue::Scalar(Const::Float(alpha, elem))),
                ("beta", ArgValue::Scalar(Const::Float(beta, elem))),
            ],
            "C",
        );
        let err = max_rel_err_chunks(&got, &want, want.len());
        prop_assert!(
            err <= tol(elem),
            "gemm {:?} {}x{}x{}: relative error {:e}", elem, m, n, k, err
        );
    }

    #[test]
    fn trsm_matches_reference(
        op in trsm_strategy(),
        n in 1usize..50,
        m in 1usize..40,
        batch in 1usize..4,
        elem in elem_strategy(),
        seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let mut a = Vec::new();
        for _ in 0..batch {
            a.extend(random_triangular(&mut rng, n, op.lower, 1e3));
        }
        let x = rng.vec(batch * n * m, -1.0, 1.0);
        let want: Vec<f64> = (0..batch)
            .flat_map(|q| {
                let (aq, xq) = (&a[q * n * n..(q + 1) * n * n], &x[q * n * m..(q + 1) * n * m]);
                trsm_f64(op, aq, n, xq, m)
            })
            .collect();
        let xshape = if op.left { [batch, n, m] } else { [batch, m, n] };
        let got = run(
            &op.stdlib_kernel(),
            vec![("A", arr(elem, &a, &[batch, n, n])), ("X", arr(elem, &x, &xshape))],
            "X",
        );
        let err = max_rel_err_chunks(&got, &want, n * m);
        prop_assert!(
            err <= tol(elem),
            "{} {:?} B={} N={} M={}: relative error {:e}",
            op.stdlib_kernel(), elem, batch, n, m, err
        );
    }

    #[test]
    fn potrs_matches_reference(
        n in 1usize..50,
        k in 1usize..40,
        batch in 1usize..4,
        elem in elem_strategy(),
        seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let mut l = Vec::new();
        for _ in 0..batch {
            l.extend(random_triangular(&mut rng, n, true, 1e3));
        }
        let x = rng.vec(batch * n * k, -1.0, 1.0);
        let want: Vec<f64> = (0..batch)
            .flat_map(|q| {
                let (lq, xq) = (&l[q * n * n..(q + 1) * n * n], &x[q * n * k..(q + 1) * n * k]);
                potrs_f64(lq, n, xq, k)
            })
            .collect();
        let got = run(
            "potrs_batched",
            vec![("L", arr(elem, &l, &[batch, n, n])), ("X", arr(elem, &x, &[batch, n, k]))],
            "X",
        );
        let err = max_rel_err_chunks(&got, &want, n * k);
        prop_assert!(
            err <= tol(elem),
            "potrs {:?} B={} N={} K={}: relative error {:e}", elem, batch, n, k, err
        );
    }
}
