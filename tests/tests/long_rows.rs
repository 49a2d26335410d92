//! Long rows (thousands of elements) on the CPU: loads and stores with their bounds (whole,
//! partial at either end, at a run-time column offset), `load_into` keeping the old values, and
//! reductions of a whole tile and along rows, which the LLVM backend moves and reduces in loops
//! over the row's vectors. Both code generators give the same bits, and the values match f64
//! references.

use std::collections::HashMap;
use tilec::{CpuRunner, SourceSet};
use tilec_midend::{Const, Scalar};
use tilec_runtime::{random_uniform, ArgValue, HostArray};

const SRC: &str = "
kernel long_rows<T: float>(X: T[M, N], Y: mut T[M, N], Z: mut T[M, N], S: mut T[M], Mx: mut T[M],
    Mn: mut T[M], R: mut T[M, 4], c0: i32) grid(M) {
    let r = program_id(0);
    let x = X[r, c0:c0 + 4096];
    let real = tile<i32, 4096>::iota(0) + c0 < N;
    S[r] = sum(x);
    Mx[r] = max(where(real, x, -inf));
    Mn[r] = min(where(real, x, inf));
    Y[r, c0:c0 + 4096] = x * 2.0;
    let k = tile<T, 4096>::full(7.0);
    k[:] = X[r, c0:c0 + 4096];
    Z[r, 0:4096] = k;
    R[r, 0:4] = sum(X[r:r + 4, 0:1024], 1);
}
";

/// Runs the kernel with one backend: the outputs Y, Z, S, Mx, Mn, R as f64.
fn run(backend: tilec::CpuBackend, elem: Scalar, x: &[f64], (m, n): (usize, usize), c0: i64) -> Vec<Vec<f64>> {
    let src = SourceSet::with_stdlib("long_rows.tile", SRC);
    let arr = |d: &[f64], s: &[u64]| ArgValue::Array(HostArray::from_f64_as(elem, d, s).unwrap());
    let (mu, nu) = (m as u64, n as u64);
    let args: HashMap<String, ArgValue> = [
        ("X", arr(x, &[mu, nu])),
        ("Y", arr(&vec![-1.0; m * n], &[mu, nu])),
        ("Z", arr(&vec![-1.0; m * n], &[mu, nu])),
        ("S", arr(&vec![0.0; m], &[mu])),
        ("Mx", arr(&vec![0.0; m], &[mu])),
        ("Mn", arr(&vec![0.0; m], &[mu])),
        ("R", arr(&vec![0.0; m * 4], &[mu, 4])),
        ("c0", ArgValue::Scalar(Const::Int(c0, Scalar::I32))),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let runner = CpuRunner::with_backend(&src, "long_rows", &args, &HashMap::new(), backend).expect("compiles");
    let (b, _) = runner.run(args).expect("runs");
    ["Y", "Z", "S", "Mx", "Mn", "R"].iter().map(|o| b.array(o).unwrap().to_f64_vec()).collect()
}

#[test]
fn long_rows_move_and_reduce_alike_on_both_backends() {
    // Whole rows; rows cut short at the end; a run-time offset that starts mid-vector and
    // runs past the end; a negative one (the first elements before the array).
    for (m, n, c0) in [(5usize, 4096usize, 0i64), (6, 3000, 0), (3, 5000, 3), (2, 4200, -37)] {
        for elem in [Scalar::F32, Scalar::F64] {
            let x: Vec<f64> = random_uniform(m * n, 7 + n as u64).iter().map(|v| elem.round(*v)).collect::<Vec<_>>();
            let outs: Vec<Vec<Vec<f64>>> =
                tilec_tests::cpu_backends().into_iter().map(|b| run(b, elem, &x, (m, n), c0)).collect();
            for o in &outs[1..] {
                for (k, (a, b)) in outs[0].iter().zip(o).enumerate() {
                    let same = a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits());
                    assert!(same, "{elem:?} {m}x{n} at {c0}: output {k} differs between the backends");
                }
            }
            // The references: the row's elements c0..c0+4096 that exist, zero elsewhere.
            let got = &outs[0];
            let tol = if elem == Scalar::F32 { 1e-4 } else { 1e-12 };
            for r in 0..m {
                let cols: Vec<usize> =
                    (c0..c0 + 4096).filter(|&c| c >= 0 && (c as usize) < n).map(|c| c as usize).collect();
                let vals: Vec<f64> = cols.iter().map(|&c| x[r * n + c]).collect();
                let s: f64 = vals.iter().sum();
                assert!((got[2][r] - s).abs() <= tol * vals.len() as f64, "{elem:?} sum row {r}: {} vs {s}", got[2][r]);
                // Columns past N are `-inf`/`inf` under the mask; columns before 0 read as 0.
                let pad = (c0 < 0).then_some(0.0);
                let mx = vals.iter().copied().chain(pad).fold(f64::NEG_INFINITY, f64::max);
                let mn = vals.iter().copied().chain(pad).fold(f64::INFINITY, f64::min);
                assert_eq!((got[3][r], got[4][r]), (mx, mn), "{elem:?} max/min row {r}");
                for c in 0..n {
                    let inside = cols.contains(&c);
                    let want_y = if inside { 2.0 * x[r * n + c] } else { -1.0 };
                    assert_eq!(got[0][r * n + c], want_y, "{elem:?} Y[{r}, {c}] at offset {c0}");
                    // Z[r, 0:4096] = the loaded row, 7.0 where the load had no element.
                    if c < 4096 {
                        let from = c as i64 + c0;
                        let want_z = if from >= 0 && (from as usize) < n { x[r * n + from as usize] } else { 7.0 };
                        assert_eq!(got[1][r * n + c], want_z, "{elem:?} Z[{r}, {c}]");
                    } else {
                        assert_eq!(got[1][r * n + c], -1.0, "{elem:?} Z[{r}, {c}] written");
                    }
                }
                // R[r, i] = the sum of X[r + i, 0:1024], 0 for rows past M.
                for i in 0..4 {
                    let want: f64 =
                        if r + i < m { x[(r + i) * n..(r + i) * n + 1024.min(n)].iter().sum() } else { 0.0 };
                    assert!((got[5][r * 4 + i] - want).abs() <= tol * 1024.0, "{elem:?} R[{r}, {i}]");
                }
            }
        }
    }
}

/// A whole 32000-entry row of logits as one tile (the CPU target's tiles reach 32768 per
/// extent): softmax with the padding masked, the same bits on both backends, within f32
/// rounding of the f64 softmax.
#[test]
fn a_32768_wide_row_is_one_tile_on_the_cpu() {
    let src = SourceSet::with_stdlib(
        "softmax_row.tile",
        "kernel softmax_row(X: f32[M, N], Y: mut f32[M, N]) grid(M) {\n\
         \x20   let r = program_id(0);\n\
         \x20   let x = where(tile<i32, 32768>::iota(0) < N, X[r, 0:32768], -inf);\n\
         \x20   let e = exp(x - max(x));\n\
         \x20   Y[r, 0:32768] = e / sum(e);\n\
         }\n",
    );
    let (m, n) = (3usize, 32000usize);
    let x: Vec<f64> = random_uniform(m * n, 11).iter().map(|v| Scalar::F32.round(v * 8.0)).collect();
    let args = || -> HashMap<String, ArgValue> {
        [
            ("X".to_string(), ArgValue::Array(HostArray::from_f64_as(Scalar::F32, &x, &[m as u64, n as u64]).unwrap())),
            (
                "Y".to_string(),
                ArgValue::Array(HostArray::from_f64_as(Scalar::F32, &vec![0.0; m * n], &[m as u64, n as u64]).unwrap()),
            ),
        ]
        .into()
    };
    let outs: Vec<Vec<f64>> = tilec_tests::cpu_backends()
        .into_iter()
        .map(|b| {
            let runner = CpuRunner::with_backend(&src, "softmax_row", &args(), &HashMap::new(), b).expect("compiles");
            runner.run(args()).expect("runs").0.array("Y").unwrap().to_f64_vec()
        })
        .collect();
    assert!(outs.iter().all(|o| o.iter().zip(&outs[0]).all(|(a, b)| a.to_bits() == b.to_bits())), "backends differ");
    for r in 0..m {
        let row = &x[r * n..(r + 1) * n];
        let mx = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let d: f64 = row.iter().map(|v| (v - mx).exp()).sum();
        for c in 0..n {
            let want = (row[c] - mx).exp() / d;
            let got = outs[0][r * n + c];
            assert!((got - want).abs() <= 1e-4 * want, "Y[{r}, {c}]: {got} vs {want}");
        }
    }
}
